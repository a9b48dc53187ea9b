// lstm_cell and gru_cell (and their fused pointwise ops and backward ops) against float64 reference
// loops; gradients by finite differences, of one step and of a tiny LSTM sequence model that trains;
// errors; a lazy graph over an unknown batch dim.
#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

#include "core/autograd/autograd.h"
#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/ops/recurrent.h"
#include "core/train/optimizer.h"
#include "tests/core/test_util.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kFloating = FloatingDTypes();

double Sig(double x) { return 1 / (1 + std::exp(-x)); }

// x w^T + b for x (n, i), w (o, i), b (o) or empty.
std::vector<double> RefLinear(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                              int64_t n, int64_t in, int64_t out) {
  std::vector<double> y(static_cast<size_t>(n * out));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[static_cast<size_t>(o)];
      for (int64_t k = 0; k < in; ++k) s += x[static_cast<size_t>(r * in + k)] * w[static_cast<size_t>(o * in + k)];
      y[static_cast<size_t>(r * out + o)] = s;
    }
  }
  return y;
}

// The LSTM pointwise part: gates (n, 4h), c (n, h) -> h', c' (concatenated: first n h values h').
std::vector<double> RefLstmPointwise(const std::vector<double>& g, const std::vector<double>& c, int64_t n, int64_t h) {
  std::vector<double> out(static_cast<size_t>(2 * n * h));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < h; ++j) {
      const auto at = [&](int64_t k) { return g[static_cast<size_t>(r * 4 * h + k * h + j)]; };
      const double cn = Sig(at(1)) * c[static_cast<size_t>(r * h + j)] + Sig(at(0)) * std::tanh(at(2));
      out[static_cast<size_t>(r * h + j)] = Sig(at(3)) * std::tanh(cn);
      out[static_cast<size_t>(n * h + r * h + j)] = cn;
    }
  }
  return out;
}

// The GRU pointwise part: gi, gh (n, 3h), h (n, h) -> h'.
std::vector<double> RefGruPointwise(const std::vector<double>& gi, const std::vector<double>& gh,
                                    const std::vector<double>& hp, int64_t n, int64_t h) {
  std::vector<double> out(static_cast<size_t>(n * h));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < h; ++j) {
      const auto a = [&](const std::vector<double>& g, int64_t k) { return g[static_cast<size_t>(r * 3 * h + k * h + j)]; };
      const double rr = Sig(a(gi, 0) + a(gh, 0)), z = Sig(a(gi, 1) + a(gh, 1));
      const double nn = std::tanh(a(gi, 2) + rr * a(gh, 2));
      out[static_cast<size_t>(r * h + j)] = (1 - z) * nn + z * hp[static_cast<size_t>(r * h + j)];
    }
  }
  return out;
}

