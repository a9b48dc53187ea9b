// Elementwise binary ops (add sub mul div pow maximum minimum), comparisons (gt ge lt le eq ne), where
// and the logical ops. The ops:: functions broadcast and promote (the registry ops take inputs of one
// dtype); kernels read strided inputs and broadcast by stride 0 (core/ops/cpu/elementwise_loops.h).
#include <cmath>
#include <type_traits>

#include "core/op/dispatch.h"
#include "core/ops/fused.h"
#include "core/ops/cpu/elementwise_defs.h"
#include "core/ops/cpu/wrapping.h"
#include "core/ops/ops.h"
#include "core/ops/register.h"

namespace oneflow {

void RegisterUnaryOps(OpRegistry& registry);  // core/ops/unary.cpp

namespace {

using cpu::CheckDomain;
using cpu::Domain;
using cpu::ElementFn;
using cpu::ElementwiseOp;
using cpu::InferBinary;
using cpu::kIsBool;
using cpu::kIsFloating;
using cpu::SumTo;

using cpu::WrapType;

// ---- element functions ----------------------------------------------------------------------------
// Integer arithmetic wraps around (Note [Wrapping integer arithmetic]). On bool, add is "or" and mul
// is "and" (as PyTorch).

template <typename C, typename Fn>
C Wrapping(C a, C b, Fn fn) {
  if constexpr (std::is_integral_v<C>) {
    using U = WrapType<C>;
    return static_cast<C>(fn(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return fn(a, b);
  }
}

struct AddFn : ElementFn {
  template <typename T>
  static constexpr bool kFor = true;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsBool<C>) return a || b;
    else return Wrapping(a, b, [](auto x, auto y) { return x + y; });
  }
};
struct SubFn : ElementFn {
  template <typename C>
  C operator()(C a, C b) const {
    return Wrapping(a, b, [](auto x, auto y) { return x - y; });
  }
};
struct MulFn : ElementFn {
  template <typename T>
  static constexpr bool kFor = true;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsBool<C>) return a && b;
    else return Wrapping(a, b, [](auto x, auto y) { return x * y; });
  }
};
struct DivFn : ElementFn {
  template <typename T>
  static constexpr bool kFor = kIsFloating<T>;
  template <typename C>
  C operator()(C a, C b) const {
    return a / b;
  }
};
struct PowFn : ElementFn {
  static constexpr int64_t kGrain = cpu::kHeavyGrain;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::pow(a, b);
    } else {
      if constexpr (std::is_signed_v<C>) {
        if (b < 0) OF_THROW(InvalidArgument) << "integers to negative integer powers are not allowed";
      }
      using U = WrapType<C>;
      U result = 1, base = static_cast<U>(a);
      for (U e = static_cast<U>(b); e != 0; e >>= 1) {
        if (e & 1u) result *= base;
        base *= base;
      }
      return static_cast<C>(result);
    }
  }
};
struct SquareFn : ElementFn {
  template <typename T>
  static constexpr bool kFor = kIsFloating<T>;
  template <typename C>
  C operator()(C a) const {
    return a * a;
  }
};
// NaN wins, as in PyTorch.
template <typename C>
bool IsNan(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  else return false;
}
struct MaximumFn : ElementFn {
  template <typename T>
  static constexpr bool kFor = true;
  template <typename C>
  C operator()(C a, C b) const {
    return (IsNan(a) || a > b) ? a : b;
  }
};
struct MinimumFn : ElementFn {
  template <typename T>
  static constexpr bool kFor = true;
  template <typename C>
  C operator()(C a, C b) const {
    return (IsNan(a) || a < b) ? a : b;
  }
};

// Comparisons and logic: every dtype, bool results.
struct PredicateFn : ElementFn {
  static constexpr bool kBoolOut = true;
  template <typename T>
  static constexpr bool kFor = true;
};
#define OF_COMPARISON(Name, expr)         \
  struct Name : PredicateFn {             \
    template <typename C>                 \
    bool operator()(C a, C b) const {     \
      return expr;                        \
    }                                     \
  };
