#include "core/session/session.h"

#include <algorithm>
#include <atomic>

#include "core/common/error.h"

namespace oneflow {

void FreeTensorStore::Add(uint64_t graph_id, std::string name, TensorPtr tensor, bool trainable) {
  OF_CHECK(tensor) << "free tensor " << Quote(name) << " is null";
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Entry>& entries = by_graph_[graph_id];
  for (const Entry& e : entries) {
    if (e.name == name) OF_THROW(AlreadyExists) << "graph " << graph_id << " already has a free tensor named " << Quote(name);
  }
  entries.push_back(Entry{std::move(name), std::move(tensor), trainable});
}

std::string FreeTensorStore::Find(uint64_t graph_id, const Tensor* tensor) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_graph_.find(graph_id);
  if (it == by_graph_.end()) return {};
  for (const Entry& e : it->second) {
    if (e.tensor.get() == tensor) return e.name;
  }
  return {};
}

size_t FreeTensorStore::Count(uint64_t graph_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_graph_.find(graph_id);
  if (it == by_graph_.end()) return 0;
  return static_cast<size_t>(
      std::count_if(it->second.begin(), it->second.end(), [](const Entry& e) { return !e.trainable; }));
}

std::vector<std::string> FreeTensorStore::Names(uint64_t graph_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  auto it = by_graph_.find(graph_id);
  if (it != by_graph_.end()) {
    for (const Entry& e : it->second) {
      if (!e.trainable) names.push_back(e.name);
    }
  }
  return names;
}

std::vector<TensorPtr> FreeTensorStore::Tensors(uint64_t graph_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<TensorPtr> tensors;
  auto it = by_graph_.find(graph_id);
  if (it != by_graph_.end()) {
    tensors.reserve(it->second.size());
    for (const Entry& e : it->second) tensors.push_back(e.tensor);
  }
  return tensors;
}

void FreeTensorStore::RemoveGraph(uint64_t graph_id) {
  std::vector<Entry> doomed;  // released after the lock is dropped: a deleter may call back in
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_graph_.find(graph_id);
    if (it == by_graph_.end()) return;
    doomed = std::move(it->second);
    by_graph_.erase(it);
  }
}

namespace {
int32_t CheckedNumThreads(int32_t n) {
  OF_CHECK_GE(n, 0) << "session option num_threads must not be negative";
  return n;
}
}  // namespace

Session::Session(SessionOptions options)
    : id_(NextId()), options_(options), generator_(options.seed), thread_pool_(CheckedNumThreads(options.num_threads)) {
  GetBackend(options.default_device);  // fails now, with a clear message, if the device is unavailable
}

Dim Session::DimSymbol(std::string_view name) {
  std::lock_guard<std::mutex> lock(symbols_mutex_);
  auto it = symbols_.find(std::string(name));
  if (it != symbols_.end()) return it->second;
  Dim d = Dim::NewSymbol(name, id_);
  symbols_.emplace(std::string(name), d);
  return d;
}

uint64_t Session::NextId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

namespace {
thread_local Session* current_session = nullptr;
}  // namespace

Session& Session::Current() {
  if (current_session != nullptr) return *current_session;
  static Session* default_session = new Session(SessionOptions{});  // lives until the process ends
  return *default_session;
}

SessionScope::SessionScope(Session& session) : previous_(current_session) { current_session = &session; }
SessionScope::~SessionScope() { current_session = previous_; }

}  // namespace oneflow
