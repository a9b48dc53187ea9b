// Indexing ops: embedding, gather, index_select, scatter, scatter_add, masked_fill, one_hot, nonzero, and the
// gradient ops embedding_backward and index_select_backward.
//
// Kernels see indices as int64 and check every one against its range before writing anything (so a
// failed call leaves no half-written output behind and never touches memory outside its tensors).
// Row copies move bytes (any dtype); row sums (the gradients) are partitioned by destination row: a
// counting sort groups the positions of each index value, then each row sums its own sources in
// order, so the result is race-free and independent of the thread count.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include <fmt/ranges.h>

#include "core/op/dispatch.h"
#include "core/ops/cpu/element_bits.h"
#include "core/ops/cpu/elementwise_loops.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/indexing.h"
#include "core/ops/ops.h"
#include "core/ops/register.h"
#include "core/tensor/factory.h"

namespace oneflow {
namespace {

constexpr int64_t kGrain = int64_t{1} << 15;  // elements per parallel chunk

// "[3]" for a 1-D position, "[1, 2]" for a position in a tensor of more dims, "" for 0-d.
std::string PositionString(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(static_cast<size_t>(shape.ndim()));
  for (int64_t d = shape.ndim() - 1; d >= 0; --d) {
    const int64_t size = shape[d].value();
    index[static_cast<size_t>(d)] = flat % size;
    flat /= size;
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

// InvalidArgument unless every element of `index` (int64, contiguous) lies in [0, size); `what`
// says what the range is ("the rows of weight (5, 3)").
void CheckIndices(const Tensor& index, std::string_view arg, int64_t size, std::string_view what) {
  const int64_t* p = index.data<const int64_t>();
  const int64_t n = index.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] >= 0 && p[i] < size) continue;
    OF_THROW(InvalidArgument) << arg << (index.ndim() == 0 ? "" : PositionString(i, index.shape())) << " is " << p[i]
                              << ", out of range for " << what << ": expected an index in [0, " << size << ")";
  }
}

void CheckInt64(const TensorMeta& m, std::string_view arg) {
  OF_CHECK(m.dtype == DType::Int64()) << arg << " must be int64, got " << m.dtype << " " << m.shape;
}
void CheckFloating(const TensorMeta& m, std::string_view arg) {
  OF_CHECK(m.dtype->is_floating_point()) << arg << " must be floating point, got " << m.dtype << " " << m.shape;
}
// Two dims that must agree where both are known (symbols are checked when the sizes arrive).
bool Compatible(Dim a, Dim b) { return !(a.is_known() && b.is_known()) || a == b; }

// ---- row copies and row sums ----------------------------------------------------------------------
// A tensor seen as (outer, rows, inner): the index selects along the middle dim.

// out[o, j, :] = src[o, index[j], :] for j in [0, n); any dtype (bytes).
void GatherRows(const Tensor& src, const int64_t* index, int64_t n, int64_t outer, int64_t rows, int64_t inner,
                const Tensor& out, ThreadPool& pool) {
  const size_t row_bytes = static_cast<size_t>(inner) * out.dtype()->bytes();
  const char* s = static_cast<const char*>(src.raw_data());
  char* o = static_cast<char*>(out.raw_data());
  if (row_bytes == 0) return;
  pool.ParallelFor(outer * n, std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t oi = r / n, j = r % n;
      std::memcpy(o + static_cast<size_t>(r) * row_bytes,
                  s + static_cast<size_t>(oi * rows + index[j]) * row_bytes, row_bytes);
    }
  });
}

