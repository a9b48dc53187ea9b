// batch_norm and batch_norm_backward against float64 loops; the running-stat update against
// hand-computed values; gradients by finite differences.
#include <algorithm>
#include <cmath>

#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/tensor/copy.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kDTypes = FloatingDTypes();
double Tol(Symbol<DType> dt) { return TolFor(dt, 2e-4, 1e-10); }

const OpDef& BatchNormOp() { return OpRegistry::Global().Get("batch_norm"); }

// x as (N, C, S): the channel of flat element i.
int64_t ChannelOf(int64_t i, const Shape& x) {
  int64_t s = 1;
  for (int64_t d = 2; d < x.ndim(); ++d) s *= x[d].value();
  return i / s % x[1].value();
}

struct Stats {
  std::vector<double> mean, var;  // biased variance
  int64_t count = 0;
};
Stats BatchStats(const TensorPtr& x) {
  const std::vector<double> v = ToDoubles(x);
  const int64_t c = x->shape()[1].value();
  Stats s{std::vector<double>(static_cast<size_t>(c), 0.0), std::vector<double>(static_cast<size_t>(c), 0.0),
          x->numel() / c};
  for (int64_t i = 0; i < x->numel(); ++i) s.mean[static_cast<size_t>(ChannelOf(i, x->shape()))] += v[static_cast<size_t>(i)];
  for (double& m : s.mean) m /= static_cast<double>(s.count);
  for (int64_t i = 0; i < x->numel(); ++i) {
    const double d = v[static_cast<size_t>(i)] - s.mean[static_cast<size_t>(ChannelOf(i, x->shape()))];
    s.var[static_cast<size_t>(ChannelOf(i, x->shape()))] += d * d;
  }
  for (double& var : s.var) var /= static_cast<double>(s.count);
  return s;
}

std::vector<double> Normalize(const TensorPtr& x, const TensorPtr& w, const TensorPtr& b, const std::vector<double>& mean,
                              const std::vector<double>& var, double eps) {
  const std::vector<double> v = ToDoubles(x);
  const std::vector<double> wv = w ? ToDoubles(w) : std::vector<double>(), bv = b ? ToDoubles(b) : std::vector<double>();
  std::vector<double> y(v.size());
  for (int64_t i = 0; i < x->numel(); ++i) {
    const size_t c = static_cast<size_t>(ChannelOf(i, x->shape()));
    y[static_cast<size_t>(i)] = (v[static_cast<size_t>(i)] - mean[c]) / std::sqrt(var[c] + eps) * (w ? wv[c] : 1.0) +
                                (b ? bv[c] : 0.0);
  }
  return y;
}

struct BnCase {
  Shape x;
  bool affine, running;
};
// The last four run the channels-last kernels (batch_norm_nhwc.h) in that layout: 8k channels, one chunk
// of rows, several with a partial last one, several groups of chunks (27 chunks of 64 rows, 9 groups, Note
// [Chunks in groups]), and many channels (5 chunks of at least 16 rows, one per group, their merges in two
// parts of 512 channels: Note [Chunks of many channels]).
const std::vector<BnCase> kCases = {{{3, 5, 7, 3}, true, true},     {{4, 3}, true, true},
                                    {{2, 3, 5}, true, true},        {{1, 2, 1, 3}, false, true},
                                    {{3, 4, 2, 2}, true, false},    {{2, 16, 9, 9}, true, true},
                                    {{8, 24, 13, 11}, false, true}, {{4, 64, 21, 20}, true, true},
                                    {{2, 1024, 5, 7}, true, true}};

TEST(BatchNorm, TrainingMatchesReferenceAndUpdatesRunningStats) {
  for (Symbol<DType> dt : kDTypes) {
    for (const BnCase& k : kCases) {
      // The layouts of x: as made, non-contiguous, channels last (Note [Channels-last activations]).
      for (int layout : {0, 1, 2}) {
        if (layout == 2 && Canonical(k.x, MemoryFormat::kChannelsLast) != MemoryFormat::kChannelsLast) continue;
        SCOPED_TRACE(fmt::format("{} x {} affine {} running {} layout {}", dt->name(), k.x, k.affine, k.running,
                                 layout));
        const int64_t c = k.x[1].value();
        const TensorPtr x = RandomTensor(dt, k.x);
        const TensorPtr w = k.affine ? RandomTensor(dt, {c}, 0.5, 1.5) : TensorPtr();
        const TensorPtr b = k.affine ? RandomTensor(dt, {c}) : TensorPtr();
        const TensorPtr rm = k.running ? RandomTensor(dt, {c}) : TensorPtr();
        const TensorPtr rv = k.running ? RandomTensor(dt, {c}, 0.5, 2.0) : TensorPtr();
        const std::vector<double> rm0 = rm ? ToDoubles(rm) : std::vector<double>();
        const std::vector<double> rv0 = rv ? ToDoubles(rv) : std::vector<double>();
        const double momentum = 0.3, eps = 1e-3;
        const TensorPtr xl = layout == 0 ? x : layout == 1 ? NonContiguous(x) : ChannelsLast(x);
        std::vector<TensorPtr> r =
            Apply(BatchNormOp(), {xl, w, b, rm, rv}, {{"training", true}, {"momentum", momentum}, {"eps", eps}});
        // y keeps a channels-last x's format (not float64: its loops are written for contiguous data).
        EXPECT_EQ(r[0]->memory_format(),
                  layout == 2 && dt != DType::Float64() ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous);
        const Stats s = BatchStats(x);
        ExpectTensorNear(r[0], dt, k.x, Normalize(x, w, b, s.mean, s.var, eps), Tol(dt), Tol(dt));
        ExpectTensorNear(r[1], dt, {c}, s.mean, Tol(dt), Tol(dt));
        ExpectTensorNear(r[2], dt, {c}, s.var, Tol(dt), Tol(dt));
        if (k.running) {
          std::vector<double> want_m(rm0.size()), want_v(rv0.size());
          const double unbias = static_cast<double>(s.count) / static_cast<double>(s.count - 1);
          for (size_t i = 0; i < want_m.size(); ++i) {
            want_m[i] = (1 - momentum) * rm0[i] + momentum * s.mean[i];
            want_v[i] = (1 - momentum) * rv0[i] + momentum * s.var[i] * unbias;
          }
          ExpectTensorNear(rm, dt, {c}, want_m, Tol(dt), Tol(dt));
          ExpectTensorNear(rv, dt, {c}, want_v, Tol(dt), Tol(dt));
        }
        MarkCovered("batch_norm", dt);
      }
    }
  }
}

