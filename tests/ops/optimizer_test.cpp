// sgd_update and adam_update against float64 reference loops written here, over several steps, and
// against a few values computed by hand; their errors. The loss scaler's ops (Note [Loss scaling]):
// non_finite_check against std::isfinite, update_loss_scale against PyTorch's rule, and the updates'
// unscaling (exact for a power-of-two scale) and skipping.
#include <cmath>

#include "core/train/optimizer.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const Symbol<DType> kF32 = DType::Float32();
const Symbol<DType> kF64 = DType::Float64();

// PyTorch's SGD for one parameter, in float64, one element at a time.
struct SgdReference {
  SgdOptions o;
  std::vector<double> p = {}, buf = {};
  bool started = false;

  void Step(const std::vector<double>& g) {
    if (buf.empty()) buf.assign(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      double d = g[i];
      if (o.weight_decay != 0.0) d += o.weight_decay * p[i];
      if (o.momentum != 0.0) {
        buf[i] = started ? o.momentum * buf[i] + (1.0 - o.dampening) * d : d;
        d = o.nesterov ? d + o.momentum * buf[i] : buf[i];
      }
      p[i] -= o.lr * d;
    }
    started = true;
  }
};

// PyTorch's Adam / AdamW for one parameter, in float64.
struct AdamReference {
  AdamOptions o;
  std::vector<double> p = {}, m = {}, v = {};
  int t = 0;

  void Step(const std::vector<double>& g) {
    if (m.empty()) m.assign(p.size(), 0.0), v.assign(p.size(), 0.0);
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      double gi = g[i];
      if (o.decoupled_weight_decay) {
        p[i] *= 1.0 - o.lr * o.weight_decay;
      } else {
        gi += o.weight_decay * p[i];
      }
      m[i] = o.beta1 * m[i] + (1.0 - o.beta1) * gi;
      v[i] = o.beta2 * v[i] + (1.0 - o.beta2) * gi * gi;
      const double m_hat = m[i] / (1.0 - std::pow(o.beta1, t));
      const double v_hat = v[i] / (1.0 - std::pow(o.beta2, t));
      p[i] -= o.lr * m_hat / (std::sqrt(v_hat) + o.eps);
    }
  }
};

TEST(SgdUpdate, MatchesReferenceOverSeveralSteps) {
  const SgdOptions configs[] = {
      {.lr = 0.1},
      {.lr = 0.05, .momentum = 0.9},
      {.lr = 0.05, .momentum = 0.8, .dampening = 0.3},
      {.lr = 0.02, .momentum = 0.9, .nesterov = true},
      {.lr = 0.1, .weight_decay = 0.01},
      {.lr = 0.03, .momentum = 0.7, .dampening = 0.1, .weight_decay = 0.05},
      {.lr = 0.03, .momentum = 0.9, .weight_decay = 0.2, .nesterov = true},
  };
  for (Symbol<DType> dtype : FloatingDTypes()) {
    for (const SgdOptions& o : configs) {
      const Shape shape{3, 7};  // odd sizes
      TensorPtr param = RandomTensor(dtype, shape);
      SgdReference ref{.o = o, .p = ToDoubles(param)};
      TensorPtr buf = o.momentum != 0.0 ? FromDoubles(dtype, shape, std::vector<double>(21, 123.0)) : TensorPtr();
      for (int step = 0; step < 4; ++step) {
        TensorPtr grad = RandomTensor(dtype, shape);
        ref.Step(ToDoubles(grad));
        // The grad as a strided view on odd steps: it is not written, so any layout goes.
        ops::SgdUpdate(param, step % 2 ? NonContiguous(grad) : grad, buf, o, step == 0);
        ExpectTensorNear(param, dtype, shape, ref.p, RtolFor(dtype), RtolFor(dtype));
        if (buf) ExpectTensorNear(buf, dtype, shape, ref.buf, RtolFor(dtype), RtolFor(dtype));
        // Half precision rounds the state each step: the reference goes on from the rounded state.
        ref.p = ToDoubles(param);
        if (buf) ref.buf = ToDoubles(buf);
      }
    }
    MarkCovered("sgd_update", dtype);
  }
}

