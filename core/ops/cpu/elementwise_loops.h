// CPU elementwise loops (private to the op library): out[i] = f(in0[i], in1[i], ...) over a fresh
// contiguous output, the inputs broadcast to the output's shape by stride-0 indexing, any strides.
//
// ElementwiseLoop picks the cheapest form:
//   * flat: every input is contiguous with the output's size, or a single element -> one loop over
//     [0, n) with compile-time unit/zero strides, which the compiler vectorises;
//   * general: size-1 dims dropped and adjacent dims merged where every operand allows it, then rows
//     of the innermost dim (again unit/zero strides at compile time when they are).
// Large outputs are split over the session's thread pool in chunks of at least `grain` elements.
//
// Element functions receive ComputeType values (float for float16/bfloat16, the storage type
// otherwise) and their result is converted to the output type with Convert (the semantics of cast).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/common/dtype.h"
#include "core/device/thread_pool.h"
#include "core/op/layout.h"
#include "core/op/op_registry.h"
#include "core/tensor/tensor.h"

namespace oneflow::cpu {

// Chunk sizes (elements) for ParallelFor: cheap element functions, and transcendental ones.
inline constexpr int64_t kSimpleGrain = 32768;
inline constexpr int64_t kHeavyGrain = 4096;

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
template <typename T>
inline constexpr bool kIsFloating = kIsHalf<T> || std::is_floating_point_v<T>;
template <typename T>
inline constexpr bool kIsBool = std::is_same_v<T, bool>;

// The type arithmetic on T happens in.
template <typename T>
using ComputeType = std::conditional_t<kIsHalf<T>, float, T>;

// Element conversion with the semantics of ops::Cast, free of undefined behaviour: floating to
// integer truncates toward zero through int64, so negative values wrap in unsigned types as in
// PyTorch; NaN gives 0 and values beyond int64 saturate (both undefined in C++); non-zero (NaN
// included) to bool is true; integers narrow modulo 2^bits.
template <typename To, typename From>
inline To Convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsHalf<From>) {
    return Convert<To>(static_cast<float>(v));
  } else if constexpr (kIsBool<To>) {
    return v != From(0);
  } else if constexpr (kIsHalf<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (!(v == v)) return To(0);
    constexpr From kLimit = From(9223372036854775808.0);  // 2^63, exact in float and double
    const int64_t i = v >= kLimit    ? std::numeric_limits<int64_t>::max()
                      : v <= -kLimit ? std::numeric_limits<int64_t>::min()
                                     : static_cast<int64_t>(v);
    return static_cast<To>(i);
  } else {
    return static_cast<To>(v);
  }
}

// The dtypes (in kAllTypes order) whose element type T satisfies F::kFor<T>: the kernel's dtype list
// comes from the same predicate that decides which loops are compiled.
template <typename F>
std::vector<DataType> KernelDTypes() {
  std::vector<DataType> out;
  for (DataType d : kAllTypes) {
    VisitDType(DType::Get(d), [&](auto tag) {
      if constexpr (F::template kFor<typename decltype(tag)::type>) out.push_back(d);
    });
  }
  return out;
}

