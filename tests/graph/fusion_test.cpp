// The graph compiler's fusion and dead-code elimination, seen through Graph::Dump and the results:
// conv2d -> batch_norm(inference) [-> relu] becomes one fused_conv_bn_act step (which folds the current
// running stats at every run), elementwise chains become one fused_elementwise step, an intermediate that
// is a graph output or is read twice stays materialised, and unused traced branches are not run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/ops/ops.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::graph {
namespace {

using test::FromDoubles;
using test::RandomTensor;
using test::ToDoubles;

// The compiled steps of a dump ("  step #i: ... <- origin"), one string each.
std::vector<std::string> StepLines(const std::string& dump) {
  std::vector<std::string> steps;
  std::istringstream in(dump);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("  step #")) steps.push_back(line);
  }
  return steps;
}

// The op a step line runs: "  step #0: %7 = fused_elementwise(%0, %1) : ..." -> "fused_elementwise".
std::string StepOp(const std::string& line) {
  const size_t eq = line.find(" = ");
  const size_t start = eq == std::string::npos ? line.find(": ") + 2 : eq + 3;
  return line.substr(start, line.find('(', start) - start);
}

// What a step was fused from ("" when it runs one traced node).
std::string StepOrigin(const std::string& line) {
  const size_t at = line.find("  <- ");
  return at == std::string::npos ? std::string() : line.substr(at + 5);
}

// |a - e| <= rtol * (|e| + max|expected|).
void ExpectClose(const std::vector<double>& actual, const std::vector<double>& expected, double rtol,
                 const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double scale = 0;
  for (double e : expected) scale = std::max(scale, std::fabs(e));
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double err = std::fabs(actual[i] - expected[i]);
    if (!(err <= rtol * (std::fabs(expected[i]) + scale)) && reported++ < 3) {
      ADD_FAILURE() << what << "[" << i << "]: got " << actual[i] << ", want " << expected[i];
    }
  }
}

// ---- conv2d -> batch_norm(inference) [-> relu] -----------------------------------------------------

struct ConvBnCase {
  Symbol<DType> dtype;
  bool conv_bias;
  bool relu;
  bool affine;  // batch norm weight and bias given (else gamma = 1, beta = 0)
};

std::string Name(const ConvBnCase& c) {
  return std::string(c.dtype->name()) + (c.conv_bias ? " bias" : " no-bias") + (c.relu ? " relu" : " no-relu") +
         (c.affine ? " affine" : " no-affine");
}

constexpr int64_t kN = 2, kCin = 3, kCout = 5, kH = 7, kW = 6, kStride = 2, kPad = 1, kK = 3;

struct ConvBnModel {
  TensorPtr weight, bias, gamma, beta, mean, var;
};

ConvBnModel MakeConvBn(const ConvBnCase& c) {
  ConvBnModel m;
  m.weight = RandomTensor(c.dtype, Shape{kCout, kCin, kK, kK}, -0.5, 0.5);
  if (c.conv_bias) m.bias = RandomTensor(c.dtype, Shape{kCout}, -0.5, 0.5);
  if (c.affine) {
    m.gamma = RandomTensor(c.dtype, Shape{kCout}, 0.5, 1.5);
    m.beta = RandomTensor(c.dtype, Shape{kCout}, -0.5, 0.5);
  }
  m.mean = RandomTensor(c.dtype, Shape{kCout}, -0.5, 0.5);
  m.var = RandomTensor(c.dtype, Shape{kCout}, 0.3, 2.0);
  return m;
}

const ops::Conv2dOptions kConvOptions{.stride = {kStride, kStride}, .padding = {kPad, kPad}};
constexpr double kEps = 1e-5;

TensorPtr ConvBnAct(const ConvBnModel& m, const TensorPtr& x, bool relu) {
  TensorPtr y = ops::BatchNorm(ops::Conv2d(x, m.weight, m.bias, kConvOptions), m.gamma, m.beta, m.mean, m.var,
                               ops::BatchNormOptions{.training = false, .eps = kEps});
  return relu ? ops::Relu(y) : y;
}

