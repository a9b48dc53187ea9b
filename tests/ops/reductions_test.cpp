// prod, logsumexp, all, any, norm, the scans cumsum and cumprod, and their gradient ops against
// float64 reference loops, in every kernel dtype and in contiguous, strided and transposed layouts;
// gradients by finite differences (zeros in prod's and cumprod's input, the 2-norm at 0); edge cases;
// errors; lazy graphs with an unknown dim.
#include <cmath>
#include <limits>

#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/ops/reductions.h"
#include "core/tensor/copy.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<Symbol<DType>> kFloating = FloatingDTypes();
const std::vector<Symbol<DType>> kProdTypes = {DType::Bool(),    DType::Int8(),   DType::UInt8(),   DType::Int16(),
                                               DType::Int32(),   DType::Int64(),  DType::Float16(), DType::BFloat16(),
                                               DType::Float32(), DType::Float64()};
const std::vector<Symbol<DType>> kAll = {DType::Bool(),    DType::Int8(),     DType::UInt8(),   DType::Int16(),
                                         DType::Int32(),   DType::Int64(),    DType::Float16(), DType::BFloat16(),
                                         DType::Float32(), DType::Float64()};

const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }

// Each output's values in reduction order, and the output shape.
struct Groups {
  Shape shape;
  std::vector<std::vector<double>> values;
  std::vector<int64_t> owner;  // the output of each input element
};
Groups GroupFor(const std::vector<double>& x, const Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
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
  g.values.resize(static_cast<size_t>(kept.numel()));
  for (size_t i = 0; i < x.size(); ++i) {
    const std::vector<int64_t> idx = Unravel(static_cast<int64_t>(i), shape);
    std::vector<int64_t> kidx;
    for (int64_t d = 0; d < nd; ++d) {
      if (!reduced[static_cast<size_t>(d)]) kidx.push_back(idx[static_cast<size_t>(d)]);
    }
    const int64_t o = Ravel(kidx, kept);
    g.values[static_cast<size_t>(o)].push_back(x[i]);
    g.owner.push_back(o);
  }
  return g;
}

double RefProd(const std::vector<double>& v) {
  double p = 1;
  for (double x : v) p *= x;
  return p;
}
double RefLogSumExp(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) m = std::isnan(x) || x > m ? x : m;
  if (!std::isfinite(m)) return m;
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}
double RefNorm(const std::vector<double>& v, double p) {
  double a = p == -kInf ? kInf : 0;
  for (double x : v) {
    const double ax = std::fabs(x);
    if (std::isnan(ax)) return ax;
    if (p == 1) a += ax;
    if (p == 2) a += ax * ax;
    if (p == kInf) a = std::max(a, ax);
    if (p == -kInf) a = std::min(a, ax);
  }
  return p == 2 ? std::sqrt(a) : a;
}

struct Case {
  Shape shape;
  std::vector<int64_t> dims;
  bool keepdim;
};
const std::vector<Case> kCases = {
    {{2, 3, 4}, {1}, false}, {{2, 3, 4}, {0, 2}, true}, {{2, 3, 4}, {}, false}, {{5}, {-1}, false},
    {{}, {}, false},         {{4, 5}, {0}, false},      {{3, 0}, {1}, false},   {{2, 300}, {1}, true},
};

std::vector<double> PerGroup(const Groups& g, double (*f)(const std::vector<double>&)) {
  std::vector<double> out;
  for (const auto& v : g.values) out.push_back(f(v));
  return out;
}

// Values that make products stay exact in every dtype (and hold zeros for all/any).
TensorPtr SmallInts(Symbol<DType> dt, const Shape& shape, double lo, double hi) {
  const std::vector<double> v = ToDoubles(RandomTensor(DType::Float64(), shape, lo, hi));
  std::vector<double> r;
  for (double x : v) r.push_back(std::floor(x));
  if (dt->is_bool() || dt == DType::UInt8()) {
    for (double& x : r) x = std::fabs(x);
  }
  if (dt->is_bool()) {
    for (double& x : r) x = x != 0;
  }
  return FromDoubles(dt, shape, r);
}

