// The fusion pass's ops. fused_elementwise: every opcode x dtype against float64 reference loops and
// against the registered op of the same name (bit-identical: the same expressions), splat scalars of rank
// 0 and 2, sizes across block and thread boundaries, chains that reuse temporaries, every validation
// error. fused_conv_bn_act: against eager conv2d -> batch_norm(inference) -> relu and a float64
// reference, folding per call, errors.
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/op/dispatch.h"
#include "core/ops/fused.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

using Code = FusedOpcode;
const std::vector<Symbol<DType>> kDTypes = FloatingDTypes();

int64_t Op(Code c) { return static_cast<int64_t>(c); }

// Exact equality of values (NaN matches NaN), shapes aside: a scalar of rank 2 broadcasts the eager op's
// output to more dims than fused_elementwise's. In float16 and bfloat16 the eager ops round each result
// to the dtype and the program only its last (it runs in float32, Note [Half precision in float32]):
// there the values agree to a few roundings.
void ExpectSameValues(const TensorPtr& actual, const TensorPtr& expected) {
  ASSERT_TRUE(actual && expected);
  ASSERT_EQ(actual->dtype(), expected->dtype());
  const std::vector<double> a = ToDoubles(actual), e = ToDoubles(expected);
  ASSERT_EQ(a.size(), e.size());
  const Symbol<DType> dt = actual->dtype();
  const double tol = dt == DType::Float32() || dt == DType::Float64() ? 0.0 : 4 * RtolFor(dt);
  size_t mismatches = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == e[i] || (std::isnan(a[i]) && std::isnan(e[i])) ||
        std::fabs(a[i] - e[i]) <= tol * (1 + std::fabs(e[i]))) {
      continue;
    }
    if (++mismatches <= 3) ADD_FAILURE() << "element " << i << ": fused " << a[i] << ", eager " << e[i];
  }
  EXPECT_EQ(mismatches, 0u) << "of " << a.size();
}

// ---- per-opcode references ------------------------------------------------------------------------
double Ref(Code c, double a, double b) {
  switch (c) {
    case Code::kAdd: return a + b;
    case Code::kSub: return a - b;
    case Code::kMul: return a * b;
    case Code::kDiv: return a / b;
    case Code::kMaximum: return std::max(a, b);
    case Code::kMinimum: return std::min(a, b);
    case Code::kNeg: return -a;
    case Code::kAbs: return std::fabs(a);
    case Code::kRelu: return a > 0 ? a : 0.0;
    case Code::kExp: return std::exp(a);
    case Code::kLog: return std::log(a);
    case Code::kSqrt: return std::sqrt(a);
    case Code::kRsqrt: return 1.0 / std::sqrt(a);
    case Code::kSigmoid: return 1.0 / (1.0 + std::exp(-a));
    case Code::kTanh: return std::tanh(a);
    case Code::kReluBackward: return b > 0 ? a : 0.0;
    case Code::kSigmoidBackward: return a * b * (1.0 - b);
    case Code::kTanhBackward: return a * (1.0 - b * b);
    case Code::kPow: return std::pow(a, b);
  }
  ADD_FAILURE() << "no reference for opcode " << Op(c);
  return 0;
}

struct Domain {
  double a_lo, a_hi, b_lo, b_hi;
};
Domain DomainOf(Code c) {
  switch (c) {
    case Code::kLog:
    case Code::kSqrt:
    case Code::kRsqrt: return {0.1, 3.0, 0, 0};
    case Code::kPow: return {0.1, 3.0, -2.0, 2.0};
    case Code::kDiv: return {-2.0, 2.0, 0.5, 2.5};
    case Code::kSigmoidBackward: return {-2.0, 2.0, 0.0, 1.0};
    case Code::kTanhBackward: return {-2.0, 2.0, -1.0, 1.0};
    default: return {-2.0, 2.0, -2.0, 2.0};
  }
}

std::vector<Code> AllCodes() {
  std::vector<Code> codes;
  for (int64_t c = 0; c < kNumFusedOpcodes; ++c) codes.push_back(static_cast<Code>(c));
  return codes;
}

TensorPtr Eager(Code c, const std::vector<TensorPtr>& in) { return Apply1(OpRegistry::Global().Get(FusedOpcodeName(c)), in); }

