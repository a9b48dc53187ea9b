// Reductions: sum, mean, max, min, argmax, var, std, sum_to_shape, and the ops that are their
// gradients (broadcast_like, max_backward, var_backward).
//
// Every reduction runs on one engine (RunReduce): the input's dims are collapsed into groups (size-1
// dims dropped, neighbours adjacent in memory with the same reduced/kept flag merged), and the
// innermost group decides the loop: reduced -> each output sums contiguous runs ("rows": softmax-like
// and full reductions), kept -> outputs are columns updated a row at a time ("columns": bias
// gradients (N, C) -> (C)). (N, C, H, W) over N, H, W collapses to rows of H*W per channel. Inputs may
// have any strides. Few outputs with a large reduction split the reduction into parts whose number
// depends only on the sizes, so results do not depend on the thread count. The engine and the shared
// reducers are in core/ops/cpu/reduce_loops.h.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/op/dispatch.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/cpu/reduce_loops.h"
#include "core/ops/ops.h"
#include "core/ops/register.h"

namespace oneflow {
namespace ops {
namespace {
const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }
}  // namespace

TensorPtr Sum(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpDef& op = Op("sum");
  return Apply1(op, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}
TensorPtr Mean(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpDef& op = Op("mean");
  return Apply1(op, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}
TensorPtr Max(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpDef& op = Op("max");
  return Apply1(op, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}
TensorPtr Min(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpDef& op = Op("min");
  return Apply1(op, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}
TensorPtr Argmax(const TensorPtr& x, int64_t dim, bool keepdim) {
  static const OpDef& op = Op("argmax");
  return Apply1(op, {x}, {{"dim", dim}, {"keepdim", keepdim}});
}
TensorPtr Var(const TensorPtr& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  static const OpDef& op = Op("var");
  return Apply1(op, {x}, {{"dims", dims}, {"correction", correction}, {"keepdim", keepdim}});
}
TensorPtr Std(const TensorPtr& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  static const OpDef& op = Op("std");
  return Apply1(op, {x}, {{"dims", dims}, {"correction", correction}, {"keepdim", keepdim}});
}
TensorPtr SumToShape(const TensorPtr& x, const Shape& shape) {
  static const OpDef& op = Op("sum_to_shape");
  if (x && x->shape() == shape) return x;
  const auto raw = shape.raw();
  return Apply1(op, {x}, {{"shape", std::vector<int64_t>(raw.begin(), raw.end())}});
}

}  // namespace ops

namespace {

using namespace cpu::reduce;

// Index of the first maximum (the first NaN if any).
template <typename T>
struct ArgmaxReducer {
  struct Acc {
    T value;
    int64_t index;
  };
  Acc Init(int64_t) const { return {T(0), -1}; }
  void Step(Acc& a, T v, int64_t i) const {
    if (a.index < 0 || (!IsNan(a.value) && (v > a.value || IsNan(v)))) a = {v, i};
  }
  void Merge(Acc& a, const Acc& b) const {
    if (b.index >= 0) Step(a, b.value, b.index);
  }
  void Run(Acc& a, const T* p, int64_t n, int64_t stride, int64_t i0) const {
    for (int64_t k = 0; k < n; ++k) Step(a, p[k * stride], i0 + k);
  }
  int64_t Finish(const Acc& a, int64_t) const { return a.index; }
};

// Sum of squared deviations from a per-output mean, divided by `denominator` (then square-rooted).
template <typename T>
struct SquaredDeviationReducer {
  struct Acc {
    double sum;
    double mean;
  };
  const double* means;
  double denominator;
  bool sqrt;
  Acc Init(int64_t o) const { return {0.0, means[o]}; }
  void Step(Acc& a, T v, int64_t) const {
    const double d = static_cast<double>(v) - a.mean;
    a.sum += d * d;
  }
  void Merge(Acc& a, const Acc& b) const { a.sum += b.sum; }
  void Run(Acc& a, const T* p, int64_t n, int64_t stride, int64_t) const {
    for (int64_t k = 0; k < n; ++k) Step(a, p[k * stride], 0);
  }
  double Finish(const Acc& a, int64_t) const {
    const double v = a.sum / denominator;
    return sqrt ? std::sqrt(v) : v;
  }
};

// Elements equal to the per-output value (ties of a max/min).
template <typename T>
struct CountEqualReducer {
  struct Acc {
    int64_t count;
    T value;
  };
  const T* values;
  Acc Init(int64_t o) const { return {0, values[o]}; }
  void Step(Acc& a, T v, int64_t) const { a.count += v == a.value; }
  void Merge(Acc& a, const Acc& b) const { a.count += b.count; }
  void Run(Acc& a, const T* p, int64_t n, int64_t stride, int64_t) const {
    for (int64_t k = 0; k < n; ++k) Step(a, p[k * stride], 0);
  }
  int64_t Finish(const Acc& a, int64_t) const { return a.count; }
};

// Per-output means of x over the mask, in double.
std::vector<double> Means(const Tensor& x, const ReducePlan& plan, ThreadPool& pool) {
  std::vector<double> means(static_cast<size_t>(plan.num_outputs()));
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      RunReduce(plan, x.data<const T>(), means.data(), MeanReducer<T>(static_cast<double>(plan.num_reduced())), pool);
    }
  });
  return means;
}

// ---- inference ---------------------------------------------------------------------------------------

void CheckFloating(const TensorMeta& m, std::string_view what) {
  OF_CHECK(m.dtype->is_floating_point()) << what << " must be floating point, got " << m.dtype;
}

std::vector<TensorMeta> InferSum(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Symbol<DType> dtype = in[0].dtype->is_floating_point() ? in[0].dtype : DType::Int64();
  return {{dtype, ReduceShape(in[0].shape, attrs.Ints("dims"), attrs.Bool("keepdim")), in[0].device}};
}

std::vector<TensorMeta> InferMean(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckFloating(in[0], "x");
  return {{in[0].dtype, ReduceShape(in[0].shape, attrs.Ints("dims"), attrs.Bool("keepdim")), in[0].device}};
}

std::vector<TensorMeta> InferExtreme(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape shape = ReduceShape(in[0].shape, attrs.Ints("dims"), attrs.Bool("keepdim"));
  CheckNonEmptyReduction(in[0].shape, ReducedMask(in[0].shape.ndim(), attrs.Ints("dims")));
  return {{in[0].dtype, shape, in[0].device}};
}

std::vector<TensorMeta> InferArgmax(std::span<const TensorMeta> in, const Attrs& attrs) {
  const std::vector<int64_t> dims = {attrs.Int("dim")};
  const Shape shape = ReduceShape(in[0].shape, dims, attrs.Bool("keepdim"));
  CheckNonEmptyReduction(in[0].shape, ReducedMask(in[0].shape.ndim(), dims));
  return {{DType::Int64(), shape, in[0].device}};
}

std::vector<TensorMeta> InferVar(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckFloating(in[0], "x");
  OF_CHECK(attrs.Int("correction") >= 0) << "correction must be >= 0, got " << attrs.Int("correction");
  return {{in[0].dtype, ReduceShape(in[0].shape, attrs.Ints("dims"), attrs.Bool("keepdim")), in[0].device}};
}

// `shape` (target) against x's shape: what broadcasting `shape` to x's shape would need.
std::vector<TensorMeta> InferSumToShape(std::span<const TensorMeta> in, const Attrs& attrs) {
  const std::vector<int64_t>& raw = attrs.Ints("shape");
  const Shape target = Shape::FromRaw(raw.data(), raw.size(), "shape");
  const Shape& xs = in[0].shape;
  const int64_t lead = xs.ndim() - target.ndim();
  bool ok = lead >= 0;
  for (int64_t d = 0; ok && d < target.ndim(); ++d) {
    const Dim t = target[d], s = xs[d + lead];
    ok = t == 1 || t == s || !t.is_known() || !s.is_known();
  }
  OF_CHECK(ok) << "shape " << target << " does not broadcast to the input's shape " << xs
               << ", so the input cannot be summed down to it";
  return {{in[0].dtype, target, in[0].device}};
}

// broadcast_like(y, like): y broadcast to like's shape, with size-1 dims inserted at `dims` first.
std::vector<TensorMeta> InferBroadcastLike(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape &ys = in[0].shape, &ls = in[1].shape;
  const std::vector<int64_t>& dims = attrs.Ints("dims");
  OF_CHECK(ys.ndim() + static_cast<int64_t>(dims.size()) == ls.ndim())
      << "y has shape " << ys << " and " << dims.size() << " dims are inserted, which does not give the rank of like "
      << ls;
  const std::vector<bool> inserted = InsertedMask(ls.ndim(), dims);
  int64_t j = 0;
  for (int64_t d = 0; d < ls.ndim(); ++d) {
    if (inserted[static_cast<size_t>(d)]) continue;
    const Dim a = ys[j++], b = ls[d];
    OF_CHECK(a == 1 || a == b || !a.is_known() || !b.is_known())
        << "y of shape " << ys << " does not broadcast to " << ls << " (dim " << d << ")";
  }
  return {{in[0].dtype, ls, in[1].device}};
}

// The gradient ops of a reduction get (x, ..., dy) with dy of the reduced shape.
void CheckReducedGrad(const TensorMeta& x, const TensorMeta& dy, const Attrs& attrs, std::string_view what) {
  const Shape expected = ReduceShape(x.shape, attrs.Ints("dims"), attrs.Bool("keepdim"));
  OF_CHECK(dy.shape == expected) << what << " has shape " << dy.shape << ", expected " << expected;
  OF_CHECK(dy.dtype == x.dtype) << what << " is " << dy.dtype << " but x is " << x.dtype;
}

std::vector<TensorMeta> InferMaxBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckReducedGrad(in[0], in[1], attrs, "y");
  CheckReducedGrad(in[0], in[2], attrs, "dy");
  return {in[0]};
}

std::vector<TensorMeta> InferVarBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckFloating(in[0], "x");
  CheckReducedGrad(in[0], in[1], attrs, "dy");
  if (in[2].dtype) CheckReducedGrad(in[0], in[2], attrs, "std");
  return {in[0]};
}

