// The optimizers' per-parameter updates as ops: "sgd_update" and "adam_update". Each updates the
// parameter and its state in place in one fused loop (no outputs, no backward). And the loss scaler's
// ops (Note [Loss scaling]): "non_finite_check" and "update_loss_scale".
#include <atomic>
#include <cmath>
#include <type_traits>

#include "core/op/dispatch.h"
#include "core/ops/cpu/element_bits.h"
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

void CheckLossScaleOptions(const LossScaleOptions& o) {
  OF_CHECK(std::isfinite(o.init_scale) && o.init_scale > 0.0)
      << "init_scale must be finite and > 0, got " << o.init_scale;
  OF_CHECK(std::isfinite(o.growth_factor) && o.growth_factor > 1.0)
      << "growth_factor must be finite and > 1, got " << o.growth_factor;
  OF_CHECK(o.backoff_factor > 0.0 && o.backoff_factor < 1.0)
      << "backoff_factor must be in (0, 1), got " << o.backoff_factor;
  OF_CHECK(o.growth_interval >= 1) << "growth_interval must be >= 1, got " << o.growth_interval;
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

// Input `name`, when given, must be a 0-d tensor of `dtype` (the loss scaler's state).
void CheckScalar(const TensorMeta& t, Symbol<DType> dtype, std::string_view name) {
  if (!t.dtype) return;
  OF_CHECK(t.dtype == dtype && t.shape.ndim() == 0)
      << name << " must be a 0-d " << dtype << " tensor, got " << t.dtype << " of shape " << t.shape;
}

// The loss-scaled updates' last two inputs, found_inf and scale, from `first` on.
void CheckScaling(std::span<const TensorMeta> in, size_t first) {
  CheckScalar(in[first], DType::Float32(), "found_inf");
  CheckScalar(in[first + 1], DType::Float32(), "scale");
}

// Whether a loss-scaled update must skip (found_inf is set), and the factor that unscales its gradient.
struct Unscale {
  bool skip = false;
  double inv_scale = 1.0;
};
Unscale ReadScaling(const KernelContext& ctx, size_t first) {
  Unscale u;
  if (const TensorPtr& found = ctx.inputs[first]) u.skip = *found->data<float>() != 0.0f;
  if (const TensorPtr& scale = ctx.inputs[first + 1]) u.inv_scale = 1.0 / static_cast<double>(*scale->data<float>());
  return u;
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
  CheckScaling(in, 3);
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
  CheckScaling(in, 5);
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

// Calls fn(std::bool_constant<b>{}): a loop-invariant choice made once, outside a loop, so that each
// combination of the update's options gets its own branch-free loop, which the compiler vectorises.
template <typename Fn>
void WithBool(bool b, Fn&& fn) {
  if (b) {
    fn(std::true_type{});
  } else {
    fn(std::false_type{});
  }
}

// One chunk of an SGD update (see SgdOptions). The arrays never overlap: the parameter, autograd's fresh
// gradient and the optimizer's own buffer. kMomentum: buf is the momentum buffer; kFirst: the first step
// (the buffer starts as the gradient).
template <typename T, bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
void SgdLoop(T* __restrict p, const T* __restrict g, T* __restrict buf, int64_t n, T lr, T wd, T momentum, T keep,
             T inv_scale) {
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i] * inv_scale;  // exact without a scale (inv_scale 1)
    T d = kDecay ? gi + wd * p[i] : gi;
    if constexpr (kMomentum) {
      const T b = kFirst ? d : momentum * buf[i] + keep * d;
      buf[i] = b;
      d = kNesterov ? d + momentum * b : b;
    }
    p[i] -= lr * d;
  }
}

void SgdUpdateKernel(KernelContext& ctx) {
  const SgdOptions o = SgdFromAttrs(ctx.attrs);
  const bool first_step = ctx.attrs.Bool("first_step");
  const Unscale unscale = ReadScaling(ctx, 3);
  if (unscale.skip) return;
  VisitFloating(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = ctx.in(0).data<T>();
    const T* g = ctx.in(1).data<T>();
    T* buf = o.momentum != 0.0 ? ctx.in(2).data<T>() : nullptr;
    const T lr = static_cast<T>(o.lr), wd = static_cast<T>(o.weight_decay), momentum = static_cast<T>(o.momentum);
    const T keep = static_cast<T>(1.0 - o.dampening), inv_scale = static_cast<T>(unscale.inv_scale);
    WithBool(o.weight_decay != 0.0, [&](auto decay) {
      WithBool(buf != nullptr, [&](auto with_momentum) {
        WithBool(first_step, [&](auto first) {
          WithBool(o.nesterov, [&](auto nesterov) {
            ctx.pool.ParallelFor(ctx.in(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
              SgdLoop<T, decay(), with_momentum(), first(), nesterov()>(p + begin, g + begin,
                                                                        buf == nullptr ? nullptr : buf + begin,
                                                                        end - begin, lr, wd, momentum, keep, inv_scale);
            });
          });
        });
      });
    });
  });
}

