// softmax, log_softmax, nll_loss, cross_entropy (fused log_softmax + nll_loss with label smoothing),
// both with optional class weights and (N, C, d1, ...) inputs, dropout, and their gradient ops.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/common/philox.h"
#include "core/op/dispatch.h"
#include "core/ops/class_targets.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/losses.h"
#include "core/ops/ops.h"
#include "core/ops/register.h"

namespace oneflow {
namespace ops {
namespace {
const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }
}  // namespace

TensorPtr Softmax(const TensorPtr& x, int64_t dim) {
  static const OpDef& op = Op("softmax");
  return Apply1(op, {x}, {{"dim", dim}});
}
TensorPtr LogSoftmax(const TensorPtr& x, int64_t dim) {
  static const OpDef& op = Op("log_softmax");
  return Apply1(op, {x}, {{"dim", dim}});
}

Reduction ReductionFromName(std::string_view name) {
  if (name == "none") return Reduction::kNone;
  if (name == "mean") return Reduction::kMean;
  if (name == "sum") return Reduction::kSum;
  OF_THROW(InvalidArgument) << "reduction must be \"none\", \"mean\" or \"sum\", got \"" << name << "\"";
}
std::string_view ReductionName(Reduction reduction) {
  switch (reduction) {
    case Reduction::kNone: return "none";
    case Reduction::kMean: return "mean";
    case Reduction::kSum: return "sum";
  }
  OF_THROW(InvalidArgument) << "reduction: invalid value " << static_cast<int>(reduction);
}

TensorPtr CrossEntropy(const TensorPtr& logits, const TensorPtr& target, Reduction reduction, int64_t ignore_index,
                       double label_smoothing) {
  return WeightedCrossEntropy(logits, target, nullptr, reduction, ignore_index, label_smoothing);
}
TensorPtr WeightedCrossEntropy(const TensorPtr& logits, const TensorPtr& target, const TensorPtr& weight,
                               Reduction reduction, int64_t ignore_index, double label_smoothing) {
  static const OpDef& op = Op("cross_entropy");
  return Apply1(op, {logits, target, weight},
                {{"reduction", std::string(ReductionName(reduction))},
                 {"ignore_index", ignore_index},
                 {"label_smoothing", label_smoothing}});
}
TensorPtr NllLoss(const TensorPtr& log_probs, const TensorPtr& target, Reduction reduction, int64_t ignore_index) {
  return WeightedNllLoss(log_probs, target, nullptr, reduction, ignore_index);
}
TensorPtr WeightedNllLoss(const TensorPtr& log_probs, const TensorPtr& target, const TensorPtr& weight,
                          Reduction reduction, int64_t ignore_index) {
  static const OpDef& op = Op("nll_loss");
  return Apply1(op, {log_probs, target, weight},
                {{"reduction", std::string(ReductionName(reduction))}, {"ignore_index", ignore_index}});
}

TensorPtr Dropout(const TensorPtr& x, double p, bool training) {
  static const OpDef& op = Op("dropout");
  OF_CHECK(x) << "dropout: input 'x' is null";
  OF_CHECK(p >= 0.0 && p <= 1.0) << "dropout: p must be in [0, 1], got " << p;
  if (!training || p == 0.0) return x;
  return Apply(op, {x}, {{"p", p}})[0];
}

}  // namespace ops

namespace {

// Elements per parallel chunk (simple operations each).
constexpr int64_t kGrain = int64_t{1} << 15;

// ---- softmax -----------------------------------------------------------------------------------------

// A 0-d tensor is softmaxed as one element along dim 0 (or -1), as in PyTorch.
int64_t SoftmaxDim(const Shape& shape, int64_t dim) { return NormalizeAxis(dim, std::max<int64_t>(shape.ndim(), 1), "dim"); }

std::vector<TensorMeta> InferSoftmax(std::span<const TensorMeta> in, const Attrs& attrs) {
  OF_CHECK(in[0].dtype->is_floating_point()) << "x must be floating point, got " << in[0].dtype;
  SoftmaxDim(in[0].shape, attrs.Int("dim"));
  return {in[0]};
}

// (y, dy) of the forward output's meta.
std::vector<TensorMeta> InferSoftmaxBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  OF_CHECK(in[0].dtype->is_floating_point()) << "y must be floating point, got " << in[0].dtype;
  OF_CHECK(in[1].shape == in[0].shape && in[1].dtype == in[0].dtype)
      << "dy is " << in[1].dtype << " " << in[1].shape << " but y is " << in[0].dtype << " " << in[0].shape;
  SoftmaxDim(in[0].shape, attrs.Int("dim"));
  return {in[0]};
}

