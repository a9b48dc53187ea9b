// mse_loss, l1_loss, smooth_l1_loss, binary_cross_entropy_with_logits, kl_div and their backward ops
// against float64 reference loops; gradients of input and target by finite differences; errors.
#include <cmath>
#include <functional>
#include <limits>

#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/ops/losses.h"
#include "tests/core/test_util.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kFloating = FloatingDTypes();
const std::vector<ops::Reduction> kReductions = {ops::Reduction::kNone, ops::Reduction::kMean, ops::Reduction::kSum};

double Softplus(double x) { return std::log1p(std::exp(-std::abs(x))) + std::max(x, 0.0); }

struct LossCase {
  std::string name;
  // The per-element loss and its derivatives in x and t (w, pw: broadcast weights, 1 when absent).
  std::function<double(double x, double t, double w, double pw)> loss;
  std::function<std::pair<double, double>(double x, double t, double w, double pw)> grad;
  std::function<TensorPtr(const TensorPtr&, const TensorPtr&, ops::Reduction)> call;
  Attrs attrs{};  // besides reduction, for the backward op
  double t_lo = -2, t_hi = 2;
};

std::vector<LossCase> Cases() {
  std::vector<LossCase> cases;
  cases.push_back({"mse_loss", [](double x, double t, double, double) { return (x - t) * (x - t); },
                   [](double x, double t, double, double) { return std::pair{2 * (x - t), -2 * (x - t)}; },
                   [](const TensorPtr& x, const TensorPtr& t, ops::Reduction r) { return ops::MseLoss(x, t, r); }});
  const auto sign = [](double d) { return d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0; };
  cases.push_back({"l1_loss", [](double x, double t, double, double) { return std::abs(x - t); },
                   [=](double x, double t, double, double) { return std::pair{sign(x - t), -sign(x - t)}; },
                   [](const TensorPtr& x, const TensorPtr& t, ops::Reduction r) { return ops::L1Loss(x, t, r); }});
  for (double beta : {1.0, 0.5, 0.0}) {
    cases.push_back(
        {"smooth_l1_loss",
         [=](double x, double t, double, double) {
           const double d = std::abs(x - t);
           return d < beta ? 0.5 * d * d / beta : d - 0.5 * beta;
         },
         [=](double x, double t, double, double) {
           const double d = x - t, g = std::abs(d) < beta ? d / beta : sign(d);
           return std::pair{g, -g};
         },
         [=](const TensorPtr& x, const TensorPtr& t, ops::Reduction r) { return ops::SmoothL1Loss(x, t, r, beta); },
         Attrs{{"beta", beta}}});
  }
  cases.push_back(
      {"binary_cross_entropy_with_logits",
       [](double x, double t, double w, double pw) {
         // The definition: -w [pw t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))].
         return w * (pw * t * Softplus(-x) + (1 - t) * Softplus(x));
       },
       [](double x, double t, double w, double pw) {
         const double s = 1 / (1 + std::exp(-x));
         return std::pair{w * (-pw * t * (1 - s) + (1 - t) * s), w * (pw * Softplus(-x) - Softplus(x))};
       },
       [](const TensorPtr& x, const TensorPtr& t, ops::Reduction r) {
         return ops::BinaryCrossEntropyWithLogits(x, t, nullptr, nullptr, r);
       },
       Attrs{}, 0, 1});
  for (bool log_target : {false, true}) {
    cases.push_back(
        {"kl_div",
         [=](double x, double t, double, double) {
           if (log_target) return std::exp(t) * (t - x);
           return t == 0 ? 0.0 : t * (std::log(t) - x);
         },
         [=](double x, double t, double, double) {
           if (log_target) return std::pair{-std::exp(t), std::exp(t) * (t - x + 1)};
           return std::pair{-t, t == 0 ? 0.0 : std::log(t) + 1 - x};
         },
         [=](const TensorPtr& x, const TensorPtr& t, ops::Reduction r) { return ops::KlDiv(x, t, r, log_target); },
         Attrs{{"log_target", log_target}}, log_target ? -3.0 : 0.0, log_target ? 0.0 : 1.0});
  }
  return cases;
}

std::vector<double> Reduce(const std::vector<double>& v, ops::Reduction r) {
  if (r == ops::Reduction::kNone) return v;
  double s = 0;
  for (double x : v) s += x;
  return {r == ops::Reduction::kSum ? s : s / static_cast<double>(v.size())};
}

