// Reductions (sum, mean, max, min, argmax, var, std, sum_to_shape) and their gradient ops against
// float64 reference loops, in every kernel dtype and in contiguous, strided and transposed layouts.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/op/dispatch.h"
#include "core/tensor/copy.h"
#include "tests/core/test_util.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kNumeric = {DType::Int8(),     DType::UInt8(),   DType::Int16(),
                                             DType::Int32(),    DType::Int64(),   DType::Float16(),
                                             DType::BFloat16(), DType::Float32(), DType::Float64()};
const std::vector<Symbol<DType>> kFloating = FloatingDTypes();

// Inputs in a range every dtype holds (uint8 has no negatives).
TensorPtr Input(Symbol<DType> dtype, const Shape& shape) {
  // uint8 sums keep their dtype: values below 10 keep a sum of 24 of them (sum_to_shape) below 256
  // whatever the generator's state.
  if (dtype->data_type() == DataType::kUInt8) return RandomTensor(dtype, shape, 0, 10);
  if (dtype->is_integer()) return RandomTensor(dtype, shape, -10, 10);
  return RandomTensor(dtype, shape, -2, 2);
}

// The values of each output of a reduction, in reduction (row-major) order, and the output shape.
struct Groups {
  Shape shape;
  std::vector<std::vector<double>> values;
};

Groups GroupForReduction(const std::vector<double>& x, const Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
  const int64_t nd = shape.ndim();
  std::vector<bool> reduced(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims) reduced[static_cast<size_t>(d < 0 ? d + nd : d)] = true;
  Groups g;
  Shape kept;
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduced[static_cast<size_t>(d)]) {
      g.shape.push_back(shape[d]);
      kept.push_back(shape[d]);
    } else if (keepdim) {
      g.shape.push_back(Dim(1));
    }
  }
  int64_t n_out = 1;
  for (Dim d : kept) n_out *= d.value();
  g.values.resize(static_cast<size_t>(n_out));
  for (size_t i = 0; i < x.size(); ++i) {
    const std::vector<int64_t> idx = Unravel(static_cast<int64_t>(i), shape);
    std::vector<int64_t> kidx;
    for (int64_t d = 0; d < nd; ++d) {
      if (!reduced[static_cast<size_t>(d)]) kidx.push_back(idx[static_cast<size_t>(d)]);
    }
    g.values[static_cast<size_t>(Ravel(kidx, kept))].push_back(x[i]);
  }
  return g;
}

double RefSum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
double RefMean(const std::vector<double>& v) { return RefSum(v) / static_cast<double>(v.size()); }
double RefMax(const std::vector<double>& v) {
  double m = -std::numeric_limits<double>::infinity();
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::max(m, x);
  }
  return m;
}
double RefMin(const std::vector<double>& v) {
  double m = std::numeric_limits<double>::infinity();
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::min(m, x);
  }
  return m;
}
double RefArgmax(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<double>(i);
    if (v[i] > v[best]) best = i;
  }
  return static_cast<double>(best);
}
double RefVar(const std::vector<double>& v, int64_t correction) {
  const double mean = RefMean(v);
  double s = 0;
  for (double x : v) s += (x - mean) * (x - mean);
  return s / std::max(0.0, static_cast<double>(v.size()) - static_cast<double>(correction));
}

struct Case {
  Shape shape;
  std::vector<int64_t> dims;
  bool keepdim;
};

std::vector<Case> SmallCases() {
  std::vector<Case> cases;
  const std::vector<std::pair<Shape, std::vector<std::vector<int64_t>>>> shapes = {
      {Shape{}, {{}}},
      {Shape{7}, {{}, {0}, {-1}}},
      {Shape{2, 3, 4}, {{}, {0}, {1}, {2}, {-1}, {0, 2}, {1, 2}, {0, 1}, {2, 0}}},
      {Shape{1, 5, 1}, {{0, 2}, {1}, {0}}},
      {Shape{3, 1, 5}, {{1}, {0, -1}}},
      {Shape{2, 3, 5, 7}, {{0, 2, 3}, {1}, {3}, {0, 1}}},
      {Shape{33, 17}, {{0}, {1}}},
  };
  for (const auto& [shape, dim_lists] : shapes) {
    for (const auto& dims : dim_lists) {
      for (bool keepdim : {false, true}) cases.push_back({shape, dims, keepdim});
    }
  }
  return cases;
}

