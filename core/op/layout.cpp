#include "core/op/layout.h"

#include <algorithm>

#include "core/tensor/copy.h"

namespace oneflow {
namespace {

// Whether index k of a declared list names actual position `i` (the last declared input of a variadic
// op stands for all its actual inputs from there on).
bool Lists(const std::vector<int>& declared, size_t i, size_t num_declared, bool variadic) {
  const size_t k = variadic && num_declared > 0 ? std::min(i, num_declared - 1) : i;
  return std::find(declared.begin(), declared.end(), static_cast<int>(k)) != declared.end();
}

}  // namespace

MemoryFormat LayoutOfInputs(std::span<const TensorMeta> inputs, const Attrs&) {
  for (const TensorMeta& m : inputs) {
    if (m.dtype && m.format == MemoryFormat::kChannelsLast) return m.format;
  }
  return MemoryFormat::kContiguous;
}

MemoryFormat ChannelsLastLayout(std::span<const TensorMeta>, const Attrs&) { return MemoryFormat::kChannelsLast; }

MemoryFormat CallLayout(const OpDef& op, const KernelDef& kernel, std::span<const TensorMeta> inputs,
                        const Attrs& attrs) {
  if (op.layout == nullptr || !kernel.channels_last) return MemoryFormat::kContiguous;
  return op.layout(inputs, attrs);
}

MemoryFormat OutputFormat(const OpDef& op, size_t j, const Shape& shape, MemoryFormat layout) {
  if (!Lists(op.layout_outputs, j, op.outputs.size(), false)) return MemoryFormat::kContiguous;
  return Canonical(shape, layout);
}

std::optional<MemoryFormat> RequiredInputFormat(const OpDef& op, size_t i, const Shape& shape, MemoryFormat layout) {
  if (Lists(op.layout_inputs, i, op.inputs.size(), op.variadic_inputs)) return Canonical(shape, layout);
  if (op.strided_inputs) return std::nullopt;
  return MemoryFormat::kContiguous;
}

TensorPtr KernelInput(const OpDef& op, size_t i, const TensorPtr& t, MemoryFormat layout, ThreadPool* pool) {
  if (!t || op.view != nullptr) return t;
  const std::optional<MemoryFormat> required = RequiredInputFormat(op, i, t->shape(), layout);
  if (!required || IsDenseIn(t->shape(), t->strides(), *required)) return t;
  const std::string& name = i < op.inputs.size() ? op.inputs[i] : op.inputs.back();
  OF_CHECK(!op.IsMutatedInput(i)) << "input '" << name << "' is updated in place and must be " << MemoryFormatName(*required);
  return CopyOf(t, pool, *required);
}

}  // namespace oneflow