const std::vector<Shape> kShapes = {Shape{}, Shape{7}, Shape{3, 5}, Shape{2, 3, 4}, Shape{100, 201}};

TEST(Losses, ElementwiseMatchReference) {
  const OpRegistry& registry = OpRegistry::Global();
  for (const LossCase& c : Cases()) {
    for (Symbol<DType> dtype : kFloating) {
      for (const Shape& shape : kShapes) {
        for (ops::Reduction r : kReductions) {
          SCOPED_TRACE(fmt::format("{} {} {} {} {}", c.name, c.attrs.ToString(), dtype, shape, ops::ReductionName(r)));
          const TensorPtr x = RandomTensor(dtype, shape, -3, 3);
          TensorPtr t = RandomTensor(dtype, shape, c.t_lo, c.t_hi);
          const std::vector<double> xv = ToDoubles(x), tv = ToDoubles(t);
          std::vector<double> per, dx, dt;
          const TensorPtr dy = RandomTensor(dtype, r == ops::Reduction::kNone ? shape : Shape{});
          const std::vector<double> dyv = ToDoubles(dy);
          for (size_t i = 0; i < xv.size(); ++i) {
            per.push_back(c.loss(xv[i], tv[i], 1, 1));
            const auto [gx, gt] = c.grad(xv[i], tv[i], 1, 1);
            const double g = r == ops::Reduction::kNone ? dyv[i]
                             : r == ops::Reduction::kMean ? dyv[0] / static_cast<double>(xv.size())
                                                          : dyv[0];
            dx.push_back(g * gx);
            dt.push_back(g * gt);
          }
          const Shape out = r == ops::Reduction::kNone ? shape : Shape{};
          const double rtol = RtolFor(dtype) * 10, atol = TolFor(dtype, 1e-5, 1e-12);
          const std::vector<double> want = RoundedTo(dtype, Reduce(per, r));  // a float16 sum may overflow
          ExpectTensorNear(c.call(x, t, r), dtype, out, want, rtol, atol);
          ExpectTensorNear(c.call(NonContiguous(x), NonContiguous(t), r), dtype, out, want, rtol, atol);
          Attrs attrs = c.attrs;
          attrs.Set("reduction", std::string(ops::ReductionName(r)));
          std::vector<TensorPtr> in = {dy, x, t};
          if (c.name == "binary_cross_entropy_with_logits") in.insert(in.end(), {nullptr, nullptr});
          const std::vector<TensorPtr> g = Apply(registry.Get(c.name + "_backward"), in, attrs);
          ExpectTensorNear(g[0], dtype, shape, dx, rtol, atol);
          ExpectTensorNear(g[1], dtype, shape, dt, rtol, atol);
        }
      }
      MarkCovered(c.name, dtype);
      MarkCovered(c.name + "_backward", dtype);
    }
  }
}

TEST(Losses, ElementwiseGradients) {
  for (const LossCase& c : Cases()) {
    for (ops::Reduction r : kReductions) {
      SCOPED_TRACE(fmt::format("{} {} {}", c.name, c.attrs.ToString(), ops::ReductionName(r)));
      TensorPtr x = RandomTensor(DType::Float64(), Shape{3, 4}, -3, 3);
      // Targets away from the kinks of l1 / smooth_l1 (|x - t| = 0 or beta) and from 0 for kl_div.
      TensorPtr t = c.name == "kl_div" ? RandomTensor(DType::Float64(), Shape{3, 4}, c.t_lo + 0.1, c.t_hi)
                                       : ops::AddScalar(x, 0.25);
      if (c.name == "binary_cross_entropy_with_logits") t = RandomTensor(DType::Float64(), Shape{3, 4}, 0, 1);
      x->set_requires_grad(true);
      t = FromDoubles(DType::Float64(), t->shape(), ToDoubles(t));
      t->set_requires_grad(true);
      ExpectGradientsMatch([&](const auto& in) { return c.call(in[0], in[1], r); }, {x, t});
    }
  }
}