TEST(BatchNorm, RunningStatsByHand) {
  for (Symbol<DType> dt : kDTypes) {
    // One channel holding 1, 2, 3, 4: mean 2.5, biased variance 1.25, unbiased 5/3. (eps must be > 0; 1e-12
    // is below the tolerances.)
    const TensorPtr x = FromDoubles(dt, {2, 1, 2, 1}, {1, 2, 3, 4});
    const TensorPtr rm = FromDoubles(dt, {1}, {0.0}), rv = FromDoubles(dt, {1}, {1.0});
    const TensorPtr y = ops::BatchNorm(x, nullptr, nullptr, rm, rv, {.training = true, .momentum = 0.1, .eps = 1e-12});
    const double sd = std::sqrt(1.25);
    ExpectTensorNear(y, dt, {2, 1, 2, 1}, {-1.5 / sd, -0.5 / sd, 0.5 / sd, 1.5 / sd}, Tol(dt), Tol(dt));
    ExpectTensorNear(rm, dt, {1}, {0.25}, Tol(dt), Tol(dt));
    ExpectTensorNear(rv, dt, {1}, {0.9 + 0.1 * 5.0 / 3.0}, Tol(dt), Tol(dt));
    // Inference then uses them, and leaves them alone.
    const TensorPtr z = ops::BatchNorm(x, nullptr, nullptr, rm, rv, {.training = false, .eps = 1e-12});
    const double rsd = std::sqrt(0.9 + 0.1 * 5.0 / 3.0);
    ExpectTensorNear(z, dt, {2, 1, 2, 1}, {0.75 / rsd, 1.75 / rsd, 2.75 / rsd, 3.75 / rsd}, Tol(dt), Tol(dt));
    ExpectTensorNear(rm, dt, {1}, {0.25}, Tol(dt), Tol(dt));
  }
}

TEST(BatchNorm, InferenceUsesRunningStats) {
  for (Symbol<DType> dt : kDTypes) {
    for (const BnCase& k : kCases) {
      SCOPED_TRACE(fmt::format("{} x {} affine {}", dt->name(), k.x, k.affine));
      const int64_t c = k.x[1].value();
      const TensorPtr x = RandomTensor(dt, k.x);
      const TensorPtr w = k.affine ? RandomTensor(dt, {c}, 0.5, 1.5) : TensorPtr();
      const TensorPtr b = k.affine ? RandomTensor(dt, {c}) : TensorPtr();
      const TensorPtr rm = RandomTensor(dt, {c}), rv = RandomTensor(dt, {c}, 0.5, 2.0);
      const std::vector<double> rm0 = ToDoubles(rm), rv0 = ToDoubles(rv);
      std::vector<TensorPtr> r =
          Apply(BatchNormOp(), {NonContiguous(x), w, b, rm, rv}, {{"training", false}, {"eps", 1e-5}});
      ExpectTensorNear(r[0], dt, k.x, Normalize(x, w, b, rm0, rv0, 1e-5), Tol(dt), Tol(dt));
      if (Canonical(k.x, MemoryFormat::kChannelsLast) == MemoryFormat::kChannelsLast) {
        const TensorPtr y =
            Apply(BatchNormOp(), {ChannelsLast(x), w, b, rm, rv}, {{"training", false}, {"eps", 1e-5}})[0];
        ExpectTensorNear(y, dt, k.x, Normalize(x, w, b, rm0, rv0, 1e-5), Tol(dt), Tol(dt));
      }
      ExpectTensorNear(r[1], dt, {c}, rm0, 0, 0);
      ExpectTensorNear(r[2], dt, {c}, rv0, 0, 0);
      ExpectTensorNear(rm, dt, {c}, rm0, 0, 0);
      ExpectTensorNear(rv, dt, {c}, rv0, 0, 0);
      {
        NoGradGuard no_grad;
        ExpectTensorNear(ops::BatchNorm(x, w, b, rm, rv, {.training = false}), dt, k.x,
                         Normalize(x, w, b, rm0, rv0, 1e-5), Tol(dt), Tol(dt));
      }
    }
  }
}

