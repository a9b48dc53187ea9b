// Indexing ops: embedding and its gradient op embedding_backward.
//
// Kernels see indices as int64 and check every one against its range before writing anything (so a
// failed call leaves no half-written output behind and never touches memory outside its tensors).
// Row copies move bytes (any dtype); row sums (the gradients) are partitioned by destination row: a
// counting sort groups the positions of each index value, then each row sums its own sources in
// order, so the result is race-free and independent of the thread count.
#include <algorithm>
#include <cstring>

#include <fmt/ranges.h>

#include "core/op/dispatch.h"
#include "core/ops/indexing.h"
#include "core/ops/ops.h"
#include "core/ops/register.h"

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

}  // namespace

namespace ops {

TensorPtr Embedding(const TensorPtr& weight, const TensorPtr& indices, int64_t padding_idx) {
  static const OpDef& op = OpRegistry::Global().Get("embedding");
  return Apply1(op, {weight, indices}, {{"padding_idx", padding_idx}});
}

}  // namespace ops

void RegisterIndexingOps(OpRegistry& registry) {
  const auto cpu = [](const std::vector<DataType>& types, KernelFn fn) {
    return std::vector<KernelDef>{{DeviceType::kCPU, types, fn}};
  };
  registry.Register(OpDef{.name = "embedding", .inputs = {"weight", "indices"}, .outputs = {"y"},
                          .attrs = {{"padding_idx", int64_t{-1}}}, .infer = InferEmbedding,
                          .backward = EmbeddingBackward, .kernels = cpu(kFloatingTypes, EmbeddingKernel)});
  // The gradient op (not differentiable itself); num_weights is a Dim encoding (a graph may not know it).
  registry.Register(OpDef{.name = "embedding_backward", .inputs = {"dy", "indices"}, .outputs = {"dweight"},
                          .attrs = {{"num_weights", int64_t{0}, true}, {"padding_idx", int64_t{-1}}},
                          .infer = InferEmbeddingGrad, .kernels = cpu(kFloatingTypes, EmbeddingGradKernel)});
}

}  // namespace oneflow
