// Indexing ops against float64 reference loops written here (on row-major value lists): every op x
// kernel dtype, non-contiguous inputs, duplicate and empty indices, negative dims, finite-difference
// gradients, out-of-range indices (checked before anything is written), a lazy graph with a symbolic
// dim, and the errors a user can provoke.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/ops/indexing.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kFloating = {DType::Float32(), DType::Float64()};

TensorPtr RunOp(std::string_view op, std::vector<TensorPtr> inputs, Attrs attrs) {
  return Apply1(OpRegistry::Global().Get(op), std::move(inputs), std::move(attrs));
}
TensorPtr Int64s(const Shape& shape, const std::vector<double>& values) {
  return FromDoubles(DType::Int64(), shape, values);
}
TensorPtr Leaf(const Shape& shape) {
  TensorPtr t = RandomTensor(DType::Float64(), shape);
  t->set_requires_grad(true);
  return t;
}
Shape Append(Shape s, Dim d) {
  s.push_back(d);
  return s;
}

// ---- embedding ------------------------------------------------------------------------------------

std::vector<double> RefEmbedding(const std::vector<double>& w, int64_t dim, const std::vector<double>& idx) {
  std::vector<double> out;
  for (double i : idx) {
    for (int64_t c = 0; c < dim; ++c) out.push_back(w[static_cast<size_t>(static_cast<int64_t>(i) * dim + c)]);
  }
  return out;
}
std::vector<double> RefEmbeddingGrad(const std::vector<double>& dy, int64_t num, int64_t dim,
                                     const std::vector<double>& idx, int64_t padding_idx) {
  std::vector<double> out(static_cast<size_t>(num * dim), 0.0);
  for (size_t j = 0; j < idx.size(); ++j) {
    const int64_t r = static_cast<int64_t>(idx[j]);
    if (r == padding_idx) continue;
    for (int64_t c = 0; c < dim; ++c) out[static_cast<size_t>(r * dim + c)] += dy[j * static_cast<size_t>(dim) + c];
  }
  return out;
}

TEST(Embedding, SelectsRowsForAnyIndexShape) {
  for (Symbol<DType> dt : kFloating) {
    SCOPED_TRACE(dt->name());
    const TensorPtr w = RandomTensor(dt, Shape{5, 3});
    const std::vector<double> wv = ToDoubles(w);
    const std::vector<std::pair<Shape, std::vector<double>>> cases = {
        {Shape{2, 3}, {0, 4, 4, 1, 0, 2}}, {Shape{}, {3}}, {Shape{0}, {}}, {Shape{2, 0, 2}, {}}, {Shape{4}, {1, 1, 1, 1}}};
    for (const auto& [shape, idx] : cases) {
      const TensorPtr y = ops::Embedding(w, Int64s(shape, idx));
      ExpectTensorNear(y, dt, Append(shape, 3), RefEmbedding(wv, 3, idx), 0, 0);
    }
    // Non-contiguous weight and indices.
    const TensorPtr wn = NonContiguous(w);
    const TensorPtr in = NonContiguous(Int64s(Shape{3, 2}, {4, 0, 2, 2, 3, 1}));
    ExpectTensorNear(ops::Embedding(wn, in), dt, Shape{3, 2, 3}, RefEmbedding(wv, 3, ToDoubles(in)), 0, 0);
    MarkCovered("embedding", dt);
  }
}

TEST(Embedding, BackwardSumsDuplicatesAndSkipsPaddingIdx) {
  for (Symbol<DType> dt : kFloating) {
    SCOPED_TRACE(dt->name());
    // Large enough that the row sums run on several threads; many duplicates.
    const int64_t num = 37, dim = 70, n = 3000;
    std::vector<double> idx(n);
    for (int64_t j = 0; j < n; ++j) idx[static_cast<size_t>(j)] = static_cast<double>((j * 7 + j / 5) % num);
    const TensorPtr indices = Int64s(Shape{30, 100}, idx);
    const TensorPtr dy = RandomTensor(dt, Shape{30, 100, dim});
    for (int64_t padding_idx : {int64_t{-1}, int64_t{5}}) {
      const TensorPtr g = RunOp("embedding_backward", {dy, indices}, {{"num_weights", num}, {"padding_idx", padding_idx}});
      ExpectTensorNear(g, dt, Shape{num, dim}, RefEmbeddingGrad(ToDoubles(dy), num, dim, idx, padding_idx),
                       RtolFor(dt), RtolFor(dt));
    }
    // Empty indices: a zero gradient. Non-contiguous dy.
    ExpectTensorNear(RunOp("embedding_backward", {RandomTensor(dt, Shape{0, 4}), Int64s(Shape{0}, {})},
                           {{"num_weights", int64_t{3}}}),
                     dt, Shape{3, 4}, std::vector<double>(12, 0.0), 0, 0);
    const TensorPtr dyn = NonContiguous(RandomTensor(dt, Shape{4, 2}));
    ExpectTensorNear(RunOp("embedding_backward", {dyn, Int64s(Shape{4}, {2, 0, 2, 2})}, {{"num_weights", int64_t{3}}}),
                     dt, Shape{3, 2}, RefEmbeddingGrad(ToDoubles(dyn), 3, 2, {2, 0, 2, 2}, -1), RtolFor(dt),
                     RtolFor(dt));
    MarkCovered("embedding_backward", dt);
  }
}

