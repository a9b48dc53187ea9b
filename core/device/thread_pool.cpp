#include "core/device/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <system_error>

#include "core/common/error.h"

namespace oneflow {
namespace {
thread_local bool t_inside_parallel_for = false;
}  // namespace

struct ThreadPool::Job {
  const std::function<void(int64_t, int64_t)>* fn;
  int64_t n;
  int64_t chunk;
  std::atomic<int64_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
};

ThreadPool::ThreadPool(int32_t num_threads) {
  OF_CHECK_GE(num_threads, 0) << "num_threads must not be negative";
  if (num_threads == 0) num_threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  workers_.reserve(static_cast<size_t>(num_threads - 1));
  try {
    for (int32_t i = 1; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  } catch (const std::system_error& e) {
    // The destructor will not run for a constructor that throws: the workers already started must be
    // stopped here, or they would wait forever on a condition variable that is being destroyed.
    const size_t started = workers_.size();
    StopWorkers();
    OF_THROW(ResourceExhausted) << "could not start thread " << started + 1 << " of the " << num_threads - 1
                                << " worker threads asked for (num_threads " << num_threads << "): " << e.what();
  }
}

ThreadPool::~ThreadPool() { StopWorkers(); }

void ThreadPool::StopWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& w : workers_) w.join();
  workers_.clear();
}

void ThreadPool::RunChunks(Job& job) {
  const bool was_inside = t_inside_parallel_for;
  t_inside_parallel_for = true;
  // Chunks are claimed by compare-exchange, never past n: a fetch_add per participant could push the
  // counter past INT64_MAX for n near it (every worker joins, each overshooting by a chunk) and wrap.
  for (;;) {
    int64_t begin = job.next.load(std::memory_order_relaxed), end = 0;
    do {
      if (begin >= job.n) break;
      end = begin + std::min(job.chunk, job.n - begin);
    } while (!job.next.compare_exchange_weak(begin, end, std::memory_order_relaxed));
    if (begin >= job.n) break;
    try {
      (*job.fn)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job.error_mutex);
      if (!job.error) job.error = std::current_exception();
    }
  }
  t_inside_parallel_for = was_inside;
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    Job* job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      if (job == nullptr) continue;  // woken too late: that call already finished without us
      ++busy_workers_;
    }
    RunChunks(*job);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_workers_;
    }
    work_done_.notify_one();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  // Rounded-up divisions that cannot overflow for any n (n + grain - 1 could).
  const auto chunks_of = [n](int64_t size) { return n / size + (n % size != 0); };
  const int64_t threads = std::min<int64_t>(num_threads(), chunks_of(grain));
  std::unique_lock<std::mutex> owner(job_mutex_, std::defer_lock);
  if (threads <= 1 || t_inside_parallel_for || !owner.try_lock()) {
    fn(0, n);
    return;
  }
  Job job;
  job.fn = &fn;
  job.n = n;
  job.chunk = std::max(grain, chunks_of(threads));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    ++generation_;
  }
  work_ready_.notify_all();
  RunChunks(job);
  {
    // Every worker woken for this generation must have left RunChunks before `job` goes away.
    std::unique_lock<std::mutex> lock(mutex_);
    work_done_.wait(lock, [&] { return busy_workers_ == 0; });
    job_ = nullptr;
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace oneflow
