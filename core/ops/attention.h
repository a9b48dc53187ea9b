// Attention ops (core/ops/attention.cpp): the C++ API, with the conventions of core/ops/ops.h.
#pragma once

#include "core/ops/ops.h"

namespace oneflow::ops {

struct AttentionOptions {
  double dropout_p = 0.0;  // in [0, 1): probability of dropping an attention weight
  bool is_causal = false;  // query i attends to keys j <= i (top-left aligned, as PyTorch); no mask then
  double scale = 0.0;      // the factor on q k^T; 0 = 1 / sqrt(E)
};

// softmax(q k^T * scale + mask) v, as PyTorch's scaled_dot_product_attention: q (..., L, E),
// k (..., S, E), v (..., S, Ev), one floating dtype, batch dims broadcast; the result is (..., L, Ev).
// attn_mask (null: none) broadcasts to (..., L, S): bool (true = attend) or q's dtype (added to the
// scores). Dropout draws from the current session's generator (reproducible under a seed). A query
// row that may attend to no key gives zeros (PyTorch's math path's safe softmax), not NaN.
// Differentiable in q, k and v (not in the mask).
TensorPtr ScaledDotProductAttention(const TensorPtr& q, const TensorPtr& k, const TensorPtr& v,
                                    const TensorPtr& attn_mask = nullptr, const AttentionOptions& options = {});

}  // namespace oneflow::ops