TEST(SgdUpdate, LargeParameterRunsInParallelChunks) {
  const Shape shape{300001};
  const SgdOptions o{.lr = 0.5, .momentum = 0.5, .weight_decay = 0.1};
  TensorPtr param = RandomTensor(kF64, shape);
  TensorPtr grad = RandomTensor(kF64, shape);
  TensorPtr buf = Empty(kF64, shape, Device::CPU());
  SgdReference ref{.o = o, .p = ToDoubles(param)};
  ref.Step(ToDoubles(grad));
  ops::SgdUpdate(param, grad, buf, o, true);
  ExpectTensorNear(param, kF64, shape, ref.p, 1e-12, 1e-12);
}

TEST(SgdUpdate, HandComputedSteps) {
  // p = 1, g = 0.5 each step, lr 0.1, momentum 0.9, nesterov, weight_decay 0.1:
  //   step 1: d = 0.5 + 0.1 = 0.6; buf = 0.6; d = 0.6 + 0.54 = 1.14; p = 1 - 0.114 = 0.886
  //   step 2: d = 0.5 + 0.0886 = 0.5886; buf = 0.54 + 0.5886 = 1.1286; d = 0.5886 + 1.01574 = 1.60434;
  //           p = 0.886 - 0.160434 = 0.725566
  const SgdOptions o{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1, .nesterov = true};
  TensorPtr p = FromDoubles(kF64, Shape{1}, {1.0});
  TensorPtr g = FromDoubles(kF64, Shape{1}, {0.5});
  TensorPtr buf = Empty(kF64, Shape{1}, Device::CPU());
  ops::SgdUpdate(p, g, buf, o, true);
  ExpectTensorNear(p, kF64, Shape{1}, {0.886}, 1e-14, 1e-14);
  ExpectTensorNear(buf, kF64, Shape{1}, {0.6}, 1e-14, 1e-14);
  ops::SgdUpdate(p, g, buf, o, false);
  ExpectTensorNear(p, kF64, Shape{1}, {0.725566}, 1e-14, 1e-14);
  ExpectTensorNear(buf, kF64, Shape{1}, {1.1286}, 1e-14, 1e-14);

  // Dampening 0.5 without nesterov: the first step's buffer is d itself (PyTorch), later ones damp.
  //   step 1: buf = 0.5, p = 1 - 0.05 = 0.95; step 2: buf = 0.45 + 0.25 = 0.7, p = 0.95 - 0.07 = 0.88
  const SgdOptions damp{.lr = 0.1, .momentum = 0.9, .dampening = 0.5};
  p = FromDoubles(kF64, Shape{1}, {1.0});
  ops::SgdUpdate(p, g, buf, damp, true);
  ExpectTensorNear(p, kF64, Shape{1}, {0.95}, 1e-14, 1e-14);
  ops::SgdUpdate(p, g, buf, damp, false);
  ExpectTensorNear(p, kF64, Shape{1}, {0.88}, 1e-14, 1e-14);
}

TEST(AdamUpdate, MatchesReferenceOverSeveralSteps) {
  const AdamOptions configs[] = {
      {.lr = 0.01},
      {.lr = 0.05, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-6},
      {.lr = 0.01, .weight_decay = 0.1},
      {.lr = 0.01, .weight_decay = 0.1, .decoupled_weight_decay = true},
      {.lr = 0.02, .beta1 = 0.0, .beta2 = 0.5, .eps = 0.1, .weight_decay = 0.3, .decoupled_weight_decay = true},
  };
  for (Symbol<DType> dtype : FloatingDTypes()) {
    for (const AdamOptions& o : configs) {
      const Shape shape{5, 3};
      TensorPtr param = RandomTensor(dtype, shape);
      AdamReference ref{.o = o, .p = ToDoubles(param)};
      TensorPtr m = FromDoubles(dtype, shape, std::vector<double>(15, 0.0));
      TensorPtr v = FromDoubles(dtype, shape, std::vector<double>(15, 0.0));
      TensorPtr step = FromDoubles(DType::Int64(), Shape{}, {0.0});
      for (int s = 1; s <= 5; ++s) {
        TensorPtr grad = RandomTensor(dtype, shape);
        ref.Step(ToDoubles(grad));
        ops::AdamUpdate(param, s % 2 ? NonContiguous(grad) : grad, m, v, step, o);
        const double tol = TolFor(dtype, 1e-5, 1e-12);
        ExpectTensorNear(param, dtype, shape, ref.p, tol, tol);
        ExpectTensorNear(m, dtype, shape, ref.m, tol, tol);
        ExpectTensorNear(v, dtype, shape, ref.v, tol, tol);
        ExpectTensorNear(step, DType::Int64(), Shape{}, {static_cast<double>(s)}, 0, 0);
        // Half precision rounds the state each step: the reference goes on from the rounded state.
        ref.p = ToDoubles(param);
        ref.m = ToDoubles(m);
        ref.v = ToDoubles(v);
      }
    }
    MarkCovered("adam_update", dtype);
  }
}

