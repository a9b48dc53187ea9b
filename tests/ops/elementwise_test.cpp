// Elementwise ops: every op x kernel dtype against float64 reference loops written here (broadcasting,
// 0-d, size-1, odd and empty shapes, non-contiguous views, sizes that take the parallel paths), type
// promotion and scalar operands, errors, symbolic-shape inference, and finite-difference gradients.
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "core/op/dispatch.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

using Fn1 = std::function<TensorPtr(const TensorPtr&)>;
using Fn2 = std::function<TensorPtr(const TensorPtr&, const TensorPtr&)>;
using Ref1 = std::function<double(double)>;
using Ref2 = std::function<double(double, double)>;

const std::vector<DataType>& KernelTypes(const std::string& op) {
  return OpRegistry::Global().Get(op).kernels.at(0).dtypes;
}

// Values in [lo, hi) (clipped at 0 for unsigned dtypes), integer-valued when `integral`.
TensorPtr Random(Symbol<DType> dtype, const Shape& shape, double lo, double hi, bool integral = false) {
  if (dtype->is_integer() && !dtype->is_signed()) {
    lo = std::max(lo, 0.0);
    hi = std::max(hi, lo + 1);
  }
  if (!integral || dtype->is_bool()) return RandomTensor(dtype, shape, lo, hi);
  std::vector<double> v = ToDoubles(RandomTensor(DType::Float64(), shape, lo, hi));
  for (double& x : v) x = std::floor(x);
  return FromDoubles(dtype, shape, v);
}

double AtolFor(Symbol<DType> dtype) { return std::max(1e-6, RtolFor(dtype)); }

// ---- binary ops -----------------------------------------------------------------------------------
struct BinaryCase {
  Shape a, b, out;
  bool non_contiguous;
};
const std::vector<BinaryCase> kBinaryCases = {
    {{3, 1, 5}, {4, 5}, {3, 4, 5}, false},  {{4, 5}, {3, 1, 5}, {3, 4, 5}, true}, {{}, {7}, {7}, false},
    {{13}, {}, {13}, true},                 {{1}, {1}, {1}, false},               {{7}, {7}, {7}, true},
    {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}, true}, {{0, 3}, {1, 3}, {0, 3}, false},     {{}, {}, {}, false},
    {{2, 1}, {1, 13}, {2, 13}, false},      {{5, 1}, {5, 13}, {5, 13}, true},
};

struct BinarySpec {
  std::string op;
  Fn2 fn;
  Ref2 ref;
  double a_lo = -2, a_hi = 2, b_lo = -2, b_hi = 2;
  bool integral = false;  // integer-valued inputs (ties for comparisons, zeros for logic)
  bool bool_out = false;
};

void CheckBinary(const BinarySpec& s) {
  for (DataType d : KernelTypes(s.op)) {
    const Symbol<DType> t = DType::Get(d);
    const Symbol<DType> out_t = s.bool_out ? DType::Bool() : t;
    for (const BinaryCase& c : kBinaryCases) {
      SCOPED_TRACE(s.op + " " + std::string(t->name()) + " " + c.a.ToString() + " with " + c.b.ToString() +
                   (c.non_contiguous ? " (non-contiguous)" : ""));
      TensorPtr a = Random(t, c.a, s.a_lo, s.a_hi, s.integral);
      TensorPtr b = Random(t, c.b, s.b_lo, s.b_hi, s.integral);
      if (c.non_contiguous) {
        a = NonContiguous(a);
        b = NonContiguous(b);
      }
      const TensorPtr y = s.fn(a, b);
      const std::vector<double> expected =
          BroadcastRef(c.out, {&a, &b}, [&](const std::vector<double>& v) { return InDType(s.ref(v[0], v[1]), out_t); });
      ExpectTensorNear(y, out_t, c.out, expected, RtolFor(t), AtolFor(t));
      EXPECT_TRUE(y->is_contiguous());
    }
    MarkCovered(s.op, t);
  }
}

TEST(ElementwiseBinary, Arithmetic) {
  CheckBinary({"add", ops::Add, [](double a, double b) { return a + b; }});
  CheckBinary({"sub", ops::Sub, [](double a, double b) { return a - b; }});
  CheckBinary({"mul", ops::Mul, [](double a, double b) { return a * b; }});
  CheckBinary({"div", ops::Div, [](double a, double b) { return a / b; }, -2, 2, 0.25, 2});
  CheckBinary({"maximum", ops::Maximum, [](double a, double b) { return a > b ? a : b; }, -2, 2, -2, 2, true});
  CheckBinary({"minimum", ops::Minimum, [](double a, double b) { return a < b ? a : b; }, -2, 2, -2, 2, true});
}

