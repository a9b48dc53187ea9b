// layer_norm, group_norm, instance_norm and their gradient ops.
//
// All three normalise the rows of x viewed as (rows, M), and each row is `cpg` channel blocks of `s`
// contiguous elements whose affine parameter is that of channel (row % groups) * cpg + block:
//   layer_norm     rows = prod(leading dims), M = prod(normalized_shape), groups 1, cpg = M, s = 1
//   group_norm     x (N, C, S...): rows = N * G, groups G, cpg = C / G, s = prod(S)
//   instance_norm  group_norm with G = C
// The forward kernel computes each row's mean and 1 / sqrt(var + eps) (two passes, float64
// accumulation) and writes y; they are saved as the outputs mean and rstd, of shape x's leading dims
// (layer_norm), (N, G) or (N, C). The backward kernel computes dx a row at a time (two sums per row),
// then the parameter gradients as a column reduction in which every parameter is summed by one task
// in a fixed order (no races; results independent of the thread count). The gradient ops have no
// backward themselves (no double backward).
#include "core/ops/cpu/in_float32.h"
#include "core/ops/normalization.h"

#include <algorithm>
#include <cmath>

#include "core/op/dispatch.h"
#include "core/ops/register.h"

namespace oneflow {
namespace {

enum class Norm { kLayer, kGroup, kInstance };

const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }

// Elements per parallel chunk (simple operations each).
constexpr int64_t kGrain = int64_t{1} << 15;
// Columns (parameters) one task of layer_norm's parameter reduction accumulates at once.
constexpr int64_t kColumnBlock = 512;

int64_t GrainFor(int64_t work) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, work)); }

// Two sizes that cannot be the same: both known and different, or two different symbols.
bool Conflict(Dim a, Dim b) { return a != b && !a.is_unknown() && !b.is_unknown() && a.is_known() == b.is_known(); }

// ---- inference --------------------------------------------------------------------------------------

void CheckFloatingX(const TensorMeta& x) {
  OF_CHECK(x.dtype->is_floating_point()) << "x must be floating point, got " << x.dtype;
}

double CheckedEps(const Attrs& attrs) {
  const double eps = attrs.Float("eps");
  OF_CHECK(std::isfinite(eps) && eps >= 0) << "eps must be finite and >= 0, got " << eps;
  return eps;
}

// layer_norm's normalized_shape, checked against x.
Shape NormalizedShape(const Shape& x, const Attrs& attrs) {
  const std::vector<int64_t>& ns = attrs.Ints("normalized_shape");
  OF_CHECK(!ns.empty()) << "normalized_shape must have at least one dim, got ()";
  Shape shape;
  for (size_t i = 0; i < ns.size(); ++i) {
    OF_CHECK(ns[i] >= 0) << "normalized_shape[" << i << "] must be >= 0, got " << ns[i];
    shape.push_back(Dim(ns[i]));
  }
  const int64_t lead = x.ndim() - shape.ndim();
  bool ok = lead >= 0;
  for (int64_t d = 0; ok && d < shape.ndim(); ++d) ok = !Conflict(x[lead + d], shape[d]);
  OF_CHECK(ok) << "normalized_shape " << shape << " must be the last dims of x, got x " << x;
  return shape;
}

// group_norm's num_groups, checked against x (N, C, ...).
int64_t NumGroups(const Shape& x, const Attrs& attrs) {
  const int64_t g = attrs.Int("num_groups");
  OF_CHECK(g >= 1) << "num_groups must be >= 1, got " << g;
  const Dim c = x[1];
  OF_CHECK(!c.is_known() || c.value() % g == 0)
      << "the " << c << " channels of x " << x << " are not divisible into num_groups " << g;
  return g;
}

void CheckBatched(const Shape& x, Norm kind) {
  if (kind == Norm::kInstance) {
    OF_CHECK(x.ndim() >= 3) << "x must be (N, C, ...) with at least one spatial dim, got " << x;
    Dim spatial = x[2];
    for (int64_t d = 3; d < x.ndim(); ++d) spatial = spatial * x[d];
    OF_CHECK(!(spatial == 1)) << "x " << x << " has 1 spatial element per channel, whose variance is 0; expected more";
  } else {
    OF_CHECK(x.ndim() >= 2) << "x must be (N, C, ...), got " << x;
  }
}

