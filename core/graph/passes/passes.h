// The graph compiler's passes, one per file in this folder, in the order Compile (core/graph/compile.cpp)
// runs them. Each rewrites the IR (core/graph/ir.h) in place and can be tested on it alone. Passes match
// ops by the properties of their OpDef (elementwise, fused_opcode, fold_batch_norm, batch_norm, fuse_add_relu,
// writes_inputs, layout), never by name. Internal to core/graph.
#pragma once

#include "core/graph/ir.h"

namespace oneflow::graph {

// resolve_symbols.cpp: int-list attributes that encode a named dim symbol bound by the concrete inputs
// become its size (Note [Symbols in attributes]).
void ResolveSymbolAttrs(Ir& ir, const ShapeBinding& binding);

// infer_shapes.cpp: concrete shape and dtype inference, node by node; errors name the op.
void InferConcreteShapes(Ir& ir);

// dead_code.cpp: keeps the nodes that reach an output or write a variable (running stats, parameters).
void EliminateDeadCode(Ir& ir);

// fuse_batch_norm_relu.cpp: a batch norm in training whose output's only reader is a relu, or an add of
// its output and another value of the same shape whose only reader is a relu, becomes the batch norm's
// fuse_add_relu form (batch_norm_add_relu), one pass over memory instead of two or three.
void FuseBatchNormRelu(Ir& ir);

// fold_batch_norm.cpp: an op with a fold_batch_norm form (conv2d), whose only reader is a batch norm in
// inference with running statistics and unused saved statistics, optionally followed by the batch norm's
// only reader, a relu, becomes that one op (fused_conv_bn_act).
void FoldBatchNorm(Ir& ir);

// fuse_elementwise.cpp: trees of ops with a fused_opcode over one shape and floating dtype, whose
// intermediates have a single reader, become one fused_elementwise node at the place of the tree's root.
void FuseElementwise(Ir& ir);

// all_reduce_gradients.cpp: in a data-parallel graph, the gradients that the optimizer updates read are
// averaged over the ranks of process group `group` first, in buckets of about `bucket_bytes` (Note
// [Gradient buckets]). Adds nodes and values.
void AllReduceGradients(Ir& ir, int64_t group, size_t bucket_bytes);

// schedule_updates.cpp: each optimizer update (an op with a gradient_input) moves to right after the last
// node it depends on, the one that writes memory it reads or writes, or reads memory it writes (views
// sharing their input's), so that it finds its gradient in the cache (Note [Updates right after their
// gradients]). Changes only the nodes' order.
void ScheduleUpdates(Ir& ir);

// select_kernels.cpp: each node's kernel for its device and dtype (Unimplemented naming the op where there
// is none) and the call's memory format (core/op/layout.h), which gives every value its format; a view's
// format is that of the view made of its input as laid out.
void SelectKernels(Ir& ir);

}  // namespace oneflow::graph