// Large enough for the parallel paths: rows, columns, full reductions, and few outputs with long
// reductions (split into parts).
std::vector<Case> LargeCases() {
  return {{Shape{1 << 17}, {}, false},       {Shape{100000, 3}, {0}, false}, {Shape{3, 100000}, {1}, true},
          {Shape{64, 4096}, {0}, false},     {Shape{1024, 300}, {1}, false}, {Shape{8, 16, 32, 32}, {0, 2, 3}, true},
          {Shape{4, 3000, 7}, {1}, false}};
}

using RefFn = std::function<double(const std::vector<double>&)>;
using OpFn = std::function<TensorPtr(const TensorPtr&, const std::vector<int64_t>&, bool)>;

// Runs `op` on every case, dtype and layout, compares with `ref`, and marks the op covered.
void CheckReduction(const std::string& name, const OpFn& op, const RefFn& ref, const std::vector<Symbol<DType>>& dtypes,
                    const std::function<Symbol<DType>(Symbol<DType>)>& out_dtype, bool large) {
  for (Symbol<DType> dtype : dtypes) {
    for (const Case& c : large ? LargeCases() : SmallCases()) {
      SCOPED_TRACE(fmt::format("{} {} {} dims=[{}] keepdim={}", name, dtype, c.shape, fmt::join(c.dims, ","), c.keepdim));
      const TensorPtr x = Input(dtype, c.shape);
      const Groups g = GroupForReduction(ToDoubles(x), c.shape, c.dims, c.keepdim);
      std::vector<double> expected;
      for (const auto& v : g.values) expected.push_back(ref(v));
      const Symbol<DType> od = out_dtype(dtype);
      const double rtol = od->is_floating_point() ? RtolFor(od) : 0.0;
      for (const TensorPtr& layout : large ? std::vector<TensorPtr>{x} : Layouts(x)) {
        ExpectTensorNear(op(layout, c.dims, c.keepdim), od, g.shape, expected, rtol, od->is_floating_point() ? 1e-6 : 0);
      }
    }
    MarkCovered(name, dtype);
  }
}

Symbol<DType> Same(Symbol<DType> d) { return d; }

TEST(Reduce, Sum) {
  std::vector<Symbol<DType>> dtypes = kNumeric;
  dtypes.push_back(DType::Bool());
  auto out = [](Symbol<DType> d) { return d->is_floating_point() ? d : DType::Int64(); };
  CheckReduction("sum", [](auto x, auto d, bool k) { return ops::Sum(x, d, k); }, RefSum, dtypes, out, false);
  CheckReduction("sum", [](auto x, auto d, bool k) { return ops::Sum(x, d, k); }, RefSum,
                 {DType::Float32(), DType::Float64(), DType::Int32()}, out, true);
}

TEST(Reduce, Mean) {
  CheckReduction("mean", [](auto x, auto d, bool k) { return ops::Mean(x, d, k); }, RefMean, kFloating, Same, false);
  CheckReduction("mean", [](auto x, auto d, bool k) { return ops::Mean(x, d, k); }, RefMean, kFloating, Same, true);
}

TEST(Reduce, MaxMin) {
  CheckReduction("max", [](auto x, auto d, bool k) { return ops::Max(x, d, k); }, RefMax, kNumeric, Same, false);
  CheckReduction("min", [](auto x, auto d, bool k) { return ops::Min(x, d, k); }, RefMin, kNumeric, Same, false);
  CheckReduction("max", [](auto x, auto d, bool k) { return ops::Max(x, d, k); }, RefMax, kFloating, Same, true);
  CheckReduction("min", [](auto x, auto d, bool k) { return ops::Min(x, d, k); }, RefMin, {DType::Int16()}, Same, true);
}

