// The math op family (core/ops/math.h): every op x kernel dtype against float64 reference loops
// written here (odd, 0-d, empty and broadcast shapes, non-contiguous views), the dedicated backward
// ops, finite-difference gradients, NaN/inf behaviour, erfinv's accuracy against bisection, errors,
// and a lazy graph with an unknown dim run at two sizes.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/ops/math.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

using Fn1 = std::function<TensorPtr(const TensorPtr&)>;
using Fn2 = std::function<TensorPtr(const TensorPtr&, const TensorPtr&)>;
using Ref1 = std::function<double(double)>;
using Ref2 = std::function<double(double, double)>;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
const Symbol<DType> kF32 = DType::Float32();
const Symbol<DType> kF64 = DType::Float64();

const std::vector<DataType>& KernelTypes(const std::string& op) {
  return OpRegistry::Global().Get(op).kernels.at(0).dtypes;
}

// Values in [lo, hi) (from 0 for unsigned dtypes; integers rounded down).
TensorPtr Random(Symbol<DType> dtype, const Shape& shape, double lo, double hi) {
  if (dtype->is_integer() && !dtype->is_signed()) {
    lo = std::max(lo, 0.0);
    hi = std::max(hi, lo + 1);
  }
  return RandomTensor(dtype, shape, lo, hi);
}

double AtolFor(Symbol<DType> dtype) { return std::max(1e-6, RtolFor(dtype)); }

TensorPtr Leaf(const Shape& shape, double lo, double hi) {
  TensorPtr t = Random(kF64, shape, lo, hi);
  t->set_requires_grad(true);
  return t;
}

// ---- unary ------------------------------------------------------------------------------------------
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
  bool bool_out = false;
  Ref1 bool_ref = nullptr;  // the reference for bool inputs, where it differs
};

void CheckUnary(const UnarySpec& s) {
  for (DataType d : KernelTypes(s.op)) {
    const Symbol<DType> t = DType::Get(d);
    const Symbol<DType> out_t = s.bool_out ? DType::Bool() : t;
    for (const UnaryCase& c : kUnaryCases) {
      SCOPED_TRACE(s.op + " " + std::string(t->name()) + " " + c.shape.ToString() +
                   (c.non_contiguous ? " (non-contiguous)" : ""));
      TensorPtr x = Random(t, c.shape, s.lo, s.hi);
      if (c.non_contiguous) x = NonContiguous(x);
      const TensorPtr y = s.fn(x);
      ExpectTensorNear(y, out_t, c.shape,
                       BroadcastRef(c.shape, {&x}, [&](const auto& v) {
                         return InDType(t->is_bool() && s.bool_ref ? s.bool_ref(v[0]) : s.ref(v[0]), out_t);
                       }),
                       RtolFor(t), AtolFor(t));
      EXPECT_TRUE(y->is_contiguous());
    }
    MarkCovered(s.op, t);
  }
}

// erf^-1 by bisection (relative: the bracket starts at [0, a] below 0.5, where erfinv(a) < a), on
// erfc past 0.5 so that the tails keep their digits.
double ErfinvRef(double x) {
  const long double a = std::fabs(static_cast<long double>(x));
  if (a == 1) return std::copysign(kInf, x);
  if (a > 1 || std::isnan(x)) return kNan;
  long double lo = 0, hi = a <= 0.5L ? a : 10;
  for (int i = 0; i < 300; ++i) {
    const long double m = (lo + hi) / 2;
    const bool below = a <= 0.5L ? std::erf(m) < a : std::erfc(m) > 1 - a;
    (below ? lo : hi) = m;
  }
  return std::copysign(static_cast<double>((lo + hi) / 2), x);
}

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double SoftplusRef(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(beta * x)) / beta;
}
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
double Relu6(double v) { return std::min(std::max(v, 0.0), 6.0); }

const auto kSoftplus2 = [](const TensorPtr& x) { return ops::Softplus(x, 2.0, 1.0); };
const auto kElu = [](const TensorPtr& x) { return ops::Elu(x, 0.7); };
const auto kLeaky = [](const TensorPtr& x) { return ops::LeakyRelu(x, 0.1); };
const auto kHardtanh = [](const TensorPtr& x) { return ops::Hardtanh(x, -0.5, 1.5); };