// out[o, r, :] = sum of dy[o, j, :] over the j with index[j] == r, for r in [0, rows) other than
// `skip` (whose row is zero). Partitioned by destination row (see the file comment).
template <typename T>
void ScatterAddRows(const T* dy, const int64_t* index, int64_t n, int64_t outer, int64_t rows, int64_t inner,
                    int64_t skip, T* out, ThreadPool& pool) {
  // Counting sort of the positions by index value: positions[start[r] .. start[r + 1]) hold row r's.
  std::vector<int64_t> start(static_cast<size_t>(rows) + 1, 0);
  for (int64_t j = 0; j < n; ++j) {
    if (index[j] != skip) ++start[static_cast<size_t>(index[j]) + 1];
  }
  for (int64_t r = 0; r < rows; ++r) start[static_cast<size_t>(r) + 1] += start[static_cast<size_t>(r)];
  std::vector<int64_t> positions(static_cast<size_t>(start.back()));
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t j = 0; j < n; ++j) {
    if (index[j] != skip) positions[static_cast<size_t>(fill[static_cast<size_t>(index[j])]++)] = j;
  }
  // Work per destination row: its inner elements once, plus once per source row.
  const int64_t avg_sources = rows == 0 ? 0 : n / rows;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(inner * (avg_sources + 1), 1));
  pool.ParallelFor(outer * rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t dr = b; dr < e; ++dr) {
      const int64_t oi = dr / rows, r = dr % rows;
      T* __restrict o = out + dr * inner;
      std::fill(o, o + inner, T(0));
      for (int64_t k = start[static_cast<size_t>(r)]; k < start[static_cast<size_t>(r) + 1]; ++k) {
        const T* __restrict d = dy + (oi * n + positions[static_cast<size_t>(k)]) * inner;
        for (int64_t c = 0; c < inner; ++c) o[c] += d[c];
      }
    }
  });
}

template <typename Fn>
void VisitFloating(Symbol<DType> dtype, Fn&& fn) {
  if (dtype == DType::Float32()) {
    fn(float{});
  } else if (dtype == DType::Float64()) {
    fn(double{});
  } else {
    OF_THROW(Internal) << "no floating kernel for " << dtype;
  }
}

// ---- embedding ------------------------------------------------------------------------------------

std::string WeightRange(const Shape& weight) { return fmt::format("the rows of weight {}", weight.ToString()); }

void CheckPaddingIdx(int64_t padding_idx, Dim num) {
  OF_CHECK(!num.is_known() || padding_idx < num.value())
      << "padding_idx " << padding_idx << " is out of range for " << num
      << " embeddings: expected [0, " << num << "), or a negative value for none";
}

std::vector<TensorMeta> InferEmbedding(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta &weight = in[0], &indices = in[1];
  OF_CHECK(weight.shape.ndim() == 2) << "weight must be 2-D (num_embeddings, embedding_dim), got shape "
                                     << weight.shape;
  CheckFloating(weight, "weight");
  CheckInt64(indices, "indices");
  CheckPaddingIdx(attrs.Int("padding_idx"), weight.shape[0]);
  Shape out = indices.shape;
  out.push_back(weight.shape[1]);
  return {{weight.dtype, std::move(out), weight.device}};
}
void EmbeddingKernel(KernelContext& ctx) {
  const Tensor &weight = ctx.in(0), &indices = ctx.in(1);
  const int64_t num = weight.shape()[0].value(), dim = weight.shape()[1].value();
  CheckIndices(indices, "indices", num, WeightRange(weight.shape()));
  GatherRows(weight, indices.data<const int64_t>(), indices.numel(), 1, num, dim, ctx.out(0), ctx.pool);
}
std::vector<TensorPtr> EmbeddingBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("embedding_backward");
  return {Apply1(op, {ctx.grad_outputs[0], ctx.inputs[1]},
                 {{"num_weights", ctx.inputs[0]->shape()[0].raw()}, {"padding_idx", ctx.attrs.Int("padding_idx")}}),
          nullptr};
}

