#include "core/autograd/autograd.h"

#include <algorithm>
#include <unordered_map>

#include "core/op/dispatch.h"
#include "core/tensor/copy.h"
#include "core/ops/ops.h"

namespace oneflow {
namespace {
thread_local bool grad_enabled = true;

// The node whose backward runs on this thread (for CheckSavedVersion), with its saved tensors.
struct SavedTensors {
  const OpDef* op;
  std::span<const TensorPtr> inputs, outputs;
  std::span<const uint64_t> input_versions, output_versions;
};
thread_local const SavedTensors* running_backward = nullptr;

// Makes `saved` the running backward's saved tensors for the scope (nesting restores).
class SavedTensorsScope {
 public:
  explicit SavedTensorsScope(const SavedTensors* saved) : previous_(running_backward) { running_backward = saved; }
  ~SavedTensorsScope() { running_backward = previous_; }
  SavedTensorsScope(const SavedTensorsScope&) = delete;
  SavedTensorsScope& operator=(const SavedTensorsScope&) = delete;

 private:
  const SavedTensors* previous_;
};

std::vector<uint64_t> VersionsOf(const std::vector<TensorPtr>& tensors) {
  std::vector<uint64_t> versions(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) versions[i] = tensors[i] ? tensors[i]->version() : 0;
  return versions;
}

// Throws if `t` is one of `saved` (by storage) and that storage was written since it was saved.
void CheckAgainst(const Tensor& t, const OpDef& op, std::span<const TensorPtr> saved, std::span<const uint64_t> versions,
                  const std::vector<std::string>& names, const char* kind) {
  if (!t.storage()) return;
  for (size_t i = 0; i < saved.size(); ++i) {
    if (!saved[i] || saved[i]->storage() != t.storage() || saved[i]->version() == versions[i]) continue;
    const std::string& name = names.empty() ? op.name : names[std::min(i, names.size() - 1)];
    OF_THROW(FailedPrecondition) << kind << " '" << name << "' of " << op.name << " (" << saved[i]->dtype() << " "
                                 << saved[i]->shape() << "), saved to compute the gradient, was modified in place "
                                 << "after the forward (its version is " << saved[i]->version() << ", saved at "
                                 << versions[i] << "): the gradient would be wrong; modify it after backward, or "
                                 << "modify a copy";
  }
}
}  // namespace

void CheckSavedVersion(const Tensor& t) {
  const SavedTensors* s = running_backward;
  if (s == nullptr) return;
  CheckAgainst(t, *s->op, s->inputs, s->input_versions, s->op->inputs, "input");
  CheckAgainst(t, *s->op, s->outputs, s->output_versions, s->op->outputs, "output");
}

bool GradMode::is_enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

GradNode::GradNode(const OpDef& op, Attrs attrs, std::vector<TensorPtr> inputs, std::vector<TensorPtr> outputs,
                   std::vector<Edge> edges)
    : op_(&op),
      attrs_(std::move(attrs)),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      edges_(std::move(edges)),
      num_outputs_(outputs_.size()) {
  input_versions_ = VersionsOf(inputs_);
  output_versions_ = VersionsOf(outputs_);
}

std::vector<TensorPtr> GradNode::Apply(std::span<const TensorPtr> grad_outputs) {
  if (released_) {
    OF_THROW(FailedPrecondition) << "backward through the graph a second time (at '" << op_->name
                                 << "'): its saved tensors were freed by the first backward; pass retain_graph "
                                    "to the first backward to keep them";
  }
  std::vector<bool> needs(edges_.size());
  for (size_t i = 0; i < edges_.size(); ++i) needs[i] = edges_[i].valid();
  BackwardContext ctx{inputs_, outputs_, grad_outputs, needs, attrs_};
  const SavedTensors saved{op_, inputs_, outputs_, input_versions_, output_versions_};
  SavedTensorsScope scope(&saved);
  std::vector<TensorPtr> grads;
  try {
    grads = op_->backward(ctx);
  } catch (const Error& e) {
    throw Error(e.code(), op_->name + " backward: " + e.message());  // "cat backward: narrow: ..."
  }
  OF_CHECK_INTERNAL(grads.size() == edges_.size())
      << op_->name << " backward returned " << grads.size() << " gradients for " << edges_.size() << " inputs";
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i] || !needs[i]) continue;
    OF_CHECK_INTERNAL(grads[i]->shape() == inputs_[i]->shape() && grads[i]->dtype() == inputs_[i]->dtype())
        << op_->name << " backward: gradient " << i << " is " << grads[i]->dtype() << " " << grads[i]->shape()
        << " for input " << inputs_[i]->dtype() << " " << inputs_[i]->shape();
  }
  return grads;
}