std::vector<double> Plus(std::vector<double> a, const std::vector<double>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// Central differences of <f(args), w> with respect to args[which].
std::vector<double> NumericGrad(const std::function<std::vector<double>(const std::vector<std::vector<double>>&)>& f,
                                std::vector<std::vector<double>> args, size_t which, const std::vector<double>& w) {
  std::vector<double> grad(args[which].size());
  const double eps = 1e-6;
  for (size_t i = 0; i < grad.size(); ++i) {
    const double saved = args[which][i];
    double sides[2];
    for (int s = 0; s < 2; ++s) {
      args[which][i] = saved + (s == 0 ? eps : -eps);
      const std::vector<double> y = f(args);
      double dot = 0;
      for (size_t k = 0; k < y.size(); ++k) dot += y[k] * w[k];
      sides[s] = dot;
    }
    args[which][i] = saved;
    grad[i] = (sides[0] - sides[1]) / (2 * eps);
  }
  return grad;
}

// A cell's gate pre-activations: ops::Linear results, so rounded to the cell's dtype.
std::vector<double> CellLinear(Symbol<DType> dtype, const TensorPtr& x, const TensorPtr& w, const TensorPtr& b,
                               int64_t n, int64_t in, int64_t out) {
  return RoundedTo(dtype, RefLinear(ToDoubles(x), ToDoubles(w), b ? ToDoubles(b) : std::vector<double>{}, n, in, out));
}

// The cells' absolute tolerance. In a half dtype a pre-activation within float32's error of a rounding
// boundary may round to the neighbouring half value (one ulp, up to RtolFor * |gate|), which the
// pointwise part carries into the outputs with a factor of at most about one.
double CellAtol(Symbol<DType> dtype, const std::vector<double>& gates) {
  double largest = 0;
  for (double g : gates) largest = std::max(largest, std::abs(g));
  return TolFor(dtype, 1e-5, 1e-12) + (dtype->is_half() ? RtolFor(dtype) * largest : 0.0);
}

struct CellCase {
  int64_t n, in, h;
  bool bias;
};
const std::vector<CellCase> kCellCases = {{1, 1, 1, true}, {3, 5, 4, true}, {3, 5, 4, false}, {17, 9, 33, true},
                                          {0, 3, 2, true}};

TEST(Recurrent, LstmCellMatchesReference) {
  for (Symbol<DType> dtype : kFloating) {
    for (const CellCase& cc : kCellCases) {
      SCOPED_TRACE(fmt::format("{} n={} i={} h={} bias={}", dtype, cc.n, cc.in, cc.h, cc.bias));
      const TensorPtr x = RandomTensor(dtype, Shape{cc.n, cc.in}), h = RandomTensor(dtype, Shape{cc.n, cc.h}),
                      c = RandomTensor(dtype, Shape{cc.n, cc.h}), wi = RandomTensor(dtype, Shape{4 * cc.h, cc.in}),
                      wh = RandomTensor(dtype, Shape{4 * cc.h, cc.h});
      const TensorPtr bi = cc.bias ? RandomTensor(dtype, Shape{4 * cc.h}) : nullptr;
      const TensorPtr bh = cc.bias ? RandomTensor(dtype, Shape{4 * cc.h}) : nullptr;
      const std::vector<double> gates = Plus(
          CellLinear(dtype, x, wi, bi, cc.n, cc.in, 4 * cc.h), CellLinear(dtype, h, wh, bh, cc.n, cc.h, 4 * cc.h));
      const std::vector<double> ref = RefLstmPointwise(gates, ToDoubles(c), cc.n, cc.h);
      const std::vector<double> ref_h(ref.begin(), ref.begin() + cc.n * cc.h), ref_c(ref.begin() + cc.n * cc.h, ref.end());
      const double rtol = RtolFor(dtype) * 20, atol = CellAtol(dtype, gates);
      for (bool strided : {false, true}) {
        const auto layout = [&](const TensorPtr& t) { return strided && t ? NonContiguous(t) : t; };
        const auto [hn, cn] = ops::LstmCell(layout(x), layout(h), layout(c), layout(wi), layout(wh), layout(bi), layout(bh));
        ExpectTensorNear(hn, dtype, Shape{cc.n, cc.h}, ref_h, rtol, atol);
        ExpectTensorNear(cn, dtype, Shape{cc.n, cc.h}, ref_c, rtol, atol);
      }
    }
    MarkCovered("lstm_cell_pointwise", dtype);
  }
}

TEST(Recurrent, GruCellMatchesReference) {
  for (Symbol<DType> dtype : kFloating) {
    for (const CellCase& cc : kCellCases) {
      SCOPED_TRACE(fmt::format("{} n={} i={} h={} bias={}", dtype, cc.n, cc.in, cc.h, cc.bias));
      const TensorPtr x = RandomTensor(dtype, Shape{cc.n, cc.in}), h = RandomTensor(dtype, Shape{cc.n, cc.h}),
                      wi = RandomTensor(dtype, Shape{3 * cc.h, cc.in}), wh = RandomTensor(dtype, Shape{3 * cc.h, cc.h});
      const TensorPtr bi = cc.bias ? RandomTensor(dtype, Shape{3 * cc.h}) : nullptr;
      const TensorPtr bh = cc.bias ? RandomTensor(dtype, Shape{3 * cc.h}) : nullptr;
      const std::vector<double> gx = CellLinear(dtype, x, wi, bi, cc.n, cc.in, 3 * cc.h);
      const std::vector<double> gh = CellLinear(dtype, h, wh, bh, cc.n, cc.h, 3 * cc.h);
      const std::vector<double> ref = RefGruPointwise(gx, gh, ToDoubles(h), cc.n, cc.h);
      const double rtol = RtolFor(dtype) * 20, atol = CellAtol(dtype, Plus(gx, gh));
      for (bool strided : {false, true}) {
        const auto layout = [&](const TensorPtr& t) { return strided && t ? NonContiguous(t) : t; };
        ExpectTensorNear(ops::GruCell(layout(x), layout(h), layout(wi), layout(wh), layout(bi), layout(bh)), dtype,
                         Shape{cc.n, cc.h}, ref, rtol, atol);
      }
    }
    MarkCovered("gru_cell_pointwise", dtype);
  }
}

// The backward ops against finite differences of the float64 reference pointwise parts.
TEST(Recurrent, PointwiseBackwardOpsMatchReference) {
  const int64_t n = 3, h = 4;
  const OpRegistry& registry = OpRegistry::Global();
  for (Symbol<DType> dtype : kFloating) {
    SCOPED_TRACE(fmt::format("{}", dtype));
    const double rtol = RtolFor(dtype) * 50, atol = TolFor(dtype, 2e-5, 1e-8);
    {
      const TensorPtr g = RandomTensor(dtype, Shape{n, 4 * h}), c = RandomTensor(dtype, Shape{n, h});
      const TensorPtr dh = RandomTensor(dtype, Shape{n, h}), dc = RandomTensor(dtype, Shape{n, h});
      const std::vector<TensorPtr> fwd = Apply(registry.Get("lstm_cell_pointwise"), {g, c});
      const auto f = [&](const std::vector<std::vector<double>>& a) { return RefLstmPointwise(a[0], a[1], n, h); };
      for (int which : {0, 1, 2}) {  // dh and dc, dh only, dc only
        const TensorPtr dh_in = which == 2 ? nullptr : dh, dc_in = which == 1 ? nullptr : dc;
        std::vector<double> w = ToDoubles(dh);
        const std::vector<double> dcv = ToDoubles(dc);
        if (which == 2) std::fill(w.begin(), w.end(), 0.0);
        w.insert(w.end(), dcv.begin(), dcv.end());
        if (which == 1) std::fill(w.begin() + n * h, w.end(), 0.0);
        const std::vector<TensorPtr> got =
            Apply(registry.Get("lstm_cell_pointwise_backward"), {dh_in, dc_in, g, c, fwd[1]});
        const std::vector<std::vector<double>> args = {ToDoubles(g), ToDoubles(c)};
        ExpectTensorNear(got[0], dtype, g->shape(), NumericGrad(f, args, 0, w), rtol, atol);
        ExpectTensorNear(got[1], dtype, c->shape(), NumericGrad(f, args, 1, w), rtol, atol);
      }
      MarkCovered("lstm_cell_pointwise_backward", dtype);
    }
    {
      const TensorPtr gi = RandomTensor(dtype, Shape{n, 3 * h}), gh = RandomTensor(dtype, Shape{n, 3 * h}),
                      hp = RandomTensor(dtype, Shape{n, h}), dh = RandomTensor(dtype, Shape{n, h});
      const auto f = [&](const std::vector<std::vector<double>>& a) { return RefGruPointwise(a[0], a[1], a[2], n, h); };
      const std::vector<TensorPtr> got = Apply(registry.Get("gru_cell_pointwise_backward"), {dh, gi, gh, hp});
      const std::vector<std::vector<double>> args = {ToDoubles(gi), ToDoubles(gh), ToDoubles(hp)};
      const std::vector<double> w = ToDoubles(dh);
      ExpectTensorNear(got[0], dtype, gi->shape(), NumericGrad(f, args, 0, w), rtol, atol);
      ExpectTensorNear(got[1], dtype, gh->shape(), NumericGrad(f, args, 1, w), rtol, atol);
      ExpectTensorNear(got[2], dtype, hp->shape(), NumericGrad(f, args, 2, w), rtol, atol);
      MarkCovered("gru_cell_pointwise_backward", dtype);
    }
  }
}

TensorPtr Leaf(const Shape& shape, double lo = -1, double hi = 1) {
  TensorPtr t = RandomTensor(DType::Float64(), shape, lo, hi);
  t->set_requires_grad(true);
  return t;
}

TEST(Recurrent, Gradients) {
  const int64_t n = 2, in = 3, h = 2;
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias);
    std::vector<TensorPtr> lstm = {Leaf(Shape{n, in}), Leaf(Shape{n, h}), Leaf(Shape{n, h}), Leaf(Shape{4 * h, in}),
                                   Leaf(Shape{4 * h, h})};
    if (bias) lstm.insert(lstm.end(), {Leaf(Shape{4 * h}), Leaf(Shape{4 * h})});
    const auto b = [&](const std::vector<TensorPtr>& a, size_t i) { return i < a.size() ? a[i] : nullptr; };
    // h' and c' both flow: their sum weighs both outputs.
    ExpectGradientsMatch(
        [&](const auto& a) {
          const auto [hn, cn] = ops::LstmCell(a[0], a[1], a[2], a[3], a[4], b(a, 5), b(a, 6));
          return ops::Add(ops::MulScalar(hn, 2.0), cn);
        },
        lstm);
    // Only h' flows (c' unused): the backward gets no gradient for c'.
    ExpectGradientsMatch([&](const auto& a) { return ops::LstmCell(a[0], a[1], a[2], a[3], a[4], b(a, 5), b(a, 6)).first; },
                         lstm);
    std::vector<TensorPtr> gru = {Leaf(Shape{n, in}), Leaf(Shape{n, h}), Leaf(Shape{3 * h, in}), Leaf(Shape{3 * h, h})};
    if (bias) gru.insert(gru.end(), {Leaf(Shape{3 * h}), Leaf(Shape{3 * h})});
    ExpectGradientsMatch([&](const auto& a) { return ops::GruCell(a[0], a[1], a[2], a[3], b(a, 4), b(a, 5)); }, gru);
  }
}