TEST(ElementwiseBinary, Pow) {
  // Every dtype with non-negative bases and exponents; then negative integer bases and negative
  // floating exponents; then exponent 2 as a scalar, which takes the squaring path.
  CheckBinary({"pow", ops::Pow, [](double a, double b) { return std::pow(a, b); }, 0.25, 3, 0, 3});
  for (DataType d : KernelTypes("pow")) {
    const Symbol<DType> t = DType::Get(d);
    SCOPED_TRACE(std::string(t->name()));
    const bool floating = t->is_floating_point();
    const TensorPtr a = floating ? Random(t, {3, 7}, 0.25, 3) : Random(t, {3, 7}, -3, 4, true);
    const TensorPtr b = floating ? Random(t, {7}, -2, 0) : Random(t, {7}, 0, 4, true);
    ExpectTensorNear(ops::Pow(a, b), t, {3, 7},
                     BroadcastRef({3, 7}, {&a, &b}, [&](const auto& v) { return InDType(std::pow(v[0], v[1]), t); }),
                     RtolFor(t), AtolFor(t));
  }
  const TensorPtr x = Random(DType::Float32(), {2, 5}, -3, 3);
  const TensorPtr two = FromDoubles(DType::Float32(), {1, 1, 1}, {2.0});
  ExpectTensorNear(ops::Pow(x, two), DType::Float32(), {1, 2, 5},
                   BroadcastRef({1, 2, 5}, {&x}, [](const auto& v) { return v[0] * v[0]; }));
  ExpectTensorNear(ops::PowScalar(x, 3.0), DType::Float32(), {2, 5},
                   BroadcastRef({2, 5}, {&x}, [](const auto& v) { return v[0] * v[0] * v[0]; }), 1e-5, 1e-5);
}

TEST(ElementwiseBinary, Comparisons) {
  const auto cmp = [](std::string op, Fn2 fn, Ref2 ref) {
    CheckBinary({std::move(op), std::move(fn), std::move(ref), -3, 3, -3, 3, true, true});
  };
  cmp("gt", ops::Gt, [](double a, double b) { return a > b; });
  cmp("ge", ops::Ge, [](double a, double b) { return a >= b; });
  cmp("lt", ops::Lt, [](double a, double b) { return a < b; });
  cmp("le", ops::Le, [](double a, double b) { return a <= b; });
  cmp("eq", ops::Eq, [](double a, double b) { return a == b; });
  cmp("ne", ops::Ne, [](double a, double b) { return a != b; });
  cmp("logical_and", ops::LogicalAnd, [](double a, double b) { return a != 0 && b != 0; });
  cmp("logical_or", ops::LogicalOr, [](double a, double b) { return a != 0 || b != 0; });
}

TEST(ElementwiseBinary, NanPropagatesThroughMaximumAndMinimum) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const TensorPtr a = FromDoubles(DType::Float32(), {3}, {nan, 1.0, 2.0});
  const TensorPtr b = FromDoubles(DType::Float32(), {3}, {1.0, nan, 3.0});
  ExpectTensorNear(ops::Maximum(a, b), DType::Float32(), {3}, {nan, nan, 3.0});
  ExpectTensorNear(ops::Minimum(a, b), DType::Float32(), {3}, {nan, nan, 2.0});
}

// Sizes above the parallel grain, through the flat path (contiguous, scalar operand) and the general
// path (broadcast in several dims, non-contiguous).
TEST(ElementwiseBinary, LargeInputsTakeTheParallelPaths) {
  const Symbol<DType> f32 = DType::Float32();
  const TensorPtr a = Random(f32, {3, 70001}, -2, 2), b = Random(f32, {3, 70001}, -2, 2);
  const TensorPtr s = Random(f32, {}, -2, 2);
  ExpectTensorNear(ops::Add(a, b), f32, {3, 70001}, BroadcastRef({3, 70001}, {&a, &b}, [](const auto& v) { return v[0] + v[1]; }));
  ExpectTensorNear(ops::Mul(s, a), f32, {3, 70001}, BroadcastRef({3, 70001}, {&s, &a}, [](const auto& v) { return v[0] * v[1]; }));
  const TensorPtr p = Random(f32, {64, 1, 129}, -2, 2), q = Random(f32, {1, 40, 1}, -2, 2);
  ExpectTensorNear(ops::Sub(p, q), f32, {64, 40, 129}, BroadcastRef({64, 40, 129}, {&p, &q}, [](const auto& v) { return v[0] - v[1]; }));
  const TensorPtr n = NonContiguous(Random(f32, {300, 257}, -2, 2)), m = Random(f32, {257}, -2, 2);
  ExpectTensorNear(ops::Maximum(n, m), f32, {300, 257},
                   BroadcastRef({300, 257}, {&n, &m}, [](const auto& v) { return std::max(v[0], v[1]); }));
  const TensorPtr c = Random(DType::Bool(), {300, 1}, 0, 1);
  ExpectTensorNear(ops::Where(c, n, m), f32, {300, 257},
                   BroadcastRef({300, 257}, {&c, &n, &m}, [](const auto& v) { return v[0] != 0 ? v[1] : v[2]; }));
}

