// Training through a lazy graph against eager training: a small ResNet (conv-BN-relu stem, two residual
// blocks, one strided with a 1x1 projection shortcut, adaptive average pooling, linear, cross-entropy)
// trained with SGD (momentum, weight decay, nesterov) and Adam, from the same initial weights and on the
// same batches. Then the memory plan of that training graph, and the bitwise equality of the graph's
// results with each pass switched off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/autograd/autograd.h"
#include "core/graph/graph.h"
#include "core/op/autocast.h"
#include "core/ops/ops.h"
#include "core/train/optimizer.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::graph {
namespace {

using test::FromDoubles;
using test::RandomTensor;
using test::ToDoubles;

constexpr int64_t kClasses = 10;
constexpr int64_t kImage = 8;  // 3 x 8 x 8 inputs

// A batch norm's tensors: affine parameters and running statistics.
struct BN {
  TensorPtr weight, bias, mean, var;
};

// The model's tensors. Parameters are requires_grad leaves; running stats are plain tensors (a graph binds
// them as non-trainable variables and the batch norms update them in place).
struct ResNet {
  TensorPtr stem_w, stem_b;  // conv 3 -> 8 (with bias)
  BN bn0;
  TensorPtr b1c1, b1c2;  // block 1: 8 -> 8, identity shortcut
  BN bn1, bn2;
  TensorPtr b2c1, b2c2, b2sc;  // block 2: 8 -> 16, stride 2, 1x1 projection shortcut
  BN bn3, bn4, bn5;
  TensorPtr fc_w, fc_b;