TEST(BatchNorm, BackwardOpMatchesFormula) {
  const OpDef& bwd = OpRegistry::Global().Get("batch_norm_backward");
  for (Symbol<DType> dt : kDTypes) {
    for (const BnCase& k : kCases) {
      for (bool training : {true, false}) {
        SCOPED_TRACE(fmt::format("{} x {} affine {} training {}", dt->name(), k.x, k.affine, training));
        const int64_t c = k.x[1].value();
        const double eps = 1e-4;
        const TensorPtr x = RandomTensor(dt, k.x), dy = RandomTensor(dt, k.x);
        const TensorPtr w = k.affine ? RandomTensor(dt, {c}, 0.5, 1.5) : TensorPtr();
        const Stats s = BatchStats(x);
        // In inference the saved statistics are running stats, unrelated to x.
        const TensorPtr mean = training ? FromDoubles(dt, {c}, s.mean) : RandomTensor(dt, {c});
        const TensorPtr var = training ? FromDoubles(dt, {c}, s.var) : RandomTensor(dt, {c}, 0.5, 2.0);
        const std::vector<double> xv = ToDoubles(x), dyv = ToDoubles(dy), mv = ToDoubles(mean), vv = ToDoubles(var);
        const std::vector<double> wv = w ? ToDoubles(w) : std::vector<double>(static_cast<size_t>(c), 1.0);
        std::vector<double> sum_dy(static_cast<size_t>(c), 0.0), sum_dy_xhat(static_cast<size_t>(c), 0.0);
        auto xhat = [&](int64_t i) {
          const size_t ch = static_cast<size_t>(ChannelOf(i, k.x));
          return (xv[static_cast<size_t>(i)] - mv[ch]) / std::sqrt(vv[ch] + eps);
        };
        for (int64_t i = 0; i < x->numel(); ++i) {
          const size_t ch = static_cast<size_t>(ChannelOf(i, k.x));
          sum_dy[ch] += dyv[static_cast<size_t>(i)];
          sum_dy_xhat[ch] += dyv[static_cast<size_t>(i)] * xhat(i);
        }
        const double m = static_cast<double>(s.count);
        std::vector<double> dx(xv.size());
        for (int64_t i = 0; i < x->numel(); ++i) {
          const size_t ch = static_cast<size_t>(ChannelOf(i, k.x));
          const double g = wv[ch] / std::sqrt(vv[ch] + eps);
          const double d = dyv[static_cast<size_t>(i)];
          dx[static_cast<size_t>(i)] = training ? g * (d - sum_dy[ch] / m - xhat(i) * sum_dy_xhat[ch] / m) : g * d;
        }
        std::vector<TensorPtr> r = Apply(bwd, {x, NonContiguous(dy), w, mean, var}, {{"training", training}, {"eps", eps}});
        ExpectTensorNear(r[0], dt, k.x, dx, Tol(dt), Tol(dt));
        ExpectTensorNear(r[1], dt, {c}, sum_dy_xhat, Tol(dt), Tol(dt));
        ExpectTensorNear(r[2], dt, {c}, sum_dy, Tol(dt), Tol(dt));
        if (Canonical(k.x, MemoryFormat::kChannelsLast) == MemoryFormat::kChannelsLast) {
          // Channels-last x, grad_y or both: grad_x is channels last.
          for (const auto& [xi, dyi] : {std::pair(ChannelsLast(x), dy), std::pair(x, ChannelsLast(dy)),
                                        std::pair(ChannelsLast(x), ChannelsLast(dy))}) {
            r = Apply(bwd, {xi, dyi, w, mean, var}, {{"training", training}, {"eps", eps}});
            ExpectTensorNear(r[0], dt, k.x, dx, Tol(dt), Tol(dt));
            EXPECT_EQ(r[0]->memory_format(),
                      dt != DType::Float64() ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous);
            ExpectTensorNear(r[1], dt, {c}, sum_dy_xhat, Tol(dt), Tol(dt));
            ExpectTensorNear(r[2], dt, {c}, sum_dy, Tol(dt), Tol(dt));
          }
        }
        MarkCovered("batch_norm_backward", dt);
      }
    }
  }
}

// Note [Batch norm's gradient in place]: each kernel (channels last, oneDNN's, the loops, half precision's)
// gives the same bits with grad_x written over grad_y or over x as into a buffer of its own.
TEST(BatchNorm, BackwardInPlaceOfGradYOrX) {
  const OpDef& bwd = OpRegistry::Global().Get("batch_norm_backward");
  for (Symbol<DType> dt : kDTypes) {
    for (const BnCase& k : kCases) {
      const int64_t c = k.x[1].value();
      const bool cl = Canonical(k.x, MemoryFormat::kChannelsLast) == MemoryFormat::kChannelsLast;
      for (const bool channels_last : {false, true}) {
        if (channels_last && !cl) continue;
        SCOPED_TRACE(fmt::format("{} x {} channels last {}", dt->name(), k.x, channels_last));
        auto laid_out = [&](const TensorPtr& t) { return channels_last ? ChannelsLast(t) : t; };
        const TensorPtr x = laid_out(RandomTensor(dt, k.x)), dy = laid_out(RandomTensor(dt, k.x));
        const TensorPtr w = k.affine ? RandomTensor(dt, {c}, 0.5, 1.5) : TensorPtr();
        const Stats s = BatchStats(x);
        const TensorPtr mean = FromDoubles(dt, {c}, s.mean), var = FromDoubles(dt, {c}, s.var);
        const Attrs attrs{{"training", true}, {"eps", 1e-4}};
        const std::vector<TensorPtr> want = Apply(bwd, {x, dy, w, mean, var}, attrs);
        const KernelDef* kernel = bwd.FindKernel(DeviceType::kCPU, dt);
        ASSERT_NE(kernel, nullptr);
        const MemoryFormat format = want[0]->memory_format();  // the call's (float64's is contiguous)
        // grad_x over x (0), over grad_y (1).
        for (const int over : {0, 1}) {
          const TensorPtr xi = CopyOf(x, nullptr, format), dyi = CopyOf(dy, nullptr, format);
          const std::vector<TensorPtr> inputs = {xi, dyi, w, mean, var};
          const std::vector<TensorPtr> outputs = {over == 0 ? xi : dyi, Empty(dt, Shape{c}, Device::CPU()),
                                                  Empty(dt, Shape{c}, Device::CPU())};
          KernelContext ctx{inputs, outputs, attrs, Session::Current().thread_pool(), Session::Current().generator(),
                            &bwd};
          kernel->fn(ctx);
          EXPECT_EQ(ToDoubles(outputs[0]), ToDoubles(want[0])) << "over input " << over;
          EXPECT_EQ(ToDoubles(outputs[1]), ToDoubles(want[1]));
          EXPECT_EQ(ToDoubles(outputs[2]), ToDoubles(want[2]));
        }
      }
    }
  }
}

