// softmax, log_softmax, nll_loss, cross_entropy, dropout and their gradient ops against float64
// reference loops; gradients against finite differences; errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/common/philox.h"
#include "core/op/dispatch.h"
#include "tests/core/test_util.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kFloating = FloatingDTypes();

TensorPtr RunOp(std::string_view op, std::vector<TensorPtr> inputs, Attrs attrs) {
  return Apply1(OpRegistry::Global().Get(op), std::move(inputs), std::move(attrs));
}

// Every line of `shape` along `dim`: the flat indices of its elements.
std::vector<std::vector<int64_t>> Lines(const Shape& shape, int64_t dim) {
  const int64_t nd = std::max<int64_t>(shape.ndim(), 1);
  if (dim < 0) dim += nd;
  std::map<std::vector<int64_t>, std::vector<int64_t>> lines;
  for (int64_t i = 0; i < shape.numel(); ++i) {
    std::vector<int64_t> idx = Unravel(i, shape);
    if (!idx.empty()) idx[static_cast<size_t>(dim)] = 0;
    lines[idx].push_back(i);
  }
  std::vector<std::vector<int64_t>> out;
  for (auto& [key, line] : lines) out.push_back(std::move(line));
  return out;
}

std::vector<double> RefSoftmax(const std::vector<double>& x, const Shape& shape, int64_t dim, bool log) {
  std::vector<double> y(x.size());
  for (const auto& line : Lines(shape, dim)) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t i : line) m = std::max(m, x[static_cast<size_t>(i)]);
    double s = 0;
    for (int64_t i : line) s += std::exp(x[static_cast<size_t>(i)] - m);
    for (int64_t i : line) {
      const double v = x[static_cast<size_t>(i)];
      y[static_cast<size_t>(i)] = log ? v - m - std::log(s) : std::exp(v - m) / s;
    }
  }
  return y;
}

const std::vector<std::pair<Shape, int64_t>> kSoftmaxCases = {
    {Shape{}, 0},        {Shape{5}, 0},        {Shape{3, 7}, 1},       {Shape{3, 7}, 0},     {Shape{2, 3, 4}, 1},
    {Shape{2, 3, 4}, -1}, {Shape{2, 3, 4}, 0}, {Shape{4, 1}, 1},       {Shape{4, 1}, 0},     {Shape{2, 1000}, 1},
    {Shape{64, 3, 100}, 1}, {Shape{300, 257}, -1}};

TEST(Softmax, MatchesReference) {
  for (bool log : {false, true}) {
    const std::string name = log ? "log_softmax" : "softmax";
    for (Symbol<DType> dtype : kFloating) {
      for (const auto& [shape, dim] : kSoftmaxCases) {
        SCOPED_TRACE(fmt::format("{} {} {} dim={}", name, dtype, shape, dim));
        const TensorPtr x = RandomTensor(dtype, shape, -5, 5);
        const std::vector<double> expected = RefSoftmax(ToDoubles(x), shape, dim, log);
        for (const TensorPtr& layout : {x, NonContiguous(x)}) {
          ExpectTensorNear(log ? ops::LogSoftmax(layout, dim) : ops::Softmax(layout, dim), dtype, shape, expected,
                           RtolFor(dtype) * 4, 1e-6);
        }
      }
      // Numerically stable on large logits.
      const TensorPtr big = FromDoubles(dtype, Shape{3}, {1000, 0, -1000});
      ExpectTensorNear(log ? ops::LogSoftmax(big, 0) : ops::Softmax(big, 0), dtype, Shape{3},
                       log ? std::vector<double>{0, -1000, -2000} : std::vector<double>{1, 0, 0}, 1e-6, 1e-6);
      MarkCovered(name, dtype);
    }
  }
}