// Calls fn(offset, n, stride) for every line of `shape` along `dim` (n elements, `stride` apart), in
// parallel. fn gets the stride as std::integral_constant 1 when the dim is innermost, so that the
// common case compiles to contiguous loops.
template <typename Fn>
void ForEachLine(const Shape& shape, int64_t dim, ThreadPool& pool, Fn&& fn) {
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    const int64_t size = shape[d].value();
    (d < dim ? outer : d == dim ? n : inner) *= size;
  }
  const int64_t lines = outer * inner;
  if (lines == 0 || n == 0) return;
  pool.ParallelFor(lines, std::max<int64_t>(1, kGrain / n), [&](int64_t begin, int64_t end) {
    for (int64_t l = begin; l < end; ++l) {
      const int64_t offset = (l / inner) * n * inner + l % inner;
      if (inner == 1) {
        fn(offset, n, std::integral_constant<int64_t, 1>{});
      } else {
        fn(offset, n, inner);
      }
    }
  });
}

template <typename T>
using ComputeOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <bool kLog>
void SoftmaxKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<const T>();
      T* py = ctx.out(0).data<T>();
      ForEachLine(x.shape(), SoftmaxDim(x.shape(), ctx.attrs.Int("dim")), ctx.pool, [&](int64_t o, int64_t n, auto s) {
        const T* xl = px + o;
        T* yl = py + o;
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t k = 0; k < n; ++k) m = std::max(m, xl[k * s]);
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) {
          const T e = std::exp(xl[k * s] - m);
          if constexpr (!kLog) yl[k * s] = e;
          sum += e;
        }
        if constexpr (kLog) {
          // (x - max) - log(sum), not x - (max + log(sum)): near the maximum the two terms are small
          // and their difference keeps its precision, where max + log(sum) would round it away.
          const T log_sum = static_cast<T>(std::log(sum));
          for (int64_t k = 0; k < n; ++k) yl[k * s] = (xl[k * s] - m) - log_sum;
        } else {
          const T inv = static_cast<T>(1.0 / sum);
          for (int64_t k = 0; k < n; ++k) yl[k * s] *= inv;
        }
      });
    }
  });
}

// softmax: dx = y (dy - sum(dy y)); log_softmax: dx = dy - exp(y) sum(dy).
template <bool kLog>
void SoftmaxBackwardKernel(KernelContext& ctx) {
  const Tensor& y = ctx.in(0);
  VisitDType(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* py = y.data<const T>();
      const T* pdy = ctx.in(1).data<const T>();
      T* pdx = ctx.out(0).data<T>();
      ForEachLine(y.shape(), SoftmaxDim(y.shape(), ctx.attrs.Int("dim")), ctx.pool, [&](int64_t o, int64_t n, auto s) {
        const T *yl = py + o, *dyl = pdy + o;
        T* dxl = pdx + o;
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) sum += kLog ? dyl[k * s] : dyl[k * s] * yl[k * s];
        const T total = static_cast<T>(sum);
        for (int64_t k = 0; k < n; ++k) {
          dxl[k * s] = kLog ? dyl[k * s] - std::exp(yl[k * s]) * total : yl[k * s] * (dyl[k * s] - total);
        }
      });
    }
  });
}

std::vector<TensorPtr> SoftmaxBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("softmax_backward");
  return {Apply1(op, {ctx.outputs[0], ctx.grad_outputs[0]}, {{"dim", ctx.attrs.Int("dim")}})};
}
std::vector<TensorPtr> LogSoftmaxBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("log_softmax_backward");
  return {Apply1(op, {ctx.outputs[0], ctx.grad_outputs[0]}, {{"dim", ctx.attrs.Int("dim")}})};
}

// ---- nll_loss, cross_entropy -------------------------------------------------------------------------

