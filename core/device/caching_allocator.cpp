#include "core/device/caching_allocator.h"

#include <algorithm>

#include "core/common/error.h"

namespace oneflow {

// Note [Caching allocator]
// cudaMalloc and cudaFree synchronise the device and cost tens of microseconds to milliseconds; a
// training step frees and allocates the same sizes every iteration. So, as PyTorch's CUDA allocator
// does, memory is taken from the device in segments and handed out in blocks:
// - Requests round up to 512 bytes. Those up to 1 MiB come from 2 MiB segments (the small pool), those
//   below 10 MiB from 20 MiB segments, larger ones get a segment of their own rounded to 2 MiB (the
//   large pool). Pools never lend to each other, so small blocks do not fragment large segments.
// - A request takes the smallest free block of its pool that fits (best fit; ties: lowest address)
//   and splits off the rest when that is at least 512 bytes (small pool) or more than 1 MiB (large pool;
//   a smaller rest stays part of the block, as slack). A freed block merges with the free blocks beside
//   it in its segment, so a segment whose blocks are all free is one block again.
// - When the device has no memory for a new segment, every wholly free segment goes back to it and
//   the request is tried once more; then it fails with ResourceExhausted and nothing else changes.
//   EmptyCache gives the wholly free segments back on request.
// Stream order: the backend queues all work on one stream per device, so a block freed while kernels
// that use it are still queued can be handed to the next request at once: its kernels run after those.
// Memory used by another stream (an NCCL communicator's) must be freed only after that stream is
// waited for (the collectives do; see NcclCommunicator); several compute streams will need events
// recorded at free, as PyTorch's record_stream.
struct CachingAllocator::Block {
  char* ptr;
  size_t size;
  bool small;  // from the small pool
  bool allocated = false;
  Block* prev = nullptr;  // the blocks beside this one in its segment, in address order
  Block* next = nullptr;
  bool whole_segment() const { return prev == nullptr && next == nullptr; }
};

bool CachingAllocator::BySizeThenAddress::operator()(const Block* a, const Block* b) const {
  return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
}

CachingAllocator::CachingAllocator(Device device, std::unique_ptr<SegmentSource> source)
    : device_(device), source_(std::move(source)) {}

CachingAllocator::~CachingAllocator() {
  // The free segments go back to the device. Blocks still allocated belong to callers that outlive the
  // allocator (backends are never destroyed; tests free theirs first): their segments stay with them.
  std::lock_guard<std::mutex> lock(mutex_);
  ReleaseFreeSegments();
  for (FreeBlocks* pool : {&small_free_, &large_free_}) {
    for (Block* b : *pool) delete b;
  }
  for (auto& [ptr, b] : allocated_) delete b;
}

size_t CachingAllocator::RoundedSize(size_t nbytes) {
  return nbytes <= kRoundBytes ? kRoundBytes : (nbytes + kRoundBytes - 1) / kRoundBytes * kRoundBytes;
}

size_t CachingAllocator::SegmentSize(size_t rounded) {
  if (rounded <= kSmallRequest) return kSmallSegment;
  if (rounded < kLargeSegment / 2) return kLargeSegment;
  return (rounded + kLargeRound - 1) / kLargeRound * kLargeRound;
}

CachingAllocator::Block* CachingAllocator::NewSegment(size_t rounded) {
  const size_t size = SegmentSize(rounded);
  auto block = std::make_unique<Block>(Block{nullptr, size, rounded <= kSmallRequest});
  block->ptr = static_cast<char*>(source_->AllocateSegment(size));
  if (block->ptr == nullptr) {
    ReleaseFreeSegments();
    block->ptr = static_cast<char*>(source_->AllocateSegment(size));
    if (block->ptr == nullptr) return nullptr;
  }
  ++device_allocations_;
  reserved_ += size;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  return block.release();
}

void* CachingAllocator::Allocate(size_t nbytes) {
  // Larger than any device; rounding it would wrap around.
  constexpr size_t kMaxAllocation = size_t{1} << 62;
  std::unique_lock<std::mutex> lock(mutex_);
  const size_t size = nbytes > kMaxAllocation ? 0 : RoundedSize(nbytes);
  const bool small = size <= kSmallRequest;
  FreeBlocks& pool = PoolOf(small);
  Block probe{nullptr, size, small};
  auto it = pool.lower_bound(&probe);
  Block* block = nullptr;
  if (size != 0 && it != pool.end()) {
    block = *it;
    pool.erase(it);
  } else if (size != 0) {
    block = NewSegment(size);
  }
  if (block == nullptr) {
    const size_t reserved = reserved_;
    lock.unlock();
    RecordOutOfMemory();
    OF_THROW(ResourceExhausted) << "out of memory on " << device_ << " allocating " << nbytes << " bytes ("
                                << bytes_in_use() << " bytes in use, " << reserved
                                << " reserved by oneflow_c after returning its cache)";
  }
  // From here on nothing may fail with the block out of both the pool and allocated_.
  try {
    allocated_.emplace(block->ptr, block);
    if (const size_t rest = block->size - size; small ? rest >= kRoundBytes : rest > kSmallRequest) {
      auto tail = std::make_unique<Block>(Block{block->ptr + size, rest, small, false, block, block->next});
      pool.insert(tail.get());
      if (block->next != nullptr) block->next->prev = tail.get();
      block->next = tail.release();
      block->size = size;
    }
  } catch (...) {  // host memory for the bookkeeping: give the block back as it was
    allocated_.erase(block->ptr);
    pool.insert(block);
    throw;
  }
  block->allocated = true;
  block_bytes_in_use_ += block->size;
  lock.unlock();
  RecordAllocate(nbytes);
  return block->ptr;
}

void CachingAllocator::Deallocate(void* ptr, size_t nbytes) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocated_.find(ptr);
  if (it == allocated_.end()) return;  // not ours: nothing to free (a caller bug; never from Storage)
  Block* block = it->second;
  allocated_.erase(it);
  block->allocated = false;
  block_bytes_in_use_ -= block->size;
  FreeBlocks& pool = PoolOf(block->small);
  // Folds `right`, the block after `left` in their segment, into `left`.
  const auto merge = [](Block* left, Block* right) {
    left->size += right->size;
    left->next = right->next;
    if (right->next != nullptr) right->next->prev = left;
    delete right;
  };
  if (Block* prev = block->prev; prev != nullptr && !prev->allocated) {
    pool.erase(prev);
    merge(prev, block);
    block = prev;
  }
  if (Block* next = block->next; next != nullptr && !next->allocated) {
    pool.erase(next);
    merge(block, next);
  }
  pool.insert(block);
  RecordDeallocate(nbytes);
}

void CachingAllocator::ReleaseFreeSegments() {
  for (FreeBlocks* pool : {&small_free_, &large_free_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (!b->whole_segment()) {
        ++it;
        continue;
      }
      source_->FreeSegment(b->ptr, b->size);
      ++device_frees_;
      reserved_ -= b->size;
      it = pool->erase(it);
      delete b;
    }
  }
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  ReleaseFreeSegments();
}

AllocatorStats CachingAllocator::stats() const {
  AllocatorStats s = Allocator::stats();
  std::lock_guard<std::mutex> lock(mutex_);
  s.reserved = reserved_;
  s.peak_reserved = peak_reserved_;
  s.cached = reserved_ - block_bytes_in_use_;
  s.device_allocations = device_allocations_;
  s.device_frees = device_frees_;
  return s;
}

}  // namespace oneflow
