// The CPU backend: aligned host memory and memcpy.
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/common/error.h"
#include "core/device/device.h"

namespace oneflow {
namespace {

// Host memory with a cache of freed blocks per size class. Fresh memory from the OS costs a page
// fault per 4 KiB on first touch, which dominated large eager ops (a 64 MiB tensor: ~250 ms); a
// training step frees and reallocates the same sizes every iteration, so reuse removes that cost.
// Sizes round up to 8 classes per power of two (at most 12.5% slack). At most MaxCachedBytes() stay
// cached; an allocation that fails first returns the cache to the OS and retries. Sanitizer builds
// do not cache, so that use-after-free stays detectable.
class CpuAllocator final : public Allocator {
 public:
  void* Allocate(size_t nbytes) override {
    // No allocation this large can succeed, and rounding it to a size class would wrap around.
    if (nbytes > kMaxAllocation) OutOfMemory(nbytes);
    const size_t size = SizeClass(nbytes);
    void* p = nullptr;
    if (kCaching) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= size;
      }
    }
    if (p == nullptr) {
      p = std::aligned_alloc(kCpuAlignment, size);
      if (p == nullptr && kCaching) {
        EmptyCache();
        p = std::aligned_alloc(kCpuAlignment, size);
      }
      if (p == nullptr) OutOfMemory(nbytes);
      std::lock_guard<std::mutex> lock(mutex_);
      ++device_allocations_;
      reserved_ += size;
      peak_reserved_ = std::max(peak_reserved_, reserved_);
    }
    RecordAllocate(nbytes);
    return p;
  }

  void Deallocate(void* ptr, size_t nbytes) override {
    if (ptr == nullptr) return;
    RecordDeallocate(nbytes);
    const size_t size = SizeClass(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    if (kCaching && cached_bytes_ + size <= MaxCachedBytes()) {
      free_[size].push_back(ptr);
      cached_bytes_ += size;
      return;
    }
    std::free(ptr);
    ++device_frees_;
    reserved_ -= size;
  }

  AllocatorStats stats() const override {
    AllocatorStats s = Allocator::stats();
    std::lock_guard<std::mutex> lock(mutex_);
    s.reserved = reserved_;
    s.peak_reserved = peak_reserved_;
    s.cached = cached_bytes_;
    s.device_allocations = device_allocations_;
    s.device_frees = device_frees_;
    return s;
  }

  void EmptyCache() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, blocks] : free_) {
      for (void* p : blocks) std::free(p);
      device_frees_ += blocks.size();
      reserved_ -= size * blocks.size();
      blocks.clear();
    }
    cached_bytes_ = 0;
  }

 private:
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  static constexpr bool kCaching = false;
#else
  static constexpr bool kCaching = true;
#endif

  // A quarter of the machine's memory, and at least 2 GiB. A ResNet-50 eager training step at batch 16
  // frees about 3 GiB; with a fixed 2 GiB the rest went back to the OS and came back page by page every
  // step (6% of the step's time in the kernel zeroing pages, the step 4-6% slower: 2040 against 2110-2175
  // ms on 2 threads). Every cached block was once in use, and the next step takes it back.
  static size_t MaxCachedBytes() {
    static const size_t bytes = [] {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
      const size_t quarter = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) / 4 : 0;
      return std::max(size_t{2} << 30, quarter);
    }();
    return bytes;
  }

  // A multiple of the alignment (aligned_alloc needs one), with 8 classes per power of two; 0 bytes
  // still gets a unique pointer.
  static constexpr size_t kMaxAllocation = size_t{1} << 62;

  static size_t SizeClass(size_t nbytes) {
    if (nbytes <= kCpuAlignment) return kCpuAlignment;
    const int bits = std::bit_width(nbytes - 1);          // nbytes <= 2^bits
    const size_t step = std::max<size_t>(kCpuAlignment, size_t{1} << std::max(bits - 3, 0));
    return (nbytes + step - 1) / step * step;
  }

  [[noreturn]] void OutOfMemory(size_t nbytes) {
    RecordOutOfMemory();
    OF_THROW(ResourceExhausted) << "out of CPU memory allocating " << nbytes << " bytes";
  }

  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size class -> cached blocks
  size_t cached_bytes_ = 0;
  size_t reserved_ = 0;  // size classes of the blocks from aligned_alloc not yet freed (cached ones too)
  size_t peak_reserved_ = 0;
  uint64_t device_allocations_ = 0;
  uint64_t device_frees_ = 0;
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
  void Copy(void* dst, const void* src, size_t nbytes) override {
    if (nbytes > 0) std::memmove(dst, src, nbytes);
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
