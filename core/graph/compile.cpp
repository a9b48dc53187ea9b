#include "core/graph/compile.h"

#include <algorithm>
#include <map>

#include "core/graph/memory_plan.h"
#include "core/op/dispatch.h"
#include "core/ops/fused.h"

namespace oneflow::graph {
namespace {

// A node of the program being compiled: the traced node, or a fusion of several.
struct WorkNode {
  const OpDef* op = nullptr;
  Attrs attrs{};
  std::vector<int32_t> inputs{}, outputs{};
  int32_t update = -1;
  std::string origin{};
  bool alive = true;
};

struct Work {
  std::vector<TensorMeta> metas;
  std::vector<WorkNode> nodes;
  std::vector<bool> is_output;  // per value: a graph output
  std::vector<int32_t> producer;  // per value: index of the alive node writing it, or -1

  // How many alive nodes read each value (once per occurrence).
  std::vector<int32_t> Readers() const {
    std::vector<int32_t> readers(metas.size(), 0);
    for (const WorkNode& n : nodes) {
      if (!n.alive) continue;
      for (int32_t v : n.inputs) {
        if (v >= 0) ++readers[static_cast<size_t>(v)];
      }
    }
    return readers;
  }
  void IndexProducers() {
    producer.assign(metas.size(), -1);
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!nodes[i].alive) continue;
      for (int32_t v : nodes[i].outputs) producer[static_cast<size_t>(v)] = static_cast<int32_t>(i);
    }
  }
};

const TensorMeta& MetaAt(const Work& w, int32_t v) { return w.metas[static_cast<size_t>(v)]; }

bool HasSideEffects(const WorkNode& n) {
  if (!n.op->WritesInputs(n.attrs)) return false;
  for (int m : n.op->mutated_inputs) {
    if (n.inputs[static_cast<size_t>(m)] >= 0) return true;
  }
  return false;
}

// Note [Symbols in attributes]
// A target shape traced with a named symbol (reshape to (batch, seq, heads, d) inside a graph whose
// inputs declare `seq`) keeps the symbol in its attribute. A plan is compiled for concrete input sizes,
// which bind every symbol the inputs declare: each int-list attribute entry that encodes a bound
// symbol becomes its size here, before concrete inference, so that the ops see the sizes they run at.
// Small negative entries (-1 = inferred, negative dims) never encode symbols and are left alone.
void ResolveSymbolAttrs(Work& w, const ShapeBinding& binding) {
  for (WorkNode& n : w.nodes) {
    std::vector<std::pair<std::string, std::vector<int64_t>>> resolved;
    for (const auto& [name, value] : n.attrs.items()) {
      const auto* ints = std::get_if<std::vector<int64_t>>(&value);
      if (ints == nullptr) continue;
      std::vector<int64_t> sizes = *ints;
      bool changed = false;
      for (int64_t& v : sizes) {
        if (v >= -1 || v == Dim::kUnknownValue || v >= Dim::kUnknownValue + Dim::kMaxSymbols) continue;
        const Dim d = binding.Resolve(Dim::FromRaw(v, name));
        if (d.is_known()) {
          v = d.value();
          changed = true;
        }
      }
      if (changed) resolved.emplace_back(name, std::move(sizes));
    }
    for (auto& [name, sizes] : resolved) n.attrs.Set(name, std::move(sizes));
  }
}

// Concrete inference, node by node, in trace order.
void InferConcrete(Work& w) {
  for (WorkNode& n : w.nodes) {
    std::vector<TensorMeta> in(n.inputs.size());
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] >= 0) in[i] = MetaAt(w, n.inputs[i]);
    }
    std::vector<TensorMeta> out;
    try {
      out = n.op->infer(in, n.attrs);
    } catch (const Error& e) {
      throw Error(e.code(), n.op->name + ": " + e.message());
    }
    for (size_t j = 0; j < out.size(); ++j) w.metas[static_cast<size_t>(n.outputs[j])] = out[j];
  }
}

