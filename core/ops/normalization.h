// The normalisation ops that need no running statistics: layer_norm, group_norm, instance_norm
// (batch_norm, which keeps running statistics, is in ops.h). Conventions as in ops.h.
//
// Each normalises rows of a reshaped view of x, y = (x - mean) / sqrt(var + eps) * weight + bias,
// with the biased variance of the row, in one fused kernel (float64 accumulation), and saves the
// rows' mean and 1/sqrt(var + eps) for one fused backward kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor/tensor.h"

namespace oneflow::ops {

// x (..., *normalized_shape) normalised over its last normalized_shape.size() (>= 1) dims; weight and
// bias have shape normalized_shape, each may be null (1 and 0). Floating x; eps finite and >= 0.
TensorPtr LayerNorm(const TensorPtr& x, const std::vector<int64_t>& normalized_shape, const TensorPtr& weight,
                    const TensorPtr& bias, double eps = 1e-5);
// x (N, C, ...) with C divisible by num_groups (>= 1): each group of C / num_groups channels of each
// sample normalised together; weight and bias (C) are per channel, each may be null.
TensorPtr GroupNorm(const TensorPtr& x, int64_t num_groups, const TensorPtr& weight, const TensorPtr& bias,
                    double eps = 1e-5);
// x (N, C, ...) with at least one spatial dim: each (sample, channel) normalised over its spatial
// elements (PyTorch's instance_norm with use_input_stats: no running statistics); weight and bias (C).
TensorPtr InstanceNorm(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, double eps = 1e-5);

}  // namespace oneflow::ops
