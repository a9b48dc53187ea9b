// Lowering the IR (core/graph/ir.h), after the passes, into an Executable (core/graph/compile.h): steps in
// node order, where each value lives, liveness, in-place reuse (an elementwise step writes into an input
// buffer of its dtype, shape and format that it reads for the last time) and the arena plan
// (core/graph/memory_plan.h). Internal to core/graph.
#pragma once

#include <memory>

#include "core/graph/compile.h"
#include "core/graph/ir.h"

namespace oneflow::graph {

// Consumes the IR's nodes and metas (moved into the Executable).
std::unique_ptr<Executable> Lower(Ir& ir, const GraphOptions& options);

}  // namespace oneflow::graph