namespace detail {

inline constexpr int kMaxInputs = 3;
template <typename T, size_t>
using Repeat = T;  // T once per element of an index pack
// A row whose strides are not all unit/zero in a form compiled for this arity.
inline constexpr int kStridedRow = -1;

// One row with compile-time strides: bit I of kScalarMask set = input I repeats its element 0.
template <uint32_t kScalarMask, typename Out, typename... In, typename F, size_t... I>
inline void FixedRow(Out* __restrict o, std::tuple<const In*...> p, int64_t n, const F& f,
                     std::index_sequence<I...>) {
  for (int64_t k = 0; k < n; ++k) {
    o[k] = Convert<Out>(f(Convert<ComputeType<In>>(std::get<I>(p)[((kScalarMask >> I) & 1u) ? 0 : k])...));
  }
}

template <typename Out, typename... In, typename F, size_t... I>
inline void StridedRow(Out* __restrict o, std::tuple<const In*...> p, const std::array<int64_t, kMaxInputs>& s,
                       int64_t n, const F& f, std::index_sequence<I...>) {
  for (int64_t k = 0; k < n; ++k) {
    o[k] = Convert<Out>(f(Convert<ComputeType<In>>(std::get<I>(p)[k * s[I]])...));
  }
}

// kind: a scalar mask compiled by FixedRow (0 for every arity; 1 and 2 for binary ops), or kStridedRow.
template <typename Out, typename... In, typename F>
inline void Row(int kind, Out* o, std::tuple<const In*...> p, const std::array<int64_t, kMaxInputs>& s, int64_t n,
                const F& f) {
  using Seq = std::index_sequence_for<In...>;
  if (kind == 0) return FixedRow<0u>(o, p, n, f, Seq{});
  if constexpr (sizeof...(In) == 2) {
    if (kind == 1) return FixedRow<1u>(o, p, n, f, Seq{});
    if (kind == 2) return FixedRow<2u>(o, p, n, f, Seq{});
  }
  StridedRow(o, p, s, n, f, Seq{});
}

inline int RowKind(const std::array<int64_t, kMaxInputs>& inner_strides, size_t num_inputs) {
  uint32_t mask = 0;
  for (size_t k = 0; k < num_inputs; ++k) {
    if (inner_strides[k] == 0) {
      mask |= 1u << k;
    } else if (inner_strides[k] != 1) {
      return kStridedRow;
    }
  }
  if (mask == 0 || (num_inputs == 2 && mask < 3)) return static_cast<int>(mask);
  return kStridedRow;
}

template <typename... In, size_t... I>
inline std::tuple<const In*...> Offset(const std::tuple<const In*...>& p, const std::array<int64_t, kMaxInputs>& off,
                                       std::index_sequence<I...>) {
  return {std::get<I>(p) + off[I]...};
}

// The general layout: coalesced dims (outermost first in the output's memory order) and each input's
// strides in them; the output is dense, row-major over `shape`.
struct LoopPlan {
  std::vector<int64_t> shape;
  std::vector<std::array<int64_t, kMaxInputs>> strides;
};

// The output's dims from outermost to innermost in memory (it is dense in its memory format).
inline std::vector<int64_t> MemoryOrder(const Tensor& out) {
  if (out.memory_format() == MemoryFormat::kChannelsLast) return {0, 2, 3, 1};
  std::vector<int64_t> order(static_cast<size_t>(out.ndim()));
  for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int64_t>(d);
  return order;
}

inline LoopPlan MakeLoopPlan(const Tensor& out, const Tensor* const* in, size_t num_inputs) {
  LoopPlan plan;
  const int64_t nd = out.ndim();
  for (int64_t d : MemoryOrder(out)) {
    const int64_t size = out.shape()[d].value();
    if (size == 1) continue;
    std::array<int64_t, kMaxInputs> st{};
    for (size_t k = 0; k < num_inputs; ++k) {
      const int64_t id = d - (nd - in[k]->ndim());
      st[k] = (id < 0 || in[k]->shape()[id].value() == 1) ? 0 : in[k]->strides()[static_cast<size_t>(id)];
    }
    bool merge = !plan.shape.empty();
    for (size_t k = 0; k < num_inputs && merge; ++k) merge = plan.strides.back()[k] == st[k] * size;
    if (merge) {
      plan.shape.back() *= size;
      plan.strides.back() = st;
    } else {
      plan.shape.push_back(size);
      plan.strides.push_back(st);
    }
  }
  if (plan.shape.empty()) {  // a single element
    plan.shape.push_back(1);
    plan.strides.push_back({});
  }
  return plan;
}

}  // namespace detail

// dst = src converted elementwise with the semantics of cast (Convert), src at any strides, dst dense in
// its memory format. Defined once, with the cast op's kernel (core/ops/unary.cpp).
void CastInto(const Tensor& src, const Tensor& dst, ThreadPool& pool);

