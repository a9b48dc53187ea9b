// Eager autograd: the tape of grad nodes and the backward engine.
//
// Op dispatch records a GradNode for each differentiable op call whose inputs require grad (while
// grad mode is on): the node keeps the op, its attributes, detached copies of the forward inputs and
// outputs, and one edge per input to where that input's gradient goes (the producing node, or the
// leaf tensor that accumulates it). Backward() walks the nodes reachable from the roots in dependency
// order, calls each op's backward function (with grad mode off) and adds leaf gradients into .grad
// (out of place: a .grad tensor is never written after it has been handed out).
//
// In a graph build (core/graph) the same engine runs over lazy tensors: the backward ops become graph
// nodes, and the gradients of eager leaves (parameters) go to the graph builder, not to their .grad.
//
// Grad mode is per thread (like PyTorch's): NoGradGuard switches it off for a scope.
#pragma once

#include <memory>
#include <vector>

#include "core/op/op_registry.h"

namespace oneflow {

class GradMode {
 public:
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

class GradNode {
 public:
  // Where the gradient of one forward input goes: into output `output_nr` of `node`, or into the
  // .grad of the leaf `leaf`; neither when that input does not require grad.
  struct Edge {
    std::shared_ptr<GradNode> node;
    int32_t output_nr = 0;
    TensorPtr leaf;
    bool valid() const { return node != nullptr || leaf; }
  };

  GradNode(const OpDef& op, Attrs attrs, std::vector<TensorPtr> inputs, std::vector<TensorPtr> outputs,
           std::vector<Edge> edges);

  const OpDef& op() const { return *op_; }
  const std::vector<Edge>& edges() const { return edges_; }
  size_t num_outputs() const { return num_outputs_; }
  // Runs the op's backward on the gradients of this node's outputs. FailedPrecondition if the backward
  // reads a saved tensor that was written in place since the forward (Note [Version counter]).
  std::vector<TensorPtr> Apply(std::span<const TensorPtr> grad_outputs);
  // Drops the saved tensors; a later Apply is a FailedPrecondition error.
  void ReleaseSaved();

 private:
  const OpDef* op_;
  Attrs attrs_;
  std::vector<TensorPtr> inputs_;   // detached
  std::vector<TensorPtr> outputs_;  // detached (the real outputs point at this node)
  std::vector<uint64_t> input_versions_, output_versions_;  // of the saved tensors, when they were saved
  std::vector<Edge> edges_;
  size_t num_outputs_;
  bool released_ = false;
};

// Computes the gradients of `roots` and accumulates them into the .grad of the leaves they depend on.
// grads[i] is the gradient of roots[i] (same shape and dtype), or null for an implicit 1, which needs
// a single-element root. Unless retain_graph, the saved tensors of every node visited are freed, and
// a second backward through them is a FailedPrecondition error. A root that does not require grad is
// an InvalidArgument error. A backward that fails changes nothing: leaf gradients are stored and
// saved tensors freed only after the whole walk succeeded.
void Backward(const std::vector<TensorPtr>& roots, const std::vector<TensorPtr>& grads, bool retain_graph = false);

// Op dispatch calls this for every input of an eager kernel: while a node's backward runs on this
// thread, reading one of the node's saved tensors whose version changed since it was saved is a
// FailedPrecondition naming the forward op and the tensor. Only data a kernel reads is checked, so a
// backward that uses a saved tensor's shape alone (add's) is not affected by writes to it.
void CheckSavedVersion(const Tensor& t);

// Records `node` as the producer of `outputs` (dispatch's hook); public for the graph's autodiff.
void RecordGradNode(const OpDef& op, const Attrs& attrs, std::span<const TensorPtr> inputs,
                    std::span<const TensorPtr> outputs);

}  // namespace oneflow