TEST(MathUnary, EveryFloatingOpAndDType) {
  CheckUnary({"sin", ops::Sin, [](double x) { return std::sin(x); }});
  CheckUnary({"cos", ops::Cos, [](double x) { return std::cos(x); }});
  CheckUnary({"tan", ops::Tan, [](double x) { return std::tan(x); }, -1.2, 1.2});
  CheckUnary({"asin", ops::Asin, [](double x) { return std::asin(x); }, -0.95, 0.95});
  CheckUnary({"acos", ops::Acos, [](double x) { return std::acos(x); }, -0.95, 0.95});
  CheckUnary({"atan", ops::Atan, [](double x) { return std::atan(x); }});
  CheckUnary({"sinh", ops::Sinh, [](double x) { return std::sinh(x); }});
  CheckUnary({"cosh", ops::Cosh, [](double x) { return std::cosh(x); }});
  CheckUnary({"asinh", ops::Asinh, [](double x) { return std::asinh(x); }});
  CheckUnary({"acosh", ops::Acosh, [](double x) { return std::acosh(x); }, 1.1, 4});
  CheckUnary({"atanh", ops::Atanh, [](double x) { return std::atanh(x); }, -0.9, 0.9});
  CheckUnary({"erf", ops::Erf, [](double x) { return std::erf(x); }});
  CheckUnary({"erfinv", ops::Erfinv, ErfinvRef, -0.99, 0.99});
  CheckUnary({"log1p", ops::Log1p, [](double x) { return std::log1p(x); }, -0.9, 3});
  CheckUnary({"expm1", ops::Expm1, [](double x) { return std::expm1(x); }});
  CheckUnary({"reciprocal", ops::Reciprocal, [](double x) { return 1 / x; }, 0.2, 3});
  CheckUnary({"silu", ops::Silu, [](double x) { return x * Sigmoid(x); }, -6, 6});
  CheckUnary({"mish", ops::Mish, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }, -6, 6});
  CheckUnary({"softplus", [](const TensorPtr& x) { return ops::Softplus(x); },
              [](double x) { return SoftplusRef(x, 1, 20); }, -6, 6});
  CheckUnary({"softplus", kSoftplus2, [](double x) { return SoftplusRef(x, 2, 1); }});  // linear past 0.5
  CheckUnary({"elu", kElu, [](double x) { return x > 0 ? x : 0.7 * std::expm1(x); }});
  CheckUnary({"selu", ops::Selu, [](double x) { return kSeluScale * (x > 0 ? x : kSeluAlpha * std::expm1(x)); }});
  CheckUnary({"leaky_relu", kLeaky, [](double x) { return x > 0 ? x : 0.1 * x; }});
  CheckUnary({"hardswish", ops::Hardswish, [](double x) { return x * Relu6(x + 3) / 6; }, -5, 5});
  CheckUnary({"hardsigmoid", ops::Hardsigmoid, [](double x) { return Relu6(x + 3) / 6; }, -5, 5});
  CheckUnary({"hardtanh", kHardtanh, [](double x) { return std::min(std::max(x, -0.5), 1.5); }});
}

// PyTorch's defaults: softplus(beta 1, threshold 20), elu(alpha 1), leaky_relu(0.01), hardtanh(-1, 1).
TEST(MathUnary, ActivationDefaults) {
  const TensorPtr x = FromDoubles(kF64, {4}, {-2, -0.5, 0.5, 25});
  ExpectTensorNear(ops::Softplus(x), kF64, {4}, {std::log1p(std::exp(-2.0)), std::log1p(std::exp(-0.5)), std::log1p(std::exp(0.5)), 25}, 1e-12);
  ExpectTensorNear(ops::Elu(x), kF64, {4}, {std::expm1(-2.0), std::expm1(-0.5), 0.5, 25}, 1e-12);
  ExpectTensorNear(ops::LeakyRelu(x), kF64, {4}, {-0.02, -0.005, 0.5, 25}, 1e-12);
  ExpectTensorNear(ops::Hardtanh(x), kF64, {4}, {-1, -0.5, 0.5, 1}, 1e-12);
}

TEST(MathUnary, IntegerAndBoolInputsComputeInFloat32) {
  const TensorPtr i = FromDoubles(DType::Int32(), {3}, {0, 1, -2});
  ExpectTensorNear(ops::Sin(i), kF32, {3}, {0, std::sin(1.0), std::sin(-2.0)});
  ExpectTensorNear(ops::Reciprocal(i), kF32, {3}, {kInf, 1, -0.5});
  ExpectTensorNear(ops::Hardtanh(i), kF32, {3}, {0, 1, -1});
  const TensorPtr b = FromDoubles(DType::Bool(), {2}, {1, 0});
  ExpectTensorNear(ops::Erf(b), kF32, {2}, {std::erf(1.0), 0});
  ExpectTensorNear(ops::Silu(b), kF32, {2}, {Sigmoid(1.0), 0});
}

TEST(MathUnary, ErfinvFloat64MatchesBisectionToTheLastDigits) {
  std::vector<double> xs = {1e-300, 1e-10, 1e-4, 0.1, 0.3, 0.5, 0.5000001, 0.7, 0.9, 0.99, 0.999, 0.999999,
                            1 - 1e-10, 1 - 1e-13, 1 - 1e-15, 1 - std::ldexp(1.0, -52)};
  for (int i = 1; i < 2000; ++i) xs.push_back(-1 + i * 1e-3);
  const size_t n = xs.size();
  for (size_t i = 0; i < n; ++i) xs.push_back(-xs[i]);
  std::vector<double> expected;
  for (double x : xs) expected.push_back(ErfinvRef(x));
  const Shape shape{static_cast<int64_t>(xs.size())};
  ExpectTensorNear(ops::Erfinv(FromDoubles(kF64, shape, xs)), kF64, shape, expected, 1e-14, 0);
  // float32 to a few ulp over the whole float range.
  std::vector<double> fs, fexpected;
  for (int i = 1; i < 4000; ++i) fs.push_back(static_cast<float>(-1 + i * 5e-4));
  fs.push_back(static_cast<float>(1 - std::ldexp(1.0, -24)));
  for (double x : fs) fexpected.push_back(ErfinvRef(x));
  const Shape fshape{static_cast<int64_t>(fs.size())};
  ExpectTensorNear(ops::Erfinv(FromDoubles(kF32, fshape, fs)), kF32, fshape, fexpected, 4e-7, 0);
  ExpectTensorNear(ops::Erfinv(FromDoubles(kF32, {6}, {1, -1, 1.5, -2, kNan, 0})), kF32, {6},
                   {kInf, -kInf, kNan, kNan, kNan, 0});
}

