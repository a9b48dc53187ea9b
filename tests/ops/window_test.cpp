// The window family (core/ops/window.h) against float64 loops written from the definitions:
// asymmetric padding (padding before, padding_end after) of conv2d, max_pool2d, avg_pool2d and
// fused_conv_bn_act (eager and through the graph's fusion), max pooling with indices, max_unpool2d;
// finite-difference gradients, errors, and a lazy graph with unknown dims at two sizes.
#include <cmath>
#include <limits>

#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/ops/fused.h"
#include "core/ops/window.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kDTypes = FloatingDTypes();
double Tol(Symbol<DType> dt) { return TolFor(dt, 2e-5, 1e-12); }

TensorPtr Leaf(const Shape& s) {
  TensorPtr t = RandomTensor(DType::Float64(), s);
  t->set_requires_grad(true);
  return t;
}

double MaxAbs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// Output length with begin / end padding; in ceil mode the last window must not start in the end padding.
int64_t OutLen(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, bool ceil_mode) {
  const int64_t span = in + pb + pe - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pb) --out;
  return out;
}

// ---- conv2d ---------------------------------------------------------------------------------------

struct ConvCase {
  Shape x;
  int64_t out, kh, kw;
  std::vector<int64_t> stride, padding, padding_end, dilation;
  int64_t groups;
  bool bias;

  Shape w_shape() const { return {out, x[1].value() / groups, kh, kw}; }
  Shape y_shape() const {
    return {x[0], out, OutLen(x[2].value(), kh, stride[0], padding[0], padding_end[0], dilation[0], false),
            OutLen(x[3].value(), kw, stride[1], padding[1], padding_end[1], dilation[1], false)};
  }
  ops::Conv2dOptions options() const { return {stride, padding, dilation, groups}; }
  std::string name() const {
    return fmt::format("x {} out {} k {}x{} stride [{}] padding [{}] end [{}] dilation [{}] groups {}", x, out, kh, kw,
                       fmt::join(stride, ","), fmt::join(padding, ","), fmt::join(padding_end, ","),
                       fmt::join(dilation, ","), groups);
  }
};

const std::vector<ConvCase> kConvCases = {
    {{2, 3, 7, 8}, 4, 3, 3, {1, 1}, {0, 0}, {1, 2}, {1, 1}, 1, true},     // zeros only after
    {{2, 3, 7, 8}, 4, 3, 3, {1, 1}, {2, 1}, {0, 0}, {1, 1}, 1, false},    // zeros only before
    {{1, 4, 9, 9}, 6, 3, 2, {2, 2}, {0, 1}, {1, 0}, {1, 1}, 2, true},     // TF SAME for stride 2
    {{2, 2, 6, 7}, 2, 3, 3, {1, 2}, {1, 0}, {3, 2}, {2, 1}, 2, true},     // dilated, depthwise
    {{1, 8, 10, 10}, 16, 7, 7, {2, 2}, {3, 3}, {2, 4}, {1, 1}, 1, false}, // a stem
    {{1, 0, 5, 5}, 2, 3, 3, {1, 1}, {0, 1}, {2, 0}, {1, 1}, 1, true},     // no channels: the bias (loops)
};

std::vector<double> RefConv(const ConvCase& k, const TensorPtr& x, const TensorPtr& w, const TensorPtr& b) {
  const std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w);
  const std::vector<double> bv = b ? ToDoubles(b) : std::vector<double>(static_cast<size_t>(k.out), 0.0);
  const Shape ys = k.y_shape(), ws = k.w_shape();
  const int64_t cg = k.x[1].value() / k.groups, og = k.out / k.groups;
  std::vector<double> y(static_cast<size_t>(ys.numel()));
  for (int64_t i = 0; i < ys.numel(); ++i) {
    const std::vector<int64_t> o = Unravel(i, ys);
    double s = bv[static_cast<size_t>(o[1])];
    for (int64_t ci = 0; ci < cg; ++ci) {
      for (int64_t ki = 0; ki < k.kh; ++ki) {
        for (int64_t kj = 0; kj < k.kw; ++kj) {
          const int64_t iy = o[2] * k.stride[0] - k.padding[0] + ki * k.dilation[0];
          const int64_t ix = o[3] * k.stride[1] - k.padding[1] + kj * k.dilation[1];
          if (iy < 0 || iy >= k.x[2].value() || ix < 0 || ix >= k.x[3].value()) continue;  // a padded zero
          s += xv[static_cast<size_t>(Ravel({o[0], o[1] / og * cg + ci, iy, ix}, k.x))] *
               wv[static_cast<size_t>(Ravel({o[1], ci, ki, kj}, ws))];
        }
      }
    }
    y[static_cast<size_t>(i)] = s;
  }
  return y;
}