  std::vector<TensorPtr> Params() const {
    return {stem_w, stem_b, bn0.weight, bn0.bias, b1c1, bn1.weight, bn1.bias, b1c2, bn2.weight, bn2.bias, b2c1,
            bn3.weight, bn3.bias, b2c2, bn4.weight, bn4.bias, b2sc, bn5.weight, bn5.bias, fc_w, fc_b};
  }
  std::vector<TensorPtr> Stats() const {
    std::vector<TensorPtr> s;
    for (const BN* bn : {&bn0, &bn1, &bn2, &bn3, &bn4, &bn5}) {
      s.push_back(bn->mean);
      s.push_back(bn->var);
    }
    return s;
  }
};

TensorPtr Copy(const TensorPtr& t, bool requires_grad) {
  TensorPtr c = FromDoubles(t->dtype(), t->shape(), ToDoubles(t));
  c->set_requires_grad(requires_grad);
  return c;
}

// Random weights (uniform, scaled by 1/sqrt(fan_in)) and running stats that are not the defaults.
ResNet MakeResNet(Symbol<DType> dtype) {
  auto weight = [&](Shape shape) {
    int64_t fan_in = 1;
    for (int64_t d = 1; d < shape.ndim(); ++d) fan_in *= shape[d].value();
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    return Copy(RandomTensor(dtype, shape, -bound, bound), true);
  };
  auto bn = [&](int64_t c) {
    return BN{Copy(RandomTensor(dtype, Shape{c}, 0.8, 1.2), true), Copy(RandomTensor(dtype, Shape{c}, -0.1, 0.1), true),
              RandomTensor(dtype, Shape{c}, -0.1, 0.1), RandomTensor(dtype, Shape{c}, 0.5, 1.5)};
  };
  ResNet m;
  m.stem_w = weight(Shape{8, 3, 3, 3});
  m.stem_b = Copy(RandomTensor(dtype, Shape{8}, -0.1, 0.1), true);
  m.bn0 = bn(8);
  m.b1c1 = weight(Shape{8, 8, 3, 3});
  m.bn1 = bn(8);
  m.b1c2 = weight(Shape{8, 8, 3, 3});
  m.bn2 = bn(8);
  m.b2c1 = weight(Shape{16, 8, 3, 3});
  m.bn3 = bn(16);
  m.b2c2 = weight(Shape{16, 16, 3, 3});
  m.bn4 = bn(16);
  m.b2sc = weight(Shape{16, 8, 1, 1});
  m.bn5 = bn(16);
  m.fc_w = weight(Shape{kClasses, 16});
  m.fc_b = Copy(RandomTensor(dtype, Shape{kClasses}, -0.1, 0.1), true);
  return m;
}

// An independent copy with the same values (parameters require grad again).
ResNet CopyResNet(const ResNet& m) {
  auto bn = [](const BN& b) { return BN{Copy(b.weight, true), Copy(b.bias, true), Copy(b.mean, false), Copy(b.var, false)}; };
  ResNet c;
  c.stem_w = Copy(m.stem_w, true);
  c.stem_b = Copy(m.stem_b, true);
  c.bn0 = bn(m.bn0);
  c.b1c1 = Copy(m.b1c1, true);
  c.bn1 = bn(m.bn1);
  c.b1c2 = Copy(m.b1c2, true);
  c.bn2 = bn(m.bn2);
  c.b2c1 = Copy(m.b2c1, true);
  c.bn3 = bn(m.bn3);
  c.b2c2 = Copy(m.b2c2, true);
  c.bn4 = bn(m.bn4);
  c.b2sc = Copy(m.b2sc, true);
  c.bn5 = bn(m.bn5);
  c.fc_w = Copy(m.fc_w, true);
  c.fc_b = Copy(m.fc_b, true);
  return c;
}

TensorPtr Norm(const TensorPtr& x, const BN& bn) {
  return ops::BatchNorm(x, bn.weight, bn.bias, bn.mean, bn.var, ops::BatchNormOptions{.training = true});
}

ops::Conv2dOptions Conv3x3(int64_t stride) { return ops::Conv2dOptions{.stride = {stride, stride}, .padding = {1, 1}}; }

// The loss; the same code runs eagerly and traced.
TensorPtr Loss(const ResNet& m, const TensorPtr& x, const TensorPtr& y) {
  TensorPtr h = ops::Relu(Norm(ops::Conv2d(x, m.stem_w, m.stem_b, Conv3x3(1)), m.bn0));
  // Block 1: identity shortcut.
  TensorPtr r = ops::Relu(Norm(ops::Conv2d(h, m.b1c1, nullptr, Conv3x3(1)), m.bn1));
  r = Norm(ops::Conv2d(r, m.b1c2, nullptr, Conv3x3(1)), m.bn2);
  h = ops::Relu(ops::Add(r, h));
  // Block 2: stride 2, 8 -> 16 channels, projection shortcut; its first batch norm and ReLU as one op, whose
  // backward is batch_norm_relu_backward (the others' are relu_backward and batch_norm_backward).
  r = ops::BatchNormAddRelu(ops::Conv2d(h, m.b2c1, nullptr, Conv3x3(2)), nullptr, m.bn3.weight, m.bn3.bias, m.bn3.mean,
                            m.bn3.var, ops::BatchNormOptions{.training = true});
  r = Norm(ops::Conv2d(r, m.b2c2, nullptr, Conv3x3(1)), m.bn4);
  TensorPtr s = Norm(ops::Conv2d(h, m.b2sc, nullptr, ops::Conv2dOptions{.stride = {2, 2}}), m.bn5);
  h = ops::Relu(ops::Add(r, s));
  h = ops::Flatten(ops::AdaptiveAvgPool2d(h, {1, 1}), 1);
  return ops::CrossEntropy(ops::Linear(h, m.fc_w, m.fc_b), y);
}

struct Batch {
  TensorPtr x, y;
};

std::vector<Batch> MakeBatches(Symbol<DType> dtype, const std::vector<int64_t>& sizes) {
  std::vector<Batch> batches;
  for (int64_t n : sizes) {
    batches.push_back(Batch{RandomTensor(dtype, Shape{n, 3, kImage, kImage}, -1.5, 1.5),
                            RandomTensor(DType::Int64(), Shape{n}, 0, static_cast<double>(kClasses))});
  }
  return batches;
}

using MakeOptimizer = std::function<std::shared_ptr<Optimizer>(const std::vector<TensorPtr>&)>;
// lr before step i (NaN: leave it).
using LrSchedule = std::function<double(int)>;

double NoChange(int /*step*/) { return NAN; }

std::vector<double> TrainEager(const ResNet& m, const std::vector<Batch>& batches, const MakeOptimizer& make,
                               const LrSchedule& lr, std::shared_ptr<Optimizer>* out_opt = nullptr) {
  std::shared_ptr<Optimizer> opt = make(m.Params());
  std::vector<double> losses;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (const double r = lr(static_cast<int>(i)); !std::isnan(r)) opt->set_lr(r);
    TensorPtr loss = Loss(m, batches[i].x, batches[i].y);
    losses.push_back(ToDoubles(loss)[0]);
    opt->ZeroGrad();
    Backward({opt->loss_scaling() ? opt->ScaleLoss(loss) : loss}, {nullptr});
    opt->Step();
  }
  if (out_opt != nullptr) *out_opt = opt;
  return losses;
}