TEST(AdamUpdate, HandComputedFirstStepAndAdamWDifference) {
  // First step: m_hat = g and v_hat = g^2, so the update is lr * g / (|g| + eps) ~ lr * sign(g).
  // p = 2, g = 0.5, lr 0.1, eps 0:
  //   Adam, weight_decay 0.5:  g' = 0.5 + 1 = 1.5, p = 2 - 0.1 * 1.5 / 1.5 = 1.9
  //   AdamW, weight_decay 0.5: p = 2 * (1 - 0.05) = 1.9, then - 0.1 * 0.5 / 0.5 = 1.8
  for (bool decoupled : {false, true}) {
    const AdamOptions o{.lr = 0.1, .eps = 0.0, .weight_decay = 0.5, .decoupled_weight_decay = decoupled};
    TensorPtr p = FromDoubles(kF64, Shape{1}, {2.0});
    TensorPtr g = FromDoubles(kF64, Shape{1}, {0.5});
    TensorPtr m = FromDoubles(kF64, Shape{1}, {0.0});
    TensorPtr v = FromDoubles(kF64, Shape{1}, {0.0});
    TensorPtr step = FromDoubles(DType::Int64(), Shape{}, {0.0});
    ops::AdamUpdate(p, g, m, v, step, o);
    ExpectTensorNear(p, kF64, Shape{1}, {decoupled ? 1.8 : 1.9}, 1e-14, 1e-14);
    ExpectTensorNear(m, kF64, Shape{1}, {0.1 * (decoupled ? 0.5 : 1.5)}, 1e-14, 1e-14);
  }
  // A constant gradient keeps m_hat = g and v_hat = g^2 at every step (bias correction exactly undoes
  // the warm-up), so each Adam step without decay moves p by lr: 2 -> 1.9 -> 1.8 -> 1.7.
  // (Step 2: m = 0.9 * 0.05 + 0.05 = 0.095, m_hat = 0.095 / 0.19 = 0.5; v = 0.999 * 0.00025 + 0.00025
  // = 0.00049975, v_hat = 0.00049975 / 0.001999 = 0.25.)
  const AdamOptions o{.lr = 0.1, .eps = 0.0};
  TensorPtr p = FromDoubles(kF64, Shape{1}, {2.0});
  TensorPtr g = FromDoubles(kF64, Shape{1}, {0.5});
  TensorPtr m = FromDoubles(kF64, Shape{1}, {0.0});
  TensorPtr v = FromDoubles(kF64, Shape{1}, {0.0});
  TensorPtr step = FromDoubles(DType::Int64(), Shape{}, {0.0});
  for (double expected : {1.9, 1.8, 1.7}) {
    ops::AdamUpdate(p, g, m, v, step, o);
    ExpectTensorNear(p, kF64, Shape{1}, {expected}, 1e-12, 1e-12);
  }
  ExpectTensorNear(m, kF64, Shape{1}, {0.5 * (1 - 0.9 * 0.9 * 0.9)}, 1e-14, 1e-14);
}