TEST(Losses, BceWeightsBroadcastAndIsStable) {
  for (Symbol<DType> dtype : kFloating) {
    SCOPED_TRACE(fmt::format("{}", dtype));
    const Shape shape{4, 3};
    const TensorPtr x = RandomTensor(dtype, shape, -4, 4);
    const TensorPtr t = RandomTensor(dtype, shape, 0, 1);
    const TensorPtr w = RandomTensor(dtype, Shape{4, 1}, 0.5, 2);
    const TensorPtr pw = RandomTensor(dtype, Shape{3}, 0.5, 3);
    const std::vector<double> xv = ToDoubles(x), tv = ToDoubles(t), wv = ToDoubles(w), pwv = ToDoubles(pw);
    std::vector<double> per;
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        const size_t k = static_cast<size_t>(i * 3 + j);
        const double pwj = pwv[static_cast<size_t>(j)], wi = wv[static_cast<size_t>(i)];
        per.push_back(wi * (pwj * tv[k] * Softplus(-xv[k]) + (1 - tv[k]) * Softplus(xv[k])));
      }
    }
    for (ops::Reduction r : kReductions) {
      ExpectTensorNear(ops::BinaryCrossEntropyWithLogits(x, t, w, pw, r), dtype,
                       r == ops::Reduction::kNone ? shape : Shape{}, Reduce(per, r), RtolFor(dtype) * 10, 1e-6);
    }
    // Large logits: no overflow (log(1 + e^100) = 100).
    const TensorPtr big = FromDoubles(dtype, Shape{2}, {100, -100});
    ExpectTensorNear(ops::BinaryCrossEntropyWithLogits(big, FromDoubles(dtype, Shape{2}, {0, 1}), nullptr, nullptr,
                                                       ops::Reduction::kNone),
                     dtype, Shape{2}, {100, 100}, 1e-6, 0);
  }
  // Gradients through broadcast weights (input and target only).
  TensorPtr x = RandomTensor(DType::Float64(), Shape{4, 3}, -3, 3);
  TensorPtr t = RandomTensor(DType::Float64(), Shape{4, 3}, 0, 1);
  x->set_requires_grad(true);
  t->set_requires_grad(true);
  const TensorPtr w = RandomTensor(DType::Float64(), Shape{4, 1}, 0.5, 2);
  const TensorPtr pw = RandomTensor(DType::Float64(), Shape{3}, 0.5, 3);
  ExpectGradientsMatch([&](const auto& in) { return ops::BinaryCrossEntropyWithLogits(in[0], in[1], w, pw); }, {x, t});
}

TEST(Losses, ElementwiseEdgeCases) {
  const TensorPtr empty = RandomTensor(DType::Float32(), Shape{0, 3});
  EXPECT_TRUE(std::isnan(ToDoubles(ops::MseLoss(empty, empty))[0]));  // the mean of nothing, as PyTorch
  ExpectTensorNear(ops::L1Loss(empty, empty, ops::Reduction::kSum), DType::Float32(), Shape{}, {0});
  EXPECT_EQ(ops::KlDiv(empty, empty, ops::Reduction::kNone)->shape(), (Shape{0, 3}));
  // kl_div: target 0 contributes 0 (not 0 * log 0 = NaN).
  ExpectTensorNear(ops::KlDiv(FromDoubles(DType::Float64(), Shape{2}, {-1, -2}),
                              FromDoubles(DType::Float64(), Shape{2}, {0, 0.5}), ops::Reduction::kNone),
                   DType::Float64(), Shape{2}, {0, 0.5 * (std::log(0.5) + 2)}, 1e-12);
  // NaN propagates.
  const TensorPtr nan = FromDoubles(DType::Float32(), Shape{1}, {std::nan("")});
  EXPECT_TRUE(std::isnan(ToDoubles(ops::MseLoss(nan, nan))[0]));
}

TEST(Losses, ElementwiseErrors) {
  const TensorPtr x = RandomTensor(DType::Float32(), Shape{3, 4});
  OF_EXPECT_ERROR(ops::MseLoss(x, RandomTensor(DType::Float32(), Shape{4})), InvalidArgument, "mse_loss:",
                  "target (4,) must have input's shape (3, 4)");
  OF_EXPECT_ERROR(ops::L1Loss(x, RandomTensor(DType::Float64(), Shape{3, 4})), InvalidArgument, "l1_loss:", "target",
                  "float64");
  OF_EXPECT_ERROR(ops::KlDiv(RandomTensor(DType::Int64(), Shape{2}), RandomTensor(DType::Int64(), Shape{2})),
                  InvalidArgument, "kl_div:", "input must be floating point", "int64");
  OF_EXPECT_ERROR(ops::SmoothL1Loss(x, x, ops::Reduction::kMean, -1), InvalidArgument, "smooth_l1_loss:", "beta",
                  "-1");
  OF_EXPECT_ERROR(ops::BinaryCrossEntropyWithLogits(x, x, RandomTensor(DType::Float32(), Shape{3}), nullptr),
                  InvalidArgument, "binary_cross_entropy_with_logits:", "weight (3,) does not broadcast", "(3, 4)");
  OF_EXPECT_ERROR(ops::BinaryCrossEntropyWithLogits(x, x, nullptr, RandomTensor(DType::Float64(), Shape{4})),
                  InvalidArgument, "pos_weight must have input's dtype");
  OF_EXPECT_ERROR(ops::MseLoss(x, nullptr), InvalidArgument, "mse_loss", "target");
}

