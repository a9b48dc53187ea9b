// The optimizers' per-parameter updates as ops: "sgd_update" and "adam_update". Each updates the
// parameter and its state in place in one fused loop (no outputs, no backward).
#include <cmath>

#include "core/op/dispatch.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/register.h"
#include "core/train/optimizer.h"

namespace oneflow {

void CheckSgdOptions(const SgdOptions& o) {
  OF_CHECK(std::isfinite(o.lr) && o.lr >= 0.0) << "lr must be finite and >= 0, got " << o.lr;
  OF_CHECK(std::isfinite(o.momentum) && o.momentum >= 0.0) << "momentum must be finite and >= 0, got " << o.momentum;
  OF_CHECK(std::isfinite(o.dampening)) << "dampening must be finite, got " << o.dampening;
  OF_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0)
      << "weight_decay must be finite and >= 0, got " << o.weight_decay;
  OF_CHECK(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0))
      << "nesterov needs momentum > 0 and dampening == 0, got momentum " << o.momentum << " and dampening "
      << o.dampening;
}

void CheckAdamOptions(const AdamOptions& o) {
  OF_CHECK(std::isfinite(o.lr) && o.lr >= 0.0) << "lr must be finite and >= 0, got " << o.lr;
  OF_CHECK(o.beta1 >= 0.0 && o.beta1 < 1.0) << "beta1 must be in [0, 1), got " << o.beta1;
  OF_CHECK(o.beta2 >= 0.0 && o.beta2 < 1.0) << "beta2 must be in [0, 1), got " << o.beta2;
  OF_CHECK(std::isfinite(o.eps) && o.eps >= 0.0) << "eps must be finite and >= 0, got " << o.eps;
  OF_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0)
      << "weight_decay must be finite and >= 0, got " << o.weight_decay;
}

namespace {

constexpr int64_t kGrain = 1 << 15;

SgdOptions SgdFromAttrs(const Attrs& a) {
  return SgdOptions{.lr = a.Float("lr"),
                    .momentum = a.Float("momentum"),
                    .dampening = a.Float("dampening"),
                    .weight_decay = a.Float("weight_decay"),
                    .nesterov = a.Bool("nesterov")};
}

AdamOptions AdamFromAttrs(const Attrs& a) {
  return AdamOptions{.lr = a.Float("lr"),
                     .beta1 = a.Float("beta1"),
                     .beta2 = a.Float("beta2"),
                     .eps = a.Float("eps"),
                     .weight_decay = a.Float("weight_decay"),
                     .decoupled_weight_decay = a.Bool("decoupled_weight_decay")};
}

// Sizes that cannot be equal at run time: two different known sizes or two different symbols.
bool ProvablyDifferent(Dim a, Dim b) {
  return (a.is_known() && b.is_known() && a != b) || (a.is_symbol() && b.is_symbol() && a != b);
}

// `t` (input `name`) must have the parameter's dtype and shape.
void CheckLikeParam(const TensorMeta& param, const TensorMeta& t, std::string_view name) {
  OF_CHECK(t.dtype == param.dtype) << name << " must have the parameter's dtype " << param.dtype << ", got "
                                   << t.dtype;
  bool same = t.shape.ndim() == param.shape.ndim();
  for (int64_t i = 0; same && i < t.shape.ndim(); ++i) same = !ProvablyDifferent(t.shape[i], param.shape[i]);
  OF_CHECK(same) << name << " must have the parameter's shape " << param.shape << ", got " << t.shape;
}

void CheckParam(const TensorMeta& param) {
  OF_CHECK(param.dtype->is_floating_point()) << "param must have a floating-point dtype, got " << param.dtype;
}

std::vector<TensorMeta> InferSgdUpdate(std::span<const TensorMeta> in, const Attrs& attrs) {
  const SgdOptions o = SgdFromAttrs(attrs);
  CheckSgdOptions(o);
  CheckParam(in[0]);
  CheckLikeParam(in[0], in[1], "grad");
  if (o.momentum != 0.0) {
    OF_CHECK(in[2].dtype) << "momentum_buffer is required when momentum is not 0 (momentum " << o.momentum << ")";
  }
  if (in[2].dtype) CheckLikeParam(in[0], in[2], "momentum_buffer");
  return {};
}

std::vector<TensorMeta> InferAdamUpdate(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckAdamOptions(AdamFromAttrs(attrs));
  CheckParam(in[0]);
  CheckLikeParam(in[0], in[1], "grad");
  CheckLikeParam(in[0], in[2], "exp_avg");
  CheckLikeParam(in[0], in[3], "exp_avg_sq");
  OF_CHECK(in[4].dtype == DType::Int64() && in[4].shape.ndim() == 0)
      << "step must be a 0-d int64 tensor, got " << in[4].dtype << " of shape " << in[4].shape;
  return {};
}

// Calls fn(TypeTag<T>) for the float32 and float64 kernels.
template <typename Fn>
void VisitFloating(Symbol<DType> dtype, Fn&& fn) {
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) fn(tag);
  });
}