// The channels-last kernels combine their chunks in a fixed order (Note [Chunks in groups]): the same bits
// at any thread count, forward and backward.
TEST(BatchNorm, ChannelsLastIsTheSameAtEveryThreadCount) {
  const auto f32 = DType::Float32();
  const OpDef& bwd = OpRegistry::Global().Get("batch_norm_backward");
  for (const Shape& shape : {Shape{4, 64, 21, 20}, Shape{2, 1024, 5, 7}}) {
    SCOPED_TRACE(fmt::format("{}", shape));
    const int64_t c = shape[1].value();
    const TensorPtr x = ChannelsLast(RandomTensor(f32, shape)), dy = ChannelsLast(RandomTensor(f32, shape));
    const TensorPtr w = RandomTensor(f32, {c}, 0.5, 1.5), b = RandomTensor(f32, {c});
    std::vector<std::vector<std::vector<double>>> results;
    for (int32_t threads : {1, 3, 8}) {
      const auto session = std::make_shared<Session>(SessionOptions{.num_threads = threads});
      SessionScope scope(*session);
      const std::vector<TensorPtr> fwd = Apply(BatchNormOp(), {x, w, b, nullptr, nullptr}, {{"training", true}});
      const std::vector<TensorPtr> grads = Apply(bwd, {x, dy, w, fwd[1], fwd[2]}, {{"training", true}, {"eps", 1e-5}});
      results.push_back({ToDoubles(fwd[0]), ToDoubles(fwd[1]), ToDoubles(fwd[2]), ToDoubles(grads[0]),
                         ToDoubles(grads[1]), ToDoubles(grads[2])});
    }
    for (size_t i = 1; i < results.size(); ++i) EXPECT_EQ(results[i], results[0]);
  }
}

// batch_norm's and batch_norm_add_relu's gradients by finite differences.
TEST(BatchNorm, Gradients) {
  auto leaf = [](const Shape& s, double lo = -2, double hi = 2) {
    TensorPtr t = RandomTensor(DType::Float64(), s, lo, hi);
    t->set_requires_grad(true);
    return t;
  };
  const auto f64 = DType::Float64();
  for (const Shape& shape : {Shape{3, 4, 3, 2}, Shape{5, 3}, Shape{2, 3, 4}}) {
    for (bool training : {true, false}) {
      SCOPED_TRACE(fmt::format("x {} training {}", shape, training));
      const int64_t c = shape[1].value();
      const TensorPtr rm = RandomTensor(f64, {c}), rv = RandomTensor(f64, {c}, 0.5, 2.0);
      const ops::BatchNormOptions o{.training = training, .momentum = 0.1, .eps = 1e-3};
      ExpectGradientsMatch(
          [&](const std::vector<TensorPtr>& t) { return ops::BatchNorm(t[0], t[1], t[2], rm, rv, o); },
          {leaf(shape), leaf({c}, 0.5, 1.5), leaf({c})});
      ExpectGradientsMatch(
          [&](const std::vector<TensorPtr>& t) { return ops::BatchNorm(t[0], nullptr, nullptr, rm, rv, o); },
          {leaf(shape)});
      // batch_norm_add_relu: x, weight, bias and the addend.
      ExpectGradientsMatch(
          [&](const std::vector<TensorPtr>& t) { return ops::BatchNormAddRelu(t[0], t[3], t[1], t[2], rm, rv, o); },
          {leaf(shape), leaf({c}, 0.5, 1.5), leaf({c}), leaf(shape)});
    }
  }
}


TEST(BatchNorm, Errors) {
  const auto f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {2, 3, 4, 4}), c3 = RandomTensor(f32, {3});
  ExpectError([&] { ops::BatchNorm(RandomTensor(f32, {3}), nullptr, nullptr, nullptr, nullptr, {}); },
              {"batch_norm: ", "at least 2 dims", "(3,)"});
  ExpectError([&] { ops::BatchNorm(x, RandomTensor(f32, {4}), nullptr, nullptr, nullptr, {}); },
              {"batch_norm: ", "weight", "(4,)", "(2, 3, 4, 4)"});
  ExpectError([&] { ops::BatchNorm(x, nullptr, nullptr, c3, RandomTensor(f32, {3, 1}), {}); },
              {"batch_norm: ", "running_var", "(3, 1)"});
  ExpectError([&] { ops::BatchNorm(x, nullptr, nullptr, c3, nullptr, {}); }, {"batch_norm: ", "together"});
  ExpectError([&] { ops::BatchNorm(x, nullptr, nullptr, nullptr, nullptr, {.training = false}); },
              {"batch_norm: ", "running_mean and running_var", "missing"});
  ExpectError([&] { ops::BatchNorm(RandomTensor(f32, {1, 3}), nullptr, nullptr, nullptr, nullptr, {}); },
              {"batch_norm: ", "more than 1 value per channel", "(1, 3)"});
  ExpectError([&] { ops::BatchNorm(x, RandomTensor(DType::Float64(), {3}), nullptr, nullptr, nullptr, {}); },
              {"batch_norm: ", "weight", "float64", "float32"});
  ExpectError([&] { ops::BatchNorm(x, nullptr, nullptr, nullptr, nullptr, {.eps = -1}); }, {"batch_norm: ", "eps"});
  // Running stats are written in place, so they must be contiguous.
  ExpectError([&] { ops::BatchNorm(x, nullptr, nullptr, NonContiguous(c3), c3, {}); },
              {"batch_norm: ", "running_mean", "in place"});
}

