// The memory format of an op call (Note [Channels-last activations] in core/common/memory_format.h):
// one decision shared by eager dispatch and the graph compiler, so that both lay out every value alike.
//
// An OpDef that can work on channels-last data declares a rule (OpDef::layout) giving the call's format
// from its input metas; its `layout_inputs` reach the kernel in that format (copied if they are not) and
// its `layout_outputs` are allocated in it. The rule applies only when the chosen kernel handles channels
// last (KernelDef::channels_last); every other call is contiguous, as are inputs and outputs not listed.
// Formats are canonical per shape (Canonical): a 4-D value whose channels-last strides are also row-major
// counts as contiguous.
#pragma once

#include <optional>
#include <span>

#include "core/op/op_registry.h"

namespace oneflow {

// Rules for OpDef::layout.
// Channels last if an input is (elementwise ops, normalisation, pooling): the op keeps its inputs' format,
// and a channels-last input wins over a contiguous one (the other is read strided, or converted).
MemoryFormat LayoutOfInputs(std::span<const TensorMeta> inputs, const Attrs& attrs);
// Channels last whatever the inputs' formats (convolutions: oneDNN's fastest plain layout).
MemoryFormat ChannelsLastLayout(std::span<const TensorMeta> inputs, const Attrs& attrs);

// The format a call of `op` with `kernel` works in.
MemoryFormat CallLayout(const OpDef& op, const KernelDef& kernel, std::span<const TensorMeta> inputs,
                        const Attrs& attrs);
// The format output `j` (of shape `shape`) is allocated in, for a call in `layout`.
MemoryFormat OutputFormat(const OpDef& op, size_t j, const Shape& shape, MemoryFormat layout);
// The format input `i` must have for a call in `layout`: nullopt where any strides do (strided_inputs).
std::optional<MemoryFormat> RequiredInputFormat(const OpDef& op, size_t i, const Shape& shape, MemoryFormat layout);

// Input `i` as the kernel of a call in `layout` takes it: `t` itself where it qualifies, else a copy in
// the required format. An input the op writes in place cannot be copied: InvalidArgument naming it.
TensorPtr KernelInput(const OpDef& op, size_t i, const TensorPtr& t, MemoryFormat layout, ThreadPool* pool);

}  // namespace oneflow
