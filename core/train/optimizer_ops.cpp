#include "core/ops/register.h"

namespace oneflow {

void RegisterOptimizerOps(OpRegistry& registry) { (void)registry; }

}  // namespace oneflow
