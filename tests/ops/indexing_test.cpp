// Indexing ops against float64 reference loops written here (on row-major value lists): every op x
// kernel dtype, non-contiguous inputs, duplicate and empty indices, negative dims, finite-difference
// gradients, out-of-range indices (checked before anything is written), a lazy graph with a symbolic
// dim, and the errors a user can provoke.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/ops/indexing.h"
#include "core/train/optimizer.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kFloating = FloatingDTypes();

TensorPtr RunOp(std::string_view op, std::vector<TensorPtr> inputs, Attrs attrs) {
  return Apply1(OpRegistry::Global().Get(op), std::move(inputs), std::move(attrs));
}
TensorPtr Int64s(const Shape& shape, const std::vector<double>& values) {
  return FromDoubles(DType::Int64(), shape, values);
}
// Indices in [0, size) with repeats.
TensorPtr RandomIndex(const Shape& shape, int64_t size) { return RandomTensor(DType::Int64(), shape, 0, static_cast<double>(size)); }
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

// The row-partitioned sums give the same bits at any thread count (no races, a fixed order).
TEST(Embedding, BackwardIsTheSameAtEveryThreadCount) {
  const TensorPtr indices = RandomIndex(Shape{64, 50}, 9);
  const TensorPtr dy = RandomTensor(DType::Float32(), Shape{64, 50, 96});
  const TensorPtr x = RandomTensor(DType::Float32(), Shape{9, 96});
  const TensorPtr rows = RandomIndex(Shape{3200, 96}, 9);
  const TensorPtr src = RandomTensor(DType::Float32(), Shape{3200, 96});
  std::vector<std::vector<double>> grads, sums;
  for (int32_t threads : {1, 3, 8}) {
    const auto session = std::make_shared<Session>(SessionOptions{.num_threads = threads});
    SessionScope scope(*session);
    grads.push_back(ToDoubles(RunOp("embedding_backward", {dy, indices}, {{"num_weights", int64_t{9}}})));
    sums.push_back(ToDoubles(ops::ScatterAdd(x, 0, rows, src)));
  }
  for (size_t i = 1; i < grads.size(); ++i) {
    EXPECT_EQ(grads[i], grads[0]);
    EXPECT_EQ(sums[i], sums[0]);
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


// Training through the graph: the traced backward of embedding (embedding_backward over a symbolic
// seq dim) and an SGD update per run give the weights that eager steps give.
TEST(Embedding, TrainsInAGraphLikeEagerSteps) {
  const auto session = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session);
  const TensorPtr w0 = RandomTensor(DType::Float64(), Shape{7, 3});
  auto clone = [&] {
    TensorPtr c = FromDoubles(DType::Float64(), w0->shape(), ToDoubles(w0));
    c->set_requires_grad(true);
    return c;
  };
  const std::vector<TensorPtr> batches = {RandomIndex(Shape{2, 3}, 7), RandomIndex(Shape{2, 5}, 7),
                                          RandomIndex(Shape{2, 3}, 7)};
  auto loss_of = [](const TensorPtr& w, const TensorPtr& idx) {
    const TensorPtr e = ops::Embedding(w, idx, 0);
    return ops::Mean(ops::Mul(e, e));
  };
  const SgdOptions sgd{.lr = 0.5};
  const TensorPtr we = clone();
  SGD eager_opt({we}, sgd);
  for (const TensorPtr& idx : batches) {
    eager_opt.ZeroGrad();
    Backward({loss_of(we, idx)}, {nullptr});
    eager_opt.Step();
  }
  const TensorPtr wl = clone();
  graph::Graph g(session, "train_embedding", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr idx = g.AddInput("idx", DType::Int64(), Shape{2, Dim::NewSymbol("seq")});
  const TensorPtr loss = loss_of(wl, idx);
  Backward({loss}, {nullptr});
  g.AddOptimizer(std::make_shared<SGD>(std::vector<TensorPtr>{wl}, sgd));
  g.AddOutput(loss);
  g.EndBuild();
  EXPECT_NE(g.Dump().find("embedding_backward"), std::string::npos) << g.Dump();
  for (const TensorPtr& b : batches) g.Run({b});
  ExpectTensorNear(wl, DType::Float64(), Shape{7, 3}, ToDoubles(we), 1e-12, 1e-12);
}

// ---- gather, scatter, scatter_add, index_select ------------------------------------------------------

std::vector<Symbol<DType>> AllDTypes() {
  std::vector<Symbol<DType>> out;
  for (DataType d : kAllTypes) out.push_back(DType::Get(d));
  return out;
}
std::vector<Symbol<DType>> NumericDTypes() {
  std::vector<Symbol<DType>> out;
  for (DataType d : kNumericTypes) out.push_back(DType::Get(d));
  for (DataType d : kHalfTypes) out.push_back(DType::Get(d));
  return out;
}
int64_t Dim0(int64_t dim, int64_t ndim) { return dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim; }

std::vector<double> RefGather(const TensorPtr& x, int64_t dim, const TensorPtr& index) {
  const std::vector<double> xv = ToDoubles(x), iv = ToDoubles(index);
  dim = Dim0(dim, x->ndim());
  std::vector<double> out;
  for (int64_t o = 0; o < index->numel(); ++o) {
    std::vector<int64_t> c = Unravel(o, index->shape());
    if (!c.empty()) c[static_cast<size_t>(dim)] = static_cast<int64_t>(iv[static_cast<size_t>(o)]);
    out.push_back(xv[static_cast<size_t>(c.empty() ? 0 : Ravel(c, x->shape()))]);
  }
  return out;
}
std::vector<double> RefScatter(const TensorPtr& x, int64_t dim, const TensorPtr& index, const TensorPtr& src, bool add) {
  std::vector<double> out = ToDoubles(x);
  const std::vector<double> iv = ToDoubles(index), sv = ToDoubles(src);
  dim = Dim0(dim, x->ndim());
  for (int64_t o = 0; o < index->numel(); ++o) {
    std::vector<int64_t> c = Unravel(o, index->shape());
    if (!c.empty()) c[static_cast<size_t>(dim)] = static_cast<int64_t>(iv[static_cast<size_t>(o)]);
    double& t = out[static_cast<size_t>(c.empty() ? 0 : Ravel(c, x->shape()))];
    t = add ? t + sv[static_cast<size_t>(o)] : sv[static_cast<size_t>(o)];
  }
  return out;
}
std::vector<double> RefIndexSelect(const TensorPtr& x, int64_t dim, const TensorPtr& index, Shape* shape) {
  const std::vector<double> xv = ToDoubles(x), iv = ToDoubles(index);
  dim = Dim0(dim, x->ndim());
  *shape = x->shape();
  (*shape)[dim] = static_cast<int64_t>(iv.size());
  std::vector<double> out;
  for (int64_t o = 0; o < shape->numel(); ++o) {
    std::vector<int64_t> c = Unravel(o, *shape);
    c[static_cast<size_t>(dim)] = static_cast<int64_t>(iv[static_cast<size_t>(c[static_cast<size_t>(dim)])]);
    out.push_back(xv[static_cast<size_t>(Ravel(c, x->shape()))]);
  }
  return out;
}
// Along `dim` of `shape`, each line a prefix of a permutation of [0, size): no duplicate positions.
TensorPtr UniqueIndex(const Shape& shape, int64_t dim, int64_t size) {
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (int64_t o = 0; o < shape.numel(); ++o) {
    const std::vector<int64_t> c = Unravel(o, shape);
    int64_t shift = 0;  // constant along a line
    for (size_t d = 0; d < c.size(); ++d) shift += static_cast<int64_t>(d) == dim ? 0 : c[d];
    v[static_cast<size_t>(o)] = static_cast<double>((c[static_cast<size_t>(dim)] + shift) % size);
  }
  return Int64s(shape, v);
}

struct GatherCase {
  Shape x, index;
  int64_t dim;
};
const std::vector<GatherCase> kGatherCases = {
    {Shape{4, 5}, Shape{3, 5}, 0},     {Shape{4, 5}, Shape{2, 7}, -1},    {Shape{3, 4, 5}, Shape{2, 6, 3}, 1},
    {Shape{3, 4, 5}, Shape{3, 2, 5}, -3}, {Shape{2, 3}, Shape{0, 3}, 0}, {Shape{}, Shape{}, 0},
    {Shape{200, 300}, Shape{150, 300}, 0}};

TEST(Gather, MatchesReferenceForEveryDType) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    for (const GatherCase& k : kGatherCases) {
      const TensorPtr x = RandomTensor(dt, k.x);
      const TensorPtr index = RandomIndex(k.index, k.x.ndim() == 0 ? 1 : k.x[Dim0(k.dim, k.x.ndim())].value());
      ExpectTensorNear(ops::Gather(x, k.dim, index), dt, k.index, RefGather(x, k.dim, index), 0, 0);
    }
    const TensorPtr x = NonContiguous(RandomTensor(dt, Shape{3, 4}));
    const TensorPtr index = NonContiguous(RandomIndex(Shape{3, 2}, 4));
    ExpectTensorNear(ops::Gather(x, 1, index), dt, Shape{3, 2}, RefGather(x, 1, index), 0, 0);
    MarkCovered("gather", dt);
  }
}