// embedding_backward(dy, indices): (num_weights, dim) with row r the sum of dy's rows whose index is r.
std::vector<TensorMeta> InferEmbeddingGrad(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta &dy = in[0], &indices = in[1];
  CheckFloating(dy, "dy");
  CheckInt64(indices, "indices");
  const Dim num = Dim::FromRaw(attrs.Int("num_weights"), "num_weights");
  CheckPaddingIdx(attrs.Int("padding_idx"), num);
  bool ok = dy.shape.ndim() == indices.shape.ndim() + 1;
  for (int64_t d = 0; ok && d < indices.shape.ndim(); ++d) ok = Compatible(dy.shape[d], indices.shape[d]);
  OF_CHECK(ok) << "dy of shape " << dy.shape << " does not match indices of shape " << indices.shape
               << " (expected indices' shape + (embedding_dim))";
  return {{dy.dtype, Shape{num, dy.shape[dy.shape.ndim() - 1]}, dy.device}};
}
void EmbeddingGradKernel(KernelContext& ctx) {
  const Tensor &dy = ctx.in(0), &indices = ctx.in(1), &out = ctx.out(0);
  const int64_t num = out.shape()[0].value(), dim = out.shape()[1].value();
  CheckIndices(indices, "indices", num, fmt::format("num_weights {}", num));
  const int64_t padding_idx = ctx.attrs.Int("padding_idx");
  VisitFloating(dy.dtype(), [&](auto tag) {
    using T = decltype(tag);
    ScatterAddRows(dy.data<const T>(), indices.data<const int64_t>(), indices.numel(), 1, num, dim,
                   padding_idx < 0 ? -1 : padding_idx, out.data<T>(), ctx.pool);
  });
}


// ---- gather, scatter, scatter_add ------------------------------------------------------------------
// The index, seen as (outer, len, inner) around `dim`, addresses two tensors: `a`, which the index
// values select along dim (x for gather, the output for scatter), and `b`, at the index's own
// positions (gather's output, scatter's src). Both are contiguous, with sizes >= the index's in every
// dim but dim. The offset tables hold each tensor's offset of every outer and inner position.

struct IndexPlan {
  int64_t outer = 1, len = 1, inner = 1;
  std::vector<int64_t> a_outer, a_inner, b_outer, b_inner;
  int64_t a_dim_stride = 0, b_dim_stride = 0;
};

// Offsets in a contiguous tensor of shape `shape` of the positions [0, count) of the row-major block
// of index dims [from, to).
std::vector<int64_t> BlockOffsets(const Shape& index, const Shape& shape, int64_t from, int64_t to) {
  const std::vector<int64_t> strides = ContiguousStrides(shape);
  std::vector<int64_t> out = {0};
  for (int64_t d = from; d < to; ++d) {
    const int64_t size = index[d].value(), stride = strides[static_cast<size_t>(d)];
    std::vector<int64_t> next;
    next.reserve(out.size() * static_cast<size_t>(size));
    for (int64_t base : out) {
      for (int64_t i = 0; i < size; ++i) next.push_back(base + i * stride);
    }
    out = std::move(next);
  }
  return out;
}

IndexPlan MakeIndexPlan(const Shape& index, int64_t dim, const Shape& a, const Shape& b) {
  IndexPlan p;
  for (int64_t d = 0; d < index.ndim(); ++d) {
    (d < dim ? p.outer : d == dim ? p.len : p.inner) *= index[d].value();
  }
  p.a_outer = BlockOffsets(index, a, 0, dim);
  p.a_inner = BlockOffsets(index, a, dim + 1, index.ndim());
  p.b_outer = BlockOffsets(index, b, 0, dim);
  p.b_inner = BlockOffsets(index, b, dim + 1, index.ndim());
  if (index.ndim() > 0) {
    p.a_dim_stride = ContiguousStrides(a)[static_cast<size_t>(dim)];
    p.b_dim_stride = ContiguousStrides(b)[static_cast<size_t>(dim)];
  }
  return p;
}

// Calls fn(a_offset, b_offset) for every index element. Parallel over the (outer, inner) lines: the
// elements of one line reach `a` only within that line (the index values move along dim alone), so a
// line's writes to `a` (scatter) are never raced, and duplicates apply in the index's order.
template <typename Fn>
void ForEachIndexed(const IndexPlan& p, const int64_t* index, ThreadPool& pool, const Fn& fn) {
  const int64_t lines = p.outer * p.inner;
  if (lines == 0 || p.len == 0) return;
  pool.ParallelFor(lines, std::max<int64_t>(1, kGrain / p.len), [&](int64_t begin, int64_t end) {
    for (int64_t l = begin; l < end;) {
      const int64_t o = l / p.inner, c0 = l % p.inner, c1 = std::min(p.inner, c0 + (end - l));
      for (int64_t j = 0; j < p.len; ++j) {
        const int64_t* idx = index + (o * p.len + j) * p.inner;
        const int64_t a_base = p.a_outer[static_cast<size_t>(o)];
        const int64_t b_base = p.b_outer[static_cast<size_t>(o)] + j * p.b_dim_stride;
        for (int64_t c = c0; c < c1; ++c) {
          fn(a_base + idx[c] * p.a_dim_stride + p.a_inner[static_cast<size_t>(c)],
             b_base + p.b_inner[static_cast<size_t>(c)]);
        }
      }
      l += c1 - c0;
    }
  });
}