// float64 loops over the inputs' values.
std::vector<double> ReferenceConvBnAct(const ConvBnModel& m, const TensorPtr& x, bool relu) {
  const std::vector<double> xv = ToDoubles(x), w = ToDoubles(m.weight);
  const std::vector<double> b = m.bias ? ToDoubles(m.bias) : std::vector<double>(kCout, 0.0);
  const std::vector<double> g = m.gamma ? ToDoubles(m.gamma) : std::vector<double>(kCout, 1.0);
  const std::vector<double> be = m.beta ? ToDoubles(m.beta) : std::vector<double>(kCout, 0.0);
  const std::vector<double> mean = ToDoubles(m.mean), var = ToDoubles(m.var);
  const int64_t oh = (kH + 2 * kPad - kK) / kStride + 1, ow = (kW + 2 * kPad - kK) / kStride + 1;
  std::vector<double> y;
  for (int64_t n = 0; n < kN; ++n) {
    for (int64_t o = 0; o < kCout; ++o) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          double acc = b[static_cast<size_t>(o)];
          for (int64_t c = 0; c < kCin; ++c) {
            for (int64_t ki = 0; ki < kK; ++ki) {
              for (int64_t kj = 0; kj < kK; ++kj) {
                const int64_t r = i * kStride - kPad + ki, s = j * kStride - kPad + kj;
                if (r < 0 || r >= kH || s < 0 || s >= kW) continue;
                acc += xv[static_cast<size_t>(((n * kCin + c) * kH + r) * kW + s)] *
                       w[static_cast<size_t>(((o * kCin + c) * kK + ki) * kK + kj)];
              }
            }
          }
          const auto u = static_cast<size_t>(o);
          double v = (acc - mean[u]) / std::sqrt(var[u] + kEps) * g[u] + be[u];
          if (relu) v = std::max(v, 0.0);
          y.push_back(v);
        }
      }
    }
  }
  return y;
}

double Rtol(Symbol<DType> dtype) { return dtype == DType::Float64() ? 1e-12 : 1e-5; }

void RunConvBnCase(const ConvBnCase& c) {
  SCOPED_TRACE(Name(c));
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const ConvBnModel m = MakeConvBn(c);
  auto build = [&](Graph& g) {
    g.BeginBuild();
    TensorPtr x = g.AddInput("x", c.dtype, Shape{Dim::Unknown(), kCin, kH, kW});
    g.AddOutput(ConvBnAct(m, x, c.relu));
    g.EndBuild();
  };
  Graph fused(session_owner, "conv_bn", GraphOptions{});
  build(fused);
  GraphOptions no_fuse;
  no_fuse.fuse = false;
  Graph plain(session_owner, "conv_bn_unfused", no_fuse);
  build(plain);

  const TensorPtr x = RandomTensor(c.dtype, Shape{kN, kCin, kH, kW});
  const TensorPtr y = fused.Run({x})[0];
  const TensorPtr y_plain = plain.Run({x})[0];
  const TensorPtr y_eager = ConvBnAct(m, x, c.relu);
  const double rtol = Rtol(c.dtype);
  ASSERT_EQ(y->shape(), y_eager->shape());
  ExpectClose(ToDoubles(y), ToDoubles(y_eager), rtol, "fused vs eager");
  ExpectClose(ToDoubles(y), ToDoubles(y_plain), rtol, "fused vs fuse=false");
  ExpectClose(ToDoubles(y_eager), ReferenceConvBnAct(m, x, c.relu), rtol, "eager vs reference");
  ExpectClose(ToDoubles(y), ReferenceConvBnAct(m, x, c.relu), rtol, "fused vs reference");
  if (c.relu) {
    const std::vector<double> v = ToDoubles(y);
    EXPECT_TRUE(std::any_of(v.begin(), v.end(), [](double e) { return e == 0.0; }));  // relu did clip
  }

  const std::vector<std::string> steps = StepLines(fused.Dump());
  ASSERT_EQ(steps.size(), 1u) << fused.Dump();
  EXPECT_EQ(StepOp(steps[0]), "fused_conv_bn_act") << steps[0];
  EXPECT_EQ(StepOrigin(steps[0]), c.relu ? "conv2d+batch_norm+relu" : "conv2d+batch_norm") << steps[0];
  const std::vector<std::string> plain_steps = StepLines(plain.Dump());
  ASSERT_EQ(plain_steps.size(), c.relu ? 3u : 2u) << plain.Dump();
  EXPECT_EQ(StepOp(plain_steps[0]), "conv2d");
  EXPECT_EQ(StepOp(plain_steps[1]), "batch_norm");

  // The running stats (and gamma) change between runs, in place: the fold follows.
  {
    auto edit = [&](const TensorPtr& t, auto fn) {
      if (c.dtype == DType::Float64()) {
        for (int64_t i = 0; i < t->numel(); ++i) t->data<double>()[i] = fn(t->data<double>()[i], i);
      } else {
        for (int64_t i = 0; i < t->numel(); ++i) t->data<float>()[i] = static_cast<float>(fn(t->data<float>()[i], i));
      }
    };
    edit(m.mean, [](double v, int64_t i) { return v + 0.25 * static_cast<double>(i + 1); });
    edit(m.var, [](double v, int64_t i) { return v * (i % 2 == 0 ? 2.0 : 0.5); });
    if (m.gamma) edit(m.gamma, [](double v, int64_t /*i*/) { return -v; });
  }
  const TensorPtr y2 = fused.Run({x})[0];
  const std::vector<double> expect2 = ReferenceConvBnAct(m, x, c.relu);
  EXPECT_NE(ToDoubles(y2), ToDoubles(y));
  ExpectClose(ToDoubles(y2), expect2, rtol, "fused after the stats changed vs reference");
  ExpectClose(ToDoubles(y2), ToDoubles(ConvBnAct(m, x, c.relu)), rtol, "fused after the stats changed vs eager");
  ExpectClose(ToDoubles(y2), ToDoubles(plain.Run({x})[0]), rtol, "fused after the stats changed vs fuse=false");
  EXPECT_EQ(fused.memory_stats().specialization_count, 1u);  // the same compiled plan
}