TEST(Scatter, MatchesReferenceForEveryDType) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    for (const GatherCase& k : kGatherCases) {
      const TensorPtr x = RandomTensor(dt, k.x);
      const TensorPtr index = RandomIndex(k.index, k.x.ndim() == 0 ? 1 : k.x[Dim0(k.dim, k.x.ndim())].value());
      const TensorPtr src = RandomTensor(dt, k.index);
      // Duplicates: the last write in index order wins.
      ExpectTensorNear(ops::Scatter(x, k.dim, index, src), dt, k.x, RefScatter(x, k.dim, index, src, false), 0, 0);
    }
    const TensorPtr x = NonContiguous(RandomTensor(dt, Shape{3, 4}));
    const TensorPtr index = NonContiguous(RandomIndex(Shape{3, 2}, 4));
    const TensorPtr src = NonContiguous(RandomTensor(dt, Shape{3, 2}));
    ExpectTensorNear(ops::Scatter(x, 1, index, src), dt, Shape{3, 4}, RefScatter(x, 1, index, src, false), 0, 0);
    MarkCovered("scatter", dt);
  }
}

TEST(ScatterAdd, SumsDuplicatesForEveryNumericDType) {
  for (Symbol<DType> dt : NumericDTypes()) {
    SCOPED_TRACE(dt->name());
    // Integers in {0, 1}: the sums stay in range of every integer dtype (wrapping is tested below).
    const double lo = dt->is_floating_point() ? -2 : 0;
    for (const GatherCase& k : kGatherCases) {
      const TensorPtr x = RandomTensor(dt, k.x, lo, 2);
      const TensorPtr index = RandomIndex(k.index, k.x.ndim() == 0 ? 1 : k.x[Dim0(k.dim, k.x.ndim())].value());
      const TensorPtr src = RandomTensor(dt, k.index, lo, 2);
      ExpectTensorNear(ops::ScatterAdd(x, k.dim, index, src), dt, k.x, RefScatter(x, k.dim, index, src, true),
                       RtolFor(dt), RtolFor(dt));
    }
    // Every src element into one position.
    const TensorPtr x = RandomTensor(dt, Shape{2, 3}, lo, 2);
    const TensorPtr index = Int64s(Shape{5, 3}, std::vector<double>(15, 1.0));
    const TensorPtr src = NonContiguous(RandomTensor(dt, Shape{5, 3}, lo, 2));
    ExpectTensorNear(ops::ScatterAdd(x, 0, index, src), dt, Shape{2, 3}, RefScatter(x, 0, index, src, true),
                     RtolFor(dt), RtolFor(dt));
    MarkCovered("scatter_add", dt);
  }
  // int8 wraps, as in PyTorch.
  const TensorPtr x = FromDoubles(DType::Int8(), Shape{1}, {100});
  ExpectTensorNear(ops::ScatterAdd(x, 0, Int64s(Shape{2}, {0, 0}), FromDoubles(DType::Int8(), Shape{2}, {100, 100})),
                   DType::Int8(), Shape{1}, {44}, 0, 0);
}

TEST(IndexSelect, MatchesReferenceForEveryDType) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    const TensorPtr x = RandomTensor(dt, Shape{3, 4, 5});
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      const int64_t size = x->shape()[Dim0(dim, 3)].value();
      for (const TensorPtr& index : {RandomIndex(Shape{6}, size), Int64s(Shape{0}, {}), Int64s(Shape{}, {1})}) {
        Shape shape;
        const std::vector<double> want = RefIndexSelect(x, dim, index, &shape);
        ExpectTensorNear(ops::IndexSelect(x, dim, index), dt, shape, want, 0, 0);
      }
    }
    const TensorPtr xn = NonContiguous(RandomTensor(dt, Shape{4, 3}));
    const TensorPtr index = NonContiguous(Int64s(Shape{3}, {3, 3, 0}));
    Shape shape;
    const std::vector<double> want = RefIndexSelect(xn, 0, index, &shape);
    ExpectTensorNear(ops::IndexSelect(xn, 0, index), dt, shape, want, 0, 0);
    MarkCovered("index_select", dt);
  }
  for (Symbol<DType> dt : kFloating) {
    SCOPED_TRACE(dt->name());
    const TensorPtr index = RandomIndex(Shape{500}, 7);
    const TensorPtr dy = RandomTensor(dt, Shape{3, 500, 40});
    const TensorPtr g = RunOp("index_select_backward", {dy, index}, {{"dim", int64_t{1}}, {"size", int64_t{7}}});
    // Reference: scatter_add of dy into zeros along dim 1, with the index broadcast over dims 0 and 2.
    std::vector<double> want(3 * 7 * 40, 0.0);
    const std::vector<double> dv = ToDoubles(dy), iv = ToDoubles(index);
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t j = 0; j < 500; ++j)
        for (int64_t c = 0; c < 40; ++c)
          want[static_cast<size_t>((a * 7 + static_cast<int64_t>(iv[static_cast<size_t>(j)])) * 40 + c)] +=
              dv[static_cast<size_t>((a * 500 + j) * 40 + c)];
    ExpectTensorNear(g, dt, Shape{3, 7, 40}, want, RtolFor(dt), RtolFor(dt));
    MarkCovered("index_select_backward", dt);
  }
}

