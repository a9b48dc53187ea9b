#include "core/op/autocast.h"

#include <algorithm>

#include "core/op/op_registry.h"
#include "core/ops/ops.h"

namespace oneflow {
namespace {

thread_local Symbol<DType> autocast_dtype;

bool IsHalf(Symbol<DType> dtype) { return dtype == DType::Float16() || dtype == DType::BFloat16(); }

}  // namespace

Symbol<DType> Autocast::dtype() { return autocast_dtype; }

void Autocast::set_dtype(Symbol<DType> dtype) {
  OF_CHECK(!dtype || IsHalf(dtype)) << "the autocast dtype must be float16 or bfloat16 (or none), got " << dtype;
  autocast_dtype = dtype;
}

std::vector<TensorPtr> Autocast::CastInputs(const OpDef& op, std::vector<TensorPtr> inputs) {
  if (!autocast_dtype || op.autocast == AutocastPolicy::kKeep) return inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorPtr& t = inputs[i];
    // An input the op updates in place is never cast: the update would go to the copy.
    if (!t ||
        std::find(op.mutated_inputs.begin(), op.mutated_inputs.end(), static_cast<int>(i)) != op.mutated_inputs.end()) {
      continue;
    }
    if (op.autocast == AutocastPolicy::kLowPrecision && t->dtype() == DType::Float32()) {
      t = ops::Cast(t, autocast_dtype);
    } else if (op.autocast == AutocastPolicy::kFloat32 && IsHalf(t->dtype())) {
      t = ops::Cast(t, DType::Float32());
    }
  }
  return inputs;
}

}  // namespace oneflow