OF_COMPARISON(GtFn, a > b)
OF_COMPARISON(GeFn, a >= b)
OF_COMPARISON(LtFn, a < b)
OF_COMPARISON(LeFn, a <= b)
OF_COMPARISON(EqFn, a == b)
OF_COMPARISON(NeFn, a != b)
OF_COMPARISON(LogicalAndFn, a != C(0) && b != C(0))
OF_COMPARISON(LogicalOrFn, a != C(0) || b != C(0))
#undef OF_COMPARISON
struct LogicalNotFn : PredicateFn {
  template <typename C>
  bool operator()(C a) const {
    return a == C(0);
  }
};

// ---- kernels --------------------------------------------------------------------------------------
template <typename F>
void BinaryKernel(KernelContext& ctx) {
  cpu::MapKernel<F, 2>(ctx);
}

double FirstValue(const Tensor& t) {
  return VisitDType(t.dtype(), [&](auto tag) { return cpu::Convert<double>(t.data<typename decltype(tag)::type>()[0]); });
}

void PowKernel(KernelContext& ctx) {
  const Tensor& b = ctx.in(1);
  if (b.numel() == 1 && b.dtype()->is_floating_point() && FirstValue(b) == 2.0) {
    cpu::MapKernel<SquareFn, 1>(ctx);  // x ** 2: the output may have more dims than x, never more elements
    return;
  }
  cpu::MapKernel<PowFn, 2>(ctx);
}

void WhereKernel(KernelContext& ctx) {
  VisitDType(ctx.in(1).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = cpu::ComputeType<T>;
    cpu::ElementwiseLoop<T, bool, T, T>(ctx.pool, cpu::kSimpleGrain, ctx.out(0), {&ctx.in(0), &ctx.in(1), &ctx.in(2)},
                                        [](bool c, C x, C y) { return c ? x : y; });
  });
}

// ---- inference ------------------------------------------------------------------------------------
std::vector<TensorMeta> InferLogicalNot(std::span<const TensorMeta> in, const Attrs&) {
  return {TensorMeta{DType::Bool(), in[0].shape, in[0].device}};
}

std::vector<TensorMeta> InferWhere(std::span<const TensorMeta> in, const Attrs&) {
  OF_CHECK(in[0].dtype->is_bool()) << "cond must be bool, got " << in[0].dtype << " " << in[0].shape;
  OF_CHECK(in[1].dtype == in[2].dtype) << "a and b must have the same dtype, got " << in[1].dtype << " and "
                                       << in[2].dtype << " (ops::Where promotes them)";
  return {TensorMeta{in[1].dtype, BroadcastShapes(BroadcastShapes(in[0].shape, in[1].shape), in[2].shape),
                     in[1].device}};
}

// ---- backward -------------------------------------------------------------------------------------
std::vector<TensorPtr> AddBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  std::vector<TensorPtr> g(2);
  if (!dy) return g;
  if (ctx.needs_input_grad[0]) g[0] = SumTo(dy, ctx.inputs[0]);
  if (ctx.needs_input_grad[1]) g[1] = SumTo(dy, ctx.inputs[1]);
  return g;
}

std::vector<TensorPtr> SubBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  std::vector<TensorPtr> g(2);
  if (!dy) return g;
  if (ctx.needs_input_grad[0]) g[0] = SumTo(dy, ctx.inputs[0]);
  if (ctx.needs_input_grad[1]) g[1] = SumTo(ops::Neg(dy), ctx.inputs[1]);
  return g;
}

std::vector<TensorPtr> MulBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  const TensorPtr &a = ctx.inputs[0], &b = ctx.inputs[1];
  std::vector<TensorPtr> g(2);
  if (!dy) return g;
  if (ctx.needs_input_grad[0]) g[0] = SumTo(ops::Mul(dy, b), a);
  if (ctx.needs_input_grad[1]) g[1] = SumTo(ops::Mul(dy, a), b);
  return g;
}