// The shape of the affine parameters and of the saved statistics.
struct NormShapes {
  Shape param, stats;
};

NormShapes ShapesOf(const Shape& x, const Attrs& attrs, Norm kind) {
  if (kind == Norm::kLayer) {
    Shape param = NormalizedShape(x, attrs);
    return {param, Shape(std::vector<Dim>(x.begin(), x.end() - param.ndim()))};
  }
  CheckBatched(x, kind);
  const Dim groups = kind == Norm::kGroup ? Dim(NumGroups(x, attrs)) : x[1];
  return {Shape{x[1]}, Shape{x[0], groups}};
}

void CheckParam(const TensorMeta& x, const TensorMeta& p, const Shape& expected, std::string_view name) {
  if (!p.dtype) return;
  OF_CHECK(p.dtype == x.dtype) << name << " is " << p.dtype << " but x is " << x.dtype << "; they must have one dtype";
  bool ok = p.shape.ndim() == expected.ndim();
  for (int64_t d = 0; ok && d < expected.ndim(); ++d) ok = !Conflict(p.shape[d], expected[d]);
  OF_CHECK(ok) << name << " must have shape " << expected << " for x " << x.shape << ", got " << p.shape;
}

// (x, weight?, bias?) -> (y, mean, rstd).
template <Norm K>
std::vector<TensorMeta> InferNorm(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta& x = in[0];
  CheckFloatingX(x);
  CheckedEps(attrs);
  const NormShapes s = ShapesOf(x.shape, attrs, K);
  CheckParam(x, in[1], s.param, "weight");
  CheckParam(x, in[2], s.param, "bias");
  const TensorMeta stat{x.dtype, s.stats, x.device};
  return {x, stat, stat};
}

// (x, dy, weight?, mean, rstd) -> (dx, dweight, dbias).
template <Norm K>
std::vector<TensorMeta> InferNormBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta& x = in[0];
  CheckFloatingX(x);
  const NormShapes s = ShapesOf(x.shape, attrs, K);
  OF_CHECK(in[1].dtype == x.dtype && in[1].shape == x.shape)
      << "dy " << in[1].dtype << " " << in[1].shape << " must match x " << x.dtype << " " << x.shape;
  CheckParam(x, in[2], s.param, "weight");
  CheckParam(x, in[3], s.stats, "mean");
  CheckParam(x, in[4], s.stats, "rstd");
  const TensorMeta param{x.dtype, s.param, x.device};
  return {x, param, param};
}

// ---- kernels ------------------------------------------------------------------------------------------

struct RowGeom {
  int64_t rows, groups, cpg, s;
  int64_t m() const { return cpg * s; }
  int64_t params() const { return groups * cpg; }
};

template <Norm K>
RowGeom GeomOf(const Tensor& x, const Attrs& attrs) {
  const Shape& shape = x.shape();
  if constexpr (K == Norm::kLayer) {
    const int64_t k = static_cast<int64_t>(attrs.Ints("normalized_shape").size());
    int64_t rows = 1, m = 1;
    for (int64_t d = 0; d < shape.ndim(); ++d) (d < shape.ndim() - k ? rows : m) *= shape[d].value();
    return {rows, 1, m, 1};
  } else {
    const int64_t n = shape[0].value(), c = shape[1].value();
    int64_t s = 1;
    for (int64_t d = 2; d < shape.ndim(); ++d) s *= shape[d].value();
    const int64_t g = K == Norm::kGroup ? attrs.Int("num_groups") : c;
    return {n * g, g, g == 0 ? 0 : c / g, s};  // instance_norm of 0 channels: no rows
  }
}

// Sum of p[0, n) in double, four partial sums.
template <typename T>
double RowSum(const T* p, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
  }
  for (; i < n; ++i) s0 += p[i];
  return (s0 + s1) + (s2 + s3);
}

