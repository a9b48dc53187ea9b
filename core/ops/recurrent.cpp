// lstm_cell and gru_cell: gate pre-activations by ops::Linear, the pointwise part as one fused op
// each ("lstm_cell_pointwise", "gru_cell_pointwise") with a fused backward op that recomputes the
// gates from the saved pre-activations.
#include "core/ops/cpu/in_float32.h"
#include "core/ops/recurrent.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/op/dispatch.h"
#include "core/ops/register.h"

namespace oneflow {
namespace {

bool Mismatch(Dim a, Dim b) { return (a.is_known() && b.is_known() && a != b) || (a.is_symbol() && b.is_symbol() && a != b); }

// Rows per parallel chunk for `h` hidden units of transcendental work each.
int64_t RowGrain(int64_t h) { return std::max<int64_t>(1, 4096 / std::max<int64_t>(h, 1)); }

template <typename T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename A>
A Sigmoid(A x) { return A(1) / (A(1) + std::exp(-x)); }

// `gates` (N, k H) against `state` (N, H), one floating dtype.
void CheckGates(const TensorMeta& gates, const TensorMeta& state, int64_t k, std::string_view gname,
                std::string_view sname) {
  OF_CHECK(gates.dtype->is_floating_point()) << gname << " must be floating point, got " << gates.dtype;
  OF_CHECK(state.dtype == gates.dtype) << sname << " must have " << gname << "'s dtype " << gates.dtype << ", got "
                                       << state.dtype;
  OF_CHECK(gates.shape.ndim() == 2 && state.shape.ndim() == 2 && !Mismatch(gates.shape[0], state.shape[0]) &&
           !Mismatch(gates.shape[1], state.shape[1] * k))
      << gname << " must be (N, " << k << " H) for " << sname << " (N, H), got " << gates.shape << " and "
      << state.shape;
}

// ---- lstm ---------------------------------------------------------------------------------------

// (gates (N, 4H), c (N, H)) -> (h', c').
std::vector<TensorMeta> InferLstm(std::span<const TensorMeta> in, const Attrs&) {
  CheckGates(in[0], in[1], 4, "gates", "c");
  return {in[1], in[1]};
}

// (dh' or absent, dc' or absent, gates, c, c') -> (d gates, dc).
std::vector<TensorMeta> InferLstmBackward(std::span<const TensorMeta> in, const Attrs&) {
  CheckGates(in[2], in[3], 4, "gates", "c");
  for (size_t i : {size_t{0}, size_t{1}, size_t{4}}) {
    if (!in[i].dtype) continue;
    OF_CHECK(in[i].dtype == in[3].dtype && in[i].shape == in[3].shape)
        << (i == 0 ? "dh" : i == 1 ? "dc" : "c_next") << " must be " << in[3].dtype << " " << in[3].shape << ", got "
        << in[i].dtype << " " << in[i].shape;
  }
  return {in[2], in[3]};
}

void LstmKernel(KernelContext& ctx) {
  const Tensor& gates = ctx.in(0);
  const int64_t n = gates.shape()[0].value(), h = ctx.in(1).shape()[1].value();
  VisitDType(gates.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      using A = AccOf<T>;
      const T* g = gates.data<const T>();
      const T* c = ctx.in(1).data<const T>();
      T* ho = ctx.out(0).data<T>();
      T* co = ctx.out(1).data<T>();
      ctx.pool.ParallelFor(n, RowGrain(h), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const T* gr = g + r * 4 * h;
          for (int64_t j = 0; j < h; ++j) {
            const A i = Sigmoid<A>(gr[j]), f = Sigmoid<A>(gr[h + j]), gg = std::tanh(static_cast<A>(gr[2 * h + j])),
                    o = Sigmoid<A>(gr[3 * h + j]);
            const A cn = f * static_cast<A>(c[r * h + j]) + i * gg;
            co[r * h + j] = static_cast<T>(cn);
            ho[r * h + j] = static_cast<T>(o * std::tanh(cn));
          }
        }
      });
    }
  });
}