// Keeps the nodes that reach an output or write a variable.
void EliminateDeadCode(Work& w) {
  std::vector<bool> needed = w.is_output;
  for (size_t k = w.nodes.size(); k-- > 0;) {
    WorkNode& n = w.nodes[k];
    n.alive = HasSideEffects(n) ||
              std::any_of(n.outputs.begin(), n.outputs.end(), [&](int32_t v) { return needed[static_cast<size_t>(v)]; });
    if (!n.alive) continue;
    for (int32_t v : n.inputs) {
      if (v >= 0) needed[static_cast<size_t>(v)] = true;
    }
  }
}

bool IsFloating32or64(Symbol<DType> d) { return d == DType::Float32() || d == DType::Float64(); }

// conv2d -> batch_norm(inference, running stats given) [-> relu]  =>  fused_conv_bn_act.
void FuseConvBatchNorm(Work& w) {
  static const OpDef& fused = OpRegistry::Global().Get("fused_conv_bn_act");
  w.IndexProducers();
  std::vector<int32_t> readers = w.Readers();
  auto only_reader = [&](int32_t v, std::string_view op) -> WorkNode* {
    if (readers[static_cast<size_t>(v)] != 1 || w.is_output[static_cast<size_t>(v)]) return nullptr;
    for (WorkNode& n : w.nodes) {
      if (n.alive && n.op->name == op && std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end()) return &n;
    }
    return nullptr;
  };
  for (WorkNode& bn : w.nodes) {
    if (!bn.alive || bn.op->name != "batch_norm" || bn.attrs.Bool("training")) continue;
    if (bn.inputs[3] < 0 || bn.inputs[4] < 0) continue;  // batch statistics: nothing to fold
    const int32_t c = bn.inputs[0];
    const int32_t conv_index = w.producer[static_cast<size_t>(c)];
    if (conv_index < 0) continue;
    WorkNode& conv = w.nodes[static_cast<size_t>(conv_index)];
    if (conv.op->name != "conv2d" || readers[static_cast<size_t>(c)] != 1 || w.is_output[static_cast<size_t>(c)]) continue;
    if (!IsFloating32or64(MetaAt(w, c).dtype)) continue;
    bool stats_unused = true;
    for (size_t j = 1; j < bn.outputs.size(); ++j) {
      const auto v = static_cast<size_t>(bn.outputs[j]);
      stats_unused = stats_unused && readers[v] == 0 && !w.is_output[v];
    }
    if (!stats_unused) continue;
    WorkNode* relu = only_reader(bn.outputs[0], "relu");
    Attrs attrs;
    for (const auto& [name, value] : conv.attrs.items()) attrs.Set(name, value);  // every conv2d attribute
    attrs.Set("eps", bn.attrs.Float("eps"));
    attrs.Set("relu", relu != nullptr);
    WorkNode& last = relu != nullptr ? *relu : bn;
    const int32_t y = relu != nullptr ? relu->outputs[0] : bn.outputs[0];
    WorkNode f{.op = &fused,
               .attrs = std::move(attrs),
               .inputs = {conv.inputs[0], conv.inputs[1], conv.inputs[2], bn.inputs[1], bn.inputs[2], bn.inputs[3],
                          bn.inputs[4]},
               .outputs = {y},
               .origin = relu != nullptr ? "conv2d+batch_norm+relu" : "conv2d+batch_norm"};
    conv.alive = false;
    bn.alive = false;
    last = std::move(f);  // the fused node takes the last one's place in the order
    last.alive = true;
    readers = w.Readers();
    w.IndexProducers();
  }
}