// A tiny sequence model: an LSTM over 5 steps and a linear head on the last hidden state, fit to
// targets with SGD. Its gradients (through every step) match finite differences, and it learns.
TEST(Recurrent, TinyLstmSequenceModelTrains) {
  // Data and initial weights from a seed of their own, not from wherever the shared test generator is
  // after the tests before this one; 150 steps, since 30 halved the loss for only 6 of 9 seeds tried (150:
  // all of them).
  TestGenerator().ManualSeed(2024);
  const int64_t n = 4, in = 2, h = 3, steps = 5;
  std::vector<TensorPtr> xs;
  for (int64_t t = 0; t < steps; ++t) xs.push_back(RandomTensor(DType::Float64(), Shape{n, in}));
  const TensorPtr target = RandomTensor(DType::Float64(), Shape{n, 1}, -0.5, 0.5);
  const auto loss_of = [&](const std::vector<TensorPtr>& p) {
    TensorPtr hs = ops::ZerosLike(RandomTensor(DType::Float64(), Shape{n, h}));
    TensorPtr cs = hs;
    for (const TensorPtr& x : xs) std::tie(hs, cs) = ops::LstmCell(x, hs, cs, p[0], p[1], p[2], p[3]);
    const TensorPtr y = ops::Linear(hs, p[4], p[5]);
    const TensorPtr d = ops::Sub(y, target);
    return ops::Mean(ops::Mul(d, d));
  };
  std::vector<TensorPtr> params = {Leaf(Shape{4 * h, in}, -0.5, 0.5), Leaf(Shape{4 * h, h}, -0.5, 0.5),
                                   Leaf(Shape{4 * h}, -0.5, 0.5),     Leaf(Shape{4 * h}, -0.5, 0.5),
                                   Leaf(Shape{1, h}, -0.5, 0.5),      Leaf(Shape{1}, -0.5, 0.5)};
  ExpectGradientsMatch(loss_of, params);
  SGD opt(params, SgdOptions{.lr = 0.5});
  std::vector<double> losses;
  for (int step = 0; step < 150; ++step) {
    const TensorPtr loss = loss_of(params);
    losses.push_back(ToDoubles(loss)[0]);
    opt.ZeroGrad();
    Backward({loss}, {nullptr});
    opt.Step();
  }
  EXPECT_LT(losses.back(), 0.5 * losses.front()) << losses.front() << " -> " << losses.back();
}

