// Elementwise losses: mse_loss, l1_loss, smooth_l1_loss, binary_cross_entropy_with_logits, kl_div,
// each one op with a fused kernel (loss and reduction in one pass) and one fused backward op giving
// the gradients of input and target.
//
// Reductions sum fixed blocks of elements, then the blocks in order, so that the result does not
// depend on the thread count.
#include "core/ops/cpu/in_float32.h"
#include "core/ops/losses.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/op/dispatch.h"
#include "core/ops/register.h"

namespace oneflow {
namespace {

constexpr int64_t kBlock = 8192;  // elements per reduction block and parallel chunk

bool Mismatch(Dim a, Dim b) { return (a.is_known() && b.is_known() && a != b) || (a.is_symbol() && b.is_symbol() && a != b); }

ops::Reduction ReductionOf(const Attrs& attrs) { return ops::ReductionFromName(attrs.Get<std::string>("reduction")); }

// Loss functors: Loss(x, t, w, pw) and Grad(...) giving d loss / d x and d loss / d t, in A (float or
// double). w and pw are 1 for the ops that take no weights.
struct Params {
  double beta = 1;
  bool log_target = false;
};

struct Mse {
  template <typename A>
  static A Loss(A x, A t, A, A, const Params&) { return (x - t) * (x - t); }
  template <typename A>
  static void Grad(A x, A t, A, A, const Params&, A& dx, A& dt) {
    dx = A(2) * (x - t);
    dt = -dx;
  }
};

struct L1 {
  template <typename A>
  static A Loss(A x, A t, A, A, const Params&) { return std::abs(x - t); }
  template <typename A>
  static void Grad(A x, A t, A, A, const Params&, A& dx, A& dt) {
    const A d = x - t;
    dx = d > A(0) ? A(1) : d < A(0) ? A(-1) : d;  // sign, NaN kept
    dt = -dx;
  }
};

struct SmoothL1 {
  template <typename A>
  static A Loss(A x, A t, A, A, const Params& p) {
    const A d = std::abs(x - t), beta = static_cast<A>(p.beta);
    return d < beta ? A(0.5) * d * d / beta : d - A(0.5) * beta;
  }
  template <typename A>
  static void Grad(A x, A t, A, A, const Params& p, A& dx, A& dt) {
    const A d = x - t, beta = static_cast<A>(p.beta);
    dx = std::abs(d) < beta ? d / beta : d > A(0) ? A(1) : d < A(0) ? A(-1) : d;
    dt = -dx;
  }
};

// softplus(-x) = log(1 + exp(-x)) = max(-x, 0) + log1p(exp(-|x|)), stable for any x.
template <typename A>
A SoftplusNeg(A x) { return std::max(-x, A(0)) + std::log1p(std::exp(-std::abs(x))); }

struct Bce {
  template <typename A>
  static A Loss(A x, A t, A w, A pw, const Params&) {
    return w * ((A(1) - t) * x + (A(1) + (pw - A(1)) * t) * SoftplusNeg(x));
  }
  template <typename A>
  static void Grad(A x, A t, A w, A pw, const Params&, A& dx, A& dt) {
    const A sig_neg = A(1) / (A(1) + std::exp(x));  // sigmoid(-x) = d softplus(-x) / d(-x)
    dx = w * ((A(1) - t) - (A(1) + (pw - A(1)) * t) * sig_neg);
    dt = w * ((pw - A(1)) * SoftplusNeg(x) - x);
  }
};

struct KlDivLoss {
  template <typename A>
  static A Loss(A x, A t, A, A, const Params& p) {
    if (p.log_target) return std::exp(t) * (t - x);
    return t > A(0) ? t * (std::log(t) - x) : t == A(0) ? A(0) : std::numeric_limits<A>::quiet_NaN();
  }
  template <typename A>
  static void Grad(A x, A t, A, A, const Params& p, A& dx, A& dt) {
    if (p.log_target) {
      const A e = std::exp(t);
      dx = -e;
      dt = e * (t - x + A(1));
    } else {
      dx = -t;
      dt = t > A(0) ? std::log(t) + A(1) - x : A(0);
    }
  }
};

// ---- inference -----------------------------------------------------------------------------------

// in: input, target[, weight, pos_weight] (absent ones have a null dtype).
void CheckOperands(std::span<const TensorMeta> in, Shape& shape) {
  const TensorMeta &x = in[0], &t = in[1];
  OF_CHECK(x.dtype->is_floating_point()) << "input must be floating point, got " << x.dtype;
  OF_CHECK(t.dtype == x.dtype) << "target must have input's dtype " << x.dtype << ", got " << t.dtype;
  bool same = x.shape.ndim() == t.shape.ndim();
  for (int64_t d = 0; same && d < x.shape.ndim(); ++d) same = !Mismatch(x.shape[d], t.shape[d]);
  OF_CHECK(same) << "target " << t.shape << " must have input's shape " << x.shape;
  shape = x.shape;
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    if (!shape[d].is_known() && t.shape[d].is_known()) shape[d] = t.shape[d];
  }
  for (size_t i = 2; i < in.size(); ++i) {
    if (!in[i].dtype) continue;
    const std::string_view name = i == 2 ? "weight" : "pos_weight";
    OF_CHECK(in[i].dtype == x.dtype) << name << " must have input's dtype " << x.dtype << ", got " << in[i].dtype;
    const Shape& w = in[i].shape;
    bool ok = w.ndim() <= shape.ndim();
    for (int64_t d = 1; ok && d <= w.ndim(); ++d) {
      ok = w[w.ndim() - d] == Dim(1) || !Mismatch(w[w.ndim() - d], shape[shape.ndim() - d]);
    }
    OF_CHECK(ok) << name << " " << w << " does not broadcast to input's shape " << shape;
  }
}

void CheckAttrs(const Attrs& attrs) {
  ReductionOf(attrs);
  if (const AttrValue* beta = attrs.Find("beta")) {
    const double b = std::get<double>(*beta);
    OF_CHECK(b >= 0.0 && std::isfinite(b)) << "beta must be finite and >= 0, got " << b;
  }
}

std::vector<TensorMeta> InferLoss(std::span<const TensorMeta> in, const Attrs& attrs) {
  Shape shape;
  CheckOperands(in, shape);
  CheckAttrs(attrs);
  return {{in[0].dtype, ReductionOf(attrs) == ops::Reduction::kNone ? shape : Shape{}, in[0].device}};
}

// (dy, input, target[, weight, pos_weight]) -> d input, d target.
std::vector<TensorMeta> InferLossBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  const std::vector<TensorMeta> fwd = InferLoss(in.subspan(1), attrs);
  OF_CHECK(in[0].dtype == fwd[0].dtype && in[0].shape == fwd[0].shape)
      << "dy is " << in[0].dtype << " " << in[0].shape << ", expected " << fwd[0].dtype << " " << fwd[0].shape;
  return {in[1], in[2]};
}