// Chains (trees) of elementwise ops over one shape, whose intermediates have a single reader,
// become one fused_elementwise node at the place of the tree's root.
void FuseElementwise(Work& w) {
  static const OpDef& fused = OpRegistry::Global().Get("fused_elementwise");
  w.IndexProducers();
  const std::vector<int32_t> readers = w.Readers();
  const size_t n = w.nodes.size();
  auto fusable = [&](const WorkNode& node) {
    if (!node.alive || node.outputs.size() != 1 || !FusedOpcodeForOp(node.op->name)) return false;
    const TensorMeta& out = MetaAt(w, node.outputs[0]);
    if (!IsFloating32or64(out.dtype)) return false;
    for (int32_t v : node.inputs) {
      if (v < 0) return false;
      const TensorMeta& m = MetaAt(w, v);
      if (m.dtype != out.dtype || (m.shape != out.shape && m.shape.numel() != 1)) return false;
    }
    return true;
  };
  // group[k]: the root node whose tree node k joins (k itself if it is a root or not fusable).
  std::vector<int32_t> group(n);
  for (size_t k = 0; k < n; ++k) group[k] = static_cast<int32_t>(k);
  for (size_t k = n; k-- > 0;) {
    const WorkNode& node = w.nodes[k];
    if (!fusable(node)) continue;
    const Shape& shape = MetaAt(w, node.outputs[0]).shape;
    for (int32_t v : node.inputs) {
      const int32_t p = w.producer[static_cast<size_t>(v)];
      if (p < 0 || readers[static_cast<size_t>(v)] != 1 || w.is_output[static_cast<size_t>(v)]) continue;
      const WorkNode& prod = w.nodes[static_cast<size_t>(p)];
      if (fusable(prod) && MetaAt(w, v).shape == shape && MetaAt(w, v).dtype == MetaAt(w, node.outputs[0]).dtype) {
        group[static_cast<size_t>(p)] = group[k];
      }
    }
  }
  std::map<int32_t, std::vector<size_t>> members;  // root -> member nodes in order
  for (size_t k = 0; k < n; ++k) {
    if (w.nodes[k].alive && group[k] != static_cast<int32_t>(k)) members[group[k]].push_back(k);
  }
  for (auto& [root, list] : members) {
    list.push_back(static_cast<size_t>(root));
    std::vector<int32_t> external;  // register i = external[i]
    std::map<int32_t, int64_t> reg;
    std::vector<int64_t> program;
    std::string origin;
    int64_t next = 0;
    // Registers: external inputs first (in first-use order), then one temporary per member.
    std::vector<bool> internal(w.metas.size(), false);
    for (size_t k : list) internal[static_cast<size_t>(w.nodes[k].outputs[0])] = true;
    for (size_t k : list) {
      for (int32_t v : w.nodes[k].inputs) {
        if (!internal[static_cast<size_t>(v)] && reg.count(v) == 0) {
          reg[v] = next++;
          external.push_back(v);
        }
      }
    }
    for (size_t k : list) {
      const WorkNode& node = w.nodes[k];
      const FusedOpcode code = *FusedOpcodeForOp(node.op->name);
      const int64_t dst = next++;
      program.insert(program.end(), {static_cast<int64_t>(code), dst, reg.at(node.inputs[0]),
                                     node.inputs.size() > 1 ? reg.at(node.inputs[1]) : -1});
      reg[node.outputs[0]] = dst;
      origin += (origin.empty() ? "" : "+") + node.op->name;
    }
    const int32_t y = w.nodes[static_cast<size_t>(root)].outputs[0];
    for (size_t k : list) w.nodes[k].alive = false;
    w.nodes[static_cast<size_t>(root)] =
        WorkNode{.op = &fused, .attrs = Attrs{{"program", program}}, .inputs = external, .outputs = {y}, .origin = origin};
  }
}

}  // namespace