// log_softmax keeps its relative precision near the row maximum, where the result is small: it
// computes (x - max) - log(sum), not x - (max + log(sum)) (whose float32 rounding gave 0 for
// [1000, 989, 0] and a relative error of 8e-3 on [30, 20, 10, 0]; PyTorch's is 3.7e-4).
TEST(Softmax, LogSoftmaxIsPreciseNearTheMaximum) {
  for (Symbol<DType> dtype : kFloating) {
    SCOPED_TRACE(fmt::format("{}", dtype));
    const double rtol = TolFor(dtype, 2e-6, 1e-12);
    // In float64 [1000, 989, 0] gives [-1.670156131830428e-05, -11.000016701561318, -1000.0000167015613];
    // bfloat16 holds 989 as 992, so each dtype is checked against the reference of the values it holds.
    const TensorPtr a = FromDoubles(dtype, Shape{1, 3}, {1000, 989, 0}),
                    b = FromDoubles(dtype, Shape{4}, {30, 20, 10, 0});
    ExpectTensorNear(ops::LogSoftmax(a, 1), dtype, Shape{1, 3}, RefSoftmax(ToDoubles(a), Shape{1, 3}, 1, true), rtol,
                     0);
    ExpectTensorNear(ops::LogSoftmax(b, 0), dtype, Shape{4}, RefSoftmax(ToDoubles(b), Shape{4}, 0, true), rtol, 0);
  }
}

TEST(Softmax, Gradients) {
  for (const auto& [shape, dim] : kSoftmaxCases) {
    if (shape.numel() > 100) continue;
    SCOPED_TRACE(fmt::format("{} dim={}", shape, dim));
    TensorPtr x = RandomTensor(DType::Float64(), shape, -3, 3);
    x->set_requires_grad(true);
    ExpectGradientsMatch([&](const auto& in) { return ops::Softmax(in[0], dim); }, {x});
    ExpectGradientsMatch([&](const auto& in) { return ops::LogSoftmax(in[0], dim); }, {x});
  }
}

TEST(Softmax, BackwardOps) {
  for (Symbol<DType> dtype : kFloating) {
    for (const auto& [shape, dim] : kSoftmaxCases) {
      for (bool log : {false, true}) {
        SCOPED_TRACE(fmt::format("{} {} dim={} log={}", dtype, shape, dim, log));
        const TensorPtr y = log ? ops::LogSoftmax(RandomTensor(dtype, shape), dim) : ops::Softmax(RandomTensor(dtype, shape), dim);
        const TensorPtr dy = RandomTensor(dtype, shape);
        const std::vector<double> yv = ToDoubles(y), dyv = ToDoubles(dy);
        std::vector<double> expected(yv.size());
        for (const auto& line : Lines(shape, dim)) {
          double s = 0;
          for (int64_t i : line) s += log ? dyv[static_cast<size_t>(i)] : dyv[static_cast<size_t>(i)] * yv[static_cast<size_t>(i)];
          for (int64_t i : line) {
            const size_t k = static_cast<size_t>(i);
            expected[k] = log ? dyv[k] - std::exp(yv[k]) * s : yv[k] * (dyv[k] - s);
          }
        }
        ExpectTensorNear(RunOp(log ? "log_softmax_backward" : "softmax_backward", {y, dy}, {{"dim", dim}}), dtype, shape,
                         expected, RtolFor(dtype) * 10, 1e-5);
      }
    }
    MarkCovered("softmax_backward", dtype);
    MarkCovered("log_softmax_backward", dtype);
  }
}

// ---- losses ---------------------------------------------------------------------------------------------

TensorPtr Targets(const std::vector<int64_t>& t) {
  std::vector<double> v(t.begin(), t.end());
  return FromDoubles(DType::Int64(), Shape{static_cast<int64_t>(t.size())}, v);
}

// Random targets in [0, c), with every fifth ignored.
std::vector<int64_t> RandomTargets(int64_t n, int64_t c, int64_t ignore_index) {
  const std::vector<double> u = ToDoubles(RandomTensor(DType::Float64(), Shape{n}, 0, static_cast<double>(c)));
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n; ++i) t.push_back(i % 5 == 3 ? ignore_index : static_cast<int64_t>(u[static_cast<size_t>(i)]));
  return t;
}

