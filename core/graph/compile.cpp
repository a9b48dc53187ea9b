// Compile: the passes over the IR, then the lowering (Note [The graph compiler's pipeline]).
#include "core/graph/compile.h"

#include "core/dist/process_group.h"
#include "core/graph/lower.h"
#include "core/graph/passes/passes.h"

namespace oneflow::graph {

// Note [The graph compiler's pipeline]
// A traced Program is compiled once per concrete input shape. Compile copies it into the IR (ir.h) with
// the inputs' concrete shapes, runs the passes (passes/, one file each, matching ops by OpDef properties)
// and lowers the result (lower.h). Passes that change which nodes exist (dead code, fusion) come before
// SelectKernels, which decides each call's kernel and memory format and hence every value's layout; the
// lowering then only places what the passes decided.
std::unique_ptr<Executable> Compile(const Program& program, const std::vector<Shape>& input_shapes,
                                    const std::vector<TensorPtr>& variables, const GraphOptions& options,
                                    std::span<const size_t> update_nodes, const DataParallel* data_parallel) {
  ShapeBinding binding;
  std::string signature;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const Value& v = program.values[static_cast<size_t>(program.inputs[i])];
    binding.Bind(v.meta.shape, input_shapes[i], v.name);
    signature += fmt::format("{}{}: {}", signature.empty() ? "" : ", ", v.name, input_shapes[i]);
  }
  Ir ir = Ir::FromProgram(program, input_shapes, variables, update_nodes);
  ResolveSymbolAttrs(ir, binding);
  InferConcreteShapes(ir);
  EliminateDeadCode(ir);
  if (options.fuse) {
    FuseBatchNormRelu(ir);
    FoldBatchNorm(ir);
    FuseElementwise(ir);
  }
  if (data_parallel != nullptr) AllReduceGradients(ir, data_parallel->group->id(), data_parallel->bucket_bytes);
  ScheduleUpdates(ir);
  SelectKernels(ir);
  std::unique_ptr<Executable> exe = Lower(ir, options);
  exe->signature = std::move(signature);
  exe->profile = options.profile;
  return exe;
}

namespace {

// GraphOptions::profile: the time per run of each op's steps together, the most expensive first, and the
// sum of their shortest times (which leaves out a first run's set-up and a busy machine's outliers).
std::string DumpProfile(const Executable& exe) {
  struct OpTime {
    std::string_view name;
    size_t steps = 0;
    double ms = 0.0, best_ms = 0.0;
  };
  std::vector<OpTime> ops;
  OpTime all{"all"};
  for (const Executable::Step& step : exe.steps) {
    auto it = std::find_if(ops.begin(), ops.end(), [&](const OpTime& o) { return o.name == step.op->name; });
    if (it == ops.end()) it = ops.insert(ops.end(), OpTime{step.op->name});
    for (OpTime* o : {&*it, &all}) {
      ++o->steps;
      o->ms += step.times.MsPerRun();
      o->best_ms += step.times.BestMs();
    }
  }
  std::stable_sort(ops.begin(), ops.end(), [](const OpTime& a, const OpTime& b) { return a.ms > b.ms; });
  std::string s = fmt::format(
      "  profile: {} runs, {:.3f} ms per run (best {:.3f}); in the steps {:.3f} ms per run, {:.3f} ms at best\n",
      exe.run_times.runs, exe.run_times.MsPerRun(), exe.run_times.BestMs(), all.ms, all.best_ms);
  for (const OpTime& o : ops) {
    s += fmt::format("    {}: {} step{}, {:.3f} ms per run ({:.1f}%), {:.3f} ms at best\n", o.name, o.steps,
                     o.steps == 1 ? "" : "s", o.ms, all.ms > 0.0 ? 100.0 * o.ms / all.ms : 0.0, o.best_ms);
  }
  return s;
}

}  // namespace

std::string DumpExecutable(const Executable& exe) {
  std::string s = fmt::format(
      "specialization ({}): {} steps; memory plan: peak {} bytes, intermediates {} bytes without reuse, {} buffers, "
      "{} in place\n",
      exe.signature, exe.steps.size(), exe.stats.planned_peak_bytes, exe.stats.intermediate_bytes,
      exe.stats.buffer_count, exe.stats.inplace_count);
  auto ref = [](int32_t v) { return v < 0 ? std::string("none") : fmt::format("%{}", v); };
  for (size_t i = 0; i < exe.steps.size(); ++i) {
    const Executable::Step& step = exe.steps[i];
    std::string outs, ins, where;
    for (int32_t v : step.outputs) {
      const auto u = static_cast<size_t>(v);
      const TensorMeta& m = exe.metas[u];
      std::string place;
      switch (exe.slots[u]) {
        case Executable::Slot::kArena:
          place = exe.inplace_of[u] >= 0 ? fmt::format("arena +{} in place of {}", exe.offsets[u], ref(exe.inplace_of[u]))
                                         : fmt::format("arena +{}", exe.offsets[u]);
          break;
        case Executable::Slot::kFresh: place = "output"; break;
        case Executable::Slot::kView: place = "view"; break;
        default: place = "?"; break;
      }
      outs += (outs.empty() ? "" : ", ") + ref(v);
      where += fmt::format("{}{} {}{} [{}]", where.empty() ? "" : ", ", m.dtype->name(), m.shape,
                           m.format == MemoryFormat::kChannelsLast ? " channels_last" : "", place);
    }
    for (int32_t v : step.inputs) ins += (ins.empty() ? "" : ", ") + ref(v);
    s += fmt::format(
        "  step #{}: {}{}{}({}) : {}{}{}\n", i, outs, outs.empty() ? "" : " = ", step.op->name, ins,
        where.empty() ? "-" : where, step.origin.empty() ? "" : "  <- " + step.origin,
        exe.profile ? fmt::format("  ({:.3f} ms, best {:.3f})", step.times.MsPerRun(), step.times.BestMs()) : "");
  }
  if (exe.profile) s += DumpProfile(exe);
  return s;
}

}  // namespace oneflow::graph