TEST(WindowConv2d, AsymmetricPaddingMatchesReference) {
  for (Symbol<DType> dt : kDTypes) {
    for (const ConvCase& k : kConvCases) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
      const TensorPtr x = RandomTensor(dt, k.x), w = RandomTensor(dt, k.w_shape());
      const TensorPtr b = k.bias ? RandomTensor(dt, {k.out}) : TensorPtr();
      const std::vector<double> ref = RefConv(k, x, w, b);
      const double tol = Tol(dt) * std::max(1.0, MaxAbs(ref));
      ExpectTensorNear(ops::Conv2d(NonContiguous(x), NonContiguous(w), b, k.options(), k.padding_end), dt,
                       k.y_shape(), ref, Tol(dt), tol);
      MarkCovered("conv2d", dt);
    }
  }
}

// The backward ops run with the same attributes: their float32 oneDNN kernels against the float64 loops.
TEST(WindowConv2d, BackwardOpsAgreeAcrossDTypes) {
  for (const ConvCase& k : kConvCases) {
    if (k.x[1].value() == 0) continue;
    SCOPED_TRACE(k.name());
    std::vector<std::vector<double>> grads[2];
    const TensorPtr x64 = RandomTensor(DType::Float64(), k.x), w64 = RandomTensor(DType::Float64(), k.w_shape());
    const TensorPtr b64 = RandomTensor(DType::Float64(), {k.out});
    for (size_t d = 0; d < 2; ++d) {
      const Symbol<DType> dt = d == 0 ? DType::Float32() : DType::Float64();
      auto cast = [&](const TensorPtr& t) { return FromDoubles(dt, t->shape(), ToDoubles(t)); };
      const TensorPtr x = cast(x64), w = cast(w64), b = cast(b64);
      x->set_requires_grad(true);
      w->set_requires_grad(true);
      b->set_requires_grad(true);
      const TensorPtr y = ops::Conv2d(x, w, b, k.options(), k.padding_end);
      Backward({ops::Sum(ops::Mul(y, y))}, {nullptr});
      grads[d] = {ToDoubles(x->grad()), ToDoubles(w->grad()), ToDoubles(b->grad())};
    }
    for (size_t i = 0; i < 3; ++i) {
      for (size_t j = 0; j < grads[1][i].size(); ++j) {
        EXPECT_NEAR(grads[0][i][j], grads[1][i][j], 1e-4 * std::max(1.0, MaxAbs(grads[1][i]))) << i << " " << j;
      }
    }
  }
}

TEST(WindowConv2d, Gradients) {
  for (const ConvCase& k : kConvCases) {
    if (k.x.numel() > 400) continue;
    SCOPED_TRACE(k.name());
    std::vector<TensorPtr> in = {Leaf(k.x), Leaf(k.w_shape())};
    if (k.bias) in.push_back(Leaf({k.out}));
    ExpectGradientsMatch(
        [&](const std::vector<TensorPtr>& t) {
          return ops::Conv2d(t[0], t[1], k.bias ? t[2] : TensorPtr(), k.options(), k.padding_end);
        },
        in);
  }
}

TEST(WindowConv2d, SymmetricPaddingEndIsTheOldCall) {
  const TensorPtr x = RandomTensor(DType::Float32(), {2, 3, 8, 8}), w = RandomTensor(DType::Float32(), {4, 3, 3, 3});
  const ops::Conv2dOptions o{.stride = {2, 1}, .padding = {1, 2}};
  EXPECT_EQ(ToDoubles(ops::Conv2d(x, w, nullptr, o, {1, 2})), ToDoubles(ops::Conv2d(x, w, nullptr, o)));
  EXPECT_EQ(ToDoubles(ops::Conv2d(x, w, nullptr, o, {})), ToDoubles(ops::Conv2d(x, w, nullptr, o)));
}

TEST(WindowConv2d, Errors) {
  const TensorPtr x = RandomTensor(DType::Float32(), {1, 2, 5, 5}), w = RandomTensor(DType::Float32(), {3, 2, 3, 3});
  ExpectError([&] { ops::Conv2d(x, w, nullptr, {}, {-1, 0}); }, {"conv2d: ", "padding_end", "two values >= 0", "[-1, 0]"});
  ExpectError([&] { ops::Conv2d(x, w, nullptr, {}, {1, 1, 1}); }, {"conv2d: ", "padding_end", "two values"});
  ExpectError([&] { ops::Conv2d(RandomTensor(DType::Float32(), {1, 2, 2, 5}), w, nullptr, {}, {0, 1}); },
              {"conv2d: ", "output size", "padding_end (0, 1)"});
  ExpectError([&] { ops::Conv2d(x, w, nullptr, {}, {std::numeric_limits<int64_t>::max(), 0}); },
              {"conv2d: ", "padding_end[0]", "overflows int64"});
}