// Per-row losses of (1 - eps) nll + eps * mean_c(-log_prob), reduced.
std::vector<double> RefLoss(const std::vector<double>& logp, int64_t n, int64_t c, const std::vector<int64_t>& t,
                            ops::Reduction reduction, int64_t ignore_index, double eps) {
  std::vector<double> rows;
  double total = 0, count = 0;
  for (int64_t i = 0; i < n; ++i) {
    double loss = 0;
    if (t[static_cast<size_t>(i)] != ignore_index) {
      double smooth = 0;
      for (int64_t k = 0; k < c; ++k) smooth -= logp[static_cast<size_t>(i * c + k)] / static_cast<double>(c);
      loss = (1 - eps) * -logp[static_cast<size_t>(i * c + t[static_cast<size_t>(i)])] + eps * smooth;
      count += 1;
    }
    rows.push_back(loss);
    total += loss;
  }
  if (reduction == ops::Reduction::kNone) return rows;
  return {reduction == ops::Reduction::kSum ? total : total / count};
}

const std::vector<ops::Reduction> kReductions = {ops::Reduction::kNone, ops::Reduction::kMean, ops::Reduction::kSum};

TEST(Losses, NllLoss) {
  for (Symbol<DType> dtype : kFloating) {
    for (const auto& [n, c] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 5}, {64, 10}, {3, 1000}}) {
      for (ops::Reduction r : kReductions) {
        for (int64_t ignore : {int64_t{-100}, int64_t{2}}) {
          SCOPED_TRACE(fmt::format("{} ({}, {}) {} ignore={}", dtype, n, c, ops::ReductionName(r), ignore));
          const TensorPtr lp = RandomTensor(dtype, Shape{n, c}, -5, 0);
          const std::vector<int64_t> t = RandomTargets(n, c, ignore);
          const std::vector<double> expected = RefLoss(ToDoubles(lp), n, c, t, r, ignore, 0.0);
          const Shape out = r == ops::Reduction::kNone ? Shape{n} : Shape{};
          ExpectTensorNear(ops::NllLoss(lp, Targets(t), r, ignore), dtype, out, expected, RtolFor(dtype), 1e-6);
          ExpectTensorNear(ops::NllLoss(NonContiguous(lp), Targets(t), r, ignore), dtype, out, expected, RtolFor(dtype),
                           1e-6);
          // The gradient op: -dy (scaled) at each target.
          const TensorPtr dy = RandomTensor(dtype, out);
          const std::vector<double> dyv = ToDoubles(dy);
          double count = 0;
          for (int64_t v : t) count += v != ignore;
          std::vector<double> dx(static_cast<size_t>(n * c), 0.0);
          for (int64_t i = 0; i < n; ++i) {
            if (t[static_cast<size_t>(i)] == ignore) continue;
            const double g = r == ops::Reduction::kNone ? dyv[static_cast<size_t>(i)]
                             : r == ops::Reduction::kMean ? dyv[0] / count
                                                          : dyv[0];
            dx[static_cast<size_t>(i * c + t[static_cast<size_t>(i)])] = -g;
          }
          ExpectTensorNear(RunOp("nll_loss_backward", {dy, lp, Targets(t), nullptr},
                               {{"reduction", std::string(ops::ReductionName(r))}, {"ignore_index", ignore}}),
                           dtype, Shape{n, c}, dx, RtolFor(dtype), 1e-6);
        }
      }
    }
    MarkCovered("nll_loss", dtype);
    MarkCovered("nll_loss_backward", dtype);
  }
}