// ---- kernels ---------------------------------------------------------------------------------------

enum class Kind { kSum, kMean, kMax, kMin, kArgmax, kVar, kStd };

template <Kind K>
void ReduceKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& y = ctx.out(0);
  const std::vector<int64_t> dims =
      K == Kind::kArgmax ? std::vector<int64_t>{ctx.attrs.Int("dim")} : ctx.attrs.Ints("dims");
  const ReducePlan plan = MakeReducePlan(x, ReducedMask(x.ndim(), dims));
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic_v<T>) {
      const T* px = x.data<const T>();
      constexpr bool kOrdered = !std::is_same_v<T, bool>;
      if constexpr (K == Kind::kSum) {
        RunReduce(plan, px, y.data<std::conditional_t<std::is_floating_point_v<T>, T, int64_t>>(), SumReducer<T>(),
                  ctx.pool);
      } else if constexpr (kOrdered && (K == Kind::kMax || K == Kind::kMin)) {
        RunReduce(plan, px, y.data<T>(), ExtremeReducer<T, K == Kind::kMax>(), ctx.pool);
      } else if constexpr (kOrdered && K == Kind::kArgmax) {
        RunReduce(plan, px, y.data<int64_t>(), ArgmaxReducer<T>(), ctx.pool);
      } else if constexpr (std::is_floating_point_v<T>) {
        const double n = static_cast<double>(plan.num_reduced());
        if constexpr (K == Kind::kMean) {
          RunReduce(plan, px, y.data<T>(), MeanReducer<T>(n), ctx.pool);
        } else {
          // Two passes (mean, then squared deviations) in double: no cancellation.
          const std::vector<double> means = Means(x, plan, ctx.pool);
          const double denominator = std::max(0.0, n - static_cast<double>(ctx.attrs.Int("correction")));
          RunReduce(plan, px, y.data<T>(), SquaredDeviationReducer<T>{means.data(), denominator, K == Kind::kStd},
                    ctx.pool);
        }
      }
    }
  });
}

void SumToShapeKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const ReducePlan plan = MakeReducePlan(x, SumToShapeMask(x.shape(), ctx.out(0).shape()));
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic_v<T>) RunReduce(plan, x.data<const T>(), ctx.out(0).data<T>(), SumReducer<T>(), ctx.pool);
  });
}

// out = y broadcast (dims inserted at `dims`), divided by the broadcast factor when "mean".
void BroadcastLikeKernel(KernelContext& ctx) {
  const Tensor& y = ctx.in(0);
  const Tensor& out = ctx.out(0);
  const Shape& shape = out.shape();
  const std::vector<int64_t> src = BroadcastLikeStrides(y, shape, ctx.attrs.Ints("dims"));
  const double scale = BroadcastLikeScale(y, out, ctx.attrs);
  VisitDType(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* py = y.data<const T>();
      T* po = out.data<T>();
      const T k = static_cast<T>(scale);
      ForEachRun(shape, src, ctx.pool, [&](int64_t i, int64_t n, int64_t s, int64_t ss) {
        if (ss == 0) {
          std::fill(po + i, po + i + n, py[s] * k);
        } else {
          for (int64_t e = 0; e < n; ++e) po[i + e] = py[s + e * ss] * k;
        }
      });
    }
  });
}

// dx: dy split evenly among the elements equal to the max/min (NaN maxima get no gradient).
void MaxBackwardKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const std::vector<bool> mask = ReducedMask(x.ndim(), ctx.attrs.Ints("dims"));
  const ReducePlan plan = MakeReducePlan(x, mask);
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<const T>();
      const T* py = ctx.in(1).data<const T>();
      const T* pdy = ctx.in(2).data<const T>();
      std::vector<int64_t> ties(static_cast<size_t>(plan.num_outputs()));
      RunReduce(plan, px, ties.data(), CountEqualReducer<T>{py}, ctx.pool);
      std::vector<T> share(ties.size());
      for (size_t o = 0; o < ties.size(); ++o) share[o] = ties[o] > 0 ? pdy[o] / static_cast<T>(ties[o]) : T(0);
      T* pdx = ctx.out(0).data<T>();
      ForEachRun(x.shape(), ReducedOutputStrides(x.shape(), mask), ctx.pool,
                 [&](int64_t i, int64_t n, int64_t s, int64_t ss) {
                   for (int64_t e = 0; e < n; ++e) pdx[i + e] = px[i + e] == py[s + e * ss] ? share[s + e * ss] : T(0);
                 });
    }
  });
}