TEST(ElementwiseWhere, EveryDType) {
  const std::vector<std::vector<Shape>> cases = {
      {{3, 1, 5}, {4, 5}, {3, 4, 1}, {3, 4, 5}}, {{7}, {}, {7}, {7}}, {{}, {13}, {}, {13}},
      {{2, 3}, {2, 3}, {2, 3}, {2, 3}},          {{0}, {1}, {0}, {0}}, {{1}, {1}, {1}, {1}},
  };
  for (DataType d : KernelTypes("where")) {
    const Symbol<DType> t = DType::Get(d);
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::vector<Shape>& c = cases[i];
      SCOPED_TRACE(std::string(t->name()) + " case " + std::to_string(i));
      TensorPtr cond = Random(DType::Bool(), c[0], 0, 1), a = Random(t, c[1], -3, 3), b = Random(t, c[2], -3, 3);
      if (i % 2 == 0) {
        cond = NonContiguous(cond);
        a = NonContiguous(a);
        b = NonContiguous(b);
      }
      ExpectTensorNear(ops::Where(cond, a, b), t, c[3],
                       BroadcastRef(c[3], {&cond, &a, &b}, [](const auto& v) { return v[0] != 0 ? v[1] : v[2]; }),
                       RtolFor(t), AtolFor(t));
    }
    MarkCovered("where", t);
  }
}

// ---- unary ops ------------------------------------------------------------------------------------
struct UnaryCase {
  Shape shape;
  bool non_contiguous;
};
const std::vector<UnaryCase> kUnaryCases = {{{7}, false}, {{13}, true}, {{3, 1, 5}, false}, {{}, false},
                                            {{0}, false}, {{2, 3, 4}, true}, {{1}, false}};

struct UnarySpec {
  std::string op;
  Fn1 fn;
  Ref1 ref;
  double lo = -3, hi = 3;
  double rtol_scale = 1;  // on RtolFor (for functions whose float rounding is amplified)
};

void CheckUnary(const UnarySpec& s) {
  for (DataType d : KernelTypes(s.op)) {
    const Symbol<DType> t = DType::Get(d);
    for (const UnaryCase& c : kUnaryCases) {
      SCOPED_TRACE(s.op + " " + std::string(t->name()) + " " + c.shape.ToString() +
                   (c.non_contiguous ? " (non-contiguous)" : ""));
      TensorPtr x = Random(t, c.shape, s.lo, s.hi, t->is_integer());
      if (c.non_contiguous) x = NonContiguous(x);
      const TensorPtr y = s.fn(x);
      ExpectTensorNear(y, t, c.shape, BroadcastRef(c.shape, {&x}, [&](const auto& v) { return InDType(s.ref(v[0]), t); }),
                       RtolFor(t) * s.rtol_scale, AtolFor(t));
      EXPECT_TRUE(y->is_contiguous());
    }
    MarkCovered(s.op, t);
  }
}