// Checks the shared rules of gather and scatter: index int64 with x's rank, no larger than x in the
// dims but dim; returns dim made non-negative (0 for 0-d tensors, which PyTorch treats as (1,)).
int64_t CheckGatherArgs(const TensorMeta& x, const TensorMeta& index, int64_t raw_dim) {
  CheckInt64(index, "index");
  const int64_t nd = x.shape.ndim();
  const int64_t dim = NormalizeAxis(raw_dim, std::max<int64_t>(nd, 1), "dim");
  OF_CHECK(index.shape.ndim() == nd) << "index of shape " << index.shape << " must have as many dims as x of shape "
                                     << x.shape;
  for (int64_t d = 0; d < nd; ++d) {
    const Dim i = index.shape[d], s = x.shape[d];
    OF_CHECK(d == dim || !i.is_known() || !s.is_known() || i.value() <= s.value())
        << "index of shape " << index.shape << " is larger than x of shape " << x.shape << " at dim " << d
        << " (only dim " << dim << ", the indexed one, may be larger)";
  }
  return dim;
}
std::string DimRange(int64_t dim, const Shape& x) { return fmt::format("dim {} of x {}", dim, x.ToString()); }
int64_t DimSize(const Shape& x, int64_t dim) { return x.ndim() == 0 ? 1 : x[dim].value(); }

std::vector<TensorMeta> InferGather(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckGatherArgs(in[0], in[1], attrs.Int("dim"));
  return {{in[0].dtype, in[1].shape, in[0].device}};
}
void GatherKernel(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &index = ctx.in(1), &out = ctx.out(0);
  const int64_t dim = NormalizeAxis(ctx.attrs.Int("dim"), std::max<int64_t>(x.ndim(), 1), "dim");
  CheckIndices(index, "index", DimSize(x.shape(), dim), DimRange(dim, x.shape()));
  const IndexPlan plan = MakeIndexPlan(index.shape(), dim, x.shape(), out.shape());
  cpu::VisitBits(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    const U* px = x.data<const U>();
    U* po = out.data<U>();
    ForEachIndexed(plan, index.data<const int64_t>(), ctx.pool, [&](int64_t a, int64_t b) { po[b] = px[a]; });
  });
}
std::vector<TensorPtr> GatherBackward(const BackwardContext& ctx) {
  const int64_t dim = ctx.attrs.Int("dim");
  return {ops::ScatterAdd(ops::ZerosLike(ctx.inputs[0]), dim, ctx.inputs[1], ctx.grad_outputs[0]), nullptr};
}

