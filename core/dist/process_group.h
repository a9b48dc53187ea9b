// Process groups: the ranks of one data-parallel job and the collectives between them, over Gloo
// (https://github.com/facebookincubator/gloo, Debian's libgloo: TCP transport), which moves CPU tensors' bytes,
// and NCCL for CUDA tensors (core/dist/nccl_communicator.h, Note [NCCL]); this file owns rendezvous, dtypes,
// reductions, timeouts and the errors users see.
//
// Note [Collective failures]
// Every collective runs under the group's timeout. When one fails (a peer closed its connections, or
// nothing arrived in time), the rank finds out which peers are gone before reporting: each rank wrote its
// host and pid to the rendezvous store when it joined, and on a failure each surviving rank records in the
// store which collective it failed in and waits briefly for the others' records. A peer whose process has
// exited (same host) is named as such (UNAVAILABLE); a peer that wrote no record never reached the
// collective (DEADLINE_EXCEEDED, "did not take part"). The group is then broken: later collectives are
// FAILED_PRECONDITION naming the first failure; the session and everything else keep working.
//
// Thread-safety: collectives of one group run one at a time on the group's own thread, in the order they
// were issued (Gloo's pairs carry one collective at a time, so every rank must issue the same collectives
// in the same order); a call waits for its collective, unless it is started asynchronously
// (AllReduceAsync, which lets a graph's backward go on while gradients travel). Any thread may call; rank()
// and world_size() may be read from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "core/tensor/tensor.h"

namespace gloo {
class Context;
namespace rendezvous {
class Store;
}
}  // namespace gloo

namespace oneflow::dist {

class NcclCommunicator;

enum class ReduceOp : int32_t { kSum = 0, kMean = 1, kMax = 2, kMin = 3 };
const char* ReduceOpName(ReduceOp op);  // "sum", "mean", "max", "min"

struct ProcessGroupOptions {
  int32_t rank = 0;
  int32_t world_size = 1;
  // Where the ranks meet: a directory all of them can read and write, created empty for this group
  // ("file://" prefix optional), or "tcp://host:port", a port that rank 0 listens on.
  std::string rendezvous;
  std::chrono::milliseconds timeout{30000};  // joining, and each collective
  std::string host = "127.0.0.1";            // the address this rank's connections use
};

class ProcessGroup {
 public:
  // Joins the group: every rank calls it with the same world size and rendezvous and its own rank.
  // InvalidArgument for options out of range or ranks that disagree on the world size or claim the same
  // rank; DeadlineExceeded naming the missing ranks when not all join within the timeout.
  static std::shared_ptr<ProcessGroup> Create(const ProcessGroupOptions& options);
  // The live group with this id (ids are never reused in a process), or null once destroyed.
  static std::shared_ptr<ProcessGroup> Find(int64_t id);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int64_t id() const { return id_; }
  int32_t rank() const { return rank_; }
  int32_t world_size() const { return world_size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // The collectives, on contiguous CPU (Gloo) or CUDA (NCCL) tensors, in place. Every rank passes the same dtype and number of
  // elements (checked where `checked`: one small exchange first; the graph checks its plans once instead).
  // AllReduce: numeric dtypes; kMean needs a floating dtype.
  void AllReduce(const Tensor& t, ReduceOp op, bool checked = true);
  // Rank `root`'s elements into t on every rank.
  void Broadcast(const Tensor& t, int32_t root, bool checked = true);
  // out (world_size * in.numel() elements): rank r's `in` at position r.
  void AllGather(const Tensor& in, const Tensor& out, bool checked = true);
  void Barrier();

  // AllReduce (unchecked) started on the group's thread: t must stay untouched until the returned future
  // is ready; get() rethrows the collective's error.
  std::shared_future<void> AllReduceAsync(TensorPtr t, ReduceOp op);
  // For graphs: remembers a started collective under the buffer it writes, and waits for it (rethrowing
  // its error; nothing to wait for is fine). WaitForAll waits for every collective issued so far, ignoring
  // errors (a run that failed half-way must not leave the group writing into its buffers).
  void Track(const void* buffer, std::shared_future<void> done);
  void WaitFor(const void* buffer);
  void WaitForAll();

  // Refuses (InvalidArgument naming the ranks that differ) unless every rank passes the same value;
  // `what` says what the value stands for.
  void CheckSame(uint64_t value, std::string_view what);

 private:
  ProcessGroup() = default;
  // Create's rendezvous: the ranks' records, their agreement, then Gloo's connections.
  void Join(const ProcessGroupOptions& options);
  using Collective = std::function<void(uint32_t tag)>;
  // Queues `fn` (collective `name`) for the group's thread, which runs it after everything queued before.
  std::shared_future<void> Start(std::string name, Collective fn);
  void Run(std::string name, Collective fn) { Start(std::move(name), std::move(fn)).get(); }
  void Worker();
  // On the group's thread: the NCCL communicator, made on the first CUDA collective (Note [NCCL]).
  NcclCommunicator& Nccl(Device device);
  // On the group's thread: runs one collective, or fails (Note [Collective failures]).
  void Execute(const std::string& name, const Collective& fn);
  [[noreturn]] void Fail(std::string_view collective, const std::exception& e);
  // What the peers were doing when `collective` (number `seq`) failed (Note [Collective failures]).
  std::string Diagnose(uint64_t seq);

  int64_t id_ = 0;
  int32_t rank_ = 0, world_size_ = 1;
  std::chrono::milliseconds timeout_{30000};
  std::string host_;
  std::unique_ptr<gloo::rendezvous::Store> store_;
  std::shared_ptr<gloo::Context> context_;
  std::shared_ptr<NcclCommunicator> nccl_;  // the group's thread only (Nccl)
  // The group's thread and its queue.
  struct Task {
    std::string name;
    Collective fn;
    std::promise<void> done;
  };
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::thread worker_;
  std::shared_future<void> last_;  // the most recently queued collective
  std::map<const void*, std::shared_future<void>> started_;  // Track
  // The group's thread only:
  uint64_t sequence_ = 0;   // collectives run so far (Gloo's tag, and the failure records' key)
  std::string failure_;     // the first failure; the group is broken once set
};

}  // namespace oneflow::dist