std::unique_ptr<Executable> Compile(const Program& program, const std::vector<Shape>& input_shapes,
                                    const std::vector<TensorPtr>& variables, const GraphOptions& options,
                                    std::span<const size_t> update_nodes) {
  OF_CHECK_INTERNAL(variables.size() == program.variables.size()) << "variable count mismatch";
  auto exe = std::make_unique<Executable>();
  Work w;
  w.metas.reserve(program.values.size());
  for (const Value& v : program.values) w.metas.push_back(v.meta);
  ShapeBinding binding;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const Value& v = program.values[static_cast<size_t>(program.inputs[i])];
    binding.Bind(v.meta.shape, input_shapes[i], v.name);
    w.metas[static_cast<size_t>(program.inputs[i])].shape = input_shapes[i];
    exe->signature += fmt::format("{}{}: {}", exe->signature.empty() ? "" : ", ", v.name, input_shapes[i]);
  }
  for (size_t i = 0; i < program.variables.size(); ++i) {
    w.metas[static_cast<size_t>(program.variables[i])] = MetaOf(*variables[i]);
  }
  for (const Node& n : program.nodes) {
    w.nodes.push_back(WorkNode{.op = n.op, .attrs = n.attrs, .inputs = n.inputs, .outputs = n.outputs, .origin = {}});
  }
  for (size_t k = 0; k < update_nodes.size(); ++k) w.nodes[update_nodes[k]].update = static_cast<int32_t>(k);
  w.is_output.assign(w.metas.size(), false);
  for (int32_t v : program.outputs) w.is_output[static_cast<size_t>(v)] = true;

  ResolveSymbolAttrs(w, binding);  // Note [Symbols in attributes]
  InferConcrete(w);
  EliminateDeadCode(w);
  if (options.fuse) {
    FuseConvBatchNorm(w);
    FuseElementwise(w);
  }

  // Steps, and where each value lives.
  const size_t num_values = w.metas.size();
  exe->metas = w.metas;
  exe->slots.assign(num_values, Executable::Slot::kUnused);
  exe->tensors.assign(num_values, TensorPtr());
  exe->offsets.assign(num_values, 0);
  exe->inplace_of.assign(num_values, -1);
  exe->inputs = program.inputs;
  exe->variables = program.variables;
  exe->outputs = program.outputs;
  for (int32_t v : program.inputs) exe->slots[static_cast<size_t>(v)] = Executable::Slot::kInput;
  for (size_t i = 0; i < program.variables.size(); ++i) {
    exe->slots[static_cast<size_t>(program.variables[i])] = Executable::Slot::kVariable;
  }
  for (WorkNode& n : w.nodes) {
    if (!n.alive) continue;
    Executable::Step step{.op = n.op, .attrs = std::move(n.attrs), .inputs = n.inputs, .outputs = n.outputs,
                          .update = n.update, .origin = std::move(n.origin)};
    if (n.op->view == nullptr) {
      const TensorMeta& first = !n.inputs.empty() && n.inputs[0] >= 0 ? MetaAt(w, n.inputs[0]) : MetaAt(w, n.outputs[0]);
      const Symbol<DType> key = n.inputs.empty() ? MetaAt(w, n.outputs[0]).dtype
                                                 : MetaAt(w, n.inputs[static_cast<size_t>(n.op->dtype_input)]).dtype;
      const KernelDef* kernel = n.op->FindKernel(first.device.type, key);
      if (kernel == nullptr) {
        OF_THROW(Unimplemented) << n.op->name << ": no kernel for dtype " << key << " on " << first.device;
      }
      step.kernel = kernel->fn;
    }
    step.in.resize(n.inputs.size());
    step.out.resize(n.outputs.size());
    for (int32_t v : n.outputs) {
      exe->slots[static_cast<size_t>(v)] = n.op->view != nullptr         ? Executable::Slot::kView
                                           : w.is_output[static_cast<size_t>(v)] ? Executable::Slot::kFresh
                                                                                 : Executable::Slot::kArena;
    }
    exe->steps.push_back(std::move(step));
  }

  // Liveness of the arena values: written at their step, read until their last reader (a view's
  // readers read its base; a view that is an output keeps its base until the end of the run).
  std::vector<int32_t> root(num_values);
  for (size_t v = 0; v < num_values; ++v) root[v] = static_cast<int32_t>(v);
  std::vector<int32_t> first(num_values, -1), last(num_values, -1);
  std::vector<bool> has_views(num_values, false);
  const auto num_steps = static_cast<int32_t>(exe->steps.size());
  auto touch = [&](int32_t v, int32_t s) {
    const auto r = static_cast<size_t>(root[static_cast<size_t>(v)]);
    if (exe->slots[r] == Executable::Slot::kArena) last[r] = std::max(last[r], s);
  };
  for (int32_t s = 0; s < num_steps; ++s) {
    const Executable::Step& step = exe->steps[static_cast<size_t>(s)];
    for (int32_t v : step.inputs) {
      if (v >= 0) touch(v, s);
    }
    for (int32_t v : step.outputs) {
      if (step.op->view != nullptr) {
        const int32_t r = root[static_cast<size_t>(step.inputs[0])];
        root[static_cast<size_t>(v)] = r;
        has_views[static_cast<size_t>(r)] = true;
      } else {
        first[static_cast<size_t>(v)] = last[static_cast<size_t>(v)] = s;
      }
    }
  }
  for (int32_t v : program.outputs) touch(v, num_steps);

  std::vector<int32_t> arena_values;
  std::vector<BufferRequest> requests;
  std::vector<int32_t> request_of(num_values, -1);
  for (int32_t s = 0; s < num_steps; ++s) {
    const Executable::Step& step = exe->steps[static_cast<size_t>(s)];
    for (int32_t v : step.outputs) {
      if (exe->slots[static_cast<size_t>(v)] != Executable::Slot::kArena) continue;
      const TensorMeta& m = MetaAt(w, v);
      BufferRequest r{.bytes = static_cast<size_t>(m.shape.numel()) * m.dtype->bytes(), .first = s,
                      .last = last[static_cast<size_t>(v)]};
      // In place: an elementwise step may write into an input buffer it reads for the last time.
      const bool elementwise = step.op->name == "fused_elementwise" || FusedOpcodeForOp(step.op->name).has_value();
      if (options.inplace && options.plan_memory && elementwise && step.outputs.size() == 1) {
        for (int32_t u : step.inputs) {
          if (u < 0 || exe->slots[static_cast<size_t>(u)] != Executable::Slot::kArena || has_views[static_cast<size_t>(u)])
            continue;
          const TensorMeta& um = MetaAt(w, u);
          if (um.dtype == m.dtype && um.shape == m.shape && last[static_cast<size_t>(u)] == s &&
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
  const Device device = exe->steps.empty() ? Device::CPU() : MetaAt(w, exe->steps[0].outputs.empty() ? 0 : exe->steps[0].outputs[0]).device;
  exe->arena = Storage::Allocate(device, std::max<size_t>(plan.peak_bytes, 1));
  size_t inplace_count = 0;
  for (size_t i = 0; i < arena_values.size(); ++i) {
    const auto v = static_cast<size_t>(arena_values[i]);
    const TensorMeta& m = exe->metas[v];
    exe->offsets[v] = plan.offsets[i];
    if (plan.inplace[i]) {
      exe->inplace_of[v] = arena_values[static_cast<size_t>(requests[i].inplace_of)];
      ++inplace_count;
    }
    const TensorPtr base = Tensor::Make(exe->arena, m.dtype, Shape{0});
    exe->tensors[v] = Tensor::MakeView(*base, m.shape, ContiguousStrides(m.shape),
                                       static_cast<int64_t>(plan.offsets[i] / m.dtype->bytes()));
  }
  exe->stats = MemoryStats{.planned_peak_bytes = plan.peak_bytes,
                           .intermediate_bytes = plan.total_bytes,
                           .buffer_count = arena_values.size(),
                           .inplace_count = inplace_count,
                           .node_count = exe->steps.size()};
  return exe;
}

std::string DumpExecutable(const Executable& exe) {
  std::string s = fmt::format(
      "specialization ({}): {} steps; memory plan: peak {} bytes, intermediates {} bytes without reuse, {} buffers, "
      "{} in place\n",
      exe.signature, exe.steps.size(), exe.stats.planned_peak_bytes, exe.stats.intermediate_bytes,
      exe.stats.buffer_count, exe.stats.inplace_count);
  auto ref = [](int32_t v) { return v < 0 ? std::string("none") : "%" + std::to_string(v); };
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
      where += fmt::format("{}{} {} [{}]", where.empty() ? "" : ", ", m.dtype->name(), m.shape, place);
    }
    for (int32_t v : step.inputs) ins += (ins.empty() ? "" : ", ") + ref(v);
    s += fmt::format("  step #{}: {}{}{}({}) : {}{}\n", i, outs, outs.empty() ? "" : " = ", step.op->name, ins,
                     where.empty() ? "-" : where, step.origin.empty() ? "" : "  <- " + step.origin);
  }
  return s;
}

}  // namespace oneflow::graph