double GeluRef(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double GeluTanhRef(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

TEST(ElementwiseUnary, EveryOpAndDType) {
  CheckUnary({"neg", ops::Neg, [](double x) { return -x; }});
  CheckUnary({"abs", ops::Abs, [](double x) { return std::fabs(x); }});
  CheckUnary({"relu", ops::Relu, [](double x) { return x > 0 ? x : 0.0; }});
  CheckUnary({"exp", ops::Exp, [](double x) { return std::exp(x); }});
  CheckUnary({"log", ops::Log, [](double x) { return std::log(x); }, 0.1, 4});
  CheckUnary({"sqrt", ops::Sqrt, [](double x) { return std::sqrt(x); }, 0, 4});
  CheckUnary({"rsqrt", ops::Rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.1, 4});
  CheckUnary({"sigmoid", ops::Sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }});
  CheckUnary({"tanh", ops::Tanh, [](double x) { return std::tanh(x); }});
  CheckUnary({"gelu", [](const TensorPtr& x) { return ops::Gelu(x); }, GeluRef});
  CheckUnary({"gelu", [](const TensorPtr& x) { return ops::Gelu(x, true); }, GeluTanhRef});
}

TEST(ElementwiseUnary, SpecialValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const TensorPtr x = FromDoubles(DType::Float32(), {4}, {nan, -inf, 0.0, inf});
  ExpectTensorNear(ops::Relu(x), DType::Float32(), {4}, {nan, 0.0, 0.0, inf});
  ExpectTensorNear(ops::Sigmoid(x), DType::Float32(), {4}, {nan, 0.0, 0.5, 1.0});
  ExpectTensorNear(ops::Exp(x), DType::Float32(), {4}, {nan, 0.0, 1.0, inf});
  ExpectTensorNear(ops::Log(x), DType::Float32(), {4}, {nan, nan, -inf, inf});
  // Integer negation and abs wrap like two's complement (as PyTorch).
  const TensorPtr i8 = FromDoubles(DType::Int8(), {3}, {-128, 127, -5});
  ExpectTensorNear(ops::Neg(i8), DType::Int8(), {3}, {-128, -127, 5});
  ExpectTensorNear(ops::Abs(i8), DType::Int8(), {3}, {-128, 127, 5});
}

// Sizes above the parallel grains (cheap and transcendental functions), contiguous and not.
TEST(ElementwiseUnary, LargeInputsTakeTheParallelPaths) {
  const Symbol<DType> f32 = DType::Float32();
  const TensorPtr x = Random(f32, {3, 70001}, -3, 3), n = NonContiguous(Random(DType::Float64(), {20, 1001}, -3, 3));
  ExpectTensorNear(ops::Relu(x), f32, {3, 70001}, BroadcastRef({3, 70001}, {&x}, [](const auto& v) { return std::max(v[0], 0.0); }));
  ExpectTensorNear(ops::Exp(x), f32, {3, 70001}, BroadcastRef({3, 70001}, {&x}, [](const auto& v) { return std::exp(v[0]); }),
                   RtolFor(f32));
  ExpectTensorNear(ops::Tanh(n), DType::Float64(), {20, 1001},
                   BroadcastRef({20, 1001}, {&n}, [](const auto& v) { return std::tanh(v[0]); }), 1e-12, 1e-12);
  ExpectTensorNear(ops::Cast(x, DType::Float16()), DType::Float16(), {3, 70001},
                   BroadcastRef({3, 70001}, {&x}, [](const auto& v) { return v[0]; }), RtolFor(DType::Float16()));
}

// The dedicated backward ops of the activations: (dy, saved) -> dx.
TEST(ElementwiseUnary, ActivationBackwardOps) {
  const auto check = [](const std::string& op, Attrs attrs, const std::function<double(double, double)>& ref) {
    for (DataType d : KernelTypes(op)) {
      const Symbol<DType> t = DType::Get(d);
      for (const UnaryCase& c : kUnaryCases) {
        SCOPED_TRACE(op + " " + std::string(t->name()) + " " + c.shape.ToString());
        TensorPtr dy = Random(t, c.shape, -2, 2), saved = Random(t, c.shape, -1, 1);
        if (c.non_contiguous) saved = NonContiguous(saved);
        const TensorPtr dx = Apply1(OpRegistry::Global().Get(op), {dy, saved}, attrs);
        ExpectTensorNear(dx, t, c.shape, BroadcastRef(c.shape, {&dy, &saved}, [&](const auto& v) { return ref(v[0], v[1]); }),
                         RtolFor(t) * 4, AtolFor(t));
      }
      MarkCovered(op, t);
    }
  };
  check("relu_backward", {}, [](double dy, double y) { return y > 0 ? dy : 0.0; });
  check("sigmoid_backward", {}, [](double dy, double y) { return dy * y * (1 - y); });
  check("tanh_backward", {}, [](double dy, double y) { return dy * (1 - y * y); });
  const double k = std::sqrt(2 / std::numbers::pi);
  check("gelu_backward", {{"tanh_approximation", false}}, [](double dy, double x) {
    return dy * (0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-x * x / 2) / std::sqrt(2 * std::numbers::pi));
  });
  check("gelu_backward", {{"tanh_approximation", true}}, [k](double dy, double x) {
    const double t = std::tanh(k * (x + 0.044715 * x * x * x));
    return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x));
  });
}

// ---- cast -----------------------------------------------------------------------------------------
TEST(ElementwiseCast, EveryPairOfDTypes) {
  for (DataType from : KernelTypes("cast")) {
    const Symbol<DType> src = DType::Get(from);
    for (DataType to : kAllTypes) {
      const Symbol<DType> dst = DType::Get(to);
      SCOPED_TRACE(std::string(src->name()) + " -> " + std::string(dst->name()));
      // Fractional values of both signs for floating sources (truncation toward zero; negative values
      // wrap in unsigned targets, as PyTorch on x86).
      const TensorPtr x = NonContiguous(Random(src, {3, 7}, -3, 3, !src->is_floating_point()));
      const TensorPtr y = ops::Cast(x, dst);
      if (src == dst) {
        EXPECT_EQ(y.get(), x.get()) << "a cast to the same dtype returns its input";
        continue;
      }
      ExpectTensorNear(y, dst, {3, 7}, BroadcastRef({3, 7}, {&x}, [&](const auto& v) { return InDType(v[0], dst); }),
                       std::max(RtolFor(src), RtolFor(dst)), AtolFor(dst));
      EXPECT_TRUE(y->is_contiguous());
    }
    MarkCovered("cast", src);
  }
}

