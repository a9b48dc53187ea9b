#include "core/ops/cpu/in_float32.h"

#include <algorithm>

#include "core/ops/cpu/elementwise_loops.h"
#include "core/tensor/factory.h"

namespace oneflow::cpu {
namespace {

// A float32 tensor of t's shape, device and memory format.
TensorPtr Float32Like(const Tensor& t) { return Empty(DType::Float32(), t.shape(), t.device(), t.memory_format()); }

}  // namespace

void InFloat32(KernelContext& ctx) {
  OF_CHECK_INTERNAL(ctx.op != nullptr) << "a half-precision kernel was called without its op";
  const OpDef& op = *ctx.op;
  const KernelDef* f32 = op.FindKernel(DeviceType::kCPU, DType::Float32());
  OF_CHECK_INTERNAL(f32 != nullptr && f32->fn != &InFloat32) << op.name << " has no float32 CPU kernel";

  std::vector<TensorPtr> inputs(ctx.inputs.begin(), ctx.inputs.end());
  std::vector<bool> widened(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i] || !inputs[i]->dtype()->is_half()) continue;
    TensorPtr wide = Float32Like(*inputs[i]);
    CastInto(*inputs[i], *wide, ctx.pool);
    inputs[i] = std::move(wide);
    widened[i] = true;
  }
  std::vector<TensorPtr> outputs(ctx.outputs.begin(), ctx.outputs.end());
  std::vector<bool> narrowed(outputs.size(), false);
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (!outputs[j]->dtype()->is_half()) continue;
    outputs[j] = Float32Like(*outputs[j]);
    narrowed[j] = true;
  }

  KernelContext wide{inputs, outputs, ctx.attrs, ctx.pool, ctx.generator, &op};
  f32->fn(wide);

  for (size_t j = 0; j < outputs.size(); ++j) {
    if (narrowed[j]) CastInto(*outputs[j], ctx.out(j), ctx.pool);
  }
  if (!op.WritesInputs(ctx.attrs)) return;
  for (int m : op.mutated_inputs) {
    const auto i = static_cast<size_t>(m);
    if (!widened[i]) continue;
    CastInto(*inputs[i], ctx.in(i), ctx.pool);  // dense: dispatch makes a mutated input so or refuses it
  }
}

std::vector<KernelDef> WithHalfInFloat32(std::vector<KernelDef> kernels) {
  const auto f32 = std::find_if(kernels.begin(), kernels.end(), [](const KernelDef& k) {
    return k.device == DeviceType::kCPU &&
           std::find(k.dtypes.begin(), k.dtypes.end(), DataType::kFloat32) != k.dtypes.end();
  });
  OF_CHECK_INTERNAL(f32 != kernels.end()) << "WithHalfInFloat32 needs a float32 CPU kernel";
  const bool channels_last = f32->channels_last;
  kernels.push_back(KernelDef{DeviceType::kCPU, kHalfTypes, &InFloat32, channels_last});
  return kernels;
}

}  // namespace oneflow::cpu

namespace oneflow {

std::vector<KernelDef> CpuKernels(const std::vector<DataType>& types, KernelFn fn, bool channels_last) {
  std::vector<KernelDef> kernels = {KernelDef{DeviceType::kCPU, types, fn, channels_last}};
  const auto has = [&](DataType d) { return std::find(types.begin(), types.end(), d) != types.end(); };
  if (has(DataType::kFloat32) && !has(DataType::kFloat16)) return cpu::WithHalfInFloat32(std::move(kernels));
  return kernels;
}

}  // namespace oneflow
