// The indexing ops' C++ API (core/ops/indexing.cpp): embedding, gather/scatter, masked_fill, one_hot.
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

}  // namespace oneflow::ops
