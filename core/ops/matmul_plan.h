// The product behind matmul and linear as every backend's kernel sees it (core/ops/dnnl/matmul.cpp for the
// CPU, core/ops/cuda/matmul_kernels.cpp for CUDA): operands as logical matrices stored row- or column-major,
// and one product C = A @ B over broadcast batch dims, with C row-major and contiguous.
#pragma once

#include <cstdint>
#include <vector>

#include "core/op/op_registry.h"

namespace oneflow {

// The logical matrices L = op(X) of an operand: dims (batch..., rows, cols), stored row-major
// (L's rows contiguous) or column-major; matrices follow each other densely over the batch dims.
struct MatOperand {
  TensorPtr tensor;  // keeps the data alive
  std::vector<int64_t> batch;
  int64_t rows = 0, cols = 0;
  bool col_major = false;
  const void* data() const { return tensor->raw_data(); }
  int64_t row_stride() const { return col_major ? 1 : cols; }
  int64_t col_stride() const { return col_major ? rows : 1; }
};
// Input i of a matmul call, transposed (last two dims) when asked: read in place when contiguous or the
// transpose of a contiguous tensor, else a contiguous copy on its device.
MatOperand MatOperandOf(KernelContext& ctx, size_t i, bool transposed);

// One product C = A @ B (+ bias) over broadcast batch dims, simplified: batch dims of B that are all 1
// fold into A's rows (when A is row-major); equal batch dims collapse into one.
struct GemmPlan {
  std::vector<int64_t> batch{};               // output batch dims (possibly folded or collapsed)
  std::vector<int64_t> a_batch{}, b_batch{};  // the operands' batch dims, aligned with `batch` (1 = broadcast)
  int64_t m = 0, k = 0, n = 0;
  int64_t a_rs = 0, a_cs = 0, b_rs = 0, b_cs = 0;  // element strides within one matrix
};
GemmPlan PlanGemm(const MatOperand& a, const MatOperand& b);
// linear(x, weight): x's rows times weight^T (read in place), no batch dims.
GemmPlan PlanLinear(const Tensor& x, const Tensor& weight);

// The product of the dims (1 for none).
int64_t Product(const std::vector<int64_t>& dims);
// Offsets (in elements) of one operand's matrix for each output batch matrix (row-major over `out`): the
// operand's batch dims `mine` (aligned with out, 1 where broadcast), `matrix` elements per matrix.
std::vector<int64_t> BatchOffsets(const std::vector<int64_t>& out, const std::vector<int64_t>& mine, int64_t matrix);

// A backend's product: c (row-major, contiguous) = a b (+ bias broadcast over c's rows; bias null: none).
using RunGemmFn = void (*)(KernelContext& ctx, const GemmPlan& plan, const void* a, const void* b, const Tensor* bias,
                           const Tensor& c);
// The matmul and linear kernels of a backend, given its product.
template <RunGemmFn kRun>
void MatmulKernelOf(KernelContext& ctx) {
  const MatOperand a = MatOperandOf(ctx, 0, ctx.attrs.Bool("transpose_a"));
  const MatOperand b = MatOperandOf(ctx, 1, ctx.attrs.Bool("transpose_b"));
  kRun(ctx, PlanGemm(a, b), a.data(), b.data(), nullptr, ctx.out(0));
}
template <RunGemmFn kRun>
void LinearKernelOf(KernelContext& ctx) {
  kRun(ctx, PlanLinear(ctx.in(0), ctx.in(1)), ctx.in(0).raw_data(), ctx.in(1).raw_data(),
       ctx.inputs[2] ? &ctx.in(2) : nullptr, ctx.out(0));
}

}  // namespace oneflow