std::vector<TensorPtr> DivBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  const TensorPtr &a = ctx.inputs[0], &b = ctx.inputs[1], &y = ctx.outputs[0];
  std::vector<TensorPtr> g(2);
  if (!dy) return g;
  if (ctx.needs_input_grad[0]) g[0] = SumTo(ops::Div(dy, b), a);
  if (ctx.needs_input_grad[1]) g[1] = SumTo(ops::Neg(ops::Div(ops::Mul(dy, y), b)), b);  // -dy * a / b^2
  return g;
}

// d/da = b * a^(b-1) (0 where b == 0), d/db = y * log(a) (0 where a == 0 and b >= 0), as PyTorch.
std::vector<TensorPtr> PowBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  const TensorPtr &a = ctx.inputs[0], &b = ctx.inputs[1], &y = ctx.outputs[0];
  std::vector<TensorPtr> g(2);
  if (!dy) return g;
  const TensorPtr zero = ops::ScalarLike(dy, 0.0);
  if (ctx.needs_input_grad[0]) {
    const TensorPtr d = ops::Mul(b, ops::Pow(a, ops::SubScalar(b, 1.0)));
    g[0] = SumTo(ops::Mul(dy, ops::Where(ops::EqScalar(b, 0.0), zero, d)), a);
  }
  if (ctx.needs_input_grad[1]) {
    const TensorPtr d = ops::Mul(y, ops::Log(a));
    const TensorPtr mask = ops::LogicalAnd(ops::EqScalar(a, 0.0), ops::GeScalar(b, 0.0));
    g[1] = SumTo(ops::Mul(dy, ops::Where(mask, zero, d)), b);
  }
  return g;
}

// The gradient goes to the operand that was selected, split evenly on ties (as PyTorch).
template <bool kMaximum>
std::vector<TensorPtr> ExtremumBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  const TensorPtr &a = ctx.inputs[0], &b = ctx.inputs[1];
  std::vector<TensorPtr> g(2);
  if (!dy) return g;
  const TensorPtr chosen = ops::Cast(kMaximum ? ops::Gt(a, b) : ops::Lt(a, b), dy->dtype());
  const TensorPtr tie = ops::MulScalar(ops::Cast(ops::Eq(a, b), dy->dtype()), 0.5);
  const TensorPtr ga = ops::Mul(dy, ops::Add(chosen, tie));
  if (ctx.needs_input_grad[0]) g[0] = SumTo(ga, a);
  if (ctx.needs_input_grad[1]) g[1] = SumTo(ops::Sub(dy, ga), b);
  return g;
}

std::vector<TensorPtr> WhereBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  const TensorPtr& cond = ctx.inputs[0];
  std::vector<TensorPtr> g(3);
  if (!dy) return g;
  const TensorPtr zero = ops::ScalarLike(dy, 0.0);
  if (ctx.needs_input_grad[1]) g[1] = SumTo(ops::Where(cond, dy, zero), ctx.inputs[1]);
  if (ctx.needs_input_grad[2]) g[2] = SumTo(ops::Where(cond, zero, dy), ctx.inputs[2]);
  return g;
}

// ---- registration ---------------------------------------------------------------------------------
template <typename F, Domain kDomain, bool kBoolOut = false>
OpDef BinaryOp(std::string name, BackwardFn backward, KernelFn kernel = BinaryKernel<F>) {
  return ElementwiseOp(std::move(name), {"a", "b"}, InferBinary<kDomain, kBoolOut>, backward, cpu::KernelDTypes<F>(),
                       kernel);
}

}  // namespace