TEST(WindowConv2d, UnknownDimsFlowThroughInference) {
  const Dim n = Dim::NewSymbol("N");
  const std::vector<TensorMeta> in = {{DType::Float32(), Shape{n, 3, Dim(), 9}, Device::CPU()},
                                      {DType::Float32(), Shape{4, 3, 3, 3}, Device::CPU()},
                                      {}};
  const Attrs attrs{{"stride", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{0, 0}},
                    {"dilation", std::vector<int64_t>{1, 1}}, {"groups", int64_t{1}},
                    {"padding_end", std::vector<int64_t>{1, 1}}};
  EXPECT_EQ(OpRegistry::Global().Get("conv2d").infer(in, attrs)[0].shape, (Shape{n, 4, Dim(), 4}));
}

// fused_conv_bn_act takes conv2d's attributes, padding_end included: eager and through the fusion pass.
TEST(WindowConv2d, FusedConvBnActAgrees) {
  const ConvCase& k = kConvCases[2];
  for (Symbol<DType> dt : kDTypes) {
    SCOPED_TRACE(dt->name());
    const auto session = std::make_shared<Session>(SessionOptions{});
    SessionScope scope(*session);
    const TensorPtr x = RandomTensor(dt, k.x), w = RandomTensor(dt, k.w_shape()), b = RandomTensor(dt, {k.out});
    const TensorPtr gamma = RandomTensor(dt, {k.out}, 0.5, 1.5), beta = RandomTensor(dt, {k.out});
    const TensorPtr mean = RandomTensor(dt, {k.out}, -1, 1), var = RandomTensor(dt, {k.out}, 0.2, 2);
    auto eager = [&](const TensorPtr& xv) {
      const TensorPtr c = ops::Conv2d(xv, w, b, k.options(), k.padding_end);
      return ops::Relu(ops::BatchNorm(c, gamma, beta, mean, var, {.training = false}));
    };
    const TensorPtr expect = eager(x);
    const std::vector<double> ev = ToDoubles(expect);
    const double tol = Tol(dt) * std::max(1.0, MaxAbs(ev));
    Attrs attrs{{"stride", k.stride}, {"padding", k.padding}, {"dilation", k.dilation}, {"groups", k.groups},
                {"padding_end", k.padding_end}, {"eps", 1e-5}, {"relu", true}};
    ExpectTensorNear(Apply1(OpRegistry::Global().Get("fused_conv_bn_act"), {x, w, b, gamma, beta, mean, var}, attrs),
                     dt, expect->shape(), ev, Tol(dt), tol);

    graph::Graph g(session, "fused_asym", graph::GraphOptions{});
    g.BeginBuild();
    g.AddOutput(eager(g.AddInput("x", dt, k.x)));
    g.EndBuild();
    ExpectTensorNear(g.Run({x})[0], dt, expect->shape(), ev, Tol(dt), tol);
    const std::string dump = g.Dump();
    EXPECT_NE(dump.find("fused_conv_bn_act"), std::string::npos) << dump;
  }
}

// ---- max_pool2d / avg_pool2d -------------------------------------------------------------------------

struct PoolCase {
  Shape x;
  std::vector<int64_t> kernel, stride, padding, padding_end, dilation;
  bool ceil_mode, count_include_pad;

  int64_t Out(int a) const {
    return OutLen(x[2 + a].value(), kernel[a], stride[a], padding[a], padding_end[a], dilation[a], ceil_mode);
  }
  Shape y_shape() const { return {x[0], x[1], Out(0), Out(1)}; }
  ops::Pool2dOptions options(bool max) const {
    return {kernel, stride, padding, max ? dilation : std::vector<int64_t>{1, 1}, ceil_mode, count_include_pad};
  }
  std::string name() const {
    return fmt::format("x {} kernel [{}] stride [{}] padding [{}] end [{}] dilation [{}] ceil {} include_pad {}", x,
                       fmt::join(kernel, ","), fmt::join(stride, ","), fmt::join(padding, ","),
                       fmt::join(padding_end, ","), fmt::join(dilation, ","), ceil_mode, count_include_pad);
  }
};

const std::vector<PoolCase> kPoolCases = {
    {{1, 2, 7, 9}, {3, 3}, {2, 2}, {0, 0}, {1, 1}, {1, 1}, false, true},
    {{2, 3, 8, 7}, {2, 3}, {2, 1}, {1, 0}, {0, 1}, {1, 1}, false, true},
    {{2, 2, 8, 9}, {3, 3}, {2, 2}, {0, 1}, {1, 0}, {1, 1}, true, true},   // ceil: a window past the padding
    {{3, 1, 7, 6}, {3, 3}, {2, 2}, {1, 0}, {0, 1}, {1, 1}, true, false},
    {{2, 4, 9, 9}, {4, 4}, {3, 2}, {1, 2}, {2, 1}, {1, 1}, false, false},
    {{1, 3, 9, 10}, {3, 2}, {2, 1}, {0, 1}, {1, 0}, {2, 1}, false, true},  // dilated (max only)
    {{2, 16, 16, 16}, {3, 3}, {2, 2}, {0, 0}, {1, 1}, {1, 1}, false, true},
};

