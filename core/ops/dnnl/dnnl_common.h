// Shared by the oneDNN op family (matmul, linear, conv2d, batch_norm, pooling): the CPU engine and
// per-thread streams, a thread-safe cache of primitives keyed by shape and attributes, reorders
// between our plain row-major tensors and the layouts oneDNN picks, per-thread reusable buffers, and
// the attribute parsing the ops share. Private to core/ops/dnnl/.
//
// oneDNN has no float64: float32 kernels run oneDNN, float64 kernels are plain C++ loops.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/op/op_registry.h"
#include "core/ops/matmul_plan.h"

namespace oneflow {

void RegisterMatmulOps(OpRegistry& registry);     // matmul.cpp
void RegisterConvOps(OpRegistry& registry);       // conv.cpp
void RegisterBatchNormOps(OpRegistry& registry);  // batch_norm.cpp
void RegisterPoolingOps(OpRegistry& registry);    // pooling.cpp
void RegisterMaxUnpoolOps(OpRegistry& registry);  // max_unpool.cpp

namespace dnnl_util {

using dnnl::memory;

const dnnl::engine& Engine();

// How one oneDNN call runs: on `threads` threads (the session pool's count, fewer for small work,
// where an OpenMP fork/join costs more than it saves) and the calling thread's stream. Sets the calling
// thread's OpenMP thread count (oneDNN's runtime) to `threads`, so call it before creating primitives
// (oneDNN sizes them for the current count) and put `threads` in their cache keys.
struct Exec {
  int64_t threads;
  dnnl::stream& stream;
};
// `work` counts simple operations: elements for memory-bound ops, multiply-adds / 8 for products.
Exec PrepareExec(ThreadPool& pool, int64_t work);

// Cache keys: the shape, attributes and thread count.
using Key = std::vector<int64_t>;
struct KeyHash {
  size_t operator()(const Key& key) const noexcept;
};

// oneDNN refused to create a primitive for a call's sizes and attributes (thrown by PrimitiveCache::Get,
// reported by Guarded). Creation is where oneDNN judges what the caller asked for; an error while a
// primitive runs is ours.
struct Refused : std::runtime_error {
  explicit Refused(const dnnl::error& e) : std::runtime_error(e.what()), status(e.status) {}
  dnnl_status_t status;
};

// Primitives (with their descriptors and reorders) by key. Entries are immutable and shared, so a
// caller keeps using its entry even if the cache is cleared meanwhile (it is, past kMaxEntries).
template <typename Entry>
class PrimitiveCache {
 public:
  // A oneDNN error thrown by make() (creating descriptors and primitives) becomes Refused.
  template <typename Make>
  std::shared_ptr<const Entry> Get(const Key& key, Make&& make) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = map_.find(key);
      if (it != map_.end()) return it->second;
    }
    std::shared_ptr<const Entry> entry;
    try {
      entry = std::make_shared<const Entry>(make());  // outside the lock: creation is slow
    } catch (const dnnl::error& e) {
      throw Refused(e);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (map_.size() >= kMaxEntries) map_.clear();
    return map_.emplace(key, std::move(entry)).first->second;
  }

 private:
  static constexpr size_t kMaxEntries = 4096;
  std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<const Entry>, KeyHash> map_;
};

// Per-thread buffers reused across calls (slot i keeps its largest size), for operands in oneDNN's
// layouts, scratchpads and PoolSgemm's partial sums: large activations then cost no fresh pages per call.
enum BufferSlot { kSlotSrc, kSlotWeights, kSlotDst, kSlotDiff, kSlotScratch, kSlotExtra, kSlotPartials, kNumSlots };
void* Buffer(BufferSlot slot, size_t bytes);

// Attributes every primitive is created with (user scratchpad: see Scratchpad()).
dnnl::primitive_attr DefaultAttr();
// The primitive's scratchpad in the calling thread's kSlotScratch buffer.
memory Scratchpad(const dnnl::primitive_desc_base& pd);

// One operand of a primitive: our plain tensor memory (`user`) and the layout the primitive chose
// (`prim`), with the reorder between them when they differ.
class Operand {
 public:
  Operand() = default;
  // For inputs the reorder goes user -> prim, for outputs prim -> user.
  Operand(const memory::desc& user, const memory::desc& prim, bool input);
  // The memory the primitive uses: `data` itself, or buffer `slot` in the primitive's layout, filled
  // from `data` first if this is an input. Given a pool, a 1x1 convolution's weight in blocks of output
  // channels is filled on it by the engine's own transposition (Note [1x1 weights in blocks]), any other
  // by oneDNN's reorder.
  memory Prepare(void* data, BufferSlot slot, dnnl::stream& stream, ThreadPool* pool = nullptr) const;
  // For outputs: copies the primitive's result (from Prepare) into `data` if layouts differ.
  void Finish(memory prim, void* data, dnnl::stream& stream) const;

