// Recurrent cells (core/ops/recurrent.cpp): the C++ API, with the conventions of core/ops/ops.h.
//
// The gate pre-activations come from ops::Linear (oneDNN matmul); the pointwise part of each cell is
// one fused op with a fused backward. Inputs are batched (2-D), one floating dtype; biases may be null.
#pragma once

#include <utility>

#include "core/ops/ops.h"

namespace oneflow::ops {

// PyTorch's LSTMCell: x (N, I), h and c (N, H), w_ih (4H, I), w_hh (4H, H), b_ih and b_hh (4H) or null.
// Gates in PyTorch's order (i, f, g, o): c' = f c + i g, h' = o tanh(c'). Returns (h', c').
std::pair<TensorPtr, TensorPtr> LstmCell(const TensorPtr& x, const TensorPtr& h, const TensorPtr& c,
                                         const TensorPtr& w_ih, const TensorPtr& w_hh, const TensorPtr& b_ih,
                                         const TensorPtr& b_hh);
// PyTorch's GRUCell: x (N, I), h (N, H), w_ih (3H, I), w_hh (3H, H), biases (3H) or null. Gates
// (r, z, n): n = tanh(x_n + r (h_n)), h' = (1 - z) n + z h, with x_* and h_* the chunks of
// x w_ih^T + b_ih and h w_hh^T + b_hh.
TensorPtr GruCell(const TensorPtr& x, const TensorPtr& h, const TensorPtr& w_ih, const TensorPtr& w_hh,
                  const TensorPtr& b_ih, const TensorPtr& b_hh);

}  // namespace oneflow::ops