TEST(Recurrent, Errors) {
  const auto t = [](const Shape& s, Symbol<DType> d = DType::Float32()) { return RandomTensor(d, s); };
  const TensorPtr x = t(Shape{2, 3}), h = t(Shape{2, 4}), c = t(Shape{2, 4});
  const TensorPtr wi = t(Shape{16, 3}), wh = t(Shape{16, 4});
  OF_EXPECT_ERROR(ops::LstmCell(t(Shape{3}), h, c, wi, wh, nullptr, nullptr), InvalidArgument, "lstm_cell:",
                  "x must be (N, I)", "(3,)");
  OF_EXPECT_ERROR(ops::LstmCell(x, h, c, t(Shape{12, 3}), wh, nullptr, nullptr), InvalidArgument, "lstm_cell:",
                  "w_ih must be (4 H, I) = (16, 3)", "(12, 3)");
  OF_EXPECT_ERROR(ops::LstmCell(x, h, c, wi, t(Shape{16, 3}), nullptr, nullptr), InvalidArgument, "w_hh must be");
  OF_EXPECT_ERROR(ops::LstmCell(x, h, c, wi, wh, t(Shape{15}), nullptr), InvalidArgument, "b_ih must be (4 H)");
  OF_EXPECT_ERROR(ops::LstmCell(x, h, t(Shape{2, 5}), wi, wh, nullptr, nullptr), InvalidArgument,
                  "c must have h's shape");
  OF_EXPECT_ERROR(ops::LstmCell(x, h, nullptr, wi, wh, nullptr, nullptr), InvalidArgument, "lstm_cell", "'c'");
  OF_EXPECT_ERROR(ops::LstmCell(x, h, t(Shape{2, 4}, DType::Float64()), wi, wh, nullptr, nullptr), InvalidArgument,
                  "lstm_cell_pointwise:", "c must have gates's dtype");
  OF_EXPECT_ERROR(ops::GruCell(x, t(Shape{3, 4}), t(Shape{12, 3}), t(Shape{12, 4}), nullptr, nullptr), InvalidArgument);
  OF_EXPECT_ERROR(ops::GruCell(x, h, t(Shape{16, 3}), t(Shape{12, 4}), nullptr, nullptr), InvalidArgument, "gru_cell:",
                  "w_ih must be (3 H, I) = (12, 3)");
  OF_EXPECT_ERROR(ops::GruCell(nullptr, h, wi, wh, nullptr, nullptr), InvalidArgument, "gru_cell", "'x'");
  OF_EXPECT_ERROR(Apply1(OpRegistry::Global().Get("gru_cell_pointwise"), {t(Shape{2, 12}, DType::Int32()),
                                                                              t(Shape{2, 12}, DType::Int32()),
                                                                              t(Shape{2, 4}, DType::Int32())}),
                  InvalidArgument, "gru_cell_pointwise:", "floating point");
}