// eps must be finite and > 0 (the header's rule; 0 divides by zero for a constant channel), momentum a
// weight in [0, 1]: in eager calls, batch_norm_backward and at trace time in a graph.
TEST(BatchNorm, EpsAndMomentumOutOfRange) {
  const auto f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {2, 3, 4, 4});
  for (double eps : std::vector<double>{0.0, -0.0, -1e-5, NAN, INFINITY}) {
    SCOPED_TRACE(eps);
    ExpectError([&] { ops::BatchNorm(x, nullptr, nullptr, nullptr, nullptr, {.eps = eps}); },
                {"batch_norm: ", "eps must be finite and > 0"});
  }
  for (double momentum : std::vector<double>{-0.1, 1.5, NAN, -INFINITY}) {
    SCOPED_TRACE(momentum);
    ExpectError([&] { ops::BatchNorm(x, nullptr, nullptr, nullptr, nullptr, {.momentum = momentum}); },
                {"batch_norm: ", "momentum must be in [0, 1]"});
  }
  // The bounds themselves are fine: momentum 0 keeps the running stats, 1 replaces them.
  const TensorPtr rm = FromDoubles(f32, {3}, {1, 2, 3}), rv = FromDoubles(f32, {3}, {1, 1, 1});
  ops::BatchNorm(x, nullptr, nullptr, rm, rv, {.momentum = 0.0});
  ExpectTensorNear(rm, f32, {3}, {1, 2, 3}, 0, 0);
  ops::BatchNorm(x, nullptr, nullptr, rm, rv, {.momentum = 1.0});
  ExpectTensorNear(rm, f32, {3}, BatchStats(x).mean, Tol(f32), Tol(f32));
  const TensorPtr c3 = RandomTensor(f32, {3});
  ExpectError([&] {
    Apply(OpRegistry::Global().Get("batch_norm_backward"), {x, x, nullptr, c3, c3}, {{"training", true}, {"eps", 0.0}});
  }, {"batch_norm_backward: ", "eps must be finite and > 0", "got 0"});
  const auto session = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session);
  graph::Graph g(session, "bn", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr lazy = g.AddInput("x", f32, Shape{Dim(), 3, 4, 4});
  ExpectError([&] { ops::BatchNorm(lazy, nullptr, nullptr, nullptr, nullptr, {.eps = 0}); },
              {"batch_norm: ", "eps must be finite and > 0", "got 0"});
}

// An empty batch in training (PyTorch allows it): an empty y, zeros saved, running stats untouched; its
// backward gives zero weight and bias gradients. One value per channel stays an error.
TEST(BatchNorm, EmptyBatchInTraining) {
  const OpDef& bwd = OpRegistry::Global().Get("batch_norm_backward");
  for (Symbol<DType> dt : kDTypes) {
    for (const Shape& s : {Shape{0, 3, 4, 4}, Shape{2, 3, 0}, Shape{0, 3}}) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), s));
      const TensorPtr x = RandomTensor(dt, s), w = RandomTensor(dt, {3}), b = RandomTensor(dt, {3});
      const TensorPtr rm = FromDoubles(dt, {3}, {1, 2, 3}), rv = FromDoubles(dt, {3}, {4, 5, 6});
      std::vector<TensorPtr> r = Apply(BatchNormOp(), {x, w, b, rm, rv}, {{"training", true}});
      ExpectTensorNear(r[0], dt, s, {});
      ExpectTensorNear(r[1], dt, {3}, {0, 0, 0}, 0, 0);
      ExpectTensorNear(r[2], dt, {3}, {0, 0, 0}, 0, 0);
      ExpectTensorNear(rm, dt, {3}, {1, 2, 3}, 0, 0);
      ExpectTensorNear(rv, dt, {3}, {4, 5, 6}, 0, 0);
      r = Apply(bwd, {x, RandomTensor(dt, s), w, r[1], r[2]}, {{"training", true}});
      ExpectTensorNear(r[0], dt, s, {});
      ExpectTensorNear(r[1], dt, {3}, {0, 0, 0}, 0, 0);
      ExpectTensorNear(r[2], dt, {3}, {0, 0, 0}, 0, 0);
    }
    ExpectError([&] { ops::BatchNorm(RandomTensor(dt, {1, 3, 1, 1}), nullptr, nullptr, nullptr, nullptr, {}); },
                {"batch_norm: ", "more than 1 value per channel"});
  }
}

