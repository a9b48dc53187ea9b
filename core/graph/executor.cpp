#include "core/graph/compile.h"

#include "core/op/layout.h"
#include "core/tensor/copy.h"
#include "core/tensor/factory.h"

namespace oneflow::graph {
namespace {

// Drops the per-run references (inputs, outputs, views, scratch) when a run ends, normally or not.
class RunCleanup {
 public:
  explicit RunCleanup(Executable& exe) : exe_(exe) {}
  ~RunCleanup() {
    for (size_t v = 0; v < exe_.slots.size(); ++v) {
      const Executable::Slot s = exe_.slots[v];
      if (s != Executable::Slot::kArena) {
        exe_.tensors[v] = nullptr;
      }
    }
    for (Executable::Step& step : exe_.steps) {
      for (TensorPtr& t : step.in) t = nullptr;
      for (TensorPtr& t : step.out) t = nullptr;
    }
  }
  RunCleanup(const RunCleanup&) = delete;
  RunCleanup& operator=(const RunCleanup&) = delete;

 private:
  Executable& exe_;
};

using Clock = std::chrono::steady_clock;

// Adds a step's time since `start` to its profile (GraphOptions::profile). A step whose outputs live on
// a device that queues work (CUDA) waits for that work first, so that the time is the kernels' rather
// than their launches'.
void RecordStepTime(const Executable& exe, Executable::Step& step, Clock::time_point start) {
  if (!step.outputs.empty()) {
    const Device device = exe.metas[static_cast<size_t>(step.outputs[0])].device;
    if (device.type != DeviceType::kCPU) GetBackend(device).Synchronize();
  }
  step.times.Add(Clock::now() - start);
}

}  // namespace

std::vector<TensorPtr> Execute(Executable& exe, const std::vector<TensorPtr>& inputs,
                               const std::vector<TensorPtr>& variables, Session& session) {
  const Clock::time_point run_start = exe.profile ? Clock::now() : Clock::time_point();
  RunCleanup cleanup(exe);
  ThreadPool& pool = session.thread_pool();
  for (size_t i = 0; i < inputs.size(); ++i) exe.tensors[static_cast<size_t>(exe.inputs[i])] = inputs[i];
  for (size_t i = 0; i < variables.size(); ++i) exe.tensors[static_cast<size_t>(exe.variables[i])] = variables[i];
  // Inputs a step updates in place must be writable, checked before the first step runs (the
  // variables were checked when the graph was traced).
  for (const Executable::Step& step : exe.steps) {
    if (!step.op->WritesInputs(step.attrs)) continue;
    for (int m : step.op->mutated_inputs) {
      const int32_t v = step.inputs[static_cast<size_t>(m)];
      if (v >= 0 && std::find(exe.inputs.begin(), exe.inputs.end(), v) != exe.inputs.end()) {
        CheckWritable(*exe.tensors[static_cast<size_t>(v)], "input '" + step.op->inputs[static_cast<size_t>(m)] + "'");
      }
    }
  }
  for (Executable::Step& step : exe.steps) {
    const OpDef& op = *step.op;
    const Clock::time_point start = exe.profile ? Clock::now() : Clock::time_point();
    try {
      for (size_t k = 0; k < step.inputs.size(); ++k) {
        const int32_t v = step.inputs[k];
        step.in[k] = KernelInput(op, k, v < 0 ? TensorPtr() : exe.tensors[static_cast<size_t>(v)], step.layout, &pool);
      }
      if (op.view != nullptr) {
        const auto v = static_cast<size_t>(step.outputs[0]);
        exe.tensors[v] = op.view(step.in[0], exe.metas[v], step.attrs);
      } else {
        for (size_t j = 0; j < step.outputs.size(); ++j) {
          const auto v = static_cast<size_t>(step.outputs[j]);
          if (exe.slots[v] == Executable::Slot::kFresh) {
            exe.tensors[v] = Empty(exe.metas[v].dtype, exe.metas[v].shape, exe.metas[v].device, exe.metas[v].format);
          }
          step.out[j] = exe.tensors[v];
        }
        KernelContext ctx{step.in, step.out, step.attrs, pool, session.generator(), &op};
        step.kernel(ctx);
        op.MarkInputsWritten(step.in, step.attrs);
      }
      if (exe.profile) RecordStepTime(exe, step, start);
    } catch (const Error& e) {
      if (e.message().starts_with(op.name + ":")) throw;
      throw Error(e.code(), op.name + ": " + e.message());
    }
  }
  // Outputs are the caller's: a value that lives elsewhere (an input, a variable, the arena, a view, an
  // output listed twice) is copied.
  std::vector<TensorPtr> outputs;
  std::vector<bool> given(exe.slots.size(), false);
  for (int32_t v : exe.outputs) {
    const auto u = static_cast<size_t>(v);
    const TensorPtr& t = exe.tensors[u];
    if (exe.slots[u] == Executable::Slot::kFresh && !given[u]) {
      outputs.push_back(t);
      given[u] = true;
      continue;
    }
    TensorPtr copy = Empty(t->dtype(), t->shape(), t->device());
    CopyStrided(*t, *copy, &pool);
    outputs.push_back(std::move(copy));
  }
  if (exe.profile) exe.run_times.Add(Clock::now() - run_start);
  return outputs;
}

}  // namespace oneflow::graph
