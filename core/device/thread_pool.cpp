#include "core/device/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <string>
#include <system_error>

#include "core/common/error.h"

// Note [One set of threads with oneDNN]
// oneDNN (Debian's build) runs its primitives on OpenMP threads (libgomp, which libdnnl loads), and
// libgomp's threads spin for a while after each parallel region before they sleep (about 300,000 spins,
// milliseconds, unless OMP_WAIT_POLICY=passive is set before the process starts). Kernels on a separate
// set of threads then competed with the spinning ones for the cores: on a 2-core machine the main job
// (examples/fashion_mnist, --graph) trained an epoch's first 16,384 images in 10.3 s, and in 6.5 s with
// OMP_WAIT_POLICY=passive. So where libgomp is in the process, ParallelFor runs its chunks as a libgomp
// parallel region (GOMP_parallel, what GCC compiles `#pragma omp parallel` to), on the threads oneDNN
// uses, and the pool keeps no threads of its own (it starts and stops them once, to fail as a status
// where the system would refuse them: libgomp ends the process when it cannot start a thread, for
// oneDNN's primitives as for these chunks). Weak references reach libgomp without linking OpenMP into
// oneflow_c; without it (and under ThreadSanitizer, which does not see libgomp's synchronisation) the
// pool runs its own std::threads. So it does with OMP_WAIT_POLICY=passive, where libgomp's threads sleep
// at once and starting a libgomp region costs more than the pool's own hand-off (the same 16,384 images:
// 6.5-6.7 s on the pool's threads, 6.9-7.5 s on libgomp's).
extern "C" __attribute__((weak)) void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads,
                                                    unsigned flags);

namespace oneflow {
namespace {
thread_local bool t_inside_parallel_for = false;

bool OnOpenMpThreads() {
#if defined(__SANITIZE_THREAD__)
  return false;
#else
  static const bool on = [] {
    const char* policy = std::getenv("OMP_WAIT_POLICY");  // libgomp reads it at load, case-insensitively
    std::string lower = policy ? policy : "";
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return GOMP_parallel != nullptr && lower.find("passive") == std::string::npos;
  }();
  return on;
#endif
}

// Note [Workers wait before they sleep]
// A worker that sleeps on a condition variable as soon as its chunks are done takes tens of
// microseconds to wake for the next ParallelFor (a futex wake, a context switch), and in that time the
// calling thread has often claimed every chunk itself; the main job calls ParallelFor a few hundred
// times a step. So a worker first waits for the next call for kWaitBeforeSleep, and the caller for the
// workers' last chunks likewise, yielding the core at each look (sched_yield) so that a thread that wants
// it, oneDNN's OpenMP workers above all, gets it at once. Measured on 2 cores (alternated runs, medians):
// the main job's first 12,800 images 4.70 -> 4.00 s eagerly and 4.10 -> 3.60 s with --graph; ResNet-50's
// lazy step 165 -> 155 ms at batch 1 and 513 -> 495 ms at batch 4. Spinning on a pause instruction
// instead did as well at 30 microseconds and worse from 60 on, where it kept oneDNN's threads from the
// core.
constexpr auto kWaitBeforeSleep = std::chrono::microseconds(50);

// Yields the core while `waiting()` holds, for at most kWaitBeforeSleep.
template <typename Waiting>
void WaitBeforeSleep(const Waiting& waiting) {
  if (!waiting()) return;
  const auto until = std::chrono::steady_clock::now() + kWaitBeforeSleep;
  do {
    sched_yield();
  } while (waiting() && std::chrono::steady_clock::now() < until);
}
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
  num_threads_ = num_threads;
  // The workers start even where the chunks will run on OpenMP's threads (Note [One set of threads with
  // oneDNN]), and stop again below: a pool the system cannot give its threads then fails here, as a
  // status, rather than in libgomp, which ends the process when it cannot start a thread.
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
  if (OnOpenMpThreads()) StopWorkers();
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
    WaitBeforeSleep([&] { return generation_.load(std::memory_order_acquire) == seen; });
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
  if (OnOpenMpThreads()) {
    GOMP_parallel([](void* data) { RunChunks(*static_cast<Job*>(data)); }, &job, static_cast<unsigned>(threads), 0);
    if (job.error) std::rethrow_exception(job.error);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    ++generation_;
  }
  work_ready_.notify_all();
  RunChunks(job);
  {
    // Every worker woken for this generation must have left RunChunks before `job` goes away.
    WaitBeforeSleep([&] { return busy_workers_.load(std::memory_order_acquire) != 0; });
    std::unique_lock<std::mutex> lock(mutex_);
    work_done_.wait(lock, [&] { return busy_workers_ == 0; });
    job_ = nullptr;
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace oneflow
