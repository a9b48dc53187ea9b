#include "core/ops/register.h"

namespace oneflow {

void RegisterElementwiseOps(OpRegistry& registry) { (void)registry; }

}  // namespace oneflow
