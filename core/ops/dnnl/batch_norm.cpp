// batch_norm and batch_norm_backward. float32: oneDNN batch normalization on x as it is laid out,
// (N, C, S) or channels last (N, S, C) (Note [Channels-last activations]: oneDNN's channels-last batch
// norm is a JIT kernel, its plain one a reference loop many times slower; a reorder would cost as much as
// the batch norm); float64: loops per channel, which float32 also runs where oneDNN does not (empty x,
// sizes beyond its int32 descriptors).
//
// batch_norm's outputs are y and the statistics it normalised with, saved_mean and saved_var (the
// biased batch variance in training, copies of the running stats in inference), which
// batch_norm_backward takes. Training updates running_mean / running_var in place (mutated inputs) with
// the unbiased batch variance, as PyTorch. Training on an empty batch (N = 0, or an empty spatial dim)
// gives an empty y, saves zeros and leaves the running stats unchanged (PyTorch also allows it).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/op/dispatch.h"
#include "core/op/layout.h"
#include "core/ops/cpu/batch_norm_nhwc.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/dnnl/dnnl_common.h"
#include "core/ops/ops.h"
#include "core/tensor/copy.h"
#include "core/tensor/factory.h"

namespace oneflow {
namespace {

using namespace dnnl_util;

constexpr const char* kParamNames[] = {"x", "weight", "bias", "running_mean", "running_var"};

std::vector<TensorMeta> InferBatchNorm(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta& x = in[0];
  OF_CHECK(x.shape.ndim() >= 2) << "x must have at least 2 dims (N, C, ...), got " << x.shape;
  CheckFloating(x, "x");
  const Dim c = x.shape[1];
  for (size_t i = 1; i < 5; ++i) {
    if (!in[i].dtype) continue;
    OF_CHECK(in[i].dtype == x.dtype) << kParamNames[i] << " is " << in[i].dtype << " but x is " << x.dtype
                                     << "; they must have one dtype";
    const Shape& s = in[i].shape;
    OF_CHECK(s.ndim() == 1 && !(s[0].is_known() && c.is_known() && s[0] != c))
        << kParamNames[i] << " must be 1-D with one element per channel of x " << x.shape << " (" << c
        << "), got " << s;
  }
  OF_CHECK(static_cast<bool>(in[3].dtype) == static_cast<bool>(in[4].dtype))
      << "running_mean and running_var must be given together";
  CheckedEps(attrs);
  const double momentum = attrs.Float("momentum");
  OF_CHECK(momentum >= 0 && momentum <= 1) << "momentum must be in [0, 1], got " << momentum;
  if (attrs.Bool("training")) {
    // An empty batch (0 values per channel) gives an empty y and leaves the running stats alone, as
    // PyTorch; a single value has no variance.
    Dim count = x.shape[0];
    for (int64_t d = 2; d < x.shape.ndim(); ++d) count = count * x.shape[d];
    OF_CHECK(!(count == 1))
        << "training needs more than 1 value per channel to compute batch statistics, got x " << x.shape;
  } else {
    OF_CHECK(in[3].dtype) << "inference (training=false) normalises with running_mean and running_var, which are "
                             "missing";
  }
  const TensorMeta stat{x.dtype, Shape{c}, x.device};
  return {x, stat, stat};
}

// Inputs (x, grad_y, weight?, saved_mean, saved_var); outputs grad_x, grad_weight, grad_bias.
std::vector<TensorMeta> InferBatchNormBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta& x = in[0];
  OF_CHECK(x.shape.ndim() >= 2) << "x must have at least 2 dims (N, C, ...), got " << x.shape;
  CheckFloating(x, "x");
  CheckedEps(attrs);
  OF_CHECK(in[1].dtype == x.dtype && in[1].shape == x.shape)
      << "grad_y " << in[1].dtype << " " << in[1].shape << " must match x " << x.dtype << " " << x.shape;
  constexpr const char* names[] = {"x", "grad_y", "weight", "saved_mean", "saved_var"};
  for (size_t i = 2; i < 5; ++i) {
    if (!in[i].dtype) continue;
    const Shape& s = in[i].shape;
    OF_CHECK(in[i].dtype == x.dtype && s.ndim() == 1 && !(s[0].is_known() && x.shape[1].is_known() && s[0] != x.shape[1]))
        << names[i] << " must be " << x.dtype << " (" << x.shape[1] << "), got " << in[i].dtype << " " << s;
  }
  const TensorMeta stat{x.dtype, Shape{x.shape[1]}, x.device};
  return {x, stat, stat};
}

// batch_norm_relu_backward: batch_norm_backward's inputs, then the forward's bias (optional) and its output y.
std::vector<TensorMeta> InferBatchNormReluBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  std::vector<TensorMeta> out = InferBatchNormBackward(in.first(5), attrs);
  const TensorMeta& x = in[0];
  const Shape& b = in[5].shape;
  OF_CHECK(!in[5].dtype || (in[5].dtype == x.dtype && b.ndim() == 1 &&
                            !(b[0].is_known() && x.shape[1].is_known() && b[0] != x.shape[1])))
      << "bias must be " << x.dtype << " (" << x.shape[1] << "), got " << in[5].dtype << " " << b;
  OF_CHECK(in[6].dtype == x.dtype && in[6].shape == x.shape)
      << "y " << in[6].dtype << " " << in[6].shape << " must match x " << x.dtype << " " << x.shape;
  return out;
}

