// What the CUDA kernels (core/ops/cuda/) and NCCL (core/dist/) need of the CUDA backend beyond Backend: the
// device's stream and CUDA error reporting. Included only by code built with OF_WITH_CUDA.
//
// Note [One stream per CUDA device]
// Every kernel and copy for a CUDA device is queued on that device's one stream (non-blocking, created with
// the backend), so work runs in the order it was issued: a kernel reads what the kernels before it wrote,
// and the caching allocator may hand a freed block to the next allocation at once, since any kernel that
// used it was queued before any that will (PyTorch's rule for one stream). The host waits only where it
// reads: copies to the host and Synchronize(). Work on another stream (NCCL's) waits for this one first.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

#include "core/device/device.h"

namespace oneflow {

class CudaBackend : public Backend {
 public:
  // The stream every kernel of this device is queued on. Lives as long as the process.
  virtual cudaStream_t stream() const = 0;
  // Makes this device current on the calling thread (kernels launch on the current device).
  virtual void MakeCurrent() const = 0;
};

// The backend of CUDA device `device`; Unavailable when it is not there (no driver, no GPU, index too high).
CudaBackend& CudaBackendFor(Device device);

// Throws for a CUDA error: ResourceExhausted for out of memory, else Internal, naming `what` and the device.
[[noreturn]] void ThrowCuda(cudaError_t err, std::string_view what, Device device);
inline void CheckCuda(cudaError_t err, std::string_view what, Device device) {
  if (err != cudaSuccess) ThrowCuda(err, what, device);
}

}  // namespace oneflow
