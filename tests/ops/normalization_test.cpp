// layer_norm, group_norm, instance_norm and their gradient ops against float64 loops written here;
// gradients by finite differences; errors; layer_norm in a lazy graph with a symbolic sequence dim
// (forward and a training step); batch_norm on 2-D, 3-D and 5-D inputs.
#include <cmath>

#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/ops/normalization.h"
#include "core/train/optimizer.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kDTypes = FloatingDTypes();
double Tol(Symbol<DType> dt) { return TolFor(dt, 2e-5, 1e-11); }

const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }

// The rows the reference normalises: row r is element block [r * cpg * s, (r + 1) * cpg * s) and its
// element e has the parameter of channel (r % groups) * cpg + e / s.
struct Geo {
  int64_t rows, groups, cpg, s;
  int64_t m() const { return cpg * s; }
  size_t param(int64_t r, int64_t e) const { return static_cast<size_t>((r % groups) * cpg + e / s); }
};
Geo LayerGeo(const Shape& x, size_t k) {
  int64_t rows = 1, m = 1;
  for (int64_t d = 0; d < x.ndim(); ++d) (d < x.ndim() - static_cast<int64_t>(k) ? rows : m) *= x[d].value();
  return {rows, 1, m, 1};
}
Geo GroupGeo(const Shape& x, int64_t groups) {
  int64_t s = 1;
  for (int64_t d = 2; d < x.ndim(); ++d) s *= x[d].value();
  return {x[0].value() * groups, groups, x[1].value() / groups, s};
}

struct Ref {
  std::vector<double> y, mean, rstd;
};
Ref RefForward(const std::vector<double>& x, const Geo& g, const std::vector<double>& w, const std::vector<double>& b,
               double eps) {
  Ref out{std::vector<double>(x.size()), {}, {}};
  for (int64_t r = 0; r < g.rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t e = 0; e < g.m(); ++e) mean += x[static_cast<size_t>(r * g.m() + e)];
    mean /= static_cast<double>(g.m());
    for (int64_t e = 0; e < g.m(); ++e) {
      const double d = x[static_cast<size_t>(r * g.m() + e)] - mean;
      var += d * d;
    }
    var /= static_cast<double>(g.m());
    const double rstd = 1 / std::sqrt(var + eps);
    out.mean.push_back(mean);
    out.rstd.push_back(rstd);
    for (int64_t e = 0; e < g.m(); ++e) {
      const size_t i = static_cast<size_t>(r * g.m() + e), p = g.param(r, e);
      out.y[i] = (x[i] - mean) * rstd * (w.empty() ? 1.0 : w[p]) + (b.empty() ? 0.0 : b[p]);
    }
  }
  return out;
}

struct RefGrads {
  std::vector<double> dx, dw, db;
};
// The gradients of sum(y * dy), written out from the definition (xhat = (x - mean) * rstd), with the
// statistics the backward op is given (`saved`: what the forward saved) or, without, exact ones.
RefGrads RefBackward(const std::vector<double>& x, const std::vector<double>& dy, const Geo& g,
                     const std::vector<double>& w, int64_t params, double eps, const Ref* saved = nullptr) {
  Ref f = RefForward(x, g, {}, {}, eps);
  if (saved != nullptr) {
    f.mean = saved->mean;
    f.rstd = saved->rstd;
    for (int64_t r = 0; r < g.rows; ++r) {
      for (int64_t e = 0; e < g.m(); ++e) {
        const auto i = static_cast<size_t>(r * g.m() + e), ri = static_cast<size_t>(r);
        f.y[i] = (x[i] - f.mean[ri]) * f.rstd[ri];
      }
    }
  }
  RefGrads out{std::vector<double>(x.size()), std::vector<double>(static_cast<size_t>(params)),
               std::vector<double>(static_cast<size_t>(params))};
  const double m = static_cast<double>(g.m());
  for (int64_t r = 0; r < g.rows; ++r) {
    double sg = 0, sgx = 0;
    for (int64_t e = 0; e < g.m(); ++e) {
      const size_t i = static_cast<size_t>(r * g.m() + e), p = g.param(r, e);
      const double gi = dy[i] * (w.empty() ? 1.0 : w[p]);
      sg += gi;
      sgx += gi * f.y[i];
      out.dw[p] += dy[i] * f.y[i];
      out.db[p] += dy[i];
    }
    for (int64_t e = 0; e < g.m(); ++e) {
      const size_t i = static_cast<size_t>(r * g.m() + e), p = g.param(r, e);
      const double gi = dy[i] * (w.empty() ? 1.0 : w[p]);
      out.dx[i] = f.rstd[static_cast<size_t>(r)] * (gi - sg / m - f.y[i] * sgx / m);
    }
  }
  return out;
}