// (input (N, C, d1, ...), target (N, d1, ...) int64, weight (C) or absent) with "reduction" and
// "ignore_index"; the loss is () or target's shape.
Shape InferLossShape(std::span<const TensorMeta> in, const Attrs& attrs, std::string_view input_name) {
  const TensorMeta &x = in[0], &t = in[1];
  OF_CHECK(x.dtype->is_floating_point()) << input_name << " must be floating point, got " << x.dtype;
  OF_CHECK(x.shape.ndim() >= 2) << input_name << " must be at least 2-D (N, C) or (N, C, d1, ...), got shape " << x.shape;
  OF_CHECK(t.dtype == DType::Int64()) << "target must hold int64 class indices, got " << t.dtype;
  const auto mismatch = [](Dim a, Dim b) {
    return (a.is_known() && b.is_known() && a != b) || (a.is_symbol() && b.is_symbol() && a != b);
  };
  if (x.shape.ndim() == 2) {
    OF_CHECK(t.shape.ndim() == 1) << "target must be 1-D (N), got shape " << t.shape;
    OF_CHECK(!mismatch(x.shape[0], t.shape[0]))
        << "target has " << t.shape[0] << " entries but " << input_name << " has " << x.shape[0] << " rows (shapes "
        << t.shape << " and " << x.shape << ")";
  } else {
    bool ok = t.shape.ndim() == x.shape.ndim() - 1;
    for (int64_t d = 0; ok && d < t.shape.ndim(); ++d) ok = !mismatch(t.shape[d], x.shape[d == 0 ? 0 : d + 1]);
    OF_CHECK(ok) << "target " << t.shape << " must be " << input_name << " " << x.shape
                 << "'s shape without the class dim 1 (N, d1, ...)";
  }
  if (in.size() > 2 && in[2].dtype) {
    const TensorMeta& w = in[2];
    OF_CHECK(w.dtype == x.dtype) << "weight must have " << input_name << "'s dtype " << x.dtype << ", got " << w.dtype;
    OF_CHECK(w.shape.ndim() == 1 && !mismatch(w.shape[0], x.shape[1]))
        << "weight must be 1-D with one entry per class (" << x.shape[1] << "), got shape " << w.shape;
  }
  if (ops::ReductionFromName(attrs.Get<std::string>("reduction")) != ops::Reduction::kNone) return Shape{};
  Shape out = t.shape;
  for (int64_t d = 0; d < out.ndim(); ++d) {
    const Dim xd = x.shape[d == 0 ? 0 : d + 1];
    if (!out[d].is_known() && xd.is_known()) out[d] = xd;
  }
  return out;
}

std::vector<TensorMeta> InferNllLoss(std::span<const TensorMeta> in, const Attrs& attrs) {
  return {{in[0].dtype, InferLossShape(in, attrs, "log_probs"), in[0].device}};
}

std::vector<TensorMeta> InferCrossEntropy(std::span<const TensorMeta> in, const Attrs& attrs) {
  const double eps = attrs.Float("label_smoothing");
  OF_CHECK(eps >= 0.0 && eps <= 1.0) << "label_smoothing must be in [0, 1], got " << eps;
  return {{in[0].dtype, InferLossShape(in, attrs, "logits"), in[0].device}};
}

// (dy, input, target, weight) -> d input.
std::vector<TensorMeta> InferLossBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape loss = InferLossShape(in.subspan(1), attrs, "input");
  OF_CHECK(in[0].shape == loss && in[0].dtype == in[1].dtype)
      << "dy is " << in[0].dtype << " " << in[0].shape << ", expected " << in[1].dtype << " " << loss;
  return {in[1]};
}

template <typename T>
const T* WeightOf(const KernelContext& ctx, size_t i) {
  return i < ctx.inputs.size() && ctx.inputs[i] ? ctx.in(i).data<const T>() : nullptr;
}

// Writes the per-sample losses (reduction none) or their sum / weighted mean (a zero total weight
// gives NaN, as in PyTorch).
template <typename T>
void WriteLoss(const LossShape& l, const std::vector<double>& rows, T* out) {
  if (l.reduction == ops::Reduction::kNone) {
    for (int64_t i = 0; i < l.samples(); ++i) out[i] = static_cast<T>(rows[static_cast<size_t>(i)]);
    return;
  }
  double total = 0;
  for (double r : rows) total += r;
  if (l.reduction == ops::Reduction::kMean) total /= l.total_weight;
  out[0] = static_cast<T>(total);
}

// The gradient's scale for sample i: dy[i] (none), dy (sum) or dy / total weight (mean).
template <typename T>
double RowScale(const LossShape& l, const T* dy, int64_t i) {
  if (l.reduction == ops::Reduction::kNone) return static_cast<double>(dy[i]);
  const double g = static_cast<double>(dy[0]);
  return l.reduction == ops::Reduction::kMean ? g / l.total_weight : g;
}