// One dtype rule (oneflow_c.h, ops "DTypes"): normalised integers would be fractions (INVALID_ARGUMENT);
// float16 is defined but has no kernel (UNIMPLEMENTED naming the op and the dtype).
TEST(BatchNorm, DTypes) {
  for (Symbol<DType> dt : {DType::Int32(), DType::Bool()}) {
    ExpectError([&] { ops::BatchNorm(RandomTensor(dt, {2, 3}), nullptr, nullptr, nullptr, nullptr, {}); },
                StatusCode::kInvalidArgument, {"batch_norm: ", "x must be floating", std::string(dt->name())});
  }
}

// The batch statistics of values far from 0 (mean 1000, spread 1): a variance from the sums of x and x^2
// in float32 would lose every digit; the channels-last kernels' chunked two-pass moments (and oneDNN's
// two passes) keep float32 accuracy. Several chunks, both layouts.
TEST(BatchNorm, VarianceOfValuesFarFromZero) {
  const auto f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {16, 8, 12, 12}, 999, 1001);
  const Stats s = BatchStats(x);
  for (const TensorPtr& xi : {x, ChannelsLast(x)}) {
    SCOPED_TRACE(MemoryFormatName(xi->memory_format()));
    std::vector<TensorPtr> r = Apply(BatchNormOp(), {xi, nullptr, nullptr, nullptr, nullptr}, {{"training", true}});
    ExpectTensorNear(r[1], f32, {8}, s.mean, 1e-6, 0);
    ExpectTensorNear(r[2], f32, {8}, s.var, 1e-3, 0);
    ExpectTensorNear(r[0], f32, x->shape(), Normalize(x, nullptr, nullptr, s.mean, s.var, 1e-5), 2e-3, 2e-3);
  }
}

// batch_norm_add_relu = relu(batch_norm(x) + addend): against the float64 formula, with and without the
// addend, training and inference, plain and channels-last (the fused kernels), the running stats updated
// as batch_norm's.
TEST(BatchNormAddRelu, MatchesFormula) {
  const OpDef& op = OpRegistry::Global().Get("batch_norm_add_relu");
  for (Symbol<DType> dt : kDTypes) {
    for (const BnCase& k : kCases) {
      for (const bool training : {true, false}) {
        for (const bool with_addend : {true, false}) {
          for (const bool channels_last : {false, true}) {
            if (channels_last && Canonical(k.x, MemoryFormat::kChannelsLast) != MemoryFormat::kChannelsLast) continue;
            SCOPED_TRACE(fmt::format("{} x {} training {} addend {} channels_last {}", dt->name(), k.x, training,
                                     with_addend, channels_last));
            const int64_t c = k.x[1].value();
            const TensorPtr x = RandomTensor(dt, k.x), addend = with_addend ? RandomTensor(dt, k.x) : TensorPtr();
            const TensorPtr w = k.affine ? RandomTensor(dt, {c}, 0.5, 1.5) : TensorPtr();
            const TensorPtr b = k.affine ? RandomTensor(dt, {c}) : TensorPtr();
            const TensorPtr rm = RandomTensor(dt, {c}), rv = RandomTensor(dt, {c}, 0.5, 2.0);
            const std::vector<double> rm0 = ToDoubles(rm), rv0 = ToDoubles(rv);
            const double momentum = 0.3, eps = 1e-3;
            const Stats s = BatchStats(x);
            std::vector<double> want =
                training ? Normalize(x, w, b, s.mean, s.var, eps) : Normalize(x, w, b, rm0, rv0, eps);
            const std::vector<double> av = with_addend ? ToDoubles(addend) : std::vector<double>();
            for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(0.0, want[i] + (with_addend ? av[i] : 0.0));
            const TensorPtr xi = channels_last ? ChannelsLast(x) : x;
            std::vector<TensorPtr> r =
                Apply(op, {xi, w, b, rm, rv, addend}, {{"training", training}, {"momentum", momentum}, {"eps", eps}});
            ExpectTensorNear(r[0], dt, k.x, want, Tol(dt), Tol(dt));
            if (training) {
              ExpectTensorNear(r[1], dt, {c}, s.mean, Tol(dt), Tol(dt));
              ExpectTensorNear(r[2], dt, {c}, s.var, Tol(dt), Tol(dt));
              std::vector<double> want_v(rv0.size());
              const double unbias = static_cast<double>(s.count) / static_cast<double>(s.count - 1);
              for (size_t i = 0; i < want_v.size(); ++i)
                want_v[i] = (1 - momentum) * rv0[i] + momentum * s.var[i] * unbias;
              ExpectTensorNear(rv, dt, {c}, want_v, Tol(dt), Tol(dt));
            } else {
              ExpectTensorNear(rv, dt, {c}, rv0, 0, 0);
            }
            MarkCovered("batch_norm_add_relu", dt);
          }
        }
      }
    }
  }
}