// One chunk of an Adam update (see AdamOptions; the arrays never overlap, as SgdLoop's). kL2: weight
// decay added to the gradient; kDecoupled: AdamW's decay of the parameter.
template <typename T, bool kL2, bool kDecoupled>
void AdamLoop(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n, T wd, T shrink,
              T beta1, T beta2, T one_minus_beta1, T one_minus_beta2, T eps, T size, T inv_bc2_sqrt, T inv_scale) {
  for (int64_t i = 0; i < n; ++i) {
    const T unscaled = g[i] * inv_scale;  // exact without a scale (inv_scale 1)
    const T gi = kL2 ? unscaled + wd * p[i] : unscaled;
    const T pi = kDecoupled ? p[i] * shrink : p[i];
    const T mi = beta1 * m[i] + one_minus_beta1 * gi;
    const T vi = beta2 * v[i] + one_minus_beta2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - size * mi / (std::sqrt(vi) * inv_bc2_sqrt + eps);
  }
}

void AdamUpdateKernel(KernelContext& ctx) {
  const AdamOptions o = AdamFromAttrs(ctx.attrs);
  const Unscale unscale = ReadScaling(ctx, 5);
  if (unscale.skip) return;
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
    const T inv_scale = static_cast<T>(unscale.inv_scale);
    WithBool(l2, [&](auto with_l2) {
      WithBool(decoupled, [&](auto with_decoupled) {
        ctx.pool.ParallelFor(ctx.in(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
          AdamLoop<T, with_l2(), with_decoupled()>(p + begin, g + begin, m + begin, v + begin, end - begin, wd, shrink,
                                                   beta1, beta2, one_minus_beta1, one_minus_beta2, eps, size,
                                                   inv_bc2_sqrt, inv_scale);
        });
      });
    });
  });
}

std::vector<TensorMeta> InferNonFiniteCheck(std::span<const TensorMeta> in, const Attrs& /*attrs*/) {
  CheckScalar(in[0], DType::Float32(), "found_inf");
  for (size_t k = 1; k < in.size(); ++k) {
    OF_CHECK(in[k].dtype->is_floating_point())
        << "grads[" << k - 1 << "] must have a floating-point dtype, got " << in[k].dtype;
  }
  return {};
}

// The exponent bits of a floating dtype's element: all set is inf or NaN.
uint64_t ExponentMask(DataType type) {
  switch (type) {
    case DataType::kFloat16:
      return 0x7C00u;
    case DataType::kBFloat16:
      return 0x7F80u;
    case DataType::kFloat32:
      return 0x7F800000u;
    case DataType::kFloat64:
      return 0x7FF0000000000000ull;
    default:
      OF_THROW(Internal) << "not a floating dtype";
  }
}

void NonFiniteCheckKernel(KernelContext& ctx) {
  std::atomic<bool> found{false};
  for (size_t k = 1; k < ctx.inputs.size() && !found.load(std::memory_order_relaxed); ++k) {
    const Tensor& g = ctx.in(k);
    cpu::VisitBits(g.dtype(), [&](auto tag) {
      using U = decltype(tag);
      const U* bits = g.data<const U>();
      const auto mask = static_cast<U>(ExponentMask(g.dtype()->data_type()));
      ctx.pool.ParallelFor(g.numel(), kGrain, [&](int64_t begin, int64_t end) {
        if (found.load(std::memory_order_relaxed)) return;
        bool any = false;
        for (int64_t i = begin; i < end; ++i) any |= (bits[i] & mask) == mask;
        if (any) found.store(true, std::memory_order_relaxed);
      });
    });
  }
  *ctx.in(0).data<float>() = found.load() ? 1.0f : 0.0f;
}

LossScaleOptions LossScaleFromAttrs(const Attrs& a) {
  return LossScaleOptions{.init_scale = 1.0,
                          .growth_factor = a.Float("growth_factor"),
                          .backoff_factor = a.Float("backoff_factor"),
                          .growth_interval = a.Int("growth_interval")};
}

std::vector<TensorMeta> InferUpdateLossScale(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckLossScaleOptions(LossScaleFromAttrs(attrs));
  CheckScalar(in[0], DType::Float32(), "scale");
  CheckScalar(in[1], DType::Int64(), "growth_tracker");
  CheckScalar(in[2], DType::Int64(), "skipped_steps");
  CheckScalar(in[3], DType::Float32(), "found_inf");
  return {};
}