struct LazyRun {
  std::vector<double> losses;
  std::shared_ptr<Optimizer> opt;
  MemoryStats stats;
  std::string dump;
};

// One graph (batch size unknown), run once per batch.
LazyRun TrainLazy(const std::shared_ptr<Session>& session, const ResNet& m, const std::vector<Batch>& batches, const MakeOptimizer& make,
                  const LrSchedule& lr, const GraphOptions& options = GraphOptions{}) {
  LazyRun run;
  run.opt = make(m.Params());
  Graph g(session, "resnet_train", options);
  g.BeginBuild();
  const Symbol<DType> dtype = batches[0].x->dtype();
  TensorPtr x = g.AddInput("x", dtype, Shape{Dim::Unknown(), 3, kImage, kImage});
  TensorPtr y = g.AddInput("y", DType::Int64(), Shape{Dim::Unknown()});
  TensorPtr loss = Loss(m, x, y);
  EXPECT_TRUE(loss->is_lazy());
  Backward({run.opt->loss_scaling() ? run.opt->ScaleLoss(loss) : loss}, {nullptr});
  g.AddOptimizer(run.opt);
  g.AddOutput(loss);
  g.EndBuild();
  for (size_t i = 0; i < batches.size(); ++i) {
    if (const double r = lr(static_cast<int>(i)); !std::isnan(r)) run.opt->set_lr(r);
    std::vector<TensorPtr> out = g.Run({batches[i].x, batches[i].y});
    EXPECT_EQ(out.size(), 1u);
    run.losses.push_back(ToDoubles(out[0])[0]);
  }
  run.stats = g.memory_stats();
  run.dump = g.Dump();
  return run;
}

// |a - e| <= rtol * (|e| + max|expected|): relative to each value, with a floor at the tensor's scale
// (so that entries that are nearly zero, e.g. the bias of a batch norm, compare at the tensor's scale).
// Returns the largest error relative to that bound's scale.
double ExpectClose(const std::vector<double>& actual, const std::vector<double>& expected, double rtol,
                   const std::string& what) {
  EXPECT_EQ(actual.size(), expected.size()) << what;
  double scale = 0;
  for (double e : expected) scale = std::max(scale, std::fabs(e));
  double worst = 0;
  int reported = 0;
  for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    const double err = std::fabs(actual[i] - expected[i]), ref = std::fabs(expected[i]) + scale;
    EXPECT_TRUE(std::isfinite(actual[i])) << what << "[" << i << "]";
    worst = std::max(worst, ref > 0 ? err / ref : err);
    if (!(err <= rtol * ref) && reported++ < 3) {
      ADD_FAILURE() << what << "[" << i << "]: lazy " << actual[i] << ", eager " << expected[i] << " (error " << err
                    << ")";
    }
  }
  return worst;
}

