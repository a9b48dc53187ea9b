// A caching allocator for device memory, built on a SegmentSource that hands out and takes back whole
// segments (cudaMalloc / cudaFree for CUDA). Note [Caching allocator] in caching_allocator.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>

#include "core/device/device.h"

namespace oneflow {

// Where a CachingAllocator's memory comes from. Called with the allocator's lock held, so never
// concurrently for one allocator.
class SegmentSource {
 public:
  virtual ~SegmentSource() = default;
  // `nbytes` of fresh device memory, or nullptr when the device has not that much free; any other
  // failure throws.
  virtual void* AllocateSegment(size_t nbytes) = 0;
  virtual void FreeSegment(void* ptr, size_t nbytes) = 0;
};

// Rounds requests to kRoundBytes and serves them from segments it keeps: freed blocks go back to the
// cache (merged with free neighbours) instead of to the source. Thread-safe.
class CachingAllocator final : public Allocator {
 public:
  static constexpr size_t kRoundBytes = 512;                // every block's size and offset is a multiple
  static constexpr size_t kSmallRequest = size_t{1} << 20;  // requests up to this share small segments
  static constexpr size_t kSmallSegment = size_t{2} << 20;
  static constexpr size_t kLargeSegment = size_t{20} << 20;  // shared by requests of (1, 10) MiB
  static constexpr size_t kLargeRound = size_t{2} << 20;     // larger requests: own segment, rounded

  // `device` names the device in error messages.
  CachingAllocator(Device device, std::unique_ptr<SegmentSource> source);
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // ResourceExhausted when the source has no segment for it even after the cache was returned to it;
  // the allocator is unchanged then, apart from the returned cache.
  void* Allocate(size_t nbytes) override;
  void Deallocate(void* ptr, size_t nbytes) override;
  AllocatorStats stats() const override;
  void EmptyCache() override;

 private:
  struct Block;
  struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const;
  };
  using FreeBlocks = std::set<Block*, BySizeThenAddress>;

  static size_t RoundedSize(size_t nbytes);
  static size_t SegmentSize(size_t rounded);
  FreeBlocks& PoolOf(bool small) { return small ? small_free_ : large_free_; }
  Block* NewSegment(size_t rounded);  // nullptr when the source has none
  void ReleaseFreeSegments();         // with mutex_ held

  Device device_;
  std::unique_ptr<SegmentSource> source_;
  mutable std::mutex mutex_;
  FreeBlocks small_free_, large_free_;
  std::unordered_map<void*, Block*> allocated_;  // block address -> block
  size_t block_bytes_in_use_ = 0;                // the allocated blocks' (rounded) sizes
  size_t reserved_ = 0;                          // the segments' sizes
  size_t peak_reserved_ = 0;
  uint64_t device_allocations_ = 0;
  uint64_t device_frees_ = 0;
};

}  // namespace oneflow
