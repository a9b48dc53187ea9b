// 3-D, transposed and 1-D convolution (conv2d itself is in ops.h). Conventions as in ops.h; PyTorch's
// semantics and weight layouts.
//
// conv_transpose2d is the adjoint of conv2d: its forward runs conv2d's backward-data kernels, its input
// gradient is conv2d, its weight gradient conv2d_backward_weight with the operands' roles swapped. The
// 1-D ops are composites: x viewed as (N, C, 1, L) and the weight as (.., .., 1, K) through the 2-D op,
// the result viewed back, so autograd and lazy graphs work through the 2-D ops.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor/tensor.h"

namespace oneflow::ops {

struct Conv3dOptions {
  std::vector<int64_t> stride = {1, 1, 1};    // (D, H, W), each >= 1
  std::vector<int64_t> padding = {0, 0, 0};   // zeros on both sides of (D, H, W), each >= 0
  std::vector<int64_t> dilation = {1, 1, 1};  // each >= 1
  int64_t groups = 1;
};
// x (N, C, D, H, W), weight (O, C / groups, kD, kH, kW), bias (O) or null, all float32 or all float64; the
// result is (N, O, D', H', W') with D' = (D + 2 * padding[0] - dilation[0] * (kD - 1) - 1) / stride[0] + 1
// (rounded down; H', W' alike), each >= 1. Registry op conv3d, differentiable in x, weight and bias
// (conv3d_backward_data, conv3d_backward_weight); conv2d's kernels at depth.
TensorPtr Conv3d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, const Conv3dOptions& options = {});

struct ConvTranspose2dOptions {
  std::vector<int64_t> stride = {1, 1};
  std::vector<int64_t> padding = {0, 0};
  std::vector<int64_t> output_padding = {0, 0};  // each < stride or < dilation (as PyTorch)
  std::vector<int64_t> dilation = {1, 1};
  int64_t groups = 1;
};
// x (N, C_in, H, W), weight (C_in, C_out / groups, kH, kW), bias (C_out) or null; the result is
// (N, C_out, H', W') with H' = (H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1
// (W' alike), which must be >= 1.
TensorPtr ConvTranspose2d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias,
                          const ConvTranspose2dOptions& options = {});

struct Conv1dOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
};
// x (N, C, L), weight (O, C / groups, K), bias (O) or null; the result is (N, O, L') with
// L' = (L + 2 * padding - dilation * (K - 1) - 1) / stride + 1 (rounded down), which must be >= 1.
TensorPtr Conv1d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, const Conv1dOptions& options = {});

struct ConvTranspose1dOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t output_padding = 0;  // < stride or < dilation
  int64_t dilation = 1;
  int64_t groups = 1;
};
// x (N, C_in, L), weight (C_in, C_out / groups, K), bias (C_out) or null; the result is (N, C_out, L')
// with L' = (L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1, which must be >= 1.
TensorPtr ConvTranspose1d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias,
                          const ConvTranspose1dOptions& options = {});

}  // namespace oneflow::ops