TEST(MathUnary, SpecialValues) {
  const TensorPtr x = FromDoubles(kF32, {4}, {kNan, -kInf, 0.0, kInf});
  ExpectTensorNear(ops::Sin(x), kF32, {4}, {kNan, kNan, 0, kNan});
  ExpectTensorNear(ops::Atan(x), kF32, {4}, {kNan, -std::numbers::pi / 2, 0, std::numbers::pi / 2});
  ExpectTensorNear(ops::Erf(x), kF32, {4}, {kNan, -1, 0, 1});
  ExpectTensorNear(ops::Expm1(x), kF32, {4}, {kNan, -1, 0, kInf});
  ExpectTensorNear(ops::Reciprocal(x), kF32, {4}, {kNan, 0, kInf, 0});
  ExpectTensorNear(ops::Silu(x), kF32, {4}, {kNan, kNan, 0, kInf});  // -inf * sigmoid(-inf) = -inf * 0
  ExpectTensorNear(ops::Softplus(x), kF32, {4}, {kNan, 0, std::log(2.0), kInf});
  ExpectTensorNear(ops::Hardtanh(x), kF32, {4}, {kNan, -1, 0, 1});
  ExpectTensorNear(ops::Hardsigmoid(x), kF32, {4}, {kNan, 0, 0.5, 1});
  ExpectTensorNear(ops::LeakyRelu(x), kF32, {4}, {kNan, -kInf, 0, kInf});
  ExpectTensorNear(ops::Atanh(FromDoubles(kF64, {3}, {1, -1, 2})), kF64, {3}, {kInf, -kInf, kNan});
}

// Sizes above the parallel grain, contiguous and not.
TEST(MathUnary, LargeInputsTakeTheParallelPaths) {
  const TensorPtr x = Random(kF32, {3, 70001}, -3, 3);
  ExpectTensorNear(ops::Erf(x), kF32, {3, 70001}, BroadcastRef({3, 70001}, {&x}, [](const auto& v) { return std::erf(v[0]); }),
                   RtolFor(kF32), 1e-6);
  const TensorPtr n = NonContiguous(Random(kF64, {20, 1001}, -3, 3));
  ExpectTensorNear(ops::Mish(n), kF64, {20, 1001},
                   BroadcastRef({20, 1001}, {&n}, [](const auto& v) { return v[0] * std::tanh(std::log1p(std::exp(v[0]))); }),
                   1e-12, 1e-12);
}

// The dedicated backward ops: (dy, saved) -> dx against the derivative written here.
TEST(MathUnary, BackwardOps) {
  const auto check = [](const std::string& op, Attrs attrs, double lo, double hi,
                        const std::function<double(double, double)>& ref) {
    for (DataType d : KernelTypes(op)) {
      const Symbol<DType> t = DType::Get(d);
      for (const UnaryCase& c : kUnaryCases) {
        SCOPED_TRACE(op + " " + std::string(t->name()) + " " + c.shape.ToString());
        TensorPtr dy = Random(t, c.shape, -2, 2), saved = Random(t, c.shape, lo, hi);
        if (c.non_contiguous) saved = NonContiguous(saved);
        const TensorPtr dx = Apply1(OpRegistry::Global().Get(op), {dy, saved}, attrs);
        ExpectTensorNear(dx, t, c.shape, BroadcastRef(c.shape, {&dy, &saved}, [&](const auto& v) { return ref(v[0], v[1]); }),
                         RtolFor(t) * 4, AtolFor(t) * 4);
      }
      MarkCovered(op, t);
    }
  };
  const double k = 2 / std::sqrt(std::numbers::pi);
  check("sin_backward", {}, -3, 3, [](double g, double x) { return g * std::cos(x); });
  check("cos_backward", {}, -3, 3, [](double g, double x) { return -g * std::sin(x); });
  check("tan_backward", {}, -3, 3, [](double g, double y) { return g * (1 + y * y); });
  check("asin_backward", {}, -0.9, 0.9, [](double g, double x) { return g / std::sqrt(1 - x * x); });
  check("acos_backward", {}, -0.9, 0.9, [](double g, double x) { return -g / std::sqrt(1 - x * x); });
  check("atan_backward", {}, -3, 3, [](double g, double x) { return g / (1 + x * x); });
  check("sinh_backward", {}, -3, 3, [](double g, double x) { return g * std::cosh(x); });
  check("cosh_backward", {}, -3, 3, [](double g, double x) { return g * std::sinh(x); });
  check("asinh_backward", {}, -3, 3, [](double g, double x) { return g / std::sqrt(x * x + 1); });
  check("acosh_backward", {}, 1.2, 4, [](double g, double x) { return g / std::sqrt(x * x - 1); });
  check("atanh_backward", {}, -0.8, 0.8, [](double g, double x) { return g / (1 - x * x); });
  check("erf_backward", {}, -3, 3, [k](double g, double x) { return g * k * std::exp(-x * x); });
  check("erfinv_backward", {}, -2, 2, [k](double g, double y) { return g / k * std::exp(y * y); });
  check("log1p_backward", {}, -0.8, 3, [](double g, double x) { return g / (1 + x); });
  check("expm1_backward", {}, -1, 3, [](double g, double y) { return g * (y + 1); });
  check("reciprocal_backward", {}, -3, 3, [](double g, double y) { return -g * y * y; });
  check("silu_backward", {}, -6, 6, [](double g, double x) { return g * Sigmoid(x) * (1 + x * (1 - Sigmoid(x))); });
  check("mish_backward", {}, -6, 6, [](double g, double x) {
    const double t = std::tanh(std::log1p(std::exp(x)));
    return g * (t + x * Sigmoid(x) * (1 - t * t));
  });
  check("selu_backward", {}, -3, 3,
        [](double g, double x) { return g * kSeluScale * (x > 0 ? 1 : kSeluAlpha * std::exp(x)); });
  check("hardswish_backward", {}, -5, 5, [](double g, double x) { return x < -3 ? 0 : (x <= 3 ? g * (2 * x + 3) / 6 : g); });
  check("hardsigmoid_backward", {}, -5, 5, [](double g, double x) { return x > -3 && x < 3 ? g / 6 : 0; });
  check("softplus_backward", {{"beta", 2.0}, {"threshold", 1.0}}, -3, 3,
        [](double g, double x) { return 2 * x > 1 ? g : g * Sigmoid(2 * x); });
  check("elu_backward", {{"alpha", 0.7}}, -3, 3, [](double g, double x) { return x > 0 ? g : g * 0.7 * std::exp(x); });
  check("leaky_relu_backward", {{"negative_slope", 0.1}}, -3, 3, [](double g, double x) { return x > 0 ? g : 0.1 * g; });
  check("hardtanh_backward", {{"min_val", -0.5}, {"max_val", 1.5}}, -3, 3,
        [](double g, double x) { return x <= -0.5 || x >= 1.5 ? 0 : g; });
}