TEST(Gather, GradientsMatchFiniteDifferences) {
  const TensorPtr dup = RandomIndex(Shape{4, 3}, 3);  // (3, 3) x gathered along dim 0 with repeats
  ExpectGradientsMatch([&](const auto& in) { return ops::Gather(in[0], 0, dup); }, {Leaf({3, 3})});
  // (The index is drawn once: fn runs once per finite difference.)
  const TensorPtr wide = RandomIndex(Shape{2, 5}, 4), rows = RandomIndex(Shape{2, 6}, 3);
  ExpectGradientsMatch([&](const auto& in) { return ops::Gather(in[0], -1, wide); }, {Leaf({2, 4})});
  ExpectGradientsMatch([&](const auto& in) { return ops::IndexSelect(in[0], 1, Int64s(Shape{4}, {2, 0, 2, 2})); },
                       {Leaf({2, 3, 2})});
  ExpectGradientsMatch([&](const auto& in) { return ops::IndexSelect(in[0], -3, Int64s(Shape{0}, {})); },
                       {Leaf({2, 3, 2})});
  // scatter without duplicate positions (with them, the overwritten src elements have no derivative).
  const TensorPtr unique = UniqueIndex(Shape{3, 4}, 0, 5);
  ExpectGradientsMatch([&](const auto& in) { return ops::Scatter(in[0], 0, unique, in[1]); }, {Leaf({5, 4}), Leaf({3, 4})});
  ExpectGradientsMatch([&](const auto& in) { return ops::ScatterAdd(in[0], 0, dup, in[1]); }, {Leaf({3, 3}), Leaf({4, 3})});
  ExpectGradientsMatch([&](const auto& in) { return ops::ScatterAdd(in[0], 1, rows, in[1]); },
                       {Leaf({2, 3}), Leaf({2, 6})});
}

TEST(Gather, OutOfRangeIndicesAndBadArgumentsAreErrors) {
  const TensorPtr x = RandomTensor(DType::Float32(), Shape{3, 4});
  const TensorPtr src = RandomTensor(DType::Float32(), Shape{2, 2});
  const TensorPtr bad = Int64s(Shape{2, 2}, {0, 1, 4, 0});
  ExpectError([&] { ops::Gather(x, 1, bad); }, {"gather: ", "index[1, 0] is 4", "dim 1 of x (3, 4)", "[0, 4)"});
  ExpectError([&] { ops::Gather(x, 0, Int64s(Shape{1, 1}, {-1})); }, {"gather: ", "index[0, 0] is -1", "[0, 3)"});
  ExpectError([&] { ops::Scatter(x, 0, bad, src); }, {"scatter: ", "index[1, 0] is 4", "dim 0 of x (3, 4)", "[0, 3)"});
  ExpectError([&] { ops::ScatterAdd(x, -2, bad, src); }, {"scatter_add: ", "index[1, 0] is 4", "[0, 3)"});
  ExpectError([&] { ops::IndexSelect(x, 1, Int64s(Shape{3}, {0, 9, 1})); },
              {"index_select: ", "index[1] is 9", "dim 1 of x (3, 4)", "[0, 4)"});
  ExpectError([&] { ops::Gather(x, 2, bad); }, {"gather: ", "dim", "2"});
  ExpectError([&] { ops::Gather(x, 0, Int64s(Shape{2}, {0, 1})); },
              {"gather: ", "index of shape (2,) must have as many dims as x of shape (3, 4)"});
  ExpectError([&] { ops::Gather(x, 0, RandomIndex(Shape{2, 5}, 3)); },
              {"gather: ", "index of shape (2, 5) is larger than x of shape (3, 4) at dim 1"});
  ExpectError([&] { ops::Gather(x, 0, RandomTensor(DType::Int32(), Shape{2, 2}, 0, 2)); },
              {"gather: ", "index must be int64", "int32"});
  ExpectError([&] { ops::Scatter(x, 0, Int64s(Shape{2, 2}, {0, 1, 1, 0}), RandomTensor(DType::Float32(), Shape{2, 3})); },
              {"scatter: ", "src of shape (2, 3) must have index's shape (2, 2)"});
  ExpectError([&] { ops::Scatter(x, 0, Int64s(Shape{2, 2}, {0, 1, 1, 0}), RandomTensor(DType::Float64(), Shape{2, 2})); },
              {"scatter: ", "src is float64 but x is float32"});
  ExpectError([&] { ops::ScatterAdd(RandomTensor(DType::Bool(), Shape{2}), 0, Int64s(Shape{1}, {0}),
                                    RandomTensor(DType::Bool(), Shape{1})); },
              StatusCode::kUnimplemented, {"scatter_add: ", "bool"});
  ExpectError([&] { ops::IndexSelect(x, 0, Int64s(Shape{1, 1}, {0})); }, {"index_select: ", "index must be 1-D", "(1, 1)"});
  ExpectError([&] { ops::IndexSelect(RandomTensor(DType::Float32(), Shape{}), 0, Int64s(Shape{1}, {0})); },
              {"index_select: ", "x is 0-d"});
}

// ---- masked_fill, one_hot ----------------------------------------------------------------------------