template <typename T>
double RowSquaredDeviations(const T* p, int64_t n, double mean) {
  double s0 = 0, s1 = 0;
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const double a = p[i] - mean, b = p[i + 1] - mean;
    s0 += a * a;
    s1 += b * b;
  }
  for (; i < n; ++i) s0 += (p[i] - mean) * (p[i] - mean);
  return s0 + s1;
}

template <Norm K>
void NormKernel(KernelContext& ctx) {
  const RowGeom g = GeomOf<K>(ctx.in(0), ctx.attrs);
  const double eps = ctx.attrs.Float("eps");
  VisitDType(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = ctx.in(0).data<const T>();
      const T* w = ctx.inputs[1] ? ctx.in(1).data<const T>() : nullptr;
      const T* b = ctx.inputs[2] ? ctx.in(2).data<const T>() : nullptr;
      T* y = ctx.out(0).data<T>();
      T* mean = ctx.out(1).data<T>();
      T* rstd = ctx.out(2).data<T>();
      const int64_t m = g.m();
      ctx.pool.ParallelFor(g.rows, GrainFor(3 * m), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const T* xr = x + r * m;
          T* yr = y + r * m;
          const double mu = m > 0 ? RowSum(xr, m) / static_cast<double>(m) : 0.0;
          const double var = m > 0 ? RowSquaredDeviations(xr, m, mu) / static_cast<double>(m) : 0.0;
          const double rs = 1.0 / std::sqrt(var + eps);
          mean[r] = static_cast<T>(mu);
          rstd[r] = static_cast<T>(rs);
          const int64_t c0 = (r % g.groups) * g.cpg;
          if (g.s == 1) {
            const T tm = static_cast<T>(mu), tr = static_cast<T>(rs);
            for (int64_t i = 0; i < m; ++i) {
              yr[i] = (xr[i] - tm) * tr * (w ? w[c0 + i] : T(1)) + (b ? b[c0 + i] : T(0));
            }
          } else {
            for (int64_t k = 0; k < g.cpg; ++k) {
              const double scale = rs * (w ? static_cast<double>(w[c0 + k]) : 1.0);
              const T ts = static_cast<T>(scale);
              const T tb = static_cast<T>((b ? static_cast<double>(b[c0 + k]) : 0.0) - mu * scale);
              const T* xs = xr + k * g.s;
              T* ys = yr + k * g.s;
              for (int64_t i = 0; i < g.s; ++i) ys[i] = xs[i] * ts + tb;
            }
          }
        }
      });
    }
  });
}