TEST(Fusion, ConvBnReluFloat64) {
  for (bool bias : {true, false}) {
    for (bool relu : {true, false}) RunConvBnCase({DType::Float64(), bias, relu, true});
  }
  RunConvBnCase({DType::Float64(), true, true, false});
}

TEST(Fusion, ConvBnReluFloat32) {
  for (bool bias : {true, false}) {
    for (bool relu : {true, false}) RunConvBnCase({DType::Float32(), bias, relu, true});
  }
  RunConvBnCase({DType::Float32(), false, false, false});
}

// The conv output (or the batch norm's) is also a graph output: nothing folds through it.
TEST(Fusion, ConvBnNotFusedWhenTheConvOutputIsAGraphOutput) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const ConvBnCase c{DType::Float64(), true, true, true};
  const ConvBnModel m = MakeConvBn(c);
  Graph g(session_owner, "conv_out", GraphOptions{});
  g.BeginBuild();
  TensorPtr x = g.AddInput("x", c.dtype, Shape{kN, kCin, kH, kW});
  TensorPtr conv = ops::Conv2d(x, m.weight, m.bias, kConvOptions);
  TensorPtr bn = ops::BatchNorm(conv, m.gamma, m.beta, m.mean, m.var, ops::BatchNormOptions{.training = false});
  g.AddOutput(ops::Relu(bn));
  g.AddOutput(conv);
  g.EndBuild();
  const TensorPtr xv = RandomTensor(c.dtype, Shape{kN, kCin, kH, kW});
  const std::vector<TensorPtr> out = g.Run({xv});
  const std::vector<std::string> steps = StepLines(g.Dump());
  ASSERT_EQ(steps.size(), 3u) << g.Dump();
  EXPECT_EQ(StepOp(steps[0]), "conv2d");
  EXPECT_EQ(StepOp(steps[1]), "batch_norm");
  EXPECT_EQ(StepOp(steps[2]), "relu");
  ExpectClose(ToDoubles(out[0]), ReferenceConvBnAct(m, xv, true), 1e-12, "relu output");
  ExpectClose(ToDoubles(out[1]), ToDoubles(ops::Conv2d(xv, m.weight, m.bias, kConvOptions)), 1e-12, "conv output");
}

// A batch norm in training mode (batch statistics) is not folded.
TEST(Fusion, TrainingBatchNormIsNotFolded) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const ConvBnModel m = MakeConvBn({DType::Float64(), false, true, true});
  Graph g(session_owner, "conv_bn_train", GraphOptions{});
  g.BeginBuild();
  TensorPtr x = g.AddInput("x", DType::Float64(), Shape{kN, kCin, kH, kW});
  g.AddOutput(ops::Relu(ops::BatchNorm(ops::Conv2d(x, m.weight, nullptr, kConvOptions), m.gamma, m.beta, m.mean, m.var,
                                       ops::BatchNormOptions{.training = true})));
  g.EndBuild();
  g.Run({RandomTensor(DType::Float64(), Shape{kN, kCin, kH, kW})});
  const std::string dump = g.Dump();
  EXPECT_EQ(dump.find("fused_conv_bn_act"), std::string::npos) << dump;
  EXPECT_NE(dump.find("batch_norm_add_relu"), std::string::npos) << dump;  // the ReLU joins the batch norm
  EXPECT_EQ(StepLines(dump).size(), 2u) << dump;
}

