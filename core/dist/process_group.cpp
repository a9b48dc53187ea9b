#include "core/dist/process_group.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <type_traits>
#include <vector>

#include <fmt/ranges.h>

#include "core/common/dtype.h"
#include "core/dist/nccl_communicator.h"
#include "core/dist/tcp_store.h"

namespace oneflow::dist {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex m;
  return m;
}
std::map<int64_t, std::weak_ptr<ProcessGroup>>& Registry() {
  static auto* groups = new std::map<int64_t, std::weak_ptr<ProcessGroup>>();
  return *groups;
}
std::atomic<int64_t> next_id{1};

// Note [SIGPIPE]: Gloo writes to its peers' sockets without MSG_NOSIGNAL, so a write to a rank that has
// exited raises SIGPIPE, whose default action kills this process before the failure can be reported (the
// surviving ranks of dist.DataParallel.ARankThatExitsIsNamedByTheOthers died so, now and then). The first
// group sets SIGPIPE to ignored if it still has its default action, as Python does for every program; a
// handler or disposition the host chose is left alone. Such writes then fail with EPIPE, reported as the
// peer's exit.
void IgnoreSigpipeUnlessHandled() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 &&
        current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
  });
}

std::vector<char> Bytes(std::string_view s) { return {s.begin(), s.end()}; }
std::string Text(const std::vector<char>& v) { return {v.begin(), v.end()}; }

// Whether `key` appears in `store` within `timeout` (Gloo's wait throws when it does not).
bool Appears(gloo::rendezvous::Store& store, const std::string& key, std::chrono::milliseconds timeout) {
  try {
    store.wait({key}, timeout);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// What is left until `deadline`, at least 1 ms (a wait of 0 would not look).
std::chrono::milliseconds Remaining(std::chrono::steady_clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// What a rank wrote to the store when it joined (Join): its world size, host and process.
struct RankRecord {
  int32_t world_size = 0;
  std::string host;
  long pid = 0;
  // Whether the process is known to have exited (one on this host that no longer exists).
  bool Exited() const {
    return host == Hostname() && pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
  }
};

RankRecord ReadRecord(gloo::rendezvous::Store& store, int32_t rank) {
  RankRecord record;
  std::istringstream in(Text(store.get(fmt::format("oneflow/rank/{}", rank))));
  in >> record.world_size >> record.host >> record.pid;
  return record;
}

// Elementwise combination for Gloo's reductions, in T (half types through float). Max and min propagate
// NaN, as PyTorch's reductions do.
template <typename T, ReduceOp kOp>
void Combine(void* c, const void* a, const void* b, size_t n) {
  using Compute = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;
  T* out = static_cast<T*>(c);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) {
    const auto u = static_cast<Compute>(x[i]), v = static_cast<Compute>(y[i]);
    Compute r;
    if constexpr (kOp == ReduceOp::kMax || kOp == ReduceOp::kMin) {
      if constexpr (std::is_floating_point_v<Compute>) {
        if (u != u || v != v) {
          r = u != u ? u : v;
        } else {
          r = kOp == ReduceOp::kMax ? (u < v ? v : u) : (v < u ? v : u);
        }
      } else {
        r = kOp == ReduceOp::kMax ? (u < v ? v : u) : (v < u ? v : u);
      }
    } else {
      // Integers wrap around as in every other integer op (unsigned arithmetic is defined).
      if constexpr (std::is_integral_v<Compute>) {
        using U = std::make_unsigned_t<Compute>;
        r = static_cast<Compute>(static_cast<U>(static_cast<U>(u) + static_cast<U>(v)));
      } else {
        r = u + v;
      }
    }
    out[i] = static_cast<T>(r);
  }
}

// A 64-bit FNV-1a hash of a few integers: what one rank's call looks like.
uint64_t Hash(std::initializer_list<int64_t> values) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t v : values) {
    for (int k = 0; k < 8; ++k) h = (h ^ ((static_cast<uint64_t>(v) >> (8 * k)) & 0xff)) * 0x100000001b3ull;
  }
  return h;
}