void RegisterElementwiseOps(OpRegistry& registry) {
  registry.Register(Fusable(BinaryOp<AddFn, Domain::kAny>("add", AddBackward), FusedOpcode::kAdd));
  registry.Register(Fusable(BinaryOp<SubFn, Domain::kNotBool>("sub", SubBackward), FusedOpcode::kSub));
  registry.Register(Fusable(BinaryOp<MulFn, Domain::kAny>("mul", MulBackward), FusedOpcode::kMul));
  registry.Register(Fusable(BinaryOp<DivFn, Domain::kFloating>("div", DivBackward), FusedOpcode::kDiv));
  registry.Register(Fusable(BinaryOp<PowFn, Domain::kNotBool>("pow", PowBackward, PowKernel), FusedOpcode::kPow));
  registry.Register(Fusable(BinaryOp<MaximumFn, Domain::kAny>("maximum", ExtremumBackward<true>), FusedOpcode::kMaximum));
  registry.Register(Fusable(BinaryOp<MinimumFn, Domain::kAny>("minimum", ExtremumBackward<false>), FusedOpcode::kMinimum));
  registry.Register(BinaryOp<GtFn, Domain::kAny, true>("gt", nullptr));
  registry.Register(BinaryOp<GeFn, Domain::kAny, true>("ge", nullptr));
  registry.Register(BinaryOp<LtFn, Domain::kAny, true>("lt", nullptr));
  registry.Register(BinaryOp<LeFn, Domain::kAny, true>("le", nullptr));
  registry.Register(BinaryOp<EqFn, Domain::kAny, true>("eq", nullptr));
  registry.Register(BinaryOp<NeFn, Domain::kAny, true>("ne", nullptr));
  registry.Register(BinaryOp<LogicalAndFn, Domain::kAny, true>("logical_and", nullptr));
  registry.Register(BinaryOp<LogicalOrFn, Domain::kAny, true>("logical_or", nullptr));
  registry.Register(ElementwiseOp("logical_not", {"x"}, InferLogicalNot, nullptr, cpu::KernelDTypes<LogicalNotFn>(),
                                  cpu::MapKernel<LogicalNotFn, 1>));
  OpDef where = ElementwiseOp("where", {"cond", "a", "b"}, InferWhere, WhereBackward, kAllTypes, WhereKernel);
  where.dtype_input = 1;
  registry.Register(std::move(where));
  RegisterUnaryOps(registry);
}

// ---- the C++ API ----------------------------------------------------------------------------------
namespace ops {
namespace {

const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }

TensorPtr Scalar(std::string_view op, const TensorPtr& a, double value) {
  OF_CHECK(a) << op << ": input 'a' is null";
  return ScalarLike(a, value);
}

}  // namespace

#define OF_BINARY(Name, op_name, ...)                                                          \
  TensorPtr Name(const TensorPtr& a, const TensorPtr& b) {                                     \
    static const OpDef& op = Op(op_name);                                                      \
    return cpu::PromotedBinary(op, a, b __VA_OPT__(, ) __VA_ARGS__);                           \
  }                                                                                            \
  TensorPtr Name##Scalar(const TensorPtr& a, double b) { return Name(a, Scalar(op_name, a, b)); }
OF_BINARY(Add, "add")
OF_BINARY(Sub, "sub")
OF_BINARY(Mul, "mul")
OF_BINARY(Div, "div", true)
OF_BINARY(Pow, "pow")
OF_BINARY(Maximum, "maximum")
OF_BINARY(Minimum, "minimum")
OF_BINARY(Gt, "gt")
OF_BINARY(Ge, "ge")
OF_BINARY(Lt, "lt")
OF_BINARY(Le, "le")
OF_BINARY(Eq, "eq")
OF_BINARY(Ne, "ne")
#undef OF_BINARY

TensorPtr LogicalAnd(const TensorPtr& a, const TensorPtr& b) {
  static const OpDef& op = Op("logical_and");
  return cpu::PromotedBinary(op, a, b);
}
TensorPtr LogicalOr(const TensorPtr& a, const TensorPtr& b) {
  static const OpDef& op = Op("logical_or");
  return cpu::PromotedBinary(op, a, b);
}
TensorPtr LogicalNot(const TensorPtr& a) {
  static const OpDef& op = Op("logical_not");
  return Apply1(op, {a});
}

TensorPtr Where(const TensorPtr& cond, const TensorPtr& a, const TensorPtr& b) {
  static const OpDef& op = Op("where");
  OF_CHECK(cond) << "where: input 'cond' is null";
  cpu::CheckOperands("where", a, b);
  const Symbol<DType> dtype = PromoteTypes(a->dtype(), b->dtype());
  return Apply1(op, {cond, Cast(a, dtype), Cast(b, dtype)});
}

}  // namespace ops
}  // namespace oneflow
