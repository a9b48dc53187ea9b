// Compiling a traced Program for concrete input shapes, and running the result. Internal to core/graph.
//
// Compile (Note [The graph compiler's pipeline] in compile.cpp): concrete shape inference over every
// node (the traced dims resolved; errors name the op), dead-code elimination (nodes that neither reach an
// output nor write a variable), fusion (an op and the inference batch norm [+ relu] after it into its
// fold_batch_norm form; trees of elementwise ops into one fused_elementwise), kernel and memory-format
// selection, in-place reuse (an elementwise op writes into an input buffer whose last reader it is) and
// liveness-based memory planning (core/graph/memory_plan.h): every intermediate lives in one arena at a
// planned offset, in its memory format. Graph outputs get fresh storage on each run.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace oneflow::graph {

// GraphOptions::profile: timed runs (of a step, or of a whole plan), their wall time together and the
// shortest.
struct Timings {
  uint64_t runs = 0;
  std::chrono::nanoseconds total{0}, best{0};
  void Add(std::chrono::nanoseconds t) {
    best = runs == 0 ? t : std::min(best, t);
    total += t;
    ++runs;
  }
  double MsPerRun() const { return runs == 0 ? 0.0 : Ms(total) / static_cast<double>(runs); }
  double BestMs() const { return Ms(best); }

 private:
  static double Ms(std::chrono::nanoseconds t) { return std::chrono::duration<double, std::milli>(t).count(); }
};

struct Executable {
  enum class Slot : uint8_t { kInput, kVariable, kArena, kFresh, kView, kUnused };
  struct Step {
    const OpDef* op = nullptr;
    Attrs attrs{};
    KernelFn kernel = nullptr;  // null for view ops
    MemoryFormat layout = MemoryFormat::kContiguous;  // the call's memory format (core/op/layout.h)
    std::vector<int32_t> inputs{}, outputs{};  // value ids (-1: absent optional input)
    std::vector<TensorPtr> in{}, out{};        // per-run scratch, reused
    int32_t update = -1;    // index of the Graph update whose attributes are refreshed before each run
    std::string origin{};   // the traced nodes this step computes, for the dump ("conv2d+batch_norm+relu")
    Timings times{};        // GraphOptions::profile: this step's
  };
  std::vector<Step> steps;
  std::vector<TensorMeta> metas;  // concrete, per value id
  std::vector<Slot> slots;        // where each value lives
  // Per value: the arena views (kept); during a run also the inputs, variables, fresh outputs and views
  // (dropped when the run ends: a compiled plan holds no reference to a user's tensor).
  std::vector<TensorPtr> tensors;
  std::vector<size_t> offsets;     // kArena: byte offset in the arena
  std::vector<int32_t> inplace_of;  // kArena: the value whose buffer it reuses, or -1
  std::vector<int32_t> inputs, variables, outputs;
  std::shared_ptr<Storage> arena;
  MemoryStats stats;
  std::string signature;  // the concrete input shapes: "x: (2, 4)"
  bool profile = false;   // GraphOptions::profile
  // With profile: the runs that finished, as a whole (the steps, and the executor's work around them:
  // inputs bound, outputs copied).
  Timings run_times;
};

// `input_shapes` are static and already checked against the declared dims; `variables` are the bound
// tensors in program.variables' order (for their metas: they are bound again at each run);
// `update_nodes[k]` is the node of the Graph's update k.
// `data_parallel` (may be null): the gradients the updates read are averaged over its group's ranks.
std::unique_ptr<Executable> Compile(const Program& program, const std::vector<Shape>& input_shapes,
                                    const std::vector<TensorPtr>& variables, const GraphOptions& options,
                                    std::span<const size_t> update_nodes, const DataParallel* data_parallel = nullptr);

// Runs one step. `inputs` are eager tensors of the compiled shapes, `variables` the graph's variables in
// program order. Returns the outputs (new tensors).
std::vector<TensorPtr> Execute(Executable& exe, const std::vector<TensorPtr>& inputs,
                               const std::vector<TensorPtr>& variables, Session& session);

// The specialization as text: steps with concrete shapes and where each value lives, then the plan;
// with GraphOptions::profile the runs' time, each step's time per run and best run, and each op's steps
// together.
std::string DumpExecutable(const Executable& exe);

}  // namespace oneflow::graph