std::vector<double> Values(const TensorPtr& t) { return t ? ToDoubles(t) : std::vector<double>(); }

Shape StatsShape(const Shape& x, int64_t keep) { return Shape(std::vector<Dim>(x.begin(), x.begin() + keep)); }

// One case of one op: the forward op's attributes, the parameter shape and the reference geometry.
struct NormCase {
  std::string op;
  Shape x;
  Attrs attrs;
  Shape param, stats;
  Geo geo;
  bool affine;
};

NormCase LayerCase(Shape x, std::vector<int64_t> ns, bool affine) {
  Shape param;
  for (int64_t v : ns) param.push_back(Dim(v));
  const Geo geo = LayerGeo(x, ns.size());
  Shape stats = StatsShape(x, x.ndim() - static_cast<int64_t>(ns.size()));
  return {"layer_norm", x, Attrs{{"normalized_shape", ns}, {"eps", 1e-4}}, param, stats, geo, affine};
}
NormCase GroupCase(Shape x, int64_t groups, bool affine) {
  return {"group_norm", x, Attrs{{"num_groups", groups}, {"eps", 1e-4}}, Shape{x[1]}, Shape{x[0], Dim(groups)},
          GroupGeo(x, groups), affine};
}
NormCase InstanceCase(Shape x, bool affine) {
  return {"instance_norm", x, Attrs{{"eps", 1e-4}}, Shape{x[1]}, Shape{x[0], x[1]}, GroupGeo(x, x[1].value()), affine};
}

const std::vector<NormCase>& Cases() {
  static const std::vector<NormCase> cases = {
      LayerCase({4, 6}, {6}, true),
      LayerCase({2, 3, 5}, {3, 5}, true),
      LayerCase({3, 7}, {7}, false),
      LayerCase({5}, {5}, true),
      LayerCase({3, 1100}, {1100}, true),  // more than one block of parameter columns
      LayerCase({2, 2, 3, 4}, {4}, true),
      LayerCase({0, 4}, {4}, true),
      GroupCase({2, 6, 3, 2}, 3, true),
      GroupCase({3, 4, 5}, 2, true),
      GroupCase({2, 4}, 2, true),
      GroupCase({2, 4, 3}, 1, false),
      GroupCase({2, 4, 3}, 4, true),
      GroupCase({0, 4, 3}, 2, true),
      InstanceCase({2, 3, 4}, true),
      InstanceCase({2, 3, 2, 3}, false),
      InstanceCase({3, 2, 5}, true),
  };
  return cases;
}

std::string Name(const NormCase& k) { return fmt::format("{} x {} affine {}", k.op, k.x, k.affine); }

TEST(Normalization, ForwardMatchesReference) {
  for (Symbol<DType> dt : kDTypes) {
    for (const NormCase& k : Cases()) {
      for (bool non_contiguous : {false, true}) {
        SCOPED_TRACE(fmt::format("{} {} non-contiguous {}", dt->name(), Name(k), non_contiguous));
        const TensorPtr x = RandomTensor(dt, k.x);
        const TensorPtr w = k.affine ? RandomTensor(dt, k.param, 0.5, 1.5) : TensorPtr();
        const TensorPtr b = k.affine ? RandomTensor(dt, k.param) : TensorPtr();
        const std::vector<TensorPtr> r =
            Apply(Op(k.op), {non_contiguous ? NonContiguous(x) : x, w, b}, k.attrs);
        const Ref ref = RefForward(ToDoubles(x), k.geo, Values(w), Values(b), 1e-4);
        ExpectTensorNear(r[0], dt, k.x, ref.y, Tol(dt), Tol(dt));
        ExpectTensorNear(r[1], dt, k.stats, ref.mean, Tol(dt), Tol(dt));
        ExpectTensorNear(r[2], dt, k.stats, ref.rstd, Tol(dt), Tol(dt));
        MarkCovered(k.op, dt);
      }
    }
  }
}