// Its gradients (finite differences: BatchNorm.Gradients) on the float32 channels-last kernel are those
// of batch_norm, add and relu.
// batch_norm_add_relu's y written over its addend (a graph's inplace_inputs): the same bits as into a
// buffer of its own, on each kernel (channels last, oneDNN's and the loops' composed with the add, half
// precision's).
TEST(BatchNormAddRelu, InPlaceOfTheAddend) {
  const OpDef& op = OpRegistry::Global().Get("batch_norm_add_relu");
  for (Symbol<DType> dt : kDTypes) {
    for (const BnCase& k : kCases) {
      for (const bool channels_last : {false, true}) {
        if (channels_last && Canonical(k.x, MemoryFormat::kChannelsLast) != MemoryFormat::kChannelsLast) continue;
        SCOPED_TRACE(fmt::format("{} x {} channels_last {}", dt->name(), k.x, channels_last));
        const int64_t c = k.x[1].value();
        auto laid_out = [&](const TensorPtr& t) { return channels_last ? ChannelsLast(t) : t; };
        const TensorPtr x = laid_out(RandomTensor(dt, k.x)), addend = laid_out(RandomTensor(dt, k.x));
        const TensorPtr w = k.affine ? RandomTensor(dt, {c}, 0.5, 1.5) : TensorPtr();
        const TensorPtr b = k.affine ? RandomTensor(dt, {c}) : TensorPtr();
        const TensorPtr rm = RandomTensor(dt, {c}), rv = RandomTensor(dt, {c}, 0.5, 2.0);
        const Attrs attrs{{"training", true}, {"momentum", 0.3}, {"eps", 1e-3}};
        const std::vector<TensorPtr> want =
            Apply(op, {x, w, b, CopyOf(rm, nullptr), CopyOf(rv, nullptr), addend}, attrs);
        const KernelDef* kernel = op.FindKernel(DeviceType::kCPU, dt);
        ASSERT_NE(kernel, nullptr);
        const MemoryFormat format = want[0]->memory_format();  // the call's (float64's is contiguous)
        const TensorPtr xi = CopyOf(x, nullptr, format), ai = CopyOf(addend, nullptr, format);
        const std::vector<TensorPtr> inputs = {xi, w, b, CopyOf(rm, nullptr), CopyOf(rv, nullptr), ai};
        const std::vector<TensorPtr> outputs = {ai, Empty(dt, Shape{c}, Device::CPU()),
                                                Empty(dt, Shape{c}, Device::CPU())};
        KernelContext ctx{inputs, outputs, attrs, Session::Current().thread_pool(), Session::Current().generator(),
                          &op};
        kernel->fn(ctx);
        EXPECT_EQ(ToDoubles(outputs[0]), ToDoubles(want[0]));
        EXPECT_EQ(ToDoubles(outputs[1]), ToDoubles(want[1]));
        EXPECT_EQ(ToDoubles(outputs[2]), ToDoubles(want[2]));
      }
    }
  }
}

// Note [Batch norm's ReLU gradient from x]: batch_norm_relu_backward gives the bits of relu_backward and then
// batch_norm_backward, on each kernel (channels last, where the mask comes from x; oneDNN's and the loops',
// where it comes from y; half precision's, the float32 one widened), into buffers of its own and with grad_x
// over grad_y or over x.
TEST(BatchNormReluBackward, TheBitsOfReluBackwardThenBatchNormBackward) {
  const OpDef& fwd = OpRegistry::Global().Get("batch_norm_add_relu");
  const OpDef& fused = OpRegistry::Global().Get("batch_norm_relu_backward");
  const OpDef& relu_bwd = OpRegistry::Global().Get("relu_backward");
  const OpDef& bn_bwd = OpRegistry::Global().Get("batch_norm_backward");
  for (Symbol<DType> dt : kDTypes) {
    for (const BnCase& k : kCases) {
      for (const bool training : {true, false}) {
        for (const bool channels_last : {false, true}) {
          if (channels_last && Canonical(k.x, MemoryFormat::kChannelsLast) != MemoryFormat::kChannelsLast) continue;
          SCOPED_TRACE(fmt::format("{} x {} training {} channels_last {}", dt->name(), k.x, training, channels_last));
          const int64_t c = k.x[1].value();
          auto laid_out = [&](const TensorPtr& t) { return channels_last ? ChannelsLast(t) : t; };
          const TensorPtr x = laid_out(RandomTensor(dt, k.x)), dy = laid_out(RandomTensor(dt, k.x));
          const TensorPtr w = k.affine ? RandomTensor(dt, {c}, 0.5, 1.5) : TensorPtr();
          const TensorPtr b = k.affine ? RandomTensor(dt, {c}) : TensorPtr();
          const TensorPtr rm = RandomTensor(dt, {c}), rv = RandomTensor(dt, {c}, 0.5, 2.0);
          const Attrs bn_attrs{{"training", training}, {"eps", 1e-3}};
          const std::vector<TensorPtr> f =
              Apply(fwd, {x, w, b, rm, rv, nullptr}, {{"training", training}, {"momentum", 0.3}, {"eps", 1e-3}});
          const std::vector<double> y = ToDoubles(f[0]);
          if (y.size() >= 100) {
            ASSERT_GT(std::count(y.begin(), y.end(), 0.0), 0);  // the ReLU cut some
          }
          std::vector<TensorPtr> want;
          if (dt == DType::Float32() || dt == DType::Float64()) {
            const TensorPtr g = Apply(relu_bwd, {dy, f[0]}, {})[0];
            want = Apply(bn_bwd, {x, g, w, f[1], f[2]}, bn_attrs);
          } else {  // the float32 kernel on the values widened, rounded (Note [Half precision in float32])
            const auto f32 = DType::Float32();
            auto wide = [&](const TensorPtr& t) {
              if (!t) return t;
              const TensorPtr v = FromDoubles(f32, t->shape(), ToDoubles(t));
              return t->ndim() == 4 ? laid_out(v) : v;
            };
            want = Apply(fused, {wide(x), wide(dy), wide(w), wide(f[1]), wide(f[2]), wide(b), wide(f[0])}, bn_attrs);
            for (TensorPtr& t : want) t = FromDoubles(dt, t->shape(), ToDoubles(t));
          }
          const std::vector<TensorPtr> got = Apply(fused, {x, dy, w, f[1], f[2], b, f[0]}, bn_attrs);
          for (size_t i = 0; i < 3; ++i) EXPECT_EQ(ToDoubles(got[i]), ToDoubles(want[i])) << "output " << i;
          EXPECT_EQ(got[0]->memory_format(),
                    channels_last && dt != DType::Float64() ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous);
          // grad_x over x (0), over grad_y (1), on the call's layout.
          const KernelDef* kernel = fused.FindKernel(DeviceType::kCPU, dt);
          ASSERT_NE(kernel, nullptr);
          const MemoryFormat format = got[0]->memory_format();  // the call's
          for (const int over : {0, 1}) {
            const TensorPtr xi = CopyOf(x, nullptr, format), dyi = CopyOf(dy, nullptr, format);
            const std::vector<TensorPtr> inputs = {xi, dyi, w, f[1], f[2], b, CopyOf(f[0], nullptr, format)};
            const std::vector<TensorPtr> outputs = {over == 0 ? xi : dyi, Empty(dt, Shape{c}, Device::CPU()),
                                                    Empty(dt, Shape{c}, Device::CPU())};
            KernelContext ctx{
                inputs, outputs, bn_attrs, Session::Current().thread_pool(), Session::Current().generator(), &fused};
            kernel->fn(ctx);
            for (size_t i = 0; i < 3; ++i) {
              EXPECT_EQ(ToDoubles(outputs[i]), ToDoubles(want[i])) << "output " << i << " over input " << over;
            }
          }
          MarkCovered("batch_norm_relu_backward", dt);
        }
      }
    }
  }
}

