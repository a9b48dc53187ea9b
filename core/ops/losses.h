// Elementwise losses (core/ops/losses.cpp): the C++ API, with the conventions of core/ops/ops.h.
//
// input and target have one floating dtype and one shape (PyTorch broadcasts mse/l1/kl_div targets
// with a warning that it is likely a mistake; here it is an error). The loss is per element
// (Reduction::kNone, input's shape), or its mean or sum over all elements (0-d; the mean of no
// elements is NaN, as PyTorch). Differentiable in input and target.
#pragma once

#include "core/ops/ops.h"

namespace oneflow::ops {

// (input - target)^2.
TensorPtr MseLoss(const TensorPtr& input, const TensorPtr& target, Reduction reduction = Reduction::kMean);
// |input - target|.
TensorPtr L1Loss(const TensorPtr& input, const TensorPtr& target, Reduction reduction = Reduction::kMean);
// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target); beta >= 0, 0 is l1_loss.
TensorPtr SmoothL1Loss(const TensorPtr& input, const TensorPtr& target, Reduction reduction = Reduction::kMean,
                       double beta = 1.0);
// -weight [pos_weight target log sigmoid(input) + (1 - target) log(1 - sigmoid(input))], in the stable
// form weight [(1 - target) input + (1 + (pos_weight - 1) target) softplus(-input)]. weight and
// pos_weight (null: 1) broadcast to input's shape (pos_weight typically (C) for input (N, C)); they are
// not differentiated.
TensorPtr BinaryCrossEntropyWithLogits(const TensorPtr& input, const TensorPtr& target, const TensorPtr& weight,
                                       const TensorPtr& pos_weight, Reduction reduction = Reduction::kMean);
// input holds log-probabilities; target probabilities (log-probabilities with log_target):
// target (log target - input), 0 where target is 0; exp(target) (target - input) with log_target.
// kMean is the mean over all elements, as PyTorch's "mean" (divide a kSum by the batch size for
// "batchmean").
TensorPtr KlDiv(const TensorPtr& input, const TensorPtr& target, Reduction reduction = Reduction::kMean,
                bool log_target = false);

// ---- class-index losses with class weights (core/ops/nn.cpp) ----------------------------------------
// ops::CrossEntropy and ops::NllLoss with an optional weight (C) (null: 1 for every class). Both take
// input (N, C) with target (N), or input (N, C, d1, ...) with target (N, d1, ...) (the loss of kNone
// has target's shape). Sample i counts w[target_i]: kMean divides the weighted sum by the sum of the
// weights of the targets that are not ignore_index (PyTorch's weighted mean; NaN when that is 0).
// With label smoothing the smoothing term weighs class c by w_c, as PyTorch. weight is not
// differentiated.
TensorPtr WeightedCrossEntropy(const TensorPtr& logits, const TensorPtr& target, const TensorPtr& weight,
                               Reduction reduction = Reduction::kMean, int64_t ignore_index = -100,
                               double label_smoothing = 0.0);
TensorPtr WeightedNllLoss(const TensorPtr& log_probs, const TensorPtr& target, const TensorPtr& weight,
                          Reduction reduction = Reduction::kMean, int64_t ignore_index = -100);

}  // namespace oneflow::ops
