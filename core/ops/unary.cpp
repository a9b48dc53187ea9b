// Elementwise unary ops (neg abs exp log sqrt rsqrt relu sigmoid tanh gelu), cast, and the dedicated
// backward ops of the activations (relu_backward, sigmoid_backward, tanh_backward, gelu_backward),
// which do in one pass what their backward would otherwise do in several.
#include <cmath>
#include <type_traits>

#include "core/op/dispatch.h"
#include "core/ops/fused.h"
#include "core/ops/cpu/elementwise_defs.h"
#include "core/ops/cpu/wrapping.h"
#include "core/ops/ops.h"
#include "core/ops/register.h"

namespace oneflow {
namespace {

using cpu::CheckDomain;
using cpu::Domain;
using cpu::ElementFn;
using cpu::ElementwiseOp;
using cpu::FloatingFn;
using cpu::InferUnary;
using cpu::UnaryBackward;

// ---- element functions ----------------------------------------------------------------------------
struct NegFn : ElementFn {
  template <typename C>
  C operator()(C a) const {
    if constexpr (std::is_integral_v<C>) {
      using U = cpu::WrapType<C>;  // Note [Wrapping integer arithmetic]
      return static_cast<C>(U(0) - static_cast<U>(a));
    } else {
      return -a;
    }
  }
};
struct AbsFn : ElementFn {
  template <typename C>
  C operator()(C a) const {
    if constexpr (std::is_unsigned_v<C>) {
      return a;
    } else if constexpr (std::is_integral_v<C>) {
      return a < 0 ? NegFn()(a) : a;
    } else {
      return std::abs(a);
    }
  }
};
struct ReluFn : ElementFn {
  template <typename C>
  C operator()(C a) const {
    if constexpr (std::is_unsigned_v<C>) return a;
    else return a < C(0) ? C(0) : a;  // NaN stays NaN
  }
};
struct ExpFn : FloatingFn {
  template <typename C>
  C operator()(C a) const {
    return std::exp(a);
  }
};
struct LogFn : FloatingFn {
  template <typename C>
  C operator()(C a) const {
    return std::log(a);
  }
};
struct SqrtFn : FloatingFn {
  template <typename C>
  C operator()(C a) const {
    return std::sqrt(a);
  }
};
struct RsqrtFn : FloatingFn {
  template <typename C>
  C operator()(C a) const {
    return C(1) / std::sqrt(a);
  }
};
struct SigmoidFn : FloatingFn {
  template <typename C>
  C operator()(C a) const {
    return C(1) / (C(1) + std::exp(-a));
  }
};
struct TanhFn : FloatingFn {
  template <typename C>
  C operator()(C a) const {
    return std::tanh(a);
  }
};

constexpr double kSqrtHalf = 0.70710678118654752440;    // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588; // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

// x * Phi(x), or its tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <bool kTanh>
struct GeluFn : FloatingFn {
  template <typename C>
  C operator()(C x) const {
    if constexpr (kTanh) {
      return C(0.5) * x * (C(1) + std::tanh(C(kSqrt2OverPi) * (x + C(kGeluCubic) * x * x * x)));
    } else {
      return C(0.5) * x * (C(1) + std::erf(x * C(kSqrtHalf)));
    }
  }
};

// Backward element functions: (dy, saved) -> dx.
struct ReluGradFn : ElementFn {
  template <typename T>
  static constexpr bool kFor = cpu::kIsFloating<T>;
  template <typename C>
  C operator()(C dy, C y) const {
    return y > C(0) ? dy : C(0);
  }
};
struct SigmoidGradFn : ReluGradFn {
  template <typename C>
  C operator()(C dy, C y) const {
    return dy * y * (C(1) - y);
  }
};
struct TanhGradFn : ReluGradFn {
  template <typename C>
  C operator()(C dy, C y) const {
    return dy * (C(1) - y * y);
  }
};
template <bool kTanh>
struct GeluGradFn : FloatingFn {
  template <typename C>
  C operator()(C dy, C x) const {
    if constexpr (kTanh) {
      const C x2 = x * x;
      const C t = std::tanh(C(kSqrt2OverPi) * x * (C(1) + C(kGeluCubic) * x2));
      const C dt = C(kSqrt2OverPi) * (C(1) + C(3 * kGeluCubic) * x2);
      return dy * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * dt);
    } else {
      const C cdf = C(0.5) * (C(1) + std::erf(x * C(kSqrtHalf)));
      const C pdf = C(kInvSqrt2Pi) * std::exp(C(-0.5) * x * x);
      return dy * (cdf + x * pdf);
    }
  }
};

// ---- kernels --------------------------------------------------------------------------------------
template <typename F>
void UnaryKernel(KernelContext& ctx) {
  cpu::MapKernel<F, 1>(ctx);
}
template <template <bool> class F, size_t N>
void GeluKernel(KernelContext& ctx) {
  if (ctx.attrs.Bool("tanh_approximation")) {
    cpu::MapKernel<F<true>, N>(ctx);
  } else {
    cpu::MapKernel<F<false>, N>(ctx);
  }
}

void CastKernel(KernelContext& ctx) { cpu::CastInto(ctx.in(0), ctx.out(0), ctx.pool); }

// ---- inference ------------------------------------------------------------------------------------
std::vector<TensorMeta> InferCast(std::span<const TensorMeta> in, const Attrs& attrs) {
  return {TensorMeta{attrs.Get<Symbol<DType>>("dtype"), in[0].shape, in[0].device}};
}

// ---- backward -------------------------------------------------------------------------------------
TensorPtr NegGrad(const TensorPtr& dy, const TensorPtr&, const TensorPtr&, const Attrs&) { return ops::Neg(dy); }
TensorPtr AbsGrad(const TensorPtr& dy, const TensorPtr& x, const TensorPtr&, const Attrs&) {
  const TensorPtr sign = ops::Sub(ops::Cast(ops::GtScalar(x, 0.0), dy->dtype()), ops::Cast(ops::LtScalar(x, 0.0), dy->dtype()));
  return ops::Mul(dy, sign);
}
TensorPtr ExpGrad(const TensorPtr& dy, const TensorPtr&, const TensorPtr& y, const Attrs&) { return ops::Mul(dy, y); }
TensorPtr LogGrad(const TensorPtr& dy, const TensorPtr& x, const TensorPtr&, const Attrs&) { return ops::Div(dy, x); }
TensorPtr SqrtGrad(const TensorPtr& dy, const TensorPtr&, const TensorPtr& y, const Attrs&) {
  return ops::Div(dy, ops::MulScalar(y, 2.0));
}
TensorPtr RsqrtGrad(const TensorPtr& dy, const TensorPtr& x, const TensorPtr& y, const Attrs&) {
  return ops::MulScalar(ops::Mul(dy, ops::Div(y, x)), -0.5);  // -x^(-3/2) / 2
}
TensorPtr ReluGrad(const TensorPtr& dy, const TensorPtr&, const TensorPtr& y, const Attrs&) {
  static const OpDef& op = OpRegistry::Global().Get("relu_backward");
  return Apply1(op, {dy, y});
}
TensorPtr SigmoidGrad(const TensorPtr& dy, const TensorPtr&, const TensorPtr& y, const Attrs&) {
  static const OpDef& op = OpRegistry::Global().Get("sigmoid_backward");
  return Apply1(op, {dy, y});
}
TensorPtr TanhGrad(const TensorPtr& dy, const TensorPtr&, const TensorPtr& y, const Attrs&) {
  static const OpDef& op = OpRegistry::Global().Get("tanh_backward");
  return Apply1(op, {dy, y});
}
TensorPtr GeluGrad(const TensorPtr& dy, const TensorPtr& x, const TensorPtr&, const Attrs& attrs) {
  static const OpDef& op = OpRegistry::Global().Get("gelu_backward");
  return Apply1(op, {dy, x}, {{"tanh_approximation", attrs.Bool("tanh_approximation")}});
}
// Only floating inputs have gradients (an integer or bool input never requires grad).
TensorPtr CastGrad(const TensorPtr& dy, const TensorPtr& x, const TensorPtr&, const Attrs&) {
  return x->dtype()->is_floating_point() ? ops::Cast(dy, x->dtype()) : nullptr;
}

// ---- registration ---------------------------------------------------------------------------------
template <typename F, Domain kDomain>
OpDef UnaryOp(std::string name, BackwardFn backward, KernelFn kernel = UnaryKernel<F>) {
  return ElementwiseOp(std::move(name), {"x"}, InferUnary<kDomain>, backward, cpu::KernelDTypes<F>(), kernel);
}

const AttrSpec kTanhApproximation{"tanh_approximation", false};

}  // namespace