// PyTorch's _amp_update_scale_: back off at once on inf/NaN, grow after growth_interval clean steps.
void UpdateLossScaleKernel(KernelContext& ctx) {
  const LossScaleOptions o = LossScaleFromAttrs(ctx.attrs);
  float& scale = *ctx.in(0).data<float>();
  int64_t& tracker = *ctx.in(1).data<int64_t>();
  int64_t& skipped = *ctx.in(2).data<int64_t>();
  if (*ctx.in(3).data<const float>() != 0.0f) {
    scale = static_cast<float>(scale * o.backoff_factor);
    tracker = 0;
    ++skipped;
    return;
  }
  if (++tracker < o.growth_interval) return;
  const auto grown = static_cast<float>(scale * o.growth_factor);
  if (std::isfinite(grown)) scale = grown;
  tracker = 0;
}

}  // namespace

namespace ops {

void SgdUpdate(const TensorPtr& param, const TensorPtr& grad, const TensorPtr& momentum_buffer,
               const SgdOptions& options, bool first_step, const LossScaleState* scaling) {
  static const OpDef& op = OpRegistry::Global().Get("sgd_update");
  Apply(op, {param, grad, momentum_buffer, scaling ? scaling->found_inf : nullptr, scaling ? scaling->scale : nullptr},
        {{"lr", options.lr},
         {"momentum", options.momentum},
         {"dampening", options.dampening},
         {"weight_decay", options.weight_decay},
         {"nesterov", options.nesterov},
         {"first_step", first_step}});
}

void AdamUpdate(const TensorPtr& param, const TensorPtr& grad, const TensorPtr& exp_avg, const TensorPtr& exp_avg_sq,
                const TensorPtr& step, const AdamOptions& options, const LossScaleState* scaling) {
  static const OpDef& op = OpRegistry::Global().Get("adam_update");
  Apply(op,
        {param, grad, exp_avg, exp_avg_sq, step, scaling ? scaling->found_inf : nullptr,
         scaling ? scaling->scale : nullptr},
        {{"lr", options.lr},
         {"beta1", options.beta1},
         {"beta2", options.beta2},
         {"eps", options.eps},
         {"weight_decay", options.weight_decay},
         {"decoupled_weight_decay", options.decoupled_weight_decay}});
}

void NonFiniteCheck(const LossScaleState& state, const std::vector<TensorPtr>& grads) {
  static const OpDef& op = OpRegistry::Global().Get("non_finite_check");
  OF_CHECK(!grads.empty()) << "non_finite_check needs at least one gradient";
  std::vector<TensorPtr> inputs{state.found_inf};
  inputs.insert(inputs.end(), grads.begin(), grads.end());
  Apply(op, std::move(inputs), {});
}

void UpdateLossScale(const LossScaleState& state, const LossScaleOptions& options) {
  static const OpDef& op = OpRegistry::Global().Get("update_loss_scale");
  Apply(op, {state.scale, state.growth_tracker, state.skipped_steps, state.found_inf},
        {{"growth_factor", options.growth_factor},
         {"backoff_factor", options.backoff_factor},
         {"growth_interval", options.growth_interval}});
}

}  // namespace ops

void RegisterOptimizerOps(OpRegistry& registry) {
  const SgdOptions sgd;
  registry.Register(OpDef{
      .name = "sgd_update",
      .inputs = {"param", "grad", "momentum_buffer", "found_inf", "scale"},
      .optional_inputs = {"momentum_buffer", "found_inf", "scale"},
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
      .inputs = {"param", "grad", "exp_avg", "exp_avg_sq", "step", "found_inf", "scale"},
      .optional_inputs = {"found_inf", "scale"},
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
  const LossScaleOptions scaler;
  registry.Register(OpDef{
      .name = "non_finite_check",
      .inputs = {"found_inf", "grads"},
      .variadic_inputs = true,
      .outputs = {},
      .infer = InferNonFiniteCheck,
      // Selected by the first gradient's dtype; the kernel reads every gradient's bits in its own dtype.
      .kernels = CpuKernels({DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64},
                            NonFiniteCheckKernel),
      .dtype_input = 1,
      .mutated_inputs = {0},
  });
  registry.Register(OpDef{
      .name = "update_loss_scale",
      .inputs = {"scale", "growth_tracker", "skipped_steps", "found_inf"},
      .outputs = {},
      .attrs = {{"growth_factor", scaler.growth_factor},
                {"backoff_factor", scaler.backoff_factor},
                {"growth_interval", scaler.growth_interval}},
      .infer = InferUpdateLossScale,
      // The state is float32 whatever the model's dtype: no half entries.
      .kernels = {KernelDef{DeviceType::kCPU, {DataType::kFloat32}, UpdateLossScaleKernel}},
      .mutated_inputs = {0, 1, 2},
  });
}

}  // namespace oneflow