// dx = rstd * (dy w - mean(dy w) - xhat * mean(dy w xhat)) per row, xhat = (x - mean) * rstd;
// dweight = sum(dy xhat), dbias = sum(dy) per parameter over the rows and blocks it applies to.
template <Norm K>
void NormBackwardKernel(KernelContext& ctx) {
  const RowGeom g = GeomOf<K>(ctx.in(0), ctx.attrs);
  VisitDType(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = ctx.in(0).data<const T>();
      const T* dy = ctx.in(1).data<const T>();
      const T* w = ctx.inputs[2] ? ctx.in(2).data<const T>() : nullptr;
      const T* mean = ctx.in(3).data<const T>();
      const T* rstd = ctx.in(4).data<const T>();
      T* dx = ctx.out(0).data<T>();
      T* dw = ctx.out(1).data<T>();
      T* db = ctx.out(2).data<T>();
      const int64_t m = g.m();
      ctx.pool.ParallelFor(g.rows, GrainFor(4 * m), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const T *xr = x + r * m, *dyr = dy + r * m;
          T* dxr = dx + r * m;
          const double mu = mean[r], rs = rstd[r];
          const int64_t c0 = (r % g.groups) * g.cpg;
          double sum_g = 0, sum_gx = 0;
          if (g.s == 1) {  // layer_norm: one parameter per element
            for (int64_t i = 0; i < m; ++i) {
              const double gi = static_cast<double>(dyr[i]) * (w ? static_cast<double>(w[c0 + i]) : 1.0);
              sum_g += gi;
              sum_gx += gi * (xr[i] - mu);
            }
          } else {
            for (int64_t k = 0; k < g.cpg; ++k) {
              const double wk = w ? static_cast<double>(w[c0 + k]) : 1.0;
              double a = 0, bsum = 0;
              for (int64_t i = k * g.s; i < (k + 1) * g.s; ++i) {
                a += dyr[i];
                bsum += dyr[i] * (xr[i] - mu);
              }
              sum_g += wk * a;
              sum_gx += wk * bsum;
            }
          }
          const double inv_m = m > 0 ? 1.0 / static_cast<double>(m) : 0.0;
          const double mean_g = sum_g * inv_m, mean_gx = sum_gx * rs * inv_m;
          for (int64_t k = 0; k < g.cpg; ++k) {
            const double wk = w ? static_cast<double>(w[c0 + k]) : 1.0;
            for (int64_t i = k * g.s; i < (k + 1) * g.s; ++i) {
              const double xhat = (xr[i] - mu) * rs;
              dxr[i] = static_cast<T>(rs * (dyr[i] * wk - mean_g - xhat * mean_gx));
            }
          }
        }
      });

      const int64_t per_group = g.rows / std::max<int64_t>(g.groups, 1);  // rows that share a parameter
      if (g.s == 1 && g.groups == 1) {
        // layer_norm: parameters are the columns of the (rows, M) matrix; blocks of them stream rows.
        const int64_t blocks = (m + kColumnBlock - 1) / kColumnBlock;
        ctx.pool.ParallelFor(blocks, GrainFor(2 * g.rows * kColumnBlock), [&](int64_t begin, int64_t end) {
          std::vector<double> acc_w(static_cast<size_t>(kColumnBlock)), acc_b(static_cast<size_t>(kColumnBlock));
          for (int64_t blk = begin; blk < end; ++blk) {
            const int64_t c0 = blk * kColumnBlock, n = std::min(kColumnBlock, m - c0);
            std::fill_n(acc_w.begin(), n, 0.0);
            std::fill_n(acc_b.begin(), n, 0.0);
            for (int64_t r = 0; r < g.rows; ++r) {
              const T *xr = x + r * m + c0, *dyr = dy + r * m + c0;
              const double mu = mean[r], rs = rstd[r];
              for (int64_t j = 0; j < n; ++j) {
                acc_b[static_cast<size_t>(j)] += dyr[j];
                acc_w[static_cast<size_t>(j)] += dyr[j] * (xr[j] - mu) * rs;
              }
            }
            for (int64_t j = 0; j < n; ++j) {
              dw[c0 + j] = static_cast<T>(acc_w[static_cast<size_t>(j)]);
              db[c0 + j] = static_cast<T>(acc_b[static_cast<size_t>(j)]);
            }
          }
        });
      } else {
        // group_norm / instance_norm: parameter p = channel, summed over the samples' blocks of s.
        ctx.pool.ParallelFor(g.params(), GrainFor(2 * per_group * g.s), [&](int64_t begin, int64_t end) {
          for (int64_t p = begin; p < end; ++p) {
            const int64_t grp = p / g.cpg, k = p % g.cpg;
            double aw = 0, ab = 0;
            for (int64_t n = 0; n < per_group; ++n) {
              const int64_t r = n * g.groups + grp;
              const T *xs = x + r * m + k * g.s, *dys = dy + r * m + k * g.s;
              const double mu = mean[r];
              double sw = 0;
              for (int64_t i = 0; i < g.s; ++i) {
                ab += dys[i];
                sw += dys[i] * (xs[i] - mu);
              }
              aw += sw * static_cast<double>(rstd[r]);
            }
            dw[p] = static_cast<T>(aw);
            db[p] = static_cast<T>(ab);
          }
        });
      }
    }
  });
}

// ---- autograd -------------------------------------------------------------------------------------------

// The attributes the gradient op needs (the geometry; eps is in the saved rstd).
Attrs BackwardAttrs(const Attrs& attrs, Norm kind) {
  if (kind == Norm::kLayer) return {{"normalized_shape", attrs.Ints("normalized_shape")}};
  if (kind == Norm::kGroup) return {{"num_groups", attrs.Int("num_groups")}};
  return {};
}