// Eager and lazy models after training: every parameter and running statistic. Returns the worst error.
double ExpectSameModel(const ResNet& lazy, const ResNet& eager, double rtol) {
  double worst = 0;
  const std::vector<TensorPtr> lp = lazy.Params(), ep = eager.Params();
  for (size_t i = 0; i < lp.size(); ++i) {
    worst = std::max(worst, ExpectClose(ToDoubles(lp[i]), ToDoubles(ep[i]), rtol, "param " + std::to_string(i)));
  }
  const std::vector<TensorPtr> ls = lazy.Stats(), es = eager.Stats();
  for (size_t i = 0; i < ls.size(); ++i) {
    worst = std::max(worst, ExpectClose(ToDoubles(ls[i]), ToDoubles(es[i]), rtol,
                                        std::string(i % 2 == 0 ? "running_mean " : "running_var ") +
                                            std::to_string(i / 2)));
  }
  return worst;
}

struct TrainCase {
  const char* name;
  Symbol<DType> dtype;
  MakeOptimizer make;
  LrSchedule lr;
  std::vector<int64_t> batch_sizes;
};

MakeOptimizer Sgd(bool nesterov) {
  return [nesterov](const std::vector<TensorPtr>& params) -> std::shared_ptr<Optimizer> {
    return std::make_shared<SGD>(params, SgdOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = nesterov});
  };
}

// Sgd(true) with dynamic loss scaling.
MakeOptimizer ScaledSgd(const LossScaleOptions& scaling) {
  return [scaling](const std::vector<TensorPtr>& params) -> std::shared_ptr<Optimizer> {
    std::shared_ptr<Optimizer> opt = Sgd(true)(params);
    opt->EnableLossScaling(scaling);
    return opt;
  };
}

MakeOptimizer AdamOpt() {
  return [](const std::vector<TensorPtr>& params) -> std::shared_ptr<Optimizer> {
    return std::make_shared<Adam>(params, AdamOptions{.lr = 0.01, .weight_decay = 1e-3});
  };
}

// Lazy against eager: up to rounding. In half precision a fused elementwise chain rounds once where
// eager rounds after each op (Note [Half precision in float32]), which this model's chains (relu after
// add) happen not to show.
double RtolFor(Symbol<DType> dtype) {
  if (dtype == DType::Float64()) return 1e-10;
  return dtype == DType::Float32() ? 1e-5 : 1e-3;
}

