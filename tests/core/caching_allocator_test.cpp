// The device caching allocator (core/device/caching_allocator.h) over a fake segment source of host
// memory with a capacity, so that its splitting, merging, cache returns and out-of-memory behaviour
// are checked without a GPU.
#include "core/device/caching_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/core/test_util.h"

namespace oneflow {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
const Device kFakeGpu{DeviceType::kCUDA, 3};

// Host memory in place of device memory, at most `capacity` bytes at a time; records what it hands out.
struct FakeDevice {
  explicit FakeDevice(size_t capacity) : capacity(capacity) {}
  size_t capacity;
  size_t used = 0;
  std::map<char*, size_t> segments;  // live segments
  int allocations = 0, refusals = 0;
};

class FakeSegments final : public SegmentSource {
 public:
  explicit FakeSegments(FakeDevice* device) : device_(device) {}
  void* AllocateSegment(size_t nbytes) override {
    if (device_->used + nbytes > device_->capacity) {
      ++device_->refusals;
      return nullptr;
    }
    auto* p = static_cast<char*>(std::aligned_alloc(512, nbytes));  // aligned as cudaMalloc's (256 B) or better
    device_->used += nbytes;
    device_->segments.emplace(p, nbytes);
    ++device_->allocations;
    return p;
  }
  void FreeSegment(void* ptr, size_t nbytes) override {
    auto it = device_->segments.find(static_cast<char*>(ptr));
    ASSERT_NE(it, device_->segments.end()) << "freeing memory that is not a segment";
    EXPECT_EQ(it->second, nbytes) << "freeing a segment with another size";
    device_->used -= nbytes;
    device_->segments.erase(it);
    std::free(ptr);
  }