TEST(Reduce, Argmax) {
  const OpFn argmax = [](const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) {
    return ops::Argmax(x, dims.empty() ? 0 : dims[0], keepdim);
  };
  for (Symbol<DType> dtype : kNumeric) {
    for (const auto& [shape, dim] : std::vector<std::pair<Shape, int64_t>>{
             {Shape{7}, 0}, {Shape{2, 3, 4}, 1}, {Shape{2, 3, 4}, -1}, {Shape{2, 3, 4}, 0}, {Shape{5, 1}, 1},
             {Shape{33, 17}, 0}, {Shape{3, 40000}, 1}, {Shape{40000, 3}, 0}}) {
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE(fmt::format("argmax {} {} dim={} keepdim={}", dtype, shape, dim, keepdim));
        // Few distinct values, so that ties (first index wins) are common.
        const TensorPtr x = dtype->is_floating_point() ? FromDoubles(dtype, shape, ToDoubles(RandomTensor(DType::Int8(), shape, 0, 5)))
                                                       : Input(dtype, shape);
        const Groups g = GroupForReduction(ToDoubles(x), shape, {dim}, keepdim);
        std::vector<double> expected;
        for (const auto& v : g.values) expected.push_back(RefArgmax(v));
        for (const TensorPtr& layout : Layouts(x)) {
          ExpectTensorNear(ops::Argmax(layout, dim, keepdim), DType::Int64(), g.shape, expected, 0, 0);
        }
      }
    }
    MarkCovered("argmax", dtype);
  }
}

TEST(Reduce, VarStd) {
  for (int64_t correction : {0, 1, 2}) {
    CheckReduction("var", [&](auto x, auto d, bool k) { return ops::Var(x, d, correction, k); },
                   [&](const std::vector<double>& v) { return RefVar(v, correction); }, kFloating, Same, false);
    CheckReduction("std", [&](auto x, auto d, bool k) { return ops::Std(x, d, correction, k); },
                   [&](const std::vector<double>& v) { return std::sqrt(RefVar(v, correction)); }, kFloating, Same,
                   false);
  }
  CheckReduction("var", [](auto x, auto d, bool k) { return ops::Var(x, d, 1, k); },
                 [](const std::vector<double>& v) { return RefVar(v, 1); }, kFloating, Same, true);
  // Large mean, small spread: a one-pass formula would cancel.
  const TensorPtr x = FromDoubles(DType::Float32(), Shape{4}, {1e4 + 1, 1e4 + 2, 1e4 + 3, 1e4 + 4});
  ExpectTensorNear(ops::Var(x), DType::Float32(), Shape{}, {5.0 / 3.0}, 1e-6, 0);
}

TEST(Reduce, EdgeValues) {
  // Empty reductions: sum 0, mean NaN; NaN propagates through max/min/argmax.
  const TensorPtr empty = Empty(DType::Float32(), Shape{0, 3}, Device::CPU());
  ExpectTensorNear(ops::Sum(empty, {0}), DType::Float32(), Shape{3}, {0, 0, 0});
  ExpectTensorNear(ops::Sum(empty, {1}), DType::Float32(), Shape{0}, {});
  const double nan = std::nan("");
  ExpectTensorNear(ops::Mean(empty, {0}), DType::Float32(), Shape{3}, {nan, nan, nan});
  const TensorPtr x = FromDoubles(DType::Float64(), Shape{2, 3}, {1, nan, 3, 4, 5, -6});
  ExpectTensorNear(ops::Max(x, {1}), DType::Float64(), Shape{2}, {nan, 5});
  ExpectTensorNear(ops::Min(x, {1}), DType::Float64(), Shape{2}, {nan, -6});
  ExpectTensorNear(ops::Argmax(x, 1), DType::Int64(), Shape{2}, {1, 1}, 0, 0);
  // Large float32 sums stay accurate (accumulated in double).
  const TensorPtr ones = Full(DType::Float32(), Shape{1 << 25}, 1.0, Device::CPU());
  ExpectTensorNear(ops::Sum(ones), DType::Float32(), Shape{}, {static_cast<double>(1 << 25)}, 0, 0);
  // Integer sums widen to int64.
  const TensorPtr big = Full(DType::Int8(), Shape{1000}, 100, Device::CPU());
  ExpectTensorNear(ops::Sum(big), DType::Int64(), Shape{}, {100000}, 0, 0);
}