// batch_norm_add_relu: batch_norm's inputs, then the addend (input 5: x's dtype and shape, or null).
std::vector<TensorMeta> InferBatchNormAddRelu(std::span<const TensorMeta> in, const Attrs& attrs) {
  std::vector<TensorMeta> out = InferBatchNorm(in.first(5), attrs);
  const TensorMeta& x = in[0];
  OF_CHECK(!in[5].dtype || (in[5].dtype == x.dtype && in[5].shape == x.shape))
      << "addend " << in[5].dtype << " " << in[5].shape << " must match x " << x.dtype << " " << x.shape;
  return out;
}

// x as (N, C, S), stored as (N, S, C) when channels_last.
struct BnGeom {
  int64_t n, c, s;
  bool channels_last = false;
  int64_t count() const { return n * s; }
};
BnGeom GeomOf(const Tensor& x) {
  BnGeom g{x.shape()[0].value(), x.shape()[1].value(), 1};
  for (int64_t d = 2; d < x.ndim(); ++d) g.s *= x.shape()[d].value();
  return g;
}
// For the oneDNN kernels: x and `other` (y or grad_y) as one call lays them out.
BnGeom GeomOf(const Tensor& x, const Tensor& other) {
  BnGeom g = GeomOf(x);
  g.channels_last = ChannelsLastCall(x, other);
  return g;
}

// running = (1 - momentum) running + momentum * batch statistic, with the unbiased variance.
template <typename T>
void UpdateRunningStats(KernelContext& ctx, const BnGeom& g, const T* mean, const T* var) {
  if (!ctx.inputs[3]) return;
  T* rm = ctx.in(3).data<T>();
  T* rv = ctx.in(4).data<T>();
  const double m = ctx.attrs.Float("momentum");
  const double unbias = static_cast<double>(g.count()) / static_cast<double>(g.count() - 1);
  for (int64_t c = 0; c < g.c; ++c) {
    rm[c] = static_cast<T>((1 - m) * rm[c] + m * mean[c]);
    rv[c] = static_cast<T>((1 - m) * rv[c] + m * var[c] * unbias);
  }
}

// Training on an empty batch saves zeros (there are no statistics) and updates nothing.
template <typename T>
void SaveEmptyBatchStats(KernelContext& ctx, const BnGeom& g) {
  std::fill_n(ctx.out(1).data<T>(), g.c, T(0));
  std::fill_n(ctx.out(2).data<T>(), g.c, T(0));
}

// Whether oneDNN runs this call: a non-empty x whose sizes fit its int32 descriptors (FitsDnnl).
bool DnnlRuns(const BnGeom& g) { return std::min({g.n, g.c, g.s}) > 0 && FitsDnnl({g.n, g.c, g.s}); }

// Inference normalises with (and saves) the running stats.
template <typename T>
void SaveRunningStats(KernelContext& ctx, const BnGeom& g) {
  std::memcpy(ctx.out(1).raw_data(), ctx.in(3).raw_data(), static_cast<size_t>(g.c) * sizeof(T));
  std::memcpy(ctx.out(2).raw_data(), ctx.in(4).raw_data(), static_cast<size_t>(g.c) * sizeof(T));
}

// oneDNN -------------------------------------------------------------------------------------------

struct BnFwdEntry {
  dnnl::batch_normalization_forward::primitive_desc pd;
  dnnl::batch_normalization_forward prim;
};
struct BnBwdEntry {
  dnnl::batch_normalization_backward::primitive_desc pd;
  dnnl::batch_normalization_backward prim;
};

memory::desc DataDesc(const BnGeom& g) { return dnnl_util::DataDesc({g.n, g.c, g.s, 1}, g.channels_last); }

dnnl::batch_normalization_forward::primitive_desc FwdPd(const BnGeom& g, dnnl::prop_kind prop, float eps,
                                                       dnnl::normalization_flags flags) {
  return {dnnl::batch_normalization_forward::desc(prop, DataDesc(g), eps, flags), DefaultAttr(), Engine()};
}

template <typename T>
void BatchNormRef(KernelContext& ctx);
template <typename T>
void BatchNormBackwardRef(KernelContext& ctx);