void RunTrainCase(const TrainCase& c) {
  SCOPED_TRACE(c.name);
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const ResNet init = MakeResNet(c.dtype);
  const std::vector<Batch> batches = MakeBatches(c.dtype, c.batch_sizes);
  const double rtol = RtolFor(c.dtype);

  const ResNet eager = CopyResNet(init);
  std::shared_ptr<Optimizer> eager_opt;
  const std::vector<double> eager_losses = TrainEager(eager, batches, c.make, c.lr, &eager_opt);
  const ResNet lazy = CopyResNet(init);
  const LazyRun run = TrainLazy(session_owner, lazy, batches, c.make, c.lr);

  const double loss_err = ExpectClose(run.losses, eager_losses, rtol, "loss");
  // Training did something: the parameters moved and the loss is not constant.
  EXPECT_NE(ToDoubles(lazy.b2c2), ToDoubles(init.b2c2));
  EXPECT_NE(ToDoubles(lazy.bn3.mean), ToDoubles(init.bn3.mean));
  EXPECT_NE(eager_losses.front(), eager_losses.back());
  const double model_err = ExpectSameModel(lazy, eager, rtol);
  // The optimizer state as well: the loss scaler's (the same steps skipped) and the per-parameter one.
  EXPECT_EQ(run.opt->loss_scale(), eager_opt->loss_scale());
  EXPECT_EQ(run.opt->skipped_steps(), eager_opt->skipped_steps());
  if (eager_opt->loss_scaling()) {  // the scaled cases here are built to skip some steps and take others
    EXPECT_GT(eager_opt->skipped_steps(), 0);
    EXPECT_LT(eager_opt->skipped_steps(), static_cast<int64_t>(batches.size()));
    std::printf("[ %s ] loss scale %g after %lld skipped steps of %zu\n", c.name, eager_opt->loss_scale(),
                static_cast<long long>(eager_opt->skipped_steps()), batches.size());
  }
  if (auto* es = dynamic_cast<SGD*>(eager_opt.get())) {
    auto* ls = dynamic_cast<SGD*>(run.opt.get());
    ASSERT_NE(ls, nullptr);
    for (size_t i = 0; i < es->params().size(); ++i) {
      ExpectClose(ToDoubles(ls->momentum_buffer(i)), ToDoubles(es->momentum_buffer(i)), rtol,
                  "momentum buffer " + std::to_string(i));
    }
  } else if (auto* ea = dynamic_cast<Adam*>(eager_opt.get())) {
    auto* la = dynamic_cast<Adam*>(run.opt.get());
    ASSERT_NE(la, nullptr);
    for (size_t i = 0; i < ea->params().size(); ++i) {
      EXPECT_EQ(la->step_count(i), static_cast<int64_t>(batches.size()));
      ExpectClose(ToDoubles(la->exp_avg(i)), ToDoubles(ea->exp_avg(i)), rtol, "exp_avg " + std::to_string(i));
      ExpectClose(ToDoubles(la->exp_avg_sq(i)), ToDoubles(ea->exp_avg_sq(i)), rtol, "exp_avg_sq " + std::to_string(i));
    }
  }
  std::size_t distinct = 1;
  for (size_t i = 1; i < c.batch_sizes.size(); ++i) {
    if (std::find(c.batch_sizes.begin(), c.batch_sizes.begin() + static_cast<std::ptrdiff_t>(i), c.batch_sizes[i]) ==
        c.batch_sizes.begin() + static_cast<std::ptrdiff_t>(i))
      ++distinct;
  }
  EXPECT_EQ(run.stats.specialization_count, distinct);
  std::printf("[ %s ] losses", c.name);
  for (double l : run.losses) std::printf(" %.6f", l);
  std::printf("; worst relative difference lazy vs eager: loss %.2e, model %.2e\n", loss_err, model_err);
}

TEST(TrainGraph, SgdNesterovFloat64EqualsEager) {
  RunTrainCase({"sgd nesterov f64", DType::Float64(), Sgd(true), NoChange, {4, 4, 4, 4, 4}});
}

TEST(TrainGraph, SgdMomentumFloat32EqualsEager) {
  RunTrainCase({"sgd momentum f32", DType::Float32(), Sgd(false), NoChange, {4, 4, 4, 4, 4}});
}

TEST(TrainGraph, SgdNesterovFloat32EqualsEager) {
  RunTrainCase({"sgd nesterov f32", DType::Float32(), Sgd(true), NoChange, {4, 4, 4, 4, 4}});
}

TEST(TrainGraph, AdamFloat64EqualsEager) {
  RunTrainCase({"adam f64", DType::Float64(), AdamOpt(), NoChange, {4, 4, 4, 4, 4}});
}

TEST(TrainGraph, AdamFloat32EqualsEager) {
  RunTrainCase({"adam f32", DType::Float32(), AdamOpt(), NoChange, {4, 4, 4, 4, 4}});
}

// A half-precision model (parameters, statistics, activations and optimizer state all in float16 or
// bfloat16) trains end to end, and its graph equals eager.
TEST(TrainGraph, SgdHalfPrecisionModelsEqualEager) {
  RunTrainCase({"sgd nesterov f16", DType::Float16(), Sgd(true), NoChange, {4, 4, 4, 4, 4}});
  RunTrainCase({"sgd nesterov bf16", DType::BFloat16(), Sgd(true), NoChange, {4, 4, 4, 4, 4}});
}