// ---- elementwise chains -----------------------------------------------------------------------------

// relu(x * w + b) - 0.5, with w an eager tensor (a free tensor of the graph) and 0.5 a scalar.
TEST(Fusion, ElementwiseChainIsOneStep) {
  for (Symbol<DType> dtype : {DType::Float64(), DType::Float32()}) {
    SCOPED_TRACE(dtype->name());
    const auto session_owner = std::make_shared<Session>(SessionOptions{});
    Session& session = *session_owner;
    SessionScope scope(session);
    const Shape shape{4, 6};
    const TensorPtr w = RandomTensor(dtype, shape);
    auto f = [&](const TensorPtr& x, const TensorPtr& b) { return ops::SubScalar(ops::Relu(ops::Add(ops::Mul(x, w), b)), 0.5); };
    Graph g(session_owner, "chain", GraphOptions{});
    g.BeginBuild();
    TensorPtr x = g.AddInput("x", dtype, Shape{Dim::Unknown(), 6});
    TensorPtr b = g.AddInput("b", dtype, Shape{Dim::Unknown(), 6});
    g.AddOutput(f(x, b));
    g.EndBuild();
    const TensorPtr xv = RandomTensor(dtype, shape), bv = RandomTensor(dtype, shape);
    const TensorPtr y = g.Run({xv, bv})[0];
    const std::vector<std::string> steps = StepLines(g.Dump());
    ASSERT_EQ(steps.size(), 1u) << g.Dump();
    EXPECT_EQ(StepOp(steps[0]), "fused_elementwise") << steps[0];
    EXPECT_EQ(StepOrigin(steps[0]), "mul+add+relu+sub") << steps[0];
    // Each opcode computes what its op computes: the same values as eager, to the bit.
    EXPECT_EQ(ToDoubles(y), ToDoubles(f(xv, bv)));
    // And a float64 reference (float32: each op rounds to float, hence the tolerance).
    const std::vector<double> xs = ToDoubles(xv), ws = ToDoubles(w), bs = ToDoubles(bv);
    std::vector<double> ref;
    for (size_t i = 0; i < xs.size(); ++i) ref.push_back(std::max(xs[i] * ws[i] + bs[i], 0.0) - 0.5);
    ExpectClose(ToDoubles(y), ref, Rtol(dtype), "chain vs reference");
  }
}

// A tree of exp / sigmoid / tanh / neg / abs / mul / add over two inputs and a scalar.
TEST(Fusion, TranscendentalMixIsOneStep) {
  for (Symbol<DType> dtype : {DType::Float64(), DType::Float32()}) {
    SCOPED_TRACE(dtype->name());
    const auto session_owner = std::make_shared<Session>(SessionOptions{});
    Session& session = *session_owner;
    SessionScope scope(session);
    auto f = [](const TensorPtr& x, const TensorPtr& w) {
      TensorPtr a = ops::Tanh(ops::Mul(ops::Sigmoid(x), ops::Exp(ops::Neg(ops::Abs(w)))));
      return ops::Add(a, ops::MulScalar(x, 0.25));
    };
    Graph g(session_owner, "mix", GraphOptions{});
    g.BeginBuild();
    TensorPtr x = g.AddInput("x", dtype, Shape{3, 5, 7});
    TensorPtr w = g.AddInput("w", dtype, Shape{3, 5, 7});
    g.AddOutput(f(x, w));
    g.EndBuild();
    const TensorPtr xv = RandomTensor(dtype, Shape{3, 5, 7}, -4, 4), wv = RandomTensor(dtype, Shape{3, 5, 7}, -3, 3);
    const TensorPtr y = g.Run({xv, wv})[0];
    const std::vector<std::string> steps = StepLines(g.Dump());
    ASSERT_EQ(steps.size(), 1u) << g.Dump();
    EXPECT_EQ(StepOp(steps[0]), "fused_elementwise") << steps[0];
    const std::string origin = StepOrigin(steps[0]);
    for (const char* op : {"sigmoid", "abs", "neg", "exp", "tanh", "add"}) {
      EXPECT_NE(origin.find(op), std::string::npos) << op << " in " << origin;
    }
    EXPECT_EQ(std::count(origin.begin(), origin.end(), '+'), 7) << origin;  // 8 ops: two muls
    EXPECT_EQ(ToDoubles(y), ToDoubles(f(xv, wv)));
    const std::vector<double> xs = ToDoubles(xv), ws = ToDoubles(wv);
    std::vector<double> ref;
    for (size_t i = 0; i < xs.size(); ++i) {
      ref.push_back(std::tanh(1.0 / (1.0 + std::exp(-xs[i])) * std::exp(-std::fabs(ws[i]))) + xs[i] * 0.25);
    }
    ExpectClose(ToDoubles(y), ref, Rtol(dtype), "mix vs reference");
  }
}

