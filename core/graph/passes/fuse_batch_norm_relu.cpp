#include "core/graph/passes/passes.h"
#include "core/ops/fused.h"

namespace oneflow::graph {

// Note [Batch norm, add and ReLU in one pass]
// ResNets written op by op (batch_norm, then relu; or batch_norm, add of the shortcut, then relu) make
// separate passes over each activation in training: the batch norm's normalisation writes y, and the
// relu (fused with the add) reads it again. batch_norm_add_relu normalises, adds and clamps in the one
// pass that writes the relu's output, and y is never stored. Nothing of the backward changes: batch
// norm's gradient reads x and the saved statistics, relu's reads its own output, add's nothing. Only
// batch norms in training: in inference FoldBatchNorm folds the batch norm into the convolution before
// it, which an addend would prevent.
void FuseBatchNormRelu(Ir& ir) {
  std::vector<int32_t> readers = ir.Readers();
  for (IrNode& bn : ir.nodes) {
    if (!bn.alive || !bn.op->batch_norm || bn.op->fuse_add_relu.empty() || !bn.attrs.Bool("training")) continue;
    const int32_t y = bn.outputs[0];
    const Symbol<DType> dtype = ir.meta(y).dtype;
    const OpDef& fused = OpRegistry::Global().Get(bn.op->fuse_add_relu);
    // In float16 and bfloat16 the fused kernel adds in float32 where the ops round y first: a graph must
    // compute what the same calls do eagerly.
    if (dtype != DType::Float32() && dtype != DType::Float64()) continue;
    if (fused.FindKernel(ir.meta(y).device.type, dtype) == nullptr) continue;
    IrNode* next = ir.OnlyReader(y, readers);
    IrNode* add = nullptr;
    int32_t addend = -1;
    if (next != nullptr && next->op->fused_opcode == static_cast<int64_t>(FusedOpcode::kAdd)) {
      add = next;
      addend = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
      const auto same = [&](int32_t v) { return ir.meta(v).shape == ir.meta(y).shape && ir.meta(v).dtype == dtype; };
      if (addend == y || !same(addend) || !same(add->outputs[0])) continue;  // y + y, or a broadcast
      next = ir.OnlyReader(add->outputs[0], readers);
    }
    if (next == nullptr || next->op->fused_opcode != static_cast<int64_t>(FusedOpcode::kRelu)) continue;
    std::vector<int32_t> inputs = bn.inputs;
    inputs.push_back(addend);
    IrNode fused_node{.op = &fused,
                      .attrs = bn.attrs,
                      .inputs = std::move(inputs),
                      .outputs = {next->outputs[0], bn.outputs[1], bn.outputs[2]},
                      .update = bn.update,
                      .origin = bn.op->name + (add != nullptr ? "+" + add->op->name : "") + "+" + next->op->name};
    bn.alive = false;
    if (add != nullptr) add->alive = false;
    *next = std::move(fused_node);  // at the place of the relu, after the addend's producer
    readers = ir.Readers();
  }
}

}  // namespace oneflow::graph
