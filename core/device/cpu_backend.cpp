// The CPU backend: aligned host memory and memcpy.
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/common/error.h"
#include "core/device/device.h"

namespace oneflow {
namespace {

class CpuAllocator final : public Allocator {
 public:
  void* Allocate(size_t nbytes) override {
    // aligned_alloc needs a size that is a multiple of the alignment; 0 bytes still gets a unique pointer.
    const size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* p = std::aligned_alloc(kCpuAlignment, rounded == 0 ? kCpuAlignment : rounded);
    if (p == nullptr) {
      OF_THROW(ResourceExhausted) << "out of CPU memory allocating " << nbytes << " bytes";
    }
    RecordAllocate(nbytes);
    return p;
  }
  void Deallocate(void* ptr, size_t nbytes) override {
    if (ptr == nullptr) return;
    std::free(ptr);
    RecordDeallocate(nbytes);
  }
};

class CpuBackendImpl final : public Backend {
 public:
  Device device() const override { return Device::CPU(); }
  Allocator& allocator() override { return allocator_; }
  void CopyFromHost(void* dst, const void* src, size_t nbytes) override {
    if (nbytes > 0) std::memcpy(dst, src, nbytes);
  }
  void CopyToHost(void* dst, const void* src, size_t nbytes) override {
    if (nbytes > 0) std::memcpy(dst, src, nbytes);
  }

 private:
  CpuAllocator allocator_;
};

}  // namespace

Backend& CpuBackend() {
  static auto* backend = new CpuBackendImpl();  // process lifetime; never destroyed
  return *backend;
}

}  // namespace oneflow