// ---- kernels ------------------------------------------------------------------------------------

// Offsets into an operand broadcast to `shape`, walked in row-major order of `shape`.
class BroadcastWalk {
 public:
  BroadcastWalk(const Tensor* t, const Shape& shape) {
    if (t == nullptr) return;
    data_ = t;
    const int64_t rank = shape.ndim();
    sizes_.resize(static_cast<size_t>(rank));
    strides_.assign(static_cast<size_t>(rank), 0);
    int64_t stride = 1;
    const Shape& ts = t->shape();
    for (int64_t d = ts.ndim() - 1, o = rank - 1; d >= 0; --d, --o) {
      if (ts[d].value() != 1) strides_[static_cast<size_t>(o)] = stride;
      stride *= ts[d].value();
    }
    for (int64_t d = 0; d < rank; ++d) sizes_[static_cast<size_t>(d)] = shape[d].value();
  }
  bool present() const { return data_ != nullptr; }
  const Tensor& tensor() const { return *data_; }

  // Positions the walk at flat index `flat` of `shape`.
  void Seek(int64_t flat) {
    index_.assign(sizes_.size(), 0);
    offset_ = 0;
    for (size_t d = sizes_.size(); d-- > 0;) {
      index_[d] = flat % sizes_[d];
      flat /= sizes_[d];
      offset_ += index_[d] * strides_[d];
    }
  }
  int64_t offset() const { return offset_; }
  void Next() {
    for (size_t d = sizes_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++index_[d] < sizes_[d]) return;
      offset_ -= index_[d] * strides_[d];
      index_[d] = 0;
    }
  }

 private:
  const Tensor* data_ = nullptr;
  std::vector<int64_t> sizes_, strides_, index_;
  int64_t offset_ = 0;
};

Params ParamsOf(const Attrs& attrs) {
  Params p;
  if (const AttrValue* beta = attrs.Find("beta")) p.beta = std::get<double>(*beta);
  if (const AttrValue* log_target = attrs.Find("log_target")) p.log_target = std::get<bool>(*log_target);
  return p;
}