// loss_i = -w[t_i] log_probs[i, t_i], 0 where ignored.
void NllLossKernel(KernelContext& ctx) {
  const Tensor& lp = ctx.in(0);
  const int64_t* t = ctx.in(1).data<const int64_t>();
  VisitDType(lp.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* w = WeightOf<T>(ctx, 2);
      const LossShape l = CheckTargets(lp.shape(), ctx.in(1).data<const int64_t>(), w, ctx.attrs);
      const T* p = lp.data<const T>();
      std::vector<double> rows(static_cast<size_t>(l.samples()));
      for (int64_t i = 0; i < l.samples(); ++i) {
        if (t[i] == l.ignore_index) continue;
        const double wi = w ? static_cast<double>(w[t[i]]) : 1.0;
        rows[static_cast<size_t>(i)] = -wi * static_cast<double>(p[l.base(i) + t[i] * l.inner]);
      }
      WriteLoss(l, rows, ctx.out(0).data<T>());
    }
  });
}

// (dy, log_probs, target, weight): dx[i, target[i]] = -scale_i w[target[i]], zero elsewhere.
void NllLossBackwardKernel(KernelContext& ctx) {
  const Tensor& lp = ctx.in(1);
  const int64_t* t = ctx.in(2).data<const int64_t>();
  VisitDType(lp.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* w = WeightOf<T>(ctx, 3);
      const LossShape l = CheckTargets(lp.shape(), ctx.in(2).data<const int64_t>(), w, ctx.attrs);
      const T* dy = ctx.in(0).data<const T>();
      T* dx = ctx.out(0).data<T>();
      std::fill(dx, dx + lp.numel(), T(0));
      for (int64_t i = 0; i < l.samples(); ++i) {
        if (t[i] == l.ignore_index) continue;
        const double wi = w ? static_cast<double>(w[t[i]]) : 1.0;
        dx[l.base(i) + t[i] * l.inner] = static_cast<T>(-RowScale(l, dy, i) * wi);
      }
    }
  });
}

// Sample i's class values (n of them, `stride` apart): their log-sum-exp and their weighted mean
// sum_c w_c x_c / C (w null: weights 1), and sum_c w_c / C.
template <typename T>
void RowStats(const T* x, int64_t c, int64_t stride, const T* w, double& lse, double& wmean, double& wsum) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t k = 0; k < c; ++k) m = std::max(m, x[k * stride]);
  double sum = 0, total = 0, weights = 0;
  for (int64_t k = 0; k < c; ++k) {
    const double wk = w ? static_cast<double>(w[k]) : 1.0;
    sum += std::exp(x[k * stride] - m);
    total += wk * x[k * stride];
    weights += wk;
  }
  lse = static_cast<double>(m) + std::log(sum);
  wmean = total / static_cast<double>(c);
  wsum = weights / static_cast<double>(c);
}

// loss_i = (1 - eps) w[t_i] (lse_i - x[i, t_i]) + eps / C sum_c w_c (lse_i - x[i, c]), 0 where ignored
// (PyTorch's weighted label smoothing; the mean divides by the weights of the targets).
void CrossEntropyKernel(KernelContext& ctx) {
  const Tensor& logits = ctx.in(0);
  const double eps = ctx.attrs.Float("label_smoothing");
  const int64_t* t = ctx.in(1).data<const int64_t>();
  VisitDType(logits.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* w = WeightOf<T>(ctx, 2);
      const LossShape l = CheckTargets(logits.shape(), ctx.in(1).data<const int64_t>(), w, ctx.attrs);
      const T* x = logits.data<const T>();
      std::vector<double> rows(static_cast<size_t>(l.samples()));
      ctx.pool.ParallelFor(l.samples(), std::max<int64_t>(1, kGrain / std::max<int64_t>(l.c, 1)), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          if (t[i] == l.ignore_index) continue;
          const T* xi = x + l.base(i);
          double lse, wmean, wsum;
          RowStats(xi, l.c, l.inner, w, lse, wmean, wsum);
          const double wt = w ? static_cast<double>(w[t[i]]) : 1.0;
          const double nll = wt * (lse - static_cast<double>(xi[t[i] * l.inner]));
          rows[static_cast<size_t>(i)] = eps == 0.0 ? nll : (1.0 - eps) * nll + eps * (wsum * lse - wmean);
        }
      });
      WriteLoss(l, rows, ctx.out(0).data<T>());
    }
  });
}