// Tolerance of a float32/float64 result against a float64 reference.
double Atol(Symbol<DType> dt) { return TolFor(dt, 1e-6, 1e-12); }

// The output elements in parallel chunks: 3 threads, so that sizes beyond the grain cross threads.
struct ThreeThreads {
  Session session{SessionOptions{.num_threads = 3}};
  SessionScope scope{session};
};

TEST(FusedElementwise, OpcodeTableMatchesTheRegistry) {
  std::set<std::string> names;
  for (Code c : AllCodes()) {
    SCOPED_TRACE(FusedOpcodeName(c));
    names.insert(FusedOpcodeName(c));
    const OpDef* op = OpRegistry::Global().Find(FusedOpcodeName(c));
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(static_cast<size_t>(FusedOpcodeArity(c)), op->inputs.size());
    EXPECT_TRUE(op->attrs.empty()) << "a program carries no attributes";
    ASSERT_TRUE(FusedOpcodeForOp(FusedOpcodeName(c)).has_value());
    EXPECT_EQ(*FusedOpcodeForOp(FusedOpcodeName(c)), c);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumFusedOpcodes));
  EXPECT_EQ(FusedOpcodeForOp("relu_backward"), Code::kReluBackward);
  EXPECT_EQ(FusedOpcodeForOp("add"), Code::kAdd);
  for (const char* other : {"gelu", "gelu_backward", "conv2d", "cast", "gt", "where", "sum", "fused_elementwise", ""}) {
    EXPECT_FALSE(FusedOpcodeForOp(other).has_value()) << other;
  }
  EXPECT_STREQ(FusedOpcodeName(Code::kTanhBackward), "tanh_backward");
  EXPECT_EQ(FusedOpcodeArity(Code::kSigmoid), 1);
  EXPECT_EQ(FusedOpcodeArity(Code::kPow), 2);
}

// One instruction per opcode: vector operands and splat scalars (rank 0 and rank 2) in each position.
TEST(FusedElementwise, EveryOpcodeMatchesReferenceAndEagerOp) {
  ThreeThreads threads;
  const std::vector<Shape> shapes = {{0}, {1}, {7}, {1000}, {100003}, {}, {3, 0, 2}, {5, 3, 7}};
  for (Symbol<DType> dt : kDTypes) {
    for (Code c : AllCodes()) {
      const Domain dom = DomainOf(c);
      const bool binary = FusedOpcodeArity(c) == 2;
      for (const Shape& shape : shapes) {
        // Variants: 0 = all vectors; binary: 1 = b a rank-0 scalar, 2 = a a rank-2 scalar.
        for (int variant = 0; variant < (binary ? 3 : 1); ++variant) {
          SCOPED_TRACE(fmt::format("{} {} {} variant {}", dt->name(), FusedOpcodeName(c), shape, variant));
          const Shape a_shape = variant == 2 ? Shape{1, 1} : shape;
          const Shape b_shape = variant == 1 ? Shape{} : shape;
          std::vector<TensorPtr> in = {RandomTensor(dt, a_shape, dom.a_lo, dom.a_hi)};
          if (binary) in.push_back(RandomTensor(dt, b_shape, dom.b_lo, dom.b_hi));
          const std::vector<int64_t> program = {Op(c), static_cast<int64_t>(in.size()), 0, binary ? 1 : -1};
          const TensorPtr y = ops::FusedElementwise(in, program);

          const std::vector<double> av = ToDoubles(in[0]);
          const std::vector<double> bv = binary ? ToDoubles(in[1]) : std::vector<double>{};
          std::vector<double> want(static_cast<size_t>(shape.numel()));
          for (size_t i = 0; i < want.size(); ++i) {
            want[i] = Ref(c, av[av.size() == 1 ? 0 : i], binary ? bv[bv.size() == 1 ? 0 : i] : 0.0);
          }
          // All inputs one element: the first input's shape.
          const Shape out = variant == 2 && shape.numel() == 1 ? a_shape : shape;
          ExpectTensorNear(y, dt, out, want, RtolFor(dt), Atol(dt));
          ExpectSameValues(y, Eager(c, in));
        }
      }
    }
    MarkCovered("fused_elementwise", dt);
  }
}