void CheckContiguous(const Tensor& t, std::string_view what) {
  OF_CHECK(t.device().type == DeviceType::kCPU || t.device().type == DeviceType::kCUDA)
      << what << " is on " << t.device() << "; process groups run on CPU (Gloo) and CUDA (NCCL) tensors";
  OF_CHECK_INTERNAL(t.is_contiguous()) << what << " must be contiguous";
}

bool OnCuda(const Tensor& t) { return t.device().type == DeviceType::kCUDA; }

}  // namespace

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMean: return "mean";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
  }
  return "?";
}

std::shared_ptr<ProcessGroup> ProcessGroup::Create(const ProcessGroupOptions& options) {
  OF_CHECK(options.world_size >= 1) << "world_size must be >= 1, got " << options.world_size;
  OF_CHECK(options.rank >= 0 && options.rank < options.world_size)
      << "rank must be in [0, world_size = " << options.world_size << "), got " << options.rank;
  OF_CHECK(options.timeout.count() > 0) << "timeout must be > 0 ms, got " << options.timeout.count();
  OF_CHECK(!options.rendezvous.empty()) << "rendezvous is empty: give a directory shared by the ranks or tcp://host:port";
  std::shared_ptr<ProcessGroup> g(new ProcessGroup());
  g->rank_ = options.rank;
  g->world_size_ = options.world_size;
  g->timeout_ = options.timeout;
  g->host_ = options.host.empty() ? "127.0.0.1" : options.host;

  std::string where = options.rendezvous;
  if (where.starts_with("tcp://")) {
    g->store_ = std::make_unique<TcpStore>(where.substr(6), options.rank == 0, options.timeout);
  } else {
    if (where.starts_with("file://")) where = where.substr(7);
    OF_CHECK(access(where.c_str(), W_OK | X_OK) == 0)
        << "rendezvous directory '" << where << "' is not a writable directory (" << std::strerror(errno) << ")";
    g->store_ = std::make_unique<gloo::rendezvous::FileStore>(where);
  }
  try {
    g->Join(options);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // the store's own errors (a file it cannot write, rank 0's store gone)
    OF_THROW(Unavailable) << "process group of " << options.world_size << " ranks at '" << options.rendezvous
                          << "': rank " << options.rank << " could not join: " << e.what();
  }
  g->id_ = next_id++;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry()[g->id_] = g;
  return g;
}

void ProcessGroup::Join(const ProcessGroupOptions& options) {
  gloo::rendezvous::Store& store = *store_;
  // Every rank says who it is (Note [Collective failures]), then checks that all agree.
  const std::string me = fmt::format("{} {} {}", options.world_size, Hostname(), getpid());
  store.set(fmt::format("oneflow/rank/{}", options.rank), Bytes(me));
  std::vector<int32_t> missing;
  struct {
    int32_t rank = -1;
    long pid = 0;
  } stale;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  for (int32_t r = 0; r < options.world_size; ++r) {
    const auto left = Remaining(deadline);
    if (!Appears(store, fmt::format("oneflow/rank/{}", r), left)) {
      missing.push_back(r);
      continue;
    }
    // Each record is checked when first seen (a disagreement explains a missing rank better than the
    // timeout, and a rank that disagrees exits soon after writing its record).
    const RankRecord record = ReadRecord(store, r);
    OF_CHECK(record.world_size == options.world_size)
        << "rank " << r << " joined with world_size " << record.world_size << " but rank " << options.rank << " with "
        << options.world_size << "; every rank must pass the same world_size";
    OF_CHECK(r != options.rank || (record.host == Hostname() && record.pid == getpid()))
        << "rank " << r << " was also claimed by process " << record.pid << " on " << record.host
        << "; each rank must be given to exactly one process";
    // An agreeing record whose process had already exited when first seen is likely an earlier job's (a
    // peer of this one may still exit later, when it gives up waiting, without making it stale); reported
    // after every record was seen, since a disagreement found later explains such an exit better.
    if (r != options.rank && record.Exited() && stale.rank < 0) stale = {r, record.pid};
  }
  if (stale.rank >= 0) {
    OF_THROW(InvalidArgument) << "the rendezvous at '" << options.rendezvous << "' holds rank " << stale.rank
                              << "'s record from process " << stale.pid
                              << ", which has exited: each group needs a fresh rendezvous (an empty directory)";
  }
  if (!missing.empty()) {
    OF_THROW(DeadlineExceeded) << "process group of " << options.world_size << " ranks at '" << options.rendezvous
                               << "': rank(s) " << fmt::format("{}", fmt::join(missing, ", "))
                               << " did not join within " << options.timeout.count() << " ms";
  }

  IgnoreSigpipeUnlessHandled();
  gloo::transport::tcp::attr attr;
  attr.hostname = host_;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.world_size);
  context->setTimeout(options.timeout);
  gloo::rendezvous::PrefixStore prefixed("gloo", store);
  context->connectFullMesh(prefixed, device);
  context_ = std::move(context);
}

