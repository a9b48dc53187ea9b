// Ordering ops of the indexing family: argmin, sort and topk (values and int64 indices).
//
// Each works on the lines of x along dim (x seen as (outer, n, inner)). NaN orders as PyTorch's: it
// is larger than every number, so an ascending sort puts NaNs last and a descending one first, topk
// with largest takes them first; argmin, like argmax here, returns the first NaN when a line has one.
// sort is stable; topk breaks ties by the lower index, so both are deterministic.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/op/dispatch.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/indexing.h"
#include "core/ops/ops.h"
#include "core/ops/register.h"

namespace oneflow {
namespace {

constexpr int64_t kGrain = int64_t{1} << 15;

template <typename T>
bool IsNan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}
// a before b in ascending order, NaN largest (a strict weak order: NaNs are equivalent).
template <typename T>
bool Less(T a, T b) {
  return !IsNan(a) && (IsNan(b) || a < b);
}

struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};
// x (0-d seen as (1,)) as (outer, n, inner) around dim.
Lines LinesOf(const Shape& s, int64_t dim) {
  Lines l;
  for (int64_t d = 0; d < s.ndim(); ++d) {
    (d < dim ? l.outer : d == dim ? l.n : l.inner) *= s[d].value();
  }
  return l;
}
int64_t NormalizeDim(int64_t dim, int64_t ndim) { return NormalizeAxis(dim, std::max<int64_t>(ndim, 1), "dim"); }

// ---- argmin --------------------------------------------------------------------------------------

std::vector<TensorMeta> InferArgmin(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  const std::vector<int64_t> dims = {attrs.Int("dim")};
  const Shape out = ReduceShape(s, dims, attrs.Bool("keepdim"));
  if (s.ndim() > 0) {
    const int64_t d = NormalizeAxis(attrs.Int("dim"), s.ndim(), "dim");
    OF_CHECK(s[d] != 0) << "cannot take argmin over dim " << d << " of size 0 (input shape " << s << ")";
  }
  return {{DType::Int64(), out, in[0].device}};
}
void ArgminKernel(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &out = ctx.out(0);
  const Lines l = LinesOf(x.shape(), NormalizeDim(ctx.attrs.Int("dim"), x.ndim()));
  constexpr int64_t kBlock = 256;  // columns of one task, scanned a row at a time (contiguous reads)
  const int64_t blocks = (l.inner + kBlock - 1) / kBlock;
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      const T* px = x.data<const T>();
      int64_t* po = out.data<int64_t>();
      ctx.pool.ParallelFor(l.outer * blocks, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, l.n * std::min(l.inner, kBlock))),
                           [&](int64_t b, int64_t e) {
        T best[kBlock];
        for (int64_t t = b; t < e; ++t) {
          const int64_t o = t / blocks, c0 = (t % blocks) * kBlock, c1 = std::min(l.inner, c0 + kBlock);
          const T* base = px + o * l.n * l.inner;
          int64_t* dst = po + o * l.inner;
          for (int64_t c = c0; c < c1; ++c) {
            best[c - c0] = base[c];
            dst[c] = 0;
          }
          for (int64_t k = 1; k < l.n; ++k) {
            const T* row = base + k * l.inner;
            for (int64_t c = c0; c < c1; ++c) {
              T& m = best[c - c0];
              // The first NaN wins and stays; otherwise a strictly smaller value.
              if (!IsNan(m) && (IsNan(row[c]) || row[c] < m)) {
                m = row[c];
                dst[c] = k;
              }
            }
          }
        }
      });
    }
  });
}

// ---- sort, topk ----------------------------------------------------------------------------------

// Sorts (or, with k < n, selects the first k of) every line; writes values and indices, whose
// lines have `k` elements. descending: the order of Less reversed, NaN first.
template <typename T>
void SortLines(const Tensor& x, int64_t dim, int64_t k, bool descending, bool stable, const Tensor& values,
               const Tensor& indices, ThreadPool& pool) {
  const Lines l = LinesOf(x.shape(), dim);
  const T* px = x.data<const T>();
  T* pv = values.data<T>();
  int64_t* pi = indices.data<int64_t>();
  if (l.outer * l.inner == 0 || k == 0) return;
  const int64_t work = std::max<int64_t>(1, l.n * static_cast<int64_t>(std::log2(static_cast<double>(l.n) + 1) + 1));
  pool.ParallelFor(l.outer * l.inner, std::max<int64_t>(1, kGrain / work), [&](int64_t b, int64_t e) {
    std::vector<T> line(static_cast<size_t>(l.n));
    std::vector<int64_t> order(static_cast<size_t>(l.n));
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / l.inner, c = t % l.inner;
      const T* src = px + o * l.n * l.inner + c;
      for (int64_t j = 0; j < l.n; ++j) line[static_cast<size_t>(j)] = src[j * l.inner];
      std::iota(order.begin(), order.end(), int64_t{0});
      const auto before = [&](int64_t i, int64_t j) {
        const T a = line[static_cast<size_t>(i)], v = line[static_cast<size_t>(j)];
        return descending ? Less(v, a) : Less(a, v);
      };
      if (stable) {
        std::stable_sort(order.begin(), order.end(), before);
      } else {
        // Ties by the lower index: the same result as a stable sort's first k.
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t i, int64_t j) {
          return before(i, j) || (!before(j, i) && i < j);
        });
      }
      const int64_t out_base = o * k * l.inner + c;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t src_j = order[static_cast<size_t>(j)];
        pv[out_base + j * l.inner] = line[static_cast<size_t>(src_j)];
        pi[out_base + j * l.inner] = src_j;
      }
    }
  });
}

