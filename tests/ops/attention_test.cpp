// scaled_dot_product_attention and its backward op against float64 reference loops (explicit
// softmax(q k^T scale + mask) v); gradients by finite differences; dropout against its Philox
// definition; errors; a lazy graph over a named sequence dim, trained as eagerly.
#include <cmath>
#include <limits>
#include <optional>

#include "core/autograd/autograd.h"
#include "core/common/philox.h"
#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/ops/attention.h"
#include "core/train/optimizer.h"
#include "tests/core/test_util.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kFloating = FloatingDTypes();

Shape BatchOf(const Shape& s) { return Shape(std::vector<Dim>(s.begin(), s.end() - 2)); }
Shape With(Shape s, std::initializer_list<Dim> dims) {
  for (Dim d : dims) s.push_back(d);
  return s;
}
std::vector<int64_t> Cat(std::vector<int64_t> a, std::initializer_list<int64_t> b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Inputs {
  TensorPtr q, k, v, mask;
  bool causal = false;
  double scale = 0;
};
Inputs Qkv(TensorPtr q, TensorPtr k, TensorPtr v, TensorPtr mask = nullptr) {
  Inputs in;
  in.q = std::move(q);
  in.k = std::move(k);
  in.v = std::move(v);
  in.mask = std::move(mask);
  return in;
}

// The probabilities (per batch index, L x S) and the output of the reference, in float64.
struct Reference {
  Shape batch;
  int64_t l, s, e, ev;
  std::vector<std::vector<double>> probs;
  std::vector<double> out;
};

Reference RefAttention(const Inputs& in) {
  Reference r;
  const Shape &qs = in.q->shape(), &ks = in.k->shape(), &vs = in.v->shape();
  r.batch = BroadcastShapes(BroadcastShapes(BatchOf(qs), BatchOf(ks)), BatchOf(vs));
  r.l = qs[qs.ndim() - 2].value();
  r.e = qs[qs.ndim() - 1].value();
  r.s = ks[ks.ndim() - 2].value();
  r.ev = vs[vs.ndim() - 1].value();
  const double scale = in.scale != 0 ? in.scale : 1 / std::sqrt(static_cast<double>(r.e));
  const std::vector<double> q = ToDoubles(in.q), k = ToDoubles(in.k), v = ToDoubles(in.v);
  const std::vector<double> m = in.mask ? ToDoubles(in.mask) : std::vector<double>{};
  const bool bool_mask = in.mask && in.mask->dtype() == DType::Bool();
  const Shape qf = With(r.batch, {r.l, r.e}), kf = With(r.batch, {r.s, r.e}), vf = With(r.batch, {r.s, r.ev}),
              mf = With(r.batch, {r.l, r.s});
  for (int64_t b = 0; b < r.batch.numel(); ++b) {
    const std::vector<int64_t> bi = r.batch.ndim() ? Unravel(b, r.batch) : std::vector<int64_t>{};
    std::vector<double> probs(static_cast<size_t>(r.l * r.s));
    for (int64_t i = 0; i < r.l; ++i) {
      std::vector<double> sc(static_cast<size_t>(r.s));
      double mx = -INFINITY;
      for (int64_t j = 0; j < r.s; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < r.e; ++c) {
          dot += q[static_cast<size_t>(BroadcastIndex(Cat(bi, {i, c}), qs, qf))] *
                 k[static_cast<size_t>(BroadcastIndex(Cat(bi, {j, c}), ks, kf))];
        }
        double s = dot * scale;
        if (in.causal && j > i) s = -INFINITY;
        if (in.mask) {
          const double mv = m[static_cast<size_t>(BroadcastIndex(Cat(bi, {i, j}), in.mask->shape(), mf))];
          s = bool_mask ? (mv != 0 ? s : -INFINITY) : s + mv;
        }
        sc[static_cast<size_t>(j)] = s;
        mx = std::max(mx, s);
      }
      if (mx == -INFINITY) continue;  // attends nothing: zeros
      double sum = 0;
      for (double s : sc) sum += std::exp(s - mx);
      for (int64_t j = 0; j < r.s; ++j) probs[static_cast<size_t>(i * r.s + j)] = std::exp(sc[static_cast<size_t>(j)] - mx) / sum;
    }
    for (int64_t i = 0; i < r.l; ++i) {
      for (int64_t c = 0; c < r.ev; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < r.s; ++j) {
          acc += probs[static_cast<size_t>(i * r.s + j)] * v[static_cast<size_t>(BroadcastIndex(Cat(bi, {j, c}), vs, vf))];
        }
        r.out.push_back(acc);
      }
    }
    r.probs.push_back(std::move(probs));
  }
  return r;
}