std::vector<TensorMeta> InferScatter(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta &x = in[0], &index = in[1], &src = in[2];
  CheckGatherArgs(x, index, attrs.Int("dim"));
  OF_CHECK(src.dtype == x.dtype) << "src is " << src.dtype << " but x is " << x.dtype
                                 << "; they need one dtype (cast src first)";
  bool same = src.shape.ndim() == index.shape.ndim();
  for (int64_t d = 0; same && d < index.shape.ndim(); ++d) same = Compatible(src.shape[d], index.shape[d]);
  OF_CHECK(same) << "src of shape " << src.shape << " must have index's shape " << index.shape;
  return {{x.dtype, x.shape, x.device}};
}
template <bool kAdd>
void ScatterKernel(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &index = ctx.in(1), &src = ctx.in(2), &out = ctx.out(0);
  const int64_t dim = NormalizeAxis(ctx.attrs.Int("dim"), std::max<int64_t>(x.ndim(), 1), "dim");
  CheckIndices(index, "index", DimSize(x.shape(), dim), DimRange(dim, x.shape()));
  if (out.nbytes() > 0) std::memcpy(out.raw_data(), x.raw_data(), out.nbytes());
  const IndexPlan plan = MakeIndexPlan(index.shape(), dim, out.shape(), src.shape());
  const int64_t* pi = index.data<const int64_t>();
  if constexpr (kAdd) {
    VisitDType(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        const T* ps = src.data<const T>();
        T* po = out.data<T>();
        // Integers wrap (as PyTorch); computed unsigned, where wrapping is defined.
        using W = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>, std::type_identity<T>>::type;
        ForEachIndexed(plan, pi, ctx.pool, [&](int64_t a, int64_t b) {
          po[a] = static_cast<T>(static_cast<W>(static_cast<W>(po[a]) + static_cast<W>(ps[b])));
        });
      }
    });
  } else {
    cpu::VisitBits(x.dtype(), [&](auto tag) {
      using U = decltype(tag);
      const U* ps = src.data<const U>();
      U* po = out.data<U>();
      ForEachIndexed(plan, pi, ctx.pool, [&](int64_t a, int64_t b) { po[a] = ps[b]; });
    });
  }
}
// scatter: dx is dy with the written positions zeroed; dsrc reads dy where src was written.
template <bool kAdd>
std::vector<TensorPtr> ScatterBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  const int64_t dim = ctx.attrs.Int("dim");
  std::vector<TensorPtr> g(3);
  if (ctx.needs_input_grad[0]) g[0] = kAdd ? dy : ops::Scatter(dy, dim, ctx.inputs[1], ops::ZerosLike(ctx.inputs[2]));
  if (ctx.needs_input_grad[2]) g[2] = ops::Gather(dy, dim, ctx.inputs[1]);
  return g;
}

// ---- index_select ----------------------------------------------------------------------------------

struct Rows {
  int64_t outer, rows, inner;
};
// x seen as (outer, rows, inner) around dim.
Rows RowsOf(const Shape& x, int64_t dim) {
  Rows r{1, x[dim].value(), 1};
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (d < dim) r.outer *= x[d].value();
    if (d > dim) r.inner *= x[d].value();
  }
  return r;
}

std::vector<TensorMeta> InferIndexSelect(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta &x = in[0], &index = in[1];
  OF_CHECK(x.shape.ndim() > 0) << "x is 0-d; index_select needs a tensor with at least one dim";
  const int64_t dim = NormalizeAxis(attrs.Int("dim"), x.shape.ndim(), "dim");
  CheckInt64(index, "index");
  OF_CHECK(index.shape.ndim() <= 1) << "index must be 1-D (or 0-d), got shape " << index.shape;
  Shape out = x.shape;
  out[dim] = index.shape.ndim() == 0 ? Dim(1) : index.shape[0];
  return {{x.dtype, std::move(out), x.device}};
}
void IndexSelectKernel(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &index = ctx.in(1);
  const int64_t dim = NormalizeAxis(ctx.attrs.Int("dim"), x.ndim(), "dim");
  const Rows r = RowsOf(x.shape(), dim);
  CheckIndices(index, "index", r.rows, DimRange(dim, x.shape()));
  GatherRows(x, index.data<const int64_t>(), index.numel(), r.outer, r.rows, r.inner, ctx.out(0), ctx.pool);
}
std::vector<TensorPtr> IndexSelectBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("index_select_backward");
  const TensorPtr& x = ctx.inputs[0];
  const int64_t dim = NormalizeAxis(ctx.attrs.Int("dim"), x->ndim(), "dim");
  return {Apply1(op, {ctx.grad_outputs[0], ctx.inputs[1]}, {{"dim", dim}, {"size", x->shape()[dim].raw()}}), nullptr};
}