TEST(Losses, ElementwiseSymbolicInference) {
  const Dim n = Dim::NewSymbol("N");
  const OpDef& op = OpRegistry::Global().Get("binary_cross_entropy_with_logits");
  const std::vector<TensorMeta> in = {{DType::Float32(), Shape{n, 4}, Device::CPU()},
                                      {DType::Float32(), Shape{Dim::Unknown(), 4}, Device::CPU()},
                                      {},
                                      {DType::Float32(), Shape{4}, Device::CPU()}};
  EXPECT_EQ(op.infer(in, {{"reduction", std::string("none")}})[0].shape, (Shape{n, 4}));
  EXPECT_EQ(op.infer(in, {{"reduction", std::string("sum")}})[0].shape, Shape{});
}

// ---- weighted and N-d cross_entropy / nll_loss ------------------------------------------------------

// Reference over logits (N, C, d...) and targets (N, d...): per sample -> loss rows, with class weights.
struct ClassCase {
  Shape logits;
  bool weighted;
};

std::vector<double> RefClassLoss(const std::vector<double>& logp, const Shape& shape, const std::vector<int64_t>& t,
                                 const std::vector<double>& w, ops::Reduction r, int64_t ignore, double eps) {
  const int64_t n = shape[0].value(), c = shape[1].value();
  int64_t inner = 1;
  for (int64_t d = 2; d < shape.ndim(); ++d) inner *= shape[d].value();
  std::vector<double> rows;
  double total = 0, weights = 0;
  for (int64_t s = 0; s < n * inner; ++s) {
    const int64_t b = s / inner, k = s % inner;
    const auto lp = [&](int64_t cls) { return logp[static_cast<size_t>((b * c + cls) * inner + k)]; };
    const auto wc = [&](int64_t cls) { return w.empty() ? 1.0 : w[static_cast<size_t>(cls)]; };
    double loss = 0;
    const int64_t ts = t[static_cast<size_t>(s)];
    if (ts != ignore) {
      double smooth = 0;
      for (int64_t cls = 0; cls < c; ++cls) smooth -= wc(cls) * lp(cls) / static_cast<double>(c);
      loss = (1 - eps) * -wc(ts) * lp(ts) + eps * smooth;
      weights += wc(ts);
    }
    rows.push_back(loss);
    total += loss;
  }
  if (r == ops::Reduction::kNone) return rows;
  return {r == ops::Reduction::kSum ? total : total / weights};
}

// log_softmax over dim 1 of (N, C, d...).
std::vector<double> RefLogSoftmaxDim1(const std::vector<double>& x, const Shape& shape) {
  const int64_t n = shape[0].value(), c = shape[1].value();
  const int64_t inner = shape.numel() / std::max<int64_t>(n * c, 1);
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t k = 0; k < inner; ++k) {
      double m = -INFINITY, s = 0;
      for (int64_t cls = 0; cls < c; ++cls) m = std::max(m, x[static_cast<size_t>((b * c + cls) * inner + k)]);
      for (int64_t cls = 0; cls < c; ++cls) s += std::exp(x[static_cast<size_t>((b * c + cls) * inner + k)] - m);
      for (int64_t cls = 0; cls < c; ++cls) {
        const size_t i = static_cast<size_t>((b * c + cls) * inner + k);
        y[i] = x[i] - m - std::log(s);
      }
    }
  }
  return y;
}

