// The math family's binary ops: atan2, fmod, remainder, the bitwise ops and shifts, and clamp (with
// tensor bounds: clamp of three inputs, clamp_min and clamp_max of two). The ops:: functions broadcast
// and promote; the registry ops take operands of one dtype, strided and broadcast by stride 0.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/ops/cpu/elementwise_defs.h"
#include "core/ops/cpu/wrapping.h"
#include "core/ops/math.h"
#include "core/ops/register.h"

namespace oneflow {

void RegisterMathUnaryOps(OpRegistry& registry);  // core/ops/math_unary.cpp

namespace {

using cpu::Domain;
using cpu::ElementFn;
using cpu::InferBinary;
using cpu::kIsBool;
using cpu::SumTo;

// ---- element functions ----------------------------------------------------------------------------
struct Atan2Fn : cpu::FloatingFn {
  template <typename C>
  C operator()(C a, C b) const {
    return std::atan2(a, b);
  }
};

// Integer division by zero is refused (PyTorch raises ZeroDivisionError); the element function throws
// from the kernel, which fails the call without a second pass over b.
template <typename C>
void CheckDivisor(C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == C(0)) OF_THROW(InvalidArgument) << "integer division by zero (b has a zero element)";
  }
}

// The sign of a: a - trunc(a / b) * b.
struct FmodFn : ElementFn {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::fmod(a, b);
    } else {
      CheckDivisor(b);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);  // min % -1 overflows in C++
      }
      return static_cast<C>(a % b);
    }
  }
};
// The sign of b: a - floor(a / b) * b (Python's %), computed as PyTorch does.
struct RemainderFn : ElementFn {
  template <typename C>
  C operator()(C a, C b) const {
    const C r = FmodFn()(a, b);
    if constexpr (std::is_unsigned_v<C>) {
      return r;
    } else {
      return r != C(0) && ((r < C(0)) != (b < C(0))) ? static_cast<C>(r + b) : r;
    }
  }
};

// Bitwise ops on bool and integer dtypes; on bool they are the logical ones.
struct IntegralFn : ElementFn {
  template <typename T>
  static constexpr bool kFor = std::is_integral_v<T>;
};
struct BitwiseAndFn : IntegralFn {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a & b);
  }
};
struct BitwiseOrFn : IntegralFn {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a | b);
  }
};
struct BitwiseXorFn : IntegralFn {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a ^ b);
  }
};
struct BitwiseNotFn : IntegralFn {
  template <typename C>
  C operator()(C a) const {
    if constexpr (kIsBool<C>) return !a;
    else return static_cast<C>(~a);
  }
};

// Shifts (integers only). A count that is negative or at least the width gives 0 on the left and the
// sign fill on the right (PyTorch's definitions; both are undefined in C++).
struct ShiftFn : ElementFn {
  template <typename T>
  static constexpr bool kFor = std::is_integral_v<T> && !kIsBool<T>;
};
template <typename C>
bool ShiftOutOfRange(C b, int max_shift) {
  return static_cast<std::make_signed_t<C>>(b) < 0 || static_cast<int64_t>(b) >= max_shift;
}
struct LeftShiftFn : ShiftFn {
  template <typename C>
  C operator()(C a, C b) const {
    constexpr int kWidth = static_cast<int>(sizeof(C) * 8);
    if (ShiftOutOfRange(b, kWidth)) return C(0);
    using U = cpu::WrapType<C>;  // Note [Wrapping integer arithmetic]
    return static_cast<C>(static_cast<U>(a) << static_cast<int>(b));
  }
};
struct RightShiftFn : ShiftFn {
  template <typename C>
  C operator()(C a, C b) const {
    constexpr int kWidth = static_cast<int>(sizeof(C) * 8);
    if (ShiftOutOfRange(b, kWidth)) {
      if constexpr (std::is_signed_v<C>) return a < C(0) ? C(-1) : C(0);
      else return C(0);
    }
    return static_cast<C>(a >> static_cast<int>(b));  // arithmetic for signed a (defined since C++20)
  }
};

// clamp: a NaN in x or a bound gives NaN; where lo > hi the result is hi (as PyTorch).
template <typename C>
bool AnyNan(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(a) || std::isnan(b);
  else return false;
}
struct ClampMinFn : ElementFn {
  template <typename C>
  C operator()(C x, C lo) const {
    if (AnyNan(x, lo)) return std::numeric_limits<C>::quiet_NaN();
    return x < lo ? lo : x;
  }
};
struct ClampMaxFn : ElementFn {
  template <typename C>
  C operator()(C x, C hi) const {
    if (AnyNan(x, hi)) return std::numeric_limits<C>::quiet_NaN();
    return x > hi ? hi : x;
  }
};
struct ClampFn : ElementFn {
  template <typename C>
  C operator()(C x, C lo, C hi) const {
    return ClampMaxFn()(ClampMinFn()(x, lo), hi);
  }
};

