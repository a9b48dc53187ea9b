// The SGD update on CUDA (optimizer.cu): the parameter and its momentum buffer updated in place on the
// device, the loss scaler's found_inf and scale read there too (no copy to the host).
#include "core/ops/cuda/cuda_kernel.h"

namespace oneflow::cuda {
namespace {

void SgdUpdateKernel(KernelContext& ctx) {
  const Tensor& param = ctx.in(0);
  SgdArgs a;
  a.n = param.numel();
  a.param = param.raw_data();
  a.grad = ctx.in(1).raw_data();
  a.lr = ctx.attrs.Float("lr");
  a.momentum = ctx.attrs.Float("momentum");
  a.dampening = ctx.attrs.Float("dampening");
  a.weight_decay = ctx.attrs.Float("weight_decay");
  a.nesterov = ctx.attrs.Bool("nesterov");
  a.first_step = ctx.attrs.Bool("first_step");
  if (a.momentum != 0.0) a.buf = ctx.in(2).raw_data();
  if (ctx.inputs[3]) a.found_inf = ctx.in(3).data<const float>();
  if (ctx.inputs[4]) a.scale = ctx.in(4).data<const float>();
  LaunchSgd(ElementOf(param.dtype()), a, StreamFor(param.device()));
  CheckLaunch(OpName(ctx), param.device());
}

}  // namespace

void RegisterOptimizerKernels(OpRegistry& registry) {
  registry.AddKernel("sgd_update", {DeviceType::kCUDA, {DataType::kFloat32, DataType::kFloat64}, SgdUpdateKernel});
}

}  // namespace oneflow::cuda