TEST(Losses, CrossEntropy) {
  for (Symbol<DType> dtype : kFloating) {
    for (const auto& [n, c] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 5}, {64, 10}, {3, 1000}}) {
      for (ops::Reduction r : kReductions) {
        for (double eps : {0.0, 0.1}) {
          const int64_t ignore = 1;
          SCOPED_TRACE(fmt::format("{} ({}, {}) {} eps={}", dtype, n, c, ops::ReductionName(r), eps));
          const TensorPtr logits = RandomTensor(dtype, Shape{n, c}, -4, 4);
          const std::vector<int64_t> t = RandomTargets(n, c, ignore);
          const std::vector<double> logp = RefSoftmax(ToDoubles(logits), Shape{n, c}, 1, true);
          const std::vector<double> expected = RefLoss(logp, n, c, t, r, ignore, eps);
          const Shape out = r == ops::Reduction::kNone ? Shape{n} : Shape{};
          for (const TensorPtr& layout : {logits, NonContiguous(logits)}) {
            ExpectTensorNear(ops::CrossEntropy(layout, Targets(t), r, ignore, eps), dtype, out, expected,
                             RtolFor(dtype) * 4, 1e-6);
          }
          // The gradient op: scale_i (softmax - (1 - eps) onehot - eps / C).
          const TensorPtr dy = RandomTensor(dtype, out);
          const std::vector<double> dyv = ToDoubles(dy);
          double count = 0;
          for (int64_t v : t) count += v != ignore;
          std::vector<double> dx(static_cast<size_t>(n * c), 0.0);
          for (int64_t i = 0; i < n; ++i) {
            if (t[static_cast<size_t>(i)] == ignore) continue;
            const double g = r == ops::Reduction::kNone ? dyv[static_cast<size_t>(i)]
                             : r == ops::Reduction::kMean ? dyv[0] / count
                                                          : dyv[0];
            for (int64_t k = 0; k < c; ++k) {
              const double q = (k == t[static_cast<size_t>(i)] ? 1 - eps : 0.0) + eps / static_cast<double>(c);
              dx[static_cast<size_t>(i * c + k)] = g * (std::exp(logp[static_cast<size_t>(i * c + k)]) - q);
            }
          }
          ExpectTensorNear(RunOp("cross_entropy_backward", {dy, logits, Targets(t), nullptr},
                               {{"reduction", std::string(ops::ReductionName(r))},
                                {"ignore_index", ignore},
                                {"label_smoothing", eps}}),
                           dtype, Shape{n, c}, dx, RtolFor(dtype) * 10, 1e-6);
        }
      }
    }
    MarkCovered("cross_entropy", dtype);
    MarkCovered("cross_entropy_backward", dtype);
  }
}

TEST(Losses, CrossEntropyHandComputed) {
  // logits (1, 2, 3), target 2: log(e + e^2 + e^3) - 3 = log(1 + e^-1 + e^-2).
  const TensorPtr logits = FromDoubles(DType::Float64(), Shape{1, 3}, {1, 2, 3});
  const double nll = std::log(1 + std::exp(-1.0) + std::exp(-2.0));
  EXPECT_NEAR(nll, 0.40760596444438, 1e-12);
  ExpectTensorNear(ops::CrossEntropy(logits, Targets({2})), DType::Float64(), Shape{}, {0.40760596444438}, 1e-12, 0);
  // Label smoothing 0.1 over 3 classes: 0.9 nll + 0.1 (lse - mean(x)) = 0.9 * 0.40760596 + 0.1 * 1.40760596.
  ExpectTensorNear(ops::CrossEntropy(logits, Targets({2}), ops::Reduction::kMean, -100, 0.1), DType::Float64(),
                   Shape{}, {0.50760596444438}, 1e-12, 0);
  // Two rows, one ignored: the mean is over the other.
  const TensorPtr two = FromDoubles(DType::Float32(), Shape{2, 3}, {1, 2, 3, 0, 0, 0});
  ExpectTensorNear(ops::CrossEntropy(two, Targets({2, -100})), DType::Float32(), Shape{}, {0.40760596444438}, 1e-6, 0);
  ExpectTensorNear(ops::CrossEntropy(two, Targets({-100, 0}), ops::Reduction::kSum), DType::Float32(), Shape{},
                   {std::log(3.0)}, 1e-6, 0);
  // Every target ignored: the mean is NaN, as in PyTorch; the sum is 0.
  const double nan = std::nan("");
  ExpectTensorNear(ops::CrossEntropy(two, Targets({-100, -100})), DType::Float32(), Shape{}, {nan});
  ExpectTensorNear(ops::NllLoss(two, Targets({-100, -100})), DType::Float32(), Shape{}, {nan});
  ExpectTensorNear(ops::CrossEntropy(two, Targets({-100, -100}), ops::Reduction::kSum), DType::Float32(), Shape{}, {0});
}