TEST(Embedding, GradientsMatchFiniteDifferences) {
  const TensorPtr indices = Int64s(Shape{2, 3}, {1, 3, 1, 0, 3, 3});
  // (A selected padding row's gradient is zero by definition, not the derivative: checked below.)
  for (int64_t padding_idx : {int64_t{-1}, int64_t{2}}) {
    SCOPED_TRACE(padding_idx);
    ExpectGradientsMatch([&](const auto& in) { return ops::Embedding(in[0], indices, padding_idx); }, {Leaf({4, 2})});
  }
  // The padding row gets no gradient, even though it is selected.
  const TensorPtr w = Leaf({4, 2});
  Backward({ops::Sum(ops::Embedding(w, indices, 3))}, {nullptr});
  ExpectTensorNear(w->grad(), DType::Float64(), Shape{4, 2}, {1, 1, 2, 2, 0, 0, 0, 0}, 0, 0);
}

TEST(Embedding, OutOfRangeIndicesAndBadArgumentsAreErrors) {
  const TensorPtr w = RandomTensor(DType::Float32(), Shape{5, 3});
  ExpectError([&] { ops::Embedding(w, Int64s(Shape{2, 3}, {0, 1, 2, 3, 4, 5})); },
              {"embedding: ", "indices[1, 2] is 5", "weight (5, 3)", "[0, 5)"});
  ExpectError([&] { ops::Embedding(w, Int64s(Shape{2}, {-1, 0})); }, {"embedding: ", "indices[0] is -1", "[0, 5)"});
  ExpectError([&] { ops::Embedding(w, Int64s(Shape{}, {7})); }, {"embedding: ", "indices is 7", "[0, 5)"});
  ExpectError([&] { ops::Embedding(w, Int64s(Shape{2}, {0, 1}), 5); },
              {"embedding: ", "padding_idx 5 is out of range for 5 embeddings"});
  ExpectError([&] { ops::Embedding(w, RandomTensor(DType::Int32(), Shape{2}, 0, 4)); },
              {"embedding: ", "indices must be int64", "int32"});
  ExpectError([&] { ops::Embedding(RandomTensor(DType::Float32(), Shape{5}), Int64s(Shape{1}, {0})); },
              {"embedding: ", "weight must be 2-D", "(5,)"});
  ExpectError([&] { ops::Embedding(RandomTensor(DType::Int64(), Shape{5, 2}), Int64s(Shape{1}, {0})); },
              {"embedding: ", "weight must be floating point", "int64"});
  ExpectError([&] {
    RunOp("embedding_backward", {RandomTensor(DType::Float32(), Shape{2, 3}), Int64s(Shape{3}, {0, 1, 2})},
          {{"num_weights", int64_t{4}}});
  }, {"embedding_backward: ", "dy of shape (2, 3) does not match indices of shape (3,)"});
  ExpectError([&] {
    RunOp("embedding_backward", {RandomTensor(DType::Float32(), Shape{2, 3}), Int64s(Shape{2}, {0, 4})},
          {{"num_weights", int64_t{4}}});
  }, {"embedding_backward: ", "indices[1] is 4", "[0, 4)"});
}

// A transformer's token embedding: indices (N, seq) with seq symbolic, traced once and run at two
// lengths, equal to eager; the weight's gradient through the graph's autodiff too.
TEST(Embedding, TracesIntoAGraphWithASymbolicSeqDim) {
  const auto session = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session);
  const TensorPtr w = RandomTensor(DType::Float32(), Shape{11, 4});
  graph::Graph g(session, "embed", graph::GraphOptions{});
  g.BeginBuild();
  const Dim seq = Dim::NewSymbol("seq");
  const TensorPtr idx = g.AddInput("idx", DType::Int64(), Shape{2, seq});
  const TensorPtr y = ops::Embedding(w, idx, 0);
  EXPECT_EQ(y->shape(), (Shape{2, seq, 4}));
  g.AddOutput(y);
  g.EndBuild();
  for (int64_t len : {3, 7}) {
    std::vector<double> v;
    for (int64_t i = 0; i < 2 * len; ++i) v.push_back(static_cast<double>((i * 5) % 11));
    const TensorPtr iv = Int64s(Shape{2, len}, v);
    const std::vector<TensorPtr> out = g.Run({iv});
    const TensorPtr eager = ops::Embedding(w, iv, 0);
    ExpectTensorNear(out[0], DType::Float32(), Shape{2, len, 4}, ToDoubles(eager), 0, 0);
  }
  ExpectError([&] { g.Run({Int64s(Shape{2, 1}, {0, 11})}); }, {"embedding: ", "indices[1, 0] is 11", "[0, 11)"});
}

}  // namespace
}  // namespace oneflow::test
