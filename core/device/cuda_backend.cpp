// The CUDA backend: device memory from a CachingAllocator over cudaMalloc, and blocking copies. Built when OF_WITH_CUDA
// is on; the CUDA runtime is linked statically, so liboneflow_c loads on machines without CUDA and reports Unavailable
// there when a CUDA device is asked for.
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <vector>

#include "core/common/error.h"
#include "core/device/caching_allocator.h"
#include "core/device/device.h"

namespace oneflow {
namespace {

[[noreturn]] void ThrowCuda(cudaError_t err, std::string_view what, Device device) {
  const StatusCode code = err == cudaErrorMemoryAllocation ? StatusCode::kResourceExhausted : StatusCode::kInternal;
  throw Error(code, fmt::format("{} on {} failed: {} ({})", what, device, cudaGetErrorString(err),
                                static_cast<int>(err)));
}

// Makes `device` current on the calling thread for the duration of a call.
void SetDevice(Device device) {
  if (cudaError_t err = cudaSetDevice(device.index); err != cudaSuccess) ThrowCuda(err, "cudaSetDevice", device);
}

// Segments for the CachingAllocator: cudaMalloc and cudaFree on one device.
class CudaSegments final : public SegmentSource {
 public:
  explicit CudaSegments(Device device) : device_(device) {}
  void* AllocateSegment(size_t nbytes) override {
    SetDevice(device_);
    void* p = nullptr;
    if (cudaError_t err = cudaMalloc(&p, nbytes); err != cudaSuccess) {
      cudaGetLastError();  // clear the error so that later calls are unaffected
      if (err == cudaErrorMemoryAllocation) return nullptr;
      ThrowCuda(err, fmt::format("allocating {} bytes", nbytes), device_);
    }
    return p;
  }
  void FreeSegment(void* ptr, size_t) override {
    cudaSetDevice(device_.index);
    cudaFree(ptr);  // errors here cannot be reported (called from destructors)
  }

 private:
  Device device_;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(Device device) : device_(device), allocator_(device, std::make_unique<CudaSegments>(device)) {}
  Device device() const override { return device_; }
  Allocator& allocator() override { return allocator_; }
  void CopyFromHost(void* dst, const void* src, size_t nbytes) override {
    if (nbytes == 0) return;
    SetDevice(device_);
    if (cudaError_t err = cudaMemcpy(dst, src, nbytes, cudaMemcpyHostToDevice); err != cudaSuccess) {
      ThrowCuda(err, "copy from host", device_);
    }
  }
  void CopyToHost(void* dst, const void* src, size_t nbytes) override {
    if (nbytes == 0) return;
    SetDevice(device_);
    if (cudaError_t err = cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToHost); err != cudaSuccess) {
      ThrowCuda(err, "copy to host", device_);
    }
  }
  void Copy(void* dst, const void* src, size_t nbytes) override {
    if (nbytes == 0) return;
    SetDevice(device_);
    // A device-to-device cudaMemcpy returns before the copy is done; wait, as the contract says (work on
    // other streams, such as NCCL's, does not wait for the default stream).
    cudaError_t err = cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, nullptr);
    if (err == cudaSuccess) err = cudaStreamSynchronize(nullptr);
    if (err != cudaSuccess) ThrowCuda(err, "copy on the device", device_);
  }
  void Synchronize() override {
    SetDevice(device_);
    if (cudaError_t err = cudaDeviceSynchronize(); err != cudaSuccess) ThrowCuda(err, "synchronize", device_);
  }

 private:
  Device device_;
  CachingAllocator allocator_;
};

}  // namespace

Backend& CudaBackendFor(Device device) {
  // One backend per visible device, created on first use and kept for the life of the process.
  static std::mutex mutex;
  static auto* backends = new std::vector<std::unique_ptr<CudaBackend>>();
  std::lock_guard<std::mutex> lock(mutex);
  if (backends->empty()) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      cudaGetLastError();
      // Without an NVIDIA driver the runtime says "driver version is insufficient"; say what it means.
      const bool no_driver = err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice;
      OF_THROW(Unavailable) << "device " << device << " is not available: "
                            << (err == cudaSuccess ? "no CUDA device is visible"
                                : no_driver        ? fmt::format("no NVIDIA driver or GPU on this machine ({})",
                                                                 cudaGetErrorString(err))
                                                   : std::string(cudaGetErrorString(err)));
    }
    for (int i = 0; i < count; ++i) backends->push_back(std::make_unique<CudaBackend>(Device{DeviceType::kCUDA, i}));
  }
  if (device.index >= static_cast<int32_t>(backends->size())) {
    OF_THROW(Unavailable) << "device " << device << " is not available: " << backends->size()
                          << " CUDA device(s) visible";
  }
  return *(*backends)[static_cast<size_t>(device.index)];
}

}  // namespace oneflow
