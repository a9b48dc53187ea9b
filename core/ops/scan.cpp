// Scans along one dim: cumsum, cumprod, and their gradient ops cumsum_backward (a reversed cumsum)
// and cumprod_backward (O(n) per line, right where the line holds zeros).
//
// Every kernel walks the lines of x along `dim` (outer x n x inner, contiguous): the lines are split
// over the thread pool in groups of `inner` neighbours, which are scanned together so that the inner
// loop is contiguous (a scan over the last dim is one line at a time).
#include <algorithm>
#include <cmath>

#include "core/op/dispatch.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/reductions.h"
#include "core/ops/register.h"

namespace oneflow {
namespace ops {
namespace {
const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }
}  // namespace

TensorPtr Cumsum(const TensorPtr& x, int64_t dim) {
  static const OpDef& op = Op("cumsum");
  return Apply1(op, {x}, {{"dim", dim}});
}
TensorPtr Cumprod(const TensorPtr& x, int64_t dim) {
  static const OpDef& op = Op("cumprod");
  return Apply1(op, {x}, {{"dim", dim}});
}

}  // namespace ops

namespace {

constexpr int64_t kGrain = int64_t{1} << 15;

// A 0-d tensor scans as one element along dim 0 (or -1), as in PyTorch.
int64_t ScanDim(const Shape& shape, int64_t dim) { return NormalizeAxis(dim, std::max<int64_t>(shape.ndim(), 1), "dim"); }

std::vector<TensorMeta> InferScan(std::span<const TensorMeta> in, const Attrs& attrs) {
  ScanDim(in[0].shape, attrs.Int("dim"));
  const Symbol<DType> dtype = in[0].dtype->is_floating_point() ? in[0].dtype : DType::Int64();
  return {{dtype, in[0].shape, in[0].device}};
}

// (dy) or (x, y, dy), all of x's shape and floating dtype.
std::vector<TensorMeta> InferScanBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta& x = in[0];
  OF_CHECK(x.dtype->is_floating_point()) << "x must be floating point, got " << x.dtype;
  ScanDim(x.shape, attrs.Int("dim"));
  for (size_t i = 1; i < in.size(); ++i) {
    OF_CHECK(in[i].shape == x.shape && in[i].dtype == x.dtype)
        << "input " << i << " is " << in[i].dtype << " " << in[i].shape << ", expected " << x.dtype << " " << x.shape;
  }
  return {x};
}

struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};
Lines LinesOf(const Shape& shape, int64_t dim) {
  Lines l;
  for (int64_t d = 0; d < shape.ndim(); ++d) (d < dim ? l.outer : d == dim ? l.n : l.inner) *= shape[d].value();
  return l;
}

// Calls fn(base, n, inner) for each block of `inner` neighbouring lines: element k of line j of the
// block is at base + k * inner + j.
template <typename Fn>
void ForEachBlock(const Tensor& x, const Attrs& attrs, ThreadPool& pool, Fn&& fn) {
  const Lines l = LinesOf(x.shape(), ScanDim(x.shape(), attrs.Int("dim")));
  if (l.outer * l.n * l.inner == 0) return;
  pool.ParallelFor(l.outer, std::max<int64_t>(1, kGrain / (l.n * l.inner)), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) fn(o * l.n * l.inner, l.n, l.inner);
  });
}

// Integer scans wrap around (Note [Wrapping integer arithmetic]): they run in uint64.
template <typename T>
using ScanAcc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <typename T>
ScanAcc<T> Widen(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v;
  } else {
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  }
}

template <bool kProd>
void ScanKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic_v<T>) {
      using Out = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
      using Acc = ScanAcc<T>;
      const T* px = x.data<const T>();
      Out* py = ctx.out(0).data<Out>();
      ForEachBlock(x, ctx.attrs, ctx.pool, [&](int64_t base, int64_t n, int64_t inner) {
        if (inner == 1) {  // one line: a scalar accumulator
          Acc a(kProd ? 1 : 0);
          for (int64_t k = 0; k < n; ++k) {
            a = kProd ? a * Widen(px[base + k]) : a + Widen(px[base + k]);
            py[base + k] = static_cast<Out>(a);
          }
          return;
        }
        std::vector<Acc> acc(static_cast<size_t>(inner), Acc(kProd ? 1 : 0));
        for (int64_t k = 0; k < n; ++k) {
          const T* xs = px + base + k * inner;
          Out* ys = py + base + k * inner;
          for (int64_t j = 0; j < inner; ++j) {
            Acc& a = acc[static_cast<size_t>(j)];
            a = kProd ? a * Widen(xs[j]) : a + Widen(xs[j]);
            ys[j] = static_cast<Out>(a);
          }
        }
      });
    }
  });
}

