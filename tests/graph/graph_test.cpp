// The lazy graph through its C++ API: tracing, free tensors, symbolic shapes, misuse errors.
#include <gtest/gtest.h>

#include <thread>

#include "core/graph/graph.h"
#include "core/ops/ops.h"
#include "core/train/optimizer.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::graph {
namespace {

using test::ExpectError;
using test::FromDoubles;
using test::RandomTensor;
using test::ToDoubles;

// Counts how often a deleter ran.
struct DeleteCounter {
  int count = 0;
  static void Delete(void* /*data*/, void* self) { ++static_cast<DeleteCounter*>(self)->count; }
};

size_t CountLines(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

// The seed case: y = x > 0.5 and a mask made inside the build, both free tensors.
TEST(Graph, FreeTensorsAreSessionOwnedAndReleasedWithTheGraph) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  DeleteCounter counter;
  std::vector<uint8_t> mask_data = {1, 0, 1, 1, 0, 1, 1, 0};
  uint64_t graph_id = 0;
  {
    Graph g(session_owner, "seed", GraphOptions{});
    graph_id = g.id();
    g.BeginBuild();
    TensorPtr x = g.AddInput("x", DType::Float32(), Shape{Dim::Unknown(), 4});
    TensorPtr y = ops::GtScalar(x, 0.5);  // the 0.5 becomes a free tensor
    // A mask made during the build, adopted with a deleter: eager creation, then a free tensor.
    TensorPtr mask = AdoptHost(DType::Bool(), Shape{2, 4}, mask_data.data(), mask_data.size(),
                               [&counter](void* p) { DeleteCounter::Delete(p, &counter); });
    EXPECT_FALSE(mask->is_lazy());
    TensorPtr z = ops::LogicalAnd(y, mask);
    EXPECT_TRUE(y->is_lazy());
    EXPECT_TRUE(z->is_lazy());
    g.AddOutput(y);
    g.AddOutput(z);
    g.EndBuild();
    mask = nullptr;  // the user lets go: the session keeps it for the graph
    EXPECT_EQ(counter.count, 0);
    EXPECT_EQ(g.num_free_tensors(), 2u);
    EXPECT_EQ(session.free_tensors().Count(graph_id), 2u);
    const std::string dump = g.Dump();
    EXPECT_EQ(CountLines(dump, "non-trainable"), 2u) << dump;
    EXPECT_EQ(CountLines(dump, "variable "), 2u) << dump;
    EXPECT_NE(dump.find("input %0 x: float32 (?, 4)"), std::string::npos) << dump;

    TensorPtr xv = FromDoubles(DType::Float32(), Shape{2, 4}, {0.1, 0.6, 0.5, 0.9, 1.0, -1.0, 0.7, 0.2});
    std::vector<TensorPtr> out = g.Run({xv});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{0, 1, 0, 1, 1, 0, 1, 0}));
    EXPECT_EQ(ToDoubles(out[1]), (std::vector<double>{0, 0, 0, 1, 0, 0, 1, 0}));
    EXPECT_EQ(out[0]->dtype(), DType::Bool());
    EXPECT_EQ(counter.count, 0);
    // The compiled plan keeps no reference to a run's input.
    DeleteCounter input_counter;
    std::vector<float> input_data = {0.9f, 0.1f, 0.9f, 0.1f};
    TensorPtr adopted = AdoptHost(DType::Float32(), Shape{1, 4}, input_data.data(), 16,
                                  [&input_counter](void* p) { DeleteCounter::Delete(p, &input_counter); });
    EXPECT_EQ(ToDoubles(g.Run({adopted})[0]), (std::vector<double>{1, 0, 1, 0}));
    adopted = nullptr;
    EXPECT_EQ(input_counter.count, 1);
  }
  // Destroying the graph released the session's references: the mask's deleter ran exactly once.
  EXPECT_EQ(counter.count, 1);
  EXPECT_EQ(session.free_tensors().Count(graph_id), 0u);
}

