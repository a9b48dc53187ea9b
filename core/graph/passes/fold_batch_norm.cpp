#include <algorithm>

#include "core/graph/passes/passes.h"
#include "core/ops/fused.h"

namespace oneflow::graph {

// A batch_norm node's inputs are (x, weight, bias, running_mean, running_var), its outputs (y, saved_mean,
// saved_var); the fold_batch_norm op takes the producer's inputs, then (weight, bias, running_mean,
// running_var), the producer's attributes, eps and relu (a following relu, or batch_norm_add_relu's own).
void FoldBatchNorm(Ir& ir) {
  std::vector<int32_t> producer = ir.Producers();
  std::vector<int32_t> readers = ir.Readers();
  for (IrNode& bn : ir.nodes) {
    if (!bn.alive || !bn.op->batch_norm || bn.attrs.Bool("training")) continue;
    if (bn.inputs[3] < 0 || bn.inputs[4] < 0) continue;  // batch statistics: nothing to fold
    // batch_norm_add_relu folds without an addend (its ReLU goes into the fused op); with one, the add
    // stays in its pass.
    if (bn.op->batch_norm_add_relu && bn.inputs[5] >= 0) continue;
    const int32_t c = bn.inputs[0];
    const int32_t p = producer[static_cast<size_t>(c)];
    if (p < 0) continue;
    IrNode& conv = ir.nodes[static_cast<size_t>(p)];
    if (conv.op->fold_batch_norm.empty() || !ir.HasSingleReader(c, readers)) continue;
    const OpDef& fused = OpRegistry::Global().Get(conv.op->fold_batch_norm);
    if (fused.FindKernel(ir.meta(c).device.type, ir.meta(c).dtype) == nullptr) continue;
    const bool stats_unused = std::all_of(bn.outputs.begin() + 1, bn.outputs.end(),
                                          [&](int32_t v) { return readers[static_cast<size_t>(v)] == 0 && !ir.is_output[static_cast<size_t>(v)]; });
    if (!stats_unused) continue;
    IrNode* relu = bn.op->batch_norm_add_relu ? nullptr : ir.OnlyReader(bn.outputs[0], readers);
    if (relu != nullptr && relu->op->fused_opcode != static_cast<int64_t>(FusedOpcode::kRelu)) relu = nullptr;
    Attrs attrs;
    for (const auto& [name, value] : conv.attrs.items()) attrs.Set(name, value);  // every attribute of the producer
    attrs.Set("eps", bn.attrs.Float("eps"));
    attrs.Set("relu", relu != nullptr || bn.op->batch_norm_add_relu);
    IrNode& last = relu != nullptr ? *relu : bn;
    const int32_t y = relu != nullptr ? relu->outputs[0] : bn.outputs[0];
    std::vector<int32_t> inputs = conv.inputs;
    inputs.insert(inputs.end(), bn.inputs.begin() + 1, bn.inputs.begin() + 5);
    IrNode folded{.op = &fused,
                  .attrs = std::move(attrs),
                  .inputs = std::move(inputs),
                  .outputs = {y},
                  .origin = conv.op->name + "+" + bn.op->name + (relu != nullptr ? "+" + relu->op->name : "")};
    conv.alive = false;
    bn.alive = false;
    last = std::move(folded);  // at the place of the last node it replaces
    readers = ir.Readers();
    producer = ir.Producers();
  }
}

}  // namespace oneflow::graph