// Note [Loss scaling]: a float16 model whose loss is scaled past float16's range (65504) gets inf
// gradients: the step is skipped and the scale backs off by 2^-4; growing it by 2^4 after two clean steps
// overflows it again. The graph's check, skips (the first steps, so SGD's first step comes later) and
// scale updates equal eager's.
TEST(TrainGraph, LossScaledSgdSkipsTheSameStepsAsEager) {
  const LossScaleOptions scaling{
      .init_scale = 0x1p20, .growth_factor = 0x1p4, .backoff_factor = 0x1p-4, .growth_interval = 2};
  RunTrainCase({"loss-scaled sgd f16", DType::Float16(), ScaledSgd(scaling), NoChange, {4, 4, 4, 4, 4, 4, 4, 4}});
}

// The lr changes between steps (Optimizer::set_lr on each side): the graph reads the current lr per run.
TEST(TrainGraph, LearningRateChangesAreFollowed) {
  const LrSchedule schedule = [](int step) { return step == 1 ? 0.2 : step == 3 ? 0.01 : step == 4 ? 0.0 : NAN; };
  RunTrainCase({"sgd lr schedule f64", DType::Float64(), Sgd(true), schedule, {4, 4, 4, 4, 4}});
  RunTrainCase({"adam lr schedule f32", DType::Float32(), AdamOpt(), schedule, {4, 4, 4, 4, 4}});
}

// The lr really matters: the same schedule left unapplied on the graph side gives other weights.
TEST(TrainGraph, LearningRateChangeIsNotANoOp) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const ResNet init = MakeResNet(DType::Float64());
  const std::vector<Batch> batches = MakeBatches(DType::Float64(), {4, 4, 4});
  const ResNet eager = CopyResNet(init);
  TrainEager(eager, batches, Sgd(false), [](int step) { return step == 1 ? 0.3 : NAN; });
  const ResNet lazy = CopyResNet(init);
  TrainLazy(session_owner, lazy, batches, Sgd(false), NoChange);
  EXPECT_NE(ToDoubles(lazy.fc_w), ToDoubles(eager.fc_w));
}

// One graph, batch 4 then 3 then 4 (two specializations), equals eager.
TEST(TrainGraph, VariableBatchSizeEqualsEager) {
  RunTrainCase({"sgd variable batch f64", DType::Float64(), Sgd(true), NoChange, {4, 3, 4}});
  RunTrainCase({"adam variable batch f32", DType::Float32(), AdamOpt(), NoChange, {4, 3, 4}});
}

// ---- memory planning --------------------------------------------------------------------------------

struct OptionsRun {
  ResNet model;
  LazyRun run;
};

OptionsRun TrainWithOptions(const std::shared_ptr<Session>& session, const ResNet& init, const std::vector<Batch>& batches,
                            const GraphOptions& options) {
  OptionsRun r{CopyResNet(init), {}};
  r.run = TrainLazy(session, r.model, batches, Sgd(true), NoChange, options);
  return r;
}

// Bitwise: the passes change where values live and how the kernels are grouped, never a result.
void ExpectBitwiseSame(const OptionsRun& a, const OptionsRun& b, const std::string& what) {
  EXPECT_EQ(a.run.losses, b.run.losses) << what;
  const std::vector<TensorPtr> ap = a.model.Params(), bp = b.model.Params();
  for (size_t i = 0; i < ap.size(); ++i) EXPECT_EQ(ToDoubles(ap[i]), ToDoubles(bp[i])) << what << ": param " << i;
  const std::vector<TensorPtr> as = a.model.Stats(), bs = b.model.Stats();
  for (size_t i = 0; i < as.size(); ++i) EXPECT_EQ(ToDoubles(as[i]), ToDoubles(bs[i])) << what << ": stat " << i;
}

