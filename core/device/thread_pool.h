// ThreadPool: the CPU threads a session's kernels run on (SessionOptions::num_threads).
//
// ParallelFor splits [0, n) into chunks and runs them on the pool's workers and the calling thread,
// returning when all are done. It is safe to call from several threads: while one call owns the
// workers, a concurrent or nested call runs its loop inline on its own thread, so nothing deadlocks.
// The first exception a chunk throws is rethrown to the caller (the other chunks still finish).
// Where libgomp (oneDNN's OpenMP runtime) is loaded, the chunks run on its threads, the ones oneDNN's
// primitives run on, and the pool keeps none of its own (Note [One set of threads with oneDNN] in
// thread_pool.cpp). Otherwise the pool's workers wait for the next call for 50 microseconds, yielding
// the core to any other thread that wants it, before they sleep (Note [Workers wait before they sleep]).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace oneflow {

class ThreadPool {
 public:
  // `num_threads` threads in all, the caller of ParallelFor included; 0 = one per hardware thread.
  // ResourceExhausted, with no thread left running, if the system refuses to start one.
  explicit ThreadPool(int32_t num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int32_t num_threads() const { return num_threads_; }

  // Calls fn(begin, end) over disjoint ranges covering [0, n), each at least `grain` long (but the
  // last), so that work below `grain` elements never pays for a thread hand-off.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  struct Job;
  void WorkerLoop();
  void StopWorkers();  // wakes, stops and joins every worker
  static void RunChunks(Job& job);

  int32_t num_threads_ = 1;
  std::vector<std::thread> workers_;  // none where the chunks run on OpenMP threads
  std::mutex job_mutex_;  // held by the call that owns the workers
  std::mutex mutex_;      // guards the fields below (the atomics are written under it, and read without it
                          // by the waits before sleeping)
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  Job* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int32_t> busy_workers_{0};
  bool stopping_ = false;
};

}  // namespace oneflow
