// Session: the context a user works in — default device, random generator, named dim symbols, and the
// store of free eager tensors that graphs will bind (DESIGN.md, "Session-owned free tensors").
//
// Several sessions can live in one process. Every Session method is thread-safe. Tensors made in a
// session do not depend on it and may outlive it.
//
// Note [Any destroy order]: bindings in garbage-collected languages release handles in whatever order
// their collector picks, so no handle may require another to die first. A Session is owned through
// std::shared_ptr: the C handle holds one reference and every Graph another (a graph needs the
// session's store, thread pool and generator at every run). Tensors and optimizers hold no session
// at all. So destroying the session handle before its graphs leaves the graphs fully working, and the
// session's state goes with the last of them.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/common/dim.h"
#include "core/device/device.h"
#include "core/device/thread_pool.h"
#include "core/session/generator.h"
#include "core/tensor/tensor.h"

namespace oneflow {

struct SessionOptions {
  uint64_t seed = 0x5eed;     // the generator's initial seed
  int32_t num_threads = 0;    // CPU threads for kernels, the calling thread included; 0 = one per core
  Device default_device = Device::CPU();
};

// The eager tensors a graph binds as variables, per graph: free eager tensors (non-trainable) and the
// parameters it trains. A graph holds no reference to them: they live here, keyed by the graph's id,
// until the graph is destroyed and RemoveGraph releases them.
class FreeTensorStore {
 public:
  // Records `tensor` for graph `graph_id` under `name`; AlreadyExists if that name is taken there.
  void Add(uint64_t graph_id, std::string name, TensorPtr tensor, bool trainable = false);
  // The name under which `tensor` is stored for the graph, or "" if it is not stored there.
  std::string Find(uint64_t graph_id, const Tensor* tensor) const;
  // The free (non-trainable) tensors of the graph: how many, and their names in insertion order.
  size_t Count(uint64_t graph_id) const;
  std::vector<std::string> Names(uint64_t graph_id) const;
  // The tensors of every entry of the graph, free tensors and parameters, in insertion order.
  std::vector<TensorPtr> Tensors(uint64_t graph_id) const;
  // Drops (and so releases) every tensor of the graph.
  void RemoveGraph(uint64_t graph_id);

 private:
  struct Entry {
    std::string name;
    TensorPtr tensor;
    bool trainable = false;  // a parameter, not a free tensor
  };
  mutable std::mutex mutex_;
  std::map<uint64_t, std::vector<Entry>> by_graph_;
};

class Session {
 public:
  explicit Session(SessionOptions options);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Unique within the process (never 0); names the session in messages ("session 3").
  uint64_t id() const { return id_; }
  const SessionOptions& options() const { return options_; }
  Device default_device() const { return options_.default_device; }
  Generator& generator() { return generator_; }
  ThreadPool& thread_pool() { return thread_pool_; }  // options().num_threads threads
  FreeTensorStore& free_tensors() { return free_tensors_; }

  // The session's dim symbol called `name`, created on first use: the same name always gives the
  // same Dim in one session; different sessions get different symbols (Dim::symbol_owner() is id()).
  Dim DimSymbol(std::string_view name);
  // Ids for graphs and other per-session objects, unique within the process.
  static uint64_t NextId();

  // The session ops on this thread run in: the innermost SessionScope's, else a process-wide default
  // session (default options), created on first use and never destroyed.
  static Session& Current();

 private:
  uint64_t id_;
  SessionOptions options_;
  Generator generator_;
  ThreadPool thread_pool_;
  FreeTensorStore free_tensors_;
  std::mutex symbols_mutex_;
  std::unordered_map<std::string, Dim> symbols_;
};

// Makes `session` the calling thread's current session for the scope (the C ABI opens one per call).
class SessionScope {
 public:
  explicit SessionScope(Session& session);
  ~SessionScope();
  SessionScope(const SessionScope&) = delete;
  SessionScope& operator=(const SessionScope&) = delete;

 private:
  Session* previous_;
};

}  // namespace oneflow
