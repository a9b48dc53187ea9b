// Reductions beyond ops.h's sum/mean/max/min/var/std: prod, logsumexp, all, any, norm
// (core/ops/reduce_extra.cpp), and the scans cumsum, cumprod (core/ops/scan.cpp). Conventions as in
// ops.h: `dims` empty = every dim, each dim at most once, negative dims count from the end.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor/tensor.h"

namespace oneflow::ops {

// Product over dims. Floating inputs keep their dtype; bool and integer inputs give int64 (wrapping,
// as PyTorch). The gradient is right where x holds zeros (one zero: the product of the others there).
TensorPtr Prod(const TensorPtr& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// log(sum(exp(x))) over dims, computed stably (max subtracted first). Floating x. An empty reduction
// gives -inf. Gradient: dy * softmax(x) over the reduced dims.
TensorPtr LogSumExp(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim = false);
// Whether every / any element over dims is non-zero (NaN counts as non-zero). Any dtype; bool result;
// an empty reduction gives true (all) and false (any). Not differentiable.
TensorPtr All(const TensorPtr& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
TensorPtr Any(const TensorPtr& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// The vector p-norm over dims for p = 1 (sum |x|), 2 (sqrt(sum x^2)), inf (max |x|) and -inf
// (min |x|); other p are InvalidArgument. Floating x. Gradient as PyTorch: 0 where a 2-norm is 0; the
// inf-norms share dy evenly among the elements that attain them.
TensorPtr Norm(const TensorPtr& x, double p, const std::vector<int64_t>& dims = {}, bool keepdim = false);

// ---- scans (core/ops/scan.cpp) ----------------------------------------------------------------------
// Running sum / product along `dim` (a 0-d x is one element along dim 0 or -1). Floating inputs keep
// their dtype; bool and integer inputs give int64 (wrapping). cumsum's gradient is the reversed
// cumsum of dy; cumprod's is right where x holds zeros (O(n) per line).
TensorPtr Cumsum(const TensorPtr& x, int64_t dim);
TensorPtr Cumprod(const TensorPtr& x, int64_t dim);

}  // namespace oneflow::ops