void RegisterUnaryOps(OpRegistry& registry) {
  registry.Register(Fusable(UnaryOp<NegFn, Domain::kNotBool>("neg", UnaryBackward<NegGrad>), FusedOpcode::kNeg));
  registry.Register(Fusable(UnaryOp<AbsFn, Domain::kNotBool>("abs", UnaryBackward<AbsGrad>), FusedOpcode::kAbs));
  registry.Register(Fusable(UnaryOp<ExpFn, Domain::kFloating>("exp", UnaryBackward<ExpGrad>), FusedOpcode::kExp));
  registry.Register(Fusable(UnaryOp<LogFn, Domain::kFloating>("log", UnaryBackward<LogGrad>), FusedOpcode::kLog));
  registry.Register(Fusable(UnaryOp<SqrtFn, Domain::kFloating>("sqrt", UnaryBackward<SqrtGrad>), FusedOpcode::kSqrt));
  registry.Register(Fusable(UnaryOp<RsqrtFn, Domain::kFloating>("rsqrt", UnaryBackward<RsqrtGrad>), FusedOpcode::kRsqrt));
  registry.Register(Fusable(UnaryOp<ReluFn, Domain::kNotBool>("relu", UnaryBackward<ReluGrad>), FusedOpcode::kRelu));
  registry.Register(Fusable(UnaryOp<SigmoidFn, Domain::kFloating>("sigmoid", UnaryBackward<SigmoidGrad>), FusedOpcode::kSigmoid));
  registry.Register(Fusable(UnaryOp<TanhFn, Domain::kFloating>("tanh", UnaryBackward<TanhGrad>), FusedOpcode::kTanh));
  OpDef gelu = UnaryOp<GeluFn<false>, Domain::kFloating>("gelu", UnaryBackward<GeluGrad>, GeluKernel<GeluFn, 1>);
  gelu.attrs = {kTanhApproximation};
  registry.Register(std::move(gelu));

  registry.Register(Fusable(cpu::GradOp<ReluGradFn>("relu_backward", "y"), FusedOpcode::kReluBackward));
  registry.Register(Fusable(cpu::GradOp<SigmoidGradFn>("sigmoid_backward", "y"), FusedOpcode::kSigmoidBackward));
  registry.Register(Fusable(cpu::GradOp<TanhGradFn>("tanh_backward", "y"), FusedOpcode::kTanhBackward));
  OpDef gelu_backward = cpu::GradOp<GeluGradFn<false>>("gelu_backward", "x", GeluKernel<GeluGradFn, 2>);
  gelu_backward.attrs = {kTanhApproximation};
  registry.Register(std::move(gelu_backward));

  OpDef cast = ElementwiseOp("cast", {"x"}, InferCast, UnaryBackward<CastGrad>, kAllTypes, CastKernel);
  cast.attrs = {{"dtype", DType::Float32(), /*required=*/true}};
  registry.Register(std::move(cast));
}