TEST(Graph, SymbolicShapesFlowAndOneGraphRunsManySizes) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  Graph g(session_owner, "sym", GraphOptions{});
  g.BeginBuild();
  TensorPtr x = g.AddInput("x", DType::Float64(), Shape{Dim::Unknown(), 4});
  TensorPtr u = ops::Unsqueeze(x, 0);
  EXPECT_EQ(u->shape(), (Shape{1, Dim::Unknown(), 4}));
  TensorPtr s = ops::Sum(ops::Mul(u, u), {1}, false);
  EXPECT_EQ(s->shape(), (Shape{1, 4}));
  EXPECT_TRUE(s->shape().is_static());
  g.AddOutput(s);
  g.AddOutput(ops::Relu(x));
  g.EndBuild();
  const std::string dump = g.Dump();
  EXPECT_NE(dump.find("float64 (1, ?, 4)"), std::string::npos) << dump;
  EXPECT_NE(dump.find("float64 (1, 4)"), std::string::npos) << dump;

  for (int64_t batch : {2, 3, 2}) {
    TensorPtr xv = RandomTensor(DType::Float64(), Shape{batch, 4});
    std::vector<TensorPtr> out = g.Run({xv});
    TensorPtr expect0 = ops::Sum(ops::Mul(ops::Unsqueeze(xv, 0), ops::Unsqueeze(xv, 0)), {1}, false);
    EXPECT_EQ(out[0]->shape(), (Shape{1, 4}));
    EXPECT_EQ(ToDoubles(out[0]), ToDoubles(expect0));
    EXPECT_EQ(out[1]->shape(), (Shape{batch, 4}));
    EXPECT_EQ(ToDoubles(out[1]), ToDoubles(ops::Relu(xv)));
  }
  EXPECT_EQ(g.memory_stats().specialization_count, 2u);  // batch 2 compiled once, reused
}

// Multi-head attention's reshapes: targets traced with the named symbol `seq` (batch, seq, heads, d)
// run at each concrete length (Note [Symbols in attributes]), forward and backward, equal to eager. The
// gradient is observed through a plain SGD step with lr 1 (the update is minus the gradient).
TEST(Graph, NamedSymbolsInReshapeTargetsTakeEachRunsSize) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const Dim seq = session.DimSymbol("seq");
  auto forward = [](const TensorPtr& x, const TensorPtr& w, Dim len) {
    TensorPtr h = ops::Transpose(ops::Reshape(ops::Linear(x, w, nullptr), {2, len.raw(), 3, 2}), 1, 2);
    TensorPtr scores = ops::Softmax(ops::Matmul(h, ops::Transpose(h, -2, -1)), -1);
    TensorPtr merged = ops::Reshape(ops::Transpose(ops::Matmul(scores, h), 1, 2), {2, len.raw(), 6});
    return ops::Sum(ops::Mul(merged, merged));
  };
  TensorPtr w = RandomTensor(DType::Float64(), Shape{6, 6});
  w->set_requires_grad(true);
  Graph g(session_owner, "seq", GraphOptions{});
  g.BeginBuild();
  TensorPtr loss = forward(g.AddInput("x", DType::Float64(), Shape{2, seq, 6}), w, seq);
  Backward({loss}, {nullptr});
  g.AddOptimizer(std::make_shared<SGD>(std::vector<TensorPtr>{w}, SgdOptions{.lr = 1.0}));
  g.AddOutput(loss);
  g.EndBuild();
  for (int64_t len : {5, 2, 5}) {
    TensorPtr xv = RandomTensor(DType::Float64(), Shape{2, len, 6});
    const std::vector<double> before = ToDoubles(w);
    TensorPtr eager_w = FromDoubles(DType::Float64(), Shape{6, 6}, before);
    eager_w->set_requires_grad(true);
    TensorPtr expect = forward(xv, eager_w, Dim(len));
    Backward({expect}, {nullptr});
    const std::vector<double> grad = ToDoubles(eager_w->grad());
    std::vector<TensorPtr> out = g.Run({xv});
    EXPECT_NEAR(ToDoubles(out[0])[0], ToDoubles(expect)[0], 1e-9 * std::abs(ToDoubles(expect)[0]));
    const std::vector<double> after = ToDoubles(w);
    for (size_t i = 0; i < after.size(); ++i) EXPECT_NEAR(before[i] - after[i], grad[i], 1e-9) << len << ": " << i;
  }
  EXPECT_EQ(g.memory_stats().specialization_count, 2u);
}

TEST(Graph, NamedSymbolsMustAgree) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  Graph g(session_owner, "named", GraphOptions{});
  const Dim n = session.DimSymbol("N");
  g.BeginBuild();
  TensorPtr a = g.AddInput("a", DType::Float32(), Shape{n, 3});
  TensorPtr b = g.AddInput("b", DType::Float32(), Shape{n, 3});
  TensorPtr c = ops::Add(a, b);
  EXPECT_EQ(c->shape(), (Shape{n, 3}));
  g.AddOutput(c);
  g.EndBuild();
  EXPECT_NE(g.Dump().find("float32 (N, 3)"), std::string::npos);
  auto out = g.Run({RandomTensor(DType::Float32(), Shape{5, 3}), RandomTensor(DType::Float32(), Shape{5, 3})});
  EXPECT_EQ(out[0]->shape(), (Shape{5, 3}));
  ExpectError([&] { g.Run({RandomTensor(DType::Float32(), Shape{2, 3}), RandomTensor(DType::Float32(), Shape{3, 3})}); },
              {"input 'b'", "N"});
  ExpectError([&] { g.Run({RandomTensor(DType::Float32(), Shape{2, 4}), RandomTensor(DType::Float32(), Shape{2, 4})}); },
              {"input 'a'"});
  ExpectError([&] { g.Run({RandomTensor(DType::Float64(), Shape{2, 3}), RandomTensor(DType::Float32(), Shape{2, 3})}); },
              {"input 'a'", "float32", "float64"});
  ExpectError([&] { g.Run({RandomTensor(DType::Float32(), Shape{2, 3, 1}), RandomTensor(DType::Float32(), Shape{2, 3})}); },
              {"input 'a'"});
  ExpectError([&] { g.Run({RandomTensor(DType::Float32(), Shape{2, 3})}); }, {"2 input(s), got 1"});
}

