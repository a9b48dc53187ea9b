// Window ops beyond core/ops/ops.h (same conventions): asymmetric padding for conv2d and the 2-D
// poolings, max pooling with its indices, and max unpooling.
//
// padding_end is the (bottom, right) padding after the input, options.padding the (top, left) one before
// it; empty means options.padding (symmetric, the ops.h functions). conv2d pads with zeros, max pooling
// with -inf; avg pooling divides as PyTorch and ONNX AveragePool do: count_include_pad by the window
// clipped to the padded input (padding on both sides counted), otherwise by the input cells under it.
#pragma once

#include <utility>
#include <vector>

#include "core/ops/ops.h"

namespace oneflow::ops {

TensorPtr Conv2d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, const Conv2dOptions& options,
                 const std::vector<int64_t>& padding_end);
TensorPtr MaxPool2d(const TensorPtr& x, const Pool2dOptions& options, const std::vector<int64_t>& padding_end);
TensorPtr AvgPool2d(const TensorPtr& x, const Pool2dOptions& options, const std::vector<int64_t>& padding_end);

// Max pooling's values and int64 indices (h * W + w within each (n, c) input plane, as PyTorch's
// return_indices; the first maximum on ties, the last NaN where there is one). The values are
// differentiable, the indices not.
std::pair<TensorPtr, TensorPtr> MaxPool2dWithIndices(const TensorPtr& x, const Pool2dOptions& options,
                                                     const std::vector<int64_t>& padding_end = {});

// The inverse of max pooling (PyTorch's max_unpool2d): zeros of (N, C, H', W') with x (N, C, H, W) written
// at `indices` (int64, x's shape, each in [0, H' * W') of its plane). (H', W') is output_size, or when it
// is empty (H - 1) * stride - padding - padding_end + kernel_size (W' alike) from options' kernel_size,
// stride (empty = kernel_size), padding and padding_end; a given size must lie within stride of that
// default. Duplicate indices keep the last write. Differentiable in x: the gradient gathers at the indices
// (as PyTorch's, for every duplicate too).
TensorPtr MaxUnpool2d(const TensorPtr& x, const TensorPtr& indices, const Pool2dOptions& options,
                      const std::vector<int64_t>& output_size = {}, const std::vector<int64_t>& padding_end = {});

}  // namespace oneflow::ops