template <Norm K>
std::vector<TensorPtr> NormBackward(const BackwardContext& ctx) {
  static const OpDef& bwd = Op(K == Norm::kLayer   ? "layer_norm_backward"
                               : K == Norm::kGroup ? "group_norm_backward"
                                                   : "instance_norm_backward");
  std::vector<TensorPtr> grads(3);
  // mean and rstd are internal to the pair of ops: no gradient flows back through them.
  const TensorPtr& dy = ctx.grad_outputs[0];
  if (!dy) return grads;
  std::vector<TensorPtr> r =
      Apply(bwd, {ctx.inputs[0], dy, ctx.inputs[1], ctx.outputs[1], ctx.outputs[2]}, BackwardAttrs(ctx.attrs, K));
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.needs_input_grad[i]) grads[i] = r[i];
  }
  return grads;
}

}  // namespace

namespace ops {

TensorPtr LayerNorm(const TensorPtr& x, const std::vector<int64_t>& normalized_shape, const TensorPtr& weight,
                    const TensorPtr& bias, double eps) {
  static const OpDef& op = Op("layer_norm");
  return Apply(op, {x, weight, bias}, {{"normalized_shape", normalized_shape}, {"eps", eps}})[0];
}
TensorPtr GroupNorm(const TensorPtr& x, int64_t num_groups, const TensorPtr& weight, const TensorPtr& bias,
                    double eps) {
  static const OpDef& op = Op("group_norm");
  return Apply(op, {x, weight, bias}, {{"num_groups", num_groups}, {"eps", eps}})[0];
}
TensorPtr InstanceNorm(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, double eps) {
  static const OpDef& op = Op("instance_norm");
  return Apply(op, {x, weight, bias}, {{"eps", eps}})[0];
}

}  // namespace ops

void RegisterNormalizationOps(OpRegistry& registry) {
  const AttrSpec eps{"eps", 1e-5};
  const AttrSpec normalized_shape{"normalized_shape", std::vector<int64_t>{}, true};
  const AttrSpec num_groups{"num_groups", int64_t{1}, true};
  const auto forward = [&](std::string name, std::vector<AttrSpec> attrs, InferFn infer, BackwardFn backward,
                           KernelFn fn) {
    registry.Register(OpDef{.name = std::move(name),
                            .inputs = {"x", "weight", "bias"},
                            .optional_inputs = {"weight", "bias"},
                            .outputs = {"y", "mean", "rstd"},
                            .attrs = std::move(attrs),
                            .infer = infer,
                            .backward = backward,
                            .kernels = CpuKernels(kFloatingTypes, fn),
                            .autocast = AutocastPolicy::kFloat32});
  };
  const auto backward = [&](std::string name, std::vector<AttrSpec> attrs, InferFn infer, KernelFn fn) {
    registry.Register(OpDef{.name = std::move(name),
                            .inputs = {"x", "dy", "weight", "mean", "rstd"},
                            .optional_inputs = {"weight"},
                            .outputs = {"dx", "dweight", "dbias"},
                            .attrs = std::move(attrs),
                            .infer = infer,
                            .kernels = CpuKernels(kFloatingTypes, fn)});
  };
  forward("layer_norm", {normalized_shape, eps}, InferNorm<Norm::kLayer>, NormBackward<Norm::kLayer>,
          NormKernel<Norm::kLayer>);
  forward("group_norm", {num_groups, eps}, InferNorm<Norm::kGroup>, NormBackward<Norm::kGroup>,
          NormKernel<Norm::kGroup>);
  forward("instance_norm", {eps}, InferNorm<Norm::kInstance>, NormBackward<Norm::kInstance>,
          NormKernel<Norm::kInstance>);
  backward("layer_norm_backward", {normalized_shape}, InferNormBackward<Norm::kLayer>,
           NormBackwardKernel<Norm::kLayer>);
  backward("group_norm_backward", {num_groups}, InferNormBackward<Norm::kGroup>, NormBackwardKernel<Norm::kGroup>);
  backward("instance_norm_backward", {}, InferNormBackward<Norm::kInstance>, NormBackwardKernel<Norm::kInstance>);
}

}  // namespace oneflow