// Max over the window's input taps (the padding is -inf): values and the first maximum's index (the
// last NaN where NaNs are), as PyTorch.
std::pair<std::vector<double>, std::vector<double>> RefMax(const PoolCase& k, const std::vector<double>& xv) {
  const Shape ys = k.y_shape();
  const int64_t h = k.x[2].value(), w = k.x[3].value();
  std::vector<double> y, idx;
  for (int64_t i = 0; i < ys.numel(); ++i) {
    const std::vector<int64_t> o = Unravel(i, ys);
    double best = -INFINITY, best_i = -1;
    for (int64_t ki = 0; ki < k.kernel[0]; ++ki) {
      for (int64_t kj = 0; kj < k.kernel[1]; ++kj) {
        const int64_t iy = o[2] * k.stride[0] - k.padding[0] + ki * k.dilation[0];
        const int64_t ix = o[3] * k.stride[1] - k.padding[1] + kj * k.dilation[1];
        if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
        const double v = xv[static_cast<size_t>(Ravel({o[0], o[1], iy, ix}, k.x))];
        if (best_i < 0 || v > best || std::isnan(v)) {
          best = v;
          best_i = static_cast<double>(iy * w + ix);
        }
      }
    }
    y.push_back(best);
    idx.push_back(best_i);
  }
  return {y, idx};
}

// ONNX AveragePool with pads: count_include_pad divides by the window clipped to the padded input
// [-padding, in + padding_end), otherwise by its input cells.
std::vector<double> RefAvg(const PoolCase& k, const std::vector<double>& xv) {
  const Shape ys = k.y_shape();
  const int64_t h = k.x[2].value(), w = k.x[3].value();
  std::vector<double> y;
  for (int64_t i = 0; i < ys.numel(); ++i) {
    const std::vector<int64_t> o = Unravel(i, ys);
    const int64_t y0 = o[2] * k.stride[0] - k.padding[0], x0 = o[3] * k.stride[1] - k.padding[1];
    const int64_t y1 = std::min(y0 + k.kernel[0], h + k.padding_end[0]);
    const int64_t x1 = std::min(x0 + k.kernel[1], w + k.padding_end[1]);
    double s = 0, cells = 0;
    for (int64_t iy = std::max<int64_t>(y0, 0); iy < std::min(y1, h); ++iy) {
      for (int64_t ix = std::max<int64_t>(x0, 0); ix < std::min(x1, w); ++ix) {
        s += xv[static_cast<size_t>(Ravel({o[0], o[1], iy, ix}, k.x))];
        ++cells;
      }
    }
    y.push_back(s / (k.count_include_pad ? static_cast<double>((y1 - y0) * (x1 - x0)) : cells));
  }
  return y;
}

bool Dilated(const PoolCase& k) { return k.dilation != std::vector<int64_t>{1, 1}; }

TEST(WindowPool, MaxAsymmetricPaddingMatchesReference) {
  for (Symbol<DType> dt : kDTypes) {
    for (const PoolCase& k : kPoolCases) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
      const TensorPtr x = RandomTensor(dt, k.x);
      const auto [y, idx] = RefMax(k, ToDoubles(x));
      ExpectTensorNear(ops::MaxPool2d(NonContiguous(x), k.options(true), k.padding_end), dt, k.y_shape(), y, 0, 0);
      const auto [values, indices] = ops::MaxPool2dWithIndices(x, k.options(true), k.padding_end);
      ExpectTensorNear(values, dt, k.y_shape(), y, 0, 0);
      ExpectTensorNear(indices, DType::Int64(), k.y_shape(), idx, 0, 0);
      MarkCovered("max_pool2d", dt);
    }
  }
}

TEST(WindowPool, AvgAsymmetricPaddingMatchesReference) {
  for (Symbol<DType> dt : kDTypes) {
    for (const PoolCase& k : kPoolCases) {
      if (Dilated(k)) continue;
      for (bool include : {true, false}) {
        PoolCase c = k;
        c.count_include_pad = include;
        SCOPED_TRACE(fmt::format("{} {}", dt->name(), c.name()));
        const TensorPtr x = RandomTensor(dt, c.x);
        ExpectTensorNear(ops::AvgPool2d(NonContiguous(x), c.options(false), c.padding_end), dt, c.y_shape(),
                         RefAvg(c, ToDoubles(x)), Tol(dt), Tol(dt));
        MarkCovered("avg_pool2d", dt);
      }
    }
  }
}