TEST(MathGrad, Unary) {
  const auto check = [](const Fn1& fn, double lo, double hi) {
    ExpectGradientsMatch([&](const auto& in) { return fn(in[0]); }, {Leaf({3, 5}, lo, hi)});
    ExpectGradientsMatch([&](const auto& in) { return fn(in[0]); }, {Leaf({}, lo, hi)});
  };
  check(ops::Sin, -3, 3);
  check(ops::Cos, -3, 3);
  check(ops::Tan, -1.2, 1.2);
  check(ops::Asin, -0.9, 0.9);
  check(ops::Acos, -0.9, 0.9);
  check(ops::Atan, -3, 3);
  check(ops::Sinh, -3, 3);
  check(ops::Cosh, -3, 3);
  check(ops::Asinh, -3, 3);
  check(ops::Acosh, 1.2, 4);
  check(ops::Atanh, -0.8, 0.8);
  check(ops::Erf, -2, 2);
  check(ops::Erfinv, -0.9, 0.9);
  check(ops::Log1p, -0.8, 3);
  check(ops::Expm1, -2, 2);
  check(ops::Reciprocal, 0.3, 3);
  check(ops::Silu, -4, 4);
  check(ops::Mish, -4, 4);
  check([](const TensorPtr& x) { return ops::Softplus(x); }, -4, 4);
  check(kSoftplus2, -3, 3);
  check(kElu, -3, 3);
  check(ops::Selu, -3, 3);
  check(kLeaky, -3, 3);
  check(ops::Hardswish, -5, 5);
  check(ops::Hardsigmoid, -5, 5);
  check(kHardtanh, -3, 3);
}

// ---- rounding, sign, isnan ----------------------------------------------------------------------------
TEST(MathRounding, EveryOpAndDType) {
  // Integer-valued and fractional values of both signs; integers pass through.
  CheckUnary({"floor", ops::Floor, [](double x) { return std::floor(x); }, -5, 5});
  CheckUnary({"ceil", ops::Ceil, [](double x) { return std::ceil(x); }, -5, 5});
  CheckUnary({"round", ops::Round, [](double x) { return std::nearbyint(x); }, -5, 5});
  CheckUnary({"trunc", ops::Trunc, [](double x) { return std::trunc(x); }, -5, 5});
  CheckUnary({"sign", ops::Sign, [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }, -3, 3});
  for (const char* op : {"isnan", "isinf", "isfinite"}) {
    const Fn1 fn = std::string(op) == "isnan" ? Fn1(ops::IsNan) : std::string(op) == "isinf" ? Fn1(ops::IsInf) : Fn1(ops::IsFinite);
    CheckUnary({op, fn, [op](double) { return std::string(op) == "isfinite" ? 1.0 : 0.0; }, -3, 3, true});
  }
}

TEST(MathRounding, HalvesToEvenSignsAndSpecialValues) {
  for (DataType d : KernelTypes("round")) {
    const Symbol<DType> t = DType::Get(d);
    if (!t->is_floating_point()) continue;
    SCOPED_TRACE(std::string(t->name()));
    const TensorPtr x = FromDoubles(t, {9}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.25, kNan, -kInf});
    ExpectTensorNear(ops::Round(x), t, {9}, {0, 2, 2, -0.0, -2, -2, 3, kNan, -kInf});
    ExpectTensorNear(ops::Floor(x), t, {9}, {0, 1, 2, -1, -2, -3, 3, kNan, -kInf});
    ExpectTensorNear(ops::Ceil(x), t, {9}, {1, 2, 3, -0.0, -1, -2, 4, kNan, -kInf});
    ExpectTensorNear(ops::Trunc(x), t, {9}, {0, 1, 2, -0.0, -1, -2, 3, kNan, -kInf});
    ExpectTensorNear(ops::Sign(x), t, {9}, {1, 1, 1, -1, -1, -1, 1, 0, -1});  // NaN gives 0
  }
  const TensorPtr b = FromDoubles(DType::Bool(), {2}, {1, 0});
  ExpectTensorNear(ops::Sign(b), DType::Bool(), {2}, {1, 0});
  const TensorPtr i8 = FromDoubles(DType::Int8(), {3}, {-128, 0, 127});
  ExpectTensorNear(ops::Sign(i8), DType::Int8(), {3}, {-1, 0, 1});
  ExpectTensorNear(ops::Round(i8), DType::Int8(), {3}, {-128, 0, 127});
  const TensorPtr f = FromDoubles(kF64, {5}, {kNan, kInf, -kInf, 0, -1e308});
  ExpectTensorNear(ops::IsNan(f), DType::Bool(), {5}, {1, 0, 0, 0, 0});
  ExpectTensorNear(ops::IsInf(f), DType::Bool(), {5}, {0, 1, 1, 0, 0});
  ExpectTensorNear(ops::IsFinite(f), DType::Bool(), {5}, {0, 0, 0, 1, 1});
  const TensorPtr h = FromDoubles(DType::Float16(), {3}, {kNan, 1e6, 1});  // 1e6 overflows to inf in float16
  ExpectTensorNear(ops::IsInf(h), DType::Bool(), {3}, {0, 1, 0});
}