std::vector<TensorMeta> InferSort(std::span<const TensorMeta> in, const Attrs& attrs) {
  NormalizeDim(attrs.Int("dim"), in[0].shape.ndim());
  OF_CHECK(!in[0].dtype->is_bool()) << "x is bool, which sort does not take (cast it first)";
  return {in[0], {DType::Int64(), in[0].shape, in[0].device}};
}
void SortKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const int64_t dim = NormalizeDim(ctx.attrs.Int("dim"), x.ndim());
  const int64_t n = x.ndim() == 0 ? 1 : x.shape()[dim].value();
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      SortLines<T>(x, dim, n, ctx.attrs.Bool("descending"), true, ctx.out(0), ctx.out(1), ctx.pool);
    }
  });
}

std::vector<TensorMeta> InferTopk(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  const int64_t dim = NormalizeDim(attrs.Int("dim"), s.ndim());
  OF_CHECK(!in[0].dtype->is_bool()) << "x is bool, which topk does not take (cast it first)";
  const int64_t k = attrs.Int("k");
  const Dim n = s.ndim() == 0 ? Dim(1) : s[dim];
  OF_CHECK(k >= 0 && (!n.is_known() || k <= n.value()))
      << "k " << k << " is out of range for dim " << dim << " of x " << s << ": expected [0, " << n << "]";
  Shape out = s;
  if (s.ndim() > 0) out[dim] = Dim(k);
  return {{in[0].dtype, out, in[0].device}, {DType::Int64(), out, in[0].device}};
}
void TopkKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const int64_t dim = NormalizeDim(ctx.attrs.Int("dim"), x.ndim());
  // (Inference checks k where the size is known; a graph may learn it only here.)
  const int64_t n = x.ndim() == 0 ? 1 : x.shape()[dim].value();
  OF_CHECK(ctx.attrs.Int("k") <= n) << "k " << ctx.attrs.Int("k") << " is out of range for dim " << dim << " of x "
                                    << x.shape() << ": expected [0, " << n << "]";
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      SortLines<T>(x, dim, ctx.attrs.Int("k"), ctx.attrs.Bool("largest"), false, ctx.out(0), ctx.out(1), ctx.pool);
    }
  });
}

// The values' gradient goes back to where each value came from; the indices have none.
std::vector<TensorPtr> SortBackward(const BackwardContext& ctx) {
  const TensorPtr& dv = ctx.grad_outputs[0];
  if (!dv) return {nullptr};
  const TensorPtr& x = ctx.inputs[0];
  const int64_t dim = ctx.attrs.Int("dim");
  return {ops::ScatterAdd(ops::ZerosLike(x), dim, ctx.outputs[1], dv)};
}

}  // namespace

namespace ops {

TensorPtr Argmin(const TensorPtr& x, int64_t dim, bool keepdim) {
  static const OpDef& op = OpRegistry::Global().Get("argmin");
  return Apply1(op, {x}, {{"dim", dim}, {"keepdim", keepdim}});
}
SortResult Sort(const TensorPtr& x, int64_t dim, bool descending) {
  static const OpDef& op = OpRegistry::Global().Get("sort");
  std::vector<TensorPtr> out = Apply(op, {x}, {{"dim", dim}, {"descending", descending}});
  return {std::move(out[0]), std::move(out[1])};
}
SortResult Topk(const TensorPtr& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  static const OpDef& op = OpRegistry::Global().Get("topk");
  std::vector<TensorPtr> out = Apply(op, {x}, {{"k", k}, {"dim", dim}, {"largest", largest}, {"sorted", sorted}});
  return {std::move(out[0]), std::move(out[1])};
}

}  // namespace ops

void RegisterIndexingSortOps(OpRegistry& registry) {
  registry.Register(OpDef{.name = "argmin",
                          .inputs = {"x"},
                          .outputs = {"index"},
                          .attrs = {{"dim", int64_t{0}, true}, {"keepdim", false}},
                          .infer = InferArgmin,
                          .kernels = CpuKernels(kNumericTypes, ArgminKernel)});
  registry.Register(OpDef{.name = "sort",
                          .inputs = {"x"},
                          .outputs = {"values", "indices"},
                          .attrs = {{"dim", int64_t{-1}}, {"descending", false}},
                          .infer = InferSort,
                          .backward = SortBackward,
                          .kernels = CpuKernels(kNumericTypes, SortKernel)});
  // sorted is accepted for PyTorch's signature; the values always come sorted.
  registry.Register(OpDef{.name = "topk",
                          .inputs = {"x"},
                          .outputs = {"values", "indices"},
                          .attrs = {{"k", int64_t{0}, true}, {"dim", int64_t{-1}}, {"largest", true}, {"sorted", true}},
                          .infer = InferTopk,
                          .backward = SortBackward,
                          .kernels = CpuKernels(kNumericTypes, TopkKernel)});
}

}  // namespace oneflow