// Inputs that are all one element; and a program that reads only them while the output is larger.
TEST(FusedElementwise, ScalarPrograms) {
  for (Symbol<DType> dt : kDTypes) {
    SCOPED_TRACE(dt->name());
    const TensorPtr s0 = FromDoubles(dt, {}, {0.75}), s2 = FromDoubles(dt, {1, 1}, {-1.5});
    // All scalars: the first input's shape.
    TensorPtr y = ops::FusedElementwise({s0, s2}, {Op(Code::kMul), 2, 0, 1, Op(Code::kExp), 3, 2, -1});
    ExpectTensorNear(y, dt, {}, {std::exp(0.75 * -1.5)}, RtolFor(dt), Atol(dt));
    ExpectSameValues(y, ops::Exp(ops::Mul(s0, s2)));
    y = ops::FusedElementwise({s2, s0}, {Op(Code::kSub), 2, 0, 1});
    ExpectTensorNear(y, dt, {1, 1}, {-2.25}, 0, 0);
    // x is not read: the result is a splat of the scalars' value over x's shape.
    const TensorPtr x = RandomTensor(dt, {1001});
    y = ops::FusedElementwise({x, s0}, {Op(Code::kSqrt), 2, 1, -1});
    ExpectTensorNear(y, dt, {1001}, std::vector<double>(1001, std::sqrt(0.75)), RtolFor(dt), Atol(dt));
    // A scalar subexpression feeding vector ones.
    y = ops::FusedElementwise({x, s0, s2}, {Op(Code::kMul), 3, 1, 2, Op(Code::kTanh), 3, 3, -1, Op(Code::kAdd), 4, 0, 3});
    ExpectSameValues(y, ops::Add(x, ops::Tanh(ops::Mul(s0, s2))));
  }
}

// pow squares for a one-element exponent of 2 (as the pow kernel), including one computed in the program.
TEST(FusedElementwise, PowSquaresLikeThePowKernel) {
  for (Symbol<DType> dt : kDTypes) {
    SCOPED_TRACE(dt->name());
    const TensorPtr x = RandomTensor(dt, {2000}, -3.0, 3.0);  // negative bases: std::pow(x, 2) is fine too
    const TensorPtr two = FromDoubles(dt, {1, 1}, {2.0}), one = FromDoubles(dt, {}, {1.0});
    const TensorPtr y = ops::FusedElementwise({x, two}, {Op(Code::kPow), 2, 0, 1});
    ExpectSameValues(y, ops::Pow(x, two));
    const std::vector<double> xv = ToDoubles(x);
    std::vector<double> sq(xv.size());
    for (size_t i = 0; i < xv.size(); ++i)
      sq[i] = dt == DType::Float64() ? xv[i] * xv[i] : static_cast<float>(xv[i] * xv[i]);
    sq = ToDoubles(FromDoubles(dt, {2000}, sq));  // rounded to dt
    ExpectTensorNear(y, dt, {2000}, sq, 0, 0);
    // 1 + 1 = 2, computed from scalars.
    const TensorPtr y2 = ops::FusedElementwise({x, one}, {Op(Code::kAdd), 2, 1, 1, Op(Code::kPow), 3, 0, 2});
    ExpectSameValues(y2, ops::Pow(x, ops::Add(one, one)));
    ExpectTensorNear(y2, dt, {2000}, sq, 0, 0);
  }
}