TEST(MaskedFill, BroadcastsForEveryDType) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    const double value = dt->is_bool() ? 1.0 : 3.0;
    const std::vector<std::pair<Shape, Shape>> cases = {
        {Shape{2, 3}, Shape{2, 3}}, {Shape{2, 3}, Shape{3}}, {Shape{3}, Shape{2, 1}}, {Shape{}, Shape{4}}, {Shape{0, 3}, Shape{3}}};
    for (const auto& [xs, ms] : cases) {
      for (bool strided : {false, true}) {
        TensorPtr x = RandomTensor(dt, xs), mask = RandomTensor(DType::Bool(), ms, 0, 1);
        if (strided) {
          x = NonContiguous(x);
          mask = NonContiguous(mask);
        }
        const Shape out = BroadcastShapes(xs, ms);
        const std::vector<double> xv = ToDoubles(x), mv = ToDoubles(mask);
        std::vector<double> want;
        for (int64_t o = 0; o < out.numel(); ++o) {
          const std::vector<int64_t> c = Unravel(o, out);
          want.push_back(mv[static_cast<size_t>(BroadcastIndex(c, ms, out))] != 0
                             ? value
                             : xv[static_cast<size_t>(BroadcastIndex(c, xs, out))]);
        }
        ExpectTensorNear(ops::MaskedFill(x, mask, value), dt, out, want, 0, 0);
      }
    }
    MarkCovered("masked_fill", dt);
  }
  ExpectTensorNear(ops::MaskedFill(FromDoubles(DType::Float32(), Shape{2}, {1, 2}), FromDoubles(DType::Bool(), Shape{2}, {1, 0}),
                                   -std::numeric_limits<double>::infinity()),
                   DType::Float32(), Shape{2}, {-std::numeric_limits<double>::infinity(), 2}, 0, 0);
  const TensorPtr mask = RandomTensor(DType::Bool(), Shape{2, 3}, 0, 1);
  ExpectGradientsMatch([&](const auto& in) { return ops::MaskedFill(in[0], mask, 0.5); }, {Leaf({3})});
  ExpectGradientsMatch([&](const auto& in) { return ops::MaskedFill(in[0], mask, -1.0); }, {Leaf({2, 3})});
  ExpectError([&] { ops::MaskedFill(RandomTensor(DType::Int8(), Shape{2}), mask, 300); },
              {"masked_fill: ", "value", "300", "int8"});
  ExpectError([&] { ops::MaskedFill(RandomTensor(DType::Float32(), Shape{2}), RandomTensor(DType::Int64(), Shape{2}), 1); },
              {"masked_fill: ", "mask must be bool", "int64"});
  ExpectError([&] { ops::MaskedFill(RandomTensor(DType::Float32(), Shape{2}), RandomTensor(DType::Bool(), Shape{3}), 1); },
              {"masked_fill: ", "(2,)", "(3,)"});
}

TEST(OneHot, MatchesReferenceAndChecksRange) {
  for (const Shape& shape : {Shape{5}, Shape{2, 3}, Shape{}, Shape{0}}) {
    const TensorPtr idx = RandomIndex(shape, 4);
    const std::vector<double> iv = ToDoubles(idx);
    std::vector<double> want;
    for (double i : iv) {
      for (int64_t c = 0; c < 4; ++c) want.push_back(c == static_cast<int64_t>(i) ? 1 : 0);
    }
    ExpectTensorNear(ops::OneHot(idx, 4), DType::Int64(), Append(shape, 4), want, 0, 0);
    ExpectTensorNear(ops::OneHot(NonContiguous(RandomIndex(Shape{3}, 1)), 1), DType::Int64(), Shape{3, 1}, {1, 1, 1}, 0, 0);
  }
  MarkCovered("one_hot", DType::Int64());
  ExpectError([&] { ops::OneHot(Int64s(Shape{3}, {0, 4, 1}), 4); }, {"one_hot: ", "indices[1] is 4", "[0, 4)"});
  ExpectError([&] { ops::OneHot(Int64s(Shape{1}, {-1}), 4); }, {"one_hot: ", "indices[0] is -1"});
  ExpectError([&] { ops::OneHot(Int64s(Shape{1}, {0}), -1); }, {"one_hot: ", "num_classes is -1", "must be >= 1"});
  ExpectError([&] { ops::OneHot(RandomTensor(DType::Float32(), Shape{1}), 3); }, {"one_hot: ", "indices must be int64"});
}

// gather, scatter_add and masked_fill in a graph whose batch dim is unknown: one trace, two sizes.
TEST(Gather, TracesIntoAGraphWithAnUnknownDim) {
  const auto session = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session);
  graph::Graph g(session, "gather", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr x = g.AddInput("x", DType::Float64(), Shape{Dim::Unknown(), 5});
  const TensorPtr index = g.AddInput("index", DType::Int64(), Shape{Dim::Unknown(), 2});
  const TensorPtr y = ops::Gather(x, 1, index);
  EXPECT_EQ(y->shape(), (Shape{Dim::Unknown(), 2}));
  const TensorPtr z = ops::ScatterAdd(x, 1, index, y);
  const TensorPtr m = ops::MaskedFill(z, ops::GtScalar(z, 0.5), 0.0);
  g.AddOutput(y);
  g.AddOutput(m);
  g.EndBuild();
  for (int64_t n : {3, 6}) {
    const TensorPtr xv = RandomTensor(DType::Float64(), Shape{n, 5});
    const TensorPtr iv = RandomIndex(Shape{n, 2}, 5);
    const std::vector<TensorPtr> out = g.Run({xv, iv});
    const TensorPtr ey = ops::Gather(xv, 1, iv);
    const TensorPtr ez = ops::ScatterAdd(xv, 1, iv, ey);
    ExpectTensorNear(out[0], DType::Float64(), Shape{n, 2}, ToDoubles(ey), 0, 0);
    ExpectTensorNear(out[1], DType::Float64(), Shape{n, 5}, ToDoubles(ops::MaskedFill(ez, ops::GtScalar(ez, 0.5), 0.0)), 0, 0);
  }
}


// ---- tril, triu, flip, roll, repeat, slice -------------------------------------------------------------

// A reference that reads x at in_coord(out_coord) for every element of `out`.
std::vector<double> RefRemap(const TensorPtr& x, const Shape& out,
                             const std::function<std::vector<int64_t>(std::vector<int64_t>)>& in_coord) {
  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> v;
  for (int64_t o = 0; o < out.numel(); ++o) {
    v.push_back(xv[static_cast<size_t>(x->ndim() == 0 ? 0 : Ravel(in_coord(Unravel(o, out)), x->shape()))]);
  }
  return v;
}
int64_t Mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