TensorPtr Sdpa(const Inputs& in, double dropout_p = 0) {
  return ops::ScaledDotProductAttention(in.q, in.k, in.v, in.mask,
                                        {.dropout_p = dropout_p, .is_causal = in.causal, .scale = in.scale});
}

struct Case {
  Shape q, k, v;
  std::optional<Shape> mask{};
  bool bool_mask = false;
  bool causal = false;
  double scale = 0;
};

const std::vector<Case> kCases = {
    {Shape{2, 3, 5, 4}, Shape{2, 3, 7, 4}, Shape{2, 3, 7, 6}},
    {Shape{5, 4}, Shape{7, 4}, Shape{7, 3}},
    {Shape{2, 6, 4}, Shape{2, 6, 4}, Shape{2, 6, 4}, std::nullopt, false, true},
    {Shape{2, 4, 3}, Shape{2, 7, 3}, Shape{2, 7, 2}, std::nullopt, false, true},
    {Shape{2, 3, 5, 4}, Shape{2, 3, 7, 4}, Shape{2, 3, 7, 4}, Shape{5, 7}, true},
    {Shape{2, 3, 5, 4}, Shape{2, 3, 7, 4}, Shape{2, 3, 7, 4}, Shape{2, 1, 1, 7}, true},
    {Shape{2, 3, 5, 4}, Shape{2, 3, 7, 4}, Shape{2, 3, 7, 4}, Shape{2, 3, 5, 7}, false},
    {Shape{2, 3, 5, 4}, Shape{2, 3, 7, 4}, Shape{2, 3, 7, 4}, Shape{7}, false, false, 0.3},
    {Shape{2, 3, 5, 4}, Shape{1, 3, 7, 4}, Shape{3, 7, 5}},  // broadcast batch dims
    {Shape{2, 1, 5, 4}, Shape{2, 3, 7, 4}, Shape{2, 3, 7, 4}},
    {Shape{1, 2, 70, 16}, Shape{1, 2, 65, 16}, Shape{1, 2, 65, 9}},  // several blocks and tiles
    {Shape{1, 2, 67, 8}, Shape{1, 2, 67, 8}, Shape{1, 2, 67, 8}, std::nullopt, false, true},
};

Inputs MakeInputs(const Case& c, Symbol<DType> dtype) {
  Inputs in;
  in.q = RandomTensor(dtype, c.q);
  in.k = RandomTensor(dtype, c.k);
  in.v = RandomTensor(dtype, c.v);
  if (c.mask) {
    // Bool masks keep about 70%; additive masks are in [-3, 1].
    in.mask = c.bool_mask ? ops::GtScalar(RandomTensor(DType::Float64(), *c.mask, 0, 1), 0.3)
                          : RandomTensor(dtype, *c.mask, -3, 1);
  }
  in.causal = c.causal;
  in.scale = c.scale;
  return in;
}

std::string CaseName(const Case& c) {
  return fmt::format("q {} k {} v {} mask {} {} causal={} scale={}", c.q, c.k, c.v,
                     c.mask ? fmt::format("{}", *c.mask) : "none", c.bool_mask ? "bool" : "float", c.causal, c.scale);
}

TEST(Attention, MatchesReference) {
  for (Symbol<DType> dtype : kFloating) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(fmt::format("{} {}", dtype, CaseName(c)));
      Inputs in = MakeInputs(c, dtype);
      const Reference ref = RefAttention(in);
      const Shape out_shape = With(ref.batch, {ref.l, ref.ev});
      ExpectTensorNear(Sdpa(in), dtype, out_shape, ref.out, RtolFor(dtype) * 10, TolFor(dtype, 1e-5, 1e-12));
      in.q = NonContiguous(in.q);
      in.k = NonContiguous(in.k);
      in.v = NonContiguous(in.v);
      if (in.mask) in.mask = NonContiguous(in.mask);
      ExpectTensorNear(Sdpa(in), dtype, out_shape, ref.out, RtolFor(dtype) * 10, TolFor(dtype, 1e-5, 1e-12));
    }
    MarkCovered("scaled_dot_product_attention", dtype);
  }
}