// Our AVX2 kernels (Note [Channels-last batch norm]) run non-empty channels-last calls of 8k channels.
bool NhwcRuns(const BnGeom& g) { return g.channels_last && g.count() > 0 && cpu::BatchNormNhwcRuns(g.c); }

// The channels-last kernels' y = x * scale + shift per channel, from the statistics mean and var the call
// normalises with (c values each; weight and bias null for ones and zeros).
void NhwcScaleShift(int64_t c, const float* w, const float* b, const float* mean, const float* var, double eps,
                    std::vector<float>& scale, std::vector<float>& shift) {
  scale.resize(static_cast<size_t>(c));
  shift.resize(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) {
    const double k = (w ? w[j] : 1.0) / std::sqrt(static_cast<double>(var[j]) + eps);
    scale[j] = static_cast<float>(k);
    shift[j] = static_cast<float>((b ? b[j] : 0.0) - mean[j] * k);
  }
}

// y = [relu](batch_norm(x) [+ addend]) (addend: null, or dense like y).
void BatchNormNhwcF32(KernelContext& ctx, const BnGeom& g, const float* addend = nullptr, bool relu = false) {
  const bool training = ctx.attrs.Bool("training");
  const double eps = ctx.attrs.Float("eps");
  const float* x = ctx.in(0).data<float>();
  const float* w = ctx.inputs[1] ? ctx.in(1).data<float>() : nullptr;
  const float* b = ctx.inputs[2] ? ctx.in(2).data<float>() : nullptr;
  float* mean = ctx.out(1).data<float>();
  float* var = ctx.out(2).data<float>();
  if (training) {
    cpu::BatchNormNhwcStats(x, g.count(), g.c, mean, var, ctx.pool);
  } else {
    SaveRunningStats<float>(ctx, g);
  }
  std::vector<float> scale, shift;
  NhwcScaleShift(g.c, w, b, mean, var, eps, scale, shift);
  cpu::BatchNormNhwcApply(x, g.count(), g.c, scale.data(), shift.data(), addend, relu, ctx.out(0).data<float>(),
                          ctx.pool);
  if (training) UpdateRunningStats(ctx, g, mean, var);
}

void BatchNormF32(KernelContext& ctx) {
  const BnGeom g = GeomOf(ctx.in(0), ctx.out(0));
  if (NhwcRuns(g)) return BatchNormNhwcF32(ctx, g);
  if (!DnnlRuns(g)) return RunContiguous(ctx, BatchNormRef<float>);
  const bool training = ctx.attrs.Bool("training");
  const float eps = static_cast<float>(ctx.attrs.Float("eps"));
  const bool weight = ctx.inputs[1] != nullptr, bias = ctx.inputs[2] != nullptr;
  float* mean = ctx.out(1).data<float>();
  float* var = ctx.out(2).data<float>();
  if (!training) SaveRunningStats<float>(ctx, g);
  using Flags = dnnl::normalization_flags;
  Flags flags = Flags::none;
  if (weight) flags |= Flags::use_scale;
  if (bias) flags |= Flags::use_shift;
  if (!training) flags |= Flags::use_global_stats;
  const Exec exec = PrepareExec(ctx.pool, 3 * ctx.in(0).numel());
  static auto* cache = new PrimitiveCache<BnFwdEntry>();
  auto e = cache->Get({exec.threads, g.n, g.c, g.s, g.channels_last, static_cast<int64_t>(flags),
                       std::bit_cast<int32_t>(eps)},
                      [&] {
                        auto pd = FwdPd(g, training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
                                        eps, flags);
                        return BnFwdEntry{pd, dnnl::batch_normalization_forward(pd)};
                      });
  dnnl::stream& stream = exec.stream;
  const memory::desc stat = PlainDesc({g.c});
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory(DataDesc(g), Engine(), ctx.in(0).raw_data())},
                                          {DNNL_ARG_DST, memory(DataDesc(g), Engine(), ctx.out(0).raw_data())},
                                          {DNNL_ARG_MEAN, memory(stat, Engine(), mean)},
                                          {DNNL_ARG_VARIANCE, memory(stat, Engine(), var)},
                                          {DNNL_ARG_SCRATCHPAD, Scratchpad(e->pd)}};
  if (weight) args.emplace(DNNL_ARG_SCALE, memory(stat, Engine(), ctx.in(1).raw_data()));
  if (bias) args.emplace(DNNL_ARG_SHIFT, memory(stat, Engine(), ctx.in(2).raw_data()));
  e->prim.execute(stream, args);
  stream.wait();
  if (training) UpdateRunningStats(ctx, g, mean, var);
}

