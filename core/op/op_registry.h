// The op registry: every op is declared once, as an OpDef.
//
// An OpDef gives the op's name, inputs, outputs and attributes (with defaults), its shape/dtype
// inference (written with Dim, so unknown and named dims flow through), its backward (written in
// terms of other ops, so the same code serves eager autograd and in-graph autodiff) and its kernels
// per device with the dtypes each kernel takes. Op dispatch (core/op/dispatch.h) is the only caller.
//
// Ops are registered by the Register*Ops functions listed in core/ops/register.h, called once when
// the registry is first used (explicit calls, not static initialisers, so that the static library
// keeps every op). After that the registry is read-only and safe to use from any thread.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/shape.h"
#include "core/device/device.h"
#include "core/device/thread_pool.h"
#include "core/op/attrs.h"
#include "core/op/autocast.h"
#include "core/session/generator.h"
#include "core/tensor/tensor.h"

namespace oneflow {

// What shape inference sees of a tensor. Lazy tensors may have unknown or symbolic dims. `format` is
// the value's memory format (canonical for its shape); inference functions ignore it, and what they
// return in it is replaced by the call's layout (core/op/layout.h).
struct TensorMeta {
  Symbol<DType> dtype;
  Shape shape;
  Device device;
  MemoryFormat format = MemoryFormat::kContiguous;
};

struct OpDef;

// What a kernel gets: concrete inputs (contiguous unless the op takes strided inputs; the op's
// layout_inputs in the call's memory format), outputs allocated from the inferred metas (uninitialised;
// contiguous, but for the op's layout_outputs, which are in the call's format), the call's attributes
// (defaults filled in), and the calling session's thread pool and generator.
struct KernelContext {
  std::span<const TensorPtr> inputs;
  std::span<const TensorPtr> outputs;
  const Attrs& attrs;
  ThreadPool& pool;
  Generator& generator;
  // The op whose kernel runs (dispatch and the graph executor set it; null in a kernel's own call of
  // another kernel).
  const OpDef* op = nullptr;

  const Tensor& in(size_t i) const { return *inputs[i]; }
  const Tensor& out(size_t i) const { return *outputs[i]; }
};
using KernelFn = void (*)(KernelContext& ctx);

struct KernelDef {
  DeviceType device;
  std::vector<DataType> dtypes;  // dtypes of the op's dtype_input this kernel accepts
  KernelFn fn;
  // The kernel reads its op's layout_inputs and writes its layout_outputs in either memory format (the
  // call's: OpDef::layout); false: the op's calls with this kernel are contiguous.
  bool channels_last = false;
};

// What a backward function gets. inputs/outputs are the forward call's tensors (detached: no autograd
// state); grad_outputs[i] is the gradient flowing into output i, or null when none flowed (treat as
// zeros); needs_input_grad[i] says whether input i's gradient is wanted.
struct BackwardContext {
  std::span<const TensorPtr> inputs;
  std::span<const TensorPtr> outputs;
  std::span<const TensorPtr> grad_outputs;
  const std::vector<bool>& needs_input_grad;
  const Attrs& attrs;
};
// Returns one gradient per input (null where not wanted or not defined), each with its input's shape
// and dtype. Runs with grad mode off, through ops (so it records graph nodes in lazy mode).
using BackwardFn = std::vector<TensorPtr> (*)(const BackwardContext& ctx);

// The inference function: output metas from input metas. Errors are InvalidArgument naming the
// argument and the shapes; dispatch prefixes them with the op's name.
using InferFn = std::vector<TensorMeta> (*)(std::span<const TensorMeta> inputs, const Attrs& attrs);

// The memory format a call works in (Note [Channels-last activations]; rules in core/op/layout.h).
using LayoutFn = MemoryFormat (*)(std::span<const TensorMeta> inputs, const Attrs& attrs);

// A view op's eager implementation: the output as a view of inputs[0]'s storage.
using ViewFn = TensorPtr (*)(const TensorPtr& input, const TensorMeta& out, const Attrs& attrs);

struct AttrSpec {
  std::string name;
  AttrValue default_value;  // also gives the attribute's type
  bool required = false;    // then default_value only gives the type
};

struct OpDef {
  std::string name{};
  std::vector<std::string> inputs{};   // input names; with `variadic_inputs`, the last takes 1 or more
  bool variadic_inputs = false;
  std::vector<std::string> optional_inputs{};  // names of inputs that may be null (bias, running stats)
  std::vector<std::string> outputs{};  // output names
  std::vector<AttrSpec> attrs{};
  InferFn infer = nullptr;
  BackwardFn backward = nullptr;     // null: not differentiable (no autograd node is recorded)
  std::vector<KernelDef> kernels{};
  ViewFn view = nullptr;             // set for view ops, which have no kernel
  int dtype_input = 0;               // whose dtype selects the kernel
  bool strided_inputs = false;       // kernels handle any strides; else dispatch makes inputs contiguous
  std::vector<int> mutated_inputs{};   // inputs the kernel writes in place (running stats, parameters)
  // Whether a call with these attributes writes its mutated_inputs (batch_norm only in training);
  // null: every call does. The graph keeps calls that write as side effects.
  bool (*writes_inputs)(const Attrs& attrs) = nullptr;
  // Memory formats (core/op/layout.h): the call's format where the kernel handles channels last (null:
  // always contiguous); the inputs that reach the kernel in it (for a variadic last input, its index
  // stands for all of them) and the outputs allocated in it.
  LayoutFn layout = nullptr;
  std::vector<int> layout_inputs{};
  std::vector<int> layout_outputs{};
  // What the graph compiler's passes match ops by (core/graph/passes/passes.h):
  // element i of the output reads only element i of each input of its shape (a graph may write the
  // output into such an input's buffer when that input dies there);
  bool elementwise = false;
  // the fused_elementwise instruction (core/ops/fused.h) computing this op, or -1;
  int64_t fused_opcode = -1;
  // the op that computes this op followed by an inference batch_norm [+ relu] (conv2d: fused_conv_bn_act);
  std::string fold_batch_norm{};
  // a batch normalization: inputs (x, weight, bias, running_mean, running_var), outputs (y, saved_mean,
  // saved_var), attributes training and eps.
  bool batch_norm = false;
  // a batch normalization followed by an add and a ReLU: y = relu(batch_norm(x) + addend), the addend its
  // optional input 5 (batch_norm_add_relu);
  bool batch_norm_add_relu = false;
  // the op computing relu(this op's y + addend), its inputs this op's and the optional addend last, its
  // outputs this op's (batch_norm: batch_norm_add_relu);
  std::string fuse_add_relu{};
  // inputs whose buffer output 0 may take where the call reads them for the last time (a graph tries them
  // in this order), besides an elementwise op's: every kernel reads an element of each of them before it
  // writes output 0's element of the same index, and none after (batch_norm_backward: grad_x over grad_y
  // or x, whose sums a pass before grad_x's takes);
  std::vector<int> inplace_inputs{};
  // the call communicates with the other processes of a group (core/dist/): every rank must make it, so a
  // graph never drops it, even when nothing reads its result;
  bool collective = false;
  // an optimizer update: the input that holds the parameter's gradient (data-parallel graphs average it
  // over the ranks first), or -1.
  int gradient_input = -1;
  // What autocast does to the op's floating inputs (Note [Autocast]).
  AutocastPolicy autocast = AutocastPolicy::kKeep;

