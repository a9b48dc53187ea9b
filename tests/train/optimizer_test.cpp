// The optimizer classes: steps against hand-computed values, parameters without grads, zero_grad,
// the learning rate, per-parameter state, construction and step errors, and a small training loop
// through autograd; dynamic loss scaling (Note [Loss scaling]).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/ops/op_test_util.h"
#include "core/autograd/autograd.h"
#include "core/ops/ops.h"
#include "core/session/session.h"
#include "core/tensor/factory.h"
#include "core/train/optimizer.h"

namespace oneflow {
namespace {

const Symbol<DType> kF64 = DType::Float64();

TensorPtr Vec(const std::vector<double>& v, Symbol<DType> dtype = kF64) {
  TensorPtr t = Empty(dtype, Shape{static_cast<int64_t>(v.size())}, Device::CPU());
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      for (size_t i = 0; i < v.size(); ++i) t->data<T>()[i] = static_cast<T>(v[i]);
    }
  });
  return t;
}

std::vector<double> Values(const TensorPtr& t) {
  std::vector<double> out(static_cast<size_t>(t->numel()));
  VisitDType(t->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(t->data<T>()[i]);
  });
  return out;
}

void ExpectNear(const TensorPtr& t, const std::vector<double>& expected, double tol = 1e-12) {
  const std::vector<double> got = Values(t);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

TensorPtr Param(const std::vector<double>& v) {
  TensorPtr p = Vec(v);
  p->set_requires_grad(true);
  return p;
}

using ::oneflow::test::ExpectError;

TEST(SGD, MomentumStepsByHand) {
  // lr 0.1, momentum 0.9. Gradients [0.5, -1], [0.25, 0.5], [0, 1]:
  //   step 1: buf = g = [0.5, -1];              p = [1, -2] - 0.1 buf = [0.95, -1.9]
  //   step 2: buf = 0.9 buf + g = [0.7, -0.4];  p = [0.88, -1.86]
  //   step 3: buf = [0.63, 0.64];               p = [0.817, -1.924]
  TensorPtr p = Param({1.0, -2.0});
  SGD sgd({p}, {.lr = 0.1, .momentum = 0.9});
  const std::vector<std::vector<double>> grads = {{0.5, -1.0}, {0.25, 0.5}, {0.0, 1.0}};
  const std::vector<std::vector<double>> want = {{0.95, -1.9}, {0.88, -1.86}, {0.817, -1.924}};
  const std::vector<std::vector<double>> want_buf = {{0.5, -1.0}, {0.7, -0.4}, {0.63, 0.64}};
  for (size_t s = 0; s < grads.size(); ++s) {
    p->set_grad(Vec(grads[s]));
    sgd.Step();
    ExpectNear(p, want[s]);
    ExpectNear(sgd.momentum_buffer(0), want_buf[s]);
  }
  EXPECT_TRUE(p->is_leaf());
  EXPECT_TRUE(p->requires_grad());
}

TEST(SGD, WeightDecayAndLearningRateChanges) {
  // lr 0.5, weight_decay 0.1, no momentum: p -= 0.5 * (g + 0.1 p). p = 2, g = 1: 2 - 0.5 * 1.2 = 1.4.
  TensorPtr p = Param({2.0});
  SGD sgd({p}, {.lr = 0.5, .weight_decay = 0.1});
  EXPECT_EQ(sgd.lr(), 0.5);
  p->set_grad(Vec({1.0}));
  sgd.Step();
  ExpectNear(p, {1.4});
  EXPECT_FALSE(sgd.momentum_buffer(0));  // no momentum, no buffer
  // lr 0.25: 1.4 - 0.25 * (1 + 0.14) = 1.115; lr 0 leaves p alone.
  sgd.set_lr(0.25);
  EXPECT_EQ(sgd.lr(), 0.25);
  sgd.Step();
  ExpectNear(p, {1.115});
  sgd.set_lr(0.0);
  sgd.Step();
  ExpectNear(p, {1.115});
  ExpectError([&] { sgd.set_lr(-0.1); }, {"lr", "-0.1"});
  ExpectError([&] { sgd.set_lr(NAN); }, {"lr"});
  EXPECT_EQ(sgd.lr(), 0.0);
}

TEST(SGD, SkipsParametersWithoutGradAndZeroGradClears) {
  TensorPtr a = Param({1.0});
  TensorPtr b = Param({1.0});
  SGD sgd({a, b}, {.lr = 0.1, .momentum = 0.5, .dampening = 0.5});
  a->set_grad(Vec({1.0}));
  sgd.Step();
  ExpectNear(a, {0.9});
  ExpectNear(b, {1.0});
  EXPECT_FALSE(sgd.momentum_buffer(1));  // b's state is created on its own first step
  // b's first step sets its buffer to g (no dampening yet); a's second step damps: buf = 0.5 + 0.5 * 1.
  b->set_grad(Vec({1.0}));
  sgd.Step();
  ExpectNear(b, {0.9});
  ExpectNear(sgd.momentum_buffer(1), {1.0});
  ExpectNear(a, {0.8});
  ExpectNear(sgd.momentum_buffer(0), {1.0});
  sgd.ZeroGrad();
  EXPECT_FALSE(a->grad());
  EXPECT_FALSE(b->grad());
  sgd.Step();  // nothing to do
  ExpectNear(a, {0.8});
}

TEST(Adam, AdamAndAdamWDifferAsPyTorch) {
  // p = 2, g = 0.5, lr 0.1, eps 0, weight_decay 0.5 (see tests/ops/optimizer_test.cpp):
  //   Adam:  g' = 0.5 + 0.5 * 2 = 1.5, first step moves p by lr: 1.9
  //   AdamW: p = 2 * (1 - 0.1 * 0.5) = 1.9, then - 0.1: 1.8
  TensorPtr p_adam = Param({2.0});
  TensorPtr p_adamw = Param({2.0});
  Adam adam({p_adam}, {.lr = 0.1, .eps = 0.0, .weight_decay = 0.5});
  Adam adamw({p_adamw}, {.lr = 0.1, .eps = 0.0, .weight_decay = 0.5, .decoupled_weight_decay = true});
  p_adam->set_grad(Vec({0.5}));
  p_adamw->set_grad(Vec({0.5}));
  adam.Step();
  adamw.Step();
  ExpectNear(p_adam, {1.9});
  ExpectNear(p_adamw, {1.8});
  ExpectNear(adam.exp_avg(0), {0.15});
  ExpectNear(adam.exp_avg_sq(0), {0.001 * 2.25});
  ExpectNear(adamw.exp_avg(0), {0.05});
  EXPECT_EQ(adam.step_count(0), 1);
}

TEST(Adam, StepCountsArePerParameter) {
  // Constant gradients move each parameter by lr per step (bias correction), whenever it steps.
  TensorPtr a = Param({0.0, 0.0});
  TensorPtr b = Param({0.0});
  Adam adam({a, b}, {.lr = 0.01, .eps = 0.0});
  EXPECT_FALSE(adam.exp_avg(1));
  EXPECT_EQ(adam.step_count(1), 0);
  a->set_grad(Vec({1.0, -2.0}));
  for (int s = 0; s < 3; ++s) adam.Step();
  ExpectNear(a, {-0.03, 0.03});
  EXPECT_EQ(adam.step_count(0), 3);
  EXPECT_EQ(adam.step_count(1), 0);
  b->set_grad(Vec({4.0}));
  adam.set_lr(0.5);
  adam.Step();
  ExpectNear(b, {-0.5});  // b's first step: bias correction with t = 1, not 4
  EXPECT_EQ(adam.step_count(1), 1);
  ExpectNear(a, {-0.53, 0.53});
}

TEST(Optimizer, ConstructionErrors) {
  TensorPtr p = Param({1.0});
  ExpectError([] { SGD({}, {}); }, {"empty"});
  ExpectError([&] { SGD({p, nullptr}, {}); }, {"parameter 1", "null"});
  ExpectError([&] { SGD({p, p}, {}); }, {"parameter 1", "more than once"});
  ExpectError([] { SGD({Full(DType::Int32(), Shape{2}, 0, Device::CPU())}, {}); }, {"parameter 0", "int32"});
  ExpectError([] { Adam({Full(DType::Int64(), Shape{2}, 0, Device::CPU())}, {}); },
              {"parameter 0", "int64", "adam_update", "floating-point"});
  Adam({Full(DType::Float16(), Shape{2}, 0, Device::CPU())}, {});  // half precision is a floating dtype
  TensorPtr base = Full(kF64, Shape{2, 2}, 0, Device::CPU());
  ExpectError([&] { SGD({Tensor::MakeView(*base, Shape{2}, {2}, 0)}, {}); }, {"parameter 0", "contiguous"});
  ExpectError([&] { SGD({p}, {.lr = -1.0}); }, {"lr"});
  ExpectError([&] { SGD({p}, {.lr = 0.1, .nesterov = true}); }, {"nesterov", "momentum"});
  ExpectError([&] { Adam({p}, {.beta2 = 1.0}); }, {"beta2"});
  ExpectError([&] { Adam({p}, {.weight_decay = -0.1}); }, {"weight_decay"});
}

TEST(Optimizer, NonLeafParameterIsAnError) {
  TensorPtr p = Param({1.0});
  TensorPtr q = ops::MulScalar(p, 2.0);
  ASSERT_FALSE(q->is_leaf());
  ExpectError([&] { SGD({q}, {}); }, {"parameter 0", "leaf"});
}

TEST(Optimizer, BadGradientFailsTheWholeStep) {
  TensorPtr a = Param({1.0, 2.0});
  TensorPtr b = Param({3.0});
  SGD sgd({a, b}, {.lr = 0.1});
  a->set_grad(Vec({1.0, 1.0}));
  b->set_grad(Vec({1.0, 1.0}));  // wrong shape
  ExpectError([&] { sgd.Step(); }, {"parameter 1", "(2,)", "(1,)"});
  ExpectNear(a, {1.0, 2.0});  // checked before anything was updated
  b->set_grad(Vec({1.0}, DType::Float32()));
  ExpectError([&] { sgd.Step(); }, {"parameter 1", "float32", "float64"});
  b->set_grad(Vec({1.0}));
  sgd.Step();
  ExpectNear(a, {0.9, 1.9});
  ExpectNear(b, {2.9});
}

// A lazy gradient (a graph value, no data) of the second parameter: the step fails before the first
// parameter, its momentum buffer or Adam's moments are written.
TEST(Optimizer, LazyGradientFailsTheWholeStep) {
  TensorPtr lazy = Tensor::MakeLazy(/*graph_id=*/12345, /*value=*/0, kF64, Shape{1}, Device::CPU());
  for (const bool adam : {false, true}) {
    TensorPtr a = Param({1.0, 2.0});
    TensorPtr b = Param({3.0});
    std::unique_ptr<Optimizer> opt;
    if (adam) {
      opt = std::make_unique<Adam>(std::vector<TensorPtr>{a, b}, AdamOptions{.lr = 0.1});
    } else {
      opt = std::make_unique<SGD>(std::vector<TensorPtr>{a, b}, SgdOptions{.lr = 0.1, .momentum = 0.9});
    }
    a->set_grad(Vec({1.0, 1.0}));
    b->set_grad(lazy);
    ExpectError([&] { opt->Step(); }, StatusCode::kFailedPrecondition, {"gradient of parameter 1", "lazy"});
    ExpectNear(a, {1.0, 2.0});
    ExpectNear(b, {3.0});
    if (adam) {
      EXPECT_EQ(static_cast<Adam&>(*opt).step_count(0), 0);
    } else {
      EXPECT_EQ(static_cast<SGD&>(*opt).momentum_buffer(0), nullptr);
    }
    // With a real gradient the same step is the first one: momentum starts from the gradient.
    b->set_grad(Vec({1.0}));
    opt->Step();
    if (adam) {
      ExpectNear(a, {0.9, 1.9}, 1e-8);  // Adam's first step moves each element by lr / (1 + eps)
      EXPECT_EQ(static_cast<Adam&>(*opt).step_count(0), 1);
    } else {
      ExpectNear(a, {0.9, 1.9});
      ExpectNear(static_cast<SGD&>(*opt).momentum_buffer(0), {1.0, 1.0});
    }
  }
}

// A strided gradient (a transposed view) is read as its values.
TEST(Optimizer, StridedGradientIsReadByValue) {
  TensorPtr p = Param({0.0, 0.0, 0.0, 0.0});
  TensorPtr w = ops::Reshape(p->Detach(), {2, 2});
  w->set_requires_grad(true);
  SGD sgd({w}, {.lr = 1.0});
  TensorPtr g = ops::Transpose(ops::Reshape(Vec({1.0, 2.0, 3.0, 4.0}), {2, 2}), 0, 1);
  ASSERT_FALSE(g->is_contiguous());
  w->set_grad(g);
  sgd.Step();
  ExpectNear(ops::Contiguous(w), {-1.0, -3.0, -2.0, -4.0});
}

TEST(Optimizer, TrainsALeastSquaresProblemThroughAutograd) {
  // Fit w in y = x * w (elementwise) by minimising sum((x * w - y)^2); the optimum is w = y / x.
  const TensorPtr x = Vec({1.0, 2.0, -1.0});
  const TensorPtr y = Vec({2.0, -1.0, 0.5});
  for (int kind = 0; kind < 3; ++kind) {
    TensorPtr w = Param({0.0, 0.0, 0.0});
    std::unique_ptr<Optimizer> opt;
    if (kind == 0) opt = std::make_unique<SGD>(std::vector<TensorPtr>{w}, SgdOptions{.lr = 0.05, .momentum = 0.5});
    if (kind == 1) opt = std::make_unique<SGD>(std::vector<TensorPtr>{w}, SgdOptions{.lr = 0.02, .momentum = 0.9, .nesterov = true});
    if (kind == 2) opt = std::make_unique<Adam>(std::vector<TensorPtr>{w}, AdamOptions{.lr = 0.1});
    double first = 0, last = 0;
    for (int step = 0; step < 300; ++step) {
      opt->ZeroGrad();
      const TensorPtr r = ops::Sub(ops::Mul(x, w), y);
      const TensorPtr loss = ops::Sum(ops::Mul(r, r));
      Backward({loss}, {nullptr});
      opt->Step();
      last = Values(loss)[0];
      if (step == 0) first = last;
    }
    EXPECT_NEAR(first, 4.0 + 1.0 + 0.25, 1e-12) << kind;
    EXPECT_LT(last, 1e-6) << kind;
    ExpectNear(w, {2.0, -0.5, -0.5}, 1e-3);
  }
}

// ---- loss scaling ---------------------------------------------------------------------------------

// loss = sum(x * w) for the step's x; its gradient is x. Scaled when the optimizer scales.
void BackwardOf(Optimizer& opt, const TensorPtr& w, const std::vector<double>& x) {
  opt.ZeroGrad();
  const TensorPtr loss = ops::Sum(ops::Mul(Vec(x), w));
  Backward({opt.loss_scaling() ? opt.ScaleLoss(loss) : loss}, {nullptr});
}

// A loss-scaled SGD (dampening, so that the first step's buffer = d shows) equals a plain one that takes
// only the steps whose gradients were finite, exactly (the scales are powers of two); the scale backs
// off on each skipped step and grows after growth_interval clean ones. A skipped first step leaves the
// next one the first (the buffer set to d, PyTorch's rule).
TEST(LossScaling, SkipsNonFiniteStepsAndOtherwiseEqualsUnscaledSteps) {
  for (Symbol<DType> dtype : {DType::Float32(), kF64}) {
    SCOPED_TRACE(std::string(dtype->name()));
    TensorPtr w = Vec({1.0, -2.0, 0.5}, dtype), v = Vec({1.0, -2.0, 0.5}, dtype);
    w->set_requires_grad(true);
    v->set_requires_grad(true);
    const SgdOptions o{.lr = 0.1, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.01};
    SGD scaled({w}, o), plain({v}, o);
    EXPECT_EQ(scaled.loss_scale(), 1.0);  // off
    scaled.EnableLossScaling({.init_scale = 1024.0, .growth_interval = 2});
    EXPECT_TRUE(scaled.loss_scaling());
    EXPECT_FALSE(plain.loss_scaling());
    const std::vector<std::vector<double>> xs = {{INFINITY, 1.0, 2.0}, {0.5, -1.0, 2.0}, {1.0, NAN, 0.0},
                                                 {-1.0, 0.25, 3.0},    {2.0, 2.0, -2.0}, {0.5, 0.5, 0.5}};
    const std::vector<double> want_scale = {512, 512, 256, 256, 512, 512};
    int64_t skipped = 0;
    for (size_t s = 0; s < xs.size(); ++s) {
      SCOPED_TRACE("step " + std::to_string(s));
      BackwardOf(scaled, w, xs[s]);
      scaled.Step();
      const bool finite = std::isfinite(xs[s][0] + xs[s][1] + xs[s][2]);
      EXPECT_EQ(scaled.last_step_skipped(), !finite);
      if (finite) {
        BackwardOf(plain, v, xs[s]);
        plain.Step();
      } else {
        ++skipped;
      }
      EXPECT_EQ(Values(w), Values(v));
      if (plain.momentum_buffer(0)) {
        EXPECT_EQ(Values(scaled.momentum_buffer(0)), Values(plain.momentum_buffer(0)));
      }
      EXPECT_EQ(scaled.loss_scale(), want_scale[s]);
      EXPECT_EQ(scaled.skipped_steps(), skipped);
    }
    EXPECT_NE(Values(w), (std::vector<double>{1.0, -2.0, 0.5}));  // it trained
  }
}

TEST(LossScaling, AdamSkipsWithoutAdvancingItsStepCount) {
  TensorPtr w = Param({1.0, 2.0});
  Adam adam({w}, {.lr = 0.1});
  adam.EnableLossScaling({});
  BackwardOf(adam, w, {1.0, 2.0});
  adam.Step();
  EXPECT_EQ(adam.step_count(0), 1);
  const std::vector<double> after = Values(w);
  BackwardOf(adam, w, {INFINITY, 2.0});
  adam.Step();
  EXPECT_TRUE(adam.last_step_skipped());
  EXPECT_EQ(adam.step_count(0), 1);
  EXPECT_EQ(Values(w), after);
  EXPECT_EQ(adam.loss_scale(), 32768.0);
}

TEST(LossScaling, Errors) {
  TensorPtr w = Param({1.0});
  SGD sgd({w}, {.lr = 0.1});
  const TensorPtr loss = ops::Sum(w);
  ExpectError([&] { sgd.ScaleLoss(loss); }, StatusCode::kFailedPrecondition, {"loss scaling is off"});
  ExpectError([&] { sgd.EnableLossScaling({.init_scale = 0.0}); }, {"init_scale", "0"});
  ExpectError([&] { sgd.EnableLossScaling({.growth_factor = 0.5}); }, {"growth_factor", "0.5"});
  ExpectError([&] { sgd.EnableLossScaling({.backoff_factor = 1.5}); }, {"backoff_factor", "1.5"});
  ExpectError([&] { sgd.EnableLossScaling({.growth_interval = 0}); }, {"growth_interval", "0"});
  EXPECT_FALSE(sgd.loss_scaling());  // the failed calls changed nothing
  sgd.EnableLossScaling({});
  ExpectError([&] { sgd.EnableLossScaling({}); }, StatusCode::kFailedPrecondition, {"already on"});
  ExpectError([&] { sgd.ScaleLoss(nullptr); }, {"loss", "null"});
  ExpectError([&] { sgd.ScaleLoss(Empty(DType::Int64(), Shape{}, Device::CPU())); }, {"loss", "floating", "int64"});
  EXPECT_EQ(Values(sgd.ScaleLoss(loss))[0], 65536.0);

  TensorPtr v = Param({1.0});
  SGD stepped({v}, {.lr = 0.1});
  v->set_grad(Vec({1.0}));
  stepped.Step();
  ExpectError([&] { stepped.EnableLossScaling({}); }, StatusCode::kFailedPrecondition, {"before", "first step"});
}

}  // namespace
}  // namespace oneflow
