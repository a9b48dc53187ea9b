// Reductions on CUDA (reduce.cu): sum, mean, max, min, argmax, var, std and sum_to_shape read x at any
// strides; broadcast_like (their gradient) is an elementwise kernel with y read at broadcast strides.
#include "core/ops/cpu/reduce_loops.h"
#include "core/ops/cuda/cuda_kernel.h"

namespace oneflow::cuda {
namespace {

using cpu::reduce::BroadcastLikeScale;
using cpu::reduce::BroadcastLikeStrides;
using cpu::reduce::ReducedMask;
using cpu::reduce::SumToShapeMask;

// Launches `kind` over x's dims where `mask` is set.
void Reduce(const KernelContext& ctx, ReduceKind kind, const std::vector<bool>& mask, double denominator = 0) {
  const Tensor& x = ctx.in(0);
  const Tensor& y = ctx.out(0);
  if (x.ndim() > kMaxDims)
    OF_THROW(Unimplemented) << OpName(ctx) << ": CUDA reductions take at most " << kMaxDims << " dims";
  ReduceArgs args;
  args.num_reduced = 1;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const int64_t size = x.shape()[d].value(), stride = x.strides()[static_cast<size_t>(d)];
    if (mask[static_cast<size_t>(d)]) {
      args.reduced_sizes[args.reduced_ndim] = size;
      args.reduced_strides[args.reduced_ndim++] = stride;
      args.num_reduced *= size;
    } else {
      args.kept_sizes[args.kept_ndim] = size;
      args.kept_strides[args.kept_ndim++] = stride;
    }
  }
  args.num_outputs = y.numel();
  args.denominator = denominator;
  args.x = x.raw_data();
  args.y = y.raw_data();
  LaunchReduce(kind, ElementOf(x.dtype()), args, StreamFor(y.device()));
  CheckLaunch(OpName(ctx), y.device());
}

template <ReduceKind kKind>
void ReduceKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const std::vector<int64_t> dims =
      kKind == ReduceKind::kArgmax ? std::vector<int64_t>{ctx.attrs.Int("dim")} : ctx.attrs.Ints("dims");
  const std::vector<bool> mask = ReducedMask(x.ndim(), dims);
  double denominator = 0;
  if constexpr (kKind == ReduceKind::kVar || kKind == ReduceKind::kStd) {
    int64_t n = 1;
    for (int64_t d = 0; d < x.ndim(); ++d) {
      if (mask[static_cast<size_t>(d)]) n *= x.shape()[d].value();
    }
    denominator = std::max(0.0, static_cast<double>(n - ctx.attrs.Int("correction")));
  }
  Reduce(ctx, kKind, mask, denominator);
}

void SumToShapeKernel(KernelContext& ctx) {
  Reduce(ctx, ReduceKind::kSum, SumToShapeMask(ctx.in(0).shape(), ctx.out(0).shape()));
}

void BroadcastLikeKernel(KernelContext& ctx) {
  const Tensor& y = ctx.in(0);
  const Tensor& out = ctx.out(0);
  const ElementwiseOperand operand{y.raw_data(), BroadcastLikeStrides(y, out.shape(), ctx.attrs.Ints("dims")), false};
  RunElementwise(out, {&operand, 1}, FusedProgram{1, {}}, BroadcastLikeScale(y, out, ctx.attrs), OpName(ctx));
}

}  // namespace

void RegisterReduceKernels(OpRegistry& registry) {
  registry.AddKernel("sum", {DeviceType::kCUDA, kFloatingTypes, ReduceKernel<ReduceKind::kSum>});
  registry.AddKernel("mean", {DeviceType::kCUDA, kFloatingTypes, ReduceKernel<ReduceKind::kMean>});
  registry.AddKernel("max", {DeviceType::kCUDA, kFloatingTypes, ReduceKernel<ReduceKind::kMax>});
  registry.AddKernel("min", {DeviceType::kCUDA, kFloatingTypes, ReduceKernel<ReduceKind::kMin>});
  registry.AddKernel("argmax", {DeviceType::kCUDA, kFloatingTypes, ReduceKernel<ReduceKind::kArgmax>});
  registry.AddKernel("var", {DeviceType::kCUDA, kFloatingTypes, ReduceKernel<ReduceKind::kVar>});
  registry.AddKernel("std", {DeviceType::kCUDA, kFloatingTypes, ReduceKernel<ReduceKind::kStd>});
  registry.AddKernel("sum_to_shape", {DeviceType::kCUDA, kFloatingTypes, SumToShapeKernel});
  registry.AddKernel("broadcast_like", {DeviceType::kCUDA, kFloatingTypes, BroadcastLikeKernel});
}

}  // namespace oneflow::cuda