// The backward ops with the same attributes: avg's float32 oneDNN kernel against the float64 loops.
TEST(WindowPool, BackwardAgreesAcrossDTypes) {
  for (const PoolCase& k : kPoolCases) {
    for (bool max : {true, false}) {
      if (!max && Dilated(k)) continue;
      SCOPED_TRACE(fmt::format("{} {}", max ? "max" : "avg", k.name()));
      const TensorPtr x64 = RandomTensor(DType::Float64(), k.x);
      std::vector<double> grads[2];
      for (size_t d = 0; d < 2; ++d) {
        const TensorPtr x = FromDoubles(d == 0 ? DType::Float32() : DType::Float64(), k.x, ToDoubles(x64));
        x->set_requires_grad(true);
        const TensorPtr y = max ? ops::MaxPool2d(x, k.options(true), k.padding_end)
                                : ops::AvgPool2d(x, k.options(false), k.padding_end);
        Backward({ops::Sum(ops::Mul(y, y))}, {nullptr});
        grads[d] = ToDoubles(x->grad());
      }
      for (size_t j = 0; j < grads[1].size(); ++j) EXPECT_NEAR(grads[0][j], grads[1][j], 1e-4) << j;
    }
  }
}

TEST(WindowPool, Gradients) {
  for (const PoolCase& k : kPoolCases) {
    if (k.x.numel() > 1000) continue;
    SCOPED_TRACE(k.name());
    ExpectGradientsMatch(
        [&](const std::vector<TensorPtr>& t) { return ops::MaxPool2d(t[0], k.options(true), k.padding_end); },
        {Leaf(k.x)});
    ExpectGradientsMatch(
        [&](const std::vector<TensorPtr>& t) {
          return ops::MaxPool2dWithIndices(t[0], k.options(true), k.padding_end).first;
        },
        {Leaf(k.x)});
    if (Dilated(k)) continue;
    ExpectGradientsMatch(
        [&](const std::vector<TensorPtr>& t) { return ops::AvgPool2d(t[0], k.options(false), k.padding_end); },
        {Leaf(k.x)});
  }
}

TEST(WindowPool, SymmetricPaddingEndIsTheOldCall) {
  const TensorPtr x = RandomTensor(DType::Float32(), {2, 3, 9, 8});
  const ops::Pool2dOptions o{.kernel_size = {3, 3}, .stride = {2, 2}, .padding = {1, 1}, .ceil_mode = true};
  EXPECT_EQ(ToDoubles(ops::MaxPool2d(x, o, {1, 1})), ToDoubles(ops::MaxPool2d(x, o)));
  EXPECT_EQ(ToDoubles(ops::AvgPool2d(x, o, {1, 1})), ToDoubles(ops::AvgPool2d(x, o)));
}

TEST(WindowPool, Errors) {
  const TensorPtr x = RandomTensor(DType::Float32(), {2, 3, 6, 6});
  const ops::Pool2dOptions o{.kernel_size = {3, 3}};
  ExpectError([&] { ops::MaxPool2d(x, o, {2, 0}); }, {"max_pool2d: ", "padding_end [2, 0]", "half of kernel_size [3, 3]"});
  ExpectError([&] { ops::AvgPool2d(x, o, {0, -1}); }, {"avg_pool2d: ", "padding_end", ">= 0"});
  ExpectError([&] { ops::MaxPool2dWithIndices(x, o, {1}); }, {"max_pool2d: ", "padding_end", "two values"});
  ExpectError([&] { ops::MaxPool2d(RandomTensor(DType::Float32(), {1, 1, 2, 2}), o, {1, 0}); },
              {"max_pool2d: ", "output size", "padding_end (1, 0)"});
}

TEST(WindowPool, UnknownDimsFlowThroughInference) {
  const Dim n = Dim::NewSymbol("N");
  const std::vector<TensorMeta> in = {{DType::Float32(), Shape{n, 3, Dim(), 9}, Device::CPU()}};
  const Attrs attrs{{"kernel_size", std::vector<int64_t>{3, 3}}, {"stride", std::vector<int64_t>{2, 2}},
                    {"padding", std::vector<int64_t>{0, 0}}, {"padding_end", std::vector<int64_t>{1, 1}},
                    {"dilation", std::vector<int64_t>{1, 1}}, {"ceil_mode", false}};
  const std::vector<TensorMeta> out = OpRegistry::Global().Get("max_pool2d").infer(in, attrs);
  EXPECT_EQ(out[0].shape, (Shape{n, 3, Dim(), 4}));
  EXPECT_EQ(out[1].shape, (Shape{n, 3, Dim(), 4}));
  EXPECT_EQ(out[1].dtype, DType::Int64());
}

// ---- max pooling with indices: ties and NaN -------------------------------------------------------------