TEST(MathGrad, RoundingAndSignHaveZeroGradients) {
  for (const Fn1& fn : {Fn1(ops::Floor), Fn1(ops::Ceil), Fn1(ops::Round), Fn1(ops::Trunc), Fn1(ops::Sign)}) {
    const TensorPtr x = Leaf({2, 3}, -3, 3);
    const TensorPtr y = fn(x);
    EXPECT_TRUE(y->requires_grad());
    Backward({y}, {FromDoubles(kF64, {2, 3}, {1, 2, 3, 4, 5, 6})});
    ExpectTensorNear(x->grad(), kF64, {2, 3}, {0, 0, 0, 0, 0, 0});
  }
  EXPECT_FALSE(ops::IsNan(Leaf({2}, -1, 1))->requires_grad());
}

// ---- binary -------------------------------------------------------------------------------------------
struct BinaryCase {
  Shape a, b, out;
  bool non_contiguous;
};
const std::vector<BinaryCase> kBinaryCases = {
    {{3, 1, 5}, {4, 5}, {3, 4, 5}, false}, {{4, 5}, {3, 1, 5}, {3, 4, 5}, true}, {{}, {7}, {7}, false},
    {{13}, {}, {13}, true},                {{7}, {7}, {7}, true},               {{0, 3}, {1, 3}, {0, 3}, false},
    {{}, {}, {}, false},                   {{2, 1}, {1, 13}, {2, 13}, false},
};

struct BinarySpec {
  std::string op;
  Fn2 fn;
  Ref2 ref;
  double a_lo = -4, a_hi = 4, b_lo = -4, b_hi = 4;
  bool nonzero_b = false;  // zeros in b become 3
};

void CheckBinary(const BinarySpec& s) {
  for (DataType d : KernelTypes(s.op)) {
    const Symbol<DType> t = DType::Get(d);
    for (const BinaryCase& c : kBinaryCases) {
      SCOPED_TRACE(s.op + " " + std::string(t->name()) + " " + c.a.ToString() + " with " + c.b.ToString());
      TensorPtr a = Random(t, c.a, s.a_lo, s.a_hi), b = Random(t, c.b, s.b_lo, s.b_hi);
      if (s.nonzero_b) {
        std::vector<double> v = ToDoubles(b);
        for (double& e : v) e = e == 0 ? 3 : e;
        b = FromDoubles(t, c.b, v);
      }
      if (c.non_contiguous) {
        a = NonContiguous(a);
        b = NonContiguous(b);
      }
      const TensorPtr y = s.fn(a, b);
      ExpectTensorNear(y, t, c.out,
                       BroadcastRef(c.out, {&a, &b}, [&](const auto& v) { return InDType(s.ref(v[0], v[1]), t); }),
                       RtolFor(t), AtolFor(t));
      EXPECT_TRUE(y->is_contiguous());
    }
    MarkCovered(s.op, t);
  }
}