TEST(ElementwiseCast, EdgeValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const TensorPtr x = FromDoubles(DType::Float32(), {6}, {-2.7, 2.7, -1.0, nan, 300.0, inf});
  // Out of range: saturated to int64 first, then wrapped (inf -> INT64_MAX -> -1 in int32, 255 in uint8).
  ExpectTensorNear(ops::Cast(x, DType::Int32()), DType::Int32(), {6}, {-2, 2, -1, 0, 300, -1});
  ExpectTensorNear(ops::Cast(x, DType::UInt8()), DType::UInt8(), {6}, {254, 2, 255, 0, 44, 255});
  ExpectTensorNear(ops::Cast(x, DType::Bool()), DType::Bool(), {6}, {1, 1, 1, 1, 1, 1});
  ExpectTensorNear(ops::Cast(x, DType::Float16()), DType::Float16(), {6}, {-2.69921875, 2.69921875, -1, nan, 300, inf});
  const TensorPtr big = FromDoubles(DType::Float64(), {2}, {1e6, -1e6});
  ExpectTensorNear(ops::Cast(big, DType::Float16()), DType::Float16(), {2}, {inf, -inf});
  ExpectTensorNear(ops::Cast(ops::Cast(big, DType::BFloat16()), DType::Float16()), DType::Float16(), {2}, {inf, -inf});
}

// ---- promotion and scalar operands ----------------------------------------------------------------
TEST(ElementwisePromotion, MixedDTypes) {
  const TensorPtr i32 = FromDoubles(DType::Int32(), {3}, {1, 2, 3});
  const TensorPtr f32 = FromDoubles(DType::Float32(), {3}, {0.5, 0.25, -1});
  ExpectTensorNear(ops::Add(i32, f32), DType::Float32(), {3}, {1.5, 2.25, 2});
  const TensorPtr u8 = FromDoubles(DType::UInt8(), {2}, {200, 3});
  const TensorPtr i8 = FromDoubles(DType::Int8(), {2}, {100, -4});
  ExpectTensorNear(ops::Add(u8, i8), DType::Int16(), {2}, {300, -1});
  const TensorPtr t = FromDoubles(DType::Bool(), {3}, {1, 1, 0});
  const TensorPtr f = FromDoubles(DType::Bool(), {3}, {1, 0, 0});
  ExpectTensorNear(ops::Add(t, f), DType::Bool(), {3}, {1, 1, 0});  // or, as PyTorch
  ExpectTensorNear(ops::Mul(t, f), DType::Bool(), {3}, {1, 0, 0});  // and
  const TensorPtr small = FromDoubles(DType::Int8(), {3}, {1, 2, 3});
  ExpectTensorNear(ops::Add(t, small), DType::Int8(), {3}, {2, 3, 3});
  const TensorPtr h = FromDoubles(DType::Float16(), {1}, {1.5});
  const TensorPtr bf = FromDoubles(DType::BFloat16(), {1}, {2.0});
  ExpectTensorNear(ops::Mul(h, bf), DType::Float32(), {1}, {3.0});
  const TensorPtr f64 = FromDoubles(DType::Float64(), {3}, {9, 8, 7});
  ExpectTensorNear(ops::Where(t, i32, f64), DType::Float64(), {3}, {1, 2, 7});
  ExpectTensorNear(ops::Gt(i32, f32), DType::Bool(), {3}, {1, 1, 1});
  // Integer overflow wraps (two's complement).
  const TensorPtr big = FromDoubles(DType::Int8(), {2}, {100, -100});
  ExpectTensorNear(ops::Add(big, big), DType::Int8(), {2}, {-56, 56});
  const TensorPtr i16 = FromDoubles(DType::Int16(), {2}, {300, -300});
  ExpectTensorNear(ops::Mul(i16, i16), DType::Int16(), {2}, {24464, 24464});  // 90000 mod 2^16
  ExpectTensorNear(ops::PowScalar(i16, 3), DType::Int16(), {2}, {-832, 832});  // 27000000 = 64704 mod 2^16
  const TensorPtr i32max = FromDoubles(DType::Int32(), {1}, {2147483647.0});
  ExpectTensorNear(ops::AddScalar(i32max, 1), DType::Int32(), {1}, {-2147483648.0});
}

