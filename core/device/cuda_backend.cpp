// The CUDA backend: device memory from a CachingAllocator over cudaMalloc, one stream per device (Note [One stream
// per CUDA device]) and copies on it. Built when OF_WITH_CUDA is on; the CUDA runtime is linked statically, so
// liboneflow_c loads on machines without CUDA and reports Unavailable there when a CUDA device is asked for.
#include "core/device/cuda_backend.h"

#include <memory>
#include <mutex>
#include <vector>

#include "core/common/error.h"
#include "core/device/caching_allocator.h"
#include "core/ops/cuda/launch.h"

namespace oneflow {

void ThrowCuda(cudaError_t err, std::string_view what, Device device) {
  const StatusCode code = err == cudaErrorMemoryAllocation ? StatusCode::kResourceExhausted : StatusCode::kInternal;
  throw Error(code, fmt::format("{} on {} failed: {} ({})", what, device, cudaGetErrorString(err),
                                static_cast<int>(err)));
}

namespace {

// Makes `device` current on the calling thread.
void SetDevice(Device device) { CheckCuda(cudaSetDevice(device.index), "cudaSetDevice", device); }

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

class CudaDevice final : public CudaBackend {
 public:
  explicit CudaDevice(Device device) : device_(device), allocator_(device, std::make_unique<CudaSegments>(device)) {
    SetDevice(device);
    CheckCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream", device);
  }
  // Backends live until the process ends: the stream is not destroyed (the driver may be gone by then).
  Device device() const override { return device_; }
  Allocator& allocator() override { return allocator_; }
  cudaStream_t stream() const override { return stream_; }
  void MakeCurrent() const override { SetDevice(device_); }

  void CopyFromHost(void* dst, const void* src, size_t nbytes) override {
    CopyAndWait(dst, src, nbytes, cudaMemcpyHostToDevice, "copy from host");
  }
  void CopyToHost(void* dst, const void* src, size_t nbytes) override {
    CopyAndWait(dst, src, nbytes, cudaMemcpyDeviceToHost, "copy to host");
  }
  void Copy(void* dst, const void* src, size_t nbytes) override {
    CopyAndWait(dst, src, nbytes, cudaMemcpyDeviceToDevice, "copy on the device");
  }
  void CopyStrided(const StridedCopy& copy) override {
    const auto ndim = static_cast<int32_t>(copy.sizes.size());
    if (ndim > cuda::kMaxDims) {
      OF_THROW(Unimplemented) << "strided copies on " << device_ << " take at most " << cuda::kMaxDims
                              << " dims that cannot be merged, got " << ndim;
    }
    SetDevice(device_);
    cuda::LaunchStridedCopy(copy.dst, copy.src, copy.element_size, ndim, copy.sizes.data(), copy.src_strides.data(),
                            copy.dst_strides.data(), stream_);
    CheckCuda(cudaGetLastError(), "strided copy", device_);
  }
  void Synchronize() override {
    SetDevice(device_);
    CheckCuda(cudaStreamSynchronize(stream_), "synchronize", device_);
  }

 private:
  // Queued after the stream's work, and waited for (the contract of Backend's copies).
  void CopyAndWait(void* dst, const void* src, size_t nbytes, cudaMemcpyKind kind, std::string_view what) {
    if (nbytes == 0) return;
    SetDevice(device_);
    cudaError_t err = cudaMemcpyAsync(dst, src, nbytes, kind, stream_);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
    CheckCuda(err, what, device_);
  }

  Device device_;
  CachingAllocator allocator_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

CudaBackend& CudaBackendFor(Device device) {
  // One backend per visible device, created on first use and kept for the life of the process.
  static std::mutex mutex;
  static auto* backends = new std::vector<std::unique_ptr<CudaDevice>>();
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
    for (int i = 0; i < count; ++i) backends->push_back(std::make_unique<CudaDevice>(Device{DeviceType::kCUDA, i}));
  }
  if (device.index >= static_cast<int32_t>(backends->size())) {
    OF_THROW(Unavailable) << "device " << device << " is not available: " << backends->size()
                          << " CUDA device(s) visible";
  }
  return *(*backends)[static_cast<size_t>(device.index)];
}

}  // namespace oneflow
