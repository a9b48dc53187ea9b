// The math family's unary ops: trigonometric and hyperbolic functions, erf, erfinv, log1p, expm1,
// reciprocal, the activations (silu mish softplus elu selu leaky_relu hardswish hardsigmoid hardtanh),
// rounding and sign, and isnan/isinf/isfinite. Each differentiable floating op has a dedicated
// <op>_backward element op (dy, x or y) -> dx, one pass instead of several.
#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>

#include "core/ops/cpu/elementwise_defs.h"
#include "core/ops/math.h"
#include "core/ops/register.h"

namespace oneflow {

void RegisterMathUnaryOps(OpRegistry& registry);  // called by RegisterMathOps (math_binary.cpp)

namespace {

using cpu::Domain;
using cpu::ElementFn;
using cpu::FloatingFn;
using cpu::UnaryBackward;

// ---- element functions ----------------------------------------------------------------------------
// C is float (float16, bfloat16 and float32 storage) or double: the std:: functions are accurate to an
// ulp or so in either.
#define OF_FLOATING_FN(Name, expr)   \
  struct Name : FloatingFn {         \
    template <typename C>            \
    C operator()(C x) const {        \
      return expr;                   \
    }                                \
  };
OF_FLOATING_FN(SinFn, std::sin(x))
OF_FLOATING_FN(CosFn, std::cos(x))
OF_FLOATING_FN(TanFn, std::tan(x))
OF_FLOATING_FN(AsinFn, std::asin(x))
OF_FLOATING_FN(AcosFn, std::acos(x))
OF_FLOATING_FN(AtanFn, std::atan(x))
OF_FLOATING_FN(SinhFn, std::sinh(x))
OF_FLOATING_FN(CoshFn, std::cosh(x))
OF_FLOATING_FN(AsinhFn, std::asinh(x))
OF_FLOATING_FN(AcoshFn, std::acosh(x))
OF_FLOATING_FN(AtanhFn, std::atanh(x))
OF_FLOATING_FN(ErfFn, std::erf(x))
OF_FLOATING_FN(Log1pFn, std::log1p(x))
OF_FLOATING_FN(Expm1Fn, std::expm1(x))
OF_FLOATING_FN(ReciprocalFn, C(1) / x)
OF_FLOATING_FN(SiluFn, x / (C(1) + std::exp(-x)))
#undef OF_FLOATING_FN

constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // 2 / sqrt(pi), erf'(0)
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

// erf^-1: Giles' single-precision approximation ("Approximating the erfinv function", GPU Computing
// Gems, 2011), good to ~4e-7 relative for float inputs, then Newton steps (one for float, two for
// double, two more in the double tail w >= 16 where the approximation was not fitted; each step
// squares the relative error). Past 0.5 the steps solve log(erfc(y)) = log(1 - a), which is nearly
// linear in the tail and keeps its relative accuracy there (1 - a is exact).
struct ErfinvFn : FloatingFn {
  template <typename C>
  C operator()(C x) const {
    const C a = std::abs(x);
    if (!(a < C(1))) {  // NaN, +-1, |x| > 1
      if (a == C(1)) return std::copysign(std::numeric_limits<C>::infinity(), x);
      return std::numeric_limits<C>::quiet_NaN();
    }
    if (a == C(0)) return x;
    // w in C: in float, 1 - a of a double just below 1 would round to 0.
    const float w = static_cast<float>(-std::log((C(1) - a) * (C(1) + a)));
    float p;
    if (w >= 5.0f) {
      const float v = std::sqrt(w) - 3.0f;
      p = -0.000200214257f;
      p = 0.000100950558f + p * v;
      p = 0.00134934322f + p * v;
      p = -0.00367342844f + p * v;
      p = 0.00573950773f + p * v;
      p = -0.0076224613f + p * v;
      p = 0.00943887047f + p * v;
      p = 1.00167406f + p * v;
      p = 2.83297682f + p * v;
    } else {
      const float v = w - 2.5f;
      p = 2.81022636e-08f;
      p = 3.43273939e-07f + p * v;
      p = -3.5233877e-06f + p * v;
      p = -4.39150654e-06f + p * v;
      p = 0.00021858087f + p * v;
      p = -0.00125372503f + p * v;
      p = -0.00417768164f + p * v;
      p = 0.246640727f + p * v;
      p = 1.50140941f + p * v;
    }
    C y = static_cast<C>(p) * a;
    const int steps = std::is_same_v<C, float> ? 1 : (w >= 16.0f ? 4 : 2);
    for (int i = 0; i < steps; ++i) {
      const C slope = C(kTwoOverSqrtPi) * std::exp(-y * y);  // erf'(y)
      if (a <= C(0.5)) {
        y -= (std::erf(y) - a) / slope;
      } else {
        const C e = std::erfc(y);
        y += (std::log(e) - std::log(C(1) - a)) * e / slope;
      }
    }
    return std::copysign(y, x);
  }
};

// softplus(x) = log(1 + e^x), linear past 20 (PyTorch's mish).
template <typename C>
C Softplus(C x) {
  return x > C(20) ? x : std::log1p(std::exp(x));
}
struct MishFn : FloatingFn {
  template <typename C>
  C operator()(C x) const {
    return x * std::tanh(Softplus(x));
  }
};
struct SeluFn : FloatingFn {
  template <typename C>
  C operator()(C x) const {
    return x > C(0) ? C(kSeluScale) * x : C(kSeluScale * kSeluAlpha) * std::expm1(x);
  }
};
// max(0, min(v, 6)), NaN staying NaN.
template <typename C>
C Relu6(C v) {
  return v < C(0) ? C(0) : (v > C(6) ? C(6) : v);
}
struct HardswishFn : ElementFn {
  template <typename T>
  static constexpr bool kFor = cpu::kIsFloating<T>;
  template <typename C>
  C operator()(C x) const {
    return x * Relu6(x + C(3)) / C(6);
  }
};
struct HardsigmoidFn : HardswishFn {
  template <typename C>
  C operator()(C x) const {
    return Relu6(x + C(3)) / C(6);
  }
};

// Element functions with attributes (filled from the call's attrs by their kernels).
struct SoftplusFn : FloatingFn {
  double beta, threshold;
  template <typename C>
  C operator()(C x) const {
    const C bx = x * C(beta);
    return bx > C(threshold) ? x : std::log1p(std::exp(bx)) / C(beta);
  }
};
struct EluFn : FloatingFn {
  double alpha;
  template <typename C>
  C operator()(C x) const {
    return x > C(0) ? x : C(alpha) * std::expm1(x);
  }
};
struct LeakyReluFn : HardswishFn {
  double slope;
  template <typename C>
  C operator()(C x) const {
    return x > C(0) ? x : x * C(slope);
  }
};
struct HardtanhFn : HardswishFn {
  double lo, hi;
  template <typename C>
  C operator()(C x) const {
    return x < C(lo) ? C(lo) : (x > C(hi) ? C(hi) : x);
  }
};

// Backward element functions: (dy, s) -> dx, s being the saved x or y named at registration.
#define OF_GRAD_FN(Name, expr)          \
  struct Name : FloatingFn {            \
    template <typename C>               \
    C operator()(C dy, C s) const {     \
      return expr;                      \
    }                                   \
  };
OF_GRAD_FN(SinGradFn, dy * std::cos(s))
OF_GRAD_FN(CosGradFn, -dy * std::sin(s))
OF_GRAD_FN(TanGradFn, dy * (C(1) + s * s))  // s = y
OF_GRAD_FN(AsinGradFn, dy / std::sqrt((C(1) - s) * (C(1) + s)))
OF_GRAD_FN(AcosGradFn, -dy / std::sqrt((C(1) - s) * (C(1) + s)))
OF_GRAD_FN(AtanGradFn, dy / (C(1) + s * s))
OF_GRAD_FN(SinhGradFn, dy * std::cosh(s))
OF_GRAD_FN(CoshGradFn, dy * std::sinh(s))
OF_GRAD_FN(AsinhGradFn, dy / std::sqrt(s * s + C(1)))
OF_GRAD_FN(AcoshGradFn, dy / std::sqrt((s - C(1)) * (s + C(1))))
OF_GRAD_FN(AtanhGradFn, dy / ((C(1) - s) * (C(1) + s)))
OF_GRAD_FN(ErfGradFn, dy * C(kTwoOverSqrtPi) * std::exp(-s * s))
OF_GRAD_FN(ErfinvGradFn, dy / C(kTwoOverSqrtPi) * std::exp(s * s))  // s = y
OF_GRAD_FN(Log1pGradFn, dy / (C(1) + s))
OF_GRAD_FN(Expm1GradFn, dy * (s + C(1)))     // s = y
OF_GRAD_FN(ReciprocalGradFn, -dy * s * s)    // s = y
#undef OF_GRAD_FN
struct SiluGradFn : FloatingFn {
  template <typename C>
  C operator()(C dy, C x) const {
    const C sig = C(1) / (C(1) + std::exp(-x));
    return dy * sig * (C(1) + x * (C(1) - sig));
  }
};
struct MishGradFn : FloatingFn {
  template <typename C>
  C operator()(C dy, C x) const {
    const C t = std::tanh(Softplus(x));
    const C sig = C(1) / (C(1) + std::exp(-x));
    return dy * (t + x * sig * (C(1) - t * t));
  }
};
struct SeluGradFn : FloatingFn {
  template <typename C>
  C operator()(C dy, C x) const {
    return x > C(0) ? dy * C(kSeluScale) : dy * C(kSeluScale * kSeluAlpha) * std::exp(x);
  }
};
struct HardswishGradFn : HardswishFn {
  template <typename C>
  C operator()(C dy, C x) const {
    return x < C(-3) ? C(0) : (x <= C(3) ? dy * (x / C(3) + C(0.5)) : dy);
  }
};
struct HardsigmoidGradFn : HardswishFn {
  template <typename C>
  C operator()(C dy, C x) const {
    return x > C(-3) && x < C(3) ? dy / C(6) : C(0);
  }
};
struct SoftplusGradFn : FloatingFn {
  double beta, threshold;
  template <typename C>
  C operator()(C dy, C x) const {
    const C bx = x * C(beta);
    return bx > C(threshold) ? dy : dy / (C(1) + std::exp(-bx));  // dy * sigmoid(beta x)
  }
};
struct EluGradFn : FloatingFn {
  double alpha;
  template <typename C>
  C operator()(C dy, C x) const {
    return x > C(0) ? dy : dy * C(alpha) * std::exp(x);
  }
};
struct LeakyReluGradFn : HardswishFn {
  double slope;
  template <typename C>
  C operator()(C dy, C x) const {
    return x > C(0) ? dy : dy * C(slope);
  }
};
// Zero at and beyond the bounds (as PyTorch's hardtanh_backward).
struct HardtanhGradFn : HardswishFn {
  double lo, hi;
  template <typename C>
  C operator()(C dy, C x) const {
    return x <= C(lo) || x >= C(hi) ? C(0) : dy;
  }
};

// Rounding: integers pass through.
template <typename C, typename Fn>
C RoundWith(C a, Fn fn) {
  if constexpr (std::is_floating_point_v<C>) return fn(a);
  else return a;
}
struct FloorFn : ElementFn {
  template <typename C>
  C operator()(C a) const {
    return RoundWith(a, [](auto v) { return std::floor(v); });
  }
};
struct CeilFn : ElementFn {
  template <typename C>
  C operator()(C a) const {
    return RoundWith(a, [](auto v) { return std::ceil(v); });
  }
};
struct TruncFn : ElementFn {
  template <typename C>
  C operator()(C a) const {
    return RoundWith(a, [](auto v) { return std::trunc(v); });
  }
};
// nearbyint rounds halves to even in the default rounding mode, which the library never changes.
struct RoundFn : ElementFn {
  template <typename C>
  C operator()(C a) const {
    return RoundWith(a, [](auto v) { return std::nearbyint(v); });
  }
};
struct SignFn : ElementFn {
  template <typename T>
  static constexpr bool kFor = true;
  template <typename C>
  C operator()(C a) const {
    if constexpr (cpu::kIsBool<C>) return a;
    else return static_cast<C>(static_cast<int>(C(0) < a) - static_cast<int>(a < C(0)));
  }
};

struct PredicateFn : ElementFn {
  static constexpr bool kBoolOut = true;
  template <typename T>
  static constexpr bool kFor = true;
};
struct IsNanFn : PredicateFn {
  template <typename C>
  bool operator()(C a) const {
    if constexpr (std::is_floating_point_v<C>) return std::isnan(a);
    else return false;
  }
};
struct IsInfFn : PredicateFn {
  template <typename C>
  bool operator()(C a) const {
    if constexpr (std::is_floating_point_v<C>) return std::isinf(a);
    else return false;
  }
};
struct IsFiniteFn : PredicateFn {
  template <typename C>
  bool operator()(C a) const {
    if constexpr (std::is_floating_point_v<C>) return std::isfinite(a);
    else return true;
  }
};

// ---- kernels with attributes ------------------------------------------------------------------------
template <size_t N>
void SoftplusKernel(KernelContext& ctx) {
  const double beta = ctx.attrs.Float("beta"), threshold = ctx.attrs.Float("threshold");
  if constexpr (N == 1) cpu::MapKernel<SoftplusFn, 1>(ctx, SoftplusFn{{}, beta, threshold});
  else cpu::MapKernel<SoftplusGradFn, 2>(ctx, SoftplusGradFn{{}, beta, threshold});
}
template <size_t N>
void EluKernel(KernelContext& ctx) {
  const double alpha = ctx.attrs.Float("alpha");
  if constexpr (N == 1) cpu::MapKernel<EluFn, 1>(ctx, EluFn{{}, alpha});
  else cpu::MapKernel<EluGradFn, 2>(ctx, EluGradFn{{}, alpha});
}
template <size_t N>
void LeakyReluKernel(KernelContext& ctx) {
  const double slope = ctx.attrs.Float("negative_slope");
  if constexpr (N == 1) cpu::MapKernel<LeakyReluFn, 1>(ctx, LeakyReluFn{{}, slope});
  else cpu::MapKernel<LeakyReluGradFn, 2>(ctx, LeakyReluGradFn{{}, slope});
}
template <size_t N>
void HardtanhKernel(KernelContext& ctx) {
  const double lo = ctx.attrs.Float("min_val"), hi = ctx.attrs.Float("max_val");
  if constexpr (N == 1) cpu::MapKernel<HardtanhFn, 1>(ctx, HardtanhFn{{}, lo, hi});
  else cpu::MapKernel<HardtanhGradFn, 2>(ctx, HardtanhGradFn{{}, lo, hi});
}

// ---- inference --------------------------------------------------------------------------------------
void CheckFinite(const Attrs& attrs, std::string_view name) {
  OF_CHECK(std::isfinite(attrs.Float(name))) << name << " must be finite, got " << attrs.Float(name);
}
std::vector<TensorMeta> InferSoftplus(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckFinite(attrs, "beta");
  OF_CHECK(attrs.Float("beta") != 0.0) << "beta must be non-zero";
  OF_CHECK(!std::isnan(attrs.Float("threshold"))) << "threshold is NaN";
  return cpu::InferUnary<Domain::kFloating>(in, attrs);
}
std::vector<TensorMeta> InferElu(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckFinite(attrs, "alpha");
  return cpu::InferUnary<Domain::kFloating>(in, attrs);
}
std::vector<TensorMeta> InferLeakyRelu(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckFinite(attrs, "negative_slope");
  return cpu::InferUnary<Domain::kFloating>(in, attrs);
}
std::vector<TensorMeta> InferHardtanh(std::span<const TensorMeta> in, const Attrs& attrs) {
  const double lo = attrs.Float("min_val"), hi = attrs.Float("max_val");
  OF_CHECK(!std::isnan(lo) && !std::isnan(hi)) << "min_val and max_val must not be NaN, got " << lo << " and " << hi;
  OF_CHECK(lo <= hi) << "min_val (" << lo << ") must not exceed max_val (" << hi << ")";
  return cpu::InferUnary<Domain::kFloating>(in, attrs);
}
template <InferFn kCheckAttrs>
std::vector<TensorMeta> InferGradWith(std::span<const TensorMeta> in, const Attrs& attrs) {
  kCheckAttrs(in.first(1), attrs);
  return cpu::InferGrad(in, attrs);
}
std::vector<TensorMeta> InferPredicate(std::span<const TensorMeta> in, const Attrs&) {
  return {TensorMeta{DType::Bool(), in[0].shape, in[0].device}};
}

// ---- backward ---------------------------------------------------------------------------------------
// The op's dedicated backward op applied to (dy, x) or (dy, y), with the forward call's attributes.
template <const char* kGradOp, bool kSavesY>
TensorPtr DedicatedGrad(const TensorPtr& dy, const TensorPtr& x, const TensorPtr& y, const Attrs& attrs) {
  static const OpDef& op = OpRegistry::Global().Get(kGradOp);
  return Apply1(op, {dy, kSavesY ? y : x}, attrs);
}
// Rounding and sign: zero almost everywhere (as PyTorch).
TensorPtr ZeroGrad(const TensorPtr& dy, const TensorPtr&, const TensorPtr&, const Attrs&) { return ops::ZerosLike(dy); }

// ---- registration -----------------------------------------------------------------------------------
struct Floating {
  std::string name;
  InferFn infer = cpu::InferUnary<Domain::kFloating>;
  std::vector<AttrSpec> attrs{};
};

// An op with its backward op `<name>_backward`, which saves x or y.
template <typename F, typename G, const char* kGradName, bool kSavesY>
void RegisterWithGrad(OpRegistry& registry, const Floating& spec, KernelFn kernel = cpu::MapKernel<F, 1>,
                      KernelFn grad_kernel = cpu::MapKernel<G, 2>, InferFn grad_infer = cpu::InferGrad) {
  OpDef def = cpu::ElementwiseOp(spec.name, {"x"}, spec.infer, UnaryBackward<DedicatedGrad<kGradName, kSavesY>>,
                                 cpu::KernelDTypes<F>(), kernel);
  def.attrs = spec.attrs;
  registry.Register(std::move(def));
  OpDef grad = cpu::GradOp<G>(kGradName, kSavesY ? "y" : "x", grad_kernel);
  grad.infer = grad_infer;
  grad.attrs = spec.attrs;
  registry.Register(std::move(grad));
}

#define OF_GRAD_NAME(op) constexpr char k_##op##_backward[] = #op "_backward";
OF_GRAD_NAME(sin)
OF_GRAD_NAME(cos)
OF_GRAD_NAME(tan)
OF_GRAD_NAME(asin)
OF_GRAD_NAME(acos)
OF_GRAD_NAME(atan)
OF_GRAD_NAME(sinh)
OF_GRAD_NAME(cosh)
OF_GRAD_NAME(asinh)
OF_GRAD_NAME(acosh)
OF_GRAD_NAME(atanh)
OF_GRAD_NAME(erf)
OF_GRAD_NAME(erfinv)
OF_GRAD_NAME(log1p)
OF_GRAD_NAME(expm1)
OF_GRAD_NAME(reciprocal)
OF_GRAD_NAME(silu)
OF_GRAD_NAME(mish)
OF_GRAD_NAME(softplus)
OF_GRAD_NAME(elu)
OF_GRAD_NAME(selu)
OF_GRAD_NAME(leaky_relu)
OF_GRAD_NAME(hardswish)
OF_GRAD_NAME(hardsigmoid)
OF_GRAD_NAME(hardtanh)
#undef OF_GRAD_NAME

}  // namespace

void RegisterMathUnaryOps(OpRegistry& registry) {
#define OF_REG(F, G, op, saves_y) RegisterWithGrad<F, G, k_##op##_backward, saves_y>(registry, {#op})
  OF_REG(SinFn, SinGradFn, sin, false);
  OF_REG(CosFn, CosGradFn, cos, false);
  OF_REG(TanFn, TanGradFn, tan, true);
  OF_REG(AsinFn, AsinGradFn, asin, false);
  OF_REG(AcosFn, AcosGradFn, acos, false);
  OF_REG(AtanFn, AtanGradFn, atan, false);
  OF_REG(SinhFn, SinhGradFn, sinh, false);
  OF_REG(CoshFn, CoshGradFn, cosh, false);
  OF_REG(AsinhFn, AsinhGradFn, asinh, false);
  OF_REG(AcoshFn, AcoshGradFn, acosh, false);
  OF_REG(AtanhFn, AtanhGradFn, atanh, false);
  OF_REG(ErfFn, ErfGradFn, erf, false);
  OF_REG(ErfinvFn, ErfinvGradFn, erfinv, true);
  OF_REG(Log1pFn, Log1pGradFn, log1p, false);
  OF_REG(Expm1Fn, Expm1GradFn, expm1, true);
  OF_REG(ReciprocalFn, ReciprocalGradFn, reciprocal, true);
  OF_REG(SiluFn, SiluGradFn, silu, false);
  OF_REG(MishFn, MishGradFn, mish, false);
  OF_REG(SeluFn, SeluGradFn, selu, false);
  OF_REG(HardswishFn, HardswishGradFn, hardswish, false);
  OF_REG(HardsigmoidFn, HardsigmoidGradFn, hardsigmoid, false);
#undef OF_REG
  RegisterWithGrad<SoftplusFn, SoftplusGradFn, k_softplus_backward, false>(
      registry, {"softplus", InferSoftplus, {{"beta", 1.0}, {"threshold", 20.0}}}, SoftplusKernel<1>, SoftplusKernel<2>,
      InferGradWith<InferSoftplus>);
  RegisterWithGrad<EluFn, EluGradFn, k_elu_backward, false>(registry, {"elu", InferElu, {{"alpha", 1.0}}}, EluKernel<1>,
                                                            EluKernel<2>, InferGradWith<InferElu>);
  RegisterWithGrad<LeakyReluFn, LeakyReluGradFn, k_leaky_relu_backward, false>(
      registry, {"leaky_relu", InferLeakyRelu, {{"negative_slope", 0.01}}}, LeakyReluKernel<1>, LeakyReluKernel<2>,
      InferGradWith<InferLeakyRelu>);
  RegisterWithGrad<HardtanhFn, HardtanhGradFn, k_hardtanh_backward, false>(
      registry, {"hardtanh", InferHardtanh, {{"min_val", -1.0}, {"max_val", 1.0}}}, HardtanhKernel<1>,
      HardtanhKernel<2>, InferGradWith<InferHardtanh>);

  const auto rounding = [&](std::string name, InferFn infer, KernelFn kernel, std::vector<DataType> dtypes) {
    registry.Register(cpu::ElementwiseOp(std::move(name), {"x"}, infer, UnaryBackward<ZeroGrad>, std::move(dtypes), kernel));
  };
  rounding("floor", cpu::InferUnary<Domain::kNotBool>, cpu::MapKernel<FloorFn, 1>, cpu::KernelDTypes<FloorFn>());
  rounding("ceil", cpu::InferUnary<Domain::kNotBool>, cpu::MapKernel<CeilFn, 1>, cpu::KernelDTypes<CeilFn>());
  rounding("round", cpu::InferUnary<Domain::kNotBool>, cpu::MapKernel<RoundFn, 1>, cpu::KernelDTypes<RoundFn>());
  rounding("trunc", cpu::InferUnary<Domain::kNotBool>, cpu::MapKernel<TruncFn, 1>, cpu::KernelDTypes<TruncFn>());
  rounding("sign", cpu::InferUnary<Domain::kAny>, cpu::MapKernel<SignFn, 1>, cpu::KernelDTypes<SignFn>());

  const auto predicate = [&](std::string name, KernelFn kernel) {
    registry.Register(cpu::ElementwiseOp(std::move(name), {"x"}, InferPredicate, nullptr, kAllTypes, kernel));
  };
  predicate("isnan", cpu::MapKernel<IsNanFn, 1>);
  predicate("isinf", cpu::MapKernel<IsInfFn, 1>);
  predicate("isfinite", cpu::MapKernel<IsFiniteFn, 1>);
}

// ---- the C++ API ------------------------------------------------------------------------------------
namespace ops {

using cpu::ToFloating;

namespace {
const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }
TensorPtr Checked(std::string_view op, const TensorPtr& x) {
  OF_CHECK(x) << op << ": input 'x' is null";
  return x;
}
}  // namespace

#define OF_MATH_UNARY(Name, op_name, input)   \
  TensorPtr Name(const TensorPtr& x) {        \
    static const OpDef& op = Op(op_name);     \
    return Apply1(op, {input(op.name, x)});   \
  }
OF_MATH_UNARY(Sin, "sin", ToFloating)
OF_MATH_UNARY(Cos, "cos", ToFloating)
OF_MATH_UNARY(Tan, "tan", ToFloating)
OF_MATH_UNARY(Asin, "asin", ToFloating)
OF_MATH_UNARY(Acos, "acos", ToFloating)
OF_MATH_UNARY(Atan, "atan", ToFloating)
OF_MATH_UNARY(Sinh, "sinh", ToFloating)
OF_MATH_UNARY(Cosh, "cosh", ToFloating)
OF_MATH_UNARY(Asinh, "asinh", ToFloating)
OF_MATH_UNARY(Acosh, "acosh", ToFloating)
OF_MATH_UNARY(Atanh, "atanh", ToFloating)
OF_MATH_UNARY(Erf, "erf", ToFloating)
OF_MATH_UNARY(Erfinv, "erfinv", ToFloating)
OF_MATH_UNARY(Log1p, "log1p", ToFloating)
OF_MATH_UNARY(Expm1, "expm1", ToFloating)
OF_MATH_UNARY(Reciprocal, "reciprocal", ToFloating)
OF_MATH_UNARY(Silu, "silu", ToFloating)
OF_MATH_UNARY(Mish, "mish", ToFloating)
OF_MATH_UNARY(Selu, "selu", ToFloating)
OF_MATH_UNARY(Hardswish, "hardswish", ToFloating)
OF_MATH_UNARY(Hardsigmoid, "hardsigmoid", ToFloating)
OF_MATH_UNARY(Floor, "floor", Checked)
OF_MATH_UNARY(Ceil, "ceil", Checked)
OF_MATH_UNARY(Round, "round", Checked)
OF_MATH_UNARY(Trunc, "trunc", Checked)
OF_MATH_UNARY(Sign, "sign", Checked)
OF_MATH_UNARY(IsNan, "isnan", Checked)
OF_MATH_UNARY(IsInf, "isinf", Checked)
OF_MATH_UNARY(IsFinite, "isfinite", Checked)
#undef OF_MATH_UNARY

TensorPtr Softplus(const TensorPtr& x, double beta, double threshold) {
  static const OpDef& op = Op("softplus");
  return Apply1(op, {ToFloating(op.name, x)}, {{"beta", beta}, {"threshold", threshold}});
}
TensorPtr Elu(const TensorPtr& x, double alpha) {
  static const OpDef& op = Op("elu");
  return Apply1(op, {ToFloating(op.name, x)}, {{"alpha", alpha}});
}
TensorPtr LeakyRelu(const TensorPtr& x, double negative_slope) {
  static const OpDef& op = Op("leaky_relu");
  return Apply1(op, {ToFloating(op.name, x)}, {{"negative_slope", negative_slope}});
}
TensorPtr Hardtanh(const TensorPtr& x, double min_val, double max_val) {
  static const OpDef& op = Op("hardtanh");
  return Apply1(op, {ToFloating(op.name, x)}, {{"min_val", min_val}, {"max_val", max_val}});
}

}  // namespace ops
}  // namespace oneflow