template <typename T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Calls fn(i, x, t, w, pw) for elements [begin, end) of input (offset `base` into x, t), with the
// weights walked alongside.
template <typename T, typename Fn>
void ForRange(const T* x, const T* t, BroadcastWalk w, BroadcastWalk pw, int64_t begin, int64_t end, Fn&& fn) {
  using A = AccOf<T>;
  const T* wd = w.present() ? w.tensor().template data<const T>() : nullptr;
  const T* pd = pw.present() ? pw.tensor().template data<const T>() : nullptr;
  if (wd) w.Seek(begin);
  if (pd) pw.Seek(begin);
  for (int64_t i = begin; i < end; ++i) {
    const A wv = wd ? static_cast<A>(wd[w.offset()]) : A(1);
    const A pv = pd ? static_cast<A>(pd[pw.offset()]) : A(1);
    fn(i, static_cast<A>(x[i]), static_cast<A>(t[i]), wv, pv);
    if (wd) w.Next();
    if (pd) pw.Next();
  }
}

// Inputs from index `first`: input, target[, weight, pos_weight].
struct Operands {
  const Tensor& x;
  const Tensor& t;
  const Tensor* w;
  const Tensor* pw;
};
Operands OperandsOf(const KernelContext& ctx, size_t first) {
  const auto opt = [&](size_t i) { return i < ctx.inputs.size() && ctx.inputs[i] ? ctx.inputs[i].get() : nullptr; };
  return {ctx.in(first), ctx.in(first + 1), opt(first + 2), opt(first + 3)};
}

template <typename F>
void LossKernel(KernelContext& ctx) {
  const Operands o = OperandsOf(ctx, 0);
  const Params params = ParamsOf(ctx.attrs);
  const ops::Reduction reduction = ReductionOf(ctx.attrs);
  const int64_t n = o.x.numel();
  VisitDType(o.x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      using A = AccOf<T>;
      const T* x = o.x.data<const T>();
      const T* t = o.t.data<const T>();
      const BroadcastWalk w(o.w, o.x.shape()), pw(o.pw, o.x.shape());
      T* out = ctx.out(0).data<T>();
      const int64_t blocks = (n + kBlock - 1) / kBlock;
      std::vector<double> sums(static_cast<size_t>(blocks), 0.0);
      ctx.pool.ParallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t blk = begin; blk < end; ++blk) {
          const int64_t lo = blk * kBlock, hi = std::min(n, lo + kBlock);
          if (reduction == ops::Reduction::kNone) {
            ForRange(x, t, w, pw, lo, hi,
                     [&](int64_t i, A xv, A tv, A wv, A pv) { out[i] = static_cast<T>(F::Loss(xv, tv, wv, pv, params)); });
          } else {
            double s = 0;
            ForRange(x, t, w, pw, lo, hi, [&](int64_t, A xv, A tv, A wv, A pv) { s += F::Loss(xv, tv, wv, pv, params); });
            sums[static_cast<size_t>(blk)] = s;
          }
        }
      });
      if (reduction == ops::Reduction::kNone) return;
      double total = 0;
      for (double s : sums) total += s;
      out[0] = static_cast<T>(reduction == ops::Reduction::kMean ? total / static_cast<double>(n) : total);
    }
  });
}

template <typename F>
void LossBackwardKernel(KernelContext& ctx) {
  const Operands o = OperandsOf(ctx, 1);
  const Params params = ParamsOf(ctx.attrs);
  const ops::Reduction reduction = ReductionOf(ctx.attrs);
  const int64_t n = o.x.numel();
  VisitDType(o.x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      using A = AccOf<T>;
      const T* dy = ctx.in(0).data<const T>();
      const T* x = o.x.data<const T>();
      const T* t = o.t.data<const T>();
      const BroadcastWalk w(o.w, o.x.shape()), pw(o.pw, o.x.shape());
      T* dx = ctx.out(0).data<T>();
      T* dt = ctx.out(1).data<T>();
      const A scale = reduction == ops::Reduction::kNone ? A(1)
                      : reduction == ops::Reduction::kMean
                          ? static_cast<A>(static_cast<double>(dy[0]) / static_cast<double>(n))
                          : static_cast<A>(dy[0]);
      ctx.pool.ParallelFor(n, kBlock, [&](int64_t begin, int64_t end) {
        ForRange(x, t, w, pw, begin, end, [&](int64_t i, A xv, A tv, A wv, A pv) {
          A gx, gt;
          F::Grad(xv, tv, wv, pv, params, gx, gt);
          const A g = reduction == ops::Reduction::kNone ? static_cast<A>(dy[i]) : scale;
          dx[i] = static_cast<T>(g * gx);
          dt[i] = static_cast<T>(g * gt);
        });
      });
    }
  });
}

template <const char* kBackward>
std::vector<TensorPtr> LossBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get(kBackward);
  std::vector<TensorPtr> grads(ctx.inputs.size());
  if (!ctx.grad_outputs[0] || !(ctx.needs_input_grad[0] || ctx.needs_input_grad[1])) return grads;
  std::vector<TensorPtr> in = {ctx.grad_outputs[0]};
  in.insert(in.end(), ctx.inputs.begin(), ctx.inputs.end());
  const std::vector<TensorPtr> g = Apply(op, std::move(in), ctx.attrs);
  for (size_t i = 0; i < 2; ++i) {
    if (ctx.needs_input_grad[i]) grads[i] = g[i];
  }
  return grads;
}

