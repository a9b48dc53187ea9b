#include "core/ops/register.h"

namespace oneflow {

void RegisterNnOps(OpRegistry& registry) { (void)registry; }

}  // namespace oneflow
