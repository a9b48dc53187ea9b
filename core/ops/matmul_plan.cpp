#include "core/ops/matmul_plan.h"

#include <algorithm>

#include "core/tensor/copy.h"

namespace oneflow {
namespace {

// Whether t is the transpose (last two dims) of a contiguous tensor.
bool IsTransposedContiguous(const Tensor& t) {
  const int64_t n = t.ndim();
  const std::vector<int64_t>& s = t.strides();
  const int64_t r = t.shape()[n - 2].value(), c = t.shape()[n - 1].value();
  if (s[n - 2] != 1 || s[n - 1] != r) return false;
  int64_t expect = r * c;
  for (int64_t i = n - 3; i >= 0; --i) {
    const int64_t size = t.shape()[i].value();
    if (size != 1 && s[i] != expect) return false;
    expect *= size;
  }
  return true;
}

}  // namespace

MatOperand MatOperandOf(KernelContext& ctx, size_t i, bool transposed) {
  MatOperand op;
  op.tensor = ctx.inputs[i];
  bool flipped = false;
  if (!op.tensor->is_contiguous()) {
    if (IsTransposedContiguous(*op.tensor)) {
      flipped = true;
    } else {
      op.tensor = MakeContiguous(ctx.inputs[i], &ctx.pool);
    }
  }
  const Shape& s = op.tensor->shape();
  const int64_t n = s.ndim();
  for (int64_t d = 0; d < n - 2; ++d) op.batch.push_back(s[d].value());
  const int64_t r = s[n - 2].value(), c = s[n - 1].value();
  op.rows = transposed ? c : r;
  op.cols = transposed ? r : c;
  op.col_major = flipped != transposed;
  return op;
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t v : dims) p *= v;
  return p;
}

GemmPlan PlanGemm(const MatOperand& a, const MatOperand& b) {
  GemmPlan p;
  const size_t rank = std::max(a.batch.size(), b.batch.size());
  std::vector<int64_t> ab(rank - a.batch.size(), 1), bb(rank - b.batch.size(), 1);
  ab.insert(ab.end(), a.batch.begin(), a.batch.end());
  bb.insert(bb.end(), b.batch.begin(), b.batch.end());
  p.m = a.rows;
  p.k = a.cols;
  p.n = b.cols;
  p.a_rs = a.row_stride();
  p.a_cs = a.col_stride();
  p.b_rs = b.row_stride();
  p.b_cs = b.col_stride();
  if (Product(bb) == 1 && !a.col_major) {
    p.m *= Product(ab);  // one tall product
  } else if (ab == bb) {
    p.batch = p.a_batch = p.b_batch = {Product(ab)};
  } else {
    p.a_batch = ab;
    p.b_batch = bb;
    for (size_t i = 0; i < rank; ++i) p.batch.push_back(std::max(ab[i], bb[i]));
  }
  return p;
}

GemmPlan PlanLinear(const Tensor& x, const Tensor& weight) {
  GemmPlan p;
  p.n = weight.shape()[0].value();
  p.k = weight.shape()[1].value();
  p.m = 1;
  for (int64_t d = 0; d + 1 < x.ndim(); ++d) p.m *= x.shape()[d].value();
  p.a_rs = p.k;
  p.a_cs = 1;
  p.b_rs = 1;  // B = weight^T, read in place
  p.b_cs = p.k;
  return p;
}

std::vector<int64_t> BatchOffsets(const std::vector<int64_t>& out, const std::vector<int64_t>& mine, int64_t matrix) {
  const int64_t total = Product(out);
  std::vector<int64_t> offsets(static_cast<size_t>(std::max<int64_t>(total, 1)), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i, off = 0, stride = matrix;
    for (size_t d = out.size(); d-- > 0;) {
      const int64_t idx = rest % out[d];
      rest /= out[d];
      if (mine[d] != 1) off += idx * stride;
      stride *= mine[d];
    }
    offsets[static_cast<size_t>(i)] = off;
  }
  return offsets;
}

}  // namespace oneflow