constexpr char kMseBackward[] = "mse_loss_backward";
constexpr char kL1Backward[] = "l1_loss_backward";
constexpr char kSmoothL1Backward[] = "smooth_l1_loss_backward";
constexpr char kBceBackward[] = "binary_cross_entropy_with_logits_backward";
constexpr char kKlDivBackward[] = "kl_div_backward";

const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }
Attrs ReductionAttrs(ops::Reduction r) { return {{"reduction", std::string(ops::ReductionName(r))}}; }

}  // namespace

namespace ops {

TensorPtr MseLoss(const TensorPtr& input, const TensorPtr& target, Reduction reduction) {
  static const OpDef& op = Op("mse_loss");
  return Apply1(op, {input, target}, ReductionAttrs(reduction));
}
TensorPtr L1Loss(const TensorPtr& input, const TensorPtr& target, Reduction reduction) {
  static const OpDef& op = Op("l1_loss");
  return Apply1(op, {input, target}, ReductionAttrs(reduction));
}
TensorPtr SmoothL1Loss(const TensorPtr& input, const TensorPtr& target, Reduction reduction, double beta) {
  static const OpDef& op = Op("smooth_l1_loss");
  return Apply1(op, {input, target}, ReductionAttrs(reduction).Set("beta", beta));
}
TensorPtr BinaryCrossEntropyWithLogits(const TensorPtr& input, const TensorPtr& target, const TensorPtr& weight,
                                       const TensorPtr& pos_weight, Reduction reduction) {
  static const OpDef& op = Op("binary_cross_entropy_with_logits");
  return Apply1(op, {input, target, weight, pos_weight}, ReductionAttrs(reduction));
}
TensorPtr KlDiv(const TensorPtr& input, const TensorPtr& target, Reduction reduction, bool log_target) {
  static const OpDef& op = Op("kl_div");
  return Apply1(op, {input, target}, ReductionAttrs(reduction).Set("log_target", log_target));
}

}  // namespace ops

void RegisterLossOps(OpRegistry& registry) {
  const AttrSpec reduction{"reduction", std::string("mean")};
  const auto pair = [&](std::string name, const char* backward_name, std::vector<AttrSpec> attrs, KernelFn fwd,
                        BackwardFn backward, KernelFn bwd, bool weights) {
    attrs.insert(attrs.begin(), reduction);
    std::vector<std::string> inputs = {"input", "target"}, optional;
    if (weights) {
      inputs.insert(inputs.end(), {"weight", "pos_weight"});
      optional = {"weight", "pos_weight"};
    }
    std::vector<std::string> bwd_inputs = {"dy"};
    bwd_inputs.insert(bwd_inputs.end(), inputs.begin(), inputs.end());
    registry.Register(OpDef{.name = name,
                            .inputs = inputs,
                            .optional_inputs = optional,
                            .outputs = {"loss"},
                            .attrs = attrs,
                            .infer = InferLoss,
                            .backward = backward,
                            .kernels = CpuKernels(kFloatingTypes, fwd),
                            .autocast = AutocastPolicy::kFloat32});
    registry.Register(OpDef{.name = backward_name,
                            .inputs = bwd_inputs,
                            .optional_inputs = optional,
                            .outputs = {"d_input", "d_target"},
                            .attrs = attrs,
                            .infer = InferLossBackward,
                            .kernels = CpuKernels(kFloatingTypes, bwd),
                            .dtype_input = 1});
  };
  pair("mse_loss", kMseBackward, {}, LossKernel<Mse>, LossBackward<kMseBackward>, LossBackwardKernel<Mse>, false);
  pair("l1_loss", kL1Backward, {}, LossKernel<L1>, LossBackward<kL1Backward>, LossBackwardKernel<L1>, false);
  pair("smooth_l1_loss", kSmoothL1Backward, {{"beta", 1.0}}, LossKernel<SmoothL1>, LossBackward<kSmoothL1Backward>,
       LossBackwardKernel<SmoothL1>, false);
  pair("binary_cross_entropy_with_logits", kBceBackward, {}, LossKernel<Bce>, LossBackward<kBceBackward>,
       LossBackwardKernel<Bce>, true);
  pair("kl_div", kKlDivBackward, {{"log_target", false}}, LossKernel<KlDivLoss>, LossBackward<kKlDivBackward>,
       LossBackwardKernel<KlDivLoss>, false);
}

}  // namespace oneflow