TEST(Recurrent, LazyGraphOverAnUnknownBatch) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session_owner);
  const TensorPtr wi = RandomTensor(DType::Float64(), Shape{12, 2}), wh = RandomTensor(DType::Float64(), Shape{12, 3});
  const TensorPtr gwi = RandomTensor(DType::Float64(), Shape{9, 2}), gwh = RandomTensor(DType::Float64(), Shape{9, 3});
  graph::Graph g(session_owner, "cells", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr x = g.AddInput("x", DType::Float64(), Shape{Dim::Unknown(), 2});
  const TensorPtr h = g.AddInput("h", DType::Float64(), Shape{Dim::Unknown(), 3});
  const auto [hn, cn] = ops::LstmCell(x, h, h, wi, wh, nullptr, nullptr);
  EXPECT_EQ(hn->shape(), (Shape{Dim::Unknown(), 3}));
  g.AddOutput(hn);
  g.AddOutput(cn);
  g.AddOutput(ops::GruCell(x, h, gwi, gwh, nullptr, nullptr));
  g.EndBuild();
  for (int64_t n : {2, 5}) {
    const TensorPtr xv = RandomTensor(DType::Float64(), Shape{n, 2}), hv = RandomTensor(DType::Float64(), Shape{n, 3});
    const std::vector<TensorPtr> out = g.Run({xv, hv});
    const auto [eh, ec] = ops::LstmCell(xv, hv, hv, wi, wh, nullptr, nullptr);
    ExpectTensorNear(out[0], DType::Float64(), Shape{n, 3}, ToDoubles(eh), 1e-12, 1e-12);
    ExpectTensorNear(out[1], DType::Float64(), Shape{n, 3}, ToDoubles(ec), 1e-12, 1e-12);
    ExpectTensorNear(out[2], DType::Float64(), Shape{n, 3}, ToDoubles(ops::GruCell(xv, hv, gwi, gwh, nullptr, nullptr)),
                     1e-12, 1e-12);
  }
}

}  // namespace
}  // namespace oneflow::test