// var: dx = dy * 2 (x - mean) / (n - correction); std (given): dx = dy (x - mean) / ((n - correction) std).
void VarBackwardKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const std::vector<bool> mask = ReducedMask(x.ndim(), ctx.attrs.Ints("dims"));
  const ReducePlan plan = MakeReducePlan(x, mask);
  const std::vector<double> means = Means(x, plan, ctx.pool);
  const double denominator =
      std::max(0.0, static_cast<double>(plan.num_reduced()) - static_cast<double>(ctx.attrs.Int("correction")));
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<const T>();
      const T* pdy = ctx.in(1).data<const T>();
      const T* pstd = ctx.inputs[2] ? ctx.in(2).data<const T>() : nullptr;
      std::vector<double> coef(means.size());
      for (size_t o = 0; o < coef.size(); ++o) {
        coef[o] = pstd ? static_cast<double>(pdy[o]) / (denominator * static_cast<double>(pstd[o]))
                       : 2.0 * static_cast<double>(pdy[o]) / denominator;
      }
      T* pdx = ctx.out(0).data<T>();
      ForEachRun(x.shape(), ReducedOutputStrides(x.shape(), mask), ctx.pool,
                 [&](int64_t i, int64_t n, int64_t s, int64_t ss) {
                   for (int64_t e = 0; e < n; ++e) {
                     const size_t o = static_cast<size_t>(s + e * ss);
                     pdx[i + e] = static_cast<T>(coef[o] * (static_cast<double>(px[i + e]) - means[o]));
                   }
                 });
    }
  });
}

// ---- backward ---------------------------------------------------------------------------------------

// dy broadcast back over the reduced dims of x (divided by the count for a mean).
TensorPtr BroadcastBack(const TensorPtr& dy, const TensorPtr& x, const Attrs& attrs, bool mean) {
  static const OpDef& op = OpRegistry::Global().Get("broadcast_like");
  std::vector<int64_t> inserted;
  if (!attrs.Bool("keepdim")) {
    const std::vector<bool> mask = ReducedMask(x->ndim(), attrs.Ints("dims"));
    for (int64_t d = 0; d < x->ndim(); ++d) {
      if (mask[static_cast<size_t>(d)]) inserted.push_back(d);
    }
  }
  return Apply1(op, {dy, x}, {{"dims", inserted}, {"mean", mean}});
}

std::vector<TensorPtr> SumBackward(const BackwardContext& ctx) {
  return {BroadcastBack(ctx.grad_outputs[0], ctx.inputs[0], ctx.attrs, false)};
}
std::vector<TensorPtr> MeanBackward(const BackwardContext& ctx) {
  return {BroadcastBack(ctx.grad_outputs[0], ctx.inputs[0], ctx.attrs, true)};
}

std::vector<TensorPtr> SumToShapeBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("broadcast_like");
  std::vector<int64_t> lead(static_cast<size_t>(ctx.inputs[0]->ndim() - ctx.outputs[0]->ndim()));
  for (size_t d = 0; d < lead.size(); ++d) lead[d] = static_cast<int64_t>(d);
  return {Apply1(op, {ctx.grad_outputs[0], ctx.inputs[0]}, {{"dims", lead}, {"mean", false}})};
}

std::vector<TensorPtr> MaxBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("max_backward");
  return {Apply1(op, {ctx.inputs[0], ctx.outputs[0], ctx.grad_outputs[0]},
                 {{"dims", ctx.attrs.Ints("dims")}, {"keepdim", ctx.attrs.Bool("keepdim")}})};
}

