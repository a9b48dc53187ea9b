// The tracer: the OpInterceptor a Graph installs on the building thread from BeginBuild to EndBuild.
// Internal to core/graph.
#pragma once

#include <atomic>
#include <map>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "core/graph/graph.h"
#include "core/op/dispatch.h"

namespace oneflow::graph {

class GraphBuilder final : public OpInterceptor {
 public:
  explicit GraphBuilder(Graph& graph);

  // Active while the graph lives and the calling thread's current session is the graph's.
  bool Active() const override;
  std::vector<TensorPtr> Intercept(const OpDef& op, std::vector<TensorPtr> inputs, const Attrs& attrs) override;
  void AccumulateLeafGrad(const TensorPtr& leaf, const TensorPtr& grad) override;

  // The value an eager tensor is bound to, creating its variable (and store entry) on first sight.
  int32_t VariableFor(const TensorPtr& tensor, const std::string& param_name = {});
  // The lazy gradient traced for parameter `leaf`, or null.
  TensorPtr LeafGrad(const Tensor* leaf) const;
  // A lazy tensor for value `v`.
  TensorPtr LazyTensor(int32_t v) const;

  std::thread::id thread() const { return thread_; }
  // The graph is being destroyed on another thread: go inactive (the builder may outlive it, kept by the
  // building thread's keeper until that thread's next build).
  void Orphan() { graph_.store(nullptr); }
  bool orphaned() const { return graph_.load() == nullptr; }

 private:
  // A variable is keyed by the memory it views, so a detached alias of a parameter (autograd saves
  // those) binds to the parameter's variable.
  using ViewKey = std::tuple<const void*, int64_t, std::vector<int64_t>, std::vector<int64_t>, const void*>;
  static ViewKey KeyOf(const Tensor& t);

  std::atomic<Graph*> graph_;
  Session* session_;
  std::thread::id thread_;
  std::map<ViewKey, int32_t> variables_;
  std::unordered_map<const Tensor*, TensorPtr> leaf_grads_;
  int32_t num_params_ = 0, num_free_ = 0;
};

// Installs `builder` on the calling thread (keeping it alive there) or, with null, uninstalls.
void InstallBuilder(std::shared_ptr<GraphBuilder> builder);
// The builder installed on the calling thread and still attached to a graph (of any session), if any.
GraphBuilder* InstalledBuilder();
// Uninstalls `builder` if it is the calling thread's (whatever the current session).
void UninstallBuilder(const GraphBuilder* builder);

}  // namespace oneflow::graph