// index_select_backward(dy, index): dy's slices along dim summed into a tensor whose dim has `size`.
std::vector<TensorMeta> InferIndexSelectGrad(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta &dy = in[0], &index = in[1];
  CheckFloating(dy, "dy");
  CheckInt64(index, "index");
  OF_CHECK(dy.shape.ndim() > 0 && index.shape.ndim() <= 1) << "dy of shape " << dy.shape << " and index of shape "
                                                           << index.shape << " do not fit";
  const int64_t dim = NormalizeAxis(attrs.Int("dim"), dy.shape.ndim(), "dim");
  OF_CHECK(Compatible(dy.shape[dim], index.shape.ndim() == 0 ? Dim(1) : index.shape[0]))
      << "dy of shape " << dy.shape << " does not match index of shape " << index.shape << " at dim " << dim;
  Shape out = dy.shape;
  out[dim] = Dim::FromRaw(attrs.Int("size"), "size");
  return {{dy.dtype, std::move(out), dy.device}};
}
void IndexSelectGradKernel(KernelContext& ctx) {
  const Tensor &dy = ctx.in(0), &index = ctx.in(1), &out = ctx.out(0);
  const int64_t dim = NormalizeAxis(ctx.attrs.Int("dim"), out.ndim(), "dim");
  const Rows r = RowsOf(out.shape(), dim);
  CheckIndices(index, "index", r.rows, DimRange(dim, out.shape()));
  VisitFloating(dy.dtype(), [&](auto tag) {
    using T = decltype(tag);
    ScatterAddRows(dy.data<const T>(), index.data<const int64_t>(), index.numel(), r.outer, r.rows, r.inner, -1,
                   out.data<T>(), ctx.pool);
  });
}

// ---- masked_fill, one_hot ----------------------------------------------------------------------------

std::vector<TensorMeta> InferMaskedFill(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta &x = in[0], &mask = in[1];
  OF_CHECK(mask.dtype->is_bool()) << "mask must be bool, got " << mask.dtype << " " << mask.shape;
  CheckRepresentable(attrs.Float("value"), x.dtype, "value");
  return {{x.dtype, BroadcastShapes(x.shape, mask.shape), x.device}};
}
void MaskedFillKernel(KernelContext& ctx) {
  VisitDType(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = cpu::ComputeType<T>;
    const C value = cpu::Convert<C>(ctx.attrs.Float("value"));
    cpu::ElementwiseLoop<T, T, bool>(ctx.pool, cpu::kSimpleGrain, ctx.out(0), {&ctx.in(0), &ctx.in(1)},
                                     [value](C v, bool m) { return m ? value : v; });
  });
}
std::vector<TensorPtr> MaskedFillBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  return {ops::SumToShape(ops::Where(ctx.inputs[1], ops::ScalarLike(dy, 0.0), dy), ctx.inputs[0]->shape()), nullptr};
}

std::vector<TensorMeta> InferOneHot(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckInt64(in[0], "indices");
  const int64_t classes = attrs.Int("num_classes");
  OF_CHECK(classes >= 1) << "num_classes is " << classes
                         << "; it must be >= 1 (PyTorch's -1, the largest index + 1, would make the result's "
                            "shape depend on the data, which a graph cannot know when it is built)";
  Shape out = in[0].shape;
  out.push_back(Dim(classes));
  return {{DType::Int64(), std::move(out), in[0].device}};
}
void OneHotKernel(KernelContext& ctx) {
  const Tensor &indices = ctx.in(0), &out = ctx.out(0);
  const int64_t classes = ctx.attrs.Int("num_classes");
  CheckIndices(indices, "indices", classes, fmt::format("num_classes {}", classes));
  const int64_t* pi = indices.data<const int64_t>();
  int64_t* po = out.data<int64_t>();
  ctx.pool.ParallelFor(indices.numel(), std::max<int64_t>(1, kGrain / classes), [&](int64_t b, int64_t e) {
    std::fill(po + b * classes, po + e * classes, int64_t{0});
    for (int64_t i = b; i < e; ++i) po[i * classes + pi[i]] = 1;
  });
}


// ---- nonzero -------------------------------------------------------------------------------------
// The result's size depends on the data, which op inference cannot see: ops::Nonzero counts first (an
// eager sum) and passes the count as an attribute, which the kernel checks against the data.