void LstmBackwardKernel(KernelContext& ctx) {
  const Tensor& gates = ctx.in(2);
  const int64_t n = gates.shape()[0].value(), h = ctx.in(3).shape()[1].value();
  VisitDType(gates.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      using A = AccOf<T>;
      const T* dh = ctx.inputs[0] ? ctx.in(0).data<const T>() : nullptr;
      const T* dc = ctx.inputs[1] ? ctx.in(1).data<const T>() : nullptr;
      const T* g = gates.data<const T>();
      const T* c = ctx.in(3).data<const T>();
      const T* cn = ctx.in(4).data<const T>();
      T* dg = ctx.out(0).data<T>();
      T* dcp = ctx.out(1).data<T>();
      ctx.pool.ParallelFor(n, RowGrain(h), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const T* gr = g + r * 4 * h;
          T* dgr = dg + r * 4 * h;
          for (int64_t j = 0; j < h; ++j) {
            const int64_t k = r * h + j;
            const A i = Sigmoid<A>(gr[j]), f = Sigmoid<A>(gr[h + j]), gg = std::tanh(static_cast<A>(gr[2 * h + j])),
                    o = Sigmoid<A>(gr[3 * h + j]);
            const A tc = std::tanh(static_cast<A>(cn[k]));
            const A dhv = dh ? static_cast<A>(dh[k]) : A(0);
            const A dct = (dc ? static_cast<A>(dc[k]) : A(0)) + dhv * o * (A(1) - tc * tc);
            dgr[j] = static_cast<T>(dct * gg * i * (A(1) - i));
            dgr[h + j] = static_cast<T>(dct * static_cast<A>(c[k]) * f * (A(1) - f));
            dgr[2 * h + j] = static_cast<T>(dct * i * (A(1) - gg * gg));
            dgr[3 * h + j] = static_cast<T>(dhv * tc * o * (A(1) - o));
            dcp[k] = static_cast<T>(dct * f);
          }
        }
      });
    }
  });
}

std::vector<TensorPtr> LstmBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("lstm_cell_pointwise_backward");
  if (!ctx.grad_outputs[0] && !ctx.grad_outputs[1]) return {nullptr, nullptr};
  const std::vector<TensorPtr> g =
      Apply(op, {ctx.grad_outputs[0], ctx.grad_outputs[1], ctx.inputs[0], ctx.inputs[1], ctx.outputs[1]});
  return {ctx.needs_input_grad[0] ? g[0] : nullptr, ctx.needs_input_grad[1] ? g[1] : nullptr};
}

// ---- gru ----------------------------------------------------------------------------------------

// (gi (N, 3H), gh (N, 3H), h (N, H)) -> h'.
std::vector<TensorMeta> InferGru(std::span<const TensorMeta> in, const Attrs&) {
  CheckGates(in[0], in[2], 3, "gi", "h");
  CheckGates(in[1], in[2], 3, "gh", "h");
  return {in[2]};
}

// (dh', gi, gh, h) -> (d gi, d gh, dh).
std::vector<TensorMeta> InferGruBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  const std::vector<TensorMeta> fwd = InferGru(in.subspan(1), attrs);
  OF_CHECK(in[0].dtype == fwd[0].dtype && in[0].shape == fwd[0].shape)
      << "dh must be " << fwd[0].dtype << " " << fwd[0].shape << ", got " << in[0].dtype << " " << in[0].shape;
  return {in[1], in[2], in[3]};
}

// The gates of unit j of a row: r, z, n and the hidden chunk h_n.
template <typename A, typename T>
void GruGates(const T* gi, const T* gh, int64_t h, int64_t j, A& r, A& z, A& nn, A& hn) {
  r = Sigmoid<A>(static_cast<A>(gi[j]) + static_cast<A>(gh[j]));
  z = Sigmoid<A>(static_cast<A>(gi[h + j]) + static_cast<A>(gh[h + j]));
  hn = static_cast<A>(gh[2 * h + j]);
  nn = std::tanh(static_cast<A>(gi[2 * h + j]) + r * hn);
}