// int64 sums wrap around modulo 2^64 (Note [Wrapping integer arithmetic]); UBSan refuses the signed
// overflow they used to be. Rows, columns and the three layouts take different loops.
TEST(Reduce, IntegerSumsWrapAround) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> values = {kMax, 1, kMax, 3, kMax, 5, kMax, 7, kMax, 9};  // 2 x 5
  const TensorPtr x = FromHost(DType::Int64(), Shape{2, 5}, values.data(), values.size() * sizeof(int64_t), Device::CPU());
  auto sum_of = [](const std::vector<int64_t>& v) {  // the reference: unsigned, so it wraps
    uint64_t s = 0;
    for (int64_t e : v) s += static_cast<uint64_t>(e);
    return static_cast<int64_t>(s);
  };
  for (const TensorPtr& layout : {x, NonContiguous(x), Transposed(x)}) {
    EXPECT_EQ(ops::Sum(layout)->data<int64_t>()[0], sum_of(values));
    const TensorPtr rows = ops::Sum(layout, {1});
    EXPECT_EQ(rows->data<int64_t>()[0], sum_of({kMax, 1, kMax, 3, kMax}));
    EXPECT_EQ(rows->data<int64_t>()[1], sum_of({5, kMax, 7, kMax, 9}));
    const TensorPtr columns = ops::Sum(layout, {0});
    for (size_t c = 0; c < 5; ++c) EXPECT_EQ(columns->data<int64_t>()[c], sum_of({values[c], values[5 + c]}));
  }
}

TEST(Reduce, Reproducible) {
  // Split reductions do not depend on the thread count.
  const TensorPtr x = RandomTensor(DType::Float32(), Shape{3, 200000});
  std::vector<std::vector<double>> results;
  for (int32_t threads : {1, 2, 3}) {
    Session session(SessionOptions{.num_threads = threads});
    SessionScope scope(session);
    results.push_back(ToDoubles(ops::Sum(x, {1})));
    results.push_back(ToDoubles(ops::Var(x, {1})));
  }
  EXPECT_EQ(results[0], results[2]);
  EXPECT_EQ(results[0], results[4]);
  EXPECT_EQ(results[1], results[3]);
  EXPECT_EQ(results[1], results[5]);
}

TEST(Reduce, SumToShape) {
  const Shape from{2, 3, 4};
  for (Symbol<DType> dtype : kNumeric) {
    for (const Shape& to : {Shape{3, 1}, Shape{4}, Shape{1, 1, 4}, Shape{2, 1, 1}, Shape{}, Shape{1}, Shape{2, 3, 1}}) {
      SCOPED_TRACE(fmt::format("sum_to_shape {} {} -> {}", dtype, from, to));
      const TensorPtr x = Input(dtype, from);
      const std::vector<double> xv = ToDoubles(x);
      std::vector<double> expected(static_cast<size_t>(to.numel()), 0.0);
      for (int64_t i = 0; i < from.numel(); ++i) {
        expected[static_cast<size_t>(BroadcastIndex(Unravel(i, from), to, from))] += xv[static_cast<size_t>(i)];
      }
      for (const TensorPtr& layout : Layouts(x)) {
        ExpectTensorNear(ops::SumToShape(layout, to), dtype, to, expected, RtolFor(dtype), dtype->is_floating_point() ? 1e-6 : 0);
      }
    }
    MarkCovered("sum_to_shape", dtype);
  }
  // Equal shapes: x itself.
  const TensorPtr x = RandomTensor(DType::Float32(), from);
  EXPECT_EQ(ops::SumToShape(x, from).get(), x.get());
  // Bias gradient shapes, large.
  const TensorPtr g = RandomTensor(DType::Float32(), Shape{16, 64, 28, 28});
  const std::vector<double> gv = ToDoubles(g);
  std::vector<double> expected(64, 0.0);
  for (size_t i = 0; i < gv.size(); ++i) expected[(i / (28 * 28)) % 64] += gv[i];
  ExpectTensorNear(ops::SumToShape(g, Shape{64, 1, 1}), DType::Float32(), Shape{64, 1, 1}, expected, 1e-5, 1e-5);
}