TEST(Tril, KeepsTrianglesOfBatchedMatricesForEveryDType) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    for (const Shape& shape : {Shape{4, 5}, Shape{2, 3, 5, 4}, Shape{0, 3}, Shape{3, 0}}) {
      for (int64_t diagonal : {int64_t{0}, int64_t{1}, int64_t{-2}, int64_t{10}, int64_t{-10},
                               std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
        for (bool upper : {false, true}) {
          const TensorPtr x = NonContiguous(RandomTensor(dt, shape));
          const std::vector<double> xv = ToDoubles(x);
          std::vector<double> want;
          for (int64_t o = 0; o < shape.numel(); ++o) {
            const std::vector<int64_t> c = Unravel(o, shape);
            const double diff = static_cast<double>(c[c.size() - 1]) - static_cast<double>(c[c.size() - 2]);
            const bool keep = upper ? diff >= static_cast<double>(diagonal) : diff <= static_cast<double>(diagonal);
            want.push_back(keep ? xv[static_cast<size_t>(o)] : 0.0);
          }
          ExpectTensorNear(upper ? ops::Triu(x, diagonal) : ops::Tril(x, diagonal), dt, shape, want, 0, 0);
        }
      }
    }
    MarkCovered("tril", dt);
    MarkCovered("triu", dt);
  }
  ExpectGradientsMatch([](const auto& in) { return ops::Tril(in[0], -1); }, {Leaf({2, 3, 3})});
  ExpectGradientsMatch([](const auto& in) { return ops::Triu(in[0], 1); }, {Leaf({3, 4})});
  ExpectError([] { ops::Tril(RandomTensor(DType::Float32(), Shape{3}), 0); }, {"tril: ", "at least 2 dims", "(3,)"});
}

TEST(Flip, ReversesDimsForEveryDType) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    const Shape shape{3, 4, 5};
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{0}, {-1}, {0, 2}, {1, -3, 2}, {}}) {
      const TensorPtr x = NonContiguous(RandomTensor(dt, shape));
      std::vector<bool> flipped(3, false);
      for (int64_t d : dims) flipped[static_cast<size_t>(Dim0(d, 3))] = true;
      const std::vector<double> want = RefRemap(x, shape, [&](std::vector<int64_t> c) {
        for (size_t d = 0; d < 3; ++d) {
          if (flipped[d]) c[d] = shape[static_cast<int64_t>(d)].value() - 1 - c[d];
        }
        return c;
      });
      ExpectTensorNear(ops::Flip(x, dims), dt, shape, want, 0, 0);
    }
    ExpectTensorNear(ops::Flip(RandomTensor(dt, Shape{0, 2}), {0}), dt, Shape{0, 2}, {}, 0, 0);
    // An empty tensor's other dims may be as large as int64 allows: nothing is built for them.
    const Shape vast{0, int64_t{1} << 40};
    ExpectTensorNear(ops::Flip(RandomTensor(dt, vast), {1}), dt, vast, {}, 0, 0);
    const TensorPtr s = RandomTensor(dt, Shape{});
    ExpectTensorNear(ops::Flip(s, {}), dt, Shape{}, ToDoubles(s), 0, 0);
    MarkCovered("flip", dt);
  }
  ExpectGradientsMatch([](const auto& in) { return ops::Flip(in[0], {0, -1}); }, {Leaf({2, 3, 2})});
  ExpectError([] { ops::Flip(RandomTensor(DType::Float32(), Shape{2, 3}), {1, -1}); }, {"flip: ", "more than once"});
  ExpectError([] { ops::Flip(RandomTensor(DType::Float32(), Shape{2, 3}), {2}); }, {"flip: ", "dims[0]"});
}

TEST(Roll, RollsDimsOrTheFlattenedTensorForEveryDType) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    const Shape shape{3, 4, 5};
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
        {{1}, {0}}, {{-2}, {-1}}, {{7, 2}, {1, 2}}, {{2, 1}, {0, 0}}, {{std::numeric_limits<int64_t>::max()}, {2}}};
    for (const auto& [shifts, dims] : cases) {
      const TensorPtr x = NonContiguous(RandomTensor(dt, shape));
      std::vector<int64_t> total(3, 0);
      for (size_t k = 0; k < dims.size(); ++k) {
        const size_t d = static_cast<size_t>(Dim0(dims[k], 3));
        total[d] = Mod(total[d] + Mod(shifts[k], shape[static_cast<int64_t>(d)].value()), shape[static_cast<int64_t>(d)].value());
      }
      const std::vector<double> want = RefRemap(x, shape, [&](std::vector<int64_t> c) {
        for (size_t d = 0; d < 3; ++d) c[d] = Mod(c[d] - total[d], shape[static_cast<int64_t>(d)].value());
        return c;
      });
      ExpectTensorNear(ops::Roll(x, shifts, dims), dt, shape, want, 0, 0);
    }
    // Flattened: element i moves to (i + shift) mod n.
    for (int64_t shift : {int64_t{7}, int64_t{-3}, int64_t{60}, int64_t{0}}) {
      const TensorPtr x = RandomTensor(dt, shape);
      const std::vector<double> xv = ToDoubles(x);
      std::vector<double> want(xv.size());
      for (int64_t i = 0; i < 60; ++i) want[static_cast<size_t>(Mod(i + shift, 60))] = xv[static_cast<size_t>(i)];
      ExpectTensorNear(ops::Roll(x, {shift}, {}), dt, shape, want, 0, 0);
    }
    ExpectTensorNear(ops::Roll(RandomTensor(dt, Shape{0, 3}), {2}, {}), dt, Shape{0, 3}, {}, 0, 0);
    MarkCovered("roll", dt);
  }
  ExpectGradientsMatch([](const auto& in) { return ops::Roll(in[0], {1, -4}, {0, 1}); }, {Leaf({3, 3})});
  ExpectGradientsMatch([](const auto& in) { return ops::Roll(in[0], {5}, {}); }, {Leaf({2, 3})});
  const TensorPtr x = RandomTensor(DType::Float32(), Shape{2, 3});
  ExpectError([&] { ops::Roll(x, {1, 2}, {}); }, {"roll: ", "shifts has 2 entries", "without dims"});
  ExpectError([&] { ops::Roll(x, {1}, {0, 1}); }, {"roll: ", "shifts has 1 entries but dims has 2"});
  ExpectError([&] { ops::Roll(x, {1}, {2}); }, {"roll: ", "dims[0]"});
  ExpectError([&] { ops::Roll(x, {std::numeric_limits<int64_t>::min()}, {0}); }, {"roll: ", "shifts[0]", "out of range"});
}

