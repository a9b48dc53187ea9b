// prod, logsumexp, all, any, norm and the gradient ops prod_backward and norm_backward, on the
// reduction engine of core/ops/cpu/reduce_loops.h (the one sum and max run on: any strides, the same
// results at every thread count).
#include <cmath>
#include <limits>

#include "core/op/dispatch.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/cpu/reduce_loops.h"
#include "core/ops/ops.h"
#include "core/ops/reductions.h"
#include "core/ops/register.h"

namespace oneflow {
namespace ops {
namespace {
const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }
}  // namespace

TensorPtr Prod(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpDef& op = Op("prod");
  return Apply1(op, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}
TensorPtr LogSumExp(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpDef& op = Op("logsumexp");
  return Apply1(op, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}
TensorPtr All(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpDef& op = Op("all");
  return Apply1(op, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}
TensorPtr Any(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpDef& op = Op("any");
  return Apply1(op, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}
TensorPtr Norm(const TensorPtr& x, double p, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpDef& op = Op("norm");
  return Apply1(op, {x}, {{"p", p}, {"dims", dims}, {"keepdim", keepdim}});
}

}  // namespace ops

namespace {

using namespace cpu::reduce;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- inference -------------------------------------------------------------------------------------

Shape Reduced(const TensorMeta& x, const Attrs& attrs) {
  return ReduceShape(x.shape, attrs.Ints("dims"), attrs.Bool("keepdim"));
}

void CheckFloating(const TensorMeta& m, std::string_view what) {
  OF_CHECK(m.dtype->is_floating_point()) << what << " must be floating point, got " << m.dtype;
}

double CheckedP(const Attrs& attrs) {
  const double p = attrs.Float("p");
  OF_CHECK(p == 1 || p == 2 || p == kInf || p == -kInf) << "p must be 1, 2, inf or -inf, got " << p;
  return p;
}

std::vector<TensorMeta> InferProd(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Symbol<DType> dtype = in[0].dtype->is_floating_point() ? in[0].dtype : DType::Int64();
  return {{dtype, Reduced(in[0], attrs), in[0].device}};
}

std::vector<TensorMeta> InferLogSumExp(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckFloating(in[0], "x");
  return {{in[0].dtype, Reduced(in[0], attrs), in[0].device}};
}

std::vector<TensorMeta> InferLogical(std::span<const TensorMeta> in, const Attrs& attrs) {
  return {{DType::Bool(), Reduced(in[0], attrs), in[0].device}};
}

std::vector<TensorMeta> InferNorm(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckFloating(in[0], "x");
  const double p = CheckedP(attrs);
  const Shape shape = Reduced(in[0], attrs);
  // max / min of nothing is undefined (PyTorch refuses it too).
  if (std::isinf(p)) CheckNonEmptyReduction(in[0].shape, ReducedMask(in[0].shape.ndim(), attrs.Ints("dims")));
  return {{in[0].dtype, shape, in[0].device}};
}

// (x, y, dy) -> dx for the gradient ops, y and dy of the reduced shape.
std::vector<TensorMeta> InferReduceBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckFloating(in[0], "x");
  const Shape expected = Reduced(in[0], attrs);
  constexpr const char* names[] = {"x", "y", "dy"};
  for (size_t i = 1; i < 3; ++i) {
    OF_CHECK(in[i].shape == expected && in[i].dtype == in[0].dtype)
        << names[i] << " is " << in[i].dtype << " " << in[i].shape << ", expected " << in[0].dtype << " " << expected;
  }
  return {in[0]};
}

std::vector<TensorMeta> InferNormBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckedP(attrs);
  return InferReduceBackward(in, attrs);
}

// ---- reducers ----------------------------------------------------------------------------------------

template <typename T>
struct ProdReducer {
  using Acc = AccumulatorOf<T>;  // double, or uint64 for integers (wrapping, as sums)
  Acc Init(int64_t) const { return Acc(1); }
  void Step(Acc& a, T v, int64_t) const { a *= static_cast<Acc>(static_cast<std::conditional_t<std::is_floating_point_v<T>, T, int64_t>>(v)); }
  void Merge(Acc& a, Acc b) const { a *= b; }
  void Run(Acc& a, const T* p, int64_t n, int64_t stride, int64_t) const {
    for (int64_t k = 0; k < n; ++k) Step(a, p[k * stride], 0);
  }
  Acc Finish(Acc a, int64_t) const { return a; }
};

// The product of the non-zero elements and the number of zeros (prod's gradient).
template <typename T>
struct NonZeroProdReducer {
  struct Acc {
    double prod;
    int64_t zeros;
  };
  Acc Init(int64_t) const { return {1.0, 0}; }
  void Step(Acc& a, T v, int64_t) const {
    if (v == T(0)) {
      ++a.zeros;
    } else {
      a.prod *= static_cast<double>(v);
    }
  }
  void Merge(Acc& a, const Acc& b) const {
    a.prod *= b.prod;
    a.zeros += b.zeros;
  }
  void Run(Acc& a, const T* p, int64_t n, int64_t stride, int64_t) const {
    for (int64_t k = 0; k < n; ++k) Step(a, p[k * stride], 0);
  }
  Acc Finish(const Acc& a, int64_t) const { return a; }
};

// sum(exp(x - m)) with m the per-output max.
template <typename T>
struct SumExpReducer {
  struct Acc {
    double sum;
    double max;
  };
  const T* max;
  Acc Init(int64_t o) const { return {0.0, static_cast<double>(max[o])}; }
  void Step(Acc& a, T v, int64_t) const { a.sum += std::exp(static_cast<double>(v) - a.max); }
  void Merge(Acc& a, const Acc& b) const { a.sum += b.sum; }
  void Run(Acc& a, const T* p, int64_t n, int64_t stride, int64_t) const {
    for (int64_t k = 0; k < n; ++k) Step(a, p[k * stride], 0);
  }
  // A non-finite max is the result: every element -inf (or none), an inf, or a NaN.
  double Finish(const Acc& a, int64_t) const { return std::isfinite(a.max) ? a.max + std::log(a.sum) : a.max; }
};

template <typename T, bool kAll>
struct LogicalReducer {
  using Acc = uint8_t;  // not bool: the engine keeps accumulators in std::vectors
  static bool Truth(T v) {
    if constexpr (std::is_arithmetic_v<T>) {
      return v != T(0);
    } else {
      return static_cast<float>(v) != 0.0f;  // float16, bfloat16 (NaN is true)
    }
  }
  Acc Init(int64_t) const { return kAll; }
  void Step(Acc& a, T v, int64_t) const { a = kAll ? (a && Truth(v)) : (a || Truth(v)); }
  void Merge(Acc& a, Acc b) const { a = kAll ? (a && b) : (a || b); }
  void Run(Acc& a, const T* p, int64_t n, int64_t stride, int64_t) const {
    if (a != kAll) return;  // already decided
    for (int64_t k = 0; k < n; ++k) {
      if (Truth(p[k * stride]) != kAll) {
        a = !kAll;
        return;
      }
    }
  }
  bool Finish(Acc a, int64_t) const { return a != 0; }
};

// sum |x| (p = 1), sqrt(sum x^2) (p = 2), max |x| (inf), min |x| (-inf); NaN propagates.
template <typename T>
struct NormReducer {
  using Acc = double;
  double p;
  Acc Init(int64_t) const { return p == -kInf ? kInf : 0.0; }
  void Step(Acc& a, T v, int64_t) const {
    const double x = std::fabs(static_cast<double>(v));
    if (p == 1) {
      a += x;
    } else if (p == 2) {
      a += x * x;
    } else if (p == kInf) {
      a = x > a || x != x ? x : a;
    } else {
      a = x < a || x != x ? x : a;
    }
  }
  void Merge(Acc& a, Acc b) const {
    if (p == 1 || p == 2) {
      a += b;
    } else if (a == a) {
      a = (p == kInf ? b > a : b < a) || b != b ? b : a;
    }
  }
  void Run(Acc& a, const T* q, int64_t n, int64_t stride, int64_t) const {
    if (p == 2 && stride == 1) {  // the common case: independent partial sums, vectorisable
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      int64_t k = 0;
      for (; k + 4 <= n; k += 4) {
        s0 += static_cast<double>(q[k]) * q[k];
        s1 += static_cast<double>(q[k + 1]) * q[k + 1];
        s2 += static_cast<double>(q[k + 2]) * q[k + 2];
        s3 += static_cast<double>(q[k + 3]) * q[k + 3];
      }
      for (; k < n; ++k) s0 += static_cast<double>(q[k]) * q[k];
      a += (s0 + s1) + (s2 + s3);
      return;
    }
    for (int64_t k = 0; k < n; ++k) Step(a, q[k * stride], 0);
  }
  double Finish(Acc a, int64_t) const { return p == 2 ? std::sqrt(a) : a; }
};

// Elements whose |x| equals the per-output norm (the ties of an inf-norm).
template <typename T>
struct CountAbsEqualReducer {
  struct Acc {
    int64_t count;
    T value;
  };
  const T* values;
  Acc Init(int64_t o) const { return {0, values[o]}; }
  void Step(Acc& a, T v, int64_t) const { a.count += std::fabs(v) == a.value; }
  void Merge(Acc& a, const Acc& b) const { a.count += b.count; }
  void Run(Acc& a, const T* p, int64_t n, int64_t stride, int64_t) const {
    for (int64_t k = 0; k < n; ++k) Step(a, p[k * stride], 0);
  }
  int64_t Finish(const Acc& a, int64_t) const { return a.count; }
};

// ---- kernels ---------------------------------------------------------------------------------------

ReducePlan PlanOf(const Tensor& x, const Attrs& attrs) {
  return MakeReducePlan(x, ReducedMask(x.ndim(), attrs.Ints("dims")));
}

void ProdKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const ReducePlan plan = PlanOf(x, ctx.attrs);
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic_v<T>) {
      using Out = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
      RunReduce(plan, x.data<const T>(), ctx.out(0).data<Out>(), ProdReducer<T>(), ctx.pool);
    }
  });
}

void LogSumExpKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const ReducePlan plan = PlanOf(x, ctx.attrs);
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      std::vector<T> max(static_cast<size_t>(plan.num_outputs()));
      RunReduce(plan, x.data<const T>(), max.data(), ExtremeReducer<T, true>(), ctx.pool);
      RunReduce(plan, x.data<const T>(), ctx.out(0).data<T>(), SumExpReducer<T>{max.data()}, ctx.pool);
    }
  });
}

template <bool kAll>
void LogicalKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const ReducePlan plan = PlanOf(x, ctx.attrs);
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunReduce(plan, x.data<const T>(), ctx.out(0).data<bool>(), LogicalReducer<T, kAll>(), ctx.pool);
  });
}

void NormKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const ReducePlan plan = PlanOf(x, ctx.attrs);
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      RunReduce(plan, x.data<const T>(), ctx.out(0).data<T>(), NormReducer<T>{ctx.attrs.Float("p")}, ctx.pool);
    }
  });
}

// Calls fn(i, o) for every element i of x (contiguous) with o the index of its output.
template <typename Fn>
void ForEachElement(const Tensor& x, const Attrs& attrs, ThreadPool& pool, Fn&& fn) {
  const std::vector<bool> mask = ReducedMask(x.ndim(), attrs.Ints("dims"));
  ForEachRun(x.shape(), ReducedOutputStrides(x.shape(), mask), pool, [&](int64_t i, int64_t n, int64_t s, int64_t ss) {
    for (int64_t e = 0; e < n; ++e) fn(i + e, s + e * ss);
  });
}