void GradNode::ReleaseSaved() {
  inputs_.clear();
  outputs_.clear();
  released_ = true;
}

void RecordGradNode(const OpDef& op, const Attrs& attrs, std::span<const TensorPtr> inputs,
                    std::span<const TensorPtr> outputs) {
  std::vector<GradNode::Edge> edges(inputs.size());
  std::vector<TensorPtr> saved_inputs(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorPtr& t = inputs[i];
    if (!t) continue;
    saved_inputs[i] = t->Detach();
    if (!t->requires_grad()) continue;
    if (t->is_leaf()) {
      edges[i].leaf = t;
    } else {
      edges[i].node = t->grad_fn();
      edges[i].output_nr = t->output_nr();
    }
  }
  std::vector<TensorPtr> saved_outputs;
  saved_outputs.reserve(outputs.size());
  for (const TensorPtr& t : outputs) saved_outputs.push_back(t->Detach());
  auto node = std::make_shared<GradNode>(op, attrs, std::move(saved_inputs), std::move(saved_outputs), std::move(edges));
  for (size_t i = 0; i < outputs.size(); ++i) {
    // Only floating outputs carry gradients (argmax's indices, comparison masks do not).
    if (outputs[i]->dtype()->is_floating_point()) outputs[i]->SetGradFn(node, static_cast<int32_t>(i));
  }
}

