#include "core/graph/ir.h"

#include <algorithm>

#include "core/op/dispatch.h"

namespace oneflow::graph {

Ir Ir::FromProgram(const Program& program, const std::vector<Shape>& input_shapes,
                   const std::vector<TensorPtr>& variables, std::span<const size_t> update_nodes) {
  OF_CHECK_INTERNAL(variables.size() == program.variables.size()) << "variable count mismatch";
  Ir ir;
  ir.metas.reserve(program.values.size());
  for (const Value& v : program.values) ir.metas.push_back(v.meta);
  for (size_t i = 0; i < program.inputs.size(); ++i) ir.meta(program.inputs[i]).shape = input_shapes[i];
  for (size_t i = 0; i < program.variables.size(); ++i) ir.meta(program.variables[i]) = MetaOf(*variables[i]);
  for (const Node& n : program.nodes) ir.nodes.push_back(IrNode{.op = n.op, .attrs = n.attrs, .inputs = n.inputs, .outputs = n.outputs});
  for (size_t k = 0; k < update_nodes.size(); ++k) ir.nodes[update_nodes[k]].update = static_cast<int32_t>(k);
  ir.is_output.assign(ir.metas.size(), false);
  for (int32_t v : program.outputs) ir.is_output[static_cast<size_t>(v)] = true;
  ir.inputs = program.inputs;
  ir.variables = program.variables;
  ir.outputs = program.outputs;
  return ir;
}

std::vector<TensorMeta> Ir::InputMetas(const IrNode& n) const {
  std::vector<TensorMeta> in(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] >= 0) in[i] = meta(n.inputs[i]);
  }
  return in;
}

std::vector<int32_t> Ir::Readers() const {
  std::vector<int32_t> readers(metas.size(), 0);
  for (const IrNode& n : nodes) {
    if (!n.alive) continue;
    for (int32_t v : n.inputs) {
      if (v >= 0) ++readers[static_cast<size_t>(v)];
    }
  }
  return readers;
}

std::vector<int32_t> Ir::Producers() const {
  std::vector<int32_t> producer(metas.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].alive) continue;
    for (int32_t v : nodes[i].outputs) producer[static_cast<size_t>(v)] = static_cast<int32_t>(i);
  }
  return producer;
}

IrNode* Ir::OnlyReader(int32_t v, const std::vector<int32_t>& readers) {
  if (!HasSingleReader(v, readers)) return nullptr;
  for (IrNode& n : nodes) {
    if (n.alive && std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end()) return &n;
  }
  return nullptr;
}

}  // namespace oneflow::graph