TEST(ElementwisePromotion, DivisionAndTranscendentalOpsOfIntegersGiveFloat32) {
  const TensorPtr a = FromDoubles(DType::Int64(), {3}, {7, -7, 1});
  const TensorPtr b = FromDoubles(DType::Int32(), {3}, {2, 2, 4});
  ExpectTensorNear(ops::Div(a, b), DType::Float32(), {3}, {3.5, -3.5, 0.25});
  ExpectTensorNear(ops::DivScalar(a, 2), DType::Float32(), {3}, {3.5, -3.5, 0.5});
  ExpectTensorNear(ops::Exp(b), DType::Float32(), {3}, {std::exp(2.0), std::exp(2.0), std::exp(4.0)}, 1e-6);
  ExpectTensorNear(ops::Sqrt(b), DType::Float32(), {3}, {std::sqrt(2.0), std::sqrt(2.0), 2.0});
  const TensorPtr flags = FromDoubles(DType::Bool(), {2}, {1, 0});
  ExpectTensorNear(ops::Sigmoid(flags), DType::Float32(), {2}, {1 / (1 + std::exp(-1.0)), 0.5});
  ExpectTensorNear(ops::Gelu(flags, true), DType::Float32(), {2}, {GeluTanhRef(1.0), 0.0});
}

TEST(ElementwisePromotion, ScalarOperands) {
  const TensorPtr i = FromDoubles(DType::Int32(), {3}, {0, 1, 2});
  // int tensor compared with 0.5 compares in float (0 >= 0.5 is false, not 0 >= 0).
  ExpectTensorNear(ops::GeScalar(i, 0.5), DType::Bool(), {3}, {0, 1, 1});
  ExpectTensorNear(ops::LtScalar(i, 0.5), DType::Bool(), {3}, {1, 0, 0});
  ExpectTensorNear(ops::GtScalar(i, 1), DType::Bool(), {3}, {0, 0, 1});
  ExpectTensorNear(ops::LeScalar(i, 1), DType::Bool(), {3}, {1, 1, 0});
  ExpectTensorNear(ops::EqScalar(i, 1), DType::Bool(), {3}, {0, 1, 0});
  ExpectTensorNear(ops::NeScalar(i, 1), DType::Bool(), {3}, {1, 0, 1});
  // int tensor + 2 stays int; + 2.5 becomes float32.
  ExpectTensorNear(ops::AddScalar(i, 2), DType::Int32(), {3}, {2, 3, 4});
  ExpectTensorNear(ops::AddScalar(i, 2.5), DType::Float32(), {3}, {2.5, 3.5, 4.5});
  ExpectTensorNear(ops::SubScalar(i, 1), DType::Int32(), {3}, {-1, 0, 1});
  ExpectTensorNear(ops::MulScalar(i, -3), DType::Int32(), {3}, {0, -3, -6});
  ExpectTensorNear(ops::PowScalar(i, 2), DType::Int32(), {3}, {0, 1, 4});
  ExpectTensorNear(ops::MaximumScalar(i, 1), DType::Int32(), {3}, {1, 1, 2});
  ExpectTensorNear(ops::MinimumScalar(i, 1), DType::Int32(), {3}, {0, 1, 1});
  const TensorPtr h = FromDoubles(DType::Float16(), {2}, {1, 2});
  ExpectTensorNear(ops::MulScalar(h, 0.5), DType::Float16(), {2}, {0.5, 1});  // float scalar keeps float16
  const TensorPtr u8 = FromDoubles(DType::UInt8(), {2}, {1, 2});
  // Out of uint8's range: refused, never widened (the dtype must not depend on the value).
  ExpectError([&] { ops::AddScalar(u8, 1000); }, StatusCode::kInvalidArgument, {"scalar 1000", "uint8"});
  const TensorPtr b = FromDoubles(DType::Bool(), {2}, {1, 0});
  ExpectTensorNear(ops::AddScalar(b, 2), DType::Int64(), {2}, {3, 2});
}

TEST(ElementwiseLogic, AnyDTypeIsReadAsTruth) {
  const TensorPtr f = FromDoubles(DType::Float32(), {4}, {0, -0.5, 2, 0});
  const TensorPtr i = FromDoubles(DType::Int64(), {4}, {3, 0, 1, 0});
  ExpectTensorNear(ops::LogicalAnd(f, i), DType::Bool(), {4}, {0, 0, 1, 0});
  ExpectTensorNear(ops::LogicalOr(f, i), DType::Bool(), {4}, {1, 1, 1, 0});
  for (DataType d : KernelTypes("logical_not")) {
    const Symbol<DType> t = DType::Get(d);
    SCOPED_TRACE(std::string(t->name()));
    for (const UnaryCase& c : kUnaryCases) {
      TensorPtr x = Random(t, c.shape, -1, 2, true);
      if (c.non_contiguous) x = NonContiguous(x);
      ExpectTensorNear(ops::LogicalNot(x), DType::Bool(), c.shape,
                       BroadcastRef(c.shape, {&x}, [](const auto& v) { return v[0] == 0 ? 1.0 : 0.0; }));
    }
    MarkCovered("logical_not", t);
  }
}