TEST(Repeat, TilesWithLeadingDimsForEveryDType) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
        {Shape{2, 3}, {2, 2}},   {Shape{3}, {2, 1, 3}}, {Shape{2, 3}, {1, 1}},       {Shape{}, {4}},
        {Shape{2, 3}, {0, 2}},   {Shape{}, {}},         {Shape{2, 1, 3}, {3, 5, 1}}, {Shape{3, 2}, {1, 3, 1}},
        {Shape{1, 2}, {4, 1000}}};
    for (const auto& [shape, repeats] : cases) {
      const TensorPtr x = NonContiguous(RandomTensor(dt, shape));
      const int64_t lead = static_cast<int64_t>(repeats.size()) - shape.ndim();
      Shape out;
      for (size_t k = 0; k < repeats.size(); ++k) {
        out.push_back(repeats[k] * (static_cast<int64_t>(k) < lead ? 1 : shape[static_cast<int64_t>(k) - lead].value()));
      }
      const std::vector<double> want = RefRemap(x, out, [&](std::vector<int64_t> c) {
        std::vector<int64_t> in;
        for (int64_t d = 0; d < shape.ndim(); ++d) in.push_back(c[static_cast<size_t>(d + lead)] % shape[d].value());
        return in;
      });
      ExpectTensorNear(ops::Repeat(x, repeats), dt, out, want, 0, 0);
    }
    // An empty result whose other dims are as large as int64 allows (the fuzzer's finding: a table of
    // 2^26 coordinates for a dim of an empty output ran the host out of memory).
    ExpectTensorNear(ops::Repeat(RandomTensor(dt, Shape{0, 1}), {1, int64_t{1} << 40}), dt, Shape{0, int64_t{1} << 40},
                     {}, 0, 0);
    ExpectTensorNear(ops::Repeat(RandomTensor(dt, Shape{2, 0}), {int64_t{1} << 40, 3}), dt, Shape{int64_t{1} << 41, 0},
                     {}, 0, 0);
    ExpectTensorNear(ops::Repeat(RandomTensor(dt, Shape{0, int64_t{1} << 40}), {1, 2}), dt, Shape{0, int64_t{1} << 41},
                     {}, 0, 0);
    MarkCovered("repeat", dt);
  }
  ExpectGradientsMatch([](const auto& in) { return ops::Repeat(in[0], {2, 1, 3}); }, {Leaf({2, 2})});
  ExpectGradientsMatch([](const auto& in) { return ops::Repeat(in[0], {3}); }, {Leaf({})});
  const TensorPtr x = RandomTensor(DType::Float32(), Shape{2, 3});
  ExpectError([&] { ops::Repeat(x, {2}); }, {"repeat: ", "repeats [2] has 1 entries, fewer than the 2 dims"});
  ExpectError([&] { ops::Repeat(x, {2, -1}); }, {"repeat: ", "repeats[1] is -1", ">= 0"});
  ExpectError([&] { ops::Repeat(x, {std::numeric_limits<int64_t>::max(), 1}); }, {"repeat: ", "repeats[0]", "overflows"});
}

// NumPy's slice.indices, written out as the reference.
std::vector<int64_t> RefSliceIndices(int64_t n, int64_t start, int64_t end, int64_t step) {
  auto clamp = [&](int64_t v) -> int64_t {
    if (v < 0) {
      if (v < -n) return step < 0 ? -1 : 0;
      v += n;
    }
    if (v >= n) return step < 0 ? n - 1 : n;
    return v;
  };
  std::vector<int64_t> out;
  for (int64_t i = clamp(start); step > 0 ? i < clamp(end) : i > clamp(end); i += step) out.push_back(i);
  return out;
}

TEST(Slice, NumPySemanticsWithNegativeStepsForEveryDType) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  const std::vector<std::array<int64_t, 3>> cases = {
      {0, 5, 1},     {1, 5, 2},     {-3, kMax, 1}, {kMax, kMin, -1}, {4, 0, -2}, {-1, -6, -1}, {10, 2, -3},
      {-10, 10, 3},  {3, 3, 1},     {3, 1, 1},     {1, 3, -1},       {kMin, kMax, 4}, {0, 5, kMax}, {4, kMin, kMin + 1}};
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    const Shape shape{3, 5, 2};
    const TensorPtr base = RandomTensor(dt, shape);
    for (const TensorPtr& x : {base, NonContiguous(base)}) {
      for (const auto& [start, end, step] : cases) {
        SCOPED_TRACE(fmt::format("{}:{}:{}", start, end, step));
        for (int64_t dim : {1, -1}) {
          const int64_t n = shape[Dim0(dim, 3)].value();
          const std::vector<int64_t> picked = RefSliceIndices(n, start, end, step);
          Shape out = shape;
          out[Dim0(dim, 3)] = static_cast<int64_t>(picked.size());
          const std::vector<double> want = RefRemap(x, out, [&](std::vector<int64_t> c) {
            c[static_cast<size_t>(Dim0(dim, 3))] = picked[static_cast<size_t>(c[static_cast<size_t>(Dim0(dim, 3))])];
            return c;
          });
          const TensorPtr y = ops::Slice(x, dim, start, end, step);
          ExpectTensorNear(y, dt, out, want, 0, 0);
          EXPECT_EQ(y->storage() == x->storage(), step > 0);
        }
      }
    }
    MarkCovered("slice", dt);
    MarkCovered("slice_copy", dt);
    // The gradient op: dy written back where the slice read, zeros elsewhere.
    const TensorPtr dy = RandomTensor(dt, Shape{3, 2, 2});
    const Attrs attrs{{"dim", int64_t{1}}, {"start", int64_t{4}}, {"end", int64_t{0}}, {"step", int64_t{-3}},
                      {"size", int64_t{5}}};
    const std::vector<double> dv = ToDoubles(dy);
    std::vector<double> want(30, 0.0);
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t c = 0; c < 2; ++c) want[static_cast<size_t>((a * 5 + 4 - 3 * j) * 2 + c)] = dv[static_cast<size_t>((a * 2 + j) * 2 + c)];
    ExpectTensorNear(RunOp("slice_backward", {NonContiguous(dy)}, attrs), dt, shape, want, 0, 0);
    MarkCovered("slice_backward", dt);
  }
  for (const auto& [start, end, step] : cases) {
    SCOPED_TRACE(fmt::format("{}:{}:{}", start, end, step));
    ExpectGradientsMatch([&](const auto& in) { return ops::Slice(in[0], 1, start, end, step); }, {Leaf({2, 5})});
  }
  const TensorPtr x = RandomTensor(DType::Float32(), Shape{3, 4});
  ExpectError([&] { ops::Slice(x, 0, 0, 3, 0); }, {"slice: ", "step must not be 0"});
  ExpectError([&] { ops::Slice(x, 2, 0, 3, 1); }, {"slice: ", "dim"});
  ExpectError([&] { ops::Slice(RandomTensor(DType::Float32(), Shape{}), 0, 0, 1, 1); }, {"slice: ", "0-d"});
  // (A negative step runs the copy op.)
  ExpectError([&] { ops::Slice(x, 0, 0, 3, kMin); }, {"slice_copy: ", "step", "out of range"});
}