// Note [Batch norm's gradient in place]
// batch_norm_backward reads x and grad_y twice, once for the sums and once for grad_x, and writes grad_x:
// into a buffer of its own, each line of it is read from memory before it is written (the write's read for
// ownership), a sixth pass. In a graph, x (a convolution's output, kept for this backward) and grad_y (a
// ReLU's gradient) mostly die here, so grad_x may take the buffer of one of them (OpDef::inplace_inputs):
// every kernel reads an element of x and of grad_y before it writes grad_x's of the same index (the
// channels-last and the loops' second pass; oneDNN's supports grad_x over grad_y, and its x is a copy where
// grad_x is written over x). ResNet-50's batch-16 lazy step (2 threads, AVX-512 Xeon, alternated): its
// batch norm backwards 141.2 -> 118.3 ms; its downsampling blocks' batch_norm_add_relu, whose y goes over
// the shortcut's batch norm output (the addend, which dies there), 13.1 -> 9.7 ms.

// batch_norm_backward's channels-last kernel, where it runs this call (with the forward ReLU's scale and shift
// for batch_norm_relu_backward: BatchNormNhwcBackward); false otherwise.
bool BatchNormBackwardNhwc(KernelContext& ctx, const float* relu_scale = nullptr, const float* relu_shift = nullptr) {
  const BnGeom g = GeomOf(ctx.in(0), ctx.out(0));
  if (!NhwcRuns(g) || !ChannelsLastCall(ctx.in(1), ctx.out(0))) return false;
  cpu::RunBatchNormNhwcBackward({.x = ctx.in(0).data<float>(),
                                 .grad_y = ctx.in(1).data<float>(),
                                 .mean = ctx.in(3).data<float>(),
                                 .var = ctx.in(4).data<float>(),
                                 .weight = ctx.inputs[2] ? ctx.in(2).data<float>() : nullptr,
                                 .rows = g.count(),
                                 .c = g.c,
                                 .eps = ctx.attrs.Float("eps"),
                                 .training = ctx.attrs.Bool("training"),
                                 .grad_x = ctx.out(0).data<float>(),
                                 .grad_weight = ctx.out(1).data<float>(),
                                 .grad_bias = ctx.out(2).data<float>(),
                                 .relu_scale = relu_scale,
                                 .relu_shift = relu_shift},
                                ctx.pool);
  return true;
}

void BatchNormBackwardF32(KernelContext& ctx) {
  if (BatchNormBackwardNhwc(ctx)) return;
  const BnGeom g = GeomOf(ctx.in(0), ctx.out(0));
  if (!DnnlRuns(g)) return RunContiguous(ctx, BatchNormBackwardRef<float>);
  const bool training = ctx.attrs.Bool("training");
  const float eps = static_cast<float>(ctx.attrs.Float("eps"));
  using Flags = dnnl::normalization_flags;
  const Flags flags = training ? Flags::use_scale | Flags::use_shift
                               : Flags::use_scale | Flags::use_shift | Flags::use_global_stats;
  const Exec exec = PrepareExec(ctx.pool, 4 * ctx.in(0).numel());
  static auto* cache = new PrimitiveCache<BnBwdEntry>();
  auto e = cache->Get({exec.threads, g.n, g.c, g.s, g.channels_last, static_cast<int64_t>(flags),
                       std::bit_cast<int32_t>(eps)},
                      [&] {
                        const auto hint = FwdPd(g, dnnl::prop_kind::forward_training, eps, flags);
                        dnnl::batch_normalization_backward::primitive_desc pd(
                            dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, DataDesc(g),
                                                                     DataDesc(g), eps, flags),
                            DefaultAttr(), Engine(), hint);
                        return BnBwdEntry{pd, dnnl::batch_normalization_backward(pd)};
                      });
  void* scale = nullptr;
  if (ctx.inputs[2]) {
    scale = ctx.in(2).raw_data();
  } else {  // no weight: a scale of ones
    scale = Buffer(kSlotExtra, static_cast<size_t>(g.c) * sizeof(float));
    std::fill_n(static_cast<float*>(scale), g.c, 1.0f);
  }
  // oneDNN takes grad_x over grad_y (in place), not over x: x goes to a copy where a graph wrote grad_x
  // over it (batch_norm_backward's inplace_inputs).
  void* x = ctx.in(0).raw_data();
  if (x == ctx.out(0).raw_data()) {
    x = std::memcpy(Buffer(kSlotSrc, ctx.in(0).nbytes()), x, ctx.in(0).nbytes());
  }
  dnnl::stream& stream = exec.stream;
  const memory::desc stat = PlainDesc({g.c});
  e->prim.execute(stream, {{DNNL_ARG_SRC, memory(DataDesc(g), Engine(), x)},
                           {DNNL_ARG_DIFF_DST, memory(DataDesc(g), Engine(), ctx.in(1).raw_data())},
                           {DNNL_ARG_MEAN, memory(stat, Engine(), ctx.in(3).raw_data())},
                           {DNNL_ARG_VARIANCE, memory(stat, Engine(), ctx.in(4).raw_data())},
                           {DNNL_ARG_SCALE, memory(stat, Engine(), scale)},
                           // oneDNN asks for the shift too (with use_shift), though it does not affect gradients.
                           {DNNL_ARG_SHIFT, memory(stat, Engine(), scale)},
                           {DNNL_ARG_DIFF_SRC, memory(DataDesc(g), Engine(), ctx.out(0).raw_data())},
                           {DNNL_ARG_DIFF_SCALE, memory(stat, Engine(), ctx.out(1).raw_data())},
                           {DNNL_ARG_DIFF_SHIFT, memory(stat, Engine(), ctx.out(2).raw_data())},
                           {DNNL_ARG_SCRATCHPAD, Scratchpad(e->pd)}});
  stream.wait();
}