double RemainderRef(double a, double b) {
  const double r = std::fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

TEST(MathBinary, Atan2FmodRemainder) {
  CheckBinary({"atan2", ops::Atan2, [](double a, double b) { return std::atan2(a, b); }});
  CheckBinary({"fmod", ops::Fmod, [](double a, double b) { return std::fmod(a, b); }, -9, 9, -4, 4, true});
  CheckBinary({"remainder", ops::Remainder, RemainderRef, -9, 9, -4, 4, true});
}

TEST(MathBinary, FmodAndRemainderSigns) {
  for (const Symbol<DType> t : {DType::Int32(), DType::Int8(), kF32, kF64}) {
    SCOPED_TRACE(std::string(t->name()));
    const TensorPtr a = FromDoubles(t, {4}, {-7, 7, -7, 7});
    const TensorPtr b = FromDoubles(t, {4}, {3, -3, -3, 3});
    ExpectTensorNear(ops::Fmod(a, b), t, {4}, {-1, 1, -1, 1});       // the sign of a
    ExpectTensorNear(ops::Remainder(a, b), t, {4}, {2, -2, -1, 1});  // the sign of b
  }
  const TensorPtr a = FromDoubles(kF64, {5}, {-7.5, 7.5, 5, kInf, 1});
  const TensorPtr b = FromDoubles(kF64, {5}, {2, -2, 0, 2, kInf});
  ExpectTensorNear(ops::Fmod(a, b), kF64, {5}, {-1.5, 1.5, kNan, kNan, 1});
  ExpectTensorNear(ops::Remainder(a, b), kF64, {5}, {0.5, -0.5, kNan, kNan, 1});
  // The smallest integer by -1 does not overflow.
  const TensorPtr m = FromDoubles(DType::Int64(), {1}, {-9223372036854775808.0});
  const TensorPtr minus1 = FromDoubles(DType::Int64(), {1}, {-1});
  ExpectTensorNear(ops::Fmod(m, minus1), DType::Int64(), {1}, {0});
  ExpectTensorNear(ops::Remainder(m, minus1), DType::Int64(), {1}, {0});
  // Promotion: int with float gives float; integer atan2 gives float32.
  const TensorPtr i = FromDoubles(DType::Int32(), {2}, {5, -5});
  ExpectTensorNear(ops::Remainder(i, FromDoubles(kF32, {1}, {1.5})), kF32, {2}, {0.5, 1});
  ExpectTensorNear(ops::Atan2(i, FromDoubles(DType::Int64(), {1}, {0})), kF32, {2},
                   {std::numbers::pi / 2, -std::numbers::pi / 2});
}

TEST(MathGrad, Binary) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{3, 1, 5}, {4, 5}}, {{7}, {7}}, {{}, {7}}, {{2, 3}, {}}};
  for (const auto& [sa, sb] : shapes) {
    SCOPED_TRACE(sa.ToString() + " with " + sb.ToString());
    ExpectGradientsMatch([](const auto& in) { return ops::Atan2(in[0], in[1]); }, {Leaf(sa, -2, 2), Leaf(sb, 0.5, 2)});
    // Away from the jumps of trunc/floor(a / b): a in (0.1, 0.9) * b plus whole multiples.
    ExpectGradientsMatch([](const auto& in) { return ops::Fmod(in[0], in[1]); }, {Leaf(sa, 0.1, 0.9), Leaf(sb, 1.5, 2)});
    ExpectGradientsMatch([](const auto& in) { return ops::Remainder(in[0], in[1]); },
                         {Leaf(sa, 2.1, 2.9), Leaf(sb, 1, 1.3)});
  }
  // -dy * trunc(a / b) and -dy * floor(a / b) for a / b = -2.5.
  const TensorPtr a = FromDoubles(kF64, {1}, {-5}), b = FromDoubles(kF64, {1}, {2});
  b->set_requires_grad(true);
  Backward({ops::Fmod(a, b)}, {FromDoubles(kF64, {1}, {1})});
  ExpectTensorNear(b->grad(), kF64, {1}, {2});
  const TensorPtr c = FromDoubles(kF64, {1}, {2});
  c->set_requires_grad(true);
  Backward({ops::Remainder(a, c)}, {FromDoubles(kF64, {1}, {1})});
  ExpectTensorNear(c->grad(), kF64, {1}, {3});
}

// ---- bitwise ------------------------------------------------------------------------------------------
int64_t AsInt(double v) { return static_cast<int64_t>(v); }

TEST(MathBitwise, EveryOpAndDType) {
  CheckBinary({"bitwise_and", ops::BitwiseAnd, [](double a, double b) { return double(AsInt(a) & AsInt(b)); }, -100, 100, -100, 100});
  CheckBinary({"bitwise_or", ops::BitwiseOr, [](double a, double b) { return double(AsInt(a) | AsInt(b)); }, -100, 100, -100, 100});
  CheckBinary({"bitwise_xor", ops::BitwiseXor, [](double a, double b) { return double(AsInt(a) ^ AsInt(b)); }, -100, 100, -100, 100});
  CheckUnary({"bitwise_not", ops::BitwiseNot, [](double a) { return double(~AsInt(a)); }, -100, 100, false,
              [](double a) { return a == 0 ? 1.0 : 0.0; }});
}

// Per dtype, as the reference must know the width: counts in [-2, width + 3).
TEST(MathBitwise, Shifts) {
  for (const std::string op : {"bitwise_left_shift", "bitwise_right_shift"}) {
    for (DataType d : KernelTypes(op)) {
      const Symbol<DType> t = DType::Get(d);
      const int width = static_cast<int>(t->bytes() * 8);
      const bool left = op == "bitwise_left_shift";
      for (const BinaryCase& c : kBinaryCases) {
        SCOPED_TRACE(op + " " + std::string(t->name()) + " " + c.a.ToString() + " with " + c.b.ToString());
        TensorPtr a = Random(t, c.a, -100, 100), b = Random(t, c.b, -2, width + 3);
        if (c.non_contiguous) {
          a = NonContiguous(a);
          b = NonContiguous(b);
        }
        const TensorPtr y = left ? ops::BitwiseLeftShift(a, b) : ops::BitwiseRightShift(a, b);
        ExpectTensorNear(y, t, c.out, BroadcastRef(c.out, {&a, &b}, [&](const auto& v) {
                           // An unsigned count read as signed (as PyTorch) is out of range past 127.
                           const bool out = v[1] < 0 || v[1] >= width;
                           if (left) return out ? 0.0 : InDType(std::ldexp(v[0], static_cast<int>(v[1])), t);
                           return out ? (v[0] < 0 ? -1.0 : 0.0) : std::floor(std::ldexp(v[0], -static_cast<int>(v[1])));
                         }),
                         0, 0);
      }
      MarkCovered(op, t);
    }
  }
  const TensorPtr i8 = FromDoubles(DType::Int8(), {4}, {-128, 64, -1, 5});
  const TensorPtr n = FromDoubles(DType::Int8(), {4}, {1, 1, 7, 8});
  ExpectTensorNear(ops::BitwiseLeftShift(i8, n), DType::Int8(), {4}, {0, -128, -128, 0});
  ExpectTensorNear(ops::BitwiseRightShift(i8, n), DType::Int8(), {4}, {-64, 32, -1, 0});
  const TensorPtr u8 = FromDoubles(DType::UInt8(), {2}, {255, 128});
  ExpectTensorNear(ops::BitwiseRightShift(u8, FromDoubles(DType::UInt8(), {2}, {7, 8})), DType::UInt8(), {2}, {1, 0});
}

