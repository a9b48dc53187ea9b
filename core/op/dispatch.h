// Op dispatch: the one path every op call takes, eager or (later) lazy.
//
// Apply(op, inputs, attrs):
//   1. checks the inputs (count, null only where optional, one device) and the attributes against
//      the OpDef (unknown names, wrong types; defaults filled in);
//   2. if an OpInterceptor is installed on this thread (a graph being built), hands the call to it;
//   3. eager: infers output metas, finds the kernel for the device and the dtype of the op's
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

// Receives op calls instead of eager execution while installed on a thread (the lazy graph builder).
// Inputs and attributes arrive checked and complete.
class OpInterceptor {
 public:
  virtual ~OpInterceptor() = default;
  virtual std::vector<TensorPtr> Intercept(const OpDef& op, std::vector<TensorPtr> inputs, const Attrs& attrs) = 0;

  static OpInterceptor* Current();  // for the calling thread; null in eager mode
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
