// Op dispatch: the one path every op call takes, eager or lazy (traced into a graph being built).
//
// Apply(op, inputs, attrs):
//   1. checks the inputs (count, null only where optional, one device) and the attributes against
//      the OpDef (unknown names, wrong types; defaults filled in);
//   2. if an OpInterceptor is installed on this thread and active (a graph of the current session being
//      built), hands the call to it: the outputs are lazy tensors;
//   3. eager: refuses lazy tensors (a graph's values outside its build), infers output metas, finds the kernel for the device and the dtype of the op's
//      dtype_input, makes inputs contiguous unless the op takes strided inputs, allocates outputs,
//      runs the kernel with the current session's thread pool and generator (or the view function);
//   4. records an autograd node when grad mode is on, the op has a backward and an input requires grad.
// Errors from any step carry the op's name: "conv2d: weight must be 4-D, got (3, 3)".
#pragma once

#include <vector>

#include "core/op/op_registry.h"

namespace oneflow {

std::vector<TensorPtr> Apply(const OpDef& op, std::vector<TensorPtr> inputs, Attrs attrs = {});
// For single-output ops.
TensorPtr Apply1(const OpDef& op, std::vector<TensorPtr> inputs, Attrs attrs = {});

// Receives op calls instead of eager execution while installed on a thread and active (the lazy graph
// builder: active while the current session is the graph's). Inputs and attributes arrive checked and
// complete; autograd is recorded by Apply on the returned (lazy) outputs as in eager mode.
class OpInterceptor {
 public:
  virtual ~OpInterceptor() = default;
  virtual bool Active() const = 0;
  virtual std::vector<TensorPtr> Intercept(const OpDef& op, std::vector<TensorPtr> inputs, const Attrs& attrs) = 0;
  // Where Backward puts the lazy gradient of an eager leaf (a parameter) instead of its .grad.
  virtual void AccumulateLeafGrad(const TensorPtr& leaf, const TensorPtr& grad) = 0;

  // The calling thread's interceptor if it is active, else null (eager mode).
  static OpInterceptor* Current();
  // Installs `interceptor` on the calling thread (null uninstalls) and returns the previous one; a graph
  // build installs its builder from begin to end of the build, across calls.
  static OpInterceptor* Install(OpInterceptor* interceptor);
};

// Installs an interceptor on the calling thread for its lifetime (nesting restores the previous one);
// a scope with null switches interception off (eager creation inside a graph build).
class OpInterceptorScope {
 public:
  explicit OpInterceptorScope(OpInterceptor* interceptor);
  ~OpInterceptorScope();
  OpInterceptorScope(const OpInterceptorScope&) = delete;
  OpInterceptorScope& operator=(const OpInterceptorScope&) = delete;

 private:
  OpInterceptor* previous_;
};

// Metas of tensors, for inference.
TensorMeta MetaOf(const Tensor& t);

}  // namespace oneflow