std::vector<TensorMeta> InferNonzero(std::span<const TensorMeta> in, const Attrs& attrs) {
  const int64_t count = attrs.Int("count");
  OF_CHECK(count >= 0) << "count is " << count << "; it must be >= 0";
  return {{DType::Int64(), Shape{Dim(count), Dim(in[0].shape.ndim())}, in[0].device}};
}
void NonzeroKernel(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &out = ctx.out(0);
  const int64_t nd = x.ndim(), n = x.numel(), count = ctx.attrs.Int("count");
  const Shape& shape = x.shape();
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<const T>();
    int64_t found = 0;
    for (int64_t i = 0; i < n; ++i) found += cpu::Convert<bool>(px[i]);
    OF_CHECK(found == count) << "x has " << found << " non-zero elements but count is " << count;
    int64_t* po = out.data<int64_t>();
    std::vector<int64_t> index(static_cast<size_t>(nd), 0);
    for (int64_t i = 0; i < n; ++i) {
      if (cpu::Convert<bool>(px[i])) {
        std::copy(index.begin(), index.end(), po);
        po += nd;
      }
      for (int64_t d = nd - 1; d >= 0; --d) {  // the next row-major position
        if (++index[static_cast<size_t>(d)] < shape[d].value()) break;
        index[static_cast<size_t>(d)] = 0;
      }
    }
  });
}

}  // namespace

namespace ops {

TensorPtr Embedding(const TensorPtr& weight, const TensorPtr& indices, int64_t padding_idx) {
  static const OpDef& op = OpRegistry::Global().Get("embedding");
  return Apply1(op, {weight, indices}, {{"padding_idx", padding_idx}});
}
TensorPtr Gather(const TensorPtr& x, int64_t dim, const TensorPtr& index) {
  static const OpDef& op = OpRegistry::Global().Get("gather");
  return Apply1(op, {x, index}, {{"dim", dim}});
}
TensorPtr IndexSelect(const TensorPtr& x, int64_t dim, const TensorPtr& index) {
  static const OpDef& op = OpRegistry::Global().Get("index_select");
  return Apply1(op, {x, index}, {{"dim", dim}});
}
TensorPtr Scatter(const TensorPtr& x, int64_t dim, const TensorPtr& index, const TensorPtr& src) {
  static const OpDef& op = OpRegistry::Global().Get("scatter");
  return Apply1(op, {x, index, src}, {{"dim", dim}});
}
TensorPtr ScatterAdd(const TensorPtr& x, int64_t dim, const TensorPtr& index, const TensorPtr& src) {
  static const OpDef& op = OpRegistry::Global().Get("scatter_add");
  return Apply1(op, {x, index, src}, {{"dim", dim}});
}
TensorPtr MaskedFill(const TensorPtr& x, const TensorPtr& mask, double value) {
  static const OpDef& op = OpRegistry::Global().Get("masked_fill");
  return Apply1(op, {x, mask}, {{"value", value}});
}
TensorPtr Nonzero(const TensorPtr& x) {
  static const OpDef& op = OpRegistry::Global().Get("nonzero");
  OF_CHECK(x) << "nonzero: input 'x' is null";
  OF_CHECK(OpInterceptor::Current() == nullptr)
      << "nonzero: the number of rows of its result depends on x's values, which a graph being built does not "
         "have (no graph value has a data-dependent size); call nonzero eagerly, outside the graph build";
  const TensorPtr count = Sum(NeScalar(x, 0.0));
  return Apply1(op, {x}, {{"count", count->data<const int64_t>()[0]}});
}
TensorPtr OneHot(const TensorPtr& indices, int64_t num_classes) {
  static const OpDef& op = OpRegistry::Global().Get("one_hot");
  return Apply1(op, {indices}, {{"num_classes", num_classes}});
}

}  // namespace ops

// core/ops/indexing_layout.cpp's and indexing_sort.cpp's ops, registered with this family's.
void RegisterIndexingLayoutOps(OpRegistry& registry);
void RegisterIndexingSortOps(OpRegistry& registry);

