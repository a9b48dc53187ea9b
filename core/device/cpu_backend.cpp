// The CPU backend: aligned host memory and memcpy.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <fstream>
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
// do not cache, so that use-after-free stays detectable. Large blocks get huge pages (Note [Huge pages
// for large host blocks]).
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
      p = Obtain(size);
      if (p == nullptr && kCaching) {
        EmptyCache();
        p = Obtain(size);
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
    Release(ptr, size);
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
      for (void* p : blocks) Release(p, size);
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

  // Note [Huge pages for large host blocks]
  // Blocks of 64 MiB and more are mapped from the OS each on its own, aligned to the huge page size (2
  // MiB on x86-64), and advised MADV_HUGEPAGE: where the kernel gives transparent huge pages to advised
  // memory (its "madvise" setting, Debian's default; "always" gives them anyway), each whole 2 MiB span
  // of the block is one page, not 512, and the TLB covers 512 times more of it. Such blocks are the lazy
  // graphs' arenas (every activation of a step; ResNet-50's at batch 4: 352 MB) and the rare tensors as
  // large: passes over activations larger than the caches missed the TLB on 4 KiB pages. ResNet-50's
  // lazy training step at batch 4 (2 threads, alternated, sums of each step's best time): 441.5-447.8
  // -> 436.7-438.8 ms, most of it in the batch norms' backward (18.9-19.4 -> 17.1-17.4 ms). Smaller blocks
  // keep 4 KiB pages: with huge pages from 2 MiB on (parameters, gradients, eager activations) the step
  // gained no more (435.0-436.7), and a huge page's first touch costs the whole 2 MiB at once, which on
  // the virtual machines measured came to 2.8 s of system time more per ResNet-50 process (0.5 -> 3.3 s)
  // and to 0.3 s more for the main job's first evaluation eagerly (new blocks at batch 256).
  // Size classes from 64 MiB on are multiples of 8 MiB (SizeClass), so a block is whole huge pages where
  // they are 2 MiB. Without transparent huge pages (no hpage_pmd_size) and in sanitizer builds (whose
  // allocator should see every block) blocks come from aligned_alloc.
  static constexpr size_t kHugeBlockBytes = size_t{64} << 20;
  static size_t HugePageSize() {
    static const size_t bytes = [] {
      if (!kCaching) return size_t{0};
      std::ifstream in("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
      size_t value = 0;
      const long page = sysconf(_SC_PAGE_SIZE);
      if (!(in >> value) || page <= 0 || !std::has_single_bit(value) || value <= static_cast<size_t>(page)) {
        return size_t{0};
      }
      return value;
    }();
    return bytes;
  }
  static bool HugeBlock(size_t size) {
    return HugePageSize() != 0 && size >= std::max(kHugeBlockBytes, HugePageSize());
  }

  // Fresh memory for a block of size class `size`, or null where the OS has none.
  static void* Obtain(size_t size) {
    if (!HugeBlock(size)) return std::aligned_alloc(kCpuAlignment, size);
    // Reserve a huge page more than needed, keep the aligned part, give back the rest.
    const size_t huge = HugePageSize();
    void* reserved = mmap(nullptr, size + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (reserved == MAP_FAILED) return nullptr;
    char* const first = static_cast<char*>(reserved);
    char* const block = first + (huge - reinterpret_cast<uintptr_t>(first) % huge) % huge;
    if (block > first) munmap(first, static_cast<size_t>(block - first));
    munmap(block + size, static_cast<size_t>(first + huge - block));  // never empty: block < first + huge
    madvise(block, size, MADV_HUGEPAGE);  // advice: without it (an older kernel) the block has 4 KiB pages
    return block;
  }
  static void Release(void* p, size_t size) {
    if (HugeBlock(size)) {
      munmap(p, size);
    } else {
      std::free(p);
    }
  }

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
  size_t reserved_ = 0;  // size classes of the blocks from the OS not yet freed (cached ones too)
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