TEST(Reductions, ProdMatchesReference) {
  for (Symbol<DType> dt : kProdTypes) {
    for (const Case& k : kCases) {
      SCOPED_TRACE(fmt::format("{} {} ({} dims) keepdim {}", dt->name(), k.shape, k.dims.size(), k.keepdim));
      // Integers in {-1, 0, 1} (products exact in every dtype); floats near 1 so that 300 factors stay
      // finite.
      const TensorPtr x = dt->is_floating_point() ? RandomTensor(dt, k.shape, 0.9, 1.1) : SmallInts(dt, k.shape, -1, 2);
      const Groups g = GroupFor(ToDoubles(x), k.shape, k.dims, k.keepdim);
      const Symbol<DType> out = dt->is_floating_point() ? dt : DType::Int64();
      for (const TensorPtr& in : Layouts(x)) {
        ExpectTensorNear(ops::Prod(in, k.dims, k.keepdim), out, g.shape, PerGroup(g, RefProd), RtolFor(dt) * 10, 0);
      }
      MarkCovered("prod", dt);
    }
  }
  // Integer products wrap as int64 (PyTorch): 2^62 * 4 = 2^64 = 0.
  const TensorPtr big = FromDoubles(DType::Int64(), {2}, {4611686018427387904.0, 4});
  EXPECT_EQ(ToDoubles(ops::Prod(big))[0], 0.0);
  // Empty products are 1.
  ExpectTensorNear(ops::Prod(RandomTensor(DType::Float32(), {0, 3}), {0}), DType::Float32(), {3}, {1, 1, 1});
}

TEST(Reductions, LogSumExpMatchesReference) {
  for (Symbol<DType> dt : kFloating) {
    for (const Case& k : kCases) {
      SCOPED_TRACE(fmt::format("{} {} keepdim {}", dt->name(), k.shape, k.keepdim));
      // Large values: a naive log(sum(exp)) would overflow.
      const TensorPtr x = RandomTensor(dt, k.shape, 500, 520);
      const Groups g = GroupFor(ToDoubles(x), k.shape, k.dims, k.keepdim);
      for (const TensorPtr& in : Layouts(x)) {
        ExpectTensorNear(ops::LogSumExp(in, k.dims, k.keepdim), dt, g.shape, PerGroup(g, RefLogSumExp), RtolFor(dt), 1e-6);
      }
      MarkCovered("logsumexp", dt);
    }
    // -inf everywhere gives -inf; an inf gives inf; NaN propagates; empty gives -inf.
    const TensorPtr special = FromDoubles(dt, {4, 2}, {-kInf, -kInf, kInf, 1, NAN, 1, 1, 2});
    ExpectTensorNear(ops::LogSumExp(special, {1}), dt, {4}, {-kInf, kInf, NAN, 2 + std::log1p(std::exp(-1.0))},
                     RtolFor(dt), 0);
    ExpectTensorNear(ops::LogSumExp(RandomTensor(dt, {2, 0}), {1}), dt, {2}, {-kInf, -kInf});
  }
}

TEST(Reductions, AllAnyMatchReference) {
  for (Symbol<DType> dt : kAll) {
    for (const Case& k : kCases) {
      SCOPED_TRACE(fmt::format("{} {} keepdim {}", dt->name(), k.shape, k.keepdim));
      // Mostly non-zero so that `all` is sometimes true.
      const TensorPtr x = SmallInts(dt, k.shape, -1, 6);
      const Groups g = GroupFor(ToDoubles(x), k.shape, k.dims, k.keepdim);
      std::vector<double> all, any;
      for (const auto& v : g.values) {
        all.push_back(std::all_of(v.begin(), v.end(), [](double e) { return e != 0; }));
        any.push_back(std::any_of(v.begin(), v.end(), [](double e) { return e != 0; }));
      }
      for (const TensorPtr& in : Layouts(x)) {
        ExpectTensorNear(ops::All(in, k.dims, k.keepdim), DType::Bool(), g.shape, all, 0, 0);
        ExpectTensorNear(ops::Any(in, k.dims, k.keepdim), DType::Bool(), g.shape, any, 0, 0);
      }
      MarkCovered("all", dt);
      MarkCovered("any", dt);
    }
  }
  // NaN is true.
  const TensorPtr nan = FromDoubles(DType::Float32(), {2}, {NAN, 0});
  EXPECT_EQ(ToDoubles(ops::Any(nan, {}, false)), std::vector<double>{1});
  EXPECT_EQ(ToDoubles(ops::All(FromDoubles(DType::Float32(), {1}, {NAN}))), std::vector<double>{1});
}