void GruKernel(KernelContext& ctx) {
  const Tensor& gi = ctx.in(0);
  const int64_t n = gi.shape()[0].value(), h = ctx.in(2).shape()[1].value();
  VisitDType(gi.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      using A = AccOf<T>;
      const T* pi = gi.data<const T>();
      const T* ph = ctx.in(1).data<const T>();
      const T* hp = ctx.in(2).data<const T>();
      T* out = ctx.out(0).data<T>();
      ctx.pool.ParallelFor(n, RowGrain(h), [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          for (int64_t j = 0; j < h; ++j) {
            A r, z, nn, hn;
            GruGates<A>(pi + row * 3 * h, ph + row * 3 * h, h, j, r, z, nn, hn);
            out[row * h + j] = static_cast<T>((A(1) - z) * nn + z * static_cast<A>(hp[row * h + j]));
          }
        }
      });
    }
  });
}

void GruBackwardKernel(KernelContext& ctx) {
  const Tensor& gi = ctx.in(1);
  const int64_t n = gi.shape()[0].value(), h = ctx.in(3).shape()[1].value();
  VisitDType(gi.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      using A = AccOf<T>;
      const T* dh = ctx.in(0).data<const T>();
      const T* pi = gi.data<const T>();
      const T* ph = ctx.in(2).data<const T>();
      const T* hp = ctx.in(3).data<const T>();
      T* dgi = ctx.out(0).data<T>();
      T* dgh = ctx.out(1).data<T>();
      T* dhp = ctx.out(2).data<T>();
      ctx.pool.ParallelFor(n, RowGrain(h), [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t g0 = row * 3 * h;
          for (int64_t j = 0; j < h; ++j) {
            const int64_t k = row * h + j;
            A r, z, nn, hn;
            GruGates<A>(pi + g0, ph + g0, h, j, r, z, nn, hn);
            const A d = static_cast<A>(dh[k]);
            const A dn = d * (A(1) - z) * (A(1) - nn * nn);  // through tanh
            const A dz = d * (static_cast<A>(hp[k]) - nn) * z * (A(1) - z);
            const A dr = dn * hn * r * (A(1) - r);
            dgi[g0 + j] = dgh[g0 + j] = static_cast<T>(dr);
            dgi[g0 + h + j] = dgh[g0 + h + j] = static_cast<T>(dz);
            dgi[g0 + 2 * h + j] = static_cast<T>(dn);
            dgh[g0 + 2 * h + j] = static_cast<T>(dn * r);
            dhp[k] = static_cast<T>(d * z);
          }
        }
      });
    }
  });
}

std::vector<TensorPtr> GruBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("gru_cell_pointwise_backward");
  if (!ctx.grad_outputs[0]) return {nullptr, nullptr, nullptr};
  std::vector<TensorPtr> g = Apply(op, {ctx.grad_outputs[0], ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]});
  for (size_t i = 0; i < 3; ++i) {
    if (!ctx.needs_input_grad[i]) g[i] = nullptr;
  }
  return g;
}

// The cell's operands: x (N, I), h (N, H), w_ih (k H, I), w_hh (k H, H), biases (k H) or null. Dims
// unknown in a lazy graph are left to the ops that follow.
void CheckCell(std::string_view op, int64_t k, const TensorPtr& x, const TensorPtr& h, const TensorPtr& w_ih,
               const TensorPtr& w_hh, const TensorPtr& b_ih, const TensorPtr& b_hh) {
  const auto fail = [&](std::string_view name) -> void { OF_THROW(InvalidArgument) << op << ": input '" << name << "' is null"; };
  if (!x) fail("x");
  if (!h) fail("h");
  if (!w_ih) fail("w_ih");
  if (!w_hh) fail("w_hh");
  const Shape &xs = x->shape(), &hs = h->shape(), &wi = w_ih->shape(), &wh = w_hh->shape();
  OF_CHECK(xs.ndim() == 2 && hs.ndim() == 2) << op << ": x must be (N, I) and h (N, H), got x " << xs << " and h " << hs;
  const Dim hidden = hs[1];
  OF_CHECK(wi.ndim() == 2 && !Mismatch(wi[0], hidden * k) && !Mismatch(wi[1], xs[1]))
      << op << ": w_ih must be (" << k << " H, I) = (" << hidden * k << ", " << xs[1] << "), got " << wi;
  OF_CHECK(wh.ndim() == 2 && !Mismatch(wh[0], hidden * k) && !Mismatch(wh[1], hidden))
      << op << ": w_hh must be (" << k << " H, H) = (" << hidden * k << ", " << hidden << "), got " << wh;
  for (const auto& [b, name] : {std::pair{b_ih, "b_ih"}, std::pair{b_hh, "b_hh"}}) {
    if (!b) continue;
    OF_CHECK(b->shape().ndim() == 1 && !Mismatch(b->shape()[0], hidden * k))
        << op << ": " << name << " must be (" << k << " H) = (" << hidden * k << "), got " << b->shape();
  }
}

}  // namespace

