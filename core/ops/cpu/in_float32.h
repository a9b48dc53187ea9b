// Half-precision CPU kernels computed by an op's float32 kernel (Note [Half precision in float32]).
#pragma once

#include <vector>

#include "core/op/op_registry.h"

namespace oneflow {

// The CPU kernel entries of an op whose kernel `fn` takes `types`: fn's, and where `types` hold float32
// but not float16, float16 and bfloat16 computed by fn in float32 (cpu::InFloat32). How every floating
// op gets its half-precision kernels.
std::vector<KernelDef> CpuKernels(const std::vector<DataType>& types, KernelFn fn, bool channels_last = false);

namespace cpu {

// Note [Half precision in float32]
// float16 and bfloat16 store half the bytes of float32 but have no arithmetic of their own on most
// CPUs: elementwise kernels compute on them in float (ComputeType), and every other floating op computes
// them through its float32 kernel. InFloat32 widens the call's float16/bfloat16 inputs to float32 (in
// their memory format), runs the op's float32 kernel on them with float32 outputs, and rounds those into
// the half outputs; inputs the op writes in place (running statistics, parameters, optimizer state) that
// were widened are rounded back into the caller's tensors. So a half op stores half and accumulates in
// float32, exactly as the float32 op would on the same (half-representable) values, at the cost of a
// float32 copy of each half input and output while the kernel runs. Inputs of other dtypes (float32
// weights of a float16 batch_norm, int64 targets) are passed through.

// The kernel of the float16 and bfloat16 entries WithHalfInFloat32 adds. Needs ctx.op.
void InFloat32(KernelContext& ctx);

// `kernels` and, for its CPU float32 kernel, an entry computing float16 and bfloat16 through it (with
// its channels_last). The float32 kernel must exist.
std::vector<KernelDef> WithHalfInFloat32(std::vector<KernelDef> kernels);

}  // namespace cpu
}  // namespace oneflow