TEST(MathBitwise, BoolIsLogic) {
  const TensorPtr a = FromDoubles(DType::Bool(), {4}, {0, 0, 1, 1}), b = FromDoubles(DType::Bool(), {4}, {0, 1, 0, 1});
  ExpectTensorNear(ops::BitwiseAnd(a, b), DType::Bool(), {4}, {0, 0, 0, 1});
  ExpectTensorNear(ops::BitwiseOr(a, b), DType::Bool(), {4}, {0, 1, 1, 1});
  ExpectTensorNear(ops::BitwiseXor(a, b), DType::Bool(), {4}, {0, 1, 1, 0});
  ExpectTensorNear(ops::BitwiseNot(a), DType::Bool(), {4}, {1, 1, 0, 0});
  // bool with int8 promotes to int8.
  ExpectTensorNear(ops::BitwiseOr(a, FromDoubles(DType::Int8(), {1}, {6})), DType::Int8(), {4}, {6, 6, 7, 7});
}

// ---- clamp --------------------------------------------------------------------------------------------
double ClampRef(double x, double lo, double hi) {
  if (std::isnan(x) || std::isnan(lo) || std::isnan(hi)) return kNan;
  return std::min(std::max(x, lo), hi);
}

TEST(MathClamp, TensorBoundsEveryDType) {
  const std::vector<std::vector<Shape>> cases = {
      {{3, 1, 5}, {4, 5}, {3, 4, 1}, {3, 4, 5}}, {{7}, {}, {7}, {7}}, {{}, {13}, {}, {13}},
      {{2, 3}, {2, 3}, {2, 3}, {2, 3}},          {{0}, {1}, {0}, {0}}, {{}, {}, {}, {}},
  };
  for (DataType d : KernelTypes("clamp")) {
    const Symbol<DType> t = DType::Get(d);
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::vector<Shape>& c = cases[i];
      SCOPED_TRACE(std::string(t->name()) + " case " + std::to_string(i));
      // Bounds overlap, so that some lo > hi (the result is then hi).
      TensorPtr x = Random(t, c[0], -5, 5), lo = Random(t, c[1], -4, 1), hi = Random(t, c[2], -1, 4);
      if (i % 2 == 0) {
        x = NonContiguous(x);
        lo = NonContiguous(lo);
      }
      ExpectTensorNear(ops::Clamp(x, lo, hi), t, c[3],
                       BroadcastRef(c[3], {&x, &lo, &hi}, [](const auto& v) { return ClampRef(v[0], v[1], v[2]); }),
                       RtolFor(t), AtolFor(t));
      const Shape lo_shape = BroadcastShapes(c[0], c[1]), hi_shape = BroadcastShapes(c[0], c[2]);
      ExpectTensorNear(ops::Clamp(x, lo, nullptr), t, lo_shape,
                       BroadcastRef(lo_shape, {&x, &lo}, [](const auto& v) { return ClampRef(v[0], v[1], kInf); }),
                       RtolFor(t), AtolFor(t));
      ExpectTensorNear(ops::Clamp(x, nullptr, hi), t, hi_shape,
                       BroadcastRef(hi_shape, {&x, &hi}, [](const auto& v) { return ClampRef(v[0], -kInf, v[1]); }),
                       RtolFor(t), AtolFor(t));
    }
    MarkCovered("clamp", t);
    MarkCovered("clamp_min", t);
    MarkCovered("clamp_max", t);
  }
}

TEST(MathClamp, ScalarBoundsNanAndPromotion) {
  const TensorPtr x = FromDoubles(kF32, {5}, {-3, -0.5, 0.25, 2, kNan});
  ExpectTensorNear(ops::ClampScalar(x, -1, 1), kF32, {5}, {-1, -0.5, 0.25, 1, kNan});
  ExpectTensorNear(ops::ClampScalar(x, -kInf, 1), kF32, {5}, {-3, -0.5, 0.25, 1, kNan});
  ExpectTensorNear(ops::ClampScalar(x, 0, kInf), kF32, {5}, {0, 0, 0.25, 2, kNan});
  EXPECT_EQ(ops::ClampScalar(x, -kInf, kInf).get(), x.get());  // unbounded: x itself
  EXPECT_EQ(ops::Clamp(x, nullptr, nullptr).get(), x.get());
  ExpectTensorNear(ops::ClampScalar(x, 1, -1), kF32, {5}, {-1, -1, -1, -1, kNan});  // min > max gives max
  ExpectTensorNear(ops::ClampScalar(x, kNan, 1), kF32, {5}, {kNan, kNan, kNan, kNan, kNan});
  // Integer x with integral bounds stays integer; a fractional bound gives float32 (PyTorch's rule).
  const TensorPtr i = FromDoubles(DType::Int32(), {3}, {-5, 0, 5});
  ExpectTensorNear(ops::ClampScalar(i, -2, 3), DType::Int32(), {3}, {-2, 0, 3});
  ExpectTensorNear(ops::ClampScalar(i, -0.5, kInf), kF32, {3}, {-0.5, 0, 5});
  ExpectTensorNear(ops::Clamp(i, FromDoubles(kF64, {1}, {1.5}), nullptr), kF64, {3}, {1.5, 1.5, 5});
}