// Chains of instructions that reuse temporaries (registers redefined, an instruction reading and writing
// the same register, a == b, dead instructions), against the eager composition and a reference loop.
TEST(FusedElementwise, ChainsReusingTemporaries) {
  ThreeThreads threads;
  for (Symbol<DType> dt : kDTypes) {
    for (int64_t n : {0, 1, 7, 513, 1000, 100003}) {
      SCOPED_TRACE(fmt::format("{} n {}", dt->name(), n));
      const TensorPtr x = RandomTensor(dt, {n}), z = RandomTensor(dt, {n});
      const TensorPtr s = FromDoubles(dt, {}, {0.5}), t = FromDoubles(dt, {1, 1}, {-1.25});
      // Registers: 0 x, 1 z, 2 s, 3 t.
      const std::vector<int64_t> program = {
          Op(Code::kMul),          4, 0, 2,   // r4 = x * s
          Op(Code::kAdd),          5, 4, 1,   // r5 = r4 + z
          Op(Code::kSigmoid),      4, 5, -1,  // r4 = sigmoid(r5)
          Op(Code::kExp),          7, 1, -1,  // dead: r7 is redefined before it is read
          Op(Code::kMul),          5, 4, 3,   // r5 = r4 * t
          Op(Code::kMaximum),      6, 5, 0,   // r6 = max(r5, x)
          Op(Code::kSub),          4, 6, 4,   // r4 = r6 - r4
          Op(Code::kMul),          6, 4, 4,   // r6 = r4 * r4
          Op(Code::kTanh),         7, 6, -1,  // r7 = tanh(r6)
          Op(Code::kReluBackward), 5, 7, 0,   // r5 = x > 0 ? r7 : 0
          Op(Code::kSigmoidBackward), 6, 5, 4,  // r6 = r5 * r4 * (1 - r4)
          Op(Code::kDiv),          6, 6, 3,   // r6 = r6 / t (reads and writes r6)
      };
      const TensorPtr y = ops::FusedElementwise({x, z, s, t}, program);

      // Eager: the same ops one by one.
      static const OpDef& relu_backward = OpRegistry::Global().Get("relu_backward");
      static const OpDef& sigmoid_backward = OpRegistry::Global().Get("sigmoid_backward");
      TensorPtr r4 = ops::Mul(x, s);
      TensorPtr r5 = ops::Add(r4, z);
      r4 = ops::Sigmoid(r5);
      r5 = ops::Mul(r4, t);
      TensorPtr r6 = ops::Maximum(r5, x);
      r4 = ops::Sub(r6, r4);
      r6 = ops::Mul(r4, r4);
      TensorPtr r7 = ops::Tanh(r6);
      r5 = Apply1(relu_backward, {r7, x});
      r6 = Apply1(sigmoid_backward, {r5, r4});
      r6 = ops::Div(r6, t);
      ExpectSameValues(y, r6);

      const std::vector<double> xv = ToDoubles(x), zv = ToDoubles(z);
      std::vector<double> want(static_cast<size_t>(n));
      for (size_t i = 0; i < want.size(); ++i) {
        const double sg = 1 / (1 + std::exp(-(xv[i] * 0.5 + zv[i])));
        const double d = std::max(sg * -1.25, xv[i]) - sg;
        const double th = std::tanh(d * d);
        want[i] = (xv[i] > 0 ? th : 0.0) * d * (1 - d) / -1.25;
      }
      ExpectTensorNear(y, dt, {n}, want, TolFor(dt, 1e-5, 1e-12), Atol(dt) * 10);
    }
  }
}

// A long chain (40 instructions, 40 distinct registers, two live at a time) over a 2-D shape.
TEST(FusedElementwise, LongChain) {
  ThreeThreads threads;
  for (Symbol<DType> dt : kDTypes) {
    SCOPED_TRACE(dt->name());
    const TensorPtr x = RandomTensor(dt, {37, 301}, 0.5, 1.5);
    std::vector<int64_t> program;
    TensorPtr eager = x;
    std::vector<double> want = ToDoubles(x);
    const std::vector<double> xv = want;
    int64_t prev = 0;
    for (int64_t k = 1; k <= 20; ++k) {
      program.insert(program.end(), {Op(Code::kSqrt), 2 * k - 1, prev, -1});  // r(2k-1) = sqrt(prev)
      program.insert(program.end(), {Op(Code::kAdd), 2 * k, 2 * k - 1, 0});      // r(2k) = r(2k-1) + x
      eager = ops::Add(ops::Sqrt(eager), x);
      for (size_t i = 0; i < want.size(); ++i) want[i] = std::sqrt(want[i]) + xv[i];
      prev = 2 * k;
    }
    const TensorPtr y = ops::FusedElementwise({x}, program);
    ExpectTensorNear(y, dt, {37, 301}, want, RtolFor(dt), Atol(dt));
    ExpectSameValues(y, eager);
  }
}

