#include "core/device/device.h"

#include "core/common/error.h"
#ifdef OF_WITH_CUDA
#include "core/device/cuda_backend.h"
#endif

namespace oneflow {

Backend& CpuBackend();  // cpu_backend.cpp

Device Device::FromRaw(int32_t type, int32_t index) {
  OF_CHECK(type == static_cast<int32_t>(DeviceType::kCPU) || type == static_cast<int32_t>(DeviceType::kCUDA))
      << "device type " << type << " is not a known device (OF_DEVICE_CPU = 1, OF_DEVICE_CUDA = 2)";
  OF_CHECK_GE(index, 0) << "device index must not be negative";
  OF_CHECK(type != static_cast<int32_t>(DeviceType::kCPU) || index == 0)
      << "the CPU device has only index 0, got " << index;
  return Device{static_cast<DeviceType>(type), index};
}

std::string Device::ToString() const {
  return type == DeviceType::kCPU ? std::string("cpu") : fmt::format("cuda:{}", index);
}

AllocatorStats Allocator::stats() const {
  AllocatorStats s;
  s.in_use = bytes_in_use();
  s.peak_in_use = peak_bytes();
  s.allocations = allocations_.load(std::memory_order_relaxed);
  s.out_of_memory = out_of_memory_.load(std::memory_order_relaxed);
  return s;
}

void Allocator::RecordAllocate(size_t nbytes) {
  allocations_.fetch_add(1, std::memory_order_relaxed);
  const size_t now = in_use_.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  size_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void Backend::CopyStrided(const StridedCopy&) {
  OF_THROW(Unimplemented) << "strided copies on " << device() << " are not implemented";
}

bool BuiltWithCuda() {
#ifdef OF_WITH_CUDA
  return true;
#else
  return false;
#endif
}

Backend& GetBackend(Device device) {
  switch (device.type) {
    case DeviceType::kCPU:
      return CpuBackend();
    case DeviceType::kCUDA:
#ifdef OF_WITH_CUDA
      return CudaBackendFor(device);
#else
      OF_THROW(Unavailable) << "device " << device
                            << " is not available: this build of oneflow_c has no CUDA backend";
#endif
  }
  OF_THROW(InvalidArgument) << "unknown device type " << static_cast<int32_t>(device.type);
}

}  // namespace oneflow
