// Lowering: the IR after the passes becomes an Executable in four named steps (Lower, below).
#include <algorithm>

#include "core/graph/lower.h"
#include "core/graph/memory_plan.h"

namespace oneflow::graph {
namespace {

using Slot = Executable::Slot;

// One step per alive node, in order, and where each value lives: inputs and variables are bound at run
// time, views are made at run time, graph outputs get fresh storage, every other value the arena.
void MakeSteps(Ir& ir, Executable& exe) {
  const size_t num_values = ir.metas.size();
  exe.slots.assign(num_values, Slot::kUnused);
  for (int32_t v : ir.inputs) exe.slots[static_cast<size_t>(v)] = Slot::kInput;
  for (int32_t v : ir.variables) exe.slots[static_cast<size_t>(v)] = Slot::kVariable;
  for (IrNode& n : ir.nodes) {
    if (!n.alive) continue;
    for (int32_t v : n.outputs) {
      exe.slots[static_cast<size_t>(v)] = n.op->view != nullptr                  ? Slot::kView
                                          : ir.is_output[static_cast<size_t>(v)] ? Slot::kFresh
                                                                                 : Slot::kArena;
    }
    exe.steps.push_back(Executable::Step{.op = n.op,
                                         .attrs = std::move(n.attrs),
                                         .kernel = n.kernel != nullptr ? n.kernel->fn : nullptr,
                                         .layout = n.layout,
                                         .inputs = n.inputs,
                                         .outputs = n.outputs,
                                         .in = std::vector<TensorPtr>(n.inputs.size()),
                                         .out = std::vector<TensorPtr>(n.outputs.size()),
                                         .update = n.update,
                                         .origin = std::move(n.origin)});
  }
  exe.metas = std::move(ir.metas);
  exe.inputs = ir.inputs;
  exe.variables = ir.variables;
  exe.outputs = ir.outputs;
}

// The step range in which each arena value is live: written at its step, read until its last reader (a
// view's readers read its base; a view that is an output keeps its base until the end of the run).
struct Liveness {
  std::vector<int32_t> last;      // per value: the last step that reads it (its arena base's)
  std::vector<bool> has_views;    // per value: views of it are taken
};

Liveness ComputeLiveness(const Executable& exe) {
  const size_t num_values = exe.metas.size();
  Liveness l{std::vector<int32_t>(num_values, -1), std::vector<bool>(num_values, false)};
  std::vector<int32_t> root(num_values);
  for (size_t v = 0; v < num_values; ++v) root[v] = static_cast<int32_t>(v);
  const auto num_steps = static_cast<int32_t>(exe.steps.size());
  auto touch = [&](int32_t v, int32_t s) {
    const auto r = static_cast<size_t>(root[static_cast<size_t>(v)]);
    if (exe.slots[r] == Slot::kArena) l.last[r] = std::max(l.last[r], s);
  };
  for (int32_t s = 0; s < num_steps; ++s) {
    const Executable::Step& step = exe.steps[static_cast<size_t>(s)];
    for (int32_t v : step.inputs) {
      if (v >= 0) touch(v, s);
    }
    for (int32_t v : step.outputs) {
      if (step.op->view != nullptr) {
        const int32_t r = root[static_cast<size_t>(step.inputs[0])];
        root[static_cast<size_t>(v)] = r;
        l.has_views[static_cast<size_t>(r)] = true;
      } else {
        l.last[static_cast<size_t>(v)] = s;
      }
    }
  }
  for (int32_t v : exe.outputs) touch(v, num_steps);
  return l;
}

// One buffer request per arena value, in step order. In place: an elementwise step may write into an
// input buffer of the same dtype, shape and format that it reads for the last time, a step of an op with
// inplace_inputs its output 0 into one of those.
std::vector<BufferRequest> RequestBuffers(const Executable& exe, const Liveness& l, const GraphOptions& options,
                                          std::vector<int32_t>& arena_values) {
  std::vector<BufferRequest> requests;
  std::vector<int32_t> request_of(exe.metas.size(), -1);
  for (int32_t s = 0; s < static_cast<int32_t>(exe.steps.size()); ++s) {
    const Executable::Step& step = exe.steps[static_cast<size_t>(s)];
    for (int32_t v : step.outputs) {
      if (exe.slots[static_cast<size_t>(v)] != Slot::kArena) continue;
      const TensorMeta& m = exe.metas[static_cast<size_t>(v)];
      BufferRequest r{.bytes = static_cast<size_t>(m.shape.numel()) * m.dtype->bytes(),
                      .first = s,
                      .last = l.last[static_cast<size_t>(v)]};
      if (options.inplace && options.plan_memory) {
        std::vector<int32_t> candidates;  // the inputs whose buffer v may take, in the order tried
        if (step.op->elementwise && step.outputs.size() == 1) {
          candidates = step.inputs;
        } else if (v == step.outputs[0]) {
          for (int i : step.op->inplace_inputs) candidates.push_back(step.inputs[static_cast<size_t>(i)]);
        }
        for (int32_t u : candidates) {
          if (u < 0 || exe.slots[static_cast<size_t>(u)] != Slot::kArena || l.has_views[static_cast<size_t>(u)]) continue;
          const TensorMeta& um = exe.metas[static_cast<size_t>(u)];
          if (um.dtype == m.dtype && um.shape == m.shape && um.format == m.format && l.last[static_cast<size_t>(u)] == s &&
              request_of[static_cast<size_t>(u)] >= 0) {
            r.inplace_of = request_of[static_cast<size_t>(u)];
            break;
          }
        }
      }
      request_of[static_cast<size_t>(v)] = static_cast<int32_t>(requests.size());
      requests.push_back(r);
      arena_values.push_back(v);
    }
  }
  return requests;
}

// The arena, and each arena value as a view of it in its memory format at its planned offset.
void PlaceBuffers(Executable& exe, const std::vector<BufferRequest>& requests, const std::vector<int32_t>& arena_values,
                  const GraphOptions& options) {
  MemoryPlan plan;
  if (options.plan_memory) {
    plan = PlanMemory(requests);
  } else {
    // One buffer each: the arena is the concatenation.
    for (const BufferRequest& r : requests) {
      plan.offsets.push_back(plan.total_bytes);
      plan.inplace.push_back(false);
      plan.total_bytes += (r.bytes + 63) / 64 * 64;
    }
    plan.peak_bytes = plan.total_bytes;
  }
  const size_t num_values = exe.metas.size();
  exe.tensors.assign(num_values, TensorPtr());
  exe.offsets.assign(num_values, 0);
  exe.inplace_of.assign(num_values, -1);
  const Device device = exe.steps.empty() || exe.steps[0].outputs.empty() ? Device::CPU()
                                                                           : exe.metas[static_cast<size_t>(exe.steps[0].outputs[0])].device;
  exe.arena = Storage::Allocate(device, std::max<size_t>(plan.peak_bytes, 1));
  size_t inplace_count = 0;
  for (size_t i = 0; i < arena_values.size(); ++i) {
    const auto v = static_cast<size_t>(arena_values[i]);
    const TensorMeta& m = exe.metas[v];
    exe.offsets[v] = plan.offsets[i];
    if (plan.inplace[i]) {
      exe.inplace_of[v] = arena_values[static_cast<size_t>(requests[i].inplace_of)];
      ++inplace_count;
    }
    const TensorPtr base = Tensor::Make(exe.arena, m.dtype, Shape{0});
    exe.tensors[v] = Tensor::MakeView(*base, m.shape, StridesFor(m.shape, m.format),
                                      static_cast<int64_t>(plan.offsets[i] / m.dtype->bytes()));
  }
  exe.stats = MemoryStats{.planned_peak_bytes = plan.peak_bytes,
                          .intermediate_bytes = plan.total_bytes,
                          .buffer_count = arena_values.size(),
                          .inplace_count = inplace_count,
                          .node_count = exe.steps.size()};
}

}  // namespace

std::unique_ptr<Executable> Lower(Ir& ir, const GraphOptions& options) {
  auto exe = std::make_unique<Executable>();
  MakeSteps(ir, *exe);
  const Liveness liveness = ComputeLiveness(*exe);
  std::vector<int32_t> arena_values;
  const std::vector<BufferRequest> requests = RequestBuffers(*exe, liveness, options, arena_values);
  PlaceBuffers(*exe, requests, arena_values, options);
  return exe;
}

}  // namespace oneflow::graph