std::shared_ptr<ProcessGroup> ProcessGroup::Find(int64_t id) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(id);
  return it == Registry().end() ? nullptr : it->second.lock();
}

ProcessGroup::~ProcessGroup() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
  }
  if (worker_.joinable()) worker_.join();  // after what was queued
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().erase(id_);
}

std::shared_future<void> ProcessGroup::Start(std::string name, Collective fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!worker_.joinable()) worker_ = std::thread([this] { Worker(); });
  queue_.push_back(Task{std::move(name), std::move(fn), {}});
  last_ = queue_.back().done.get_future().share();
  wake_.notify_one();
  return last_;
}

void ProcessGroup::Worker() {
  while (true) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      Execute(task.name, task.fn);
      task.done.set_value();
    } catch (...) {
      task.done.set_exception(std::current_exception());
    }
  }
}

NcclCommunicator& ProcessGroup::Nccl(Device device) {
  if (!nccl_) {
    nccl_ = std::make_shared<NcclCommunicator>(*store_, fmt::format("oneflow/nccl/{}", sequence_), rank_, world_size_,
                                               device.index, timeout_);
  }
  OF_CHECK(nccl_->device() == device.index)
      << "rank " << rank_ << "'s CUDA collectives run on cuda:" << nccl_->device()
      << " (the device of its first one); a tensor on " << device << " cannot take part (one GPU per rank)";
  return *nccl_;
}

void ProcessGroup::Execute(const std::string& name, const Collective& fn) {
  if (!failure_.empty()) {
    OF_THROW(FailedPrecondition) << name << ": the process group (rank " << rank_ << " of " << world_size_
                                 << ") failed earlier and can no longer be used: " << failure_;
  }
  ++sequence_;
  try {
    fn(static_cast<uint32_t>(sequence_));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    Fail(name, e);
  }
}

void ProcessGroup::Track(const void* buffer, std::shared_future<void> done) {
  std::lock_guard<std::mutex> lock(mutex_);
  started_[buffer] = std::move(done);
}

void ProcessGroup::WaitFor(const void* buffer) {
  std::shared_future<void> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = started_.find(buffer);
    if (it == started_.end()) return;
    done = std::move(it->second);
    started_.erase(it);
  }
  done.get();
}

void ProcessGroup::WaitForAll() {
  std::shared_future<void> last;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last = last_;
    started_.clear();
  }
  if (last.valid()) last.wait();  // the group's thread runs them in order
}