TEST(Attention, AuxiliaryOutputs) {
  // lse is the row log-sum-exp of the scaled scores; rng is (key, first counter) of the draw.
  const TensorPtr q = FromDoubles(DType::Float64(), Shape{1, 2}, {1, 0});
  const TensorPtr k = FromDoubles(DType::Float64(), Shape{2, 2}, {1, 0, 0, 1});
  const TensorPtr v = FromDoubles(DType::Float64(), Shape{2, 1}, {10, 20});
  const std::vector<TensorPtr> out =
      Apply(OpRegistry::Global().Get("scaled_dot_product_attention"), {q, k, v, nullptr}, {{"scale", 1.0}});
  const double e = std::exp(1.0);
  ExpectTensorNear(out[0], DType::Float64(), Shape{1, 1}, {(10 * e + 20) / (e + 1)}, 1e-12);
  ExpectTensorNear(out[1], DType::Float64(), Shape{1}, {std::log(e + 1)}, 1e-12);
  EXPECT_EQ(out[2]->dtype(), DType::Int64());
  EXPECT_EQ(out[2]->shape(), Shape{2});
}

TEST(Attention, EdgeCases) {
  for (Symbol<DType> dtype : kFloating) {
    // A query row whose mask is all false gives zeros (and zero gradients), not NaN.
    Inputs in = Qkv(RandomTensor(dtype, Shape{3, 4}), RandomTensor(dtype, Shape{5, 4}), RandomTensor(dtype, Shape{5, 2}),
                    FromDoubles(DType::Bool(), Shape{3, 5}, {1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
    const Reference ref = RefAttention(in);
    EXPECT_EQ(ref.out[2], 0.0);
    ExpectTensorNear(Sdpa(in), dtype, Shape{3, 2}, ref.out, RtolFor(dtype) * 10, 1e-6);
    // -inf in an additive mask is the same as false.
    in.mask = FromDoubles(dtype, Shape{3, 5}, {0, -INFINITY, 0, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                                               -INFINITY, -INFINITY, 0, 0, 0, 0, 0});
    ExpectTensorNear(Sdpa(in), dtype, Shape{3, 2}, ref.out, RtolFor(dtype) * 10, 1e-6);
    // Empty: no queries, no keys (zeros), an empty batch, Ev = 0, E = 0 (uniform weights).
    auto t = [&](const Shape& s) { return RandomTensor(dtype, s); };
    EXPECT_EQ(Sdpa(Qkv(t(Shape{2, 0, 4}), t(Shape{2, 5, 4}), t(Shape{2, 5, 3})))->shape(), (Shape{2, 0, 3}));
    ExpectTensorNear(Sdpa(Qkv(t(Shape{2, 3, 4}), t(Shape{2, 0, 4}), t(Shape{2, 0, 3}))), dtype, Shape{2, 3, 3},
                     std::vector<double>(18, 0.0));
    EXPECT_EQ(Sdpa(Qkv(t(Shape{0, 3, 4}), t(Shape{0, 5, 4}), t(Shape{0, 5, 3})))->shape(), (Shape{0, 3, 3}));
    EXPECT_EQ(Sdpa(Qkv(t(Shape{3, 4}), t(Shape{5, 4}), t(Shape{5, 0})))->shape(), (Shape{3, 0}));
    const TensorPtr v = FromDoubles(dtype, Shape{2, 1}, {1, 3});
    ExpectTensorNear(Sdpa(Qkv(t(Shape{3, 0}), t(Shape{2, 0}), v)), dtype, Shape{3, 1}, {2, 2, 2}, 1e-6);
  }
}

// ---- gradients ------------------------------------------------------------------------------------

TEST(Attention, Gradients) {
  const std::vector<Case> cases = {
      {Shape{2, 3, 4}, Shape{2, 5, 4}, Shape{2, 5, 3}},
      {Shape{3, 4}, Shape{5, 4}, Shape{5, 2}, Shape{3, 5}, true},
      {Shape{2, 3, 4}, Shape{2, 5, 4}, Shape{2, 5, 3}, Shape{2, 1, 5}, false, false, 0.7},
      {Shape{2, 5, 3}, Shape{2, 5, 3}, Shape{2, 5, 3}, std::nullopt, false, true},
      {Shape{2, 4, 3}, Shape{2, 6, 3}, Shape{2, 6, 2}, std::nullopt, false, true},
      {Shape{2, 2, 3, 4}, Shape{1, 2, 5, 4}, Shape{2, 1, 5, 3}},  // broadcast batch: summed gradients
      {Shape{1, 40, 3}, Shape{1, 70, 3}, Shape{1, 70, 2}, std::nullopt, false, true},  // several tiles
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(CaseName(c));
    Inputs in = MakeInputs(c, DType::Float64());
    for (TensorPtr* t : {&in.q, &in.k, &in.v}) (*t)->set_requires_grad(true);
    ExpectGradientsMatch(
        [&](const auto& x) {
          return ops::ScaledDotProductAttention(x[0], x[1], x[2], in.mask, {.is_causal = in.causal, .scale = in.scale});
        },
        {in.q, in.k, in.v});
  }
  // A row that attends nothing has zero gradients.
  TensorPtr q = RandomTensor(DType::Float64(), Shape{2, 3});
  q->set_requires_grad(true);
  const TensorPtr k = RandomTensor(DType::Float64(), Shape{2, 3});
  const TensorPtr mask = FromDoubles(DType::Bool(), Shape{2, 2}, {1, 1, 0, 0});
  Backward({ops::Sum(ops::ScaledDotProductAttention(q, k, k, mask))}, {nullptr});
  const std::vector<double> dq = ToDoubles(q->grad());
  for (size_t i = 3; i < 6; ++i) EXPECT_EQ(dq[i], 0.0);
}

// |actual - expected| <= atol + rtol |expected| + RtolFor(dtype) terms, elementwise, for `terms` the sum of
// the magnitudes of the terms that `expected` sums.
void ExpectNearTermwise(const TensorPtr& actual, Symbol<DType> dtype, const Shape& shape,
                        const std::vector<double>& expected, const std::vector<double>& terms, double rtol,
                        double atol) {
  ASSERT_EQ(actual->dtype(), dtype);
  ASSERT_EQ(actual->shape(), shape);
  const std::vector<double> got = ToDoubles(actual);
  ASSERT_EQ(got.size(), expected.size());
  int reported = 0;
  for (size_t i = 0; i < got.size() && reported < 5; ++i) {
    const double bound = atol + rtol * std::fabs(expected[i]) + RtolFor(dtype) * terms[i];
    if (!(std::fabs(got[i] - expected[i]) <= bound)) {
      ADD_FAILURE() << "element " << i << " of " << actual->shape().ToString() << ": got " << got[i] << ", want "
                    << expected[i] << " (terms of magnitude " << terms[i] << ")";
      ++reported;
    }
  }
}

// The backward op for each dtype against the reference's explicit gradients (no dropout):
// dv = P^T dout, dP = dout v^T, dS = P (dP - rowsum(dP P)), dq = scale dS k, dk = scale dS^T q.
TEST(Attention, BackwardOpMatchesReference) {
  const OpDef& fwd = OpRegistry::Global().Get("scaled_dot_product_attention");
  const OpDef& bwd = OpRegistry::Global().Get("scaled_dot_product_attention_backward");
  for (Symbol<DType> dtype : kFloating) {
    for (const Case& c : kCases) {
      if (BatchOf(c.q) != BatchOf(c.k) || BatchOf(c.k) != BatchOf(c.v)) continue;  // reference: equal batches
      SCOPED_TRACE(fmt::format("{} {}", dtype, CaseName(c)));
      const Inputs in = MakeInputs(c, dtype);
      const Attrs attrs{{"is_causal", in.causal}, {"scale", in.scale}};
      const std::vector<TensorPtr> out = Apply(fwd, {in.q, in.k, in.v, in.mask}, attrs);
      const TensorPtr dout = RandomTensor(dtype, out[0]->shape());
      const std::vector<TensorPtr> g = Apply(bwd, {dout, in.q, in.k, in.v, in.mask, out[0], out[1], out[2]}, attrs);
      const Reference ref = RefAttention(in);
      const double scale = in.scale != 0 ? in.scale : 1 / std::sqrt(static_cast<double>(ref.e));
      const std::vector<double> q = ToDoubles(in.q), k = ToDoubles(in.k), v = ToDoubles(in.v), go = ToDoubles(dout);
      std::vector<double> dq(q.size()), dk(k.size()), dv(v.size());
      // The sums of the terms' magnitudes: a half-precision kernel's rounding (of out, which gives rowsum(dP
      // P)) is relative to them, not to the result, where the terms cancel.
      std::vector<double> dq_terms(q.size()), dk_terms(k.size()), dv_terms(v.size());
      const int64_t l = ref.l, s = ref.s, e = ref.e, ev = ref.ev;
      for (size_t b = 0; b < ref.probs.size(); ++b) {
        const std::vector<double>& p = ref.probs[b];
        const size_t qo = b * l * e, ko = b * s * e, vo = b * s * ev, oo = b * l * ev;
        for (int64_t i = 0; i < l; ++i) {
          std::vector<double> dp(static_cast<size_t>(s)), dp_terms(static_cast<size_t>(s));
          double row = 0, row_terms = 0;
          for (int64_t j = 0; j < s; ++j) {
            for (int64_t x = 0; x < ev; ++x) {
              dp[j] += go[oo + i * ev + x] * v[vo + j * ev + x];
              dp_terms[j] += std::fabs(go[oo + i * ev + x] * v[vo + j * ev + x]);
            }
            row += dp[j] * p[i * s + j];
            row_terms += dp_terms[j] * p[i * s + j];
          }
          for (int64_t j = 0; j < s; ++j) {
            const double pij = p[i * s + j], ds = pij * (dp[j] - row), ds_terms = pij * (dp_terms[j] + row_terms);
            for (int64_t x = 0; x < ev; ++x) {
              dv[vo + j * ev + x] += pij * go[oo + i * ev + x];
              dv_terms[vo + j * ev + x] += pij * std::fabs(go[oo + i * ev + x]);
            }
            for (int64_t x = 0; x < e; ++x) {
              dq[qo + i * e + x] += scale * ds * k[ko + j * e + x];
              dk[ko + j * e + x] += scale * ds * q[qo + i * e + x];
              dq_terms[qo + i * e + x] += scale * ds_terms * std::fabs(k[ko + j * e + x]);
              dk_terms[ko + j * e + x] += scale * ds_terms * std::fabs(q[qo + i * e + x]);
            }
          }
        }
      }
      const double rtol = RtolFor(dtype) * 20, atol = TolFor(dtype, 1e-5, 1e-12);
      ExpectNearTermwise(g[0], dtype, in.q->shape(), dq, dq_terms, rtol, atol);
      ExpectNearTermwise(g[1], dtype, in.k->shape(), dk, dk_terms, rtol, atol);
      ExpectNearTermwise(g[2], dtype, in.v->shape(), dv, dv_terms, rtol, atol);
    }
    MarkCovered("scaled_dot_product_attention_backward", dtype);
  }
}

// ---- dropout --------------------------------------------------------------------------------------

TEST(Attention, DropoutMatchesPhiloxDefinition) {
  // q = 0 gives uniform weights 1/S; v = identity makes out[b, i, j] the dropped-out weight, which keeps
  // when word f % 4 of Philox counter f / 4 (f = (b L + i) S + j, a fresh seed) is >= p 2^32.
  const int64_t nb = 3, l = 9, s = 11;
  const double p = 0.3;
  for (Symbol<DType> dtype : kFloating) {
    SCOPED_TRACE(fmt::format("{}", dtype));
    const TensorPtr q = ops::ZerosLike(RandomTensor(dtype, Shape{nb, l, 4}));
    const TensorPtr k = RandomTensor(dtype, Shape{nb, s, 4});
    std::vector<double> eye(static_cast<size_t>(s * s), 0.0);
    for (int64_t j = 0; j < s; ++j) eye[static_cast<size_t>(j * s + j)] = 1;
    const TensorPtr v = FromDoubles(dtype, Shape{s, s}, eye);
    Session::Current().generator().ManualSeed(1234);
    const TensorPtr out = ops::ScaledDotProductAttention(q, k, v, nullptr, {.dropout_p = p});
    std::vector<double> expected;
    for (int64_t f = 0; f < nb * l * s; ++f) {
      const uint32_t bits = Philox4x32(1234, 0, static_cast<uint64_t>(f / 4))[static_cast<size_t>(f % 4)];
      expected.push_back(static_cast<double>(bits) >= p * 4294967296.0 ? 1.0 / (s * (1 - p)) : 0.0);
    }
    ExpectTensorNear(out, dtype, Shape{nb, l, s}, expected, RtolFor(dtype), 1e-7);
  }
}

TEST(Attention, DropoutStatisticsAndReproducibility) {
  const int64_t l = 200, s = 300;
  const TensorPtr q = ops::ZerosLike(RandomTensor(DType::Float32(), Shape{2, l, 4}));
  const TensorPtr k = RandomTensor(DType::Float32(), Shape{2, s, 4});
  std::vector<double> eye(static_cast<size_t>(s * s), 0.0);
  for (int64_t j = 0; j < s; ++j) eye[static_cast<size_t>(j * s + j)] = 1;
  const TensorPtr v = FromDoubles(DType::Float32(), Shape{s, s}, eye);
  for (double p : {0.1, 0.5}) {
    Session::Current().generator().ManualSeed(42);
    const std::vector<double> a = ToDoubles(ops::ScaledDotProductAttention(q, k, v, nullptr, {.dropout_p = p}));
    const std::vector<double> b = ToDoubles(ops::ScaledDotProductAttention(q, k, v, nullptr, {.dropout_p = p}));
    Session::Current().generator().ManualSeed(42);
    const std::vector<double> c = ToDoubles(ops::ScaledDotProductAttention(q, k, v, nullptr, {.dropout_p = p}));
    EXPECT_NE(a, b);  // the generator moved on
    EXPECT_EQ(a, c);  // the same seed, the same result
    int64_t zeros = 0;
    for (double x : a) zeros += x == 0;
    // 120000 Bernoulli draws: the standard deviation of the fraction is at most 0.0015; 5 sigma.
    EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(a.size()), p, 0.0075) << "p=" << p;
  }
  // Thread counts do not change the draw.
  std::vector<std::vector<double>> results;
  for (int32_t threads : {1, 2, 3}) {
    Session session(SessionOptions{.seed = 9, .num_threads = threads});
    SessionScope scope(session);
    results.push_back(ToDoubles(ops::ScaledDotProductAttention(q, k, v, nullptr, {.dropout_p = 0.25})));
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

TEST(Attention, DropoutGradientsRegenerateTheMask) {
  // Reseeding before each call makes the function deterministic, so finite differences apply; the
  // backward regenerates the forward's mask from the saved generator range.
  for (bool causal : {false, true}) {
    TensorPtr q = RandomTensor(DType::Float64(), Shape{2, 6, 3});
    TensorPtr k = RandomTensor(DType::Float64(), Shape{2, 6, 3});
    TensorPtr v = RandomTensor(DType::Float64(), Shape{2, 6, 2});
    for (TensorPtr* t : {&q, &k, &v}) (*t)->set_requires_grad(true);
    ExpectGradientsMatch(
        [&](const auto& x) {
          Session::Current().generator().ManualSeed(77);
          return ops::ScaledDotProductAttention(x[0], x[1], x[2], nullptr, {.dropout_p = 0.4, .is_causal = causal});
        },
        {q, k, v});
  }
}

// ---- errors ---------------------------------------------------------------------------------------

TEST(Attention, Errors) {
  const auto t = [](const Shape& s, Symbol<DType> d = DType::Float32()) { return RandomTensor(d, s); };
  const TensorPtr q = t(Shape{2, 3, 4}), k = t(Shape{2, 5, 4}), v = t(Shape{2, 5, 6});
  const auto sdpa = [](const TensorPtr& a, const TensorPtr& b, const TensorPtr& c, const TensorPtr& m = nullptr,
                       const ops::AttentionOptions& o = {}) { return ops::ScaledDotProductAttention(a, b, c, m, o); };
  OF_EXPECT_ERROR(sdpa(t(Shape{2, 3, 4}, DType::Int64()), k, v), InvalidArgument, "scaled_dot_product_attention:",
                  "q must be floating point", "int64");
  OF_EXPECT_ERROR(sdpa(q, t(Shape{2, 5, 4}, DType::Float64()), v), InvalidArgument, "scaled_dot_product_attention:",
                  "one dtype", "float64");
  OF_EXPECT_ERROR(sdpa(t(Shape{4}), k, v), InvalidArgument, "at least 2 dims", "(4,)");
  OF_EXPECT_ERROR(sdpa(q, t(Shape{2, 5, 3}), v), InvalidArgument, "q (2, 3, 4) has embedding size 4", "k (2, 5, 3)");
  OF_EXPECT_ERROR(sdpa(q, k, t(Shape{2, 4, 6})), InvalidArgument, "k (2, 5, 4) has 5 keys", "v (2, 4, 6) has 4");
  OF_EXPECT_ERROR(sdpa(t(Shape{3, 3, 4}), k, v), InvalidArgument, "batch dims", "do not broadcast");
  OF_EXPECT_ERROR(sdpa(q, k, v, t(Shape{3, 5}, DType::Bool()), {.is_causal = true}), InvalidArgument,
                  "attn_mask and is_causal");
  OF_EXPECT_ERROR(sdpa(q, k, v, t(Shape{3, 5}, DType::Int32())), InvalidArgument, "attn_mask must be bool",
                  "int32");
  OF_EXPECT_ERROR(sdpa(q, k, v, t(Shape{3, 5}, DType::Float64())), InvalidArgument, "attn_mask must be bool",
                  "float64");
  OF_EXPECT_ERROR(sdpa(q, k, v, t(Shape{3, 4}, DType::Bool())), InvalidArgument, "attn_mask (3, 4)",
                  "does not broadcast", "(2, 3, 5)");
  OF_EXPECT_ERROR(sdpa(q, k, v, t(Shape{1, 2, 3, 5}, DType::Bool())), InvalidArgument, "attn_mask (1, 2, 3, 5)");
  OF_EXPECT_ERROR(sdpa(q, k, v, nullptr, {.dropout_p = 1.0}), InvalidArgument, "dropout_p must be in [0, 1)", "1");
  OF_EXPECT_ERROR(sdpa(q, k, v, nullptr, {.dropout_p = -0.1}), InvalidArgument, "dropout_p");
  OF_EXPECT_ERROR(sdpa(q, k, v, nullptr, {.scale = INFINITY}), InvalidArgument, "scale must be finite");
  OF_EXPECT_ERROR(sdpa(nullptr, k, v), InvalidArgument, "scaled_dot_product_attention", "q");
}

// ---- a lazy graph over a named sequence dim -------------------------------------------------------

TEST(Attention, LazyGraphWithNamedSequenceDimTrainsAsEagerly) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{.seed = 3});
  Session& session = *session_owner;
  SessionScope scope(session);
  const Dim seq = session.DimSymbol("seq");
  const int64_t d = 8;
  const auto clone = [](const TensorPtr& t) {
    TensorPtr c = FromDoubles(t->dtype(), t->shape(), ToDoubles(t));
    c->set_requires_grad(true);
    return c;
  };
  const TensorPtr w0 = RandomTensor(DType::Float64(), Shape{d, d}, -0.5, 0.5);
  const auto model = [&](const TensorPtr& x, const TensorPtr& w, bool causal) {
    const TensorPtr q = ops::Linear(x, w, nullptr);
    return ops::ScaledDotProductAttention(q, x, x, nullptr, {.is_causal = causal});
  };
  std::vector<TensorPtr> xs;
  for (int64_t len : {5, 9, 5}) xs.push_back(RandomTensor(DType::Float64(), Shape{2, len, d}));

  // Forward only: one graph, two sizes, equal to eager.
  {
    const TensorPtr w = clone(w0);
    graph::Graph g(session_owner, "attention", graph::GraphOptions{});
    g.BeginBuild();
    const TensorPtr x = g.AddInput("x", DType::Float64(), Shape{2, seq, d});
    const TensorPtr y = model(x, w, true);
    EXPECT_EQ(y->shape(), (Shape{2, seq, d}));
    g.AddOutput(y);
    g.EndBuild();
    EXPECT_NE(g.Dump().find("float64 (2, seq, 8)"), std::string::npos) << g.Dump();
    for (const TensorPtr& xv : xs) {
      const std::vector<TensorPtr> out = g.Run({xv});
      EXPECT_EQ(out[0]->shape(), xv->shape());
      const std::vector<double> lazy = ToDoubles(out[0]), eager = ToDoubles(model(xv, w, true));
      ASSERT_EQ(lazy.size(), eager.size());
      for (size_t i = 0; i < lazy.size(); ++i) EXPECT_NEAR(lazy[i], eager[i], 1e-12);
    }
  }

  // Training: the backward op flows through the graph with the symbolic dim.
  const SgdOptions sgd{.lr = 0.5};
  TensorPtr we = clone(w0);
  SGD eager_opt({we}, sgd);
  std::vector<double> eager_losses;
  for (const TensorPtr& xv : xs) {
    const TensorPtr loss = ops::Mean(ops::Mul(model(xv, we, false), xv));
    eager_losses.push_back(ToDoubles(loss)[0]);
    eager_opt.ZeroGrad();
    Backward({loss}, {nullptr});
    eager_opt.Step();
  }
  TensorPtr wl = clone(w0);
  auto lazy_opt = std::make_shared<SGD>(std::vector<TensorPtr>{wl}, sgd);
  graph::Graph g(session_owner, "attention_train", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr x = g.AddInput("x", DType::Float64(), Shape{2, seq, d});
  const TensorPtr loss = ops::Mean(ops::Mul(model(x, wl, false), x));
  Backward({loss}, {nullptr});
  g.AddOptimizer(lazy_opt);
  g.AddOutput(loss);
  g.EndBuild();
  EXPECT_NE(g.Dump().find("scaled_dot_product_attention_backward"), std::string::npos);
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_NEAR(ToDoubles(g.Run({xs[i]})[0])[0], eager_losses[i], 1e-12) << "step " << i;
  }
  const std::vector<double> a = ToDoubles(we), b = ToDoubles(wl);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
}

TEST(Attention, SymbolicInference) {
  const Dim seq = Dim::NewSymbol("seq"), other = Dim::NewSymbol("other");
  const OpDef& op = OpRegistry::Global().Get("scaled_dot_product_attention");
  const Attrs attrs{{"dropout_p", 0.0}, {"is_causal", false}, {"scale", 0.0}};
  const TensorMeta none{};
  const auto meta = [](Shape s, Symbol<DType> d = DType::Float32()) { return TensorMeta{d, std::move(s), Device::CPU()}; };
  std::vector<TensorMeta> in = {meta(Shape{2, 4, seq, 8}), meta(Shape{2, 4, seq, 8}), meta(Shape{2, 4, seq, 6}),
                                meta(Shape{2, 1, seq, seq}, DType::Bool())};
  std::vector<TensorMeta> out = op.infer(in, attrs);
  EXPECT_EQ(out[0].shape, (Shape{2, 4, seq, 6}));
  EXPECT_EQ(out[1].shape, (Shape{2, 4, seq}));
  in[3] = none;
  in[1] = meta(Shape{2, 4, Dim::Unknown(), 8});
  EXPECT_EQ(op.infer(in, attrs)[0].shape, (Shape{2, 4, seq, 6}));
  in[2] = meta(Shape{2, 4, other, 6});
  in[1] = meta(Shape{2, 4, seq, 8});
  ExpectError([&] { op.infer(in, attrs); }, {"seq", "other"});
}

}  // namespace
}  // namespace oneflow::test