// out = f(in[0], in[1], ...) elementwise; out has the broadcast shape of the inputs and is dense in its
// memory format (contiguous or channels last, as dispatch allocates outputs); the inputs' element types
// are In... (Out for the output).
template <typename Out, typename... In, typename F>
void ElementwiseLoop(ThreadPool& pool, int64_t grain, const Tensor& out,
                     const std::array<const Tensor*, sizeof...(In)>& in, const F& f) {
  constexpr size_t N = sizeof...(In);
  static_assert(N >= 1 && N <= static_cast<size_t>(detail::kMaxInputs));
  const int64_t n = out.numel();
  if (n == 0) return;
  Out* const o = out.data<Out>();
  const std::tuple<const In*...> base =
      [&]<size_t... I>(std::index_sequence<I...>) { return std::tuple<const In*...>{in[I]->template data<In>()...}; }(
          std::index_sequence_for<In...>{});
  auto run = [&](int64_t begin, int64_t end, auto&& chunk) {
    if (end - begin <= grain) {
      chunk(begin, end);
    } else {
      pool.ParallelFor(end - begin, grain, chunk);
    }
  };

  // Flat: inputs of the output's shape dense in its format (hence its layout), and single elements.
  const MemoryFormat format = out.memory_format();
  OF_CHECK_INTERNAL(IsDenseIn(out.shape(), out.strides(), format)) << "elementwise output is not dense";
  std::array<int64_t, detail::kMaxInputs> unit{};
  bool flat = true;
  for (size_t k = 0; k < N; ++k) {
    if (in[k]->numel() == 1) {
      unit[k] = 0;
    } else if (in[k]->numel() == n && (format == MemoryFormat::kContiguous
                                            ? in[k]->is_contiguous()
                                            : in[k]->shape() == out.shape() && in[k]->memory_format() == format)) {
      unit[k] = 1;
    } else {
      flat = false;
    }
  }
  if (flat) {
    const int kind = detail::RowKind(unit, N);
    run(0, n, [&](int64_t b, int64_t e) {
      std::array<int64_t, detail::kMaxInputs> off{};
      for (size_t k = 0; k < N; ++k) off[k] = b * unit[k];
      detail::Row(kind, o + b, detail::Offset(base, off, std::index_sequence_for<In...>{}), unit, e - b, f);
    });
    return;
  }

  const detail::LoopPlan plan = detail::MakeLoopPlan(out, in.data(), N);
  const size_t nd = plan.shape.size();
  const int64_t inner = plan.shape[nd - 1];
  const std::array<int64_t, detail::kMaxInputs>& inner_strides = plan.strides[nd - 1];
  const int kind = detail::RowKind(inner_strides, N);
  run(0, n, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(nd);
    std::array<int64_t, detail::kMaxInputs> off{};
    int64_t rem = begin;
    for (size_t d = nd; d-- > 0;) {
      idx[d] = rem % plan.shape[d];
      rem /= plan.shape[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * plan.strides[d][k];
    }
    for (int64_t pos = begin; pos < end;) {
      const int64_t count = std::min(inner - idx[nd - 1], end - pos);
      detail::Row(kind, o + pos, detail::Offset(base, off, std::index_sequence_for<In...>{}), inner_strides, count, f);
      pos += count;
      idx[nd - 1] += count;
      for (size_t k = 0; k < N; ++k) off[k] += count * inner_strides[k];
      for (size_t d = nd - 1; d > 0 && idx[d] == plan.shape[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
        for (size_t k = 0; k < N; ++k) off[k] += plan.strides[d - 1][k] - plan.shape[d] * plan.strides[d][k];
      }
    }
  });
}

// A kernel whose inputs all have the kernel's dtype T and whose output is T, or bool when
// F::kBoolOut. F provides kFor<T> (the dtypes it is compiled for), kGrain, kBoolOut and a const
// call operator on ComputeType<T> values.
// `f` carries the call's attributes where F has any (MapKernel<F, N>(ctx) uses F{}).
template <typename F, size_t N>
void MapKernel(KernelContext& ctx, const F& f) {
  VisitDType(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (F::template kFor<T>) {
      using Out = std::conditional_t<F::kBoolOut, bool, T>;
      [&]<size_t... I>(std::index_sequence<I...>) {
        ElementwiseLoop<Out, detail::Repeat<T, I>...>(ctx.pool, F::kGrain, ctx.out(0), {&ctx.in(I)...}, f);
      }(std::make_index_sequence<N>{});
    } else {
      OF_THROW(Internal) << "elementwise kernel compiled without dtype " << ctx.in(0).dtype();
    }
  });
}
template <typename F, size_t N>
void MapKernel(KernelContext& ctx) {
  MapKernel<F, N>(ctx, F{});
}

// The dtypes an op takes, checked in inference (so that a graph reports them when it is built).
// kIntegral: bool or integer (the bitwise ops); kInteger: integer only (the shifts).
enum class Domain { kAny, kNotBool, kFloating, kIntegral, kInteger };

inline void CheckDomain(Symbol<DType> dtype, Domain domain, std::string_view what) {
  if (domain == Domain::kNotBool) {
    OF_CHECK(!dtype->is_bool()) << what << " is bool, which this op does not take (use the logical ops)";
  } else if (domain == Domain::kFloating) {
    OF_CHECK(dtype->is_floating_point()) << what << " must have a floating dtype, got " << dtype;
  } else if (domain == Domain::kIntegral) {
    OF_CHECK(!dtype->is_floating_point()) << what << " must have an integer or bool dtype, got " << dtype;
  } else if (domain == Domain::kInteger) {
    OF_CHECK(dtype->is_integer()) << what << " must have an integer dtype, got " << dtype;
  }
}

// An elementwise OpDef with output "y" and one CPU kernel that takes strided inputs.
inline OpDef ElementwiseOp(std::string name, std::vector<std::string> inputs, InferFn infer, BackwardFn backward,
                           std::vector<DataType> dtypes, KernelFn kernel) {
  OpDef def;
  def.name = std::move(name);
  def.inputs = std::move(inputs);
  def.outputs = {"y"};
  def.infer = infer;
  def.backward = backward;
  def.kernels = {{DeviceType::kCPU, std::move(dtypes), kernel, /*channels_last=*/true}};
  def.strided_inputs = true;
  def.layout = LayoutOfInputs;  // the output keeps a channels-last input's format
  def.layout_outputs = {0};
  def.elementwise = true;
  return def;
}

// Defaults for element functions: cheap, every dtype but bool, same-dtype output.
struct ElementFn {
  static constexpr int64_t kGrain = kSimpleGrain;
  static constexpr bool kBoolOut = false;
  template <typename T>
  static constexpr bool kFor = !kIsBool<T>;
};
// Transcendental functions of floating dtypes.
struct FloatingFn : ElementFn {
  static constexpr int64_t kGrain = kHeavyGrain;
  template <typename T>
  static constexpr bool kFor = kIsFloating<T>;
};

}  // namespace oneflow::cpu
