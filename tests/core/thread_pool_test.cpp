#include "core/device/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/common/error.h"
#include "core/tensor/factory.h"
#include "tests/core/test_util.h"

namespace oneflow {
namespace {

using testing::ExpectError;

// Every index of [0, n) is visited exactly once, and every range but the last is at least `grain`.
TEST(ThreadPool, CoversTheRangeExactlyOnce) {
  for (int32_t threads : {1, 2, 4, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {0, 1, 7, 100, 1001, 65536}) {
      for (int64_t grain : {1, 3, 64, 100000}) {
        std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
        std::mutex mutex;
        std::vector<std::pair<int64_t, int64_t>> ranges;
        pool.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) visits[static_cast<size_t>(i)].fetch_add(1);
          std::lock_guard<std::mutex> lock(mutex);
          ranges.emplace_back(begin, end);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(visits[static_cast<size_t>(i)].load(), 1) << "index " << i;
        for (auto [begin, end] : ranges) {
          if (end != n) {
            EXPECT_GE(end - begin, grain) << "threads " << threads << " n " << n;
          }
        }
      }
    }
  }
}

// Ranges up to INT64_MAX split without overflow (n + grain - 1 would overflow; so would a chunk's
// end, or a chunk counter that every worker advances): the ranges are disjoint and cover [0, n)
// exactly, whatever the grain and thread count.
TEST(ThreadPool, RangesNearInt64MaxDoNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (int32_t threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {kMax, kMax - 1, int64_t{1} << 62}) {
      for (int64_t grain : {int64_t{1}, kMax / 7, kMax / 2, kMax}) {
        std::mutex mutex;
        std::vector<std::pair<int64_t, int64_t>> ranges;
        pool.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
          {
            std::lock_guard<std::mutex> lock(mutex);
            ranges.emplace_back(begin, end);
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(1));  // every worker joins in
        });
        std::sort(ranges.begin(), ranges.end());
        ASSERT_FALSE(ranges.empty());
        EXPECT_EQ(ranges.front().first, 0);
        EXPECT_EQ(ranges.back().second, n) << "threads " << threads << " grain " << grain;
        for (size_t i = 0; i < ranges.size(); ++i) {
          EXPECT_LT(ranges[i].first, ranges[i].second);
          if (i > 0) {
            EXPECT_EQ(ranges[i].first, ranges[i - 1].second);
          }
        }
      }
    }
  }
}

// Two chunks run at the same time on two threads: each waits (bounded) until the other has started.
TEST(ThreadPool, RunsChunksConcurrently) {
  ThreadPool pool(2);
  std::mutex mutex;
  std::condition_variable cv;
  std::set<std::thread::id> arrived;
  bool both = true;
  pool.ParallelFor(2, 1, [&](int64_t, int64_t) {
    std::unique_lock<std::mutex> lock(mutex);
    arrived.insert(std::this_thread::get_id());
    cv.notify_all();
    if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return arrived.size() == 2; })) both = false;
  });
  EXPECT_TRUE(both);
  EXPECT_EQ(arrived.size(), 2u);
}

TEST(ThreadPool, RethrowsTheFirstErrorAndStaysUsable) {
  ThreadPool pool(4);
  std::atomic<int64_t> done{0}, failed{0};
  ExpectError(
      [&] {
        pool.ParallelFor(1000, 10, [&](int64_t begin, int64_t end) {
          if (begin <= 500 && 500 < end) {
            failed.fetch_add(end - begin);
            OF_THROW(OutOfRange) << "chunk with 500 failed";
          }
          done.fetch_add(end - begin);
        });
      },
      StatusCode::kOutOfRange, "chunk with 500 failed");
  EXPECT_GT(failed.load(), 0);
  EXPECT_EQ(done.load() + failed.load(), 1000);  // every other chunk still ran
  std::atomic<int64_t> sum{0};
  pool.ParallelFor(100, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) sum.fetch_add(i);
  });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(ThreadPool, NestedAndConcurrentCallsDoNotDeadlock) {
  ThreadPool pool(3);
  std::atomic<int64_t> inner{0};
  pool.ParallelFor(6, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      pool.ParallelFor(10, 1, [&](int64_t b, int64_t e) { inner.fetch_add(e - b); });
    }
  });
  EXPECT_EQ(inner.load(), 60);

  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep) {
        pool.ParallelFor(1000, 7, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 50 * 1000);
}

TEST(ThreadPool, ThreadCounts) {
  EXPECT_GE(ThreadPool(0).num_threads(), 1);  // one per hardware thread
  EXPECT_EQ(ThreadPool(1).num_threads(), 1);
  ExpectError([] { ThreadPool pool(-1); }, StatusCode::kInvalidArgument, "num_threads");
}

// Random tensors do not depend on how many threads fill them.
TEST(ThreadPool, RandomTensorsIndependentOfThreadCount) {
  const Shape shape{3, 10007};  // odd size: uneven chunks
  for (Symbol<DType> dtype : {DType::Float32(), DType::Float64(), DType::BFloat16()}) {
    std::vector<std::vector<char>> results;
    for (int32_t threads : {1, 2, 5}) {
      ThreadPool pool(threads);
      Generator gen(1234);
      const TensorPtr u = Rand(gen, dtype, shape, Device::CPU(), &pool);
      const TensorPtr g = Randn(gen, dtype, shape, Device::CPU(), &pool);
      std::vector<char> bytes(u->nbytes() + g->nbytes());
      std::memcpy(bytes.data(), u->raw_data(), u->nbytes());
      std::memcpy(bytes.data() + u->nbytes(), g->raw_data(), g->nbytes());
      results.push_back(std::move(bytes));
    }
    EXPECT_EQ(results[0], results[1]) << dtype->name();
    EXPECT_EQ(results[0], results[2]) << dtype->name();
  }
}

}  // namespace
}  // namespace oneflow