// ---- errors ---------------------------------------------------------------------------------------

TEST(ElementwiseErrors, BadInputs) {
  const TensorPtr a = Random(DType::Float32(), {3, 4}, -1, 1), b = Random(DType::Float32(), {5}, -1, 1);
  ExpectError([&] { ops::Add(a, b); }, StatusCode::kInvalidArgument, {"add", "(3, 4)", "(5,)"});
  ExpectError([&] { ops::Gt(a, b); }, StatusCode::kInvalidArgument, {"gt", "(3, 4)", "(5,)"});
  ExpectError([&] { ops::Where(a, a, a); }, StatusCode::kInvalidArgument, {"where", "cond", "bool", "float32"});
  const TensorPtr mask = Random(DType::Bool(), {2, 4}, 0, 1);
  ExpectError([&] { ops::Where(mask, a, a); }, StatusCode::kInvalidArgument, {"where", "(2, 4)", "(3, 4)"});
  ExpectError([&] { ops::Sub(mask, mask); }, StatusCode::kInvalidArgument, {"sub", "bool"});
  ExpectError([&] { ops::Neg(mask); }, StatusCode::kInvalidArgument, {"neg", "bool"});
  ExpectError([&] { ops::Add(a, nullptr); }, StatusCode::kInvalidArgument, {"add", "'b'", "null"});
  ExpectError([&] { ops::Exp(nullptr); }, StatusCode::kInvalidArgument, {"exp", "null"});
  ExpectError([&] { ops::Cast(nullptr, DType::Float32()); }, StatusCode::kInvalidArgument, {"cast", "null"});
  const TensorPtr i = FromDoubles(DType::Int32(), {2}, {2, 3});
  ExpectError([&] { ops::PowScalar(i, -1); }, StatusCode::kInvalidArgument, {"pow", "negative"});
  // The registry ops take one dtype; the ops:: functions promote.
  ExpectError([&] { Apply1(OpRegistry::Global().Get("add"), {a, i}); }, StatusCode::kInvalidArgument,
              {"add", "float32", "int32"});
  ExpectError([&] { Apply1(OpRegistry::Global().Get("exp"), {i}); }, StatusCode::kInvalidArgument,
              {"exp", "floating", "int32"});
}

// Inference runs on symbolic shapes (the lazy graph calls the same functions).
TEST(ElementwiseInference, SymbolicDims) {
  const Dim n = Dim::NewSymbol("N");
  const Symbol<DType> f32 = DType::Float32();
  const auto infer = [](const std::string& op, std::vector<TensorMeta> in, const Attrs& attrs = {}) {
    return OpRegistry::Global().Get(op).infer(in, attrs).at(0);
  };
  TensorMeta m = infer("add", {{f32, {n, 4}, Device::CPU()}, {f32, {1, 4}, Device::CPU()}});
  EXPECT_EQ(m.shape, Shape({n, 4}));
  m = infer("mul", {{f32, {Dim::Unknown(), 1}, Device::CPU()}, {f32, {3, 5}, Device::CPU()}});
  EXPECT_EQ(m.shape, Shape({3, 5}));
  m = infer("gt", {{f32, {n}, Device::CPU()}, {f32, {n}, Device::CPU()}});
  EXPECT_EQ(m.shape, Shape({n}));
  EXPECT_EQ(m.dtype, DType::Bool());
  m = infer("where", {{DType::Bool(), {n, 1}, Device::CPU()}, {f32, {1, 7}, Device::CPU()}, {f32, {}, Device::CPU()}});
  EXPECT_EQ(m.shape, Shape({n, 7}));
  m = infer("cast", {{f32, {n, Dim::Unknown()}, Device::CPU()}}, {{"dtype", DType::Int8()}});
  EXPECT_EQ(m.shape, Shape({n, Dim::Unknown()}));
  EXPECT_EQ(m.dtype, DType::Int8());
  m = infer("relu_backward", {{f32, {n, 3}, Device::CPU()}, {f32, {n, 3}, Device::CPU()}});
  EXPECT_EQ(m.shape, Shape({n, 3}));
}

// ---- gradients (float64, finite differences) ------------------------------------------------------
TensorPtr Leaf(const Shape& shape, double lo, double hi) {
  TensorPtr t = Random(DType::Float64(), shape, lo, hi);
  t->set_requires_grad(true);
  return t;
}