TEST(Reductions, NormMatchesReference) {
  for (Symbol<DType> dt : kFloating) {
    for (double p : {1.0, 2.0, kInf, -kInf}) {
      for (const Case& k : kCases) {
        if (std::isinf(p) && k.shape.numel() == 0) continue;
        SCOPED_TRACE(fmt::format("{} p {} {} keepdim {}", dt->name(), p, k.shape, k.keepdim));
        const TensorPtr x = RandomTensor(dt, k.shape);
        const Groups g = GroupFor(ToDoubles(x), k.shape, k.dims, k.keepdim);
        std::vector<double> want;
        for (const auto& v : g.values) want.push_back(RefNorm(v, p));
        for (const TensorPtr& in : Layouts(x)) {
          ExpectTensorNear(ops::Norm(in, p, k.dims, k.keepdim), dt, g.shape, want, RtolFor(dt), 1e-6);
        }
        MarkCovered("norm", dt);
      }
    }
    const TensorPtr nan = FromDoubles(dt, {2, 2}, {NAN, 1, -3, 4});
    ExpectTensorNear(ops::Norm(nan, kInf, {1}), dt, {2}, {NAN, 4});
    ExpectTensorNear(ops::Norm(nan, -kInf, {1}), dt, {2}, {NAN, 3});
    ExpectTensorNear(ops::Norm(nan, 2, {1}), dt, {2}, {NAN, 5});
  }
}

TEST(Reductions, Gradients) {
  const Symbol<DType> f64 = DType::Float64();
  for (const Case& k : kCases) {
    if (k.shape.numel() > 30) continue;
    SCOPED_TRACE(fmt::format("{} keepdim {}", k.shape, k.keepdim));
    const TensorPtr x = RandomTensor(f64, k.shape);
    x->set_requires_grad(true);
    ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return ops::Prod(in[0], k.dims, k.keepdim); }, {x});
    ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return ops::LogSumExp(in[0], k.dims, k.keepdim); }, {x});
    for (double p : {1.0, 2.0, kInf, -kInf}) {
      if (std::isinf(p) && k.shape.numel() == 0) continue;
      SCOPED_TRACE(p);
      ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return ops::Norm(in[0], p, k.dims, k.keepdim); }, {x});
    }
  }
  // prod with zeros: none, one and two in a row (the finite differences are exact: prod is linear in
  // each element).
  const TensorPtr z = FromDoubles(f64, {3, 3}, {1.5, -2, 0.5, 0, 3, -1.25, 0, 2, 0});
  z->set_requires_grad(true);
  ExpectGradientsMatch([](const std::vector<TensorPtr>& in) { return ops::Prod(in[0], {1}); }, {z});
  ExpectGradientsMatch([](const std::vector<TensorPtr>& in) { return ops::Prod(in[0], {0}, true); }, {z});
  z->set_grad(nullptr);
  Backward({ops::Sum(ops::Prod(z, {1}))}, {nullptr});
  ExpectTensorNear(z->grad(), f64, {3, 3}, {-1, 0.75, -3, -3.75, 0, 0, 0, 0, 0}, 1e-12, 1e-12);
  // The 2-norm at 0 has gradient 0 (PyTorch's subgradient), the 1-norm sign(0) = 0.
  const TensorPtr zero = FromDoubles(f64, {2, 2}, {0, 0, 3, -4});
  zero->set_requires_grad(true);
  Backward({ops::Sum(ops::Norm(zero, 2, {1}))}, {nullptr});
  ExpectTensorNear(zero->grad(), f64, {2, 2}, {0, 0, 0.6, -0.8}, 1e-12, 1e-12);
  zero->set_grad(nullptr);
  Backward({ops::Sum(ops::Norm(zero, 1, {1}))}, {nullptr});
  ExpectTensorNear(zero->grad(), f64, {2, 2}, {0, 0, 1, -1}, 0, 0);
  // inf-norm ties share the gradient: |-2| and 2 both attain 2.
  const TensorPtr ties = FromDoubles(f64, {3}, {-2, 2, 1});
  ties->set_requires_grad(true);
  Backward({ops::Norm(ties, kInf)}, {nullptr});
  ExpectTensorNear(ties->grad(), f64, {3}, {-0.5, 0.5, 0}, 0, 0);
}

