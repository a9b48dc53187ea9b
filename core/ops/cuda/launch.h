// The CUDA kernels' launchers: what the .cu files of this folder export to the C++ code that registers and
// calls them (register.cpp, core/device/cuda_backend.cpp). Plain types only, so that nvcc compiles the .cu
// files without the engine's headers; each launcher queues its kernel on `stream` and returns at once (the
// caller checks cudaGetLastError).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace oneflow::cuda {

inline constexpr int kMaxDims = 8;
inline constexpr int kMaxOperands = 8;  // inputs of one elementwise kernel
inline constexpr int kMaxSteps = 32;    // instructions of one fused program

// Every dtype's element type. The launchers of floating kernels take the four floating ones (float16 and
// bfloat16 compute in float, as on the CPU); cast takes all.
enum class Element : int32_t { kBool, kInt8, kUInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64 };

// y = scale * program(x[0], ..., x[num_inputs - 1]) at every element of y (scale in y's compute type), for a program of
// fused_elementwise's opcodes (core/ops/fused.h) decoded into values: value v < num_inputs is input v, value num_inputs
// + i is step i's result, the last step's is y's. Every operand is addressed through y's index: strides[k] are operand
// k's strides over y's dims (in elements; 0 where it is broadcast), k = 0 being y itself.
struct ElementwiseArgs {
  int32_t ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t numel = 0;
  int32_t num_inputs = 0;
  int32_t num_steps = 0;
  int32_t step_code[kMaxSteps] = {};
  int32_t step_a[kMaxSteps] = {};
  int32_t step_b[kMaxSteps] = {};  // -1 for unary opcodes
  int64_t strides[kMaxOperands + 1][kMaxDims] = {};
  bool dense[kMaxOperands + 1] = {};  // operand k is laid out as y's row-major index (no index arithmetic)
  void* out = nullptr;
  const void* in[kMaxOperands] = {};
  double scale = 1;
};
void LaunchElementwise(Element dtype, const ElementwiseArgs& args, cudaStream_t stream);

// Reductions of x over some of its dims, one output element per combination of the kept dims (row-major,
// y contiguous): the kept and the reduced dims each as sizes and x's strides. Sums accumulate in double.
// kArgmax writes int64 indices (row-major over the reduced dims; the first maximum, or the first NaN);
// kVar / kStd divide the squared deviations by `denominator` (n - correction, at least 0).
enum class ReduceKind : int32_t { kSum, kMean, kMax, kMin, kArgmax, kVar, kStd };
struct ReduceArgs {
  int32_t kept_ndim = 0, reduced_ndim = 0;
  int64_t kept_sizes[kMaxDims] = {}, kept_strides[kMaxDims] = {};
  int64_t reduced_sizes[kMaxDims] = {}, reduced_strides[kMaxDims] = {};
  int64_t num_outputs = 0, num_reduced = 0;
  double denominator = 0;
  const void* x = nullptr;
  void* y = nullptr;
};
void LaunchReduce(ReduceKind kind, Element dtype, const ReduceArgs& args, cudaStream_t stream);

// softmax / log_softmax along one dim, and their backward: `lines` lines of n elements, `inner` apart (line l
// starts at (l / inner) * n * inner + l % inner). Forward: y = softmax(x); backward: dx from y and dy (x
// holds y, y receives dx). As the CPU: the maximum subtracted, sums in double.
struct SoftmaxArgs {
  int64_t lines = 0, n = 0, inner = 1;
  const void* x = nullptr;
  const void* dy = nullptr;
  void* y = nullptr;
};
void LaunchSoftmax(bool log, bool backward, Element dtype, const SoftmaxArgs& args, cudaStream_t stream);

// nll_loss (x holds log-probabilities) and cross_entropy (x holds logits, with label smoothing) over
// `samples` samples of c classes `inner` apart (sample i's at (i / inner) * c * inner + i % inner), targets
// validated by the caller (class indices or ignore_index), weight (c values) or null. Forward: out is the
// per-sample loss (kNone) or their sum / weighted mean (total_weight: the targets' weights), summed through
// `rows` (a device scratch of `samples` doubles); backward: out is dx (x's shape) from dy. As the CPU
// computes them (core/ops/nn.cpp), in double.
enum class LossReduction : int32_t { kNone, kMean, kSum };
struct LossArgs {
  int64_t samples = 0, c = 0, inner = 1;
  LossReduction reduction = LossReduction::kMean;
  int64_t ignore_index = -100;
  double total_weight = 0, label_smoothing = 0;
  bool nll = false;
  const void* x = nullptr;
  const int64_t* target = nullptr;
  const void* weight = nullptr;
  const void* dy = nullptr;
  void* out = nullptr;
  double* rows = nullptr;
};
void LaunchLoss(bool backward, Element dtype, const LossArgs& args, cudaStream_t stream);

// One SGD step of n parameters in place (SgdOptions; buf the momentum buffer or null without momentum). With
// loss scaling, found_inf and scale point at 0-d float32 tensors on the device: a non-zero found_inf skips
// the step, the gradient is divided by scale.
struct SgdArgs {
  int64_t n = 0;
  void* param = nullptr;
  const void* grad = nullptr;
  void* buf = nullptr;
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, first_step = false;
  const float* found_inf = nullptr;
  const float* scale = nullptr;
};
void LaunchSgd(Element dtype, const SgdArgs& args, cudaStream_t stream);

// y = x converted element by element with the CPU's rules (core/ops/cpu/elementwise_loops.h's Convert:
// floating to integer truncates through int64, NaN gives 0, beyond int64 saturates; integers narrow modulo
// 2^bits; non-zero to bool is true), x and y of one shape at their own strides (in elements).
struct CastArgs {
  int32_t ndim = 0;
  int64_t sizes[kMaxDims] = {}, x_strides[kMaxDims] = {}, y_strides[kMaxDims] = {};
  int64_t numel = 0;
  const void* x = nullptr;
  void* y = nullptr;
};
void LaunchCast(Element from, Element to, const CastArgs& args, cudaStream_t stream);

// Copies sizes[0] x ... x sizes[ndim - 1] elements of element_size (1, 2, 4 or 8) bytes between two strided
// layouts (strides in elements); ndim <= kMaxDims.
void LaunchStridedCopy(void* dst, const void* src, int64_t element_size, int32_t ndim, const int64_t* sizes,
                       const int64_t* src_strides, const int64_t* dst_strides, cudaStream_t stream);

}  // namespace oneflow::cuda