TEST(BatchNormReluBackward, Errors) {
  const auto f32 = DType::Float32();
  const OpDef& fused = OpRegistry::Global().Get("batch_norm_relu_backward");
  const TensorPtr x = RandomTensor(f32, {2, 3, 4, 4}), s = RandomTensor(f32, {3});
  ExpectError(
      [&] {
        Apply(fused, {x, x, s, s, s, RandomTensor(f32, {4}), x}, {});
      },
      {"batch_norm_relu_backward: ", "bias", "(4,)"});
  ExpectError(
      [&] {
        Apply(fused, {x, x, s, s, s, s, RandomTensor(f32, {2, 3, 4, 5})}, {});
      },
      {"batch_norm_relu_backward: ", "y", "(2, 3, 4, 5)", "must match x"});
  ExpectError(
      [&] {
        Apply(fused, {x, RandomTensor(DType::Float64(), {2, 3, 4, 4}), s, s, s, s, x}, {});
      },
      {"batch_norm_relu_backward: ", "grad_y", "float64"});
}

TEST(BatchNormAddRelu, GradientsAsTheThreeOps) {
  const auto f32 = DType::Float32();
  const Shape shape{4, 16, 5, 5};
  const TensorPtr x = ChannelsLast(RandomTensor(f32, shape)), w = RandomTensor(f32, {16}, 0.5, 1.5);
  const TensorPtr b = RandomTensor(f32, {16}), a = RandomTensor(f32, shape);
  for (const TensorPtr& t : {x, w, b, a}) t->set_requires_grad(true);
  const TensorPtr dy = RandomTensor(f32, shape);
  const auto grads = [&](const TensorPtr& y) {
    for (const TensorPtr& t : {x, w, b, a}) t->set_grad(nullptr);
    Backward({y}, {dy});
    return std::vector<TensorPtr>{x->grad(), w->grad(), b->grad(), a->grad()};
  };
  const std::vector<TensorPtr> fused = grads(ops::BatchNormAddRelu(x, a, w, b, nullptr, nullptr, {}));
  const std::vector<TensorPtr> split = grads(ops::Relu(ops::Add(ops::BatchNorm(x, w, b, nullptr, nullptr, {}), a)));
  for (size_t i = 0; i < fused.size(); ++i) {
    ASSERT_TRUE(fused[i] && split[i]);
    ExpectTensorNear(fused[i], f32, fused[i]->shape(), ToDoubles(split[i]), 1e-5, 1e-5);
  }
  // Without an addend its backward is batch_norm_relu_backward: the bits of relu's and batch_norm's.
  const std::vector<TensorPtr> fused_relu = grads(ops::BatchNormAddRelu(x, nullptr, w, b, nullptr, nullptr, {}));
  const std::vector<TensorPtr> split_relu = grads(ops::Relu(ops::BatchNorm(x, w, b, nullptr, nullptr, {})));
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(fused_relu[i] && split_relu[i]);
    EXPECT_EQ(ToDoubles(fused_relu[i]), ToDoubles(split_relu[i])) << "gradient " << i;
  }
}

TEST(BatchNormAddRelu, Errors) {
  const auto f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {2, 3, 4, 4});
  ExpectError(
      [&] {
        ops::BatchNormAddRelu(x, RandomTensor(f32, {2, 3, 4, 5}), nullptr, nullptr, nullptr, nullptr, {});
      },
      {"batch_norm_add_relu: ", "addend", "(2, 3, 4, 5)", "must match x", "(2, 3, 4, 4)"});
  ExpectError(
      [&] {
        ops::BatchNormAddRelu(x, RandomTensor(DType::Float64(), {2, 3, 4, 4}), nullptr, nullptr, nullptr, nullptr, {});
      },
      {"batch_norm_add_relu: ", "addend", "float64"});
  ExpectError([&] { ops::BatchNormAddRelu(x, nullptr, RandomTensor(f32, {4}), nullptr, nullptr, nullptr, {}); },
              {"batch_norm_add_relu: ", "weight", "(4,)"});
}

}  // namespace
}  // namespace oneflow::test