// The gradient ops in float32 and float64 against their formulas.
TEST(Reductions, BackwardOpsMatchFormulas) {
  for (Symbol<DType> dt : kFloating) {
    const TensorPtr x = FromDoubles(dt, {2, 3}, {1.5, -2, 0.5, 0, 3, -1.25});
    const TensorPtr dy = FromDoubles(dt, {2}, {2, -1});
    const Attrs attrs{{"dims", std::vector<int64_t>{1}}, {"keepdim", false}};
    const TensorPtr y = ops::Prod(x, {1});
    ExpectTensorNear(Apply1(Op("prod_backward"), {x, y, dy}, attrs), dt, {2, 3},
                     {2 * -1.0, 2 * 0.75, 2 * -3.0, -1 * -3.75, 0, 0}, RtolFor(dt), 1e-6);
    MarkCovered("prod_backward", dt);
    for (double p : {1.0, 2.0, kInf, -kInf}) {
      Attrs a = attrs;
      a.Set("p", p);
      const TensorPtr n = ops::Norm(x, p, {1});
      const std::vector<double> nv = ToDoubles(n), xv = ToDoubles(x);
      std::vector<double> want;
      for (size_t i = 0; i < xv.size(); ++i) {
        const double yv = nv[i / 3], d = i < 3 ? 2 : -1, s = xv[i] > 0 ? 1 : xv[i] < 0 ? -1 : 0;
        want.push_back(p == 1 ? d * s : p == 2 ? d * xv[i] / yv : std::fabs(xv[i]) == yv ? d * s : 0);
      }
      ExpectTensorNear(Apply1(Op("norm_backward"), {x, n, dy}, a), dt, {2, 3}, want, RtolFor(dt), 1e-6);
    }
    MarkCovered("norm_backward", dt);
  }
}

TEST(Reductions, Errors) {
  const TensorPtr x = RandomTensor(DType::Float32(), {2, 3});
  const TensorPtr ints = RandomTensor(DType::Int32(), {2, 3});
  ExpectError([&] { ops::Norm(x, 3, {}); }, {"norm: ", "p must be 1, 2, inf or -inf, got 3"});
  ExpectError([&] { ops::Norm(x, 0, {}); }, {"norm: ", "p must be 1, 2, inf or -inf, got 0"});
  ExpectError([&] { ops::Norm(ints, 2, {}); }, {"norm: ", "x must be floating point", "int32"});
  ExpectError([&] { ops::Norm(RandomTensor(DType::Float32(), {2, 0}), kInf, {1}); },
              {"norm: ", "cannot reduce over dim 1 of size 0"});
  ExpectError([&] { ops::LogSumExp(ints, {1}); }, {"logsumexp: ", "x must be floating point", "int32"});
  ExpectError([&] { ops::Prod(x, {2}); }, {"prod: ", "2"});
  ExpectError([&] { ops::All(x, {0, -2}); }, {"all: "});
  ExpectError([&] { ops::Any(x, {-3}); }, {"any: ", "-3"});
  ExpectError([&] { ops::Prod(nullptr); }, {"prod", "x"});
  const Attrs attrs{{"dims", std::vector<int64_t>{1}}, {"keepdim", false}, {"p", 2.0}};
  ExpectError([&] { Apply1(Op("norm_backward"), {x, x, x}, attrs); }, {"norm_backward: ", "y is float32 (2, 3), expected float32 (2,)"});
}

// Reductions over and beside an unknown dim in a lazy graph: one graph for every size, equal to eager.
TEST(Reductions, InALazyGraphWithAnUnknownDim) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session_owner);
  const Symbol<DType> f64 = DType::Float64();
  graph::Graph g(session_owner, "reductions", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr x = g.AddInput("x", f64, Shape{Dim::Unknown(), 4});
  const TensorPtr n = ops::Norm(x, 2, {1});
  const TensorPtr l = ops::LogSumExp(x, {0}, true);
  const TensorPtr p = ops::Prod(x, {1}, true);
  const TensorPtr a = ops::Any(ops::GtScalar(x, 1.0), {0});
  EXPECT_EQ(n->shape(), (Shape{Dim::Unknown()}));
  EXPECT_EQ(l->shape(), (Shape{1, 4}));
  EXPECT_EQ(p->shape(), (Shape{Dim::Unknown(), 1}));
  EXPECT_EQ(a->shape(), (Shape{4}));
  for (const TensorPtr& t : {n, l, p, a}) g.AddOutput(t);
  g.EndBuild();
  for (int64_t rows : {3, 5}) {
    const TensorPtr xv = RandomTensor(f64, {rows, 4});
    const std::vector<TensorPtr> out = g.Run({xv});
    EXPECT_EQ(ToDoubles(out[0]), ToDoubles(ops::Norm(xv, 2, {1})));
    EXPECT_EQ(ToDoubles(out[1]), ToDoubles(ops::LogSumExp(xv, {0}, true)));
    EXPECT_EQ(ToDoubles(out[2]), ToDoubles(ops::Prod(xv, {1}, true)));
    EXPECT_EQ(ToDoubles(out[3]), ToDoubles(ops::Any(ops::GtScalar(xv, 1.0), {0})));
  }
}