TEST(MaxPool2dWithIndices, TiesNaNAndInfinities) {
  const ops::Pool2dOptions o{.kernel_size = {2, 2}};
  for (Symbol<DType> dt : kDTypes) {
    // Ties: the first maximum in row-major window order; NaN: the last NaN, as PyTorch.
    const TensorPtr x = FromDoubles(dt, {1, 2, 2, 4}, {3, 1, 2, NAN, 0, 3, NAN, 7,  //
                                                       -INFINITY, -INFINITY, 5, 5, -INFINITY, -INFINITY, 5, 5});
    const auto [v, i] = ops::MaxPool2dWithIndices(x, o);
    ExpectTensorNear(v, dt, {1, 2, 1, 2}, {3, NAN, -INFINITY, 5}, 0, 0);
    ExpectTensorNear(i, DType::Int64(), {1, 2, 1, 2}, {0, 6, 0, 2}, 0, 0);
    // The gradient goes to the index's position only.
    const TensorPtr xg = FromDoubles(dt, {1, 1, 2, 2}, {4, 4, 1, 4});
    xg->set_requires_grad(true);
    Backward({ops::Sum(ops::MaxPool2dWithIndices(xg, o).first)}, {nullptr});
    ExpectTensorNear(xg->grad(), dt, {1, 1, 2, 2}, {1, 0, 0, 0}, 0, 0);
    // Empty batch: empty values and indices.
    const auto [ev, ei] = ops::MaxPool2dWithIndices(RandomTensor(dt, {0, 3, 4, 4}), o);
    EXPECT_EQ(ev->shape(), (Shape{0, 3, 2, 2}));
    EXPECT_EQ(ei->shape(), (Shape{0, 3, 2, 2}));
  }
}

// ---- max_unpool2d -------------------------------------------------------------------------------------

const std::vector<Symbol<DType>> kUnpoolDTypes = {DType::Float16(), DType::BFloat16(), DType::Float32(),
                                                  DType::Float64(), DType::Int8(),     DType::UInt8(),
                                                  DType::Int16(),   DType::Int32(),    DType::Int64()};

std::vector<double> RefUnpool(const Shape& xs, const std::vector<double>& xv, const std::vector<double>& iv,
                              const Shape& ys) {
  std::vector<double> y(static_cast<size_t>(ys.numel()), 0.0);
  const int64_t in_plane = xs[2].value() * xs[3].value(), out_plane = ys[2].value() * ys[3].value();
  for (int64_t i = 0; i < xs.numel(); ++i) {
    y[static_cast<size_t>(i / in_plane * out_plane + static_cast<int64_t>(iv[static_cast<size_t>(i)]))] =
        xv[static_cast<size_t>(i)];
  }
  return y;
}

TEST(MaxUnpool2d, InvertsMaxPoolingWithIndices) {
  struct Case {
    Shape x;
    ops::Pool2dOptions o;
    std::vector<int64_t> padding_end, output_size;
    Shape y;  // the unpooled shape
  };
  const std::vector<Case> cases = {
      {{2, 3, 6, 8}, {.kernel_size = {2, 2}}, {}, {}, {2, 3, 6, 8}},
      {{1, 2, 7, 7}, {.kernel_size = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}, {}, {}, {1, 2, 7, 7}},
      {{1, 2, 7, 7}, {.kernel_size = {2, 2}}, {}, {7, 7}, {1, 2, 7, 7}},  // the odd size needs output_size
      {{2, 1, 8, 7}, {.kernel_size = {3, 3}, .stride = {2, 2}, .padding = {0, 1}}, {1, 0}, {8, 7}, {2, 1, 8, 7}},
  };
  for (Symbol<DType> dt : kUnpoolDTypes) {
    for (const Case& c : cases) {
      SCOPED_TRACE(fmt::format("{} x {}", dt->name(), c.x));
      const TensorPtr x = RandomTensor(dt->is_floating_point() ? dt : DType::Float64(), c.x, 0, 100);
      const auto [v64, idx] = ops::MaxPool2dWithIndices(x, c.o, c.padding_end);
      const TensorPtr v = FromDoubles(dt, v64->shape(), ToDoubles(v64));
      const TensorPtr y = ops::MaxUnpool2d(NonContiguous(v), NonContiguous(idx), c.o, c.output_size, c.padding_end);
      ExpectTensorNear(y, dt, c.y, RefUnpool(v->shape(), ToDoubles(v), ToDoubles(idx), c.y), 0, 0);
      MarkCovered("max_unpool2d", dt);
    }
  }
}

TEST(MaxUnpool2d, ArbitraryIndicesAndTheBackwardOp) {
  const OpDef& bwd = OpRegistry::Global().Get("max_unpool2d_backward");
  const ops::Pool2dOptions o{.kernel_size = {2, 2}};
  for (Symbol<DType> dt : kUnpoolDTypes) {
    SCOPED_TRACE(dt->name());
    const Shape xs{2, 3, 3, 4}, ys{2, 3, 6, 8};
    const TensorPtr x = RandomTensor(dt, xs, 0, 100);
    // Any positions, repeats included (the later element wins).
    const TensorPtr idx = RandomTensor(DType::Int64(), xs, 0, 48);
    ExpectTensorNear(ops::MaxUnpool2d(x, idx, o), dt, ys, RefUnpool(xs, ToDoubles(x), ToDoubles(idx), ys), 0, 0);
    // The backward gathers grad_y at the indices.
    const TensorPtr dy = RandomTensor(dt, ys, 0, 100);
    const std::vector<double> dyv = ToDoubles(dy), iv = ToDoubles(idx);
    std::vector<double> dx;
    for (int64_t i = 0; i < xs.numel(); ++i) {
      dx.push_back(dyv[static_cast<size_t>(i / 12 * 48 + static_cast<int64_t>(iv[static_cast<size_t>(i)]))]);
    }
    ExpectTensorNear(Apply1(bwd, {NonContiguous(dy), idx}, {}), dt, xs, dx, 0, 0);
    MarkCovered("max_unpool2d_backward", dt);
  }
}

