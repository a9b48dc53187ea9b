#include "core/op/autocast.h"

#include "core/op/op_registry.h"
#include "core/ops/ops.h"

namespace oneflow {
namespace {

thread_local Symbol<DType> autocast_dtype;

}  // namespace

Symbol<DType> Autocast::dtype() { return autocast_dtype; }

void Autocast::set_dtype(Symbol<DType> dtype) {
  OF_CHECK(!dtype || dtype->is_half()) << "the autocast dtype must be float16 or bfloat16 (or none), got " << dtype;
  autocast_dtype = dtype;
}

std::vector<TensorPtr> Autocast::CastInputs(const OpDef& op, std::vector<TensorPtr> inputs) {
  if (!autocast_dtype || op.autocast == AutocastPolicy::kKeep) return inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorPtr& t = inputs[i];
    // An input the op updates in place is never cast: the update would go to the copy.
    if (!t || op.IsMutatedInput(i)) continue;
    if (op.autocast == AutocastPolicy::kLowPrecision && t->dtype() == DType::Float32()) {
      t = ops::Cast(t, autocast_dtype);
    } else if (op.autocast == AutocastPolicy::kFloat32 && t->dtype()->is_half()) {
      t = ops::Cast(t, DType::Float32());
    }
  }
  return inputs;
}

}  // namespace oneflow
