// Generator: a session's random-number state, Philox4x32-10 keyed by the seed.
//
// A random op reserves a range of counters (one per element) with Reserve() and computes element i
// from counter (start + i), so results depend only on the seed and the order of random ops — not on
// threads or devices. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>

namespace oneflow {

class Generator {
 public:
  explicit Generator(uint64_t seed) : seed_(seed) {}

  // Restarts the sequence from `seed`.
  void ManualSeed(uint64_t seed) {
    std::lock_guard<std::mutex> lock(mutex_);
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return seed_;
  }

  struct Range {
    uint64_t key;
    uint64_t first_counter;
  };
  // Reserves `count` consecutive counters.
  Range Reserve(uint64_t count) {
    std::lock_guard<std::mutex> lock(mutex_);
    const Range r{seed_, offset_};
    offset_ += count;
    return r;
  }

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

}  // namespace oneflow