void RegisterIndexingOps(OpRegistry& registry) {
  RegisterIndexingLayoutOps(registry);
  RegisterIndexingSortOps(registry);
  registry.Register(OpDef{.name = "embedding",
                          .inputs = {"weight", "indices"},
                          .outputs = {"y"},
                          .attrs = {{"padding_idx", int64_t{-1}}},
                          .infer = InferEmbedding,
                          .backward = EmbeddingBackward,
                          .kernels = CpuKernels(kFloatingTypes, EmbeddingKernel)});
  // The gradient op (not differentiable itself); num_weights is a Dim encoding (a graph may not know it).
  registry.Register(OpDef{.name = "embedding_backward",
                          .inputs = {"dy", "indices"},
                          .outputs = {"dweight"},
                          .attrs = {{"num_weights", int64_t{0}, true}, {"padding_idx", int64_t{-1}}},
                          .infer = InferEmbeddingGrad,
                          .kernels = CpuKernels(kFloatingTypes, EmbeddingGradKernel)});
  registry.Register(OpDef{.name = "gather",
                          .inputs = {"x", "index"},
                          .outputs = {"y"},
                          .attrs = {{"dim", int64_t{0}, true}},
                          .infer = InferGather,
                          .backward = GatherBackward,
                          .kernels = CpuKernels(kAllTypes, GatherKernel)});
  registry.Register(OpDef{.name = "index_select",
                          .inputs = {"x", "index"},
                          .outputs = {"y"},
                          .attrs = {{"dim", int64_t{0}, true}},
                          .infer = InferIndexSelect,
                          .backward = IndexSelectBackward,
                          .kernels = CpuKernels(kAllTypes, IndexSelectKernel)});
  // size is a Dim encoding, as embedding_backward's num_weights.
  registry.Register(OpDef{.name = "index_select_backward",
                          .inputs = {"dy", "index"},
                          .outputs = {"dx"},
                          .attrs = {{"dim", int64_t{0}, true}, {"size", int64_t{0}, true}},
                          .infer = InferIndexSelectGrad,
                          .kernels = CpuKernels(kFloatingTypes, IndexSelectGradKernel)});
  registry.Register(OpDef{.name = "scatter",
                          .inputs = {"x", "index", "src"},
                          .outputs = {"y"},
                          .attrs = {{"dim", int64_t{0}, true}},
                          .infer = InferScatter,
                          .backward = ScatterBackward<false>,
                          .kernels = CpuKernels(kAllTypes, ScatterKernel<false>)});
  registry.Register(OpDef{.name = "scatter_add",
                          .inputs = {"x", "index", "src"},
                          .outputs = {"y"},
                          .attrs = {{"dim", int64_t{0}, true}},
                          .infer = InferScatter,
                          .backward = ScatterBackward<true>,
                          .kernels = CpuKernels(kNumericTypes, ScatterKernel<true>)});
  // x and mask are read at their strides, broadcast to the result by the elementwise loop.
  registry.Register(OpDef{.name = "masked_fill",
                          .inputs = {"x", "mask"},
                          .outputs = {"y"},
                          .attrs = {{"value", 0.0, true}},
                          .infer = InferMaskedFill,
                          .backward = MaskedFillBackward,
                          .kernels = CpuKernels(kAllTypes, MaskedFillKernel),
                          .strided_inputs = true});
  // count: the number of non-zero elements, which ops::Nonzero computes first (the kernel checks it).
  registry.Register(OpDef{.name = "nonzero",
                          .inputs = {"x"},
                          .outputs = {"indices"},
                          .attrs = {{"count", int64_t{0}, true}},
                          .infer = InferNonzero,
                          .kernels = CpuKernels(kAllTypes, NonzeroKernel)});
  registry.Register(OpDef{.name = "one_hot",
                          .inputs = {"indices"},
                          .outputs = {"y"},
                          .attrs = {{"num_classes", int64_t{0}, true}},
                          .infer = InferOneHot,
                          .kernels = CpuKernels({DataType::kInt64}, OneHotKernel)});
}

}  // namespace oneflow