// ---- the C++ API ----------------------------------------------------------------------------------
namespace cpu {

void CastInto(const Tensor& src, const Tensor& dst, ThreadPool& pool) {
  // float16 <-> float32 between tensors dense in one layout: the vector conversions (half.h).
  const bool f16 = src.dtype() == DType::Float16(), f32 = src.dtype() == DType::Float32();
  if (((f16 && dst.dtype() == DType::Float32()) || (f32 && dst.dtype() == DType::Float16())) &&
      src.strides() == dst.strides() && (src.is_contiguous() || src.memory_format() == MemoryFormat::kChannelsLast)) {
    pool.ParallelFor(src.numel(), kSimpleGrain, [&](int64_t begin, int64_t end) {
      if (f16) {
        Float16ToFloat(src.data<const float16>() + begin, dst.data<float>() + begin, end - begin);
      } else {
        FloatToFloat16(src.data<const float>() + begin, dst.data<float16>() + begin, end - begin);
      }
    });
    return;
  }
  VisitDType(src.dtype(), [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    VisitDType(dst.dtype(), [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      ElementwiseLoop<Out, In>(pool, kSimpleGrain, dst, {&src}, [](ComputeType<In> v) { return v; });
    });
  });
}

}  // namespace cpu

namespace ops {

using cpu::ToFloating;

#define OF_UNARY(Name, op_name, input)                          \
  TensorPtr Name(const TensorPtr& x) {                          \
    static const OpDef& op = OpRegistry::Global().Get(op_name); \
    return Apply1(op, {input});                                 \
  }
OF_UNARY(Neg, "neg", x)
OF_UNARY(Abs, "abs", x)
OF_UNARY(Relu, "relu", x)
OF_UNARY(Exp, "exp", ToFloating(op.name, x))
OF_UNARY(Log, "log", ToFloating(op.name, x))
OF_UNARY(Sqrt, "sqrt", ToFloating(op.name, x))
OF_UNARY(Rsqrt, "rsqrt", ToFloating(op.name, x))
OF_UNARY(Sigmoid, "sigmoid", ToFloating(op.name, x))
OF_UNARY(Tanh, "tanh", ToFloating(op.name, x))
#undef OF_UNARY

TensorPtr Gelu(const TensorPtr& x, bool tanh_approximation) {
  static const OpDef& op = OpRegistry::Global().Get("gelu");
  return Apply1(op, {ToFloating("gelu", x)}, {{"tanh_approximation", tanh_approximation}});
}

TensorPtr Cast(const TensorPtr& x, Symbol<DType> dtype) {
  OF_CHECK(x) << "cast: input 'x' is null";
  OF_CHECK(dtype) << "cast: dtype is null";
  static const OpDef& op = OpRegistry::Global().Get("cast");
  if (x->dtype() == dtype) return x;
  return Apply1(op, {x}, {{"dtype", dtype}});
}

}  // namespace ops
}  // namespace oneflow
