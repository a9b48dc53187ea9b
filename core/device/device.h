// Devices and the backend interface every device implements.
//
// A Backend owns a device's allocator and copy routines. Kernels are not the backend's: each op lists its
// kernels per device in its registry entry (core/op/op_registry.h), a backend's kernels being added there
// from the backend's own files (OpRegistry::AddKernel; the CUDA ones from core/ops/cuda/).
// Backends are process-wide and live until the process ends; GetBackend() finds one by Device.
// The CPU backend is always built; a CUDA backend is built when CMake finds nvcc (OF_WITH_CUDA) and
// registers itself the same way. Asking for a device this build cannot serve is an Unavailable error.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace oneflow {

// Values match DLPack's DLDeviceType and the C ABI's OF_DEVICE_*.
enum class DeviceType : int32_t { kCPU = 1, kCUDA = 2 };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int32_t index = 0;

  static Device CPU() { return Device{DeviceType::kCPU, 0}; }
  // A Device from C-ABI values; InvalidArgument for an unknown type or a negative index.
  static Device FromRaw(int32_t type, int32_t index);
  std::string ToString() const;  // "cpu", "cuda:1"
  friend bool operator==(const Device&, const Device&) = default;
};

// A snapshot of an allocator's counters. An allocator that does not cache has reserved == in use
// (rounded) and cached == 0.
struct AllocatorStats {
  size_t in_use = 0;  // bytes callers asked for and have not freed
  size_t peak_in_use = 0;
  size_t reserved = 0;  // bytes held from the device: in use, rounding slack and cache
  size_t peak_reserved = 0;
  size_t cached = 0;                // of reserved, the bytes in no allocation, reusable without the device
  uint64_t allocations = 0;         // successful Allocate calls
  uint64_t device_allocations = 0;  // of which needed memory from the device (cudaMalloc, aligned_alloc, mmap)
  uint64_t device_frees = 0;        // memory given back to the device
  uint64_t out_of_memory = 0;       // Allocate calls that failed with ResourceExhausted
};

// Device memory. Allocate never returns null: it throws ResourceExhausted. Thread-safe.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* Allocate(size_t nbytes) = 0;
  virtual void Deallocate(void* ptr, size_t nbytes) = 0;
  // The counters. The base class keeps in_use, peak_in_use, allocations and out_of_memory; an
  // allocator overrides this to add the rest.
  virtual AllocatorStats stats() const;
  // Gives cached memory that no allocation uses back to the device.
  virtual void EmptyCache() {}

  size_t bytes_in_use() const { return in_use_.load(std::memory_order_relaxed); }
  size_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }

 protected:
  void RecordAllocate(size_t nbytes);
  void RecordDeallocate(size_t nbytes) { in_use_.fetch_sub(nbytes, std::memory_order_relaxed); }
  void RecordOutOfMemory() { out_of_memory_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::atomic<size_t> in_use_{0};
  std::atomic<size_t> peak_{0};
  std::atomic<uint64_t> allocations_{0};
  std::atomic<uint64_t> out_of_memory_{0};
};

// A copy of sizes[0] x ... x sizes[n-1] elements of element_size bytes each between two strided layouts,
// strides in elements (core/tensor/copy.cpp coalesces a tensor's dims into these).
struct StridedCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  int64_t element_size = 0;
  std::vector<int64_t> sizes, src_strides, dst_strides;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual Allocator& allocator() = 0;
  // Copies between host memory and this device's memory. Both block until the copy is done.
  virtual void CopyFromHost(void* device_dst, const void* host_src, size_t nbytes) = 0;
  virtual void CopyToHost(void* host_dst, const void* device_src, size_t nbytes) = 0;
  // Copies within this device's memory; blocks until the copy is done.
  virtual void Copy(void* dst, const void* src, size_t nbytes) = 0;
  // Copies the elements of one strided layout into another, both in this device's memory (ordered after
  // the work queued before it). The CPU's is core/tensor/copy.cpp's loop, so this one serves other devices.
  virtual void CopyStrided(const StridedCopy& copy);
  // Waits for all work queued on this device.
  virtual void Synchronize() {}
};

// The backend of `device`; Unavailable if this build or machine has no such device.
Backend& GetBackend(Device device);

// Whether this build of oneflow_c includes the CUDA backend.
bool BuiltWithCuda();

// Alignment of every CPU allocation: a cache line, and enough for any SIMD load of the kernels.
inline constexpr size_t kCpuAlignment = 64;

}  // namespace oneflow

template <>
struct fmt::formatter<oneflow::Device> : fmt::formatter<std::string_view> {
  auto format(const oneflow::Device& d, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(d.ToString(), ctx);
  }
};
