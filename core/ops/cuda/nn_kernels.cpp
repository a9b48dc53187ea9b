// softmax, log_softmax, nll_loss, cross_entropy and their backward ops on CUDA (nn.cu), on contiguous tensors.
// The losses' targets (and class weights) are copied to the host and checked there as on the CPU
// (class_targets.h), which waits for the device: the price of an InvalidArgument naming a bad target.
#include "core/ops/class_targets.h"
#include "core/ops/cuda/cuda_kernel.h"
#include "core/tensor/factory.h"

namespace oneflow::cuda {
namespace {

static_assert(static_cast<int>(ops::Reduction::kNone) == static_cast<int>(LossReduction::kNone) &&
              static_cast<int>(ops::Reduction::kMean) == static_cast<int>(LossReduction::kMean) &&
              static_cast<int>(ops::Reduction::kSum) == static_cast<int>(LossReduction::kSum));

// The lines along attribute "dim" of t's shape (a 0-d tensor is one line of one element, as on the CPU).
SoftmaxArgs LinesOf(const Tensor& t, const Attrs& attrs) {
  const Shape& shape = t.shape();
  const int64_t dim = NormalizeAxis(attrs.Int("dim"), std::max<int64_t>(shape.ndim(), 1), "dim");
  SoftmaxArgs a;
  int64_t outer = 1;
  a.n = 1;
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    const int64_t size = shape[d].value();
    (d < dim ? outer : d == dim ? a.n : a.inner) *= size;
  }
  a.lines = outer * a.inner;
  return a;
}

template <bool kLog>
void SoftmaxKernel(KernelContext& ctx) {
  SoftmaxArgs a = LinesOf(ctx.in(0), ctx.attrs);
  a.x = ctx.in(0).raw_data();
  a.y = ctx.out(0).raw_data();
  LaunchSoftmax(kLog, /*backward=*/false, ElementOf(ctx.in(0).dtype()), a, StreamFor(ctx.out(0).device()));
  CheckLaunch(OpName(ctx), ctx.out(0).device());
}

// (y, dy) -> dx.
template <bool kLog>
void SoftmaxBackwardKernel(KernelContext& ctx) {
  SoftmaxArgs a = LinesOf(ctx.in(0), ctx.attrs);
  a.x = ctx.in(0).raw_data();
  a.dy = ctx.in(1).raw_data();
  a.y = ctx.out(0).raw_data();
  LaunchSoftmax(kLog, /*backward=*/true, ElementOf(ctx.in(0).dtype()), a, StreamFor(ctx.out(0).device()));
  CheckLaunch(OpName(ctx), ctx.out(0).device());
}

// A contiguous floating tensor's values in host memory, as doubles.
std::vector<double> ToHostDoubles(const TensorPtr& t) {
  const TensorPtr host = CopyToDevice(t, Device::CPU());
  std::vector<double> values(static_cast<size_t>(host->numel()));
  VisitDType(host->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(host->data<const T>()[i]);
  });
  return values;
}

// The loss call whose input (log-probabilities or logits) is input `x` of the kernel (0 forward, 1 backward;
// the targets and weights follow it), checked on the host.
LossArgs LossOf(const KernelContext& ctx, size_t x, bool nll) {
  const Tensor& input = ctx.in(x);
  const Tensor& target = ctx.in(x + 1);
  std::vector<int64_t> targets(static_cast<size_t>(target.numel()));
  CopyToHost(target, targets.data(), targets.size() * sizeof(int64_t));
  std::vector<double> weights;
  const bool weighted = x + 2 < ctx.inputs.size() && ctx.inputs[x + 2];
  if (weighted) weights = ToHostDoubles(ctx.inputs[x + 2]);
  const LossShape l = CheckTargets(input.shape(), targets.data(), weighted ? weights.data() : nullptr, ctx.attrs);
  LossArgs a;
  a.samples = l.samples();
  a.c = l.c;
  a.inner = l.inner;
  a.reduction = static_cast<LossReduction>(static_cast<int32_t>(l.reduction));
  a.ignore_index = l.ignore_index;
  a.total_weight = l.total_weight;
  a.label_smoothing = nll ? 0.0 : ctx.attrs.Float("label_smoothing");
  a.nll = nll;
  a.x = input.raw_data();
  a.target = target.data<const int64_t>();
  a.weight = weighted ? ctx.in(x + 2).raw_data() : nullptr;
  return a;
}

template <bool kNll>
void LossKernel(KernelContext& ctx) {
  LossArgs a = LossOf(ctx, 0, kNll);
  const Device device = ctx.out(0).device();
  a.out = ctx.out(0).raw_data();
  TensorPtr rows;  // kept until the kernels that use it are queued (the allocator reuses it in stream order)
  if (a.reduction != LossReduction::kNone) {
    rows = Empty(DType::Float64(), Shape{a.samples}, device);
    a.rows = rows->data<double>();
  }
  LaunchLoss(/*backward=*/false, ElementOf(ctx.in(0).dtype()), a, StreamFor(device));
  CheckLaunch(OpName(ctx), device);
}

// (dy, input, target, weight) -> dx.
template <bool kNll>
void LossBackwardKernel(KernelContext& ctx) {
  LossArgs a = LossOf(ctx, 1, kNll);
  a.dy = ctx.in(0).raw_data();
  a.out = ctx.out(0).raw_data();
  const Device device = ctx.out(0).device();
  LaunchLoss(/*backward=*/true, ElementOf(ctx.in(1).dtype()), a, StreamFor(device));
  CheckLaunch(OpName(ctx), device);
}

}  // namespace

void RegisterNnKernels(OpRegistry& registry) {
  registry.AddKernel("softmax", {DeviceType::kCUDA, kFloatingTypes, SoftmaxKernel<false>});
  registry.AddKernel("log_softmax", {DeviceType::kCUDA, kFloatingTypes, SoftmaxKernel<true>});
  registry.AddKernel("softmax_backward", {DeviceType::kCUDA, kFloatingTypes, SoftmaxBackwardKernel<false>});
  registry.AddKernel("log_softmax_backward", {DeviceType::kCUDA, kFloatingTypes, SoftmaxBackwardKernel<true>});
  registry.AddKernel("nll_loss", {DeviceType::kCUDA, kFloatingTypes, LossKernel<true>});
  registry.AddKernel("nll_loss_backward", {DeviceType::kCUDA, kFloatingTypes, LossBackwardKernel<true>});
  registry.AddKernel("cross_entropy", {DeviceType::kCUDA, kFloatingTypes, LossKernel<false>});
  registry.AddKernel("cross_entropy_backward", {DeviceType::kCUDA, kFloatingTypes, LossBackwardKernel<false>});
}

}  // namespace oneflow::cuda