TEST(TrainGraph, MemoryPlanOfTheTrainingGraph) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const ResNet init = MakeResNet(DType::Float32());
  const std::vector<Batch> batches = MakeBatches(DType::Float32(), {8, 8, 8});
  const OptionsRun base = TrainWithOptions(session_owner, init, batches, GraphOptions{});
  const MemoryStats& s = base.run.stats;
  const double ratio = static_cast<double>(s.planned_peak_bytes) / static_cast<double>(s.intermediate_bytes);
  std::printf("[ resnet train graph ] planned peak %zu bytes, intermediates %zu bytes (ratio %.3f), %zu buffers, "
              "%zu in place, %zu steps\n",
              s.planned_peak_bytes, s.intermediate_bytes, ratio, s.buffer_count, s.inplace_count, s.node_count);
  EXPECT_GT(s.intermediate_bytes, 0u);
  EXPECT_LT(ratio, 0.5) << base.run.dump;
  EXPECT_GT(s.inplace_count, 0u) << base.run.dump;
  EXPECT_EQ(s.specialization_count, 1u);
  // Note [Batch norm's gradient in place]: each batch norm's grad_x takes the buffer of its x or grad_y,
  // which die there (batch_norm_relu_backward's too).
  int bn_backwards = 0, bn_relu_backwards = 0, bn_in_place = 0;
  for (size_t at = base.run.dump.find("step #"); at != std::string::npos; at = base.run.dump.find("step #", at + 1)) {
    const std::string line = base.run.dump.substr(at, base.run.dump.find('\n', at) - at);
    const bool with_relu = line.find("= batch_norm_relu_backward(") != std::string::npos;
    if (!with_relu && line.find("= batch_norm_backward(") == std::string::npos) continue;
    ++bn_backwards;
    bn_relu_backwards += with_relu;
    bn_in_place += line.find("in place of") != std::string::npos;
  }
  EXPECT_GT(bn_backwards, 0) << base.run.dump;
  EXPECT_EQ(bn_relu_backwards, 1) << base.run.dump;
  EXPECT_EQ(bn_in_place, bn_backwards) << base.run.dump;

  GraphOptions no_plan;
  no_plan.plan_memory = false;
  const OptionsRun unplanned = TrainWithOptions(session_owner, init, batches, no_plan);
  EXPECT_EQ(unplanned.run.stats.planned_peak_bytes, unplanned.run.stats.intermediate_bytes);
  EXPECT_EQ(unplanned.run.stats.inplace_count, 0u);  // in place needs a plan
  EXPECT_EQ(unplanned.run.stats.node_count, s.node_count);
  ExpectBitwiseSame(unplanned, base, "plan_memory=false");

  GraphOptions no_inplace;
  no_inplace.inplace = false;
  const OptionsRun copying = TrainWithOptions(session_owner, init, batches, no_inplace);
  EXPECT_EQ(copying.run.stats.inplace_count, 0u);
  EXPECT_LT(copying.run.stats.planned_peak_bytes, copying.run.stats.intermediate_bytes);
  ExpectBitwiseSame(copying, base, "inplace=false");

  GraphOptions no_fuse;
  no_fuse.fuse = false;
  const OptionsRun unfused = TrainWithOptions(session_owner, init, batches, no_fuse);
  EXPECT_EQ(unfused.run.dump.find("fused_"), std::string::npos) << unfused.run.dump;
  EXPECT_GE(unfused.run.stats.node_count, s.node_count);
  ExpectBitwiseSame(unfused, base, "fuse=false");
  std::printf("[ resnet train graph ] steps: %zu fused, %zu unfused; peak without in place %zu bytes\n", s.node_count,
              unfused.run.stats.node_count, copying.run.stats.planned_peak_bytes);
}

// ---- mixed precision --------------------------------------------------------------------------------