// (dy, logits, target, weight):
// dx[i, c] = scale_i ((1 - eps) w[t_i] (softmax_c - [c == t_i]) + eps / C (W softmax_c - w_c)), W = sum w.
void CrossEntropyBackwardKernel(KernelContext& ctx) {
  const Tensor& logits = ctx.in(1);
  const double eps = ctx.attrs.Float("label_smoothing");
  const int64_t* t = ctx.in(2).data<const int64_t>();
  VisitDType(logits.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* w = WeightOf<T>(ctx, 3);
      const LossShape l = CheckTargets(logits.shape(), ctx.in(2).data<const int64_t>(), w, ctx.attrs);
      const T* dy = ctx.in(0).data<const T>();
      const T* x = logits.data<const T>();
      T* dx = ctx.out(0).data<T>();
      const double smooth = l.c > 0 ? eps / static_cast<double>(l.c) : 0.0;
      const int64_t s = l.inner;
      ctx.pool.ParallelFor(l.samples(), std::max<int64_t>(1, kGrain / std::max<int64_t>(l.c, 1)), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const T* xi = x + l.base(i);
          T* dxi = dx + l.base(i);
          if (t[i] == l.ignore_index) {
            for (int64_t k = 0; k < l.c; ++k) dxi[k * s] = T(0);
            continue;
          }
          double lse, wmean, wsum;
          RowStats(xi, l.c, s, w, lse, wmean, wsum);
          const double g = RowScale(l, dy, i);
          const double wt = w ? static_cast<double>(w[t[i]]) : 1.0;
          // (1 - eps) wt + eps W / C multiplies softmax; eps / C w_c and (1 - eps) wt [c == t] are subtracted.
          const double ps = (1.0 - eps) * wt + eps * wsum;
          for (int64_t k = 0; k < l.c; ++k) {
            const double wk = w ? static_cast<double>(w[k]) : 1.0;
            dxi[k * s] = static_cast<T>(g * (ps * std::exp(static_cast<double>(xi[k * s]) - lse) - smooth * wk));
          }
          dxi[t[i] * s] = static_cast<T>(static_cast<double>(dxi[t[i] * s]) - g * (1.0 - eps) * wt);
        }
      });
    }
  });
}

template <const char* kName>
std::vector<TensorPtr> LossBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get(kName);
  if (!ctx.needs_input_grad[0] || !ctx.grad_outputs[0]) return {TensorPtr(), TensorPtr(), TensorPtr()};
  return {Apply1(op, {ctx.grad_outputs[0], ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]}, ctx.attrs), TensorPtr(),
          TensorPtr()};
}
constexpr char kNllLossBackward[] = "nll_loss_backward";
constexpr char kCrossEntropyBackward[] = "cross_entropy_backward";

// ---- dropout -----------------------------------------------------------------------------------------

std::vector<TensorMeta> InferDropout(std::span<const TensorMeta> in, const Attrs& attrs) {
  OF_CHECK(in[0].dtype->is_floating_point()) << "x must be floating point, got " << in[0].dtype;
  const double p = attrs.Float("p");
  OF_CHECK(p >= 0.0 && p <= 1.0) << "p must be in [0, 1], got " << p;
  return {in[0], in[0]};
}

// Element i keeps with probability 1 - p, from word i % 4 of Philox counter (first + i / 4), so the
// result depends on the seed and the generator's position only. mask is 0 or 1 / (1 - p); y = x mask.
void DropoutKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const int64_t n = x.numel();
  const double p = ctx.attrs.Float("p");
  const uint64_t threshold = static_cast<uint64_t>(std::ceil(p * 4294967296.0));  // drop when bits < p 2^32
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  const int64_t groups = (n + 3) / 4;
  const Generator::Range range = ctx.generator.Reserve(static_cast<uint64_t>(groups));
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<const T>();
      T* py = ctx.out(0).data<T>();
      T* pm = ctx.out(1).data<T>();
      const T kept = static_cast<T>(scale);
      ctx.pool.ParallelFor(groups, kGrain / 16, [&](int64_t begin, int64_t end) {
        for (int64_t g = begin; g < end; ++g) {
          const auto bits = Philox4x32(range.key, 0, range.first_counter + static_cast<uint64_t>(g));
          const int64_t last = std::min<int64_t>(4, n - g * 4);
          for (int64_t j = 0; j < last; ++j) {
            const int64_t i = g * 4 + j;
            const T m = bits[static_cast<size_t>(j)] >= threshold ? kept : T(0);
            pm[i] = m;
            py[i] = px[i] * m;
          }
        }
      });
    }
  });
}