 private:
  memory::desc user_, prim_;
  bool input_ = true;
  int64_t block_ = 0;  // the output channels per block where the engine's transposition fills prim, else 0
  std::optional<dnnl::reorder> reorder_;
};

// A plain (row-major) f32 memory descriptor.
memory::desc PlainDesc(const memory::dims& dims);
memory::desc AnyDesc(const memory::dims& dims);
// An f32 descriptor of 4-D data in (N, C, H, W) order: NHWC when `channels_last`, else plain.
memory::desc DataDesc(const memory::dims& dims, bool channels_last);

// Whether a call on 4-D data tensors a and b runs channels last (Note [Channels-last activations]): both
// are dense in NHWC order and one of them is channels last (a tensor dense in both orders, such as one
// with a single channel, goes with the other).
bool ChannelsLastCall(const Tensor& a, const Tensor& b);
// Runs `fn`, a kernel written for contiguous tensors, on contiguous copies of ctx's inputs and into
// contiguous stand-ins for its outputs, which are copied back: for the loops behind a kernel that
// handles channels last (KernelDef::channels_last). Calls `fn` on ctx itself when all are contiguous.
void RunContiguous(KernelContext& ctx, KernelFn fn);

// c = a b (+ bias, n values, or null) on oneDNN's matmul primitive for the plan's float32 matrices at their
// strides (core/ops/matmul_plan.h), a primitive and a set of argument memories cached per plan shape:
// matmul's and linear's product (matmul.cpp), and 1x1 convolutions' over their positions (conv.cpp).
void RunGemmF32(KernelContext& ctx, const GemmPlan& p, const void* a, const void* b, const void* bias, void* c);

// Refused: UNIMPLEMENTED when oneDNN has no implementation, RESOURCE_EXHAUSTED when it ran out of
// memory, INVALID_ARGUMENT otherwise; the message gives the call's input shapes and attributes (dispatch
// prefixes the op's name). Any other oneDNN error is Internal.
[[noreturn]] void ThrowRefused(const Refused& e, const KernelContext& ctx);
[[noreturn]] void ThrowDnnlError(const dnnl::error& e, const KernelContext& ctx);
// Runs a float32 oneDNN kernel, turning oneDNN's errors into oneflow errors.
template <void (*F)(KernelContext&)>
void Guarded(KernelContext& ctx) {
  try {
    F(ctx);
  } catch (const Refused& e) {
    ThrowRefused(e, ctx);
  } catch (const dnnl::error& e) {
    ThrowDnnlError(e, ctx);
  }
}

// oneDNN (v2) checks descriptors in `int` arithmetic: a call runs oneDNN only if every size, attribute
// and padded extent it passes fits in int32 (other calls run the plain loops).
bool FitsDnnl(std::initializer_list<int64_t> values);

// The dtype rule (oneflow_c.h, ops "DTypes"): a dtype an op is not defined for is INVALID_ARGUMENT, one
// it is defined for but has no kernel for is UNIMPLEMENTED (from dispatch).
// INVALID_ARGUMENT naming `name` if `t` is bool: for ops that compute with numbers.
void CheckNumeric(const TensorMeta& t, std::string_view name);
// INVALID_ARGUMENT naming `name` unless `t` is floating: for ops whose results are fractions (averages,
// normalisation) in the input's dtype.
void CheckFloating(const TensorMeta& t, std::string_view name);

// batch norm's eps (batch_norm, batch_norm_backward, fused_conv_bn_act): finite and > 0.
double CheckedEps(const Attrs& attrs);

// ParallelFor grain (items per chunk) for items that each cost `work` simple operations.
inline int64_t GrainFor(int64_t work) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, work)); }

// An int list attribute of exactly two values, each >= `min`: InvalidArgument naming it otherwise.
std::vector<int64_t> Pair(const Attrs& attrs, std::string_view name, int64_t min);
// The padding after the input: attribute padding_end (two values >= 0), or `padding` where it is empty
// (its default: symmetric) or absent.
std::vector<int64_t> PaddingEnd(const Attrs& attrs, const std::vector<int64_t>& padding);

// Sliding windows (convolution, pooling) over the (H, W) dims of an (N, C, H, W) input, padded by
// `padding` before (top, left) and `padding_end` after (bottom, right) the input.
struct Window2d {
  int64_t stride[2] = {1, 1}, padding[2] = {0, 0}, padding_end[2] = {0, 0}, dilation[2] = {1, 1};
  bool ceil_mode = false;
  bool symmetric() const { return padding[0] == padding_end[0] && padding[1] == padding_end[1]; }
};
// The window arithmetic is checked: a value that would overflow int64 is InvalidArgument naming the
// attribute, so every size that inference accepts is computed exactly by the kernels.
// The dilated kernel extent d * (k - 1) + 1 along `axis` (k >= 1).
int64_t DilatedKernel(int64_t k, const Window2d& win, int axis);
// The padded input in + padding + padding_end along `axis`.
int64_t PaddedInput(int64_t in, const Window2d& win, int axis);
// Output length over `in` for a kernel of `k`: floor (or ceil) of (in + p + p_end - d(k-1) - 1) / s, plus 1;
// in ceil mode the last window must start inside the input or the begin padding (as PyTorch, whose two
// paddings are one). May be < 1.
int64_t WindowOut(int64_t in, int64_t k, const Window2d& win, int axis);
// Output (H, W) for a kernel (kh, kw); a dim is unknown where x's or the kernel's is not known (what is
// known is checked: the dilated kernel when k is, the summed padding always).
// InvalidArgument naming x and the window if a known output dim is < 1.
std::pair<Dim, Dim> WindowOutput(const Shape& x, Dim kh, Dim kw, const Window2d& win);
// The outputs o in [0, out) whose input o*stride - pad + offset lies in [0, in), as [first, last).
// Overflow-free for any arguments that inference accepted.
std::pair<int64_t, int64_t> ValidRange(int64_t out, int64_t in, int64_t stride, int64_t pad, int64_t offset);
// ceil(a / b) for b > 0, without forming a + b - 1.
inline int64_t CeilDiv(int64_t a, int64_t b) { return a > 0 ? 1 + (a - 1) / b : -((-a) / b); }

// A tensor input as contiguous (kernels of ops with strided_inputs that need it).
TensorPtr ContiguousInput(KernelContext& ctx, size_t i);

}  // namespace dnnl_util
}  // namespace oneflow