TEST(Normalization, BackwardOpMatchesFormula) {
  for (Symbol<DType> dt : kDTypes) {
    for (const NormCase& k : Cases()) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), Name(k)));
      const TensorPtr x = RandomTensor(dt, k.x);
      const TensorPtr dy = RandomTensor(dt, k.x);
      const TensorPtr w = k.affine ? RandomTensor(dt, k.param, 0.5, 1.5) : TensorPtr();
      const std::vector<TensorPtr> f = Apply(Op(k.op), {x, w, nullptr}, k.attrs);
      Attrs battrs;
      if (k.op == "layer_norm") battrs = Attrs{{"normalized_shape", k.attrs.Ints("normalized_shape")}};
      if (k.op == "group_norm") battrs = Attrs{{"num_groups", k.attrs.Int("num_groups")}};
      const std::vector<TensorPtr> r = Apply(Op(k.op + "_backward"), {x, dy, w, f[1], f[2]}, battrs);
      // From the statistics as saved (rounded to dt): in half precision exact ones would differ by more
      // than the result's rounding where dx is a difference of nearly equal terms.
      const Ref saved{{}, ToDoubles(f[1]), ToDoubles(f[2])};
      const RefGrads ref = RefBackward(ToDoubles(x), ToDoubles(dy), k.geo, Values(w), k.param.numel(), 1e-4, &saved);
      const double tol = TolFor(dt, 2e-4, 1e-10);
      ExpectTensorNear(r[0], dt, k.x, ref.dx, tol, tol);
      ExpectTensorNear(r[1], dt, k.param, ref.dw, tol, tol);
      ExpectTensorNear(r[2], dt, k.param, ref.db, tol, tol);
      MarkCovered(k.op + "_backward", dt);
    }
  }
}

TEST(Normalization, Gradients) {
  const Symbol<DType> f64 = DType::Float64();
  for (const NormCase& k : Cases()) {
    if (k.x.numel() == 0 || k.x.numel() > 200) continue;
    SCOPED_TRACE(Name(k));
    const TensorPtr x = RandomTensor(f64, k.x);
    const TensorPtr w = RandomTensor(f64, k.param, 0.5, 1.5);
    const TensorPtr b = RandomTensor(f64, k.param);
    for (const TensorPtr& t : {x, w, b}) t->set_requires_grad(true);
    const auto run = [&](const std::vector<TensorPtr>& in) { return Apply(Op(k.op), in, k.attrs)[0]; };
    ExpectGradientsMatch(run, {x, w, b}, 1e-6, 1e-6);
    ExpectGradientsMatch(run, {x, nullptr, nullptr}, 1e-6, 1e-6);
    ExpectGradientsMatch(run, {x, nullptr, b}, 1e-6, 1e-6);
  }
  // Through the C++ functions, with only the parameters requiring grad.
  const TensorPtr x = RandomTensor(f64, {3, 4});
  const TensorPtr w = RandomTensor(f64, {4}, 0.5, 1.5), b = RandomTensor(f64, {4});
  w->set_requires_grad(true);
  b->set_requires_grad(true);
  ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return ops::LayerNorm(x, {4}, in[0], in[1], 1e-5); },
                       {w, b});
  const TensorPtr xg = RandomTensor(f64, {2, 4, 3});
  xg->set_requires_grad(true);
  ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return ops::GroupNorm(in[0], 2, nullptr, nullptr); },
                       {xg});
  ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return ops::InstanceNorm(in[0], nullptr, nullptr); },
                       {xg});
}