TEST(SgdUpdate, Errors) {
  TensorPtr p = RandomTensor(kF32, Shape{2, 3});
  TensorPtr g = RandomTensor(kF32, Shape{2, 3});
  TensorPtr buf = RandomTensor(kF32, Shape{2, 3});
  const std::vector<double> before = ToDoubles(p);
  const SgdOptions plain{.lr = 0.1};
  const SgdOptions momentum{.lr = 0.1, .momentum = 0.9};
  const auto invalid = StatusCode::kInvalidArgument;
  ExpectError([&] { ops::SgdUpdate(p, RandomTensor(kF32, Shape{3, 2}), nullptr, plain, false); }, invalid,
              {"sgd_update", "grad", "(2, 3)", "(3, 2)"});
  ExpectError([&] { ops::SgdUpdate(p, RandomTensor(kF64, Shape{2, 3}), nullptr, plain, false); }, invalid,
              {"sgd_update", "grad", "float32", "float64"});
  ExpectError([&] { ops::SgdUpdate(p, g, nullptr, momentum, false); }, invalid, {"momentum_buffer", "required"});
  ExpectError([&] { ops::SgdUpdate(p, g, RandomTensor(kF32, Shape{6}), momentum, false); }, invalid,
              {"momentum_buffer", "(6,)"});
  ExpectError([&] { ops::SgdUpdate(p, nullptr, nullptr, plain, false); }, invalid, {"grad", "null"});
  ExpectError([&] { ops::SgdUpdate(p, g, nullptr, SgdOptions{.lr = -1.0}, false); }, invalid, {"lr", "-1"});
  ExpectError([&] { ops::SgdUpdate(p, g, buf, SgdOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}, false); },
              invalid, {"nesterov", "dampening"});
  ExpectError([&] { ops::SgdUpdate(p, g, nullptr, SgdOptions{.lr = 0.1, .weight_decay = NAN}, false); }, invalid,
              {"weight_decay"});
  ExpectError([&] { ops::SgdUpdate(RandomTensor(DType::Int32(), Shape{2}), RandomTensor(DType::Int32(), Shape{2}), nullptr, plain, false); },
              invalid, {"param", "int32"});
  // Parameters are written in place, so a strided one cannot be updated through a copy.
  ExpectError([&] { ops::SgdUpdate(NonContiguous(p), g, nullptr, plain, false); }, invalid, {"param", "contiguous"});
  EXPECT_EQ(ToDoubles(p), before);  // the failed calls wrote nothing
}

TEST(AdamUpdate, Errors) {
  const Shape shape{4};
  TensorPtr p = RandomTensor(kF64, shape);
  TensorPtr g = RandomTensor(kF64, shape);
  TensorPtr m = RandomTensor(kF64, shape);
  TensorPtr v = RandomTensor(kF64, shape);
  TensorPtr step = FromDoubles(DType::Int64(), Shape{}, {0.0});
  const AdamOptions o{.lr = 0.1};
  const auto invalid = StatusCode::kInvalidArgument;
  ExpectError([&] { ops::AdamUpdate(p, g, RandomTensor(kF64, Shape{5}), v, step, o); }, invalid,
              {"adam_update", "exp_avg", "(5,)"});
  ExpectError([&] { ops::AdamUpdate(p, g, m, RandomTensor(kF32, shape), step, o); }, invalid,
              {"exp_avg_sq", "float32"});
  ExpectError([&] { ops::AdamUpdate(p, g, m, v, FromDoubles(kF64, Shape{}, {0.0}), o); }, invalid, {"step", "int64"});
  ExpectError([&] { ops::AdamUpdate(p, g, m, v, FromDoubles(DType::Int64(), Shape{1}, {0.0}), o); }, invalid,
              {"step", "0-d"});
  ExpectError([&] { ops::AdamUpdate(p, g, m, v, step, AdamOptions{.lr = 0.1, .beta1 = 1.0}); }, invalid, {"beta1"});
  ExpectError([&] { ops::AdamUpdate(p, g, m, v, step, AdamOptions{.lr = 0.1, .beta2 = -0.5}); }, invalid, {"beta2"});
  ExpectError([&] { ops::AdamUpdate(p, g, m, v, step, AdamOptions{.lr = 0.1, .eps = -1.0}); }, invalid, {"eps"});
  ExpectError([&] { ops::AdamUpdate(p, g, m, v, step, AdamOptions{.lr = INFINITY}); }, invalid, {"lr"});
  ExpectTensorNear(step, DType::Int64(), Shape{}, {0.0}, 0, 0);  // failed calls took no step
}