// Note [Autocast]: the same float32 model trained under `dtype` autocast (with `make`'s optimizer),
// eagerly and through a graph, tracks its float32 training (plain SGD): the mean loss over each window of
// kWindow steps stays within kTrack (absolute) of float32's while the loss falls to a fraction of where it
// started. Returns the optimizer of the eager mixed-precision run. The model and the data come from the
// test generator restarted from one seed, so that the tests that ran before do not choose them (a window's
// difference is near kTrack for some draws while the loss falls fastest).
std::shared_ptr<Optimizer> ExpectAutocastTracksFloat32(Symbol<DType> dtype, const MakeOptimizer& make) {
  constexpr int kSteps = 200, kWindow = 20;
  constexpr double kTrack = 0.1;
  test::TestGenerator().ManualSeed(20261205);
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session_owner);
  const ResNet init = MakeResNet(DType::Float32());
  const std::vector<Batch> data = MakeBatches(DType::Float32(), {16, 16, 16, 16});
  std::vector<Batch> batches;
  for (int i = 0; i < kSteps; ++i) batches.push_back(data[static_cast<size_t>(i) % data.size()]);

  const ResNet f32 = CopyResNet(init);
  const std::vector<double> f32_losses = TrainEager(f32, batches, Sgd(true), NoChange);
  const ResNet eager = CopyResNet(init), lazy = CopyResNet(init);
  std::vector<double> eager_losses;
  std::shared_ptr<Optimizer> eager_opt;
  LazyRun run;
  {
    AutocastGuard autocast(dtype);
    eager_losses = TrainEager(eager, batches, make, NoChange, &eager_opt);
    run = TrainLazy(session_owner, lazy, batches, make, NoChange);
  }
  // float32 master weights and gradients; the graph holds the casts as nodes.
  for (const TensorPtr& p : eager.Params()) {
    EXPECT_EQ(p->dtype(), DType::Float32());
    EXPECT_TRUE(p->grad() && p->grad()->dtype() == DType::Float32());
  }
  EXPECT_NE(run.dump.find("cast"), std::string::npos) << run.dump;
  // The half dtype really ran: the losses are not float32's. The graph runs what eager runs.
  EXPECT_NE(eager_losses, f32_losses);
  ExpectClose(run.losses, eager_losses, 1e-3, "lazy vs eager loss");
  EXPECT_EQ(run.opt->loss_scale(), eager_opt->loss_scale());
  EXPECT_EQ(run.opt->skipped_steps(), eager_opt->skipped_steps());

  auto window = [](const std::vector<double>& losses, int w) {
    double s = 0;
    for (int i = w * kWindow; i < (w + 1) * kWindow; ++i) s += losses[static_cast<size_t>(i)];
    return s / kWindow;
  };
  std::printf("[ %s autocast ] window mean losses (f32 / eager / lazy):", std::string(dtype->name()).c_str());
  double worst = 0;
  for (int w = 0; w < kSteps / kWindow; ++w) {
    const double ref = window(f32_losses, w), e = window(eager_losses, w), l = window(run.losses, w);
    std::printf(" %.3f/%.3f/%.3f", ref, e, l);
    EXPECT_NEAR(e, ref, kTrack) << "eager, window " << w;
    EXPECT_NEAR(l, ref, kTrack) << "lazy, window " << w;
    worst = std::max({worst, std::fabs(e - ref), std::fabs(l - ref)});
  }
  std::printf("; worst window difference %.4f\n", worst);
  EXPECT_LT(window(f32_losses, kSteps / kWindow - 1), 0.3 * window(f32_losses, 0));
  return eager_opt;
}

TEST(TrainGraph, Bfloat16AutocastTracksFloat32) { ExpectAutocastTracksFloat32(DType::BFloat16(), Sgd(true)); }

// float16 with the dynamic loss scaler, from a scale of 2^18 that overflows float16's gradients at first
// (the first steps are skipped until it fits), growing every 25 steps: skipped steps leave the tracking
// intact.
TEST(TrainGraph, Float16AutocastWithLossScalingTracksFloat32) {
  const std::shared_ptr<Optimizer> opt = ExpectAutocastTracksFloat32(
      DType::Float16(), ScaledSgd(LossScaleOptions{.init_scale = 0x1p18, .growth_interval = 25}));
  std::printf("[ f16 autocast ] loss scale %g after %lld skipped steps\n", opt->loss_scale(),
              static_cast<long long>(opt->skipped_steps()));
  EXPECT_GT(opt->skipped_steps(), 0);
  EXPECT_LT(opt->skipped_steps(), 20);
}

}  // namespace
}  // namespace oneflow::graph