// Loops, one channel per task (float64, and float32 calls oneDNN does not run) --------------------------

template <typename T>
void BatchNormRef(KernelContext& ctx) {
  const BnGeom g = GeomOf(ctx.in(0));
  const bool training = ctx.attrs.Bool("training");
  const double eps = ctx.attrs.Float("eps");
  const T* x = ctx.in(0).data<T>();
  const T* w = ctx.inputs[1] ? ctx.in(1).data<T>() : nullptr;
  const T* b = ctx.inputs[2] ? ctx.in(2).data<T>() : nullptr;
  T* y = ctx.out(0).data<T>();
  T* mean = ctx.out(1).data<T>();
  T* var = ctx.out(2).data<T>();
  if (!training) SaveRunningStats<T>(ctx, g);
  if (training && g.count() == 0) return SaveEmptyBatchStats<T>(ctx, g);
  ctx.pool.ParallelFor(g.c, GrainFor(3 * g.count()), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      if (training) {
        double sum = 0, sq = 0;
        for (int64_t n = 0; n < g.n; ++n) {
          const T* p = x + (n * g.c + c) * g.s;
          for (int64_t i = 0; i < g.s; ++i) sum += p[i];
        }
        const double mu = sum / static_cast<double>(g.count());
        for (int64_t n = 0; n < g.n; ++n) {
          const T* p = x + (n * g.c + c) * g.s;
          for (int64_t i = 0; i < g.s; ++i) sq += (p[i] - mu) * (p[i] - mu);
        }
        mean[c] = static_cast<T>(mu);
        var[c] = static_cast<T>(sq / static_cast<double>(g.count()));
      }
      const T scale = static_cast<T>((w ? w[c] : T(1)) / std::sqrt(static_cast<double>(var[c]) + eps));
      const T shift = (b ? b[c] : T(0)) - mean[c] * scale;
      for (int64_t n = 0; n < g.n; ++n) {
        const T* p = x + (n * g.c + c) * g.s;
        T* q = y + (n * g.c + c) * g.s;
        for (int64_t i = 0; i < g.s; ++i) q[i] = p[i] * scale + shift;
      }
    }
  });
  if (training) UpdateRunningStats(ctx, g, mean, var);
}

template <typename T>
void BatchNormBackwardRef(KernelContext& ctx) {
  const BnGeom g = GeomOf(ctx.in(0));
  const bool training = ctx.attrs.Bool("training");
  const double eps = ctx.attrs.Float("eps");
  const T* x = ctx.in(0).data<T>();
  const T* dy = ctx.in(1).data<T>();
  const T* w = ctx.inputs[2] ? ctx.in(2).data<T>() : nullptr;
  const T* mean = ctx.in(3).data<T>();
  const T* var = ctx.in(4).data<T>();
  T* dx = ctx.out(0).data<T>();
  T* dw = ctx.out(1).data<T>();
  T* db = ctx.out(2).data<T>();
  const double m = static_cast<double>(g.count());
  ctx.pool.ParallelFor(g.c, GrainFor(3 * g.count()), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const double mu = mean[c], invstd = 1 / std::sqrt(static_cast<double>(var[c]) + eps);
      double sum_dy = 0, sum_dy_xhat = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        const int64_t off = (n * g.c + c) * g.s;
        for (int64_t i = 0; i < g.s; ++i) {
          sum_dy += dy[off + i];
          sum_dy_xhat += dy[off + i] * (x[off + i] - mu) * invstd;
        }
      }
      db[c] = static_cast<T>(sum_dy);
      dw[c] = static_cast<T>(sum_dy_xhat);
      const double k = (w ? w[c] : 1.0) * invstd;
      for (int64_t n = 0; n < g.n; ++n) {
        const int64_t off = (n * g.c + c) * g.s;
        for (int64_t i = 0; i < g.s; ++i) {
          // Training: the batch statistics depend on x too.
          const double d = training ? dy[off + i] - sum_dy / m - (x[off + i] - mu) * invstd * sum_dy_xhat / m
                                    : dy[off + i];
          dx[off + i] = static_cast<T>(k * d);
        }
      }
    }
  });
}