void SgdUpdateKernel(KernelContext& ctx) {
  const SgdOptions o = SgdFromAttrs(ctx.attrs);
  const bool first_step = ctx.attrs.Bool("first_step");
  VisitFloating(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = ctx.in(0).data<T>();
    const T* g = ctx.in(1).data<T>();
    T* buf = o.momentum != 0.0 ? ctx.in(2).data<T>() : nullptr;
    const T lr = static_cast<T>(o.lr), wd = static_cast<T>(o.weight_decay), momentum = static_cast<T>(o.momentum);
    const T keep = static_cast<T>(1.0 - o.dampening);
    const bool decay = o.weight_decay != 0.0, nesterov = o.nesterov;
    ctx.pool.ParallelFor(ctx.in(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        T d = decay ? g[i] + wd * p[i] : g[i];
        if (buf != nullptr) {
          const T b = first_step ? d : momentum * buf[i] + keep * d;
          buf[i] = b;
          d = nesterov ? d + momentum * b : b;
        }
        p[i] -= lr * d;
      }
    });
  });
}

void AdamUpdateKernel(KernelContext& ctx) {
  const AdamOptions o = AdamFromAttrs(ctx.attrs);
  int64_t& step = *ctx.in(4).data<int64_t>();
  step += 1;
  const double t = static_cast<double>(step);
  const double step_size = o.lr / (1.0 - std::pow(o.beta1, t));
  const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(o.beta2, t));
  VisitFloating(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = ctx.in(0).data<T>();
    const T* g = ctx.in(1).data<T>();
    T* m = ctx.in(2).data<T>();
    T* v = ctx.in(3).data<T>();
    const bool l2 = !o.decoupled_weight_decay && o.weight_decay != 0.0;
    const bool decoupled = o.decoupled_weight_decay && o.weight_decay != 0.0;
    const T wd = static_cast<T>(o.weight_decay), shrink = static_cast<T>(1.0 - o.lr * o.weight_decay);
    const T beta1 = static_cast<T>(o.beta1), beta2 = static_cast<T>(o.beta2);
    const T one_minus_beta1 = static_cast<T>(1.0 - o.beta1), one_minus_beta2 = static_cast<T>(1.0 - o.beta2);
    const T eps = static_cast<T>(o.eps), size = static_cast<T>(step_size);
    const T inv_bc2_sqrt = static_cast<T>(1.0 / bias_correction2_sqrt);
    ctx.pool.ParallelFor(ctx.in(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const T gi = l2 ? g[i] + wd * p[i] : g[i];
        const T pi = decoupled ? p[i] * shrink : p[i];
        const T mi = beta1 * m[i] + one_minus_beta1 * gi;
        const T vi = beta2 * v[i] + one_minus_beta2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = pi - size * mi / (std::sqrt(vi) * inv_bc2_sqrt + eps);
      }
    });
  });
}

}  // namespace

namespace ops {

void SgdUpdate(const TensorPtr& param, const TensorPtr& grad, const TensorPtr& momentum_buffer,
               const SgdOptions& options, bool first_step) {
  static const OpDef& op = OpRegistry::Global().Get("sgd_update");
  Apply(op, {param, grad, momentum_buffer},
        {{"lr", options.lr},
         {"momentum", options.momentum},
         {"dampening", options.dampening},
         {"weight_decay", options.weight_decay},
         {"nesterov", options.nesterov},
         {"first_step", first_step}});
}

void AdamUpdate(const TensorPtr& param, const TensorPtr& grad, const TensorPtr& exp_avg, const TensorPtr& exp_avg_sq,
                const TensorPtr& step, const AdamOptions& options) {
  static const OpDef& op = OpRegistry::Global().Get("adam_update");
  Apply(op, {param, grad, exp_avg, exp_avg_sq, step},
        {{"lr", options.lr},
         {"beta1", options.beta1},
         {"beta2", options.beta2},
         {"eps", options.eps},
         {"weight_decay", options.weight_decay},
         {"decoupled_weight_decay", options.decoupled_weight_decay}});
}

}  // namespace ops

void RegisterOptimizerOps(OpRegistry& registry) {
  const SgdOptions sgd;
  registry.Register(OpDef{
      .name = "sgd_update",
      .inputs = {"param", "grad", "momentum_buffer"},
      .optional_inputs = {"momentum_buffer"},
      .outputs = {},
      .attrs = {{"lr", 0.0, true},
                {"momentum", sgd.momentum},
                {"dampening", sgd.dampening},
                {"weight_decay", sgd.weight_decay},
                {"nesterov", sgd.nesterov},
                {"first_step", false}},
      .infer = InferSgdUpdate,
      .kernels = CpuKernels(kFloatingTypes, SgdUpdateKernel),
      .mutated_inputs = {0, 2},
      .gradient_input = 1,
  });
  const AdamOptions adam;
  registry.Register(OpDef{
      .name = "adam_update",
      .inputs = {"param", "grad", "exp_avg", "exp_avg_sq", "step"},
      .optional_inputs = {},
      .outputs = {},
      .attrs = {{"lr", 0.0, true},
                {"beta1", adam.beta1},
                {"beta2", adam.beta2},
                {"eps", adam.eps},
                {"weight_decay", adam.weight_decay},
                {"decoupled_weight_decay", adam.decoupled_weight_decay}},
      .infer = InferAdamUpdate,
      .kernels = CpuKernels(kFloatingTypes, AdamUpdateKernel),
      .mutated_inputs = {0, 2, 3, 4},
      .gradient_input = 1,
  });
}

}  // namespace oneflow