// ---- gradients ----------------------------------------------------------------------------------------

TensorPtr Leaf(const Shape& shape) {
  TensorPtr x = RandomTensor(DType::Float64(), shape);
  x->set_requires_grad(true);
  return x;
}

TEST(ReduceGrad, SumMeanVarStd) {
  for (const Case& c : SmallCases()) {
    if (c.shape.numel() > 60) continue;
    SCOPED_TRACE(fmt::format("{} dims=[{}] keepdim={}", c.shape, fmt::join(c.dims, ","), c.keepdim));
    const TensorPtr x = Leaf(c.shape);
    ExpectGradientsMatch([&](const auto& in) { return ops::Sum(in[0], c.dims, c.keepdim); }, {x});
    ExpectGradientsMatch([&](const auto& in) { return ops::Mean(in[0], c.dims, c.keepdim); }, {x});
    ExpectGradientsMatch([&](const auto& in) { return ops::Max(in[0], c.dims, c.keepdim); }, {x});
    ExpectGradientsMatch([&](const auto& in) { return ops::Min(in[0], c.dims, c.keepdim); }, {x});
    if (GroupForReduction(ToDoubles(x), c.shape, c.dims, c.keepdim).values[0].size() > 2) {
      ExpectGradientsMatch([&](const auto& in) { return ops::Var(in[0], c.dims, 1, c.keepdim); }, {x}, 1e-6, 1e-5);
      ExpectGradientsMatch([&](const auto& in) { return ops::Std(in[0], c.dims, 0, c.keepdim); }, {x}, 1e-6, 1e-5);
    }
  }
}

TEST(ReduceGrad, SumToShape) {
  for (const Shape& to : {Shape{3, 1}, Shape{4}, Shape{1, 1, 4}, Shape{2, 1, 1}, Shape{}}) {
    const TensorPtr x = Leaf(Shape{2, 3, 4});
    ExpectGradientsMatch([&](const auto& in) { return ops::SumToShape(in[0], to); }, {x});
  }
}

TEST(ReduceGrad, MaxTiesSplitEvenly) {
  const TensorPtr x = FromDoubles(DType::Float64(), Shape{2, 4}, {1, 3, 3, 2, 5, 5, 5, 0});
  x->set_requires_grad(true);
  Backward({ops::Max(x, {1})}, {FromDoubles(DType::Float64(), Shape{2}, {1, 6})});
  ExpectTensorNear(x->grad(), DType::Float64(), Shape{2, 4}, {0, 0.5, 0.5, 0, 2, 2, 2, 0});
}

// ---- the gradient ops, directly -------------------------------------------------------------------------

TensorPtr RunOp(std::string_view op, std::vector<TensorPtr> inputs, Attrs attrs) {
  return Apply1(OpRegistry::Global().Get(op), std::move(inputs), std::move(attrs));
}

TEST(ReduceGradOps, BroadcastLike) {
  for (Symbol<DType> dtype : kFloating) {
    struct BCase {
      Shape y;
      std::vector<int64_t> dims;
      Shape like;
    };
    for (const BCase& c : std::vector<BCase>{{Shape{3}, {0, 2}, Shape{2, 3, 4}},
                                             {Shape{2, 1, 4}, {}, Shape{2, 3, 4}},
                                             {Shape{}, {0, 1}, Shape{5, 7}},
                                             {Shape{3, 1}, {0}, Shape{2, 3, 5}},
                                             {Shape{1, 1}, {}, Shape{40, 1000}}}) {
      for (bool mean : {false, true}) {
        SCOPED_TRACE(fmt::format("{} {} dims=[{}] -> {} mean={}", dtype, c.y, fmt::join(c.dims, ","), c.like, mean));
        const TensorPtr y = RandomTensor(dtype, c.y);
        const TensorPtr like = Empty(dtype, c.like, Device::CPU());
        // y with the inserted dims as size 1, then NumPy broadcasting.
        Shape y_full = c.like;
        int64_t j = 0;
        for (int64_t d = 0; d < c.like.ndim(); ++d) {
          const bool inserted = std::find(c.dims.begin(), c.dims.end(), d) != c.dims.end();
          y_full[d] = inserted ? Dim(1) : c.y[j++];
        }
        const double scale = mean ? static_cast<double>(c.y.numel()) / static_cast<double>(c.like.numel()) : 1.0;
        const std::vector<double> yv = ToDoubles(y);
        std::vector<double> expected;
        for (int64_t i = 0; i < c.like.numel(); ++i) {
          expected.push_back(yv[static_cast<size_t>(BroadcastIndex(Unravel(i, c.like), y_full, c.like))] * scale);
        }
        for (const TensorPtr& layout : Layouts(y)) {
          ExpectTensorNear(RunOp("broadcast_like", {layout, like}, {{"dims", c.dims}, {"mean", mean}}), dtype, c.like,
                           expected, RtolFor(dtype));
        }
      }
    }
    MarkCovered("broadcast_like", dtype);
  }
}