TEST(Graph, MisuseIsAnErrorNamingTheProblem) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  Graph g(session_owner, "g1", GraphOptions{});
  ExpectError([&] { g.Run({}); }, StatusCode::kFailedPrecondition, {"'g1'", "never built"});
  g.BeginBuild();
  TensorPtr x = g.AddInput("x", DType::Float32(), Shape{2});
  TensorPtr y = ops::Neg(x);
  ExpectError([&] { CheckEager(*y, "y"); }, StatusCode::kFailedPrecondition, {"lazy", "no data"});
  std::vector<float> host(2);
  ExpectError([&] { CopyToHost(*y, host.data(), 8); }, StatusCode::kFailedPrecondition, {"lazy"});
  ExpectError([&] { g.AddInput("x", DType::Float32(), Shape{2}); }, {"already has an input named 'x'"});
  ExpectError([&] { g.AddOutput(RandomTensor(DType::Float32(), Shape{2})); }, {"eager tensor"});
  ExpectError([&] { g.Run({}); }, StatusCode::kFailedPrecondition, {"still being built"});
  Graph other(session_owner, "g2", GraphOptions{});
  ExpectError([&] { other.BeginBuild(); }, StatusCode::kFailedPrecondition, {"another graph is being built"});
  g.AddOutput(y);
  g.EndBuild();
  ExpectError([&] { g.BeginBuild(); }, StatusCode::kFailedPrecondition, {"already built"});
  // After its build, the lazy tensor cannot be used by ops.
  ExpectError([&] { ops::Neg(y); }, StatusCode::kFailedPrecondition, {"lazy tensor of graph 'g1'"});
  // Nor in another graph's build.
  other.BeginBuild();
  ExpectError([&] { ops::Neg(y); }, {"another graph", "'g1'"});
  // Another session on this thread stays eager while the build is open.
  const auto eager_owner = std::make_shared<Session>(SessionOptions{});
  Session& eager = *eager_owner;
  {
    SessionScope eager_scope(eager);
    TensorPtr e = ops::Neg(FromDoubles(DType::Float32(), Shape{2}, {1, 2}));
    EXPECT_FALSE(e->is_lazy());
    EXPECT_EQ(ToDoubles(e), (std::vector<double>{-1, -2}));
  }
  // Other threads stay eager too, in the same session.
  std::thread worker([&] {
    SessionScope worker_scope(session);
    TensorPtr e = ops::Neg(FromDoubles(DType::Float32(), Shape{2}, {3, 4}));
    EXPECT_FALSE(e->is_lazy());
    EXPECT_EQ(ToDoubles(e), (std::vector<double>{-3, -4}));
    ExpectError([&] { other.AddInput("z", DType::Float32(), Shape{1}); }, StatusCode::kFailedPrecondition,
                {"another thread"});
  });
  worker.join();
  // A graph of another session cannot open a build on this thread while this one is open.
  {
    SessionScope eager_scope(eager);
    Graph third(eager_owner, "g3", GraphOptions{});
    ExpectError([&] { third.BeginBuild(); }, StatusCode::kFailedPrecondition, {"another graph"});
  }
  ExpectError([&] { other.EndBuild(); }, StatusCode::kFailedPrecondition, {"no outputs"});
}

// Destroying a graph during its build ends the build: ops run eagerly again.
TEST(Graph, DestroyingAGraphDuringItsBuildEndsIt) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  {
    Graph g(session_owner, "abandoned", GraphOptions{});
    g.BeginBuild();
    TensorPtr x = g.AddInput("x", DType::Float32(), Shape{2});
    EXPECT_TRUE(ops::Neg(x)->is_lazy());
    EXPECT_TRUE(ops::Neg(FromDoubles(DType::Float32(), Shape{1}, {1}))->is_lazy());
  }
  TensorPtr e = ops::Neg(FromDoubles(DType::Float32(), Shape{1}, {1}));
  EXPECT_FALSE(e->is_lazy());
  Graph next(session_owner, "next", GraphOptions{});
  next.BeginBuild();  // no build is left open on this thread
}

