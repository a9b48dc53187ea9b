// The lazy graph: OneFlow's nn.Graph for oneflow_c (DESIGN.md, "Eager and lazy execution").
//
// A Graph is built by tracing. Between BeginBuild and EndBuild, op calls on the building thread that run
// in the graph's session do not execute: op dispatch hands them to the graph's builder (an
// OpInterceptor), which appends a node to the traced Program and returns lazy tensors (no data, dims
// that may be unknown or named symbols). Eager tensors that reach a lazy op become variables bound to
// their memory at run time: trainable ones for parameters (requires_grad leaves, or tensors passed to
// AddParameter), non-trainable ones for every other eager tensor — the *free eager tensors* (the 0.5 in
// `x > 0.5`, a mask made during the build). Both are kept by the session's FreeTensorStore under the
// graph's id, never by the Graph: destroying the graph releases them. Backward on a lazy loss during
// the build traces the backward ops (the ops' own backward definitions, through eager autograd's
// engine); AddOptimizer then traces each parameter's update, so one Run is one training step that
// writes the parameters (and optimizer state, BN running stats) in place.
//
// Run binds concrete input tensors to the declared dims (named symbols must agree), and compiles the
// program once per concrete input shape (core/graph/compile.h: concrete shape inference, dead-code
// elimination, fusion, in-place reuse, liveness-based memory planning), caching the result.
//
// The Graph and its compiled plans hold no reference to a user's tensor between runs; an attached
// optimizer is kept alive by the graph (its learning rate and step state are read at each run), and
// with it the optimizer's own references to its parameters.
//
// Thread-safety: one thread builds a graph (the one that called BeginBuild, which must also call the
// other build functions and EndBuild). Run, Dump and the queries may be called from any thread; runs of
// one graph are serialised by the graph (they share its planned buffers). Destroying a graph while
// another thread runs it is the caller's race.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/op/op_registry.h"
#include "core/session/session.h"

namespace oneflow {
class Optimizer;
namespace dist {
class ProcessGroup;
}
}  // namespace oneflow

namespace oneflow::graph {

struct GraphOptions {
  bool fuse = true;         // conv+batch_norm(+relu) in inference, elementwise chains
  bool inplace = true;      // elementwise ops write into an input buffer that dies at that op
  bool plan_memory = true;  // intermediates share one arena by liveness; else one buffer each
  // Compiled plans kept, one per concrete input shape; beyond it the least recently used is evicted
  // (and compiled again if its shape comes back). >= 1.
  size_t plan_cache_size = 8;
  // Each step of each run is timed (a device's queued work is waited for after each of its steps); the
  // dump shows the times per step and per op. Off by default: the waits slow device steps.
  bool profile = false;
};

// Data-parallel training (Note [Data-parallel graphs] in graph.cpp): each run is one step of a data-parallel
// job over `group`'s ranks, each rank training on its own inputs.
struct DataParallel {
  std::shared_ptr<dist::ProcessGroup> group;
  size_t bucket_bytes = size_t{25} << 20;  // gradients averaged per all_reduce (Note [Gradient buckets])
  bool sync_batch_norm_stats = false;      // average batch norms' running statistics after each step
};

enum class ValueKind : uint8_t { kInput, kVariable, kOp };

// One SSA value of the traced program.
struct Value {
  TensorMeta meta;  // dims may be unknown or symbols (inputs' declared dims flow through inference)
  ValueKind kind = ValueKind::kOp;
  int32_t node = -1;     // kOp: the producing node and which of its outputs
  int32_t output = 0;
  std::string name{};    // inputs and variables
  bool trainable = false;  // variables: a parameter (vs a free eager tensor)
};

struct Node {
  const OpDef* op = nullptr;
  Attrs attrs{};
  std::vector<int32_t> inputs{};   // value ids; -1 for an absent optional input
  std::vector<int32_t> outputs{};  // value ids
};

// The traced program, in trace order (which is a valid execution order: nodes that write variables in
// place — parameter updates, running stats — come after every read traced before them).
struct Program {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int32_t> inputs;     // value ids, in declaration order
  std::vector<int32_t> variables;  // value ids, in the session store's order for this graph
  std::vector<int32_t> outputs;    // value ids, in declaration order
};

// What the most recent run's compiled plan needs, and what the plan cache holds.
struct MemoryStats {
  size_t planned_peak_bytes = 0;    // the arena holding every intermediate
  size_t intermediate_bytes = 0;    // the sum of all intermediate buffers (what no reuse would need)
  size_t buffer_count = 0;          // intermediates with their own storage
  size_t inplace_count = 0;         // intermediates written into a dying input's buffer
  size_t node_count = 0;            // nodes after the passes
  size_t specialization_count = 0;  // plans in the cache now (at most GraphOptions::plan_cache_size)
  size_t compile_count = 0;         // compilations so far, recompilations after an eviction included
  size_t cached_plan_bytes = 0;     // the arenas of the cached plans together
};

class GraphBuilder;
struct Executable;

class Graph {
 public:
  // The graph shares the session's ownership: it stays usable whatever is destroyed first.
  Graph(std::shared_ptr<Session> session, std::string name, GraphOptions options);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  Session& session() const { return *session_; }

