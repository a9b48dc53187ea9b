// The collectives (core/dist/collectives.h) in one process, a group of world size 1: every dtype through
// each op against the values it must give there (all_reduce and broadcast return x, all_gather (1, *x)),
// errors, and a group destroyed under a traced graph. Groups of 2 and 3 processes are tests/dist/.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/dist/collectives.h"
#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

using dist::ReduceOp;

// A fresh rendezvous directory, removed with the fixture.
class OneRankGroup : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/of_collectives_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    group_ = dist::ProcessGroup::Create({.rank = 0, .world_size = 1, .rendezvous = dir_});
  }
  void TearDown() override {
    group_.reset();
    std::system(("rm -rf " + dir_).c_str());
  }
  std::string dir_;
  std::shared_ptr<dist::ProcessGroup> group_;
};

TEST_F(OneRankGroup, EveryDTypeThroughEachCollective) {
  for (DataType d : kAllTypes) {
    const Symbol<DType> dt = DType::Get(d);
    SCOPED_TRACE(dt->name());
    const TensorPtr x = RandomTensor(dt, Shape{3, 5}, -20, 20);
    const std::vector<double> xv = ToDoubles(x);
    if (!dt->is_bool()) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
        if (op == ReduceOp::kMean && !dt->is_floating_point()) continue;
        const TensorPtr y = ops::AllReduce(group_, NonContiguous(x), op);
        ExpectTensorNear(y, dt, Shape{3, 5}, xv, 0, 0);
      }
      MarkCovered("all_reduce", dt);
    }
    ExpectTensorNear(ops::Broadcast(group_, x, 0), dt, Shape{3, 5}, xv, 0, 0);
    MarkCovered("broadcast", dt);
    ExpectTensorNear(ops::AllGather(group_, Transposed(x)), dt, Shape{1, 3, 5}, xv, 0, 0);
    MarkCovered("all_gather", dt);
  }
}

// The pair data-parallel graphs average gradients with (passes/all_reduce_gradients.cpp): start, then wait.
TEST_F(OneRankGroup, AllReduceStartThenWait) {
  const OpDef& start = OpRegistry::Global().Get("all_reduce_start");
  const OpDef& wait = OpRegistry::Global().Get("all_reduce_wait");
  for (DataType d : kAllTypes) {
    const Symbol<DType> dt = DType::Get(d);
    if (dt->is_bool()) continue;
    SCOPED_TRACE(dt->name());
    const TensorPtr x = RandomTensor(dt, Shape{7}, -20, 20);
    const Attrs attrs{{"group", group_->id()}, {"op", static_cast<int64_t>(ReduceOp::kSum)}};
    const TensorPtr y = Apply1(start, {x}, attrs);
    EXPECT_EQ(Apply1(wait, {y}, {{"group", group_->id()}})->numel(), 0);
    ExpectTensorNear(y, dt, Shape{7}, ToDoubles(x), 0, 0);
    MarkCovered("all_reduce_start", dt);
    MarkCovered("all_reduce_wait", dt);
  }
}

TEST_F(OneRankGroup, Errors) {
  const TensorPtr b = RandomTensor(DType::Bool(), Shape{4});
  ExpectError([&] { ops::AllReduce(group_, b, ReduceOp::kSum); }, {"all_reduce: ", "bool"});
  ExpectError([&] { ops::AllReduce(group_, RandomTensor(DType::Int32(), Shape{4}), ReduceOp::kMean); },
              {"all_reduce: ", "mean needs a floating x", "int32"});
  ExpectError([&] { ops::Broadcast(group_, b, 1); }, {"broadcast: ", "root must be a rank in [0, 1)", "got 1"});
  ExpectError([&] { ops::AllReduce(group_, b, static_cast<ReduceOp>(7)); }, {"all_reduce: ", "op must be one of"});
  // Options.
  ExpectError([&] { dist::ProcessGroup::Create({.rank = 2, .world_size = 2, .rendezvous = dir_}); },
              {"rank must be in [0, world_size = 2)", "got 2"});
  ExpectError([&] { dist::ProcessGroup::Create({.rank = 0, .world_size = 0, .rendezvous = dir_}); },
              {"world_size must be >= 1"});
  ExpectError([&] { dist::ProcessGroup::Create({.rank = 0, .world_size = 1, .rendezvous = "/nonexistent/dir"}); },
              {"rendezvous directory '/nonexistent/dir' is not a writable directory"});
  ExpectError([&] { dist::ProcessGroup::Create({.rank = 0, .world_size = 1, .rendezvous = "tcp://127.0.0.1:70000"}); },
              {"port must be in [1, 65535]"});
}

TEST_F(OneRankGroup, TcpRendezvous) {
  // Rank 0 of a one-rank group serves its own store.
  const auto g = dist::ProcessGroup::Create(
      {.rank = 0, .world_size = 1, .rendezvous = fmt::format("tcp://127.0.0.1:{}", FreeTcpPort())});
  ExpectTensorNear(ops::AllReduce(g, FromDoubles(DType::Float32(), {2}, {1, 2}), ReduceOp::kSum), DType::Float32(),
                   {2}, {1, 2}, 0, 0);
}

TEST_F(OneRankGroup, AGraphTracesCollectivesAndNeedsItsGroup) {
  const auto session = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session);
  graph::Graph g(session, "collectives", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr x = g.AddInput("x", DType::Float64(), Shape{Dim::Unknown(), 2});
  ops::AllReduce(group_, x, ReduceOp::kSum);  // unused, yet kept: every rank must take part
  g.AddOutput(ops::AllGather(group_, ops::Broadcast(group_, x, 0)));
  g.EndBuild();
  const TensorPtr in = FromDoubles(DType::Float64(), {2, 2}, {1, 2, 3, 4});
  ExpectTensorNear(g.Run({in})[0], DType::Float64(), {1, 2, 2}, {1, 2, 3, 4}, 0, 0);
  EXPECT_NE(g.Dump().find("all_reduce"), std::string::npos) << g.Dump();
  group_.reset();
  ExpectError([&] { g.Run({in}); }, StatusCode::kFailedPrecondition, {"was destroyed"});
}

}  // namespace
}  // namespace oneflow::test