std::vector<TensorPtr> DropoutBackward(const BackwardContext& ctx) {
  if (!ctx.grad_outputs[0]) return {TensorPtr()};
  return {ops::Mul(ctx.grad_outputs[0], ctx.outputs[1])};
}

}  // namespace

void RegisterNnOps(OpRegistry& registry) {
  const AttrSpec dim{"dim", int64_t{0}, true};
  const std::vector<AttrSpec> loss_attrs = {{"reduction", std::string("mean")}, {"ignore_index", int64_t{-100}}};
  std::vector<AttrSpec> ce_attrs = loss_attrs;
  ce_attrs.push_back({"label_smoothing", 0.0});

  registry.Register(OpDef{.name = "softmax",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {dim},
                          .infer = InferSoftmax,
                          .backward = SoftmaxBackward,
                          .kernels = CpuKernels(kFloatingTypes, SoftmaxKernel<false>),
                          .autocast = AutocastPolicy::kFloat32});
  registry.Register(OpDef{.name = "log_softmax",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {dim},
                          .infer = InferSoftmax,
                          .backward = LogSoftmaxBackward,
                          .kernels = CpuKernels(kFloatingTypes, SoftmaxKernel<true>),
                          .autocast = AutocastPolicy::kFloat32});
  registry.Register(OpDef{.name = "softmax_backward",
                          .inputs = {"y", "dy"},
                          .outputs = {"dx"},
                          .attrs = {dim},
                          .infer = InferSoftmaxBackward,
                          .kernels = CpuKernels(kFloatingTypes, SoftmaxBackwardKernel<false>)});
  registry.Register(OpDef{.name = "log_softmax_backward",
                          .inputs = {"y", "dy"},
                          .outputs = {"dx"},
                          .attrs = {dim},
                          .infer = InferSoftmaxBackward,
                          .kernels = CpuKernels(kFloatingTypes, SoftmaxBackwardKernel<true>)});
  registry.Register(OpDef{.name = "nll_loss",
                          .inputs = {"log_probs", "target", "weight"},
                          .optional_inputs = {"weight"},
                          .outputs = {"loss"},
                          .attrs = loss_attrs,
                          .infer = InferNllLoss,
                          .backward = LossBackward<kNllLossBackward>,
                          .kernels = CpuKernels(kFloatingTypes, NllLossKernel),
                          .autocast = AutocastPolicy::kFloat32});
  registry.Register(OpDef{.name = "nll_loss_backward",
                          .inputs = {"dy", "log_probs", "target", "weight"},
                          .optional_inputs = {"weight"},
                          .outputs = {"dx"},
                          .attrs = loss_attrs,
                          .infer = InferLossBackward,
                          .kernels = CpuKernels(kFloatingTypes, NllLossBackwardKernel),
                          .dtype_input = 1});
  registry.Register(OpDef{.name = "cross_entropy",
                          .inputs = {"logits", "target", "weight"},
                          .optional_inputs = {"weight"},
                          .outputs = {"loss"},
                          .attrs = ce_attrs,
                          .infer = InferCrossEntropy,
                          .backward = LossBackward<kCrossEntropyBackward>,
                          .kernels = CpuKernels(kFloatingTypes, CrossEntropyKernel),
                          .autocast = AutocastPolicy::kFloat32});
  registry.Register(OpDef{.name = "cross_entropy_backward",
                          .inputs = {"dy", "logits", "target", "weight"},
                          .optional_inputs = {"weight"},
                          .outputs = {"dx"},
                          .attrs = ce_attrs,
                          .infer = InferLossBackward,
                          .kernels = CpuKernels(kFloatingTypes, CrossEntropyBackwardKernel),
                          .dtype_input = 1});
  registry.Register(OpDef{.name = "dropout",
                          .inputs = {"x"},
                          .outputs = {"y", "mask"},
                          .attrs = {{"p", 0.5}},
                          .infer = InferDropout,
                          .backward = DropoutBackward,
                          .kernels = CpuKernels(kFloatingTypes, DropoutKernel)});
}

}  // namespace oneflow