TEST(FusedElementwise, InferenceShapes) {
  const OpDef& op = OpRegistry::Global().Get("fused_elementwise");
  const auto f32 = DType::Float32();
  auto infer = [&](std::vector<Shape> shapes) {
    std::vector<TensorMeta> in;
    for (const Shape& s : shapes) in.push_back({f32, s, Device::CPU()});
    std::vector<int64_t> program;
    for (size_t i = 0; i < shapes.size(); ++i) {
      program.insert(program.end(), {Op(Code::kAdd), static_cast<int64_t>(shapes.size() + i), i == 0 ? 0 : static_cast<int64_t>(shapes.size() + i - 1), static_cast<int64_t>(i)});
    }
    return op.infer(in, Attrs{{"program", program}})[0].shape;
  };
  EXPECT_EQ(infer({{}, {1, 1}}), Shape{});
  EXPECT_EQ(infer({{1, 1}, {}}), (Shape{1, 1}));
  EXPECT_EQ(infer({{}, {2, 3}, {1}}), (Shape{2, 3}));
  EXPECT_EQ(infer({{1, 1, 1}, {4}}), (Shape{4}));
  const Dim n = Dim::NewSymbol("N");
  EXPECT_EQ(infer({{n, 4}, {}, {n, 4}}), (Shape{n, 4}));
  EXPECT_EQ(infer({{Dim(), 4}, {1}}), (Shape{Dim(), 4}));
  EXPECT_EQ(infer({{0, 3}, {1}}), (Shape{0, 3}));
}

TEST(FusedElementwise, Errors) {
  const auto f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {3, 4}), z = RandomTensor(f32, {3, 4});
  auto run = [&](std::vector<int64_t> program) { ops::FusedElementwise({x, z}, std::move(program)); };
  const std::string p = "fused_elementwise: ";
  ExpectError([&] { run({}); }, {p, "program is empty"});
  ExpectError([&] { run({Op(Code::kAdd), 2, 0, 1, 0, 0, 0}); }, {p, "7 values", "multiple of 4"});
  ExpectError([&] { run({99, 2, 0, 1}); }, {p, "instruction 0", "unknown opcode 99"});
  ExpectError([&] { run({Op(Code::kExp), 2, 0, -1, -1, 3, 2, -1}); }, {p, "instruction 1", "unknown opcode -1"});
  ExpectError([&] { run({Op(Code::kAdd), 2, 0, 5}); },
              {p, "instruction 0 (add)", "reads register 5 as b", "before", "registers 0..1 are the inputs"});
  ExpectError([&] { run({Op(Code::kExp), 2, 3, -1, Op(Code::kExp), 3, 0, -1}); },
              {p, "instruction 0 (exp)", "reads register 3 as a", "before"});
  ExpectError([&] { run({Op(Code::kNeg), 2, -4, -1}); }, {p, "reads register -4"});
  ExpectError([&] { run({Op(Code::kExp), 1, 0, -1}); },
              {p, "instruction 0 (exp)", "writes register 1", "not a temporary", "temporaries start at 2"});
  ExpectError([&] { run({Op(Code::kExp), 2, 0, -1, Op(Code::kAdd), -1, 2, 0}); },
              {p, "instruction 1 (add)", "writes register -1", "not a temporary"});
  ExpectError([&] { run({Op(Code::kExp), 2, 0, 1}); }, {p, "instruction 0 (exp) is unary", "b must be -1, got 1"});
  ExpectError([&] { run({Op(Code::kExp), 2, 0, -1, Op(Code::kMul), 3, 2, -1}); },
              {p, "instruction 1 (mul) is binary", "b is -1"});
  ExpectError([&] { ops::FusedElementwise({x}, {Op(Code::kAdd), 1, 0, 1}); },
              {p, "reads register 1 as b", "register 0 is the input"});
  // Shapes.
  ExpectError([&] { ops::FusedElementwise({x, RandomTensor(f32, {4, 3})}, {Op(Code::kAdd), 2, 0, 1}); },
              {p, "x[1] has shape (4, 3)", "x[0] has shape (3, 4)", "output's shape or exactly one element"});
  ExpectError(
      [&] { ops::FusedElementwise({RandomTensor(f32, {}), x, RandomTensor(f32, {3, 1})}, {Op(Code::kAdd), 3, 0, 1}); },
      {p, "x[2] has shape (3, 1)", "x[1] has shape (3, 4)"});
  ExpectError([&] { ops::FusedElementwise({x, RandomTensor(f32, {2})}, {Op(Code::kAdd), 2, 0, 1}); },
              {p, "x[1] has shape (2,)"});
  // Dtypes.
  ExpectError([&] { ops::FusedElementwise({x, RandomTensor(DType::Float64(), {3, 4})}, {Op(Code::kAdd), 2, 0, 1}); },
              {p, "x[1] is float64", "x[0] is float32"});
  ExpectError([&] { ops::FusedElementwise({RandomTensor(DType::Int64(), {3})}, {Op(Code::kNeg), 1, 0, -1}); },
              {p, "floating dtype", "int64"});
  // Inputs.
  ExpectError([&] { ops::FusedElementwise({}, {Op(Code::kNeg), 1, 0, -1}); }, {p, "at least 1 input"});
  ExpectError([&] { ops::FusedElementwise({x, nullptr}, {Op(Code::kAdd), 2, 0, 1}); }, {p, "input 'x' is null"});
}