TEST(ReduceGradOps, MaxBackward) {
  for (Symbol<DType> dtype : kFloating) {
    const Shape shape{3, 4, 5};
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1}, {0, 2}, {}}) {
      // Small integers: many ties.
      const TensorPtr x = FromDoubles(dtype, shape, ToDoubles(RandomTensor(DType::Int8(), shape, 0, 4)));
      const TensorPtr y = ops::Max(x, dims, true);
      const Groups g = GroupForReduction(ToDoubles(x), shape, dims, true);
      const TensorPtr dy = RandomTensor(dtype, g.shape);
      const std::vector<double> xv = ToDoubles(x), yv = ToDoubles(y), dyv = ToDoubles(dy);
      std::vector<double> expected(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) {
        const int64_t o = BroadcastIndex(Unravel(static_cast<int64_t>(i), shape), g.shape, shape);
        const auto& v = g.values[static_cast<size_t>(o)];
        const double ties = static_cast<double>(std::count(v.begin(), v.end(), yv[static_cast<size_t>(o)]));
        expected[i] = xv[i] == yv[static_cast<size_t>(o)] ? dyv[static_cast<size_t>(o)] / ties : 0.0;
      }
      ExpectTensorNear(RunOp("max_backward", {x, y, dy}, {{"dims", dims}, {"keepdim", true}}), dtype, shape, expected,
                       RtolFor(dtype));
    }
    MarkCovered("max_backward", dtype);
  }
}

TEST(ReduceGradOps, VarBackward) {
  for (Symbol<DType> dtype : kFloating) {
    const Shape shape{3, 4, 5};
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1}, {0, 2}, {}}) {
      for (bool with_std : {false, true}) {
        const TensorPtr x = RandomTensor(dtype, shape);
        const Groups g = GroupForReduction(ToDoubles(x), shape, dims, false);
        const TensorPtr dy = RandomTensor(dtype, g.shape);
        const TensorPtr sd = with_std ? ops::Std(x, dims, 1, false) : TensorPtr();
        const std::vector<double> xv = ToDoubles(x), dyv = ToDoubles(dy);
        std::vector<double> expected(xv.size());
        for (size_t i = 0; i < xv.size(); ++i) {
          const std::vector<int64_t> idx = Unravel(static_cast<int64_t>(i), shape);
          Shape keep = shape;
          for (int64_t d = 0; d < shape.ndim(); ++d) {
            if (dims.empty() || std::find(dims.begin(), dims.end(), d) != dims.end()) keep[d] = Dim(1);
          }
          const size_t o = static_cast<size_t>(BroadcastIndex(idx, keep, shape));
          const auto& v = g.values[o];
          const double n1 = static_cast<double>(v.size()) - 1;
          const double dev = xv[i] - RefMean(v);
          expected[i] = with_std ? dyv[o] * dev / (n1 * std::sqrt(RefVar(v, 1))) : dyv[o] * 2 * dev / n1;
        }
        ExpectTensorNear(RunOp("var_backward", {x, dy, sd}, {{"dims", dims}, {"correction", int64_t{1}}}), dtype, shape,
                         expected, RtolFor(dtype) * 10, 1e-5);
      }
    }
    MarkCovered("var_backward", dtype);
  }
}