TEST(Losses, WeightedAndNdClassLosses) {
  const std::vector<ClassCase> cases = {{Shape{7, 5}, true}, {Shape{4, 3, 6}, false}, {Shape{4, 3, 6}, true},
                                        {Shape{2, 4, 3, 5}, true}, {Shape{3, 1000}, true}, {Shape{2, 3, 0}, true}};
  for (Symbol<DType> dtype : kFloating) {
    for (const ClassCase& cc : cases) {
      for (ops::Reduction r : kReductions) {
        for (double eps : {0.0, 0.2}) {
          SCOPED_TRACE(fmt::format("{} {} weighted={} {} eps={}", dtype, cc.logits, cc.weighted, ops::ReductionName(r), eps));
          const int64_t c = cc.logits[1].value();
          const TensorPtr logits = RandomTensor(dtype, cc.logits, -3, 3);
          std::vector<int64_t> tshape_v = {cc.logits[0].value()};
          for (int64_t d = 2; d < cc.logits.ndim(); ++d) tshape_v.push_back(cc.logits[d].value());
          std::vector<Dim> tdims(tshape_v.begin(), tshape_v.end());
          const Shape tshape(tdims);
          std::vector<int64_t> t;
          std::vector<double> td;
          const std::vector<double> u = ToDoubles(RandomTensor(DType::Float64(), tshape, 0, static_cast<double>(c)));
          for (size_t i = 0; i < u.size(); ++i) {
            t.push_back(i % 5 == 2 ? -100 : static_cast<int64_t>(u[i]));
            td.push_back(static_cast<double>(t.back()));
          }
          const TensorPtr target = FromDoubles(DType::Int64(), tshape, td);
          const TensorPtr weight = cc.weighted ? RandomTensor(dtype, Shape{c}, 0.2, 2) : nullptr;
          const std::vector<double> wv = weight ? ToDoubles(weight) : std::vector<double>{};
          const std::vector<double> logp = RefLogSoftmaxDim1(ToDoubles(logits), cc.logits);
          const Shape out = r == ops::Reduction::kNone ? tshape : Shape{};
          const double rtol = RtolFor(dtype) * 10, atol = 1e-6;
          const std::vector<double> expected = RefClassLoss(logp, cc.logits, t, wv, r, -100, eps);
          for (const TensorPtr& layout : {logits, NonContiguous(logits)}) {
            ExpectTensorNear(ops::WeightedCrossEntropy(layout, target, weight, r, -100, eps), dtype, out, expected, rtol, atol);
            if (!weight) ExpectTensorNear(ops::CrossEntropy(layout, target, r, -100, eps), dtype, out, expected, rtol, atol);
          }
          if (eps == 0) {
            const TensorPtr lp = FromDoubles(dtype, cc.logits, logp);
            ExpectTensorNear(ops::WeightedNllLoss(lp, target, weight, r), dtype, out, expected, rtol, atol);
          }
        }
      }
    }
  }
}

TEST(Losses, WeightedAndNdClassLossGradients) {
  for (const Shape& shape : {Shape{5, 4}, Shape{3, 4, 5}, Shape{2, 3, 2, 2}}) {
    for (bool weighted : {false, true}) {
      for (ops::Reduction r : kReductions) {
        SCOPED_TRACE(fmt::format("{} weighted={} {}", shape, weighted, ops::ReductionName(r)));
        const int64_t c = shape[1].value();
        std::vector<Dim> tdims = {shape[0]};
        for (int64_t d = 2; d < shape.ndim(); ++d) tdims.push_back(shape[d]);
        const Shape tshape(tdims);
        std::vector<double> td;
        for (int64_t i = 0; i < tshape.numel(); ++i) td.push_back(i % 4 == 1 ? -100.0 : static_cast<double>((i * 7) % c));
        const TensorPtr target = FromDoubles(DType::Int64(), tshape, td);
        const TensorPtr weight = weighted ? RandomTensor(DType::Float64(), Shape{c}, 0.2, 2) : nullptr;
        TensorPtr x = RandomTensor(DType::Float64(), shape, -2, 2);
        x->set_requires_grad(true);
        ExpectGradientsMatch([&](const auto& in) { return ops::WeightedNllLoss(in[0], target, weight, r); }, {x});
        for (double eps : {0.0, 0.3}) {
          ExpectGradientsMatch([&](const auto& in) { return ops::WeightedCrossEntropy(in[0], target, weight, r, -100, eps); },
                               {x});
        }
      }
    }
  }
}