// dx[k] = sum over i >= k of dy[i].
void CumsumBackwardKernel(KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  VisitDType(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* pdy = dy.data<const T>();
      T* pdx = ctx.out(0).data<T>();
      ForEachBlock(dy, ctx.attrs, ctx.pool, [&](int64_t base, int64_t n, int64_t inner) {
        if (inner == 1) {
          double a = 0;
          for (int64_t k = n; k-- > 0;) {
            a += pdy[base + k];
            pdx[base + k] = static_cast<T>(a);
          }
          return;
        }
        std::vector<double> acc(static_cast<size_t>(inner), 0.0);
        for (int64_t k = n; k-- > 0;) {
          for (int64_t j = 0; j < inner; ++j) {
            acc[static_cast<size_t>(j)] += pdy[base + k * inner + j];
            pdx[base + k * inner + j] = static_cast<T>(acc[static_cast<size_t>(j)]);
          }
        }
      });
    }
  });
}

// dx[j] = sum over i >= j of dy[i] * prod(x[k] for k <= i, k != j). With z the first zero of the line:
// before z that is sum(dy[i] y[i], i >= j) / x[j]; at z, y[z-1] * sum(dy[i] prod(x[z+1..i]), i >= z);
// after z, 0 (the product holds x[z]).
void CumprodBackwardKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<const T>();
      const T* py = ctx.in(1).data<const T>();
      const T* pdy = ctx.in(2).data<const T>();
      T* pdx = ctx.out(0).data<T>();
      ForEachBlock(x, ctx.attrs, ctx.pool, [&](int64_t base, int64_t n, int64_t inner) {
        for (int64_t j = 0; j < inner; ++j) {
          const auto at = [&](int64_t k) { return base + k * inner + j; };
          int64_t z = 0;
          while (z < n && px[at(z)] != T(0)) ++z;
          for (int64_t k = z + 1; k < n; ++k) pdx[at(k)] = T(0);
          if (z < n) {
            double q = z > 0 ? static_cast<double>(py[at(z - 1)]) : 1.0, g = 0;
            for (int64_t i = z; i < n; ++i) {
              if (i > z) q *= px[at(i)];
              g += static_cast<double>(pdy[at(i)]) * q;
            }
            pdx[at(z)] = static_cast<T>(g);
          }
          double s = 0;  // sum over i >= k of dy[i] y[i]; y is 0 from z on
          for (int64_t k = z; k-- > 0;) {
            s += static_cast<double>(pdy[at(k)]) * py[at(k)];
            pdx[at(k)] = static_cast<T>(s / px[at(k)]);
          }
        }
      });
    }
  });
}

std::vector<TensorPtr> CumsumBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("cumsum_backward");
  return {Apply1(op, {ctx.grad_outputs[0]}, {{"dim", ctx.attrs.Int("dim")}})};
}
std::vector<TensorPtr> CumprodBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("cumprod_backward");
  return {Apply1(op, {ctx.inputs[0], ctx.outputs[0], ctx.grad_outputs[0]}, {{"dim", ctx.attrs.Int("dim")}})};
}

}  // namespace

void RegisterScanOps(OpRegistry& registry) {
  std::vector<DataType> types = kNumericTypes;
  types.insert(types.begin(), DataType::kBool);
  const AttrSpec dim{"dim", int64_t{0}, true};
  registry.Register(OpDef{.name = "cumsum",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {dim},
                          .infer = InferScan,
                          .backward = CumsumBackward,
                          .kernels = CpuKernels(types, ScanKernel<false>)});
  registry.Register(OpDef{.name = "cumprod",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {dim},
                          .infer = InferScan,
                          .backward = CumprodBackward,
                          .kernels = CpuKernels(types, ScanKernel<true>)});
  // Gradient ops (not differentiable themselves).
  registry.Register(OpDef{.name = "cumsum_backward",
                          .inputs = {"dy"},
                          .outputs = {"dx"},
                          .attrs = {dim},
                          .infer = InferScanBackward,
                          .kernels = CpuKernels(kFloatingTypes, CumsumBackwardKernel)});
  registry.Register(OpDef{.name = "cumprod_backward",
                          .inputs = {"x", "y", "dy"},
                          .outputs = {"dx"},
                          .attrs = {dim},
                          .infer = InferScanBackward,
                          .kernels = CpuKernels(kFloatingTypes, CumprodBackwardKernel)});
}

}  // namespace oneflow