// flip, roll, repeat and slice in a graph with an unknown batch dim, at two sizes, equal to eager.
TEST(Slice, LayoutOpsTraceIntoAGraphWithAnUnknownDim) {
  const auto session = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session);
  graph::Graph g(session, "layout", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr x = g.AddInput("x", DType::Float32(), Shape{Dim::Unknown(), 6});
  auto net = [](const TensorPtr& t) {
    return ops::Repeat(ops::Roll(ops::Flip(ops::Slice(ops::Tril(t, 1), 1, 5, 0, -2), {0}), {1}, {1}), {1, 2});
  };
  const TensorPtr y = net(x);
  EXPECT_EQ(y->shape(), (Shape{Dim::Unknown(), 6}));
  g.AddOutput(y);
  g.AddOutput(ops::Slice(x, 0, 1, std::numeric_limits<int64_t>::max(), 2));
  g.EndBuild();
  for (int64_t n : {3, 6}) {
    const TensorPtr xv = RandomTensor(DType::Float32(), Shape{n, 6});
    const std::vector<TensorPtr> out = g.Run({xv});
    const TensorPtr e0 = net(xv), e1 = ops::Slice(xv, 0, 1, std::numeric_limits<int64_t>::max(), 2);
    ExpectTensorNear(out[0], DType::Float32(), e0->shape(), ToDoubles(e0), 0, 0);
    ExpectTensorNear(out[1], DType::Float32(), e1->shape(), ToDoubles(e1), 0, 0);
  }
}


// ---- argmin, sort, topk --------------------------------------------------------------------------------

// Reference order on doubles: NaN largest; `order` holds the line's positions, stably sorted.
std::vector<int64_t> RefOrder(const std::vector<double>& line, bool descending) {
  std::vector<int64_t> order(line.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  auto less = [](double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); };
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
    const double a = line[static_cast<size_t>(i)], b = line[static_cast<size_t>(j)];
    return descending ? less(b, a) : less(a, b);
  });
  return order;
}
// x's lines along dim, each a list of flat positions.
std::vector<std::vector<int64_t>> LinesAlong(const Shape& shape, int64_t dim) {
  std::vector<std::vector<int64_t>> lines;
  if (shape.ndim() == 0) return {{0}};
  for (int64_t o = 0; o < shape.numel(); ++o) {
    const std::vector<int64_t> c = Unravel(o, shape);
    if (c[static_cast<size_t>(dim)] != 0) continue;
    std::vector<int64_t> line;
    for (int64_t j = 0; j < shape[dim].value(); ++j) {
      std::vector<int64_t> cj = c;
      cj[static_cast<size_t>(dim)] = j;
      line.push_back(Ravel(cj, shape));
    }
    lines.push_back(line);
  }
  return lines;
}

// Values with ties (and NaN for floating dtypes) so that order and tie-breaking are exercised.
TensorPtr TiedTensor(Symbol<DType> dt, const Shape& shape) {
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7) % 5);  // >= 0: uint8 too
  if (dt->is_floating_point() && v.size() > 3) {
    v[1] = std::numeric_limits<double>::quiet_NaN();
    v[v.size() - 2] = std::numeric_limits<double>::quiet_NaN();
  }
  return FromDoubles(dt, shape, v);
}

TEST(Sort, StableWithNaNLargestForEveryNumericDType) {
  for (Symbol<DType> dt : NumericDTypes()) {
    SCOPED_TRACE(dt->name());
    for (const Shape& shape : {Shape{4, 7}, Shape{3, 5, 2}, Shape{}, Shape{0, 3}, Shape{2, 300}}) {
      for (int64_t dim : {int64_t{0}, int64_t{-1}}) {
        for (bool descending : {false, true}) {
          const TensorPtr x = NonContiguous(TiedTensor(dt, shape));
          const std::vector<double> xv = ToDoubles(x);
          const int64_t d = Dim0(dim, shape.ndim());
          std::vector<double> want_v(xv.size()), want_i(xv.size());
          for (const std::vector<int64_t>& line : LinesAlong(shape, d)) {
            std::vector<double> lv;
            for (int64_t p : line) lv.push_back(xv[static_cast<size_t>(p)]);
            const std::vector<int64_t> order = RefOrder(lv, descending);
            for (size_t j = 0; j < line.size(); ++j) {
              want_v[static_cast<size_t>(line[j])] = lv[static_cast<size_t>(order[j])];
              want_i[static_cast<size_t>(line[j])] = static_cast<double>(order[j]);
            }
          }
          const ops::SortResult r = ops::Sort(x, dim, descending);
          ExpectTensorNear(r.values, dt, shape, want_v, 0, 0);
          ExpectTensorNear(r.indices, DType::Int64(), shape, want_i, 0, 0);
        }
      }
    }
    MarkCovered("sort", dt);
  }
  ExpectGradientsMatch([](const auto& in) { return ops::Sort(in[0], 0, true).values; }, {Leaf({4, 3})});
  ExpectGradientsMatch([](const auto& in) { return ops::Sort(in[0], -1).values; }, {Leaf({2, 5})});
  ExpectError([] { ops::Sort(RandomTensor(DType::Float32(), Shape{2, 3}), 2); }, {"sort: ", "dim"});
  ExpectError([] { ops::Sort(RandomTensor(DType::Bool(), Shape{2}), 0); }, {"sort: ", "bool"});
}

TEST(Topk, LargestOrSmallestSortedForEveryNumericDType) {
  for (Symbol<DType> dt : NumericDTypes()) {
    SCOPED_TRACE(dt->name());
    for (const Shape& shape : {Shape{4, 7}, Shape{3, 5, 2}, Shape{2, 300}}) {
      for (int64_t dim : {int64_t{1}, int64_t{-1}}) {
        const int64_t d = Dim0(dim, shape.ndim()), n = shape[d].value();
        for (int64_t k : {int64_t{0}, int64_t{1}, std::min<int64_t>(3, n), n}) {
          for (bool largest : {true, false}) {
            const TensorPtr x = NonContiguous(TiedTensor(dt, shape));
            const std::vector<double> xv = ToDoubles(x);
            Shape out = shape;
            out[d] = k;
            std::vector<double> want_v(static_cast<size_t>(out.numel())), want_i(want_v.size());
            const std::vector<std::vector<int64_t>> in_lines = LinesAlong(shape, d), out_lines = LinesAlong(out, d);
            for (size_t li = 0; li < in_lines.size() && k > 0; ++li) {
              std::vector<double> lv;
              for (int64_t p : in_lines[li]) lv.push_back(xv[static_cast<size_t>(p)]);
              const std::vector<int64_t> order = RefOrder(lv, largest);
              for (int64_t j = 0; j < k; ++j) {
                want_v[static_cast<size_t>(out_lines[li][static_cast<size_t>(j)])] = lv[static_cast<size_t>(order[static_cast<size_t>(j)])];
                want_i[static_cast<size_t>(out_lines[li][static_cast<size_t>(j)])] = static_cast<double>(order[static_cast<size_t>(j)]);
              }
            }
            const ops::SortResult r = ops::Topk(x, k, dim, largest, k % 2 == 0);
            ExpectTensorNear(r.values, dt, out, want_v, 0, 0);
            ExpectTensorNear(r.indices, DType::Int64(), out, want_i, 0, 0);
          }
        }
      }
    }
    MarkCovered("topk", dt);
  }
  ExpectGradientsMatch([](const auto& in) { return ops::Topk(in[0], 2, 1).values; }, {Leaf({3, 4})});
  ExpectGradientsMatch([](const auto& in) { return ops::Topk(in[0], 3, 0, false).values; }, {Leaf({5, 2})});
  const TensorPtr x = RandomTensor(DType::Float32(), Shape{2, 3});
  ExpectError([&] { ops::Topk(x, 4, 1); }, {"topk: ", "k 4 is out of range for dim 1", "[0, 3]"});
  ExpectError([&] { ops::Topk(x, -1, 1); }, {"topk: ", "k -1"});
}

