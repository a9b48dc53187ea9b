// The graph compiler's passes, each run alone on the IR (core/graph/ir.h) of a traced program: what nodes
// remain, what they compute (fused programs, origins) and which memory format each value gets.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/graph/passes/passes.h"
#include "core/ops/fused.h"
#include "core/ops/ops.h"
#include "core/train/optimizer.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::graph {
namespace {

using test::RandomTensor;

// A traced program and the IR of it for concrete input shapes, after concrete inference.
class PassTest : public ::testing::Test {
 protected:
  PassTest() : session_(std::make_shared<Session>(SessionOptions{})), scope_(*session_) {}

  // Traces `body` (inputs -> outputs) with inputs of `shapes` and `dtype`, then makes the IR.
  template <typename Body>
  Ir Trace(Symbol<DType> dtype, const std::vector<Shape>& shapes, Body body, std::string name = "g") {
    graphs_.push_back(std::make_unique<Graph>(session_, std::move(name), GraphOptions{}));
    Graph& g = *graphs_.back();
    g.BeginBuild();
    std::vector<TensorPtr> inputs;
    for (size_t i = 0; i < shapes.size(); ++i) inputs.push_back(g.AddInput("x" + std::to_string(i), dtype, shapes[i]));
    for (const TensorPtr& y : body(inputs)) g.AddOutput(y);
    g.EndBuild();
    Ir ir = Ir::FromProgram(g.program(), shapes, session_->free_tensors().Tensors(g.id()), {});
    InferConcreteShapes(ir);
    return ir;
  }

  // A training graph being built, with float64 parameters of `shapes` that require grad and their SGD
  // (momentum 0.9).
  struct Training {
    Graph& graph;
    std::vector<TensorPtr> params;
    std::shared_ptr<SGD> opt;
  };
  Training BeginTraining(std::string name, const std::vector<Shape>& shapes) {
    std::vector<TensorPtr> params;
    for (const Shape& shape : shapes) {
      params.push_back(RandomTensor(DType::Float64(), shape));
      params.back()->set_requires_grad(true);
    }
    auto opt = std::make_shared<SGD>(params, SgdOptions{.lr = 0.1, .momentum = 0.9});
    graphs_.push_back(std::make_unique<Graph>(session_, std::move(name), GraphOptions{}));
    graphs_.back()->BeginBuild();
    return {*graphs_.back(), std::move(params), std::move(opt)};
  }

  // The IR of the built training graph `g` for its one input's concrete `shape`, its updates marked.
  Ir TrainingIr(const Graph& g, const Shape& shape) {
    std::vector<size_t> updates;
    for (size_t k = 0; k < g.program().nodes.size(); ++k) {
      if (g.program().nodes[k].op->gradient_input >= 0) updates.push_back(k);
    }
    Ir ir = Ir::FromProgram(g.program(), {shape}, session_->free_tensors().Tensors(g.id()), updates);
    InferConcreteShapes(ir);
    return ir;
  }

  static std::vector<const IrNode*> Alive(const Ir& ir) {
    std::vector<const IrNode*> alive;
    for (const IrNode& n : ir.nodes) {
      if (n.alive) alive.push_back(&n);
    }
    return alive;
  }