// t = x * w is also a graph output: the chain is cut there (t is computed by its own step and stored).
TEST(Fusion, NotFusedThroughAGraphOutput) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const Symbol<DType> dtype = DType::Float64();
  Graph g(session_owner, "cut_output", GraphOptions{});
  g.BeginBuild();
  TensorPtr x = g.AddInput("x", dtype, Shape{8});
  TensorPtr w = g.AddInput("w", dtype, Shape{8});
  TensorPtr b = g.AddInput("b", dtype, Shape{8});
  TensorPtr t = ops::Mul(x, w);
  TensorPtr u = ops::Relu(ops::Add(t, b));
  g.AddOutput(u);
  g.AddOutput(t);
  g.EndBuild();
  const TensorPtr xv = RandomTensor(dtype, Shape{8}), wv = RandomTensor(dtype, Shape{8}), bv = RandomTensor(dtype, Shape{8});
  const std::vector<TensorPtr> out = g.Run({xv, wv, bv});
  const std::vector<std::string> steps = StepLines(g.Dump());
  ASSERT_EQ(steps.size(), 2u) << g.Dump();
  EXPECT_EQ(StepOp(steps[0]), "mul") << steps[0];
  EXPECT_NE(steps[0].find("[output]"), std::string::npos) << steps[0];
  EXPECT_EQ(StepOp(steps[1]), "fused_elementwise") << steps[1];
  EXPECT_EQ(StepOrigin(steps[1]), "add+relu") << steps[1];
  const std::string t_ref = "%" + std::to_string(t->lazy_value());
  EXPECT_NE(steps[1].find("(" + t_ref + ","), std::string::npos) << "the fused step reads t: " << steps[1];
  EXPECT_EQ(ToDoubles(out[0]), ToDoubles(ops::Relu(ops::Add(ops::Mul(xv, wv), bv))));
  EXPECT_EQ(ToDoubles(out[1]), ToDoubles(ops::Mul(xv, wv)));
}

// t = x * w + b is read twice (by relu and by tanh): two fused steps, cut at t.
TEST(Fusion, NotFusedThroughAValueReadTwice) {
  for (Symbol<DType> dtype : {DType::Float64(), DType::Float32()}) {
    SCOPED_TRACE(dtype->name());
    const auto session_owner = std::make_shared<Session>(SessionOptions{});
    Session& session = *session_owner;
    SessionScope scope(session);
    auto f = [](const TensorPtr& x, const TensorPtr& w, const TensorPtr& b) {
      TensorPtr t = ops::Add(ops::Mul(x, w), b);
      TensorPtr r = ops::Relu(t);  // traced in this order (argument evaluation order is unspecified)
      TensorPtr h = ops::Tanh(t);
      return std::make_pair(t, ops::Sub(r, h));
    };
    Graph g(session_owner, "cut_twice", GraphOptions{});
    g.BeginBuild();
    TensorPtr x = g.AddInput("x", dtype, Shape{2, 9});
    TensorPtr w = g.AddInput("w", dtype, Shape{2, 9});
    TensorPtr b = g.AddInput("b", dtype, Shape{2, 9});
    auto [t, y] = f(x, w, b);
    g.AddOutput(y);
    g.EndBuild();
    const TensorPtr xv = RandomTensor(dtype, Shape{2, 9}), wv = RandomTensor(dtype, Shape{2, 9}),
                    bv = RandomTensor(dtype, Shape{2, 9});
    const TensorPtr out = g.Run({xv, wv, bv})[0];
    const std::vector<std::string> steps = StepLines(g.Dump());
    ASSERT_EQ(steps.size(), 2u) << g.Dump();
    EXPECT_EQ(StepOrigin(steps[0]), "mul+add") << steps[0];
    EXPECT_EQ(StepOrigin(steps[1]), "relu+tanh+sub") << steps[1];
    const std::string t_ref = "%" + std::to_string(t->lazy_value());
    EXPECT_NE(steps[0].find(t_ref + " = fused_elementwise"), std::string::npos) << steps[0];
    EXPECT_NE(steps[0].find("arena"), std::string::npos) << "t is materialised: " << steps[0];
    EXPECT_NE(steps[1].find("fused_elementwise(" + t_ref + ")"), std::string::npos) << "the second step reads t: " << steps[1];
    EXPECT_EQ(ToDoubles(out), ToDoubles(f(xv, wv, bv).second));
  }
}