TEST(MathGrad, Clamp) {
  // Bounds apart from x's values (no ties within the finite-difference step).
  ExpectGradientsMatch([](const auto& in) { return ops::Clamp(in[0], in[1], in[2]); },
                       {Leaf({3, 1, 5}, -3, 3), Leaf({4, 5}, -1, 0), Leaf({3, 4, 1}, 0.2, 1.2)});
  ExpectGradientsMatch([](const auto& in) { return ops::Clamp(in[0], in[1], nullptr); }, {Leaf({3, 4}, -2, 2), Leaf({4}, -1, 1)});
  ExpectGradientsMatch([](const auto& in) { return ops::Clamp(in[0], nullptr, in[1]); }, {Leaf({3, 4}, -2, 2), Leaf({}, -1, 1)});
  ExpectGradientsMatch([](const auto& in) { return ops::ClampScalar(in[0], -0.5, 0.7); }, {Leaf({4, 3}, -2, 2)});
  // x's gradient passes where min <= x <= max, the bounds included (as PyTorch).
  const TensorPtr x = FromDoubles(kF64, {4}, {-1, 0, 1, 2});
  x->set_requires_grad(true);
  Backward({ops::ClampScalar(x, 0, 1)}, {FromDoubles(kF64, {4}, {1, 1, 1, 1})});
  ExpectTensorNear(x->grad(), kF64, {4}, {0, 1, 1, 0});
}

// ---- errors -------------------------------------------------------------------------------------------
TEST(MathErrors, BadInputs) {
  const TensorPtr f = Random(kF32, {3, 4}, -1, 1), g = Random(kF32, {5}, -1, 1);
  const TensorPtr i = FromDoubles(DType::Int32(), {3}, {1, 0, 2}), b = FromDoubles(DType::Bool(), {2}, {1, 0});
  ExpectError([&] { ops::BitwiseAnd(f, f); }, {"bitwise_and", "a must have an integer or bool dtype", "float32"});
  ExpectError([&] { ops::BitwiseNot(f); }, {"bitwise_not", "x", "integer or bool", "float32"});
  ExpectError([&] { ops::BitwiseXor(i, f); }, {"bitwise_xor", "float32"});
  ExpectError([&] { ops::BitwiseLeftShift(b, b); }, {"bitwise_left_shift", "integer", "bool"});
  ExpectError([&] { ops::BitwiseRightShift(f, i); }, {"bitwise_right_shift", "integer", "float32"});
  ExpectError([&] { ops::Fmod(i, i); }, {"fmod", "division by zero"});
  ExpectError([&] { ops::Remainder(i, FromDoubles(DType::UInt8(), {1}, {0})); }, {"remainder", "division by zero"});
  ExpectError([&] { ops::Fmod(b, b); }, {"fmod", "bool"});
  ExpectError([&] { ops::Atan2(f, g); }, {"atan2", "(3, 4)", "(5,)"});
  ExpectError([&] { ops::Floor(b); }, {"floor", "bool"});
  ExpectError([&] { ops::Clamp(b, b, b); }, {"clamp", "bool"});
  ExpectError([&] { ops::Clamp(f, g, nullptr); }, {"clamp_min", "(3, 4)", "(5,)"});
  ExpectError([&] { ops::Hardtanh(f, 1, -1); }, {"hardtanh", "min_val", "max_val"});
  ExpectError([&] { ops::Hardtanh(f, kNan, 1); }, {"hardtanh", "NaN"});
  ExpectError([&] { ops::Softplus(f, 0, 20); }, {"softplus", "beta", "non-zero"});
  ExpectError([&] { ops::Elu(f, kInf); }, {"elu", "alpha", "finite"});
  ExpectError([&] { ops::LeakyRelu(f, kNan); }, {"leaky_relu", "negative_slope", "finite"});
  ExpectError([&] { ops::Sin(nullptr); }, {"sin", "'x'", "null"});
  ExpectError([&] { ops::Sign(nullptr); }, {"sign", "'x'", "null"});
  ExpectError([&] { ops::Fmod(f, nullptr); }, {"fmod", "'b'", "null"});
  ExpectError([&] { ops::Clamp(nullptr, f, f); }, {"clamp", "'x'", "null"});
  // The registry ops take one dtype; the ops:: functions promote.
  ExpectError([&] { Apply1(OpRegistry::Global().Get("sin"), {i}); }, {"sin", "floating", "int32"});
  ExpectError([&] { Apply1(OpRegistry::Global().Get("clamp"), {f, f, Random(kF64, {1}, 0, 1)}); },
              {"clamp", "float32", "float64"});
}

// ---- lazy graph ---------------------------------------------------------------------------------------
TEST(MathGraph, UnknownDimRunsAtTwoSizesLikeEager) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session_owner);
  graph::Graph g(session_owner, "math", graph::GraphOptions{});
  const TensorPtr hi = FromDoubles(kF64, {3}, {0.5, 1, 2});
  const auto f = [&](const TensorPtr& x) {
    return ops::Add(ops::Clamp(ops::Sin(x), nullptr, hi), ops::Remainder(ops::Erfinv(ops::MulScalar(x, 0.3)), hi));
  };
  g.BeginBuild();
  const TensorPtr x = g.AddInput("x", kF64, Shape{Dim::Unknown(), 3});
  const TensorPtr y = f(x);
  EXPECT_EQ(y->shape(), (Shape{Dim::Unknown(), 3}));
  g.AddOutput(y);
  g.EndBuild();
  for (int64_t n : {2, 5}) {
    const TensorPtr xv = RandomTensor(kF64, Shape{n, 3}, -3, 3);
    const std::vector<TensorPtr> out = g.Run({xv});
    EXPECT_EQ(out[0]->shape(), (Shape{n, 3}));
    EXPECT_EQ(ToDoubles(out[0]), ToDoubles(f(xv)));
  }
}

}  // namespace
}  // namespace oneflow::test