// A linear classifier trained 4 steps eagerly and through a graph from the same weights.
TEST(Graph, TrainingStepEqualsEager) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const TensorPtr w0 = RandomTensor(DType::Float64(), Shape{3, 5});
  const TensorPtr b0 = RandomTensor(DType::Float64(), Shape{3});
  auto clone = [](const TensorPtr& t) {
    TensorPtr c = FromDoubles(t->dtype(), t->shape(), ToDoubles(t));
    c->set_requires_grad(true);
    return c;
  };
  std::vector<TensorPtr> xs, ys;
  for (int i = 0; i < 4; ++i) {
    xs.push_back(RandomTensor(DType::Float64(), Shape{6, 5}));
    ys.push_back(FromDoubles(DType::Int64(), Shape{6}, {0, 1, 2, 2, 1, 0}));
  }
  const SgdOptions sgd{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true};
  // Eager.
  TensorPtr we = clone(w0), be = clone(b0);
  SGD eager_opt({we, be}, sgd);
  std::vector<double> eager_losses;
  for (int i = 0; i < 4; ++i) {
    if (i == 2) eager_opt.set_lr(0.05);
    TensorPtr loss = ops::CrossEntropy(ops::Linear(xs[i], we, be), ys[i]);
    eager_losses.push_back(ToDoubles(loss)[0]);
    eager_opt.ZeroGrad();
    Backward({loss}, {nullptr});
    eager_opt.Step();
  }
  // Lazy.
  TensorPtr wl = clone(w0), bl = clone(b0);
  auto lazy_opt = std::make_shared<SGD>(std::vector<TensorPtr>{wl, bl}, sgd);
  Graph g(session_owner, "train", GraphOptions{});
  g.BeginBuild();
  TensorPtr x = g.AddInput("x", DType::Float64(), Shape{Dim::Unknown(), 5});
  TensorPtr y = g.AddInput("y", DType::Int64(), Shape{Dim::Unknown()});
  TensorPtr loss = ops::CrossEntropy(ops::Linear(x, wl, bl), y);
  Backward({loss}, {nullptr});
  EXPECT_FALSE(wl->grad());  // lazy gradients stay in the graph
  g.AddOptimizer(lazy_opt);
  g.AddOutput(loss);
  g.EndBuild();
  const std::string dump = g.Dump();
  EXPECT_EQ(CountLines(dump, " trainable\n"), 2u) << dump;
  EXPECT_EQ(CountLines(dump, "sgd_update"), 2u) << dump;
  for (int i = 0; i < 4; ++i) {
    if (i == 2) lazy_opt->set_lr(0.05);
    const double l = ToDoubles(g.Run({xs[i], ys[i]})[0])[0];
    EXPECT_NEAR(l, eager_losses[static_cast<size_t>(i)], 1e-12) << "step " << i;
  }
  const std::vector<double> we_v = ToDoubles(we), wl_v = ToDoubles(wl);
  for (size_t k = 0; k < we_v.size(); ++k) EXPECT_NEAR(wl_v[k], we_v[k], 1e-12);
  const std::vector<double> be_v = ToDoubles(be), bl_v = ToDoubles(bl);
  for (size_t k = 0; k < be_v.size(); ++k) EXPECT_NEAR(bl_v[k], be_v[k], 1e-12);
}

// Known limit: cat's backward needs concrete sizes on the cat dim; with an unknown one the traced
// backward is refused with an error (no crash), and the graph can still be built without backward.
TEST(Graph, CatBackwardOverAnUnknownCatDimIsAnError) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  Graph g(session_owner, "cat", GraphOptions{});
  g.BeginBuild();
  TensorPtr x = g.AddInput("x", DType::Float64(), Shape{Dim::Unknown(), 4});
  TensorPtr w = RandomTensor(DType::Float64(), Shape{2, 4});
  w->set_requires_grad(true);
  TensorPtr loss = ops::Sum(ops::Cat({x, w}, 0));
  ExpectError([&] { Backward({loss}, {nullptr}); }, {"cat backward", "not known"});
  g.AddOutput(loss);
  g.EndBuild();
  TensorPtr xv = RandomTensor(DType::Float64(), Shape{3, 4});
  EXPECT_NEAR(ToDoubles(g.Run({xv})[0])[0], ToDoubles(ops::Sum(ops::Cat({xv, w}, 0)))[0], 1e-12);
}

}  // namespace
}  // namespace oneflow::graph
