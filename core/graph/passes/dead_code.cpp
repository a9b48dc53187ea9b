#include <algorithm>

#include "core/graph/passes/passes.h"

namespace oneflow::graph {
namespace {

// A node that writes a variable in place (a parameter update, batch norm's running statistics), or a
// collective, which the other ranks wait for.
bool HasSideEffects(const IrNode& n) {
  if (n.op->collective) return true;
  if (!n.op->WritesInputs(n.attrs)) return false;
  return std::any_of(n.op->mutated_inputs.begin(), n.op->mutated_inputs.end(),
                     [&](int m) { return n.inputs[static_cast<size_t>(m)] >= 0; });
}

}  // namespace

void EliminateDeadCode(Ir& ir) {
  std::vector<bool> needed = ir.is_output;
  for (size_t k = ir.nodes.size(); k-- > 0;) {
    IrNode& n = ir.nodes[k];
    n.alive = HasSideEffects(n) ||
              std::any_of(n.outputs.begin(), n.outputs.end(), [&](int32_t v) { return needed[static_cast<size_t>(v)]; });
    if (!n.alive) continue;
    for (int32_t v : n.inputs) {
      if (v >= 0) needed[static_cast<size_t>(v)] = true;
    }
  }
}

}  // namespace oneflow::graph
