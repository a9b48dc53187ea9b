// The C ABI of process groups, collectives and data-parallel graphs (core/dist/, core/graph/graph.h).
#include <memory>
#include <string>

#include "capi/src/capi_internal.h"
#include "capi/src/op_call.h"
#include "core/dist/collectives.h"
#include "core/dist/process_group.h"
#include "core/graph/graph.h"

using namespace oneflow;
using capi::Borrow;
using capi::Guard;
using capi::ReadOptions;
using capi::Require;

// A group handle shares the group: a data-parallel graph keeps it alive past the handle.
struct of_process_group_t {
  std::shared_ptr<dist::ProcessGroup> impl;
};

namespace {

const std::shared_ptr<dist::ProcessGroup>& Group(const of_process_group_t* g) { return Require(g, "group")->impl; }

dist::ReduceOp ReduceOpArg(of_reduce_op_t op) {
  OF_CHECK(op >= OF_REDUCE_SUM && op <= OF_REDUCE_MIN)
      << "argument 'op' must be an OF_REDUCE_* value (0 to 3), got " << op;
  return static_cast<dist::ReduceOp>(op);
}

}  // namespace

extern "C" {

void of_process_group_options_init(of_process_group_options_t* options) {
  if (options == nullptr) return;
  const dist::ProcessGroupOptions d;
  *options = of_process_group_options_t{sizeof(of_process_group_options_t), d.rank, d.world_size, nullptr,
                                        static_cast<int64_t>(d.timeout.count()), nullptr};
}

of_status_t* of_process_group_create(const of_process_group_options_t* options, of_process_group_t** out_group) {
  return Guard(__func__, [&] {
    Require(options, "options");
    Require(out_group, "out_group");
    const of_process_group_options_t o = ReadOptions(options, of_process_group_options_init, "options");
    dist::ProcessGroupOptions po;
    po.rank = o.rank;
    po.world_size = o.world_size;
    po.rendezvous = Require(o.rendezvous, "options->rendezvous");
    OF_CHECK(o.timeout_ms > 0) << "options->timeout_ms must be > 0, got " << o.timeout_ms;
    po.timeout = std::chrono::milliseconds(o.timeout_ms);
    if (o.host != nullptr) po.host = o.host;
    auto g = std::make_unique<of_process_group_t>();
    g->impl = dist::ProcessGroup::Create(po);
    *out_group = g.release();
  });
}

void of_process_group_destroy(of_process_group_t* group) { delete group; }

of_status_t* of_process_group_rank(const of_process_group_t* group, int32_t* out_rank) {
  return Guard(__func__, [&] { *Require(out_rank, "out_rank") = Group(group)->rank(); });
}

of_status_t* of_process_group_world_size(const of_process_group_t* group, int32_t* out_world_size) {
  return Guard(__func__, [&] { *Require(out_world_size, "out_world_size") = Group(group)->world_size(); });
}

of_status_t* of_process_group_barrier(of_process_group_t* group) {
  return Guard(__func__, [&] { Group(group)->Barrier(); });
}

of_status_t* of_all_reduce(of_session_t* session, of_process_group_t* group, const of_tensor_t* x, of_reduce_op_t op,
                           of_tensor_t** out_tensor) {
  return capi::Run(__func__, session, out_tensor,
                   [&] { return ops::AllReduce(Group(group), Borrow(x, "x"), ReduceOpArg(op)); });
}

of_status_t* of_broadcast(of_session_t* session, of_process_group_t* group, const of_tensor_t* x, int32_t root,
                          of_tensor_t** out_tensor) {
  return capi::Run(__func__, session, out_tensor, [&] { return ops::Broadcast(Group(group), Borrow(x, "x"), root); });
}

of_status_t* of_all_gather(of_session_t* session, of_process_group_t* group, const of_tensor_t* x,
                           of_tensor_t** out_tensor) {
  return capi::Run(__func__, session, out_tensor, [&] { return ops::AllGather(Group(group), Borrow(x, "x")); });
}

void of_data_parallel_options_init(of_data_parallel_options_t* options) {
  if (options == nullptr) return;
  const graph::DataParallel d;
  *options = of_data_parallel_options_t{sizeof(of_data_parallel_options_t), static_cast<int64_t>(d.bucket_bytes),
                                        d.sync_batch_norm_stats};
}

of_status_t* of_graph_set_data_parallel(of_graph_t* graph, of_process_group_t* group,
                                        const of_data_parallel_options_t* options) {
  return Guard(__func__, [&] {
    graph::Graph& g = capi::GraphOf(graph);
    const std::shared_ptr<dist::ProcessGroup>& pg = Group(group);
    const of_data_parallel_options_t o = ReadOptions(options, of_data_parallel_options_init, "options");
    OF_CHECK(o.bucket_bytes > 0) << "options->bucket_bytes must be > 0, got " << o.bucket_bytes;
    g.SetDataParallel(graph::DataParallel{.group = pg,
                                          .bucket_bytes = static_cast<size_t>(o.bucket_bytes),
                                          .sync_batch_norm_stats = capi::Flag(o.sync_batch_norm_stats,
                                                                              "options->sync_batch_norm_stats")});
  });
}

}  // extern "C"