  std::shared_ptr<Session> session_;
  SessionScope scope_;
  std::vector<std::unique_ptr<Graph>> graphs_;
};

TEST_F(PassTest, DeadCodeKeepsOutputsAndInPlaceWritersOnly) {
  const TensorPtr mean = RandomTensor(DType::Float32(), Shape{3}), var = RandomTensor(DType::Float32(), Shape{3}, 0.5, 1);
  Ir ir = Trace(DType::Float32(), {Shape{4, 3, 5, 5}}, [&](const std::vector<TensorPtr>& x) {
    ops::Exp(x[0]);  // unused
    ops::BatchNorm(x[0], nullptr, nullptr, mean, var, ops::BatchNormOptions{.training = true});  // writes the stats
    return std::vector<TensorPtr>{ops::Relu(x[0])};
  });
  EliminateDeadCode(ir);
  std::vector<std::string> names;
  for (const IrNode* n : Alive(ir)) names.push_back(n->op->name);
  EXPECT_EQ(names, (std::vector<std::string>{"batch_norm", "relu"}));
}

TEST_F(PassTest, FuseElementwiseMakesOneProgramPerTree) {
  Ir ir = Trace(DType::Float32(), {Shape{2, 8}, Shape{2, 8}}, [](const std::vector<TensorPtr>& x) {
    const TensorPtr a = ops::Relu(x[0]);
    const TensorPtr shared = ops::Exp(x[1]);  // read twice: stays materialised
    return std::vector<TensorPtr>{ops::Mul(ops::Add(a, shared), shared)};
  });
  FuseElementwise(ir);
  const std::vector<const IrNode*> alive = Alive(ir);
  ASSERT_EQ(alive.size(), 2u);
  EXPECT_EQ(alive[0]->op->name, "exp");
  const IrNode& fused = *alive[1];
  EXPECT_EQ(fused.op->name, "fused_elementwise");
  EXPECT_EQ(fused.origin, "relu+add+mul");
  // Registers: x0 (0), exp's value (1), then relu (2), add (3), mul (4).
  const auto code = [](FusedOpcode c) { return static_cast<int64_t>(c); };
  EXPECT_EQ(fused.attrs.Ints("program"), (std::vector<int64_t>{code(FusedOpcode::kRelu), 2, 0, -1,  //
                                                               code(FusedOpcode::kAdd), 3, 2, 1,    //
                                                               code(FusedOpcode::kMul), 4, 3, 1}));
  EXPECT_EQ(fused.inputs, (std::vector<int32_t>{ir.nodes[0].inputs[0], alive[0]->outputs[0]}));
}

TEST_F(PassTest, FoldBatchNormNeedsInferenceAndASingleReader) {
  const TensorPtr w = RandomTensor(DType::Float32(), Shape{4, 3, 3, 3});
  const TensorPtr mean = RandomTensor(DType::Float32(), Shape{4}), var = RandomTensor(DType::Float32(), Shape{4}, 0.5, 1);
  for (const bool training : {false, true}) {
    SCOPED_TRACE(training ? "training" : "inference");
    Ir ir = Trace(DType::Float32(), {Shape{2, 3, 6, 6}}, [&](const std::vector<TensorPtr>& x) {
      const TensorPtr y = ops::Conv2d(x[0], w, nullptr, ops::Conv2dOptions{.padding = {1, 1}});
      return std::vector<TensorPtr>{
          ops::Relu(ops::BatchNorm(y, nullptr, nullptr, mean, var, ops::BatchNormOptions{.training = training}))};
    });
    EliminateDeadCode(ir);
    FoldBatchNorm(ir);
    const std::vector<const IrNode*> alive = Alive(ir);
    if (training) {
      ASSERT_EQ(alive.size(), 3u);
      EXPECT_EQ(alive[0]->op->name, "conv2d");
      continue;
    }
    ASSERT_EQ(alive.size(), 1u);
    EXPECT_EQ(alive[0]->op->name, "fused_conv_bn_act");
    EXPECT_EQ(alive[0]->origin, "conv2d+batch_norm+relu");
    EXPECT_TRUE(alive[0]->attrs.Bool("relu"));
    EXPECT_EQ(alive[0]->attrs.Ints("padding"), (std::vector<int64_t>{1, 1}));
  }
}

// batch_norm_add_relu in inference folds with its ReLU, but not with an addend (the add stays in its pass).
TEST_F(PassTest, FoldBatchNormAddReluOnlyWithoutAddend) {
  const TensorPtr w = RandomTensor(DType::Float32(), Shape{4, 3, 3, 3});
  const TensorPtr mean = RandomTensor(DType::Float32(), Shape{4}),
                  var = RandomTensor(DType::Float32(), Shape{4}, 0.5, 1);
  for (const bool with_addend : {false, true}) {
    SCOPED_TRACE(with_addend ? "addend" : "no addend");
    Ir ir = Trace(DType::Float32(), {Shape{2, 3, 6, 6}, Shape{2, 4, 6, 6}}, [&](const std::vector<TensorPtr>& x) {
      const TensorPtr y = ops::Conv2d(x[0], w, nullptr, ops::Conv2dOptions{.padding = {1, 1}});
      return std::vector<TensorPtr>{ops::BatchNormAddRelu(y, with_addend ? x[1] : nullptr, nullptr, nullptr, mean, var,
                                                          ops::BatchNormOptions{.training = false})};
    });
    EliminateDeadCode(ir);
    FoldBatchNorm(ir);
    const std::vector<const IrNode*> alive = Alive(ir);
    if (with_addend) {
      ASSERT_EQ(alive.size(), 2u);
      EXPECT_EQ(alive[1]->op->name, "batch_norm_add_relu");
      continue;
    }
    ASSERT_EQ(alive.size(), 1u);
    EXPECT_EQ(alive[0]->op->name, "fused_conv_bn_act");
    EXPECT_EQ(alive[0]->origin, "conv2d+batch_norm_add_relu");
    EXPECT_TRUE(alive[0]->attrs.Bool("relu"));
    EXPECT_EQ(alive[0]->inputs.size(), 7u);  // x, weight, bias (none), then the four batch-norm inputs
  }
}

// Note [Batch norm, add and ReLU in one pass]: in training, batch_norm -> relu and batch_norm -> add ->
// relu become batch_norm_add_relu (the addend last, the relu's output first); not where y has another
// reader, not for a broadcasting add, not in inference (FoldBatchNorm's).
TEST_F(PassTest, FuseBatchNormReluInTraining) {
  const TensorPtr mean = RandomTensor(DType::Float32(), Shape{4}),
                  var = RandomTensor(DType::Float32(), Shape{4}, 0.5, 1);
  enum Case { kRelu, kAddRelu, kAddBroadcast, kTwoReaders, kInference };
  for (const Case c : {kRelu, kAddRelu, kAddBroadcast, kTwoReaders, kInference}) {
    SCOPED_TRACE(static_cast<int>(c));
    Ir ir = Trace(
        DType::Float32(), {Shape{2, 4, 5, 5}, Shape{2, 4, 5, 5}, Shape{4, 1, 1}}, [&](const std::vector<TensorPtr>& x) {
          const TensorPtr y =
              ops::BatchNorm(x[0], nullptr, nullptr, mean, var, ops::BatchNormOptions{.training = c != kInference});
          switch (c) {
            case kAddRelu:
              return std::vector<TensorPtr>{ops::Relu(ops::Add(x[1], y))};
            case kAddBroadcast:
              return std::vector<TensorPtr>{ops::Relu(ops::Add(y, x[2]))};
            case kTwoReaders:
              return std::vector<TensorPtr>{ops::Relu(y), ops::Exp(y)};
            default:
              return std::vector<TensorPtr>{ops::Relu(y)};
          }
        });
    EliminateDeadCode(ir);
    const int32_t relu_output = ir.nodes[c == kAddRelu || c == kAddBroadcast ? 2 : 1].outputs[0];
    FuseBatchNormRelu(ir);
    const std::vector<const IrNode*> alive = Alive(ir);
    if (c == kAddBroadcast || c == kTwoReaders || c == kInference) {
      EXPECT_EQ(alive[0]->op->name, "batch_norm");
      continue;
    }
    ASSERT_EQ(alive.size(), 1u);
    EXPECT_EQ(alive[0]->op->name, "batch_norm_add_relu");
    EXPECT_EQ(alive[0]->origin, c == kAddRelu ? "batch_norm+add+relu" : "batch_norm+relu");
    ASSERT_EQ(alive[0]->inputs.size(), 6u);
    EXPECT_EQ(alive[0]->inputs[5], c == kAddRelu ? ir.inputs[1] : -1);
    EXPECT_EQ(alive[0]->outputs[0], relu_output);
    EXPECT_TRUE(alive[0]->attrs.Bool("training"));
  }
}

// Note [Channels-last activations]: convolutions write channels last, the ops after them keep it, a view
// whose strides are row-major again (flatten of (N, C, 1, 1)) is contiguous, and so is a flatten of (N, C,
// H, W) channels last, which cannot be a view and copies (the pass's stand-in has the bytes it reads: this
// overflowed a 1-byte stand-in under ASan); float64 stays contiguous.
TEST_F(PassTest, SelectKernelsLaysActivationsOutChannelsLast) {
  for (const Symbol<DType> dtype : {DType::Float32(), DType::Float64()}) {
    SCOPED_TRACE(dtype->name());
    const TensorPtr w = RandomTensor(dtype, Shape{4, 3, 3, 3});
    const TensorPtr mean = RandomTensor(dtype, Shape{4}), var = RandomTensor(dtype, Shape{4}, 0.5, 1);
    std::vector<TensorPtr> traced;
    Ir ir = Trace(dtype, {Shape{2, 3, 6, 6}}, [&](const std::vector<TensorPtr>& x) {
      const TensorPtr y = ops::Conv2d(x[0], w, nullptr, ops::Conv2dOptions{.padding = {1, 1}});
      const TensorPtr z = ops::Relu(ops::BatchNorm(y, nullptr, nullptr, mean, var, ops::BatchNormOptions{.training = true}));
      const TensorPtr pooled = ops::AdaptiveAvgPool2d(z, {1, 1});
      traced = {y, z, ops::Flatten(pooled, 1, -1), ops::Flatten(z, 1, -1)};
      return traced;
    }, "layouts_" + std::string(dtype->name()));
    SelectKernels(ir);
    const MemoryFormat expected =
        dtype == DType::Float32() ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous;
    EXPECT_EQ(ir.meta(traced[0]->lazy_value()).format, expected) << "conv2d";
    EXPECT_EQ(ir.meta(traced[1]->lazy_value()).format, expected) << "relu(batch_norm)";
    EXPECT_EQ(ir.meta(traced[2]->lazy_value()).format, MemoryFormat::kContiguous) << "flatten (N, C, 1, 1)";
    EXPECT_EQ(ir.meta(traced[3]->lazy_value()).format, MemoryFormat::kContiguous) << "flatten (N, C, H, W)";
    EXPECT_EQ(ir.meta(ir.inputs[0]).format, MemoryFormat::kContiguous) << "the input";
    for (const IrNode* n : Alive(ir)) {
      if (n->op->view == nullptr) {
        EXPECT_NE(n->kernel, nullptr) << n->op->name;
      }
    }
  }
}

TEST_F(PassTest, ScheduleUpdatesMovesEachUpdateRightAfterWhatItDependsOn) {
  // A training step: two layers, the second reading its weight through a transposed view, an output read
  // from another view of it after the backward, and an SGD update per parameter traced at the end.
  auto [g, params, opt] = BeginTraining("train", {Shape{6, 4}, Shape{3, 6}});
  const TensorPtr x = g.AddInput("x", DType::Float64(), Shape{2, 4});
  const TensorPtr h = ops::Relu(ops::Linear(x, params[0], nullptr));
  const TensorPtr loss = ops::Sum(ops::Matmul(h, ops::Transpose(params[1], 0, 1)), {}, false);
  Backward({loss}, {TensorPtr()});
  const TensorPtr w2_sum = ops::Sum(ops::Transpose(params[1], 0, 1), {}, false);  // the weight before its update
  g.AddOptimizer(opt);
  g.AddOutput(loss);
  g.AddOutput(w2_sum);
  g.EndBuild();
  Ir ir = TrainingIr(g, Shape{2, 4});
  const Ir traced = ir;
  ScheduleUpdates(ir);
  ASSERT_EQ(ir.nodes.size(), traced.nodes.size());
  // A value and the views made of it are one memory.
  std::vector<int32_t> memory_of(ir.metas.size());
  for (size_t v = 0; v < memory_of.size(); ++v) memory_of[v] = static_cast<int32_t>(v);
  for (const IrNode& n : traced.nodes) {
    if (n.op->view != nullptr)
      memory_of[static_cast<size_t>(n.outputs[0])] = memory_of[static_cast<size_t>(n.inputs[0])];
  }
  const auto reads = [&](const IrNode& n, int32_t memory) {
    return std::any_of(n.inputs.begin(), n.inputs.end(),
                       [&](int32_t v) { return v >= 0 && memory_of[static_cast<size_t>(v)] == memory; });
  };
  const auto position =
      [&](const IrNode& node) {  // in the scheduled order: nodes are told apart by their outputs or inputs
        for (size_t k = 0; k < ir.nodes.size(); ++k) {
          if (ir.nodes[k].op == node.op && ir.nodes[k].inputs == node.inputs && ir.nodes[k].outputs == node.outputs)
            return k;
        }
        ADD_FAILURE() << "node " << node.op->name << " lost";
        return size_t{0};
      };
  size_t updates = 0;
  for (size_t k = 0; k < traced.nodes.size(); ++k) {
    const IrNode& u = traced.nodes[k];
    if (u.op->gradient_input < 0) continue;
    ++updates;
    const size_t at = position(u);
    const int32_t param = memory_of[static_cast<size_t>(u.inputs[0])];
    const int32_t grad = u.inputs[static_cast<size_t>(u.op->gradient_input)];
    // Every node traced before the update that reads its parameter (or a view of it) still runs before
    // it, and so does the gradient's producer; the update follows right after one of them.
    bool follows_a_dependency = false;
    for (size_t j = 0; j < k; ++j) {
      const IrNode& n = traced.nodes[j];
      const bool depends = reads(n, param) || std::find(n.outputs.begin(), n.outputs.end(), grad) != n.outputs.end();
      if (!depends) continue;
      SCOPED_TRACE(fmt::format("update of {} after {}", ir.metas[static_cast<size_t>(param)].shape, n.op->name));
      EXPECT_LT(position(n), at);
      follows_a_dependency |= position(n) + 1 == at;
    }
    EXPECT_TRUE(follows_a_dependency) << "the update of value " << param << " is not right after a dependency";
  }
  EXPECT_EQ(updates, params.size());
  // The first layer's update (traced first) now runs before the sum of the second layer's weight, which
  // was traced after the backward.
  size_t first_update = ir.nodes.size(), sum = 0;
  for (size_t k = 0; k < ir.nodes.size(); ++k) {
    const IrNode& n = ir.nodes[k];
    if (n.op->gradient_input >= 0 && ir.meta(n.inputs[0]).shape == Shape{6, 4}) first_update = k;
    if (n.op->name == "sum") sum = k;
  }
  EXPECT_LT(first_update, sum);
}

// Note [Gradient buckets]: each bucket's all_reduce starts after its last gradient is produced and is
// waited for before the first update reading it; the updates read views of the averaged buffer.
TEST_F(PassTest, AllReduceGradientsBucketsStartEarlyAndWaitLate) {
  auto [g, params, opt] = BeginTraining("dp", {Shape{3, 4}, Shape{5, 4}, Shape{2, 4}});
  const TensorPtr x = g.AddInput("x", DType::Float64(), Shape{2, 4});
  TensorPtr loss = ops::Sum(ops::Linear(x, params[0], nullptr), {}, false);
  for (size_t i = 1; i < params.size(); ++i) loss = ops::Add(loss, ops::Sum(ops::Linear(x, params[i], nullptr), {}, false));
  Backward({loss}, {TensorPtr()});
  g.AddOptimizer(opt);
  g.AddOutput(loss);
  g.EndBuild();
  Ir ir = TrainingIr(g, Shape{2, 4});
  // 2 * 8 * 4 bytes fit one bucket with the 3x4 gradient (96 bytes) or the 2x4 (64), not both with 5x4.
  AllReduceGradients(ir, /*group=*/42, /*bucket_bytes=*/100);
  ScheduleUpdates(ir);  // keeps the updates after their waits
  std::vector<std::string> names;
  for (const IrNode& n : ir.nodes) names.push_back(n.op->name);
  const auto count = [&](std::string_view op) { return std::count(names.begin(), names.end(), op); };
  EXPECT_EQ(count("all_reduce_start"), 3);
  EXPECT_EQ(count("all_reduce_wait"), 3);
  // Every start precedes every update, and each update reads a view made after its bucket's wait.
  const auto first_update = std::find(names.begin(), names.end(), "sgd_update") - names.begin();
  for (size_t k = 0; k < names.size(); ++k) {
    if (names[k] == "all_reduce_start") {
      EXPECT_LT(static_cast<ptrdiff_t>(k), first_update);
    }
  }
  const std::vector<int32_t> producer = ir.Producers();
  for (const IrNode& n : ir.nodes) {
    if (n.op->gradient_input < 0) continue;
    const int32_t view_at = producer[static_cast<size_t>(n.inputs[1])];
    EXPECT_EQ(ir.nodes[static_cast<size_t>(view_at)].op->name, "view");
    EXPECT_LT(view_at, &n - ir.nodes.data());
  }
  for (const IrNode& n : ir.nodes) {
    if (n.op->name == "all_reduce_start") {
      EXPECT_EQ(n.attrs.Int("group"), 42);
    }
  }
}

}  // namespace
}  // namespace oneflow::graph
