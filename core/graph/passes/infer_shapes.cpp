#include "core/graph/passes/passes.h"

namespace oneflow::graph {

void InferConcreteShapes(Ir& ir) {
  for (IrNode& n : ir.nodes) {
    std::vector<TensorMeta> out;
    try {
      out = n.op->infer(ir.InputMetas(n), n.attrs);
    } catch (const Error& e) {
      throw Error(e.code(), n.op->name + ": " + e.message());
    }
    for (size_t j = 0; j < out.size(); ++j) {
      out[j].format = MemoryFormat::kContiguous;  // SelectKernels decides formats
      ir.meta(n.outputs[j]) = out[j];
    }
  }
}

}  // namespace oneflow::graph