// ---- batch_norm_add_relu: y = relu(batch_norm(x) + addend) ----------------------------------------
// Its inputs 0-4 and outputs are batch_norm's, the addend (optional) is input 5. The channels-last kernels
// do the add and the ReLU in the normalisation's pass; other calls run batch_norm's kernel and a second
// pass.

// The addend (input 5) of the fused op, or null.
template <typename T>
const T* AddendOf(KernelContext& ctx) {
  return ctx.inputs[5] ? ctx.in(5).data<T>() : nullptr;
}

// y = relu(y + addend) over y's elements (the addend is dense like y: a layout input).
template <typename T>
void AddRelu(KernelContext& ctx) {
  T* y = ctx.out(0).data<T>();
  const T* a = AddendOf<T>(ctx);
  const int64_t n = ctx.out(0).numel();
  ctx.pool.ParallelFor(n, GrainFor(1), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T v = a != nullptr ? y[i] + a[i] : y[i];
      y[i] = v < T(0) ? T(0) : v;  // NaN stays NaN
    }
  });
}

// Where a graph writes y over the addend (batch_norm_add_relu's inplace_inputs), the batch norm's y would
// overwrite it before the add: the addend is read from a copy.
template <void (*Kernel)(KernelContext&), typename T>
void BatchNormAddReluComposed(KernelContext& ctx) {
  if (!ctx.inputs[5] || ctx.in(5).raw_data() != ctx.out(0).raw_data()) {
    Kernel(ctx);
    return AddRelu<T>(ctx);
  }
  std::vector<TensorPtr> inputs(ctx.inputs.begin(), ctx.inputs.end());
  inputs[5] = CopyOf(inputs[5], &ctx.pool, inputs[5]->memory_format());
  KernelContext copied{inputs, ctx.outputs, ctx.attrs, ctx.pool, ctx.generator, ctx.op};
  Kernel(copied);
  AddRelu<T>(copied);
}

void BatchNormAddReluF32(KernelContext& ctx) {
  const BnGeom g = GeomOf(ctx.in(0), ctx.out(0));
  if (NhwcRuns(g)) return BatchNormNhwcF32(ctx, g, AddendOf<float>(ctx), /*relu=*/true);
  BatchNormAddReluComposed<BatchNormF32, float>(ctx);
}

// ---- batch_norm_relu_backward: the gradient of relu(batch_norm(x)) ----------------------------------
// Inputs (x, grad_y, weight, saved_mean, saved_var, bias, y): batch_norm_backward's, then the forward's bias
// and output y = relu(batch_norm(x)); outputs batch_norm_backward's.
//
// Note [Batch norm's ReLU gradient from x]
// batch_norm_add_relu without an addend (a ResNet block's first two batch norms, its stem's) took relu_backward
// (grad_y and y read, grad written) and then batch_norm_backward (x and that gradient read twice, grad_x
// written). Where the forward ran the channels-last kernel, its ReLU passed exactly the elements where x *
// scale + shift > 0, with the scale and shift that batch_norm_relu_backward computes again from the same
// statistics, weight and bias (NhwcScaleShift) and the same fused multiply-add: so batch_norm_backward's
// channels-last kernel masks grad_y by x, which it reads anyway, and the ReLU's pass and y's reads are gone.
// The same bits as the two ops (the mask keeps grad_y's bits or gives +0, as relu_backward's select does).
// Other calls (the forward on oneDNN or the loops, whose y need not be x * scale + shift bit for bit) take
// the ReLU's gradient from y, as relu_backward, then batch_norm_backward's kernel. ResNet-50's lazy step at
// batch 16 (2 threads, AVX-512 Xeon, alternated, profiled): relu_backward and batch_norm_backward 110.0 ->
// 99.1 ms (33 of its 34 ReLU gradients fused; the stem's pair 9.2 -> 6.4 ms).
//
// Its half-precision kernels are the float32 one on the values widened (as every op's), but autograd takes it
// for float32 and float64 only (BatchNormAddReluBackward): half precision rounds y after the ReLU and the
// saved statistics too, so a mask recomputed from them may differ from y's; there it stays relu_backward.

// relu_backward's kernel (grad_y where y > 0, else 0) into a buffer laid out as grad_y, then the batch
// norm's backward kernel: the two ops.
template <void (*Kernel)(KernelContext&)>
void BatchNormReluBackwardComposed(KernelContext& ctx) {
  static const OpDef& relu_bwd = OpRegistry::Global().Get("relu_backward");
  const Tensor& dy = ctx.in(1);
  const TensorPtr grad = Empty(dy.dtype(), dy.shape(), dy.device(), dy.memory_format());  // y's (layout_inputs)
  const std::vector<TensorPtr> relu_inputs = {ctx.inputs[1], ctx.inputs[6]}, relu_outputs = {grad};
  KernelContext relu{relu_inputs, relu_outputs, Attrs{}, ctx.pool, ctx.generator, &relu_bwd};
  relu_bwd.FindKernel(DeviceType::kCPU, dy.dtype())->fn(relu);
  const std::vector<TensorPtr> inputs = {ctx.inputs[0], grad, ctx.inputs[2], ctx.inputs[3], ctx.inputs[4]};
  KernelContext bn{inputs, ctx.outputs, ctx.attrs, ctx.pool, ctx.generator, ctx.op};
  Kernel(bn);
}

