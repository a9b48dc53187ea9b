// Memory formats: the two dense orders a 4-D (N, C, H, W) tensor's elements may have in memory.
//
// Note [Channels-last activations]
// oneDNN's convolutions run as fast on NHWC ("channels last") data as on its blocked layouts, and its
// batch normalization, pooling and our elementwise loops are several times faster on NHWC than on plain
// NCHW (oneDNN's NCHW batch norm is a reference loop). Keeping the activations between such ops in
// NHWC, instead of reordering them from and to NCHW around every call, is what PyTorch's channels_last
// does, and what a layout-propagation pass would do with oneDNN's blocked layouts; NHWC has the
// advantage of being a strided view of the logical NCHW tensor, so every other op (and the user, through
// of_tensor_copy_to_host or DLPack's strides) reads it as it reads any strided tensor.
//
// Which format an op call writes is decided in one place for eager and lazy execution (core/op/layout.h)
// from the op's declared rule and whether the chosen kernel handles channels last; ops without a rule,
// and kernels that do not handle it, see contiguous tensors only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/common/shape.h"

namespace oneflow {

enum class MemoryFormat : uint8_t {
  kContiguous,    // row-major over the logical dims
  kChannelsLast,  // 4-D only: (N, C, H, W) stored as (N, H, W, C)
};

const char* MemoryFormatName(MemoryFormat format);  // "contiguous", "channels_last"

// The strides (in elements) of a static shape laid out in `format`; channels last applies to 4-D shapes
// only (any other rank gets row-major strides).
std::vector<int64_t> StridesFor(const Shape& shape, MemoryFormat format);

// Whether a tensor of `shape` with `strides` is dense in `format`'s order (size-1 dims may have any
// stride; an empty tensor is dense in both).
bool IsDenseIn(const Shape& shape, std::span<const int64_t> strides, MemoryFormat format);

// `format` where it differs from row-major for `shape`, else kContiguous: channels last only for a 4-D
// shape whose channels-last strides are not also row-major (C > 1 and H * W > 1). So a value has one
// format whether it was computed (eager: from its strides) or planned (lazy: from the op's rule).
MemoryFormat Canonical(const Shape& shape, MemoryFormat format);

}  // namespace oneflow
