// The collectives as ops (core/dist/collectives.h): all_reduce, broadcast and all_gather of a process
// group (core/dist/process_group.h), eager and in graphs, and the pair all_reduce_start / all_reduce_wait
// that data-parallel graphs average their gradients with. Each op names its group by id (attribute
// "group"); a call whose group was destroyed is FAILED_PRECONDITION. They are not differentiable, and
// they are `collective` ops, which the graph compiler never removes or reorders (every rank must issue the
// same collectives in the same order).
#include "core/dist/collectives.h"

#include <cstring>

#include "core/device/device.h"
#include "core/op/dispatch.h"
#include "core/ops/register.h"
#include "core/tensor/copy.h"

namespace oneflow {
namespace {

using dist::ProcessGroup;
using dist::ReduceOp;

// The group an op call names, alive.
std::shared_ptr<ProcessGroup> GroupOf(const Attrs& attrs) {
  std::shared_ptr<ProcessGroup> g = ProcessGroup::Find(attrs.Int("group"));
  if (!g) {
    OF_THROW(FailedPrecondition) << "process group " << attrs.Int("group")
                                 << " was destroyed; a collective needs its group alive";
  }
  return g;
}

ReduceOp OpOf(const Attrs& attrs) {
  const int64_t op = attrs.Int("op");
  OF_CHECK(op >= 0 && op <= 3) << "op must be one of OF_REDUCE_SUM (0), MEAN (1), MAX (2), MIN (3), got " << op;
  return static_cast<ReduceOp>(op);
}

std::vector<TensorMeta> InferAllReduce(std::span<const TensorMeta> in, const Attrs& attrs) {
  const ReduceOp op = OpOf(attrs);
  OF_CHECK(!in[0].dtype->is_bool()) << "x is bool, which cannot be reduced (cast it to an integer dtype)";
  OF_CHECK(op != ReduceOp::kMean || in[0].dtype->is_floating_point())
      << "mean needs a floating x, got " << in[0].dtype << " (reduce with sum and divide)";
  return {{in[0].dtype, in[0].shape, in[0].device}};
}

std::vector<TensorMeta> InferBroadcast(std::span<const TensorMeta> in, const Attrs& attrs) {
  const int64_t root = attrs.Int("root"), world = attrs.Int("world_size");
  OF_CHECK(root >= 0 && root < world) << "root must be a rank in [0, " << world << "), got " << root;
  return {{in[0].dtype, in[0].shape, in[0].device}};
}

std::vector<TensorMeta> InferAllGather(std::span<const TensorMeta> in, const Attrs& attrs) {
  Shape y = in[0].shape;
  y.insert(0, Dim(attrs.Int("world_size")));
  return {{in[0].dtype, y, in[0].device}};
}

// x, contiguous: on the CPU a copy where x is strided; on CUDA (Note [NCCL]), which has no strided copy yet,
// x itself, which must be contiguous.
TensorPtr ContiguousInput(KernelContext& ctx) {
  if (ctx.in(0).device().type == DeviceType::kCPU) return MakeContiguous(ctx.inputs[0], &ctx.pool);
  OF_CHECK(ctx.in(0).is_contiguous()) << "x on " << ctx.in(0).device()
                                      << " must be contiguous for a collective (make it contiguous first)";
  return ctx.inputs[0];
}

// y = x's elements (any layout).
void CopyInput(KernelContext& ctx) {
  if (ctx.in(0).device().type == DeviceType::kCPU) return CopyStrided(ctx.in(0), ctx.out(0), &ctx.pool);
  const TensorPtr x = ContiguousInput(ctx);
  GetBackend(x->device()).Copy(ctx.out(0).raw_data(), x->raw_data(), x->nbytes());
}

// y = x's elements, then the collective in place on y.
void AllReduceKernel(KernelContext& ctx) {
  CopyInput(ctx);
  GroupOf(ctx.attrs)->AllReduce(ctx.out(0), OpOf(ctx.attrs), ctx.attrs.Bool("checked"));
}

void BroadcastKernel(KernelContext& ctx) {
  const std::shared_ptr<ProcessGroup> g = GroupOf(ctx.attrs);
  if (g->rank() == ctx.attrs.Int("root")) CopyInput(ctx);
  g->Broadcast(ctx.out(0), static_cast<int32_t>(ctx.attrs.Int("root")));
}

void AllGatherKernel(KernelContext& ctx) {
  const std::shared_ptr<ProcessGroup> g = GroupOf(ctx.attrs);
  OF_CHECK(g->world_size() == ctx.attrs.Int("world_size"))
      << "the group has " << g->world_size() << " ranks, but the call was traced for " << ctx.attrs.Int("world_size");
  g->AllGather(*ContiguousInput(ctx), ctx.out(0));
}

// Graph-internal (passes/all_reduce_gradients.cpp): y = x, then all_reduce on y started on the group's
// thread; all_reduce_wait(y) returns once it is done (an empty output: it only orders the steps).
void AllReduceStartKernel(KernelContext& ctx) {
  CopyInput(ctx);
  const std::shared_ptr<ProcessGroup> g = GroupOf(ctx.attrs);
  g->Track(ctx.out(0).raw_data(), g->AllReduceAsync(ctx.outputs[0], OpOf(ctx.attrs)));
}
void AllReduceWaitKernel(KernelContext& ctx) { GroupOf(ctx.attrs)->WaitFor(ctx.in(0).raw_data()); }
std::vector<TensorMeta> InferWait(std::span<const TensorMeta> in, const Attrs&) {
  return {{in[0].dtype, Shape{0}, in[0].device}};
}

OpDef CollectiveOp(std::string name, InferFn infer, KernelFn kernel, std::vector<AttrSpec> attrs,
                   std::vector<DataType> dtypes) {
  attrs.insert(attrs.begin(), AttrSpec{"group", int64_t{0}, /*required=*/true});
  std::vector<KernelDef> kernels = {{DeviceType::kCPU, dtypes, kernel}};
  if (BuiltWithCuda()) kernels.push_back({DeviceType::kCUDA, dtypes, kernel});  // over NCCL (Note [NCCL])
  return OpDef{.name = std::move(name),
               .inputs = {"x"},
               .outputs = {"y"},
               .attrs = std::move(attrs),
               .infer = infer,
               .kernels = std::move(kernels),
               .strided_inputs = true,
               .collective = true};
}

}  // namespace

void RegisterCollectiveOps(OpRegistry& registry) {
  std::vector<DataType> numeric = kNumericTypes;
  numeric.push_back(DataType::kFloat16);
  numeric.push_back(DataType::kBFloat16);
  // checked = false: the caller knows every rank passes the same shape (the graph's gradient buckets,
  // checked once per compiled plan).
  registry.Register(CollectiveOp("all_reduce", InferAllReduce, AllReduceKernel,
                                 {{"op", int64_t{0}}, {"checked", true}}, numeric));
  registry.Register(CollectiveOp("all_reduce_start", InferAllReduce, AllReduceStartKernel, {{"op", int64_t{0}}}, numeric));
  registry.Register(CollectiveOp("all_reduce_wait", InferWait, AllReduceWaitKernel, {}, numeric));
  registry.Register(CollectiveOp("broadcast", InferBroadcast, BroadcastKernel,
                                 {{"root", int64_t{0}}, {"world_size", int64_t{1}, true}}, kAllTypes));
  registry.Register(CollectiveOp("all_gather", InferAllGather, AllGatherKernel, {{"world_size", int64_t{1}, true}},
                                 kAllTypes));
}

namespace ops {
TensorPtr AllReduce(const std::shared_ptr<dist::ProcessGroup>& group, const TensorPtr& x, dist::ReduceOp op) {
  static const OpDef& def = OpRegistry::Global().Get("all_reduce");
  return Apply1(def, {x}, {{"group", group->id()}, {"op", static_cast<int64_t>(op)}});
}
TensorPtr Broadcast(const std::shared_ptr<dist::ProcessGroup>& group, const TensorPtr& x, int64_t root) {
  static const OpDef& def = OpRegistry::Global().Get("broadcast");
  return Apply1(def, {x}, {{"group", group->id()}, {"root", root}, {"world_size", int64_t{group->world_size()}}});
}
TensorPtr AllGather(const std::shared_ptr<dist::ProcessGroup>& group, const TensorPtr& x) {
  static const OpDef& def = OpRegistry::Global().Get("all_gather");
  return Apply1(def, {x}, {{"group", group->id()}, {"world_size", int64_t{group->world_size()}}});
}
}  // namespace ops

}  // namespace oneflow