// ---- dead-code elimination --------------------------------------------------------------------------

TEST(Fusion, UnusedBranchIsEliminated) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const TensorPtr w = RandomTensor(DType::Float32(), Shape{4, 4});
  Graph g(session_owner, "dce", GraphOptions{});
  g.BeginBuild();
  TensorPtr x = g.AddInput("x", DType::Float32(), Shape{Dim::Unknown(), 4});
  TensorPtr y = ops::Relu(x);
  // Traced, never used: a matmul and an elementwise chain.
  TensorPtr unused = ops::Exp(ops::MulScalar(ops::Matmul(x, w), 3.0));
  (void)ops::Sum(ops::Sigmoid(unused));
  g.AddOutput(y);
  g.EndBuild();
  const TensorPtr xv = RandomTensor(DType::Float32(), Shape{3, 4});
  EXPECT_EQ(ToDoubles(g.Run({xv})[0]), ToDoubles(ops::Relu(xv)));
  const std::string dump = g.Dump();
  // The program holds the whole trace...
  for (const char* op : {"= matmul(", "= mul(", "= exp(", "= sigmoid(", "= sum("}) {
    EXPECT_NE(dump.find(op), std::string::npos) << op << "\n" << dump;
  }
  // ... the compiled steps only what reaches the output.
  const std::vector<std::string> steps = StepLines(dump);
  ASSERT_EQ(steps.size(), 1u) << dump;
  EXPECT_EQ(StepOp(steps[0]), "relu") << steps[0];
  EXPECT_EQ(g.memory_stats().node_count, 1u);
}

// An unused branch ending in a batch norm: in inference mode it writes nothing (only reads the running
// stats), so it is dead code like any other; in training mode it updates the running stats, a side
// effect that keeps it (as in eager mode, where the forward updates them).
TEST(Fusion, UnusedBatchNormBranchIsEliminatedUnlessItUpdatesStats) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const Shape shape{2, 4, 3, 3};
  const TensorPtr mean = RandomTensor(DType::Float32(), Shape{4}, -0.5, 0.5);
  const TensorPtr var = RandomTensor(DType::Float32(), Shape{4}, 0.5, 1.5);
  for (bool training : {true, false}) {  // training first: an ASSERT in the other case ends the test
    SCOPED_TRACE(training ? "training" : "inference");
    const std::vector<double> mean0 = ToDoubles(mean);  // the training case changes it
    Graph g(session_owner, "dce_bn", GraphOptions{});
    g.BeginBuild();
    TensorPtr x = g.AddInput("x", DType::Float32(), shape);
    (void)ops::BatchNorm(ops::Exp(x), nullptr, nullptr, mean, var, ops::BatchNormOptions{.training = training});
    g.AddOutput(ops::Relu(x));
    g.EndBuild();
    const TensorPtr xv = RandomTensor(DType::Float32(), shape);
    EXPECT_EQ(ToDoubles(g.Run({xv})[0]), ToDoubles(ops::Relu(xv)));
    const std::string dump = g.Dump();
    const std::vector<std::string> steps = StepLines(dump);
    if (training) {
      ASSERT_EQ(steps.size(), 3u) << dump;  // exp, batch_norm (updating the stats), relu
      EXPECT_NE(ToDoubles(mean), mean0);
    } else {
      ASSERT_EQ(steps.size(), 1u) << dump;
      EXPECT_EQ(StepOp(steps[0]), "relu") << steps[0];
      EXPECT_EQ(ToDoubles(mean), mean0);
    }
  }
}

}  // namespace
}  // namespace oneflow::graph
