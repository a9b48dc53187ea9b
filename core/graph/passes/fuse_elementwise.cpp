#include <map>

#include "core/graph/passes/passes.h"

namespace oneflow::graph {

void FuseElementwise(Ir& ir) {
  static const OpDef& fused = OpRegistry::Global().Get("fused_elementwise");
  const std::vector<int32_t> producer = ir.Producers();
  const std::vector<int32_t> readers = ir.Readers();
  const size_t n = ir.nodes.size();
  auto fusable = [&](const IrNode& node) {
    if (!node.alive || node.outputs.size() != 1 || node.op->fused_opcode < 0) return false;
    const TensorMeta& out = ir.meta(node.outputs[0]);
    if (fused.FindKernel(out.device.type, out.dtype) == nullptr) return false;
    for (int32_t v : node.inputs) {
      if (v < 0) return false;
      const TensorMeta& m = ir.meta(v);
      if (m.dtype != out.dtype || (m.shape != out.shape && m.shape.numel() != 1)) return false;
    }
    return true;
  };
  // group[k]: the root node whose tree node k joins (k itself if it is a root or not fusable).
  std::vector<int32_t> group(n);
  for (size_t k = 0; k < n; ++k) group[k] = static_cast<int32_t>(k);
  for (size_t k = n; k-- > 0;) {
    const IrNode& node = ir.nodes[k];
    if (!fusable(node)) continue;
    const TensorMeta& out = ir.meta(node.outputs[0]);
    for (int32_t v : node.inputs) {
      const int32_t p = producer[static_cast<size_t>(v)];
      if (p < 0 || !ir.HasSingleReader(v, readers)) continue;
      if (fusable(ir.nodes[static_cast<size_t>(p)]) && ir.meta(v).shape == out.shape && ir.meta(v).dtype == out.dtype) {
        group[static_cast<size_t>(p)] = group[k];
      }
    }
  }
  std::map<int32_t, std::vector<size_t>> members;  // root -> member nodes in order
  for (size_t k = 0; k < n; ++k) {
    if (ir.nodes[k].alive && group[k] != static_cast<int32_t>(k)) members[group[k]].push_back(k);
  }
  for (auto& [root, list] : members) {
    list.push_back(static_cast<size_t>(root));
    // Registers: external inputs first (in first-use order), then one temporary per member.
    std::vector<int32_t> external;  // register i = external[i]
    std::map<int32_t, int64_t> reg;
    std::vector<int64_t> program;
    std::string origin;
    int64_t next = 0;
    std::vector<bool> internal(ir.metas.size(), false);
    for (size_t k : list) internal[static_cast<size_t>(ir.nodes[k].outputs[0])] = true;
    for (size_t k : list) {
      for (int32_t v : ir.nodes[k].inputs) {
        if (!internal[static_cast<size_t>(v)] && reg.count(v) == 0) {
          reg[v] = next++;
          external.push_back(v);
        }
      }
    }
    for (size_t k : list) {
      const IrNode& node = ir.nodes[k];
      const int64_t dst = next++;
      program.insert(program.end(), {node.op->fused_opcode, dst, reg.at(node.inputs[0]),
                                     node.inputs.size() > 1 ? reg.at(node.inputs[1]) : -1});
      reg[node.outputs[0]] = dst;
      origin += (origin.empty() ? "" : "+") + node.op->name;
    }
    const int32_t y = ir.nodes[static_cast<size_t>(root)].outputs[0];
    for (size_t k : list) ir.nodes[k].alive = false;
    ir.nodes[static_cast<size_t>(root)] =
        IrNode{.op = &fused, .attrs = Attrs{{"program", program}}, .inputs = external, .outputs = {y}, .origin = origin};
  }
}

}  // namespace oneflow::graph
