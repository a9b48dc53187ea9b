// The graph compiler's IR: a mutable copy of a traced Program bound to one concrete input shape, which
// the passes (core/graph/passes/) rewrite in place and the lowering (core/graph/lower.cpp) turns into an
// Executable. Internal to core/graph.
//
// Values keep their ids from the Program (fusion adds none: a fused node writes the value its last member
// wrote; a pass that adds values appends them); nodes keep trace order, which stays a valid execution
// order (a pass that replaces several nodes puts the replacement at the place of the last one and marks
// the others dead; one that adds nodes inserts them after the producers of what they read; one that moves
// a node moves it only past nodes it does not depend on).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace oneflow::graph {

struct IrNode {
  const OpDef* op = nullptr;
  Attrs attrs{};
  std::vector<int32_t> inputs{}, outputs{};  // value ids (-1: an absent optional input)
  int32_t update = -1;       // the Graph update whose attributes are refreshed before each run, or -1
  std::string origin{};      // the traced nodes a fused node computes ("conv2d+batch_norm+relu")
  bool alive = true;
  // Set by SelectKernels (passes.h): the kernel (null for views) and the call's memory format.
  const KernelDef* kernel = nullptr;
  MemoryFormat layout = MemoryFormat::kContiguous;
};

struct Ir {
  std::vector<TensorMeta> metas;  // per value id: concrete after InferConcreteShapes
  std::vector<IrNode> nodes;
  std::vector<bool> is_output;    // per value: a graph output
  std::vector<int32_t> inputs, variables, outputs;  // value ids, as in the Program

  // The IR of `program` with input i bound to input_shapes[i] and variable i described by variables[i];
  // update_nodes[k] is the node of the Graph's update k.
  static Ir FromProgram(const Program& program, const std::vector<Shape>& input_shapes,
                        const std::vector<TensorPtr>& variables, std::span<const size_t> update_nodes);

  const TensorMeta& meta(int32_t v) const { return metas[static_cast<size_t>(v)]; }
  TensorMeta& meta(int32_t v) { return metas[static_cast<size_t>(v)]; }
  // The metas of a node's inputs (an empty meta for an absent optional input).
  std::vector<TensorMeta> InputMetas(const IrNode& n) const;
  // How many alive nodes read each value (once per occurrence).
  std::vector<int32_t> Readers() const;
  // Per value: the alive node that writes it, or -1.
  std::vector<int32_t> Producers() const;
  // Whether a value may be rewritten away: read by exactly one alive node and not a graph output.
  bool HasSingleReader(int32_t v, const std::vector<int32_t>& readers) const {
    return readers[static_cast<size_t>(v)] == 1 && !is_output[static_cast<size_t>(v)];
  }
  // The alive node reading `v` where HasSingleReader(v, readers), else null.
  IrNode* OnlyReader(int32_t v, const std::vector<int32_t>& readers);
};

}  // namespace oneflow::graph