// ---- loss scaling ---------------------------------------------------------------------------------

LossScaleState ScalerState(double scale, double found_inf = 0.0) {
  return LossScaleState{.scale = FromDoubles(kF32, Shape{}, {scale}),
                        .growth_tracker = FromDoubles(DType::Int64(), Shape{}, {0.0}),
                        .found_inf = FromDoubles(kF32, Shape{}, {found_inf}),
                        .skipped_steps = FromDoubles(DType::Int64(), Shape{}, {0.0})};
}

double Scalar(const TensorPtr& t) { return ToDoubles(t)[0]; }

bool AnyNonFiniteRef(const std::vector<TensorPtr>& grads) {
  for (const TensorPtr& g : grads) {
    for (double v : ToDoubles(g)) {
      if (!std::isfinite(v)) return true;
    }
  }
  return false;
}

TEST(NonFiniteCheck, FindsInfAndNanInEveryFloatingDType) {
  for (Symbol<DType> dtype : FloatingDTypes()) {
    SCOPED_TRACE(std::string(dtype->name()));
    const LossScaleState state = ScalerState(1.0, 7.0);  // found_inf starts as garbage: it is overwritten
    auto check = [&](const std::vector<TensorPtr>& grads) {
      ops::NonFiniteCheck(state, grads);
      EXPECT_EQ(Scalar(state.found_inf), AnyNonFiniteRef(grads) ? 1.0 : 0.0);
      return Scalar(state.found_inf);
    };
    const TensorPtr a = RandomTensor(dtype, Shape{5, 7}), b = RandomTensor(dtype, Shape{3});
    EXPECT_EQ(check({a, b}), 0.0);
    // The largest finite value is finite; +-inf and NaN anywhere in any gradient are not.
    const double largest = dtype == DType::Float16()    ? 65504.0
                           : dtype == DType::BFloat16() ? 3.3895313892515355e38
                           : dtype == kF32              ? 3.4028234663852886e38
                                                        : 1.7976931348623157e308;
    EXPECT_EQ(check({a, FromDoubles(dtype, Shape{3}, {largest, -largest, 0.0})}), 0.0);
    for (double bad : {INFINITY, -INFINITY, NAN}) {
      for (size_t at : {size_t{0}, size_t{17}, size_t{34}}) {
        std::vector<double> v = ToDoubles(a);
        v[at] = bad;
        EXPECT_EQ(check({b, FromDoubles(dtype, Shape{5, 7}, v)}), 1.0) << bad << " at " << at;
      }
    }
    // A strided gradient, and one large enough to be checked in parallel chunks (NaN in the last one).
    std::vector<double> v = ToDoubles(a);
    v[33] = NAN;
    EXPECT_EQ(check({NonContiguous(FromDoubles(dtype, Shape{5, 7}, v))}), 1.0);
    std::vector<double> big(300001, 0.5);
    EXPECT_EQ(check({FromDoubles(dtype, Shape{300001}, big)}), 0.0);
    big.back() = -INFINITY;
    EXPECT_EQ(check({FromDoubles(dtype, Shape{300001}, big)}), 1.0);
    // Gradients of several dtypes in one check (float32 master weights beside a half one).
    EXPECT_EQ(check({RandomTensor(kF64, Shape{4}), FromDoubles(dtype, Shape{2}, {1.0, INFINITY})}), 1.0);
    EXPECT_EQ(check({a, RandomTensor(kF64, Shape{4})}), 0.0);
    MarkCovered("non_finite_check", dtype);
  }
}