namespace ops {

std::pair<TensorPtr, TensorPtr> LstmCell(const TensorPtr& x, const TensorPtr& h, const TensorPtr& c,
                                         const TensorPtr& w_ih, const TensorPtr& w_hh, const TensorPtr& b_ih,
                                         const TensorPtr& b_hh) {
  static const OpDef& op = OpRegistry::Global().Get("lstm_cell_pointwise");
  CheckCell("lstm_cell", 4, x, h, w_ih, w_hh, b_ih, b_hh);
  OF_CHECK(c) << "lstm_cell: input 'c' is null";
  bool same = c->shape().ndim() == 2;
  for (int64_t d = 0; same && d < 2; ++d) same = !Mismatch(c->shape()[d], h->shape()[d]);
  OF_CHECK(same) << "lstm_cell: c must have h's shape " << h->shape() << ", got " << c->shape();
  const TensorPtr gates = Add(Linear(x, w_ih, b_ih), Linear(h, w_hh, b_hh));
  std::vector<TensorPtr> out = Apply(op, {gates, c});
  return {std::move(out[0]), std::move(out[1])};
}

TensorPtr GruCell(const TensorPtr& x, const TensorPtr& h, const TensorPtr& w_ih, const TensorPtr& w_hh,
                  const TensorPtr& b_ih, const TensorPtr& b_hh) {
  static const OpDef& op = OpRegistry::Global().Get("gru_cell_pointwise");
  CheckCell("gru_cell", 3, x, h, w_ih, w_hh, b_ih, b_hh);
  return Apply1(op, {Linear(x, w_ih, b_ih), Linear(h, w_hh, b_hh), h});
}

}  // namespace ops

void RegisterRecurrentOps(OpRegistry& registry) {
  registry.Register(OpDef{.name = "lstm_cell_pointwise",
                          .inputs = {"gates", "c"},
                          .outputs = {"h_next", "c_next"},
                          .infer = InferLstm,
                          .backward = LstmBackward,
                          .kernels = CpuKernels(kFloatingTypes, LstmKernel)});
  registry.Register(OpDef{.name = "lstm_cell_pointwise_backward",
                          .inputs = {"dh", "dc", "gates", "c", "c_next"},
                          .optional_inputs = {"dh", "dc"},
                          .outputs = {"dgates", "dc_prev"},
                          .infer = InferLstmBackward,
                          .kernels = CpuKernels(kFloatingTypes, LstmBackwardKernel),
                          .dtype_input = 2});
  registry.Register(OpDef{.name = "gru_cell_pointwise",
                          .inputs = {"gi", "gh", "h"},
                          .outputs = {"h_next"},
                          .infer = InferGru,
                          .backward = GruBackward,
                          .kernels = CpuKernels(kFloatingTypes, GruKernel)});
  registry.Register(OpDef{.name = "gru_cell_pointwise_backward",
                          .inputs = {"dh", "gi", "gh", "h"},
                          .outputs = {"dgi", "dgh", "dh_prev"},
                          .infer = InferGruBackward,
                          .kernels = CpuKernels(kFloatingTypes, GruBackwardKernel),
                          .dtype_input = 1});
}

}  // namespace oneflow