// ---- errors and inference ----------------------------------------------------------------------------

TEST(ReduceErrors, BadArguments) {
  const TensorPtr x = RandomTensor(DType::Float32(), Shape{2, 3});
  OF_EXPECT_ERROR(ops::Sum(x, {2}), InvalidArgument, "sum:", "reduction dim 2 is out of range");
  OF_EXPECT_ERROR(ops::Sum(x, {1, -1}), InvalidArgument, "sum:", "more than once");
  OF_EXPECT_ERROR(ops::Mean(RandomTensor(DType::Int32(), Shape{2})), InvalidArgument, "mean:", "floating point",
                  "int32");
  OF_EXPECT_ERROR(ops::Max(Empty(DType::Float32(), Shape{2, 0}, Device::CPU()), {1}), InvalidArgument, "max:",
                  "dim 1 of size 0");
  OF_EXPECT_ERROR(ops::Min(Empty(DType::Float32(), Shape{0}, Device::CPU())), InvalidArgument, "min:", "size 0");
  OF_EXPECT_ERROR(ops::Argmax(x, 2), InvalidArgument, "argmax:", "out of range");
  OF_EXPECT_ERROR(ops::Argmax(Empty(DType::Int32(), Shape{0, 2}, Device::CPU()), 0), InvalidArgument, "argmax:",
                  "size 0");
  OF_EXPECT_ERROR(ops::Var(x, {}, -1), InvalidArgument, "var:", "correction");
  OF_EXPECT_ERROR(ops::Std(RandomTensor(DType::Int64(), Shape{2})), InvalidArgument, "std:", "floating point");
  OF_EXPECT_ERROR(ops::SumToShape(x, Shape{4}), InvalidArgument, "sum_to_shape:", "(4,)", "(2, 3)");
  OF_EXPECT_ERROR(ops::SumToShape(x, Shape{1, 2, 3}), InvalidArgument, "sum_to_shape:", "(1, 2, 3)");
  OF_EXPECT_ERROR(ops::Sum(TensorPtr()), InvalidArgument, "sum:", "null");
}

std::vector<TensorMeta> InferOf(std::string_view op, std::vector<TensorMeta> in, Attrs attrs) {
  const OpDef& def = OpRegistry::Global().Get(op);
  for (const AttrSpec& s : def.attrs) {
    if (!attrs.Has(s.name)) attrs.Set(s.name, s.default_value);
  }
  return def.infer(in, attrs);
}

TEST(ReduceInference, SymbolicDims) {
  const Dim n = Dim::NewSymbol("N");
  const TensorMeta x{DType::Float32(), Shape{n, Dim::Unknown(), 4}, Device::CPU()};
  EXPECT_EQ(InferOf("sum", {x}, {{"dims", std::vector<int64_t>{1}}})[0].shape, (Shape{n, 4}));
  EXPECT_EQ(InferOf("mean", {x}, {{"dims", std::vector<int64_t>{0}}, {"keepdim", true}})[0].shape,
            (Shape{1, Dim::Unknown(), 4}));
  EXPECT_EQ(InferOf("max", {x}, {{"dims", std::vector<int64_t>{-1}}})[0].shape, (Shape{n, Dim::Unknown()}));
  EXPECT_EQ(InferOf("argmax", {x}, {{"dim", int64_t{0}}})[0].dtype, DType::Int64());
  EXPECT_EQ(InferOf("sum", {{DType::Bool(), Shape{n}, Device::CPU()}}, {})[0].dtype, DType::Int64());
  const Shape target{Dim::Unknown(), 1};
  const auto raw = target.raw();
  EXPECT_EQ(InferOf("sum_to_shape", {x}, {{"shape", std::vector<int64_t>(raw.begin(), raw.end())}})[0].shape,
            (Shape{Dim::Unknown(), 1}));
  EXPECT_EQ(InferOf("broadcast_like", {{DType::Float32(), Shape{n}, Device::CPU()}, x},
                    {{"dims", std::vector<int64_t>{1, 2}}})[0]
                .shape,
            x.shape);
}

}  // namespace
}  // namespace oneflow::test