TEST(Losses, WeightedHandComputedAndErrors) {
  // Two samples, classes 0 and 2 with weights 2 and 0.5: the weighted mean divides by 2.5.
  const TensorPtr lp = FromDoubles(DType::Float64(), Shape{2, 3}, {-1, -2, -3, -4, -5, -6});
  const TensorPtr target = FromDoubles(DType::Int64(), Shape{2}, {0, 2});
  const TensorPtr w = FromDoubles(DType::Float64(), Shape{3}, {2, 1, 0.5});
  ExpectTensorNear(ops::WeightedNllLoss(lp, target, w), DType::Float64(), Shape{}, {(2 * 1 + 0.5 * 6) / 2.5}, 1e-12);
  ExpectTensorNear(ops::WeightedNllLoss(lp, target, w, ops::Reduction::kNone), DType::Float64(), Shape{2}, {2, 3}, 1e-12);
  const TensorPtr logits = RandomTensor(DType::Float32(), Shape{2, 3, 4});
  OF_EXPECT_ERROR(ops::WeightedCrossEntropy(logits, FromDoubles(DType::Int64(), Shape{2, 3}, {0, 0, 0, 0, 0, 0}), nullptr),
                  InvalidArgument, "cross_entropy:", "target (2, 3) must be logits (2, 3, 4)'s shape without the class dim");
  OF_EXPECT_ERROR(ops::WeightedCrossEntropy(logits, FromDoubles(DType::Int64(), Shape{2, 4}, std::vector<double>(8, 0)),
                                            RandomTensor(DType::Float32(), Shape{4})),
                  InvalidArgument, "cross_entropy:", "weight must be 1-D with one entry per class (3)", "(4,)");
  OF_EXPECT_ERROR(ops::WeightedNllLoss(lp, target, RandomTensor(DType::Float32(), Shape{3})), InvalidArgument,
                  "nll_loss:", "weight must have log_probs's dtype float64");
  OF_EXPECT_ERROR(ops::WeightedCrossEntropy(logits, FromDoubles(DType::Int64(), Shape{2, 4}, {0, 1, 2, 3, 0, 0, 0, 0}), nullptr),
                  InvalidArgument, "cross_entropy:", "target[3] = 3");
}

TEST(Losses, LazyGraphOverAnUnknownBatch) {
  // Elementwise and weighted N-d losses traced once over an unknown batch dim, run at two sizes.
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session_owner);
  const TensorPtr weight = RandomTensor(DType::Float64(), Shape{3}, 0.5, 2);
  graph::Graph g(session_owner, "losses", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr x = g.AddInput("x", DType::Float64(), Shape{Dim::Unknown(), 3, 2});
  const TensorPtr t = g.AddInput("t", DType::Float64(), Shape{Dim::Unknown(), 3, 2});
  const TensorPtr y = g.AddInput("y", DType::Int64(), Shape{Dim::Unknown(), 2});
  const TensorPtr none = ops::SmoothL1Loss(x, t, ops::Reduction::kNone, 0.5);
  EXPECT_EQ(none->shape(), (Shape{Dim::Unknown(), 3, 2}));
  const TensorPtr ce = ops::WeightedCrossEntropy(x, y, weight, ops::Reduction::kNone);
  EXPECT_EQ(ce->shape(), (Shape{Dim::Unknown(), 2}));
  g.AddOutput(none);
  g.AddOutput(ops::BinaryCrossEntropyWithLogits(x, ops::Sigmoid(t), nullptr, ops::Reshape(weight, {3, 1})));
  g.AddOutput(ce);
  g.EndBuild();
  for (int64_t n : {2, 5}) {
    const TensorPtr xv = RandomTensor(DType::Float64(), Shape{n, 3, 2}), tv = RandomTensor(DType::Float64(), Shape{n, 3, 2});
    std::vector<double> labels;
    for (int64_t i = 0; i < n * 2; ++i) labels.push_back(static_cast<double>(i % 3));
    const TensorPtr yv = FromDoubles(DType::Int64(), Shape{n, 2}, labels);
    const std::vector<TensorPtr> out = g.Run({xv, tv, yv});
    ExpectTensorNear(out[0], DType::Float64(), Shape{n, 3, 2}, ToDoubles(ops::SmoothL1Loss(xv, tv, ops::Reduction::kNone, 0.5)), 1e-12, 1e-12);
    ExpectTensorNear(out[1], DType::Float64(), Shape{},
                     ToDoubles(ops::BinaryCrossEntropyWithLogits(xv, ops::Sigmoid(tv), nullptr, ops::Reshape(weight, {3, 1}))), 1e-12, 1e-12);
    ExpectTensorNear(out[2], DType::Float64(), Shape{n, 2},
                     ToDoubles(ops::WeightedCrossEntropy(xv, yv, weight, ops::Reduction::kNone)), 1e-12, 1e-12);
  }
}

}  // namespace
}  // namespace oneflow::test