TEST(Normalization, EdgeCases) {
  const Symbol<DType> f32 = DType::Float32();
  // A constant row has variance 0: y is the bias (eps keeps rstd finite).
  const TensorPtr c = FromDoubles(f32, {2, 3}, {5, 5, 5, 1, 2, 3});
  const TensorPtr bias = FromDoubles(f32, {3}, {1, 2, 3});
  const double r = 1 / std::sqrt(2.0 / 3 + 1e-5);
  ExpectTensorNear(ops::LayerNorm(c, {3}, nullptr, bias), f32, {2, 3}, {1, 2, 3, 1 - r, 2, 3 + r}, 1e-5, 1e-5);
  // NaN in a row makes that row NaN only.
  const TensorPtr n = FromDoubles(f32, {2, 2}, {NAN, 1, 1, 3});
  ExpectTensorNear(ops::LayerNorm(n, {2}, nullptr, nullptr, 0.0), f32, {2, 2}, {NAN, NAN, -1, 1}, 1e-6, 1e-6);
  // Empty rows (normalized_shape with a 0) and no rows.
  EXPECT_EQ(ops::LayerNorm(RandomTensor(f32, {3, 0}), {0}, nullptr, nullptr)->shape(), (Shape{3, 0}));
  EXPECT_EQ(ops::GroupNorm(RandomTensor(f32, {2, 4, 0}), 2, nullptr, nullptr)->shape(), (Shape{2, 4, 0}));
  // No channels: instance_norm has no rows (a fuzzer found a division by the channel count here).
  EXPECT_EQ(ops::InstanceNorm(RandomTensor(f32, {2, 0, 3}), nullptr, nullptr)->shape(), (Shape{2, 0, 3}));
  // Their backward: zero parameter gradients.
  const TensorPtr e = RandomTensor(DType::Float64(), {0, 3});
  const TensorPtr w = RandomTensor(DType::Float64(), {3});
  w->set_requires_grad(true);
  Backward({ops::Sum(ops::LayerNorm(e, {3}, w, nullptr))}, {nullptr});
  ASSERT_TRUE(w->grad());
  ExpectTensorNear(w->grad(), DType::Float64(), {3}, {0, 0, 0});
}

TEST(Normalization, Errors) {
  const Symbol<DType> f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {2, 3});
  const TensorPtr w3 = RandomTensor(f32, {3});
  ExpectError([&] { ops::LayerNorm(RandomTensor(DType::Int64(), {2, 3}), {3}, nullptr, nullptr); },
              {"layer_norm: ", "x must be floating point", "int64"});
  ExpectError([&] { ops::LayerNorm(x, {4}, nullptr, nullptr); },
              {"layer_norm: ", "normalized_shape (4,) must be the last dims of x", "(2, 3)"});
  ExpectError([&] { ops::LayerNorm(x, {1, 2, 3}, nullptr, nullptr); }, {"layer_norm: ", "normalized_shape (1, 2, 3)"});
  ExpectError([&] { ops::LayerNorm(x, {}, nullptr, nullptr); }, {"layer_norm: ", "normalized_shape must have at least one dim"});
  ExpectError([&] { ops::LayerNorm(x, {-3}, nullptr, nullptr); }, {"layer_norm: ", "normalized_shape[0] must be >= 0", "-3"});
  ExpectError([&] { ops::LayerNorm(x, {3}, RandomTensor(f32, {2}), nullptr); },
              {"layer_norm: ", "weight must have shape (3,)", "got (2,)"});
  ExpectError([&] { ops::LayerNorm(x, {3}, nullptr, RandomTensor(DType::Float64(), {3})); },
              {"layer_norm: ", "bias is float64 but x is float32"});
  ExpectError([&] { ops::LayerNorm(x, {3}, nullptr, nullptr, -1.0); }, {"layer_norm: ", "eps must be finite and >= 0", "-1"});
  ExpectError([&] { ops::LayerNorm(x, {3}, nullptr, nullptr, NAN); }, {"layer_norm: ", "eps must be finite"});
  ExpectError([&] { ops::LayerNorm(nullptr, {3}, nullptr, nullptr); }, {"layer_norm", "x"});

  const TensorPtr g = RandomTensor(f32, {2, 6, 2});
  ExpectError([&] { ops::GroupNorm(w3, 1, nullptr, nullptr); }, {"group_norm: ", "x must be (N, C, ...)", "(3,)"});
  ExpectError([&] { ops::GroupNorm(g, 0, nullptr, nullptr); }, {"group_norm: ", "num_groups must be >= 1", "0"});
  ExpectError([&] { ops::GroupNorm(g, 4, nullptr, nullptr); },
              {"group_norm: ", "6 channels", "not divisible into num_groups 4"});
  ExpectError([&] { ops::GroupNorm(g, 3, w3, nullptr); }, {"group_norm: ", "weight must have shape (6,)", "got (3,)"});
  ExpectError([&] { ops::GroupNorm(RandomTensor(DType::Int32(), {2, 6}), 3, nullptr, nullptr); },
              {"group_norm: ", "x must be floating point", "int32"});

  ExpectError([&] { ops::InstanceNorm(x, nullptr, nullptr); }, {"instance_norm: ", "at least one spatial dim", "(2, 3)"});
  ExpectError([&] { ops::InstanceNorm(RandomTensor(f32, {2, 3, 1}), nullptr, nullptr); },
              {"instance_norm: ", "1 spatial element", "expected more"});
  ExpectError([&] { ops::InstanceNorm(RandomTensor(f32, {2, 3, 4}), RandomTensor(f32, {4}), nullptr); },
              {"instance_norm: ", "weight must have shape (3,)"});

  const TensorPtr s2 = RandomTensor(f32, {2});
  ExpectError([&] { Apply(Op("layer_norm_backward"), {x, w3, nullptr, s2, s2}, {{"normalized_shape", std::vector<int64_t>{3}}}); },
              {"layer_norm_backward: ", "dy float32 (3,) must match x float32 (2, 3)"});
  ExpectError([&] { Apply(Op("layer_norm_backward"), {x, x, nullptr, w3, s2}, {{"normalized_shape", std::vector<int64_t>{3}}}); },
              {"layer_norm_backward: ", "mean must have shape (2,)", "got (3,)"});
}

