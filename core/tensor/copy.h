// Copies between tensor layouts, independent of dtype (elements are moved as bytes).
#pragma once

#include "core/device/thread_pool.h"
#include "core/tensor/tensor.h"

namespace oneflow {

// Copies src's elements, in row-major order of its shape, into dst's elements at dst's strides.
// Shapes, dtypes and devices must match; other devices than the CPU copy with their backend's CopyStrided.
// `pool` (the CPU's threads) may be null.
void CopyStrided(const Tensor& src, const Tensor& dst, ThreadPool* pool);
// A new tensor in `format` holding src's elements (never src's memory).
TensorPtr CopyOf(const TensorPtr& src, ThreadPool* pool, MemoryFormat format = MemoryFormat::kContiguous);
// src itself when contiguous, else CopyOf(src).
TensorPtr MakeContiguous(const TensorPtr& src, ThreadPool* pool);

}  // namespace oneflow