// ---- scans --------------------------------------------------------------------------------------------

// The running sums / products of x along dim, row-major, in double.
std::vector<double> RefScan(const std::vector<double>& x, const Shape& shape, int64_t dim, bool prod) {
  std::vector<double> y(x.size());
  if (shape.ndim() == 0) return x;
  int64_t outer = 1, n = shape[dim].value(), inner = 1;
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    if (d < dim) outer *= shape[d].value();
    if (d > dim) inner *= shape[d].value();
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      double a = prod ? 1 : 0;
      for (int64_t k = 0; k < n; ++k) {
        const size_t i = static_cast<size_t>((o * n + k) * inner + j);
        a = prod ? a * x[i] : a + x[i];
        y[i] = a;
      }
    }
  }
  return y;
}

// dx[j] = sum over i >= j of dy[i] * d y[i] / d x[j], by brute force.
std::vector<double> RefScanGrad(const std::vector<double>& x, const std::vector<double>& dy, const Shape& shape,
                                int64_t dim, bool prod) {
  std::vector<double> dx(x.size());
  int64_t outer = 1, n = shape[dim].value(), inner = 1;
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    if (d < dim) outer *= shape[d].value();
    if (d > dim) inner *= shape[d].value();
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const auto at = [&](int64_t k) { return static_cast<size_t>((o * n + k) * inner + j); };
      for (int64_t q = 0; q < n; ++q) {
        double g = 0;
        for (int64_t i = q; i < n; ++i) {
          double d = 1;
          for (int64_t k = 0; prod && k <= i; ++k) d *= k == q ? 1 : x[at(k)];
          g += dy[at(i)] * d;
        }
        dx[at(q)] = g;
      }
    }
  }
  return dx;
}

struct ScanCase {
  Shape shape;
  int64_t dim;
};
const std::vector<ScanCase> kScanCases = {{{2, 3, 4}, 0}, {{2, 3, 4}, 1}, {{2, 3, 4}, 2}, {{2, 3, 4}, -1},
                                          {{5}, 0},       {{}, 0},        {{}, -1},       {{3, 0}, 1},
                                          {{0, 3}, 1}};

TEST(Scans, MatchReference) {
  for (Symbol<DType> dt : kProdTypes) {
    for (const ScanCase& k : kScanCases) {
      SCOPED_TRACE(fmt::format("{} {} dim {}", dt->name(), k.shape, k.dim));
      const Symbol<DType> out = dt->is_floating_point() ? dt : DType::Int64();
      const int64_t dim = k.shape.ndim() == 0 ? 0 : (k.dim + k.shape.ndim()) % k.shape.ndim();
      const TensorPtr xs = dt->is_floating_point() ? RandomTensor(dt, k.shape) : SmallInts(dt, k.shape, -5, 6);
      const TensorPtr xp = dt->is_floating_point() ? RandomTensor(dt, k.shape, 0.5, 1.5) : SmallInts(dt, k.shape, -2, 3);
      for (const TensorPtr& in : Layouts(xs)) {
        ExpectTensorNear(ops::Cumsum(in, k.dim), out, k.shape, RefScan(ToDoubles(xs), k.shape, dim, false),
                         RtolFor(dt) * 10, RtolFor(dt) * 10);
      }
      for (const TensorPtr& in : Layouts(xp)) {
        ExpectTensorNear(ops::Cumprod(in, k.dim), out, k.shape, RefScan(ToDoubles(xp), k.shape, dim, true),
                         RtolFor(dt) * 10, 0);
      }
      MarkCovered("cumsum", dt);
      MarkCovered("cumprod", dt);
    }
  }
  // Integer scans wrap as int64.
  const TensorPtr big = FromDoubles(DType::Int64(), {3}, {4611686018427387904.0, 4, 5});
  EXPECT_EQ(ToDoubles(ops::Cumprod(big, 0)), (std::vector<double>{4611686018427387904.0, 0, 0}));
}