TEST(Losses, Gradients) {
  const int64_t n = 6, c = 4;
  const std::vector<int64_t> t = {0, 3, -100, 2, 1, 3};
  for (ops::Reduction r : kReductions) {
    SCOPED_TRACE(ops::ReductionName(r));
    TensorPtr x = RandomTensor(DType::Float64(), Shape{n, c}, -2, 2);
    x->set_requires_grad(true);
    const TensorPtr target = Targets(t);
    ExpectGradientsMatch([&](const auto& in) { return ops::NllLoss(in[0], target, r); }, {x});
    for (double eps : {0.0, 0.2}) {
      ExpectGradientsMatch([&](const auto& in) { return ops::CrossEntropy(in[0], target, r, -100, eps); }, {x});
    }
  }
}

TEST(Losses, Errors) {
  const TensorPtr logits = RandomTensor(DType::Float32(), Shape{3, 5});
  OF_EXPECT_ERROR(ops::CrossEntropy(logits, FromDoubles(DType::Int32(), Shape{3}, {0, 1, 2})), InvalidArgument,
                  "cross_entropy:", "target", "int64", "int32");
  OF_EXPECT_ERROR(ops::CrossEntropy(logits, Targets({0, 5, 1})), InvalidArgument, "cross_entropy:", "target[1] = 5",
                  "5 classes");
  OF_EXPECT_ERROR(ops::NllLoss(logits, Targets({0, 1, -2})), InvalidArgument, "nll_loss:", "target[2] = -2");
  OF_EXPECT_ERROR(ops::CrossEntropy(logits, Targets({0, 1})), InvalidArgument, "cross_entropy:", "2 entries", "3 rows");
  OF_EXPECT_ERROR(ops::CrossEntropy(RandomTensor(DType::Float32(), Shape{5}), Targets({0})), InvalidArgument,
                  "cross_entropy:", "2-D", "(5,)");
  OF_EXPECT_ERROR(ops::NllLoss(RandomTensor(DType::Int64(), Shape{2, 2}), Targets({0, 1})), InvalidArgument,
                  "nll_loss:", "floating point");
  OF_EXPECT_ERROR(ops::CrossEntropy(logits, Targets({0, 1, 2}), ops::Reduction::kMean, -100, 1.5), InvalidArgument,
                  "label_smoothing", "1.5");
  OF_EXPECT_ERROR(ops::ReductionFromName("average"), InvalidArgument, "reduction", "average");
  EXPECT_EQ(ops::ReductionFromName("sum"), ops::Reduction::kSum);
  EXPECT_EQ(ops::ReductionName(ops::ReductionFromName("none")), "none");
  EXPECT_EQ(ops::ReductionName(ops::Reduction::kMean), "mean");
  OF_EXPECT_ERROR(ops::Softmax(logits, 2), InvalidArgument, "softmax:", "dim 2 is out of range");
  OF_EXPECT_ERROR(ops::LogSoftmax(RandomTensor(DType::Int32(), Shape{2}), 0), InvalidArgument, "log_softmax:",
                  "floating point", "int32");
}

TEST(Losses, SymbolicInference) {
  const Dim n = Dim::NewSymbol("N");
  const OpDef& ce = OpRegistry::Global().Get("cross_entropy");
  const std::vector<TensorMeta> in = {{DType::Float32(), Shape{n, 10}, Device::CPU()},
                                      {DType::Int64(), Shape{n}, Device::CPU()}};
  Attrs attrs{{"reduction", std::string("none")}, {"ignore_index", int64_t{-100}}, {"label_smoothing", 0.0}};
  EXPECT_EQ(ce.infer(in, attrs)[0].shape, Shape{n});
  attrs.Set("reduction", std::string("mean"));
  EXPECT_EQ(ce.infer(in, attrs)[0].shape, Shape{});
}

// ---- dropout ----------------------------------------------------------------------------------------------

std::vector<TensorPtr> DropoutOp(const TensorPtr& x, double p) {
  return Apply(OpRegistry::Global().Get("dropout"), {x}, {{"p", p}});
}