// Windows that do not overlap give distinct indices (with repeats only the last write reaches y, while
// the gradient, as PyTorch's, gathers for every one).
TEST(MaxUnpool2d, Gradients) {
  const ops::Pool2dOptions o{.kernel_size = {2, 2}, .padding = {1, 0}};
  const auto [_, idx] = ops::MaxPool2dWithIndices(RandomTensor(DType::Float64(), {2, 2, 7, 6}), o, {0, 1});
  ExpectGradientsMatch([&](const std::vector<TensorPtr>& t) { return ops::MaxUnpool2d(t[0], idx, o, {7, 6}, {0, 1}); },
                       {Leaf(idx->shape())});
  // Through pooling and unpooling: the gradient reaches each window's maximum.
  ExpectGradientsMatch(
      [&](const std::vector<TensorPtr>& t) {
        const auto [v, i] = ops::MaxPool2dWithIndices(t[0], o, {0, 1});
        return ops::MaxUnpool2d(v, i, o, {7, 6}, {0, 1});
      },
      {Leaf({2, 2, 7, 6})});
}

TEST(MaxUnpool2d, EmptyAndEdgeShapes) {
  const ops::Pool2dOptions o{.kernel_size = {2, 2}};
  const TensorPtr e = ops::MaxUnpool2d(RandomTensor(DType::Float32(), {0, 3, 2, 2}),
                                       RandomTensor(DType::Int64(), {0, 3, 2, 2}, 0, 1), o);
  EXPECT_EQ(e->shape(), (Shape{0, 3, 4, 4}));
  // An empty x plane gives zeros of the requested size.
  const TensorPtr z = ops::MaxUnpool2d(RandomTensor(DType::Float64(), {1, 1, 0, 2}),
                                       RandomTensor(DType::Int64(), {1, 1, 0, 2}, 0, 1), o, {1, 4});
  ExpectTensorNear(z, DType::Float64(), {1, 1, 1, 4}, {0, 0, 0, 0});
}