// PyTorch's _amp_update_scale_, in double.
struct ScalerReference {
  LossScaleOptions o;
  double scale = o.init_scale;
  int64_t tracker = 0, skipped = 0;
  void Update(bool found_inf) {
    if (found_inf) {
      scale *= o.backoff_factor;
      tracker = 0;
      ++skipped;
    } else if (++tracker == o.growth_interval) {
      if (std::isfinite(static_cast<float>(scale * o.growth_factor))) scale *= o.growth_factor;
      tracker = 0;
    }
  }
};

TEST(UpdateLossScale, FollowsPyTorchsRuleOverASequence) {
  for (const LossScaleOptions& o :
       {LossScaleOptions{.init_scale = 1024.0, .growth_interval = 3},
        LossScaleOptions{.init_scale = 8.0, .growth_factor = 3.0, .backoff_factor = 0.25, .growth_interval = 1},
        LossScaleOptions{.init_scale = 3e38, .growth_interval = 2}}) {
    const LossScaleState state = ScalerState(o.init_scale);
    ScalerReference ref{.o = o};
    int step = 0;
    for (bool found : {false, false, false, true, false, false, false, false, true, true, false, false, false}) {
      state.found_inf->data<float>()[0] = found ? 1.0f : 0.0f;
      ops::UpdateLossScale(state, o);
      ref.Update(found);
      SCOPED_TRACE("step " + std::to_string(step++));
      EXPECT_EQ(Scalar(state.scale), static_cast<double>(static_cast<float>(ref.scale)));
      EXPECT_EQ(Scalar(state.growth_tracker), static_cast<double>(ref.tracker));
      EXPECT_EQ(Scalar(state.skipped_steps), static_cast<double>(ref.skipped));
      EXPECT_TRUE(std::isfinite(Scalar(state.scale)));  // growth past float32's range is not taken
    }
  }
  MarkCovered("update_loss_scale", kF32);
}

TEST(UpdateLossScale, Errors) {
  const LossScaleState s = ScalerState(4.0);
  const auto invalid = StatusCode::kInvalidArgument;
  ExpectError([&] { ops::UpdateLossScale(s, LossScaleOptions{.growth_factor = 1.0}); }, invalid, {"growth_factor"});
  ExpectError([&] { ops::UpdateLossScale(s, LossScaleOptions{.backoff_factor = 1.0}); }, invalid, {"backoff_factor"});
  ExpectError([&] { ops::UpdateLossScale(s, LossScaleOptions{.growth_interval = 0}); }, invalid, {"growth_interval"});
  LossScaleState bad = s;
  bad.growth_tracker = FromDoubles(kF32, Shape{}, {0.0});
  ExpectError([&] { ops::UpdateLossScale(bad, LossScaleOptions{}); }, invalid, {"growth_tracker", "int64", "float32"});
  bad = s;
  bad.scale = FromDoubles(kF32, Shape{1}, {4.0});
  ExpectError([&] { ops::UpdateLossScale(bad, LossScaleOptions{}); }, invalid, {"scale", "0-d", "(1,)"});
  EXPECT_EQ(Scalar(s.scale), 4.0);  // the failed calls wrote nothing
  ExpectError([&] { ops::NonFiniteCheck(s, {RandomTensor(DType::Int32(), Shape{2})}); }, invalid,
              {"non_finite_check", "grads[0]", "int32"});
  ExpectError([&] { ops::NonFiniteCheck(s, {}); }, invalid, {"at least one"});
}