TEST(Dropout, MatchesPhiloxReference) {
  // Element i keeps when word i % 4 of Philox counter i / 4 is >= p * 2^32 (a fresh seed starts at 0).
  for (Symbol<DType> dtype : kFloating) {
    for (double p : {0.0, 0.25, 0.5, 0.9, 1.0}) {
      SCOPED_TRACE(fmt::format("{} p={}", dtype, p));
      const TensorPtr x = RandomTensor(dtype, Shape{7, 9});
      Session::Current().generator().ManualSeed(99);
      const std::vector<TensorPtr> out = DropoutOp(NonContiguous(x), p);
      const std::vector<double> xv = ToDoubles(x);
      std::vector<double> y, mask;
      for (size_t i = 0; i < xv.size(); ++i) {
        const uint32_t bits = Philox4x32(99, 0, i / 4)[i % 4];
        const bool keep = static_cast<double>(bits) >= p * 4294967296.0;
        mask.push_back(keep ? 1 / (1 - p) : 0.0);
        y.push_back(xv[i] * mask.back());
      }
      ExpectTensorNear(out[0], dtype, x->shape(), y, RtolFor(dtype));
      ExpectTensorNear(out[1], dtype, x->shape(), mask, RtolFor(dtype));
    }
    MarkCovered("dropout", dtype);
  }
}

TEST(Dropout, Statistics) {
  const int64_t n = 200000;
  const TensorPtr x = Full(DType::Float32(), Shape{n}, 1.0, Device::CPU());
  for (double p : {0.1, 0.5, 0.8}) {
    const std::vector<double> y = ToDoubles(ops::Dropout(x, p));
    int64_t zeros = 0;
    for (double v : y) {
      if (v == 0) {
        ++zeros;
      } else {
        ASSERT_NEAR(v, 1 / (1 - p), 1e-6);
      }
    }
    // Binomial standard deviation is at most 0.0011 of n here: 5 sigma.
    EXPECT_NEAR(static_cast<double>(zeros) / n, p, 0.0056) << "p=" << p;
  }
  ExpectTensorNear(ops::Dropout(x, 1.0), DType::Float32(), x->shape(), std::vector<double>(n, 0.0));
}

TEST(Dropout, ReproducibleAndThreadIndependent) {
  const TensorPtr x = RandomTensor(DType::Float32(), Shape{100001});
  std::vector<std::vector<double>> results;
  for (int32_t threads : {1, 2, 4}) {
    Session session(SessionOptions{.seed = 5, .num_threads = threads});
    SessionScope scope(session);
    results.push_back(ToDoubles(ops::Dropout(x, 0.3)));
    results.push_back(ToDoubles(ops::Dropout(x, 0.3)));  // the generator moved on: another mask
    session.generator().ManualSeed(5);
    results.push_back(ToDoubles(ops::Dropout(x, 0.3)));  // the first mask again
  }
  EXPECT_NE(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
  for (size_t i = 3; i < results.size(); ++i) EXPECT_EQ(results[i], results[i % 3]) << i;
}

TEST(Dropout, IdentityAndErrors) {
  const TensorPtr x = RandomTensor(DType::Float32(), Shape{4});
  EXPECT_EQ(ops::Dropout(x, 0.5, false).get(), x.get());
  EXPECT_EQ(ops::Dropout(x, 0.0).get(), x.get());
  OF_EXPECT_ERROR(ops::Dropout(x, 1.5), InvalidArgument, "dropout", "p", "1.5");
  OF_EXPECT_ERROR(ops::Dropout(x, -0.1, false), InvalidArgument, "dropout", "p");
  OF_EXPECT_ERROR(ops::Dropout(RandomTensor(DType::Int32(), Shape{4}), 0.5), InvalidArgument, "dropout:",
                  "floating point");
}

TEST(Dropout, Gradient) {
  // dx = dy * mask: checked against the mask the forward drew.
  TensorPtr x = RandomTensor(DType::Float64(), Shape{5, 8});
  x->set_requires_grad(true);
  const TensorPtr y = ops::Dropout(x, 0.4);
  const TensorPtr dy = RandomTensor(DType::Float64(), Shape{5, 8});
  Backward({y}, {dy});
  const std::vector<double> xv = ToDoubles(x), yv = ToDoubles(y), dyv = ToDoubles(dy);
  std::vector<double> expected;
  for (size_t i = 0; i < xv.size(); ++i) expected.push_back(yv[i] == 0 ? 0.0 : dyv[i] / 0.6);
  ExpectTensorNear(x->grad(), DType::Float64(), x->shape(), expected, 1e-12);
}

}  // namespace
}  // namespace oneflow::test