// No backward: the ops run after autodiff.
TEST(FusedElementwise, NotDifferentiable) {
  EXPECT_EQ(OpRegistry::Global().Get("fused_elementwise").backward, nullptr);
  EXPECT_EQ(OpRegistry::Global().Get("fused_conv_bn_act").backward, nullptr);
}

// ---- fused_conv_bn_act ----------------------------------------------------------------------------
struct ConvBnCase {
  Shape x;
  int64_t out, k;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  bool bias, affine, relu;
  double eps;

  Shape weight_shape() const { return {out, x[1] / groups, k, k}; }
  ops::Conv2dOptions options() const { return {stride, padding, dilation, groups}; }
  std::string name() const {
    return fmt::format("x {} out {} k {} stride [{}] padding [{}] dilation [{}] groups {} bias {} affine {} relu {} eps {}",
                       x, out, k, fmt::join(stride, ","), fmt::join(padding, ","), fmt::join(dilation, ","), groups,
                       bias, affine, relu, eps);
  }
};

const std::vector<ConvBnCase> kConvBnCases = {
    {{2, 3, 8, 9}, 4, 3, {1, 1}, {0, 0}, {1, 1}, 1, true, true, true, 1e-5},
    {{2, 3, 8, 9}, 4, 3, {1, 1}, {0, 0}, {1, 1}, 1, false, true, false, 1e-5},
    {{3, 4, 9, 8}, 6, 3, {2, 2}, {1, 1}, {1, 1}, 2, true, true, true, 1e-3},
    {{2, 6, 7, 7}, 6, 3, {1, 1}, {1, 1}, {1, 1}, 6, false, false, true, 1e-5},  // depthwise, no gamma/beta
    {{1, 8, 10, 10}, 16, 1, {2, 2}, {0, 0}, {1, 1}, 1, false, true, false, 1e-5},  // downsampling shortcut
    {{2, 3, 15, 13}, 8, 7, {2, 2}, {3, 3}, {1, 1}, 1, false, true, true, 1e-5},    // a ResNet stem
    {{1, 4, 9, 9}, 4, 3, {1, 2}, {2, 1}, {2, 2}, 2, true, false, false, 0.1},
};

// conv2d -> batch_norm -> relu from the definitions, in float64.
std::vector<double> RefConvBn(const ConvBnCase& k, const std::vector<TensorPtr>& in, const Shape& ys) {
  const std::vector<double> xv = ToDoubles(in[0]), wv = ToDoubles(in[1]);
  auto vec = [&](size_t i, double dflt) {
    return in[i] ? ToDoubles(in[i]) : std::vector<double>(static_cast<size_t>(k.out), dflt);
  };
  const std::vector<double> b = vec(2, 0), gamma = vec(3, 1), beta = vec(4, 0), mean = vec(5, 0), var = vec(6, 1);
  const Shape ws = k.weight_shape();
  const int64_t cg = k.x[1].value() / k.groups, og = k.out / k.groups;
  std::vector<double> y(static_cast<size_t>(ys.numel()));
  for (int64_t i = 0; i < ys.numel(); ++i) {
    const std::vector<int64_t> idx = Unravel(i, ys);
    const int64_t n = idx[0], o = idx[1], oy = idx[2], ox = idx[3];
    double s = b[static_cast<size_t>(o)];
    for (int64_t ci = 0; ci < cg; ++ci) {
      for (int64_t ki = 0; ki < k.k; ++ki) {
        for (int64_t kj = 0; kj < k.k; ++kj) {
          const int64_t iy = oy * k.stride[0] - k.padding[0] + ki * k.dilation[0];
          const int64_t ix = ox * k.stride[1] - k.padding[1] + kj * k.dilation[1];
          if (iy < 0 || iy >= k.x[2].value() || ix < 0 || ix >= k.x[3].value()) continue;
          s += xv[static_cast<size_t>(Ravel({n, o / og * cg + ci, iy, ix}, k.x))] *
               wv[static_cast<size_t>(Ravel({o, ci, ki, kj}, ws))];
        }
      }
    }
    const auto c = static_cast<size_t>(o);
    double v = (s - mean[c]) / std::sqrt(var[c] + k.eps) * gamma[c] + beta[c];
    if (k.relu) v = std::max(v, 0.0);
    y[static_cast<size_t>(i)] = v;
  }
  return y;
}