TEST(MaxUnpool2d, Errors) {
  const ops::Pool2dOptions o{.kernel_size = {2, 2}};
  const TensorPtr x = RandomTensor(DType::Float32(), {1, 2, 2, 3});
  const TensorPtr idx = FromDoubles(DType::Int64(), {1, 2, 2, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 24});
  ExpectError([&] { ops::MaxUnpool2d(x, idx, o); },
              {"max_unpool2d: ", "indices[0, 1, 1, 2] = 24", "outside the output plane of 4 x 6 = 24"});
  const TensorPtr neg = FromDoubles(DType::Int64(), {1, 2, 2, 3}, {0, -1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  ExpectError([&] { ops::MaxUnpool2d(x, neg, o); }, {"max_unpool2d: ", "indices[0, 0, 0, 1] = -1"});
  ExpectError([&] { ops::MaxUnpool2d(x, RandomTensor(DType::Int32(), {1, 2, 2, 3}, 0, 4), o); },
              {"max_unpool2d: ", "indices must be int64", "int32"});
  ExpectError([&] { ops::MaxUnpool2d(x, RandomTensor(DType::Int64(), {1, 2, 3, 2}, 0, 4), o); },
              {"max_unpool2d: ", "indices (1, 2, 3, 2)", "x's shape (1, 2, 2, 3)"});
  ExpectError([&] { ops::MaxUnpool2d(RandomTensor(DType::Float32(), {2, 2, 3}), idx, o); },
              {"max_unpool2d: ", "x must be 4-D"});
  ExpectError([&] { ops::MaxUnpool2d(x, idx, o, {7, 6}); },
              {"max_unpool2d: ", "output_size [7, 6]", "within stride [2, 2]", "[2, 6]"});
  ExpectError([&] { ops::MaxUnpool2d(x, idx, o, {4}); }, {"max_unpool2d: ", "output_size", "two values"});
  ExpectError([&] { ops::MaxUnpool2d(x, idx, {.kernel_size = {0, 2}}); }, {"max_unpool2d: ", "kernel_size"});
  ExpectError([&] { ops::MaxUnpool2d(x, idx, o, {}, {-2, 0}); }, {"max_unpool2d: ", "padding_end"});
  ExpectError(
      [&] {
        ops::MaxUnpool2d(RandomTensor(DType::Float32(), {1, 1, 1, 2}), RandomTensor(DType::Int64(), {1, 1, 1, 2}, 0, 1),
                         {.kernel_size = {2, 2}, .padding = {1, 1}});
      },
      {"max_unpool2d: ", "output size would be (0, 2)", ">= 1"});
  ExpectError([&] { ops::MaxUnpool2d(FromDoubles(DType::Bool(), {1, 2, 2, 3}, std::vector<double>(12, 1)), idx, o); },
              {"max_unpool2d: ", "bool"});
  ExpectError(
      [&] {
        ops::MaxUnpool2d(RandomTensor(DType::Float32(), {1, 1, 2, 2}), RandomTensor(DType::Int64(), {1, 1, 2, 2}, 0, 1),
                         {.kernel_size = {2, 2}, .stride = {std::numeric_limits<int64_t>::max(), 1}});
      },
      {"max_unpool2d: ", "overflows int64"});
  // A default size at int64's limit, whose bounds one stride away overflow int64 (found by fuzz_ops): the
  // output_size's range is checked exactly, and shown clamped.
  constexpr int64_t kHalf = int64_t{1} << 62;
  const TensorPtr x22 = RandomTensor(DType::Float32(), {1, 1, 2, 2});
  const TensorPtr idx22 = RandomTensor(DType::Int64(), {1, 1, 2, 2}, 0, 1);
  ExpectError(
      [&] {
        ops::MaxUnpool2d(x22, idx22, {.kernel_size = {kHalf - 1, 1}, .stride = {kHalf, 1}}, {5, 2});
      },
      {"max_unpool2d: ", "output_size [5, 2]", "allows [4611686018427387903, 9223372036854775807]"});
  const OpDef& bwd = OpRegistry::Global().Get("max_unpool2d_backward");
  const TensorPtr dy = RandomTensor(DType::Float32(), {1, 2, 4, 6});
  ExpectError([&] { Apply1(bwd, {dy, RandomTensor(DType::Int64(), {1, 3, 2, 3}, 0, 4)}, {}); },
              {"max_unpool2d_backward: ", "indices (1, 3, 2, 3)", "grad_y's (N, C) = (1, 2)"});
  ExpectError([&] { Apply1(bwd, {dy, FromDoubles(DType::Int64(), {1, 2, 1, 1}, {24, 0})}, {}); },
              {"max_unpool2d_backward: ", "indices[0, 0, 0, 0] = 24", "outside the output plane"});
}

TEST(MaxUnpool2d, UnknownDimsFlowThroughInference) {
  const Dim n = Dim::NewSymbol("N");
  const std::vector<TensorMeta> in = {{DType::Float32(), Shape{n, 3, Dim(), 4}, Device::CPU()},
                                      {DType::Int64(), Shape{n, 3, Dim(), 4}, Device::CPU()}};
  Attrs attrs{{"kernel_size", std::vector<int64_t>{3, 3}}, {"stride", std::vector<int64_t>{2, 2}},
              {"padding", std::vector<int64_t>{1, 1}}, {"padding_end", std::vector<int64_t>{}},
              {"output_size", std::vector<int64_t>{}}};
  const OpDef& op = OpRegistry::Global().Get("max_unpool2d");
  EXPECT_EQ(op.infer(in, attrs)[0].shape, (Shape{n, 3, Dim(), 7}));
  attrs.Set("output_size", std::vector<int64_t>{9, 8});
  EXPECT_EQ(op.infer(in, attrs)[0].shape, (Shape{n, 3, 9, 8}));
}

// Pooling with asymmetric padding and its indices, then unpooling, traced with an unknown batch and
// height: one graph runs two sizes equal to eager.
TEST(MaxUnpool2d, LazyGraphWithUnknownDimsRunsTwoSizes) {
  const auto session = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session);
  const ops::Pool2dOptions o{.kernel_size = {3, 3}, .stride = {2, 2}, .padding = {1, 0}};
  const std::vector<int64_t> end = {0, 1};
  auto forward = [&](const TensorPtr& x) {
    const auto [v, i] = ops::MaxPool2dWithIndices(x, o, end);
    return ops::AvgPool2d(ops::MaxUnpool2d(v, i, o, {}, end), {.kernel_size = {2, 2}, .padding = {0, 1}}, {1, 0});
  };
  graph::Graph g(session, "unpool", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr y = forward(g.AddInput("x", DType::Float64(), Shape{Dim::Unknown(), 2, Dim::Unknown(), 6}));
  EXPECT_FALSE(y->shape()[2].is_known());
  g.AddOutput(y);
  g.EndBuild();
  for (int64_t batch : {2, 3}) {
    const int64_t h = batch == 2 ? 8 : 10;  // sizes the default unpooled size maps back to
    const TensorPtr x = RandomTensor(DType::Float64(), {batch, 2, h, 6});
    const TensorPtr expect = forward(x);
    const std::vector<TensorPtr> out = g.Run({x});
    EXPECT_EQ(out[0]->shape(), expect->shape());
    EXPECT_EQ(ToDoubles(out[0]), ToDoubles(expect));
  }
}

}  // namespace
}  // namespace oneflow::test
