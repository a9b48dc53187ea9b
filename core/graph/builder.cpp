#include "core/graph/builder.h"

#include "core/autograd/autograd.h"
#include "core/ops/ops.h"

namespace oneflow::graph {
namespace {
// Keeps the installed builder alive on its thread even if its graph is destroyed from another thread.
thread_local std::shared_ptr<GraphBuilder> installed;
}  // namespace

void InstallBuilder(std::shared_ptr<GraphBuilder> builder) {
  OpInterceptor::Install(builder.get());
  installed = std::move(builder);
}

void UninstallBuilder(const GraphBuilder* builder) {
  if (installed.get() == builder) InstallBuilder(nullptr);
}

GraphBuilder* InstalledBuilder() { return installed && !installed->orphaned() ? installed.get() : nullptr; }

GraphBuilder::GraphBuilder(Graph& graph)
    : graph_(&graph), session_(&graph.session()), thread_(std::this_thread::get_id()) {}

bool GraphBuilder::Active() const { return graph_.load() != nullptr && &Session::Current() == session_; }

GraphBuilder::ViewKey GraphBuilder::KeyOf(const Tensor& t) {
  return {t.storage()->data(), t.storage_offset(), std::vector<int64_t>(t.shape().raw().begin(), t.shape().raw().end()),
          t.strides(), t.dtype().get()};
}

TensorPtr GraphBuilder::LazyTensor(int32_t v) const {
  const Graph& g = *graph_.load();
  const Value& value = g.program_.values[static_cast<size_t>(v)];
  return Tensor::MakeLazy(g.id(), v, value.meta.dtype, value.meta.shape, value.meta.device);
}

int32_t GraphBuilder::VariableFor(const TensorPtr& tensor, const std::string& param_name) {
  Graph& g = *graph_.load();
  const ViewKey key = KeyOf(*tensor);
  if (auto it = variables_.find(key); it != variables_.end()) {
    OF_CHECK(param_name.empty()) << "this tensor is already bound in graph " << Quote(g.name()) << " as "
                                 << Quote(g.program_.values[static_cast<size_t>(it->second)].name)
                                 << "; register parameters before their first use";
    return it->second;
  }
  const bool trainable = !param_name.empty() || (tensor->requires_grad() && tensor->is_leaf());
  std::string name = !param_name.empty() ? param_name
                     : trainable         ? "param_" + std::to_string(num_params_)
                                         : "free_" + std::to_string(num_free_);
  Program& p = g.program_;
  for (int32_t v : p.variables) {
    OF_CHECK(p.values[static_cast<size_t>(v)].name != name)
        << "graph " << Quote(g.name()) << " already has a variable named " << Quote(name);
  }
  // The store holds the tensor (a graph holds none); entries and program.variables share one order.
  session_->free_tensors().Add(g.id(), name, tensor, trainable);
  (trainable ? num_params_ : num_free_) += 1;
  const auto v = static_cast<int32_t>(p.values.size());
  p.values.push_back(Value{.meta = MetaOf(*tensor), .kind = ValueKind::kVariable, .name = std::move(name),
                           .trainable = trainable});
  p.variables.push_back(v);
  variables_.emplace(key, v);
  return v;
}

std::vector<TensorPtr> GraphBuilder::Intercept(const OpDef& op, std::vector<TensorPtr> inputs, const Attrs& attrs) {
  Graph& g = *graph_.load();
  Program& p = g.program_;
  Node node{.op = &op, .attrs = attrs};
  std::vector<TensorMeta> metas(inputs.size());
  bool have_device = false;
  Device device;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = i < op.inputs.size() ? op.inputs[i] : op.inputs.back();
    if (!inputs[i]) {
      node.inputs.push_back(-1);
      continue;
    }
    const Tensor& t = *inputs[i];
    int32_t v;
    if (t.is_lazy()) {
      OF_CHECK(t.lazy_graph() == g.id()) << "input " << Quote(name) << " is a lazy tensor of another graph ("
                                         << GraphLabel(t.lazy_graph()) << "), not of graph " << Quote(g.name());
      v = t.lazy_value();
    } else {
      v = VariableFor(inputs[i]);
    }
    node.inputs.push_back(v);
    metas[i] = p.values[static_cast<size_t>(v)].meta;
    if (!have_device) {
      device = metas[i].device;
      have_device = true;
    } else {
      OF_CHECK(metas[i].device == device) << "input " << Quote(name) << " is on " << metas[i].device
                                          << " but other inputs are on " << device;
    }
  }
  for (int m : op.mutated_inputs) {
    const TensorPtr& written = inputs[static_cast<size_t>(m)];
    if (written && !written->is_lazy() && op.WritesInputs(attrs)) {
      CheckWritable(*written, "input '" + op.inputs[static_cast<size_t>(m)] + "'");  // each run writes it
    }
    const int32_t v = node.inputs[static_cast<size_t>(m)];
    OF_CHECK(v < 0 || p.values[static_cast<size_t>(v)].kind != ValueKind::kOp)
        << "input '" << op.inputs[static_cast<size_t>(m)]
        << "' is updated in place, so in a graph it must be an eager tensor or a graph input, not a computed value";
  }
  const std::vector<TensorMeta> out_metas = op.infer(metas, attrs);
  OF_CHECK_INTERNAL(out_metas.size() == op.outputs.size()) << "inference returned " << out_metas.size() << " outputs";
  const auto node_index = static_cast<int32_t>(p.nodes.size());
  std::vector<TensorPtr> outputs;
  for (size_t j = 0; j < out_metas.size(); ++j) {
    const auto v = static_cast<int32_t>(p.values.size());
    p.values.push_back(Value{.meta = out_metas[j], .kind = ValueKind::kOp, .node = node_index,
                             .output = static_cast<int32_t>(j)});
    node.outputs.push_back(v);
    outputs.push_back(LazyTensor(v));
  }
  p.nodes.push_back(std::move(node));
  return outputs;
}

void GraphBuilder::AccumulateLeafGrad(const TensorPtr& leaf, const TensorPtr& grad) {
  TensorPtr& slot = leaf_grads_[leaf.get()];
  slot = slot ? ops::Add(slot, grad) : grad;
}

TensorPtr GraphBuilder::LeafGrad(const Tensor* leaf) const {
  auto it = leaf_grads_.find(leaf);
  return it == leaf_grads_.end() ? TensorPtr() : it->second;
}

}  // namespace oneflow::graph
