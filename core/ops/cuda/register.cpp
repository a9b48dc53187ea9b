// The CUDA backend's kernels, added to the ops the op families registered (OpRegistry::AddKernel), so that no
// op's definition names a backend. Each family's *_kernels.cpp turns a KernelContext into the arguments of
// the launchers in its .cu files (launch.h), which nvcc compiles without the engine's headers.
#include "core/ops/register.h"

#include "core/ops/cuda/cuda_kernel.h"

namespace oneflow {
namespace cuda {

Element ElementOf(Symbol<DType> dtype) {
  switch (dtype->data_type()) {
    case DataType::kBool:
      return Element::kBool;
    case DataType::kInt8:
      return Element::kInt8;
    case DataType::kUInt8:
      return Element::kUInt8;
    case DataType::kInt16:
      return Element::kInt16;
    case DataType::kInt32:
      return Element::kInt32;
    case DataType::kInt64:
      return Element::kInt64;
    case DataType::kFloat16:
      return Element::kFloat16;
    case DataType::kBFloat16:
      return Element::kBFloat16;
    case DataType::kFloat32:
      return Element::kFloat32;
    case DataType::kFloat64:
      return Element::kFloat64;
    default:
      OF_THROW(Internal) << "no CUDA element type for " << dtype;
  }
}

cudaStream_t StreamFor(Device device) {
  CudaBackend& backend = CudaBackendFor(device);
  backend.MakeCurrent();
  return backend.stream();
}

void CheckLaunch(std::string_view what, Device device) { CheckCuda(cudaGetLastError(), what, device); }

std::string_view OpName(const KernelContext& ctx) {
  return ctx.op != nullptr ? std::string_view(ctx.op->name) : std::string_view("a CUDA kernel");
}

}  // namespace cuda

void RegisterCudaKernels(OpRegistry& registry) {
  cuda::RegisterElementwiseKernels(registry);
  cuda::RegisterReduceKernels(registry);
  cuda::RegisterMatmulKernels(registry);
  cuda::RegisterNnKernels(registry);
  cuda::RegisterOptimizerKernels(registry);
}

}  // namespace oneflow