// The transformer case: x (batch, seq, d) with a named seq dim; one graph serves every length and
// equals eager, forward and a training step (autodiff and SGD in the graph).
TEST(Normalization, LayerNormInALazyGraphWithASymbolicSeqDim) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const Symbol<DType> f64 = DType::Float64();
  const Dim seq = session.DimSymbol("seq");
  const TensorPtr w0 = RandomTensor(f64, {8}, 0.5, 1.5), b0 = RandomTensor(f64, {8});
  const auto clone = [](const TensorPtr& t) {
    TensorPtr c = FromDoubles(t->dtype(), t->shape(), ToDoubles(t));
    c->set_requires_grad(true);
    return c;
  };
  {
    graph::Graph g(session_owner, "ln", graph::GraphOptions{});
    g.BeginBuild();
    const TensorPtr x = g.AddInput("x", f64, Shape{2, seq, 8});
    const TensorPtr y = ops::LayerNorm(x, {8}, w0, b0);
    EXPECT_EQ(y->shape(), (Shape{2, seq, 8}));
    g.AddOutput(y);
    g.EndBuild();
    EXPECT_NE(g.Dump().find("float64 (2, seq, 8)"), std::string::npos) << g.Dump();
    for (int64_t len : {3, 5, 3}) {
      const TensorPtr xv = RandomTensor(f64, {2, len, 8});
      const std::vector<TensorPtr> out = g.Run({xv});
      EXPECT_EQ(out[0]->shape(), (Shape{2, len, 8}));
      EXPECT_EQ(ToDoubles(out[0]), ToDoubles(ops::LayerNorm(xv, {8}, w0, b0)));
    }
  }
  // Training: loss = mean(layer_norm(x) * t), SGD on weight and bias.
  std::vector<TensorPtr> xs, ts;
  for (int64_t len : {3, 5, 4}) {
    xs.push_back(RandomTensor(f64, {2, len, 8}));
    ts.push_back(RandomTensor(f64, {2, len, 8}));
  }
  const SgdOptions sgd{.lr = 0.1};
  const TensorPtr we = clone(w0), be = clone(b0);
  SGD eager_opt({we, be}, sgd);
  std::vector<double> eager_losses;
  for (size_t i = 0; i < xs.size(); ++i) {
    const TensorPtr loss = ops::Mean(ops::Mul(ops::LayerNorm(xs[i], {8}, we, be), ts[i]));
    eager_losses.push_back(ToDoubles(loss)[0]);
    eager_opt.ZeroGrad();
    Backward({loss}, {nullptr});
    eager_opt.Step();
  }
  const TensorPtr wl = clone(w0), bl = clone(b0);
  auto lazy_opt = std::make_shared<SGD>(std::vector<TensorPtr>{wl, bl}, sgd);
  graph::Graph g(session_owner, "ln_train", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr x = g.AddInput("x", f64, Shape{2, seq, 8});
  const TensorPtr t = g.AddInput("t", f64, Shape{2, seq, 8});
  const TensorPtr loss = ops::Mean(ops::Mul(ops::LayerNorm(x, {8}, wl, bl), t));
  Backward({loss}, {nullptr});
  g.AddOptimizer(lazy_opt);
  g.AddOutput(loss);
  g.EndBuild();
  EXPECT_NE(g.Dump().find("layer_norm_backward"), std::string::npos) << g.Dump();
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_NEAR(ToDoubles(g.Run({xs[i], ts[i]})[0])[0], eager_losses[i], 1e-12) << "step " << i;
  }
  const std::vector<double> we_v = ToDoubles(we), wl_v = ToDoubles(wl), be_v = ToDoubles(be), bl_v = ToDoubles(bl);
  for (size_t k = 0; k < we_v.size(); ++k) {
    EXPECT_NEAR(wl_v[k], we_v[k], 1e-12);
    EXPECT_NEAR(bl_v[k], be_v[k], 1e-12);
  }
}