TEST(Argmin, FirstMinimumAndFirstNaNForEveryNumericDType) {
  for (Symbol<DType> dt : NumericDTypes()) {
    SCOPED_TRACE(dt->name());
    for (const Shape& shape : {Shape{4, 7}, Shape{3, 5, 2}, Shape{7}, Shape{2, 300, 3}}) {
      for (int64_t dim = -shape.ndim(); dim < shape.ndim(); ++dim) {
        for (bool keepdim : {false, true}) {
          const TensorPtr x = NonContiguous(TiedTensor(dt, shape));
          const std::vector<double> xv = ToDoubles(x);
          const int64_t d = Dim0(dim, shape.ndim());
          Shape out = shape;
          out[d] = 1;
          std::vector<double> want(static_cast<size_t>(out.numel()));
          const std::vector<std::vector<int64_t>> lines = LinesAlong(shape, d), out_lines = LinesAlong(out, d);
          for (size_t li = 0; li < lines.size(); ++li) {
            int64_t best = 0;
            for (int64_t j = 0; j < static_cast<int64_t>(lines[li].size()); ++j) {
              const double v = xv[static_cast<size_t>(lines[li][static_cast<size_t>(j)])];
              const double b = xv[static_cast<size_t>(lines[li][static_cast<size_t>(best)])];
              if (!std::isnan(b) && (std::isnan(v) || v < b)) best = j;
            }
            want[static_cast<size_t>(out_lines[li][0])] = static_cast<double>(best);
          }
          if (!keepdim) out.erase(d);
          ExpectTensorNear(ops::Argmin(x, dim, keepdim), DType::Int64(), out, want, 0, 0);
        }
      }
    }
    MarkCovered("argmin", dt);
  }
  ExpectError([] { ops::Argmin(RandomTensor(DType::Float32(), Shape{2, 0}), 1); }, {"argmin: ", "size 0"});
  // Over a non-empty dim with nothing beside it: an empty result (found by fuzz_ops: a division by zero).
  EXPECT_EQ(ops::Argmin(RandomTensor(DType::Float32(), Shape{3, 0}), 0)->shape(), (Shape{0}));
  ExpectError([] { ops::Argmin(RandomTensor(DType::Float32(), Shape{2, 3}), 2); }, {"argmin: ", "dim"});
}

// sort and topk in a graph with a named batch dim: two outputs per node, the values' gradient too.
TEST(Sort, TracesIntoAGraphWithANamedDim) {
  const auto session = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session);
  graph::Graph g(session, "sort", graph::GraphOptions{});
  g.BeginBuild();
  const Dim n = Dim::NewSymbol("N");
  const TensorPtr x = g.AddInput("x", DType::Float32(), Shape{n, 5});
  const ops::SortResult s = ops::Sort(x, 1, true);
  const ops::SortResult t = ops::Topk(x, 2, 1);
  EXPECT_EQ(s.values->shape(), (Shape{n, 5}));
  EXPECT_EQ(t.indices->shape(), (Shape{n, 2}));
  g.AddOutput(s.values);
  g.AddOutput(s.indices);
  g.AddOutput(t.values);
  g.AddOutput(ops::Argmin(x, 1));
  g.EndBuild();
  for (int64_t rows : {2, 4}) {
    const TensorPtr xv = RandomTensor(DType::Float32(), Shape{rows, 5});
    const std::vector<TensorPtr> out = g.Run({xv});
    const ops::SortResult es = ops::Sort(xv, 1, true);
    ExpectTensorNear(out[0], DType::Float32(), Shape{rows, 5}, ToDoubles(es.values), 0, 0);
    ExpectTensorNear(out[1], DType::Int64(), Shape{rows, 5}, ToDoubles(es.indices), 0, 0);
    ExpectTensorNear(out[2], DType::Float32(), Shape{rows, 2}, ToDoubles(ops::Topk(xv, 2, 1).values), 0, 0);
    ExpectTensorNear(out[3], DType::Int64(), Shape{rows}, ToDoubles(ops::Argmin(xv, 1)), 0, 0);
  }
}


// ---- nonzero -------------------------------------------------------------------------------------------

TEST(Nonzero, PositionsOfNonZeroElementsForEveryDType) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    for (const Shape& shape : {Shape{3, 4}, Shape{2, 3, 2}, Shape{5}, Shape{}, Shape{0, 2}}) {
      const TensorPtr x = NonContiguous(RandomTensor(dt, shape, -1, 2));  // about a third are 0 (or false)
      const std::vector<double> xv = ToDoubles(x);
      std::vector<double> want;
      int64_t rows = 0;
      for (int64_t o = 0; o < shape.numel(); ++o) {
        if (xv[static_cast<size_t>(o)] == 0) continue;
        ++rows;
        for (int64_t c : Unravel(o, shape)) want.push_back(static_cast<double>(c));
      }
      ExpectTensorNear(ops::Nonzero(x), DType::Int64(), Shape{rows, shape.ndim()}, want, 0, 0);
    }
    MarkCovered("nonzero", dt);
  }
  const TensorPtr nan = FromDoubles(DType::Float32(), Shape{3}, {0, std::numeric_limits<double>::quiet_NaN(), -0.0});
  ExpectTensorNear(ops::Nonzero(nan), DType::Int64(), Shape{1, 1}, {1}, 0, 0);
  ExpectError([] { RunOp("nonzero", {Int64s(Shape{2}, {1, 0})}, {{"count", int64_t{2}}}); },
              {"nonzero: ", "x has 1 non-zero elements but count is 2"});
}

TEST(Nonzero, IsRefusedInAGraphBuild) {
  const auto session = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session);
  graph::Graph g(session, "nonzero", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr x = g.AddInput("x", DType::Float32(), Shape{4});
  ExpectError([&] { ops::Nonzero(x); }, {"nonzero: ", "depends on x's values", "graph"});
  ExpectError([&] { ops::Nonzero(RandomTensor(DType::Float32(), Shape{4})); }, {"nonzero: ", "graph"});
  g.AddOutput(ops::Relu(x));
  g.EndBuild();
}

}  // namespace
}  // namespace oneflow::test