  // --- building (on one thread) ---
  // FailedPrecondition if the graph was already built or a build is open on this thread.
  void BeginBuild();
  // A lazy input; dims may be Dim::Unknown() or session symbols.
  TensorPtr AddInput(std::string name, Symbol<DType> dtype, Shape shape);
  // Registers an eager tensor as a trainable parameter named `name` (before its first use in the build).
  void AddParameter(const TensorPtr& tensor, std::string name);
  // Declares a lazy tensor of this graph as the next output.
  void AddOutput(const TensorPtr& tensor);
  // Traces the update of every parameter of `optimizer` that received a gradient from a backward traced
  // in this build; the graph keeps the optimizer alive and, at each run, uses its current lr.
  void AddOptimizer(std::shared_ptr<Optimizer> optimizer);
  // Closes the build: FailedPrecondition without outputs or updates.
  void EndBuild();
  // Makes every run a data-parallel step over dp.group (kept alive by the graph): FailedPrecondition once
  // the graph has run, or without an optimizer when built.
  void SetDataParallel(DataParallel dp);
  bool is_built() const { return state_ == State::kBuilt; }

  // --- running (any thread) ---
  // FailedPrecondition unless the graph is built (Run checks it first, before its arguments).
  void CheckRunnable() const;
  // Runs one step on `inputs` (one per declared input, eager, of the declared dtype and rank, with sizes
  // that fit the declared dims) and returns the outputs as new eager tensors.
  std::vector<TensorPtr> Run(const std::vector<TensorPtr>& inputs);

  // The traced program and each compiled specialization, as text (see Graph::Dump in graph.cpp).
  std::string Dump() const;
  MemoryStats memory_stats() const;
  size_t num_free_tensors() const { return session_->free_tensors().Count(id_); }
  std::vector<std::string> free_tensor_names() const { return session_->free_tensors().Names(id_); }
  const Program& program() const { return program_; }

 private:
  friend class GraphBuilder;
  enum class State { kEmpty, kBuilding, kBuilt };
  // A traced parameter update whose attributes (lr, first step) are refreshed before each run.
  struct Update {
    size_t node;
    std::shared_ptr<Optimizer> optimizer;
    size_t param_index;
  };

  void CheckBuilding(const char* what) const;

  std::shared_ptr<Session> session_;
  uint64_t id_;
  std::string name_;
  GraphOptions options_;
  std::atomic<State> state_{State::kEmpty};  // written by the building thread, read by runs anywhere
  std::shared_ptr<GraphBuilder> builder_;  // while building
  Program program_;
  std::vector<Update> updates_;
  std::unique_ptr<DataParallel> data_parallel_;  // set by SetDataParallel
  bool has_run_ = false;
  // Data-parallel runs: the first broadcasts rank 0's parameters and running statistics.
  void StartDataParallel(const std::vector<TensorPtr>& variables);
  // The variables that batch norms update (running statistics), in program order.
  std::vector<size_t> RunningStatIndices() const;
  // sync_batch_norm_stats: the running statistics averaged over the ranks, packed into one collective.
  void AverageRunningStats(const std::vector<TensorPtr>& variables);
  uint64_t ProgramSignature(const std::vector<int64_t>& key, const std::vector<TensorPtr>& variables) const;

  // The plan of one concrete input shape, and when it was last run (for least-recently-used eviction).
  struct CachedPlan {
    std::unique_ptr<Executable> exe;
    uint64_t last_used = 0;
  };
  // The cached plan for `key` (the concrete input dims), compiled (and another evicted) if needed.
  Executable& PlanFor(const std::vector<int64_t>& key, const std::vector<Shape>& shapes,
                      const std::vector<TensorPtr>& variables);

  mutable std::mutex run_mutex_;  // runs, the cache and the stats
  std::map<std::vector<int64_t>, CachedPlan> cache_;  // by concrete input dims
  std::vector<const Executable*> specialization_order_;  // the cached plans in compile order, for the dump
  uint64_t run_clock_ = 0;
  size_t compile_count_ = 0;
  MemoryStats last_stats_;
};

}  // namespace oneflow::graph