void BatchNormReluBackwardF32(KernelContext& ctx) {
  // The forward's kernel for x and y: the channels-last one where it runs them (BatchNormAddReluF32).
  if (NhwcRuns(GeomOf(ctx.in(0), ctx.in(6)))) {
    std::vector<float> scale, shift;
    NhwcScaleShift(ctx.in(0).shape()[1].value(), ctx.inputs[2] ? ctx.in(2).data<float>() : nullptr,
                   ctx.inputs[5] ? ctx.in(5).data<float>() : nullptr, ctx.in(3).data<float>(), ctx.in(4).data<float>(),
                   ctx.attrs.Float("eps"), scale, shift);
    if (BatchNormBackwardNhwc(ctx, scale.data(), shift.data())) return;
  }
  BatchNormReluBackwardComposed<BatchNormBackwardF32>(ctx);
}

// ---- autograd -------------------------------------------------------------------------------------

// The gradients of x, weight and bias (grads[0-2], where asked) for the gradient dy of batch_norm's y.
// saved_mean / saved_var are internal to the pair of ops: no gradient flows back through them.
void BatchNormInputGrads(const BackwardContext& ctx, const TensorPtr& dy, std::vector<TensorPtr>& grads) {
  static const OpDef& bwd = OpRegistry::Global().Get("batch_norm_backward");
  std::vector<TensorPtr> r = Apply(bwd, {ctx.inputs[0], dy, ctx.inputs[1], ctx.outputs[1], ctx.outputs[2]},
                                   {{"training", ctx.attrs.Bool("training")}, {"eps", ctx.attrs.Float("eps")}});
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.needs_input_grad[i]) grads[i] = r[i];
  }
}

std::vector<TensorPtr> BatchNormBackward(const BackwardContext& ctx) {
  std::vector<TensorPtr> grads(5);
  if (ctx.grad_outputs[0]) BatchNormInputGrads(ctx, ctx.grad_outputs[0], grads);
  return grads;
}

// batch_norm_add_relu: without an addend, batch_norm_relu_backward (float32 and float64: Note [Batch norm's
// ReLU gradient from x]); with one, the gradient through the ReLU (relu_backward, which a graph fuses with the
// sum of gradients before it; it is also the addend's), then batch_norm's.
std::vector<TensorPtr> BatchNormAddReluBackward(const BackwardContext& ctx) {
  static const OpDef& relu_bwd = OpRegistry::Global().Get("relu_backward");
  static const OpDef& fused_bwd = OpRegistry::Global().Get("batch_norm_relu_backward");
  std::vector<TensorPtr> grads(6);
  if (!ctx.grad_outputs[0]) return grads;
  const Symbol<DType> dtype = ctx.inputs[0]->dtype();
  if (!ctx.inputs[5] && (dtype == DType::Float32() || dtype == DType::Float64())) {
    std::vector<TensorPtr> r = Apply(fused_bwd,
                                     {ctx.inputs[0], ctx.grad_outputs[0], ctx.inputs[1], ctx.outputs[1], ctx.outputs[2],
                                      ctx.inputs[2], ctx.outputs[0]},
                                     {{"training", ctx.attrs.Bool("training")}, {"eps", ctx.attrs.Float("eps")}});
    for (size_t i = 0; i < 3; ++i) {
      if (ctx.needs_input_grad[i]) grads[i] = r[i];
    }
    return grads;
  }
  TensorPtr g = Apply(relu_bwd, {ctx.grad_outputs[0], ctx.outputs[0]}, {})[0];
  BatchNormInputGrads(ctx, g, grads);
  if (ctx.needs_input_grad[5]) grads[5] = std::move(g);
  return grads;
}

}  // namespace

namespace ops {
TensorPtr BatchNorm(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, const TensorPtr& running_mean,
                    const TensorPtr& running_var, const BatchNormOptions& options) {
  static const OpDef& op = OpRegistry::Global().Get("batch_norm");
  return Apply(op, {x, weight, bias, running_mean, running_var},
               {{"training", options.training}, {"momentum", options.momentum}, {"eps", options.eps}})[0];
}
TensorPtr BatchNormAddRelu(const TensorPtr& x, const TensorPtr& addend, const TensorPtr& weight, const TensorPtr& bias,
                           const TensorPtr& running_mean, const TensorPtr& running_var,
                           const BatchNormOptions& options) {
  static const OpDef& op = OpRegistry::Global().Get("batch_norm_add_relu");
  return Apply(op, {x, weight, bias, running_mean, running_var, addend},
               {{"training", options.training}, {"momentum", options.momentum}, {"eps", options.eps}})[0];
}
}  // namespace ops