void Backward(const std::vector<TensorPtr>& roots, const std::vector<TensorPtr>& grads, bool retain_graph) {
  OF_CHECK_EQ(roots.size(), grads.size()) << "backward: one gradient (or null) per root";
  NoGradGuard no_grad;
  AutocastGuard no_autocast(Symbol<DType>{});  // gradients keep the forward's dtypes (Note [Autocast])

  // A failed backward changes nothing: the leaves' gradients are summed aside and stored, and the
  // visited nodes' saved tensors freed, only once the whole walk has succeeded.
  std::unordered_map<GradNode*, std::vector<TensorPtr>> pending;  // node -> gradients of its outputs
  std::vector<std::shared_ptr<GradNode>> root_nodes;
  std::vector<std::pair<TensorPtr, TensorPtr>> leaf_grads;  // (leaf, the sum of its gradients), first seen first
  std::unordered_map<const Tensor*, size_t> leaf_index;
  std::vector<std::shared_ptr<GradNode>> visited;
  auto add_into = [](TensorPtr& slot, const TensorPtr& g) { slot = slot ? ops::Add(slot, g) : g; };
  auto accumulate_leaf = [&](const TensorPtr& leaf, const TensorPtr& g) {
    auto [it, inserted] = leaf_index.emplace(leaf.get(), leaf_grads.size());
    if (inserted) leaf_grads.emplace_back(leaf, nullptr);
    add_into(leaf_grads[it->second].second, g);
  };
  for (size_t i = 0; i < roots.size(); ++i) {
    const TensorPtr& root = roots[i];
    OF_CHECK(root) << "backward: root " << i << " is null";
    OF_CHECK(root->requires_grad()) << "backward: tensor " << i << " (" << root->dtype() << " " << root->shape()
                                    << ") does not require grad and has no grad_fn";
    TensorPtr g = grads[i];
    if (!g) {
      OF_CHECK(root->numel() == 1) << "backward: a gradient can be implied only for a single-element output, got "
                                   << root->shape() << "; pass the gradient explicitly";
      g = ops::OnesLike(root);
    } else {
      OF_CHECK(g->shape() == root->shape() && g->dtype() == root->dtype())
          << "backward: gradient " << i << " is " << g->dtype() << " " << g->shape() << " but the tensor is "
          << root->dtype() << " " << root->shape();
    }
    if (root->is_leaf()) {
      accumulate_leaf(root, g);
      continue;
    }
    auto& slots = pending[root->grad_fn().get()];
    slots.resize(root->grad_fn()->num_outputs());
    add_into(slots[static_cast<size_t>(root->output_nr())], g);
    root_nodes.push_back(root->grad_fn());
  }

  // Dependencies: how many edges from reachable nodes point at each node.
  std::unordered_map<GradNode*, int64_t> deps;
  std::vector<GradNode*> stack;
  for (const auto& n : root_nodes) {
    if (deps.emplace(n.get(), 0).second) stack.push_back(n.get());
  }
  while (!stack.empty()) {
    GradNode* n = stack.back();
    stack.pop_back();
    for (const GradNode::Edge& e : n->edges()) {
      if (!e.node) continue;
      auto [it, inserted] = deps.emplace(e.node.get(), 0);
      ++it->second;
      if (inserted) stack.push_back(e.node.get());
    }
  }

  std::vector<std::shared_ptr<GradNode>> ready;
  for (const auto& n : root_nodes) {
    if (deps[n.get()] == 0 && std::find(ready.begin(), ready.end(), n) == ready.end()) ready.push_back(n);
  }
  while (!ready.empty()) {
    std::shared_ptr<GradNode> node = ready.back();
    ready.pop_back();
    std::vector<TensorPtr> grad_outputs = std::move(pending[node.get()]);
    pending.erase(node.get());
    grad_outputs.resize(node->num_outputs());
    const bool any_grad = std::any_of(grad_outputs.begin(), grad_outputs.end(), [](const TensorPtr& g) { return !!g; });
    std::vector<TensorPtr> input_grads =
        any_grad ? node->Apply(grad_outputs) : std::vector<TensorPtr>(node->edges().size());
    visited.push_back(node);
    for (size_t i = 0; i < node->edges().size(); ++i) {
      const GradNode::Edge& e = node->edges()[i];
      if (!e.valid()) continue;
      const TensorPtr& g = input_grads[i];
      if (e.leaf) {
        if (g) accumulate_leaf(e.leaf, g);
        continue;
      }
      if (g) {
        auto& slots = pending[e.node.get()];
        slots.resize(e.node->num_outputs());
        add_into(slots[static_cast<size_t>(e.output_nr)], g);
      }
      if (--deps[e.node.get()] == 0) ready.push_back(e.node);
    }
  }

  // The walk succeeded: store the leaves' gradients (the sums with their current grads first, so that
  // an Add that throws stores nothing) and free what the walk used.
  std::vector<TensorPtr> sums;
  sums.reserve(leaf_grads.size());
  // A gradient the caller passed in reaches a leaf unchanged as a root's own gradient or through
  // identity backward functions. Stored as it is, the leaf's grad would alias the caller's tensor (an
  // in-place write to one would change the other), and x.backward(x) would make x its own grad, a
  // reference cycle that leaks x (found by fuzz_ops). So such a gradient is stored as a copy, as
  // PyTorch's AccumulateGrad clones a gradient referenced elsewhere. Identity counts as well as memory:
  // an empty tensor shares no memory, yet x.backward(x) on an empty x still made x its own grad (fuzz_ops).
  auto owned = [&](const TensorPtr& leaf, const TensorPtr& g) {
    bool shared = g == leaf || MayShareMemory(*g, *leaf);
    for (const TensorPtr& given : grads) {
      shared = shared || (given && (given == g || (!given->is_lazy() && MayShareMemory(*g, *given))));
    }
    return shared ? CopyOf(g, nullptr) : g;
  };
  for (const auto& [leaf, g] : leaf_grads) {
    if (g->is_lazy()) sums.push_back(g);
    else sums.push_back(leaf->grad() ? ops::Add(leaf->grad(), g) : owned(leaf, g));
  }
  for (size_t i = 0; i < leaf_grads.size(); ++i) {
    const auto& [leaf, g] = leaf_grads[i];
    if (!g->is_lazy()) {
      leaf->set_grad(sums[i]);
      continue;
    }
    // A backward traced into a graph: the gradient is a graph value, kept by the graph builder.
    OpInterceptor* builder = OpInterceptor::Current();
    OF_CHECK(builder != nullptr) << "backward: a lazy gradient outside its graph's build";
    builder->AccumulateLeafGrad(leaf, g);
  }
  if (!retain_graph) {
    for (const auto& node : visited) node->ReleaseSaved();
  }
}

}  // namespace oneflow