template <bool kStd>
std::vector<TensorPtr> VarBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("var_backward");
  return {Apply1(op, {ctx.inputs[0], ctx.grad_outputs[0], kStd ? ctx.outputs[0] : TensorPtr()},
                 {{"dims", ctx.attrs.Ints("dims")},
                  {"correction", ctx.attrs.Int("correction")},
                  {"keepdim", ctx.attrs.Bool("keepdim")}})};
}

const std::vector<DataType>& SumTypes() {
  static const std::vector<DataType> types = [] {
    std::vector<DataType> t = kNumericTypes;
    t.insert(t.begin(), DataType::kBool);
    return t;
  }();
  return types;
}

AttrSpec DimsAttr() { return {"dims", std::vector<int64_t>{}}; }
AttrSpec KeepdimAttr() { return {"keepdim", false}; }

}  // namespace

void RegisterReduceOps(OpRegistry& registry) {
  // Reductions read any strides (the plan walks them), so no contiguous copy is made first.
  registry.Register(OpDef{.name = "sum",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {DimsAttr(), KeepdimAttr()},
                          .infer = InferSum,
                          .backward = SumBackward,
                          .kernels = CpuKernels(SumTypes(), ReduceKernel<Kind::kSum>),
                          .strided_inputs = true});
  registry.Register(OpDef{.name = "mean",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {DimsAttr(), KeepdimAttr()},
                          .infer = InferMean,
                          .backward = MeanBackward,
                          .kernels = CpuKernels(kFloatingTypes, ReduceKernel<Kind::kMean>),
                          .strided_inputs = true});
  registry.Register(OpDef{.name = "max",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {DimsAttr(), KeepdimAttr()},
                          .infer = InferExtreme,
                          .backward = MaxBackward,
                          .kernels = CpuKernels(kNumericTypes, ReduceKernel<Kind::kMax>),
                          .strided_inputs = true});
  registry.Register(OpDef{.name = "min",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {DimsAttr(), KeepdimAttr()},
                          .infer = InferExtreme,
                          .backward = MaxBackward,
                          .kernels = CpuKernels(kNumericTypes, ReduceKernel<Kind::kMin>),
                          .strided_inputs = true});
  registry.Register(OpDef{.name = "argmax",
                          .inputs = {"x"},
                          .outputs = {"index"},
                          .attrs = {{"dim", int64_t{0}, true}, KeepdimAttr()},
                          .infer = InferArgmax,
                          .kernels = CpuKernels(kNumericTypes, ReduceKernel<Kind::kArgmax>),
                          .strided_inputs = true});
  registry.Register(OpDef{.name = "var",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {DimsAttr(), {"correction", int64_t{1}}, KeepdimAttr()},
                          .infer = InferVar,
                          .backward = VarBackward<false>,
                          .kernels = CpuKernels(kFloatingTypes, ReduceKernel<Kind::kVar>),
                          .strided_inputs = true});
  registry.Register(OpDef{.name = "std",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {DimsAttr(), {"correction", int64_t{1}}, KeepdimAttr()},
                          .infer = InferVar,
                          .backward = VarBackward<true>,
                          .kernels = CpuKernels(kFloatingTypes, ReduceKernel<Kind::kStd>),
                          .strided_inputs = true});
  registry.Register(OpDef{.name = "sum_to_shape",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {{"shape", std::vector<int64_t>{}, true}},
                          .infer = InferSumToShape,
                          .backward = SumToShapeBackward,
                          .kernels = CpuKernels(kNumericTypes, SumToShapeKernel),
                          .strided_inputs = true});
  // Gradient ops (not differentiable themselves).
  registry.Register(OpDef{.name = "broadcast_like",
                          .inputs = {"y", "like"},
                          .outputs = {"out"},
                          .attrs = {{"dims", std::vector<int64_t>{}}, {"mean", false}},
                          .infer = InferBroadcastLike,
                          .kernels = CpuKernels(kFloatingTypes, BroadcastLikeKernel),
                          .strided_inputs = true});  // y is read at its strides, like only for its shape
  registry.Register(OpDef{.name = "max_backward",
                          .inputs = {"x", "y", "dy"},
                          .outputs = {"dx"},
                          .attrs = {DimsAttr(), KeepdimAttr()},
                          .infer = InferMaxBackward,
                          .kernels = CpuKernels(kFloatingTypes, MaxBackwardKernel)});
  registry.Register(OpDef{.name = "var_backward",
                          .inputs = {"x", "dy", "std"},
                          .optional_inputs = {"std"},
                          .outputs = {"dx"},
                          .attrs = {DimsAttr(), {"correction", int64_t{1}}, KeepdimAttr()},
                          .infer = InferVarBackward,
                          .kernels = CpuKernels(kFloatingTypes, VarBackwardKernel)});
}

}  // namespace oneflow