// (x, y, dy): no zero in the group: dy * y / x; one zero: dy * (product of the others) at the zero and
// 0 elsewhere; more: 0.
void ProdBackwardKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const ReducePlan plan = PlanOf(x, ctx.attrs);
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      using Acc = typename NonZeroProdReducer<T>::Acc;
      std::vector<Acc> groups(static_cast<size_t>(plan.num_outputs()));
      RunReduce(plan, x.data<const T>(), groups.data(), NonZeroProdReducer<T>(), ctx.pool);
      const T* px = x.data<const T>();
      const T* pdy = ctx.in(2).data<const T>();
      T* pdx = ctx.out(0).data<T>();
      ForEachElement(x, ctx.attrs, ctx.pool, [&](int64_t i, int64_t o) {
        const Acc& g = groups[static_cast<size_t>(o)];
        const double dy = pdy[o];
        double d = 0;
        if (g.zeros == 0) {
          d = dy * g.prod / static_cast<double>(px[i]);
        } else if (g.zeros == 1 && px[i] == T(0)) {
          d = dy * g.prod;
        }
        pdx[i] = static_cast<T>(d);
      });
    }
  });
}

// (x, y, dy): p = 1: dy sign(x); p = 2: dy x / y (0 where y is 0); inf-norms: dy sign(x) / ties where
// |x| attains y, else 0.
void NormBackwardKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const double p = ctx.attrs.Float("p");
  const ReducePlan plan = PlanOf(x, ctx.attrs);
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<const T>();
      const T* py = ctx.in(1).data<const T>();
      const T* pdy = ctx.in(2).data<const T>();
      T* pdx = ctx.out(0).data<T>();
      std::vector<int64_t> ties;
      if (std::isinf(p)) {
        ties.resize(static_cast<size_t>(plan.num_outputs()));
        RunReduce(plan, px, ties.data(), CountAbsEqualReducer<T>{py}, ctx.pool);
      }
      ForEachElement(x, ctx.attrs, ctx.pool, [&](int64_t i, int64_t o) {
        const double v = px[i], y = py[o], dy = pdy[o];
        const double sign = v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0;
        double d;
        if (p == 1) {
          d = dy * sign;
        } else if (p == 2) {
          d = y == 0 ? 0.0 : dy * v / y;
        } else {
          const int64_t t = ties[static_cast<size_t>(o)];
          d = std::fabs(v) == y && t > 0 ? dy * sign / static_cast<double>(t) : 0.0;
        }
        pdx[i] = static_cast<T>(d);
      });
    }
  });
}