// ---- inference ------------------------------------------------------------------------------------
std::vector<TensorMeta> InferClamp(std::span<const TensorMeta> in, const Attrs&) {
  OF_CHECK(in[0].dtype == in[1].dtype && in[0].dtype == in[2].dtype)
      << "x, min and max must have the same dtype, got " << in[0].dtype << ", " << in[1].dtype << " and "
      << in[2].dtype << " (ops::Clamp promotes them)";
  cpu::CheckDomain(in[0].dtype, Domain::kNotBool, "x");
  return {TensorMeta{in[0].dtype, BroadcastShapes(BroadcastShapes(in[0].shape, in[1].shape), in[2].shape),
                     in[0].device}};
}

// ---- backward -------------------------------------------------------------------------------------
std::vector<TensorPtr> Atan2Backward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  const TensorPtr &a = ctx.inputs[0], &b = ctx.inputs[1];
  std::vector<TensorPtr> g(2);
  if (!dy) return g;
  const TensorPtr r = ops::Div(dy, ops::Add(ops::Mul(a, a), ops::Mul(b, b)));  // dy / (a^2 + b^2)
  if (ctx.needs_input_grad[0]) g[0] = SumTo(ops::Mul(r, b), a);
  if (ctx.needs_input_grad[1]) g[1] = SumTo(ops::Neg(ops::Mul(r, a)), b);
  return g;
}

// da = dy, db = -dy * round(a / b) with trunc (fmod) or floor (remainder), as PyTorch.
template <TensorPtr (*kRound)(const TensorPtr&)>
std::vector<TensorPtr> ModBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  const TensorPtr &a = ctx.inputs[0], &b = ctx.inputs[1];
  std::vector<TensorPtr> g(2);
  if (!dy) return g;
  if (ctx.needs_input_grad[0]) g[0] = SumTo(dy, a);
  if (ctx.needs_input_grad[1]) g[1] = SumTo(ops::Neg(ops::Mul(dy, kRound(ops::Div(a, b)))), b);
  return g;
}

// The gradient goes to whichever input the forward selected: x where lo <= x <= hi, the bound otherwise.
TensorPtr Masked(const TensorPtr& mask, const TensorPtr& dy) { return ops::Where(mask, dy, ops::ScalarLike(dy, 0.0)); }

std::vector<TensorPtr> ClampBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  const TensorPtr &x = ctx.inputs[0], &lo = ctx.inputs[1], &hi = ctx.inputs[2];
  std::vector<TensorPtr> g(3);
  if (!dy) return g;
  const TensorPtr to_hi = ops::LogicalOr(ops::Gt(x, hi), ops::Gt(lo, hi));
  const TensorPtr to_lo = ops::LogicalAnd(ops::Lt(x, lo), ops::LogicalNot(to_hi));
  if (ctx.needs_input_grad[0]) g[0] = SumTo(Masked(ops::LogicalNot(ops::LogicalOr(to_hi, to_lo)), dy), x);
  if (ctx.needs_input_grad[1]) g[1] = SumTo(Masked(to_lo, dy), lo);
  if (ctx.needs_input_grad[2]) g[2] = SumTo(Masked(to_hi, dy), hi);
  return g;
}

template <bool kMin>
std::vector<TensorPtr> ClampBoundBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  const TensorPtr &x = ctx.inputs[0], &bound = ctx.inputs[1];
  std::vector<TensorPtr> g(2);
  if (!dy) return g;
  const TensorPtr to_bound = kMin ? ops::Lt(x, bound) : ops::Gt(x, bound);
  if (ctx.needs_input_grad[0]) g[0] = SumTo(Masked(ops::LogicalNot(to_bound), dy), x);
  if (ctx.needs_input_grad[1]) g[1] = SumTo(Masked(to_bound, dy), bound);
  return g;
}

// ---- registration ---------------------------------------------------------------------------------
template <typename F, Domain kDomain>
OpDef BinaryOp(std::string name, BackwardFn backward, std::vector<std::string> inputs = {"a", "b"}) {
  return cpu::ElementwiseOp(std::move(name), std::move(inputs), InferBinary<kDomain, false>, backward,
                            cpu::KernelDTypes<F>(), cpu::MapKernel<F, 2>);
}

}  // namespace

