// What the CUDA kernel families (core/ops/cuda/*_kernels.cpp) share: turning a KernelContext's tensors into
// the launchers' arguments (launch.h) on the device's stream (Note [One stream per CUDA device]).
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "core/device/cuda_backend.h"
#include "core/op/op_registry.h"
#include "core/ops/cuda/launch.h"
#include "core/ops/fused.h"

namespace oneflow::cuda {

// The dtypes of the floating CUDA kernels.
inline const std::vector<DataType> kFloatingTypes = {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                                                     DataType::kBFloat16};
Element ElementOf(Symbol<DType> dtype);

// The stream of `device`, made current on the calling thread: where a kernel for it is launched.
cudaStream_t StreamFor(Device device);
// After a launch: a launch error is Internal, naming `what` (the op) and the device.
void CheckLaunch(std::string_view what, Device device);
// The op's name for messages ("a CUDA kernel" where the context has no op).
std::string_view OpName(const KernelContext& ctx);

// An operand of an elementwise kernel: its first element and its strides over the output's dims.
struct ElementwiseOperand {
  const void* data;
  std::vector<int64_t> strides;
  bool dense;  // laid out as the output's row-major index
};
// t broadcast to `out` (dims right-aligned; stride 0 where t has size 1 or no dim).
ElementwiseOperand OperandOf(const Tensor& t, const Shape& out);
// y = scale * program(inputs) on y's device (y's layout may be any: kernels write at its strides).
void RunElementwise(const Tensor& y, std::span<const ElementwiseOperand> inputs, const FusedProgram& program,
                    double scale, std::string_view what);

// The families' registrations (register.cpp calls them).
void RegisterElementwiseKernels(OpRegistry& registry);  // elementwise_kernels.cpp
void RegisterReduceKernels(OpRegistry& registry);       // reduce_kernels.cpp
void RegisterMatmulKernels(OpRegistry& registry);       // matmul_kernels.cpp (cuBLAS)
void RegisterNnKernels(OpRegistry& registry);           // nn_kernels.cpp: softmax, log_softmax
void RegisterOptimizerKernels(OpRegistry& registry);    // optimizer_kernels.cpp: sgd_update

}  // namespace oneflow::cuda
