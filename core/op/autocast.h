// Autocast: mixed-precision execution for the calling thread (Note [Autocast]).
#pragma once

#include <vector>

#include "core/common/dtype.h"
#include "core/tensor/tensor.h"

namespace oneflow {

struct OpDef;

// What autocast does to an op's floating inputs (OpDef::autocast).
enum class AutocastPolicy {
  kKeep,          // nothing: the op runs in its inputs' dtypes (elementwise ops promote mixed operands)
  kLowPrecision,  // float32 inputs are cast to the autocast dtype (conv2d, matmul, linear)
  kFloat32,       // float16/bfloat16 inputs are cast to float32 (softmax, losses, normalizations)
};

// Note [Autocast]
// Mixed precision as PyTorch's autocast: while a thread's autocast dtype is set (float16 or bfloat16),
// the ops whose cost is their arithmetic (convolutions, matmul, linear) take their float32 inputs in that
// dtype, storing half and accumulating in float32 (Note [Half precision in float32]), and the ops that
// need float32's range or precision (softmax, log_softmax, the losses, the normalizations and their
// statistics, logsumexp) take half inputs in float32. Parameters stay float32 (the master weights the
// optimizer updates); float64 inputs are left alone. The casts are ordinary cast ops made by dispatch
// before the op runs: autograd records them (a cast's gradient is cast back, so float32 parameters get
// float32 gradients) and a graph traced in the mode holds them as nodes, so one run is still one
// training step. Backward runs with autocast off: gradients flow in the dtypes of the forward.
class Autocast {
 public:
  // The calling thread's autocast dtype, or the null symbol when off (the default).
  static Symbol<DType> dtype();
  // float16, bfloat16, or null (off); other dtypes are InvalidArgument.
  static void set_dtype(Symbol<DType> dtype);
  // `inputs` as op takes them under the calling thread's autocast (inputs itself when off or kKeep).
  static std::vector<TensorPtr> CastInputs(const OpDef& op, std::vector<TensorPtr> inputs);
};

// Sets the calling thread's autocast dtype for the guard's lifetime (null: off).
class AutocastGuard {
 public:
  explicit AutocastGuard(Symbol<DType> dtype) : previous_(Autocast::dtype()) { Autocast::set_dtype(dtype); }
  ~AutocastGuard() { Autocast::set_dtype(previous_); }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  Symbol<DType> previous_;
};

}  // namespace oneflow
