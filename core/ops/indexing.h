// The indexing ops' C++ API (core/ops/indexing.cpp): embedding, gather, index_select,
// scatter, scatter_add, masked_fill, one_hot; indexing_layout.cpp: tril, triu, flip, roll, repeat, slice;
// indexing_sort.cpp: argmin, sort, topk.
// Conventions as in core/ops/ops.h. Index tensors are int64; an index outside its valid range is
// InvalidArgument naming the op, the argument, the offending value and the range, raised by the kernel
// before it writes anything. Indices are never wrapped: a negative index is out of range (as PyTorch's
// gather/scatter/embedding).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor/tensor.h"

namespace oneflow::ops {

// weight (num, dim) floating, indices int64 of any shape (0-d and empty included) -> indices.shape +
// (dim): the rows of weight that the indices name. The gradient w.r.t. weight sums dy's rows into the
// rows they came from; row padding_idx (in [0, num)) gets none. A negative padding_idx means none
// (PyTorch's None; PyTorch's negative padding_idx counting from the end is not taken).
TensorPtr Embedding(const TensorPtr& weight, const TensorPtr& indices, int64_t padding_idx = -1);

// index has x's rank and sizes <= x's in every dim but `dim`; the result has index's shape with
// y[i][j][k] = x[index[i][j][k]][j][k] for dim 0 (and so on). Any dtype. A 0-d x is seen as (1,).
TensorPtr Gather(const TensorPtr& x, int64_t dim, const TensorPtr& index);
// x with dim `dim` replaced by the slices index (1-D, or 0-d as one element) names. Any dtype.
TensorPtr IndexSelect(const TensorPtr& x, int64_t dim, const TensorPtr& index);
// Out of place: a copy of x with y[index[i][j][k]][j][k] = src[i][j][k] (dim 0). index as for Gather;
// src has index's shape (PyTorch also takes a larger src, of which it reads the leading part) and x's
// dtype. Duplicate positions take the last write in index order. Scatter takes any dtype; ScatterAdd
// sums the writes into x's values (numeric dtypes; integers wrap).
TensorPtr Scatter(const TensorPtr& x, int64_t dim, const TensorPtr& index, const TensorPtr& src);
TensorPtr ScatterAdd(const TensorPtr& x, int64_t dim, const TensorPtr& index, const TensorPtr& src);
// x where mask (bool) is false, `value` where it is true; x and mask broadcast (the result has their
// broadcast shape) and value must be representable in x's dtype. Any dtype.
TensorPtr MaskedFill(const TensorPtr& x, const TensorPtr& mask, double value);
// indices int64 in [0, num_classes) -> indices.shape + (num_classes), int64 with one 1 per row.
// num_classes >= 1 (PyTorch's -1 would make the shape depend on the data, which a graph cannot know).
TensorPtr OneHot(const TensorPtr& indices, int64_t num_classes);
// The positions (int64, (count, ndim), row-major order) of x's non-zero elements (NaN counts as
// non-zero). Eager only: the result's size depends on the data, so a graph build refuses it.
TensorPtr Nonzero(const TensorPtr& x);

// ---- layout (core/ops/indexing_layout.cpp); every dtype ----
// The lower (upper) triangle of each matrix in the last two dims: elements with j - i <= diagonal
// (>= diagonal) are kept, the others are 0. x has >= 2 dims.
TensorPtr Tril(const TensorPtr& x, int64_t diagonal = 0);
TensorPtr Triu(const TensorPtr& x, int64_t diagonal = 0);
// Reverses the order along each of `dims` (no repeats; empty = a copy).
TensorPtr Flip(const TensorPtr& x, const std::vector<int64_t>& dims);
// Rolls by shifts[k] along dims[k] (repeated dims add up); with dims empty, shifts has one entry and
// the flattened tensor is rolled, then seen in x's shape (as PyTorch).
TensorPtr Roll(const TensorPtr& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims);
// PyTorch's Tensor.repeat: repeats (>= 0 each) has at least x's rank; x gets leading size-1 dims to
// match and is tiled repeats[d] times along dim d.
TensorPtr Repeat(const TensorPtr& x, const std::vector<int64_t>& repeats);
// x[start:end:step] along dim, with NumPy's rules: negative bounds count from the end, then bounds are
// clamped to the dim (INT64_MAX / INT64_MIN stand for an omitted bound); step != 0 may be negative
// (PyTorch forbids negative steps). A view for step > 0, a copy otherwise.
TensorPtr Slice(const TensorPtr& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);

// ---- ordering (core/ops/indexing_sort.cpp); numeric dtypes ----
// NaN is larger than every number (PyTorch's order). Index (int64) of the first minimum along dim
// (the first NaN if the line has one, as Argmax).
TensorPtr Argmin(const TensorPtr& x, int64_t dim, bool keepdim = false);
struct SortResult {
  TensorPtr values;
  TensorPtr indices;  // int64: where along dim each value came from
};
// Stable sort along dim (ties keep their order, also when descending).
SortResult Sort(const TensorPtr& x, int64_t dim = -1, bool descending = false);
// The k (in [0, size]) largest (or smallest) along dim, always sorted (sorted = false is accepted);
// ties go to the lower index.
SortResult Topk(const TensorPtr& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);

}  // namespace oneflow::ops