  bool IsOptionalInput(size_t i) const;
  bool IsMutatedInput(size_t i) const;
  // Whether a call with `attrs` writes its mutated_inputs (see writes_inputs).
  bool WritesInputs(const Attrs& attrs) const {
    return !mutated_inputs.empty() && (writes_inputs == nullptr || writes_inputs(attrs));
  }
  // After a kernel call that wrote its mutated inputs: bumps their versions (Note [Version counter]).
  void MarkInputsWritten(std::span<const TensorPtr> call_inputs, const Attrs& attrs) const {
    if (!WritesInputs(attrs)) return;
    for (int m : mutated_inputs) {
      if (const TensorPtr& t = call_inputs[static_cast<size_t>(m)]) t->MarkWritten();
    }
  }
  const KernelDef* FindKernel(DeviceType device, Symbol<DType> dtype) const;
};

class OpRegistry {
 public:
  static OpRegistry& Global();
  // AlreadyExists for a name that is taken. Only during registration.
  void Register(OpDef def);
  // Adds a kernel to the registered op `op`: how a backend brings its kernels from its own files (the CUDA
  // ones: core/ops/cuda/), without editing the op's definition. Only during registration.
  void AddKernel(std::string_view op, KernelDef kernel);
  // NotFound for an unknown name.
  const OpDef& Get(std::string_view name) const;
  const OpDef* Find(std::string_view name) const;
  std::vector<const OpDef*> All() const;  // sorted by name

 private:
  OpRegistry() = default;
  std::vector<std::unique_ptr<OpDef>> defs_;
};

// Every dtype list the kernels use.
inline const std::vector<DataType> kFloatingTypes = {DataType::kFloat32, DataType::kFloat64};
inline const std::vector<DataType> kHalfTypes = {DataType::kFloat16, DataType::kBFloat16};
inline const std::vector<DataType> kNumericTypes = {DataType::kInt8,  DataType::kUInt8,   DataType::kInt16,
                                                    DataType::kInt32, DataType::kInt64,   DataType::kFloat32,
                                                    DataType::kFloat64};
inline const std::vector<DataType> kAllTypes = {DataType::kBool,    DataType::kInt8,     DataType::kUInt8,
                                                DataType::kInt16,   DataType::kInt32,    DataType::kInt64,
                                                DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                                DataType::kFloat64};

}  // namespace oneflow