 private:
  FakeDevice* device_;
};

struct Fixture {
  FakeDevice device;
  CachingAllocator allocator;
  explicit Fixture(size_t capacity = 64 * kMiB)
      : device(capacity), allocator(kFakeGpu, std::make_unique<FakeSegments>(&device)) {}
};

// The segment holding p, and p's offset in it.
std::pair<char*, size_t> SegmentOf(const FakeDevice& device, void* p) {
  auto* c = static_cast<char*>(p);
  auto it = device.segments.upper_bound(c);
  EXPECT_NE(it, device.segments.begin());
  --it;
  EXPECT_LT(static_cast<size_t>(c - it->first), it->second) << "pointer outside every segment";
  return {it->first, static_cast<size_t>(c - it->first)};
}

TEST(CachingAllocator, SmallRequestsShareASegmentRoundedTo512Bytes) {
  Fixture f;
  void* a = f.allocator.Allocate(1);
  void* b = f.allocator.Allocate(600);
  void* c = f.allocator.Allocate(0);  // still a distinct pointer
  EXPECT_EQ(f.device.allocations, 1);
  EXPECT_EQ(f.device.used, CachingAllocator::kSmallSegment);
  EXPECT_EQ(SegmentOf(f.device, a).second, 0u);
  EXPECT_EQ(SegmentOf(f.device, b).second, 512u);
  EXPECT_EQ(SegmentOf(f.device, c).second, 512u + 1024u);
  const AllocatorStats s = f.allocator.stats();
  EXPECT_EQ(s.in_use, 601u);
  EXPECT_EQ(s.reserved, CachingAllocator::kSmallSegment);
  EXPECT_EQ(s.cached, CachingAllocator::kSmallSegment - 2048);
  EXPECT_EQ(s.allocations, 3u);
  EXPECT_EQ(s.device_allocations, 1u);
  for (void* p : {a, b, c}) f.allocator.Deallocate(p, p == b ? 600 : p == a ? 1 : 0);
  EXPECT_EQ(f.allocator.stats().in_use, 0u);
  EXPECT_EQ(f.allocator.stats().cached, CachingAllocator::kSmallSegment);
}

TEST(CachingAllocator, FreedBlocksAreReusedWithoutTheDevice) {
  Fixture f;
  const std::vector<size_t> sizes = {4096, 3 * kMiB, 100, 18 * kMiB, 4096 * 3};
  for (int step = 0; step < 10; ++step) {  // a training step's pattern: the same sizes every time
    std::vector<void*> live;
    for (size_t n : sizes) live.push_back(f.allocator.Allocate(n));
    for (size_t i = 0; i < sizes.size(); ++i) f.allocator.Deallocate(live[i], sizes[i]);
  }
  // One small segment, one shared large one (3 MiB) and one of its own (18 MiB), all from step 0.
  EXPECT_EQ(f.device.allocations, 3);
  EXPECT_EQ(f.allocator.stats().allocations, 50u);
  EXPECT_EQ(f.allocator.stats().device_allocations, 3u);
  EXPECT_EQ(f.allocator.stats().in_use, 0u);
  EXPECT_EQ(f.device.used, CachingAllocator::kSmallSegment + CachingAllocator::kLargeSegment + 18 * kMiB);
}

TEST(CachingAllocator, BestFitSplitsAndFreedNeighboursMerge) {
  Fixture f;
  // Three 4 MiB blocks fill 12 MiB of one 20 MiB segment; the rest (8 MiB) is one free block.
  void* a = f.allocator.Allocate(4 * kMiB);
  void* b = f.allocator.Allocate(4 * kMiB);
  void* c = f.allocator.Allocate(4 * kMiB);
  EXPECT_EQ(f.device.allocations, 1);
  EXPECT_EQ(SegmentOf(f.device, b).second, 4 * kMiB);
  EXPECT_EQ(SegmentOf(f.device, c).second, 8 * kMiB);
  // Freeing a and b merges them into one 8 MiB block at offset 0; a 6 MiB request takes the lower of the
  // two equal 8 MiB blocks (best fit, then address) and leaves 2 MiB split off.
  f.allocator.Deallocate(a, 4 * kMiB);
  f.allocator.Deallocate(b, 4 * kMiB);
  void* d = f.allocator.Allocate(6 * kMiB);
  EXPECT_EQ(d, a);
  void* e = f.allocator.Allocate(2 * kMiB);  // the 2 MiB rest is the best fit: not the 8 MiB tail
  EXPECT_EQ(SegmentOf(f.device, e).second, 6 * kMiB);
  // A rest of 1 MiB or less stays in the block as slack: 7 MiB from the 8 MiB tail uses all of it.
  void* g = f.allocator.Allocate(7 * kMiB);
  EXPECT_EQ(SegmentOf(f.device, g).second, 12 * kMiB);
  EXPECT_EQ(f.allocator.stats().cached, 0u);
  EXPECT_EQ(f.device.allocations, 1);
  f.allocator.Deallocate(c, 4 * kMiB);
  f.allocator.Deallocate(d, 6 * kMiB);
  f.allocator.Deallocate(e, 2 * kMiB);
  f.allocator.Deallocate(g, 7 * kMiB);
  EXPECT_EQ(f.allocator.stats().in_use, 0u);
  // All merged back into one free block: the segment goes back whole.
  f.allocator.EmptyCache();
  EXPECT_EQ(f.device.used, 0u);
  EXPECT_EQ(f.allocator.stats().reserved, 0u);
  EXPECT_EQ(f.allocator.stats().device_frees, 1u);
}

TEST(CachingAllocator, EmptyCacheKeepsSegmentsInUse) {
  Fixture f;
  void* small = f.allocator.Allocate(1000);
  void* freed = f.allocator.Allocate(2000);
  void* big = f.allocator.Allocate(30 * kMiB);
  f.allocator.Deallocate(freed, 2000);
  f.allocator.Deallocate(big, 30 * kMiB);
  f.allocator.EmptyCache();
  // The small segment still holds `small`; the large one went back.
  EXPECT_EQ(f.device.used, CachingAllocator::kSmallSegment);
  const AllocatorStats s = f.allocator.stats();
  EXPECT_EQ(s.reserved, CachingAllocator::kSmallSegment);
  EXPECT_EQ(s.peak_reserved, CachingAllocator::kSmallSegment + 30 * kMiB);
  EXPECT_EQ(s.in_use, 1000u);
  EXPECT_EQ(s.peak_in_use, 1000u + 2000u + 30 * kMiB);
  f.allocator.Deallocate(small, 1000);
}

TEST(CachingAllocator, OutOfMemoryReturnsTheCacheFirstThenFailsCleanly) {
  Fixture f(48 * kMiB);
  void* a = f.allocator.Allocate(30 * kMiB);
  f.allocator.Deallocate(a, 30 * kMiB);  // cached: the device has 18 MiB left
  // 40 MiB fits only once the cached 30 MiB segment is back with the device.
  void* b = f.allocator.Allocate(40 * kMiB);
  EXPECT_EQ(f.device.refusals, 1);
  EXPECT_EQ(f.device.used, 40 * kMiB);
  // Now nothing is cached and 8 MiB are left: 10 MiB fails, naming the device and the sizes.
  const AllocatorStats before = f.allocator.stats();
  OF_EXPECT_ERROR(f.allocator.Allocate(10 * kMiB), ResourceExhausted, "out of memory on cuda:3",
                  "allocating 10485760 bytes");
  const AllocatorStats after = f.allocator.stats();
  EXPECT_EQ(after.out_of_memory, before.out_of_memory + 1);
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_EQ(after.reserved, before.reserved);
  EXPECT_EQ(after.allocations, before.allocations);
  // And the allocator keeps working (a small segment fits in what is left).
  void* c = f.allocator.Allocate(100000);
  f.allocator.Deallocate(c, 100000);
  f.allocator.Deallocate(b, 40 * kMiB);
  OF_EXPECT_ERROR(f.allocator.Allocate(~size_t{0}), ResourceExhausted, "out of memory on cuda:3");
}

// Random allocations and frees: live blocks never overlap, stay inside their segments, are aligned to
// 512 bytes, and the counters add up; at the end everything merges back and goes back to the device.
TEST(CachingAllocator, RandomWorkloadKeepsBlocksDisjointAndCountersExact) {
  Fixture f(1024 * kMiB);
  std::mt19937_64 rng(42);
  std::map<char*, size_t> live;  // pointer -> requested size
  size_t requested = 0;
  for (int i = 0; i < 4000; ++i) {
    if (!live.empty() && (live.size() >= 16 || rng() % 2 == 0)) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      requested -= it->second;
      f.allocator.Deallocate(it->first, it->second);
      live.erase(it);
      continue;
    }
    const size_t n = rng() % 4 == 0 ? rng() % (24 * kMiB) : rng() % 200000;
    auto* p = static_cast<char*>(f.allocator.Allocate(n));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 512, 0u);
    auto [segment, offset] = SegmentOf(f.device, p);
    ASSERT_LE(offset + n, f.device.segments.at(segment));
    auto next = live.upper_bound(p);
    if (next != live.end()) {
      ASSERT_LE(p + n, next->first);
    }
    if (next != live.begin()) {
      auto prev = std::prev(next);
      ASSERT_LE(prev->first + std::max<size_t>(prev->second, 1), p);
    }
    live.emplace(p, n);
    requested += n;
    ASSERT_EQ(f.allocator.stats().in_use, requested);
    ASSERT_EQ(f.allocator.stats().reserved, f.device.used);
  }
  for (auto [p, n] : live) f.allocator.Deallocate(p, n);
  EXPECT_EQ(f.allocator.stats().in_use, 0u);
  EXPECT_EQ(f.allocator.stats().cached, f.allocator.stats().reserved);
  f.allocator.EmptyCache();
  EXPECT_EQ(f.device.used, 0u);
  EXPECT_TRUE(f.device.segments.empty());
}