// A step on grad * 2^k with scale 2^k equals the step on grad, bit for bit (dividing by a power of two
// is exact); with found_inf set, nothing is written.
TEST(LossScaledUpdates, UnscaleExactlyAndSkipOnInf) {
  for (Symbol<DType> dtype : FloatingDTypes()) {
    SCOPED_TRACE(std::string(dtype->name()));
    const double scale = 1024.0;
    const Shape shape{4, 5};
    const TensorPtr grad = RandomTensor(dtype, shape, -1.0, 1.0);
    const TensorPtr scaled = FromDoubles(dtype, shape, [&] {
      std::vector<double> v = ToDoubles(grad);
      for (double& x : v) x *= scale;
      return v;
    }());
    const LossScaleState clean = ScalerState(scale), inf = ScalerState(scale, 1.0);
    const SgdOptions sgd{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01};
    const TensorPtr p0 = RandomTensor(dtype, shape), b0 = RandomTensor(dtype, shape);
    TensorPtr p = FromDoubles(dtype, shape, ToDoubles(p0)), b = FromDoubles(dtype, shape, ToDoubles(b0));
    TensorPtr q = FromDoubles(dtype, shape, ToDoubles(p0)), c = FromDoubles(dtype, shape, ToDoubles(b0));
    ops::SgdUpdate(p, grad, b, sgd, false);
    ops::SgdUpdate(q, scaled, c, sgd, false, &clean);
    EXPECT_EQ(ToDoubles(q), ToDoubles(p));
    EXPECT_EQ(ToDoubles(c), ToDoubles(b));
    ops::SgdUpdate(q, scaled, c, sgd, false, &inf);
    EXPECT_EQ(ToDoubles(q), ToDoubles(p));  // skipped
    EXPECT_EQ(ToDoubles(c), ToDoubles(b));

    const AdamOptions adam{.lr = 0.01, .weight_decay = 0.1, .decoupled_weight_decay = true};
    TensorPtr m = FromDoubles(dtype, shape, std::vector<double>(20, 0.0)),
              v = FromDoubles(dtype, shape, std::vector<double>(20, 0.0));
    TensorPtr m2 = FromDoubles(dtype, shape, std::vector<double>(20, 0.0)),
              v2 = FromDoubles(dtype, shape, std::vector<double>(20, 0.0));
    TensorPtr t = FromDoubles(DType::Int64(), Shape{}, {0.0}), t2 = FromDoubles(DType::Int64(), Shape{}, {0.0});
    ops::AdamUpdate(p, grad, m, v, t, adam);
    ops::AdamUpdate(q, scaled, m2, v2, t2, adam, &clean);
    EXPECT_EQ(ToDoubles(q), ToDoubles(p));
    EXPECT_EQ(ToDoubles(v2), ToDoubles(v));
    ops::AdamUpdate(q, scaled, m2, v2, t2, adam, &inf);
    EXPECT_EQ(ToDoubles(q), ToDoubles(p));  // skipped: the step count does not advance either
    EXPECT_EQ(ToDoubles(m2), ToDoubles(m));
    EXPECT_EQ(Scalar(t2), 1.0);
  }
}

TEST(LossScaledUpdates, Errors) {
  TensorPtr p = RandomTensor(kF32, Shape{3});
  TensorPtr g = RandomTensor(kF32, Shape{3});
  LossScaleState s = ScalerState(2.0);
  s.found_inf = FromDoubles(kF64, Shape{}, {0.0});
  const auto invalid = StatusCode::kInvalidArgument;
  ExpectError([&] { ops::SgdUpdate(p, g, nullptr, SgdOptions{.lr = 0.1}, false, &s); }, invalid,
              {"sgd_update", "found_inf", "float32", "float64"});
  s = ScalerState(2.0);
  s.scale = FromDoubles(kF32, Shape{2}, {2.0, 2.0});
  ExpectError([&] { ops::SgdUpdate(p, g, nullptr, SgdOptions{.lr = 0.1}, false, &s); }, invalid, {"scale", "0-d"});
}

TEST(OptimizerOps, AreNotRecordedByAutogradAndKeepLeaves) {
  TensorPtr p = RandomTensor(kF64, Shape{3});
  p->set_requires_grad(true);
  ops::SgdUpdate(p, RandomTensor(kF64, Shape{3}), nullptr, SgdOptions{.lr = 0.1}, false);
  EXPECT_TRUE(p->is_leaf());
  EXPECT_TRUE(p->requires_grad());
  for (const char* name : {"sgd_update", "adam_update", "non_finite_check", "update_loss_scale"}) {
    const OpDef& op = OpRegistry::Global().Get(name);
    EXPECT_EQ(op.backward, nullptr) << name;
    EXPECT_TRUE(op.outputs.empty()) << name;
    EXPECT_FALSE(op.mutated_inputs.empty()) << name;
  }
}

}  // namespace
}  // namespace oneflow::test
