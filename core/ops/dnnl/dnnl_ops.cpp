#include "core/ops/register.h"

namespace oneflow {

void RegisterDnnlOps(OpRegistry& registry) { (void)registry; }

}  // namespace oneflow