void ProcessGroup::Fail(std::string_view collective, const std::exception& e) {
  const std::string peers = Diagnose(sequence_);
  const bool exited = peers.find("exited") != std::string::npos;
  failure_ = fmt::format("{} (collective #{}) failed on rank {} of {} after at most {} ms: {}{}", collective, sequence_,
                         rank_, world_size_, timeout_.count(), peers.empty() ? "" : peers + "; ", e.what());
  if (exited) OF_THROW(Unavailable) << failure_;
  OF_THROW(DeadlineExceeded) << failure_;
}

std::string ProcessGroup::Diagnose(uint64_t seq) {
  gloo::rendezvous::Store& store = *store_;
  try {
    store.set(fmt::format("oneflow/failed/{}/{}", seq, rank_), Bytes("1"));
  } catch (const std::exception&) {
    return "";  // the store itself is gone (rank 0's TCP store with rank 0)
  }
  const auto patience = std::min<std::chrono::milliseconds>(timeout_, std::chrono::milliseconds(1000));
  const auto deadline = std::chrono::steady_clock::now() + patience;
  std::vector<std::string> parts;
  for (int32_t r = 0; r < world_size_; ++r) {
    if (r == rank_) continue;
    const auto left = Remaining(deadline);
    if (Appears(store, fmt::format("oneflow/failed/{}/{}", seq, r), left)) continue;  // it failed there too
    RankRecord record;
    try {
      record = ReadRecord(store, r);
    } catch (const std::exception&) {
    }
    if (record.Exited()) {
      parts.push_back(fmt::format("rank {} (process {}) has exited", r, record.pid));
    } else {
      parts.push_back(fmt::format("rank {} did not take part", r));
    }
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

void ProcessGroup::CheckSame(uint64_t value, std::string_view what) {
  if (world_size_ == 1) return;
  std::vector<uint64_t> all(static_cast<size_t>(world_size_));
  Run("check", [&](uint32_t tag) {
    gloo::AllgatherOptions o(context_);
    o.setInput(&value, 1);
    o.setOutput(all.data(), all.size());
    o.setTag(tag);
    o.setTimeout(timeout_);
    gloo::allgather(o);
  });
  std::vector<int32_t> differ;
  for (int32_t r = 0; r < world_size_; ++r) {
    if (all[static_cast<size_t>(r)] != all[0]) differ.push_back(r);
  }
  OF_CHECK(differ.empty()) << what << " differs between ranks: rank(s) " << fmt::format("{}", fmt::join(differ, ", "))
                           << " do not match rank 0 (this is rank " << rank_ << ")";
}

void ProcessGroup::AllReduce(const Tensor& t, ReduceOp op, bool checked) {
  if (checked) {
    CheckContiguous(t, "all_reduce's tensor");
    CheckSame(Hash({1, t.numel(), t.dtype()->code(), static_cast<int64_t>(op)}),
              fmt::format("all_reduce ({} of {} {} elements)", ReduceOpName(op), t.numel(), t.dtype()->name()));
  }
  AllReduceAsync(TensorPtr(const_cast<Tensor*>(&t)), op).get();
}

std::shared_future<void> ProcessGroup::AllReduceAsync(TensorPtr t, ReduceOp op) {
  CheckContiguous(*t, "all_reduce's tensor");
  const Symbol<DType> dtype = t->dtype();
  OF_CHECK(!dtype->is_bool()) << "all_reduce: bool tensors cannot be reduced; cast them to an integer dtype";
  OF_CHECK(op != ReduceOp::kMean || dtype->is_floating_point())
      << "all_reduce: mean needs a floating dtype, got " << dtype << " (sum, then divide)";
  // One rank has nothing to combine, except on CUDA, where even one rank goes through NCCL (Note [NCCL]).
  if (t->numel() == 0 || (world_size_ == 1 && !OnCuda(*t))) {
    std::promise<void> done;
    done.set_value();
    return done.get_future().share();
  }
  return Start("all_reduce", [this, t, op](uint32_t tag) {
    if (OnCuda(*t)) {
      return Nccl(t->device()).AllReduce(t->raw_data(), t->raw_data(), static_cast<size_t>(t->numel()), t->dtype(), op);
    }
    VisitDType(t->dtype(), [&](auto type_tag) {
      using T = typename decltype(type_tag)::type;
      if constexpr (!std::is_same_v<T, bool>) {
        gloo::AllreduceOptions o(context_);
        o.setOutput(t->data<T>(), static_cast<size_t>(t->numel()));
        switch (op) {
          case ReduceOp::kSum:
          case ReduceOp::kMean: o.setReduceFunction(Combine<T, ReduceOp::kSum>); break;
          case ReduceOp::kMax: o.setReduceFunction(Combine<T, ReduceOp::kMax>); break;
          case ReduceOp::kMin: o.setReduceFunction(Combine<T, ReduceOp::kMin>); break;
        }
        o.setTag(tag);
        o.setTimeout(timeout_);
        gloo::allreduce(o);
        if (op == ReduceOp::kMean) {  // floating: double stays double, the rest divides in float
          using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;
          T* p = t->data<T>();
          for (int64_t i = 0; i < t->numel(); ++i) {
            p[i] = static_cast<T>(static_cast<Compute>(p[i]) / static_cast<Compute>(world_size_));
          }
        }
      }
    });
  });
}

void ProcessGroup::Broadcast(const Tensor& t, int32_t root, bool checked) {
  CheckContiguous(t, "broadcast's tensor");
  OF_CHECK(root >= 0 && root < world_size_) << "broadcast: root must be in [0, " << world_size_ << "), got " << root;
  if (checked) {
    CheckSame(Hash({2, t.numel(), t.dtype()->code(), root}),
              fmt::format("broadcast (from rank {} of {} {} elements)", root, t.numel(), t.dtype()->name()));
  }
  if (t.numel() == 0 || (world_size_ == 1 && !OnCuda(t))) return;
  Run("broadcast", [&](uint32_t tag) {
    if (OnCuda(t)) return Nccl(t.device()).Broadcast(t.raw_data(), t.nbytes(), root);
    gloo::BroadcastOptions o(context_);
    o.setOutput(static_cast<char*>(t.raw_data()), t.nbytes());
    o.setRoot(root);
    o.setTag(tag);
    o.setTimeout(timeout_);
    gloo::broadcast(o);
  });
}

void ProcessGroup::AllGather(const Tensor& in, const Tensor& out, bool checked) {
  CheckContiguous(in, "all_gather's input");
  CheckContiguous(out, "all_gather's output");
  OF_CHECK_INTERNAL(out.nbytes() == in.nbytes() * static_cast<size_t>(world_size_) && out.device() == in.device())
      << "all_gather output size or device";
  if (checked) {
    CheckSame(Hash({3, in.numel(), in.dtype()->code()}),
              fmt::format("all_gather (of {} {} elements)", in.numel(), in.dtype()->name()));
  }
  if (in.numel() == 0) return;
  if (world_size_ == 1 && !OnCuda(in)) {
    std::memcpy(out.raw_data(), in.raw_data(), in.nbytes());
    return;
  }
  Run("all_gather", [&](uint32_t tag) {
    if (OnCuda(in)) return Nccl(in.device()).AllGather(in.raw_data(), out.raw_data(), in.nbytes());
    gloo::AllgatherOptions o(context_);
    o.setInput(static_cast<char*>(in.raw_data()), in.nbytes());
    o.setOutput(static_cast<char*>(out.raw_data()), out.nbytes());
    o.setTag(tag);
    o.setTimeout(timeout_);
    gloo::allgather(o);
  });
}

void ProcessGroup::Barrier() {
  if (world_size_ == 1) return;
  Run("barrier", [&](uint32_t tag) {
    gloo::BarrierOptions o(context_);
    o.setTag(tag);
    o.setTimeout(timeout_);
    gloo::barrier(o);
  });
}

}  // namespace oneflow::dist