// ---- backward --------------------------------------------------------------------------------------

Attrs ReduceAttrs(const Attrs& attrs) { return {{"dims", attrs.Ints("dims")}, {"keepdim", attrs.Bool("keepdim")}}; }

std::vector<TensorPtr> ProdBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("prod_backward");
  return {Apply1(op, {ctx.inputs[0], ctx.outputs[0], ctx.grad_outputs[0]}, ReduceAttrs(ctx.attrs))};
}

std::vector<TensorPtr> NormBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("norm_backward");
  Attrs attrs = ReduceAttrs(ctx.attrs);
  attrs.Set("p", ctx.attrs.Float("p"));
  return {Apply1(op, {ctx.inputs[0], ctx.outputs[0], ctx.grad_outputs[0]}, attrs)};
}

// dy * exp(x - y), y and dy with the reduced dims kept (size 1) so that they broadcast against x.
std::vector<TensorPtr> LogSumExpBackward(const BackwardContext& ctx) {
  const TensorPtr& x = ctx.inputs[0];
  TensorPtr y = ctx.outputs[0], dy = ctx.grad_outputs[0];
  if (!ctx.attrs.Bool("keepdim")) {
    const std::vector<bool> mask = ReducedMask(x->ndim(), ctx.attrs.Ints("dims"));
    for (int64_t d = 0; d < x->ndim(); ++d) {
      if (!mask[static_cast<size_t>(d)]) continue;
      y = ops::Unsqueeze(y, d);
      dy = ops::Unsqueeze(dy, d);
    }
  }
  return {ops::Mul(dy, ops::Exp(ops::Sub(x, y)))};
}

}  // namespace

void RegisterExtraReduceOps(OpRegistry& registry) {
  std::vector<DataType> prod_types = kNumericTypes;
  prod_types.insert(prod_types.begin(), DataType::kBool);
  const AttrSpec dims{"dims", std::vector<int64_t>{}};
  const AttrSpec keepdim{"keepdim", false};
  const AttrSpec p{"p", 2.0};
  // The reductions read any strides (the plan walks them), as sum does.
  registry.Register(OpDef{.name = "prod",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {dims, keepdim},
                          .infer = InferProd,
                          .backward = ProdBackward,
                          .kernels = CpuKernels(prod_types, ProdKernel),
                          .strided_inputs = true});
  registry.Register(OpDef{.name = "logsumexp",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {dims, keepdim},
                          .infer = InferLogSumExp,
                          .backward = LogSumExpBackward,
                          .kernels = CpuKernels(kFloatingTypes, LogSumExpKernel),
                          .strided_inputs = true,
                          .autocast = AutocastPolicy::kFloat32});
  registry.Register(OpDef{.name = "all",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {dims, keepdim},
                          .infer = InferLogical,
                          .kernels = CpuKernels(kAllTypes, LogicalKernel<true>),
                          .strided_inputs = true});
  registry.Register(OpDef{.name = "any",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {dims, keepdim},
                          .infer = InferLogical,
                          .kernels = CpuKernels(kAllTypes, LogicalKernel<false>),
                          .strided_inputs = true});
  registry.Register(OpDef{.name = "norm",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = {p, dims, keepdim},
                          .infer = InferNorm,
                          .backward = NormBackward,
                          .kernels = CpuKernels(kFloatingTypes, NormKernel),
                          .strided_inputs = true});
  // Gradient ops (not differentiable themselves).
  registry.Register(OpDef{.name = "prod_backward",
                          .inputs = {"x", "y", "dy"},
                          .outputs = {"dx"},
                          .attrs = {dims, keepdim},
                          .infer = InferReduceBackward,
                          .kernels = CpuKernels(kFloatingTypes, ProdBackwardKernel)});
  registry.Register(OpDef{.name = "norm_backward",
                          .inputs = {"x", "y", "dy"},
                          .outputs = {"dx"},
                          .attrs = {p, dims, keepdim},
                          .infer = InferNormBackward,
                          .kernels = CpuKernels(kFloatingTypes, NormBackwardKernel)});
}

}  // namespace oneflow