void CheckBinaryGrad(const Fn2& fn, double a_lo, double a_hi, double b_lo, double b_hi) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 1, 5}, {4, 5}}, {{7}, {7}}, {{}, {7}}, {{2, 3}, {}}, {{2, 1}, {1, 3}}};
  for (const auto& [sa, sb] : shapes) {
    SCOPED_TRACE(sa.ToString() + " with " + sb.ToString());
    ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return fn(in[0], in[1]); },
                         {Leaf(sa, a_lo, a_hi), Leaf(sb, b_lo, b_hi)});
  }
}

TEST(ElementwiseGrad, Binary) {
  CheckBinaryGrad(ops::Add, -2, 2, -2, 2);
  CheckBinaryGrad(ops::Sub, -2, 2, -2, 2);
  CheckBinaryGrad(ops::Mul, -2, 2, -2, 2);
  CheckBinaryGrad(ops::Div, -2, 2, 0.5, 2);
  CheckBinaryGrad(ops::Pow, 0.5, 2, -1.5, 1.5);
  CheckBinaryGrad(ops::Maximum, -2, 2, -2, 2);
  CheckBinaryGrad(ops::Minimum, -2, 2, -2, 2);
}

TEST(ElementwiseGrad, ScalarOperandsAndWhere) {
  const std::vector<TensorPtr> x = {Leaf({3, 4}, 0.5, 2)};
  ExpectGradientsMatch([](const auto& in) { return ops::PowScalar(in[0], 2); }, x);
  ExpectGradientsMatch([](const auto& in) { return ops::PowScalar(in[0], -0.5); }, x);
  ExpectGradientsMatch([](const auto& in) { return ops::DivScalar(in[0], 3); }, x);
  ExpectGradientsMatch([](const auto& in) { return ops::SubScalar(in[0], 3); }, x);
  ExpectGradientsMatch([](const auto& in) { return ops::MaximumScalar(in[0], 1.2); }, x);
  const TensorPtr cond = Random(DType::Bool(), {3, 1, 5}, 0, 1);
  ExpectGradientsMatch([&](const auto& in) { return ops::Where(cond, in[0], in[1]); },
                       {Leaf({4, 5}, -1, 1), Leaf({3, 4, 1}, -1, 1)});
  ExpectGradientsMatch([&](const auto& in) { return ops::Where(cond, in[0], in[1]); }, {Leaf({}, -1, 1), Leaf({5}, -1, 1)});
}

TEST(ElementwiseGrad, MaximumSplitsTiesEvenly) {
  const TensorPtr a = FromDoubles(DType::Float64(), {2}, {1, 2});
  const TensorPtr b = FromDoubles(DType::Float64(), {2}, {1, 3});
  a->set_requires_grad(true);
  b->set_requires_grad(true);
  Backward({ops::Maximum(a, b)}, {FromDoubles(DType::Float64(), {2}, {1, 1})});
  ExpectTensorNear(a->grad(), DType::Float64(), {2}, {0.5, 0});
  ExpectTensorNear(b->grad(), DType::Float64(), {2}, {0.5, 1});
}

TEST(ElementwiseGrad, Unary) {
  const auto check = [](const Fn1& fn, double lo, double hi) {
    ExpectGradientsMatch([&](const auto& in) { return fn(in[0]); }, {Leaf({3, 5}, lo, hi)});
    ExpectGradientsMatch([&](const auto& in) { return fn(in[0]); }, {Leaf({}, lo, hi)});
  };
  check(ops::Neg, -2, 2);
  check(ops::Abs, -2, 2);
  check(ops::Exp, -2, 2);
  check(ops::Log, 0.2, 3);
  check(ops::Sqrt, 0.2, 3);
  check(ops::Rsqrt, 0.2, 3);
  check(ops::Relu, -2, 2);
  check(ops::Sigmoid, -3, 3);
  check(ops::Tanh, -3, 3);
  check([](const TensorPtr& x) { return ops::Gelu(x); }, -3, 3);
  check([](const TensorPtr& x) { return ops::Gelu(x, true); }, -3, 3);
}

TEST(ElementwiseGrad, CastBetweenFloatingTypes) {
  // Through float32 and back: float32 rounding limits the finite differences, hence the wider steps.
  ExpectGradientsMatch(
      [](const auto& in) { return ops::Cast(ops::MulScalar(ops::Cast(in[0], DType::Float32()), 3), DType::Float64()); },
      {Leaf({2, 3}, -2, 2)}, 1e-2, 1e-4);
  const TensorPtr x = Leaf({3}, -2, 2);
  const TensorPtr y = ops::Cast(x, DType::Float16());
  EXPECT_TRUE(y->requires_grad());
  Backward({y}, {FromDoubles(DType::Float16(), {3}, {1, 2, 3})});
  ExpectTensorNear(x->grad(), DType::Float64(), {3}, {1, 2, 3});
  EXPECT_FALSE(ops::Cast(x, DType::Int32())->requires_grad());  // integer results carry no gradient
}

}  // namespace
}  // namespace oneflow::test
