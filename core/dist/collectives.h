// Collectives as ops (core/dist/collective_ops.cpp), on a process group (core/dist/process_group.h):
// eager, or traced into a graph like any op. Every rank must make the same calls, in the same order, with
// the same dtypes and shapes (checked: a mismatch is InvalidArgument naming the ranks).
#pragma once

#include <memory>

#include "core/dist/process_group.h"
#include "core/op/op_registry.h"

namespace oneflow {

void RegisterCollectiveOps(OpRegistry& registry);

namespace ops {
// The reduction of x over the ranks (numeric dtypes; kMean floating), a new tensor on every rank.
TensorPtr AllReduce(const std::shared_ptr<dist::ProcessGroup>& group, const TensorPtr& x, dist::ReduceOp op);
// Rank `root`'s x, on every rank.
TensorPtr Broadcast(const std::shared_ptr<dist::ProcessGroup>& group, const TensorPtr& x, int64_t root);
// (world_size, *x.shape): rank r's x at index r.
TensorPtr AllGather(const std::shared_ptr<dist::ProcessGroup>& group, const TensorPtr& x);
}  // namespace ops

}  // namespace oneflow