TEST(CachingAllocator, ManyThreadsAllocateAndFree) {
  Fixture f(512 * kMiB);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&f, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 500; ++i) {
        const size_t n = 1 + rng() % (3 * kMiB);
        auto* p = static_cast<unsigned char*>(f.allocator.Allocate(n));
        p[0] = p[n - 1] = static_cast<unsigned char>(t);  // the memory is the caller's alone
        ASSERT_EQ(p[0], static_cast<unsigned char>(t));
        f.allocator.Deallocate(p, n);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(f.allocator.stats().in_use, 0u);
  EXPECT_EQ(f.allocator.stats().allocations, 2000u);
}

// The CPU allocator reports its own counters through the same interface.
TEST(CachingAllocator, CpuAllocatorStatsFollowItsAllocations) {
  Allocator& cpu = GetBackend(Device::CPU()).allocator();
  const AllocatorStats before = cpu.stats();
  void* p = cpu.Allocate(1000);
  AllocatorStats s = cpu.stats();
  EXPECT_EQ(s.in_use, before.in_use + 1000);
  EXPECT_EQ(s.allocations, before.allocations + 1);
  EXPECT_GE(s.reserved, s.in_use);
  EXPECT_GE(s.peak_reserved, s.reserved);
  cpu.Deallocate(p, 1000);
  cpu.EmptyCache();
  s = cpu.stats();
  EXPECT_EQ(s.in_use, before.in_use);
  EXPECT_EQ(s.cached, 0u);
}

// The VmFlags of the mapping of this process that holds `p` ("" where none does), from /proc/self/smaps.
std::string VmFlagsAt(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto address = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> start >> dash >> end && dash == '-' && line.find(' ') != std::string::npos &&
        line.find(':') > line.find(' ')) {
      inside = start <= address && address < end;  // a mapping's first line: "start-end perms ..."
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line.substr(8);
    }
  }
  return "";
}

// Note [Huge pages for large host blocks]: CPU blocks of 64 MiB and more are mappings of their own,
// aligned to the huge page size and advised huge pages (VmFlags "hg"), given back to the OS when freed;
// smaller ones are not advised.
TEST(CachingAllocator, CpuBlocksOf64MiBAreAdvisedHugePages) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizer builds take every block from aligned_alloc";
#endif
  std::ifstream pmd("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
  size_t huge_page = 0;
  if (!(pmd >> huge_page)) GTEST_SKIP() << "no transparent huge pages on this machine";
  Allocator& cpu = GetBackend(Device::CPU()).allocator();
  const size_t large = 64 * kMiB + 1;  // its size class is 72 MiB
  char* block = static_cast<char*>(cpu.Allocate(large));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % huge_page, 0u);
  block[0] = 1;
  block[large - 1] = 2;  // the whole block is writable
  EXPECT_EQ(block[0] + block[large - 1], 3);
  const std::string flags = VmFlagsAt(block);
  EXPECT_NE(flags.find(" hg"), std::string::npos) << "VmFlags:" << flags;
  EXPECT_EQ(VmFlagsAt(block + large - 1), flags);  // one mapping
  void* small = cpu.Allocate(kMiB);
  EXPECT_EQ(VmFlagsAt(small).find(" hg"), std::string::npos);
  cpu.Deallocate(small, kMiB);
  cpu.Deallocate(block, large);
  cpu.EmptyCache();
  EXPECT_EQ(VmFlagsAt(block), "");  // unmapped
}

}  // namespace
}  // namespace oneflow