// batch_norm takes (N, C, ...) of any rank (oneDNN sees it as (N, C, S, 1)): (N, C), (N, C, L) and
// (N, C, D, H, W) against the reference, training and inference, and their gradients.
TEST(Normalization, BatchNormOnEveryRank) {
  for (Symbol<DType> dt : kDTypes) {
    for (const Shape& s : {Shape{6, 3}, Shape{4, 3, 5}, Shape{2, 3, 2, 3, 4}}) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), s));
      const TensorPtr x = RandomTensor(dt, s);
      const TensorPtr w = RandomTensor(dt, {3}, 0.5, 1.5), b = RandomTensor(dt, {3});
      const TensorPtr rm = RandomTensor(dt, {3}), rv = RandomTensor(dt, {3}, 0.5, 2.0);
      // Training: the batch statistics per channel (group_norm's reference geometry with the batch
      // moved into the row: x as (C, N * S) is what the channel sees).
      const std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w), bv = ToDoubles(b);
      const int64_t n = s[0].value(), c = 3, sp = s.numel() / (n * c);
      std::vector<double> by_channel;
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t k = 0; k < sp; ++k) by_channel.push_back(xv[static_cast<size_t>((i * c + ch) * sp + k)]);
        }
      }
      const Ref ref = RefForward(by_channel, Geo{c, c, 1, n * sp}, wv, bv, 1e-5);
      std::vector<double> want(xv.size());
      for (int64_t ch = 0, j = 0; ch < c; ++ch) {
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t k = 0; k < sp; ++k) want[static_cast<size_t>((i * c + ch) * sp + k)] = ref.y[static_cast<size_t>(j++)];
        }
      }
      const double tol = TolFor(dt, 1e-4, 1e-4);
      ExpectTensorNear(ops::BatchNorm(x, w, b, nullptr, nullptr, {}), dt, s, want, tol, tol);
      // Inference with the running statistics.
      const std::vector<double> rmv = ToDoubles(rm), rvv = ToDoubles(rv);
      for (size_t i = 0; i < want.size(); ++i) {
        const size_t ch = static_cast<size_t>(static_cast<int64_t>(i) / sp % c);
        want[i] = (xv[i] - rmv[ch]) / std::sqrt(rvv[ch] + 1e-5) * wv[ch] + bv[ch];
      }
      ExpectTensorNear(ops::BatchNorm(x, w, b, rm, rv, {.training = false}), dt, s, want, tol, tol);
    }
  }
  const TensorPtr x = RandomTensor(DType::Float64(), {2, 3, 2, 2, 2});
  const TensorPtr w = RandomTensor(DType::Float64(), {3}, 0.5, 1.5), b = RandomTensor(DType::Float64(), {3});
  for (const TensorPtr& t : {x, w, b}) t->set_requires_grad(true);
  ExpectGradientsMatch([](const std::vector<TensorPtr>& in) { return ops::BatchNorm(in[0], in[1], in[2], nullptr, nullptr, {}); },
                       {x, w, b});
}

}  // namespace
}  // namespace oneflow::test