double MaxAbs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

std::vector<TensorPtr> ConvBnInputs(const ConvBnCase& k, Symbol<DType> dt) {
  const Shape c{k.out};
  return {RandomTensor(dt, k.x),
          RandomTensor(dt, k.weight_shape()),
          k.bias ? RandomTensor(dt, c) : TensorPtr(),
          k.affine ? RandomTensor(dt, c, 0.5, 1.5) : TensorPtr(),
          k.affine ? RandomTensor(dt, c, -1.0, 1.0) : TensorPtr(),
          RandomTensor(dt, c, -1.0, 1.0),
          RandomTensor(dt, c, 0.2, 2.0)};
}

TensorPtr RunFused(const ConvBnCase& k, const std::vector<TensorPtr>& in) {
  return ops::FusedConvBnAct(in[0], in[1], in[2], in[3], in[4], in[5], in[6], k.options(), k.eps, k.relu);
}

TensorPtr RunEager(const ConvBnCase& k, const std::vector<TensorPtr>& in) {
  const TensorPtr c = ops::Conv2d(in[0], in[1], in[2], k.options());
  const TensorPtr bn = ops::BatchNorm(c, in[3], in[4], in[5], in[6], {.training = false, .eps = k.eps});
  return k.relu ? ops::Relu(bn) : bn;
}

TEST(FusedConvBnAct, MatchesEagerConvBatchNormRelu) {
  for (Symbol<DType> dt : kDTypes) {
    const double tol = TolFor(dt, 1e-5, 1e-12);
    for (const ConvBnCase& k : kConvBnCases) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
      const std::vector<TensorPtr> in = ConvBnInputs(k, dt);
      const std::vector<double> mean_before = ToDoubles(in[5]), var_before = ToDoubles(in[6]);
      const TensorPtr eager = RunEager(k, in);
      const TensorPtr y = RunFused(k, in);
      // Errors of the sums scale with the values, not with each (possibly cancelled) result.
      const std::vector<double> ev = ToDoubles(eager);
      ExpectTensorNear(y, dt, eager->shape(), ev, tol, tol * std::max(1.0, MaxAbs(ev)));
      const std::vector<double> ref = RefConvBn(k, in, eager->shape());
      const double ref_tol = TolFor(dt, 2e-5, 1e-12);
      ExpectTensorNear(y, dt, eager->shape(), ref, ref_tol, ref_tol * std::max(1.0, MaxAbs(ref)));
      if (k.relu) {
        const std::vector<double> yv = ToDoubles(y);
        EXPECT_TRUE(std::all_of(yv.begin(), yv.end(), [](double v) { return v >= 0; }));
      }
      // The running stats are read, not updated.
      EXPECT_EQ(ToDoubles(in[5]), mean_before);
      EXPECT_EQ(ToDoubles(in[6]), var_before);
      MarkCovered("fused_conv_bn_act", dt);
    }
  }
}