TEST(Scans, Gradients) {
  const Symbol<DType> f64 = DType::Float64();
  for (const ScanCase& k : kScanCases) {
    SCOPED_TRACE(fmt::format("{} dim {}", k.shape, k.dim));
    const TensorPtr x = RandomTensor(f64, k.shape);
    x->set_requires_grad(true);
    ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return ops::Cumsum(in[0], k.dim); }, {x});
    ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return ops::Cumprod(in[0], k.dim); }, {x});
  }
  // Zeros: one, two, leading and trailing, along the last dim and along dim 0.
  const TensorPtr z = FromDoubles(f64, {4, 4}, {1.5, 0, 2, -1, 0, 0, 3, 1, 2, 3, 0.5, 0, 0, 1.25, -2, 0.75});
  z->set_requires_grad(true);
  for (int64_t dim : {0, 1}) {
    ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return ops::Cumprod(in[0], dim); }, {z});
  }
}

TEST(Scans, BackwardOpsMatchFormulas) {
  for (Symbol<DType> dt : kFloating) {
    const Shape shape{3, 4};
    const TensorPtr x = FromDoubles(dt, shape, {1.5, 0, 2, -1, 0.5, -2, 3, 1, 2, 3, 0.5, 0});
    const TensorPtr dy = RandomTensor(dt, shape);
    for (int64_t dim : {0, 1}) {
      SCOPED_TRACE(fmt::format("{} dim {}", dt->name(), dim));
      const Attrs attrs{{"dim", dim}};
      ExpectTensorNear(Apply1(Op("cumsum_backward"), {dy}, attrs), dt, shape,
                       RefScanGrad(ToDoubles(x), ToDoubles(dy), shape, dim, false), RtolFor(dt) * 10, 1e-5);
      ExpectTensorNear(Apply1(Op("cumprod_backward"), {x, ops::Cumprod(x, dim), dy}, attrs), dt, shape,
                       RefScanGrad(ToDoubles(x), ToDoubles(dy), shape, dim, true), RtolFor(dt) * 10, 1e-5);
    }
    MarkCovered("cumsum_backward", dt);
    MarkCovered("cumprod_backward", dt);
  }
}

TEST(Scans, ErrorsAndALazyGraph) {
  const TensorPtr x = RandomTensor(DType::Float32(), {2, 3});
  ExpectError([&] { ops::Cumsum(x, 2); }, {"cumsum: ", "dim", "2"});
  ExpectError([&] { ops::Cumprod(x, -3); }, {"cumprod: ", "dim", "-3"});
  ExpectError([&] { ops::Cumsum(RandomTensor(DType::Float32(), {}), 1); }, {"cumsum: ", "dim"});
  ExpectError([&] { Apply1(Op("cumprod_backward"), {x, x, RandomTensor(DType::Float32(), {3})}, {{"dim", int64_t{0}}}); },
              {"cumprod_backward: ", "input 2 is float32 (3,), expected float32 (2, 3)"});

  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session_owner);
  const Symbol<DType> f64 = DType::Float64();
  graph::Graph g(session_owner, "scans", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr lx = g.AddInput("x", f64, Shape{Dim::Unknown(), 3});
  const TensorPtr s = ops::Cumsum(lx, 0), p = ops::Cumprod(lx, -1);
  EXPECT_EQ(s->shape(), (Shape{Dim::Unknown(), 3}));
  g.AddOutput(s);
  g.AddOutput(p);
  g.EndBuild();
  for (int64_t rows : {2, 4}) {
    const TensorPtr xv = RandomTensor(f64, {rows, 3});
    const std::vector<TensorPtr> out = g.Run({xv});
    EXPECT_EQ(ToDoubles(out[0]), ToDoubles(ops::Cumsum(xv, 0)));
    EXPECT_EQ(ToDoubles(out[1]), ToDoubles(ops::Cumprod(xv, -1)));
  }
}

}  // namespace
}  // namespace oneflow::test