void RegisterMathOps(OpRegistry& registry) {
  RegisterMathUnaryOps(registry);
  registry.Register(BinaryOp<Atan2Fn, Domain::kFloating>("atan2", Atan2Backward));
  registry.Register(BinaryOp<FmodFn, Domain::kNotBool>("fmod", ModBackward<ops::Trunc>));
  registry.Register(BinaryOp<RemainderFn, Domain::kNotBool>("remainder", ModBackward<ops::Floor>));
  registry.Register(BinaryOp<BitwiseAndFn, Domain::kIntegral>("bitwise_and", nullptr));
  registry.Register(BinaryOp<BitwiseOrFn, Domain::kIntegral>("bitwise_or", nullptr));
  registry.Register(BinaryOp<BitwiseXorFn, Domain::kIntegral>("bitwise_xor", nullptr));
  registry.Register(cpu::ElementwiseOp("bitwise_not", {"x"}, cpu::InferUnary<Domain::kIntegral>, nullptr,
                                       cpu::KernelDTypes<BitwiseNotFn>(), cpu::MapKernel<BitwiseNotFn, 1>));
  registry.Register(BinaryOp<LeftShiftFn, Domain::kInteger>("bitwise_left_shift", nullptr));
  registry.Register(BinaryOp<RightShiftFn, Domain::kInteger>("bitwise_right_shift", nullptr));
  registry.Register(BinaryOp<ClampMinFn, Domain::kNotBool>("clamp_min", ClampBoundBackward<true>, {"x", "min"}));
  registry.Register(BinaryOp<ClampMaxFn, Domain::kNotBool>("clamp_max", ClampBoundBackward<false>, {"x", "max"}));
  registry.Register(cpu::ElementwiseOp("clamp", {"x", "min", "max"}, InferClamp, ClampBackward,
                                       cpu::KernelDTypes<ClampFn>(), cpu::MapKernel<ClampFn, 3>));
}

// ---- the C++ API ----------------------------------------------------------------------------------
namespace ops {
namespace {
const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }
}  // namespace

#define OF_MATH_BINARY(Name, op_name, ...)                               \
  TensorPtr Name(const TensorPtr& a, const TensorPtr& b) {               \
    static const OpDef& op = Op(op_name);                                \
    return cpu::PromotedBinary(op, a, b __VA_OPT__(, ) __VA_ARGS__);     \
  }
OF_MATH_BINARY(Atan2, "atan2", true)
OF_MATH_BINARY(Fmod, "fmod")
OF_MATH_BINARY(Remainder, "remainder")
OF_MATH_BINARY(BitwiseAnd, "bitwise_and")
OF_MATH_BINARY(BitwiseOr, "bitwise_or")
OF_MATH_BINARY(BitwiseXor, "bitwise_xor")
OF_MATH_BINARY(BitwiseLeftShift, "bitwise_left_shift")
OF_MATH_BINARY(BitwiseRightShift, "bitwise_right_shift")
#undef OF_MATH_BINARY

TensorPtr BitwiseNot(const TensorPtr& x) {
  static const OpDef& op = Op("bitwise_not");
  OF_CHECK(x) << "bitwise_not: input 'x' is null";
  return Apply1(op, {x});
}

TensorPtr Clamp(const TensorPtr& x, const TensorPtr& min, const TensorPtr& max) {
  OF_CHECK(x) << "clamp: input 'x' is null";
  if (!min && !max) return x;
  if (!min || !max) {
    static const OpDef& clamp_min = Op("clamp_min");
    static const OpDef& clamp_max = Op("clamp_max");
    const TensorPtr& bound = min ? min : max;
    const Symbol<DType> dtype = PromoteTypes(x->dtype(), bound->dtype());
    return Apply1(min ? clamp_min : clamp_max, {Cast(x, dtype), Cast(bound, dtype)});
  }
  static const OpDef& op = Op("clamp");
  const Symbol<DType> dtype = PromoteTypes(PromoteTypes(x->dtype(), min->dtype()), max->dtype());
  return Apply1(op, {Cast(x, dtype), Cast(min, dtype), Cast(max, dtype)});
}

TensorPtr ClampScalar(const TensorPtr& x, double min, double max) {
  OF_CHECK(x) << "clamp: input 'x' is null";
  const auto bound = [&](double v, double unbounded) { return v == unbounded ? TensorPtr() : ScalarLike(x, v); };
  return Clamp(x, bound(min, -std::numeric_limits<double>::infinity()),
               bound(max, std::numeric_limits<double>::infinity()));
}

}  // namespace ops
}  // namespace oneflow