void RegisterBatchNormOps(OpRegistry& registry) {
  registry.Register(OpDef{
      .name = "batch_norm",
      .inputs = {"x", "weight", "bias", "running_mean", "running_var"},
      .optional_inputs = {"weight", "bias", "running_mean", "running_var"},
      .outputs = {"y", "saved_mean", "saved_var"},
      .attrs = {{"training", true}, {"momentum", 0.1}, {"eps", 1e-5}},
      .infer = InferBatchNorm,
      .backward = BatchNormBackward,
      .kernels = cpu::WithHalfInFloat32(
          {{DeviceType::kCPU, {DataType::kFloat32}, Guarded<BatchNormF32>, /*channels_last=*/true},
           {DeviceType::kCPU, {DataType::kFloat64}, BatchNormRef<double>}}),
      .mutated_inputs = {3, 4},
      .writes_inputs = [](const Attrs& attrs) { return attrs.Bool("training"); },
      .layout = LayoutOfInputs,  // x's
      .layout_inputs = {0},
      .layout_outputs = {0},
      .batch_norm = true,
      .fuse_add_relu = "batch_norm_add_relu",
      .autocast = AutocastPolicy::kFloat32,
  });
  registry.Register(OpDef{
      .name = "batch_norm_backward",
      .inputs = {"x", "grad_y", "weight", "saved_mean", "saved_var"},
      .optional_inputs = {"weight"},
      .outputs = {"grad_x", "grad_weight", "grad_bias"},
      .attrs = {{"training", true}, {"eps", 1e-5}},
      .infer = InferBatchNormBackward,
      .kernels = cpu::WithHalfInFloat32(
          {{DeviceType::kCPU, {DataType::kFloat32}, Guarded<BatchNormBackwardF32>, /*channels_last=*/true},
           {DeviceType::kCPU, {DataType::kFloat64}, BatchNormBackwardRef<double>}}),
      .layout = LayoutOfInputs,  // x's
      .layout_inputs = {0, 1},
      .layout_outputs = {0},
      .inplace_inputs = {1, 0},  // grad_x over grad_y or x (Note [Batch norm's gradient in place])
  });
  registry.Register(OpDef{
      .name = "batch_norm_relu_backward",
      .inputs = {"x", "grad_y", "weight", "saved_mean", "saved_var", "bias", "y"},
      .optional_inputs = {"weight", "bias"},
      .outputs = {"grad_x", "grad_weight", "grad_bias"},
      .attrs = {{"training", true}, {"eps", 1e-5}},
      .infer = InferBatchNormReluBackward,
      .kernels = cpu::WithHalfInFloat32(
          {{DeviceType::kCPU, {DataType::kFloat32}, Guarded<BatchNormReluBackwardF32>, /*channels_last=*/true},
           {DeviceType::kCPU, {DataType::kFloat64}, BatchNormReluBackwardComposed<BatchNormBackwardRef<double>>}}),
      .layout = LayoutOfInputs,  // x's
      .layout_inputs = {0, 1, 6},
      .layout_outputs = {0},
      .inplace_inputs = {1, 0},  // as batch_norm_backward's (the mask reads x's element before grad_x's is written)
  });
  registry.Register(OpDef{
      .name = "batch_norm_add_relu",
      .inputs = {"x", "weight", "bias", "running_mean", "running_var", "addend"},
      .optional_inputs = {"weight", "bias", "running_mean", "running_var", "addend"},
      .outputs = {"y", "saved_mean", "saved_var"},
      .attrs = {{"training", true}, {"momentum", 0.1}, {"eps", 1e-5}},
      .infer = InferBatchNormAddRelu,
      .backward = BatchNormAddReluBackward,
      .kernels = cpu::WithHalfInFloat32(
          {{DeviceType::kCPU, {DataType::kFloat32}, Guarded<BatchNormAddReluF32>, /*channels_last=*/true},
           {DeviceType::kCPU, {DataType::kFloat64}, BatchNormAddReluComposed<BatchNormRef<double>, double>}}),
      .mutated_inputs = {3, 4},
      .writes_inputs = [](const Attrs& attrs) { return attrs.Bool("training"); },
      .layout = LayoutOfInputs,  // x's
      .layout_inputs = {0, 5},
      .layout_outputs = {0},
      .batch_norm = true,
      .batch_norm_add_relu = true,
      .inplace_inputs = {5},  // y over the addend: a downsampling block's shortcut, which dies there
      .autocast = AutocastPolicy::kFloat32,
  });
}

}  // namespace oneflow