// The batch norm is folded on every call: new running stats (as after an optimizer step or a load) give
// new results from the same (cached) primitive.
TEST(FusedConvBnAct, FoldsEveryCall) {
  for (Symbol<DType> dt : kDTypes) {
    SCOPED_TRACE(dt->name());
    const ConvBnCase& k = kConvBnCases[2];
    std::vector<TensorPtr> in = ConvBnInputs(k, dt);
    const TensorPtr first = RunFused(k, in);
    const double tol = TolFor(dt, 1e-5, 1e-12);
    for (size_t i : {size_t{3}, size_t{4}, size_t{5}, size_t{6}, size_t{1}, size_t{2}}) {
      in[i] = RandomTensor(dt, in[i]->shape(), 0.3, 1.7);
      const std::vector<double> ev = ToDoubles(RunEager(k, in));
      ExpectTensorNear(RunFused(k, in), dt, first->shape(), ev, tol, tol * std::max(1.0, MaxAbs(ev)));
    }
    // Non-contiguous inputs are made contiguous first.
    const std::vector<double> ev = ToDoubles(RunEager(k, in));
    std::vector<TensorPtr> nc;
    for (const TensorPtr& t : in) nc.push_back(t ? NonContiguous(t) : t);
    ExpectTensorNear(RunFused(k, nc), dt, first->shape(), ev, tol, tol * std::max(1.0, MaxAbs(ev)));
  }
}

TEST(FusedConvBnAct, Errors) {
  const auto f32 = DType::Float32();
  const ConvBnCase& k = kConvBnCases[0];
  const std::string p = "fused_conv_bn_act: ";
  auto with = [&](size_t i, TensorPtr t) {
    std::vector<TensorPtr> in = ConvBnInputs(k, f32);
    in[i] = std::move(t);
    return [k, in] { RunFused(k, in); };
  };
  ExpectError(with(5, RandomTensor(f32, {5})), {p, "running_mean", "1-D", "out_channels = 4", "(5,)"});
  ExpectError(with(6, RandomTensor(f32, {3})), {p, "running_var", "(3,)"});
  ExpectError(with(3, RandomTensor(f32, {4, 1})), {p, "bn_weight", "(4, 1)"});
  ExpectError(with(4, RandomTensor(f32, {2})), {p, "bn_bias", "(2,)"});
  ExpectError(with(6, RandomTensor(DType::Float64(), {4})), {p, "running_var is float64", "x is float32"});
  ExpectError(with(6, nullptr), {p, "input 'running_var' is null"});
  // conv2d's own checks.
  ExpectError(with(0, RandomTensor(f32, {3, 8, 8})), {p, "x must be 4-D", "(3, 8, 8)"});
  ExpectError(with(1, RandomTensor(f32, {4, 2, 3, 3})), {p, "channels", "(4, 2, 3, 3)"});
  ExpectError(with(2, RandomTensor(f32, {5})), {p, "bias", "(5,)"});
  const std::vector<TensorPtr> in = ConvBnInputs(k, f32);
  ExpectError([&] { ops::FusedConvBnAct(in[0], in[1], in[2], in[3], in[4], in[5], in[6], {}, -1.0); },
              {p, "eps must be finite and > 0", "-1"});
  // As batch_norm's: eps = 0 is refused too.
  ExpectError([&] { ops::FusedConvBnAct(in[0], in[1], in[2], in[3], in[4], in[5], in[6], {}, 0.0); },
              {p, "eps must be finite and > 0", "got 0"});
  ExpectError([&] { ops::FusedConvBnAct(in[0], in[1], in[2], in[3], in[4], in[5], in[6], {.stride = {0, 1}}); },
              {p, "stride"});
}

TEST(FusedConvBnAct, UnknownDimsFlowThroughInference) {
  const OpDef& op = OpRegistry::Global().Get("fused_conv_bn_act");
  const Dim n = Dim::NewSymbol("N");
  const auto f32 = DType::Float32();
  Attrs attrs{{"stride", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{1, 1}},
              {"dilation", std::vector<int64_t>{1, 1}}, {"groups", int64_t{1}}, {"eps", 1e-5}, {"relu", true}};
  const TensorMeta c{f32, Shape{8}, Device::CPU()};
  std::vector<TensorMeta> in = {{f32, Shape{n, 3, Dim(), 9}, Device::CPU()}, {f32, Shape{8, 3, 3, 3}, Device::CPU()},
                                {}, c, c, c, c};
  EXPECT_EQ(op.infer(in, attrs)[0].shape, (Shape{n, 8, Dim(), 5}));
}

}  // namespace
}  // namespace oneflow::test
