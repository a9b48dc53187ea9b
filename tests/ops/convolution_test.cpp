// conv3d, conv_transpose2d and the 1-D composites conv1d and conv_transpose1d (core/ops/convolution.h) against
// float64 reference loops written here; gradients by finite differences; lazy graphs with an unknown
// length run at two lengths equal to eager.
#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/ops/convolution.h"
#include "core/train/optimizer.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kDTypes = FloatingDTypes();
double Tol(Symbol<DType> dt) { return TolFor(dt, 2e-4, 1e-10); }

TensorPtr Leaf(const Shape& s) {
  TensorPtr t = RandomTensor(DType::Float64(), s);
  t->set_requires_grad(true);
  return t;
}

size_t At(const std::vector<int64_t>& index, const Shape& shape) { return static_cast<size_t>(Ravel(index, shape)); }

// ---- conv_transpose2d -----------------------------------------------------------------------------

struct TransposeCase {
  Shape x;
  int64_t out, kh, kw;
  std::vector<int64_t> stride, padding, output_padding, dilation;
  int64_t groups;
  bool bias;

  int64_t n() const { return x[0].value(); }
  int64_t c() const { return x[1].value(); }
  int64_t h() const { return x[2].value(); }
  int64_t w() const { return x[3].value(); }
  int64_t oh() const { return (h() - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1; }
  int64_t ow() const { return (w() - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1; }
  Shape weight_shape() const { return {c(), out / groups, kh, kw}; }
  Shape y_shape() const { return {n(), out, oh(), ow()}; }
  ops::ConvTranspose2dOptions options() const { return {stride, padding, output_padding, dilation, groups}; }
  std::string name() const {
    return fmt::format("x {} out {} k {}x{} stride [{}] padding [{}] output_padding [{}] dilation [{}] groups {} bias {}",
                       x, out, kh, kw, fmt::join(stride, ","), fmt::join(padding, ","), fmt::join(output_padding, ","),
                       fmt::join(dilation, ","), groups, bias);
  }
};

// Every input element scattered through every tap: y[n, o, iy*s - p + ki*d, ...] += x[n, c, iy, ix] * w[c, o', ki, kj].
std::vector<double> RefConvTranspose(const TransposeCase& k, const TensorPtr& x, const TensorPtr& w,
                                     const TensorPtr& bias) {
  const std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w);
  const Shape ys = k.y_shape(), ws = k.weight_shape();
  std::vector<double> y(static_cast<size_t>(ys.numel()), 0.0);
  if (bias) {
    const std::vector<double> bv = ToDoubles(bias);
    for (int64_t i = 0; i < ys.numel(); ++i) y[static_cast<size_t>(i)] = bv[static_cast<size_t>(Unravel(i, ys)[1])];
  }
  const int64_t cg = k.c() / k.groups, og = k.out / k.groups;
  for (int64_t b = 0; b < k.n(); ++b)
    for (int64_t c = 0; c < k.c(); ++c)
      for (int64_t iy = 0; iy < k.h(); ++iy)
        for (int64_t ix = 0; ix < k.w(); ++ix)
          for (int64_t o = 0; o < og; ++o)
            for (int64_t ki = 0; ki < k.kh; ++ki)
              for (int64_t kj = 0; kj < k.kw; ++kj) {
                const int64_t oy = iy * k.stride[0] - k.padding[0] + ki * k.dilation[0];
                const int64_t ox = ix * k.stride[1] - k.padding[1] + kj * k.dilation[1];
                if (oy < 0 || oy >= k.oh() || ox < 0 || ox >= k.ow()) continue;
                y[At({b, c / cg * og + o, oy, ox}, ys)] += xv[At({b, c, iy, ix}, k.x)] * wv[At({c, o, ki, kj}, ws)];
              }
  return y;
}

const std::vector<TransposeCase> kTransposeCases = {
    {{1, 3, 4, 5}, 2, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, true},
    {{2, 4, 3, 4}, 6, 3, 2, {2, 2}, {1, 0}, {1, 0}, {1, 1}, 2, true},
    {{2, 3, 5, 4}, 4, 2, 3, {2, 3}, {1, 2}, {1, 2}, {2, 1}, 1, false},
    {{1, 4, 4, 4}, 4, 3, 3, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 4, true},  // depthwise
    {{2, 16, 7, 7}, 8, 4, 4, {2, 2}, {1, 1}, {0, 0}, {1, 1}, 1, true},  // a DCGAN-style upsampling
    {{1, 3, 3, 3}, 2, 1, 1, {2, 2}, {0, 0}, {1, 1}, {1, 1}, 1, false},
    // output_padding >= stride, below dilation (PyTorch allows it): x is zero-padded first.
    {{2, 2, 3, 4}, 3, 3, 2, {1, 2}, {1, 0}, {2, 3}, {3, 4}, 1, true},
    {{1, 2, 2, 2}, 2, 2, 2, {1, 1}, {0, 0}, {1, 0}, {2, 1}, 2, true},
};

// Empty operands and attributes beyond oneDNN's int32 descriptors (the loops run there).
const std::vector<TransposeCase> kTransposeEdgeCases = {
    {{0, 3, 3, 3}, 2, 2, 2, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, true},  // N = 0
    {{1, 0, 3, 3}, 2, 2, 2, {2, 1}, {0, 0}, {1, 0}, {1, 1}, 1, true},  // no input channels: the bias
    {{1, 3, 3, 3}, 0, 2, 2, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, true},  // no output channels
    {{1, 2, 1, 2}, 2, 2, 2, {int64_t{1} << 40, 3}, {0, 1}, {0, 2}, {1, 1}, 1, true},
    // Taps at -2^40, 0, 2^40 of which only the middle one lands in the output; a 1-wide kernel's dilation.
    {{1, 2, 2, 3}, 2, 3, 1, {1, 1}, {int64_t{1} << 40, 0}, {0, 0}, {int64_t{1} << 40, INT64_MAX}, 1, false},
};

void CheckTransposeForward(const TransposeCase& k, Symbol<DType> dt) {
  SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
  const TensorPtr x = RandomTensor(dt, k.x), w = RandomTensor(dt, k.weight_shape());
  const TensorPtr b = k.bias ? RandomTensor(dt, {k.out}) : TensorPtr();
  const std::vector<double> want = RefConvTranspose(k, x, w, b);
  ExpectTensorNear(ops::ConvTranspose2d(x, w, b, k.options()), dt, k.y_shape(), want, Tol(dt), Tol(dt));
  ExpectTensorNear(ops::ConvTranspose2d(NonContiguous(x), NonContiguous(w), b ? NonContiguous(b) : b, k.options()), dt,
                   k.y_shape(), want, Tol(dt), Tol(dt));
  {
    NoGradGuard no_grad;
    ExpectTensorNear(ops::ConvTranspose2d(x, w, b, k.options()), dt, k.y_shape(), want, Tol(dt), Tol(dt));
  }
  MarkCovered("conv_transpose2d", dt);
}

TEST(ConvTranspose2d, MatchesReferenceLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const TransposeCase& k : kTransposeCases) CheckTransposeForward(k, dt);
  }
}

TEST(ConvTranspose2d, EmptyOperandsAndHugeAttributesMatchReferenceLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const TransposeCase& k : kTransposeEdgeCases) CheckTransposeForward(k, dt);
  }
}

TEST(ConvTranspose2d, Gradients) {
  const std::vector<TransposeCase> cases = {
      {{1, 3, 3, 4}, 2, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, true},
      {{2, 4, 3, 3}, 4, 3, 2, {2, 2}, {1, 1}, {1, 0}, {1, 1}, 2, true},
      {{1, 2, 3, 3}, 3, 2, 3, {2, 3}, {1, 2}, {1, 2}, {2, 1}, 1, false},
      {{2, 2, 2, 3}, 2, 3, 2, {1, 2}, {1, 0}, {2, 3}, {3, 4}, 1, true},  // output_padding >= stride
  };
  for (const TransposeCase& k : cases) {
    SCOPED_TRACE(k.name());
    std::vector<TensorPtr> in = {Leaf(k.x), Leaf(k.weight_shape())};
    if (k.bias) in.push_back(Leaf({k.out}));
    ExpectGradientsMatch(
        [&](const std::vector<TensorPtr>& t) {
          return ops::ConvTranspose2d(t[0], t[1], t.size() > 2 ? t[2] : TensorPtr(), k.options());
        },
        in);
  }
  // One input at a time: the other gradients are skipped.
  const TransposeCase& k = cases[1];
  const TensorPtr x = RandomTensor(DType::Float64(), k.x), w = RandomTensor(DType::Float64(), k.weight_shape());
  ExpectGradientsMatch([&](const std::vector<TensorPtr>& t) { return ops::ConvTranspose2d(x, t[0], nullptr, k.options()); },
                       {Leaf(k.weight_shape())});
  ExpectGradientsMatch([&](const std::vector<TensorPtr>& t) { return ops::ConvTranspose2d(t[0], w, nullptr, k.options()); },
                       {Leaf(k.x)});
}

// The float32 gradients of `op` (x, weight, bias) equal the float64 ones at float32 tolerance, for
// random float64 operands of `shapes` and a random output gradient of `y_shape`.
template <typename Op>
void ExpectFloat32GradientsMatchFloat64(Op op, const std::vector<Shape>& shapes, const Shape& y_shape) {
  std::vector<TensorPtr> values;
  for (const Shape& shape : shapes) values.push_back(RandomTensor(DType::Float64(), shape));
  const TensorPtr seed = RandomTensor(DType::Float64(), y_shape);
  auto grads = [&](Symbol<DType> dt) {
    std::vector<TensorPtr> in;
    for (const TensorPtr& v : values) {
      in.push_back(FromDoubles(dt, v->shape(), ToDoubles(v)));
      in.back()->set_requires_grad(true);
    }
    const TensorPtr y = op(in[0], in[1], in[2]);
    Backward({ops::Sum(ops::Mul(y, FromDoubles(dt, seed->shape(), ToDoubles(seed))))}, {nullptr});
    std::vector<std::vector<double>> g;
    for (const TensorPtr& t : in) g.push_back(ToDoubles(t->grad()));
    return g;
  };
  const auto g32 = grads(DType::Float32()), g64 = grads(DType::Float64());
  for (size_t i = 0; i < values.size(); ++i) {
    ExpectTensorNear(FromDoubles(DType::Float64(), values[i]->shape(), g32[i]), DType::Float64(), values[i]->shape(),
                     g64[i], 1e-4, 1e-4);
  }
}

// float32 gradients (conv2d's float32 kernels) equal the float64 ones at float32 tolerance.
TEST(ConvTranspose2d, Float32GradientsMatchFloat64) {
  const TransposeCase k{{2, 4, 5, 4}, 6, 3, 3, {2, 2}, {1, 1}, {1, 0}, {1, 1}, 2, true};
  ExpectFloat32GradientsMatchFloat64(
      [&](const TensorPtr& x, const TensorPtr& w, const TensorPtr& b) { return ops::ConvTranspose2d(x, w, b, k.options()); },
      {k.x, k.weight_shape(), {k.out}}, k.y_shape());
}

TEST(ConvTranspose2d, Errors) {
  const Symbol<DType> f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {2, 4, 5, 5}), w = RandomTensor(f32, {4, 3, 3, 3});
  using Opts = ops::ConvTranspose2dOptions;
  auto call = [&](const TensorPtr& xx, const TensorPtr& ww, const TensorPtr& b, const Opts& o) {
    return [=] { ops::ConvTranspose2d(xx, ww, b, o); };
  };
  ExpectError(call(RandomTensor(f32, {4, 5, 5}), w, nullptr, {}), {"conv_transpose2d: ", "x must be 4-D", "(4, 5, 5)"});
  ExpectError(call(x, RandomTensor(f32, {4, 3, 3}), nullptr, {}), {"conv_transpose2d: ", "weight must be 4-D", "(4, 3, 3)"});
  ExpectError(call(x, RandomTensor(f32, {3, 3, 3, 3}), nullptr, {}),
              {"conv_transpose2d: ", "x (2, 4, 5, 5) has 4 channels", "weight (3, 3, 3, 3)", "weight.shape[0] = 3"});
  ExpectError(call(x, w, nullptr, {.groups = 3}), {"conv_transpose2d: ", "groups=3", "does not divide", "4 input channels"});
  ExpectError(call(x, w, nullptr, {.groups = 0}), {"conv_transpose2d: ", "groups must be >= 1"});
  ExpectError(call(x, w, nullptr, {.stride = {0, 1}}), {"conv_transpose2d: ", "stride", "[0, 1]"});
  ExpectError(call(x, w, nullptr, {.padding = {0, -1}}), {"conv_transpose2d: ", "padding", "[0, -1]"});
  ExpectError(call(x, w, nullptr, {.dilation = {1, 0}}), {"conv_transpose2d: ", "dilation", "[1, 0]"});
  ExpectError(call(x, w, nullptr, {.output_padding = {-1, 0}}), {"conv_transpose2d: ", "output_padding", "[-1, 0]"});
  ExpectError(call(x, w, nullptr, {.stride = {2, 2}, .output_padding = {0, 2}}),
              {"conv_transpose2d: ", "output_padding[1] is 2", "smaller than stride[1] = 2 or dilation[1] = 1"});
  ExpectError(call(RandomTensor(f32, {1, 1, 2, 2}), RandomTensor(f32, {1, 1, 2, 2}), nullptr, {.padding = {2, 0}}),
              {"conv_transpose2d: ", "output size would be < 1", "(1, 1, 2, 2)", "padding (2, 0)"});
  ExpectError(call(x, w, RandomTensor(f32, {5}), {}), {"conv_transpose2d: ", "bias", "out_channels = 3", "(5,)"});
  ExpectError(call(x, w, RandomTensor(DType::Float64(), {3}), {}), {"conv_transpose2d: ", "bias is float64", "x is float32"});
  ExpectError(call(x, RandomTensor(DType::Float64(), {4, 3, 3, 3}), nullptr, {}),
              {"conv_transpose2d: ", "weight is float64", "x is float32"});
  ExpectError(call(x, RandomTensor(f32, {4, 3, 0, 3}), nullptr, {}),
              {"conv_transpose2d: ", "weight (4, 3, 0, 3)", "empty kernel", ">= 1"});
  ExpectError(call(RandomTensor(f32, {2, 4, 0, 5}), w, nullptr, {}),
              {"conv_transpose2d: ", "x (2, 4, 0, 5)", "empty in (H, W)"});
  // Empty H with an output_padding >= stride: the same error (x is not padded first).
  ExpectError(call(RandomTensor(f32, {2, 4, 0, 5}), w, nullptr, {.output_padding = {1, 0}, .dilation = {2, 1}}),
              {"conv_transpose2d: ", "empty in (H, W)"});
  ExpectError(call(x, w, nullptr, {.stride = {INT64_MAX, 1}}),
              {"conv_transpose2d: ", "output size", "stride[0]", "overflows int64", "H = 5"});
  ExpectError(call(x, w, nullptr, {.dilation = {1, INT64_MAX}}),
              {"conv_transpose2d: ", "dilation[1]", "overflows int64", "kW = 3"});
  ExpectError(call(RandomTensor(DType::Bool(), {1, 4, 2, 2}), RandomTensor(DType::Bool(), {4, 1, 2, 2}), nullptr, {}),
              {"conv_transpose2d: ", "x is bool"});
  ExpectError(call(RandomTensor(DType::Int64(), {1, 4, 2, 2}), RandomTensor(DType::Int64(), {4, 1, 2, 2}), nullptr, {}),
              StatusCode::kUnimplemented, {"conv_transpose2d: ", "no kernel", "int64"});
  // The registry op itself takes output_padding < stride only (ops::ConvTranspose2d pads x for the rest).
  const Attrs attrs{{"stride", std::vector<int64_t>{1, 1}},         {"padding", std::vector<int64_t>{0, 0}},
                    {"output_padding", std::vector<int64_t>{1, 0}}, {"dilation", std::vector<int64_t>{2, 1}},
                    {"groups", int64_t{1}}};
  ExpectError([&] { Apply1(OpRegistry::Global().Get("conv_transpose2d"), {x, w, nullptr}, attrs); },
              {"conv_transpose2d: ", "output_padding[0] is 1", "smaller than stride[0] = 1"});
}

// A lazy graph traced with unknown N and W, forward and backward (observed through SGD with lr 1),
// runs at two sizes equal to eager.
TEST(ConvTranspose2d, LazyGraphWithUnknownDimsEqualsEager) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session_owner);
  const ops::ConvTranspose2dOptions o{.stride = {2, 2}, .padding = {1, 0}, .output_padding = {1, 1}, .groups = 2};
  TensorPtr w = RandomTensor(DType::Float64(), {4, 3, 3, 2});
  w->set_requires_grad(true);
  const TensorPtr b = RandomTensor(DType::Float64(), {6});
  auto loss_of = [&](const TensorPtr& x, const TensorPtr& weight) {
    const TensorPtr y = ops::ConvTranspose2d(x, weight, b, o);
    return std::pair(y, ops::Sum(ops::Mul(y, y)));
  };
  graph::Graph g(session_owner, "conv_transpose2d", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr xin = g.AddInput("x", DType::Float64(), Shape{Dim::Unknown(), 4, 3, Dim::Unknown()});
  const auto [y, loss] = loss_of(xin, w);
  EXPECT_EQ(y->shape(), (Shape{Dim::Unknown(), 6, 6, Dim::Unknown()}));
  Backward({loss}, {nullptr});
  g.AddOptimizer(std::make_shared<SGD>(std::vector<TensorPtr>{w}, SgdOptions{.lr = 1.0}));
  g.AddOutput(y);
  g.EndBuild();
  for (const auto& [n, width] : std::vector<std::pair<int64_t, int64_t>>{{2, 4}, {1, 7}}) {
    SCOPED_TRACE(fmt::format("N {} W {}", n, width));
    const TensorPtr xv = RandomTensor(DType::Float64(), {n, 4, 3, width});
    const std::vector<double> before = ToDoubles(w);
    TensorPtr eager_w = FromDoubles(DType::Float64(), w->shape(), before);
    eager_w->set_requires_grad(true);
    const auto [ey, eloss] = loss_of(xv, eager_w);
    Backward({eloss}, {nullptr});
    const std::vector<TensorPtr> out = g.Run({xv});
    ExpectTensorNear(out[0], DType::Float64(), ey->shape(), ToDoubles(ey), 1e-12, 1e-12);
    const std::vector<double> after = ToDoubles(w), grad = ToDoubles(eager_w->grad());
    for (size_t i = 0; i < after.size(); ++i) EXPECT_NEAR(before[i] - after[i], grad[i], 1e-9) << i;
  }
}

// ---- conv1d and conv_transpose1d ------------------------------------------------------------------

struct Case1d {
  Shape x;
  int64_t out, k, stride, padding, output_padding, dilation, groups;
  bool bias;

  int64_t n() const { return x[0].value(); }
  int64_t c() const { return x[1].value(); }
  int64_t l() const { return x[2].value(); }
  int64_t conv_len() const { return (l() + 2 * padding - dilation * (k - 1) - 1) / stride + 1; }
  int64_t transpose_len() const { return (l() - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1; }
  Shape conv_weight() const { return {out, c() / groups, k}; }
  Shape transpose_weight() const { return {c(), out / groups, k}; }
  ops::Conv1dOptions conv_options() const { return {stride, padding, dilation, groups}; }
  ops::ConvTranspose1dOptions transpose_options() const { return {stride, padding, output_padding, dilation, groups}; }
  std::string name() const {
    return fmt::format("x {} out {} k {} stride {} padding {} output_padding {} dilation {} groups {} bias {}", x, out,
                       k, stride, padding, output_padding, dilation, groups, bias);
  }
};

std::vector<double> BiasRows(const Shape& ys, const TensorPtr& bias) {
  std::vector<double> y(static_cast<size_t>(ys.numel()), 0.0);
  if (!bias) return y;
  const std::vector<double> bv = ToDoubles(bias);
  for (int64_t i = 0; i < ys.numel(); ++i) y[static_cast<size_t>(i)] = bv[static_cast<size_t>(Unravel(i, ys)[1])];
  return y;
}

std::vector<double> RefConv1d(const Case1d& k, const TensorPtr& x, const TensorPtr& w, const TensorPtr& bias) {
  const std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w);
  const Shape ys{k.n(), k.out, k.conv_len()}, ws = k.conv_weight();
  std::vector<double> y = BiasRows(ys, bias);
  const int64_t cg = k.c() / k.groups, og = k.out / k.groups;
  for (int64_t b = 0; b < k.n(); ++b)
    for (int64_t o = 0; o < k.out; ++o)
      for (int64_t i = 0; i < k.conv_len(); ++i)
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t t = 0; t < k.k; ++t) {
            const int64_t pos = i * k.stride - k.padding + t * k.dilation;
            if (pos < 0 || pos >= k.l()) continue;
            y[At({b, o, i}, ys)] += xv[At({b, o / og * cg + ci, pos}, k.x)] * wv[At({o, ci, t}, ws)];
          }
  return y;
}

std::vector<double> RefConvTranspose1d(const Case1d& k, const TensorPtr& x, const TensorPtr& w, const TensorPtr& bias) {
  const std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w);
  const Shape ys{k.n(), k.out, k.transpose_len()}, ws = k.transpose_weight();
  std::vector<double> y = BiasRows(ys, bias);
  const int64_t cg = k.c() / k.groups, og = k.out / k.groups;
  for (int64_t b = 0; b < k.n(); ++b)
    for (int64_t c = 0; c < k.c(); ++c)
      for (int64_t i = 0; i < k.l(); ++i)
        for (int64_t o = 0; o < og; ++o)
          for (int64_t t = 0; t < k.k; ++t) {
            const int64_t pos = i * k.stride - k.padding + t * k.dilation;
            if (pos < 0 || pos >= k.transpose_len()) continue;
            y[At({b, c / cg * og + o, pos}, ys)] += xv[At({b, c, i}, k.x)] * wv[At({c, o, t}, ws)];
          }
  return y;
}

const std::vector<Case1d> kConv1dCases = {
    {{2, 3, 9}, 4, 3, 1, 0, 0, 1, 1, true},
    {{2, 4, 10}, 6, 3, 2, 1, 0, 2, 2, true},
    {{1, 6, 7}, 6, 3, 1, 1, 0, 1, 6, false},  // depthwise
    {{3, 2, 5}, 3, 5, 3, 2, 0, 1, 1, true},
    {{0, 2, 5}, 3, 2, 1, 0, 0, 1, 1, true},   // N = 0
};

const std::vector<Case1d> kConvTranspose1dCases = {
    {{2, 3, 5}, 4, 3, 2, 1, 1, 1, 1, true},
    {{1, 4, 4}, 2, 2, 1, 0, 1, 2, 2, true},  // output_padding >= stride, below dilation
    {{2, 2, 3}, 2, 4, 3, 1, 2, 1, 1, false},
    {{0, 2, 3}, 2, 2, 1, 0, 0, 1, 1, true},  // N = 0
};

TEST(Conv1d, MatchesReferenceLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const Case1d& k : kConv1dCases) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
      const TensorPtr x = RandomTensor(dt, k.x), w = RandomTensor(dt, k.conv_weight());
      const TensorPtr b = k.bias ? RandomTensor(dt, {k.out}) : TensorPtr();
      const std::vector<double> want = RefConv1d(k, x, w, b);
      const Shape ys{k.n(), k.out, k.conv_len()};
      ExpectTensorNear(ops::Conv1d(x, w, b, k.conv_options()), dt, ys, want, Tol(dt), Tol(dt));
      ExpectTensorNear(ops::Conv1d(NonContiguous(x), NonContiguous(w), b ? NonContiguous(b) : b, k.conv_options()), dt,
                       ys, want, Tol(dt), Tol(dt));
    }
  }
}

TEST(ConvTranspose1d, MatchesReferenceLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const Case1d& k : kConvTranspose1dCases) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
      const TensorPtr x = RandomTensor(dt, k.x), w = RandomTensor(dt, k.transpose_weight());
      const TensorPtr b = k.bias ? RandomTensor(dt, {k.out}) : TensorPtr();
      const std::vector<double> want = RefConvTranspose1d(k, x, w, b);
      const Shape ys{k.n(), k.out, k.transpose_len()};
      ExpectTensorNear(ops::ConvTranspose1d(x, w, b, k.transpose_options()), dt, ys, want, Tol(dt), Tol(dt));
      ExpectTensorNear(
          ops::ConvTranspose1d(NonContiguous(x), NonContiguous(w), b ? NonContiguous(b) : b, k.transpose_options()), dt,
          ys, want, Tol(dt), Tol(dt));
    }
  }
}

TEST(Conv1d, Gradients) {
  for (const Case1d& k : std::vector<Case1d>{kConv1dCases[1], kConv1dCases[2], kConv1dCases[3]}) {
    SCOPED_TRACE(k.name());
    std::vector<TensorPtr> in = {Leaf(k.x), Leaf(k.conv_weight())};
    if (k.bias) in.push_back(Leaf({k.out}));
    ExpectGradientsMatch(
        [&](const std::vector<TensorPtr>& t) {
          return ops::Conv1d(t[0], t[1], t.size() > 2 ? t[2] : TensorPtr(), k.conv_options());
        },
        in);
  }
}

TEST(ConvTranspose1d, Gradients) {
  for (const Case1d& k : std::vector<Case1d>{kConvTranspose1dCases[0], kConvTranspose1dCases[1], kConvTranspose1dCases[2]}) {
    SCOPED_TRACE(k.name());
    std::vector<TensorPtr> in = {Leaf(k.x), Leaf(k.transpose_weight())};
    if (k.bias) in.push_back(Leaf({k.out}));
    ExpectGradientsMatch(
        [&](const std::vector<TensorPtr>& t) {
          return ops::ConvTranspose1d(t[0], t[1], t.size() > 2 ? t[2] : TensorPtr(), k.transpose_options());
        },
        in);
  }
}

TEST(Conv1d, Errors) {
  const Symbol<DType> f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {2, 3, 9}), w = RandomTensor(f32, {4, 3, 3});
  using Opts = ops::Conv1dOptions;
  auto call = [&](const TensorPtr& xx, const TensorPtr& ww, const TensorPtr& b, const Opts& o) {
    return [=] { ops::Conv1d(xx, ww, b, o); };
  };
  ExpectError(call(RandomTensor(f32, {3, 9}), w, nullptr, {}), {"conv1d: ", "x must be 3-D (N, C, L)", "(3, 9)"});
  ExpectError(call(x, RandomTensor(f32, {4, 3, 1, 3}), nullptr, {}), {"conv1d: ", "weight must be 3-D", "(4, 3, 1, 3)"});
  ExpectError(call(x, w, RandomTensor(f32, {4, 1}), {}), {"conv1d: ", "bias must be 1-D", "(4, 1)"});
  ExpectError(call(x, w, nullptr, {.stride = 0}), {"conv1d: ", "stride must be >= 1, got 0"});
  ExpectError(call(x, w, nullptr, {.padding = -1}), {"conv1d: ", "padding must be >= 0, got -1"});
  ExpectError(call(x, w, nullptr, {.dilation = 0}), {"conv1d: ", "dilation must be >= 1, got 0"});
  ExpectError(call(x, w, nullptr, {.groups = 0}), {"conv1d: ", "groups must be >= 1, got 0"});
  // What the 2-D op judges comes prefixed with conv1d and the view.
  ExpectError(call(x, RandomTensor(f32, {4, 2, 3}), nullptr, {}),
              {"conv1d (as conv2d of x viewed as (N, C, 1, L)): conv2d: ", "3 channels", "(4, 2, 1, 3)"});
  ExpectError(call(RandomTensor(f32, {2, 3, 2}), w, nullptr, {}), {"conv1d (as conv2d", "output size"});
  ExpectError(call(x, RandomTensor(DType::Float64(), {4, 3, 3}), nullptr, {}), {"conv1d (as conv2d", "float64", "float32"});
  ExpectError(call(RandomTensor(DType::Int32(), {2, 3, 9}), RandomTensor(DType::Int32(), {4, 3, 3}), nullptr, {}),
              StatusCode::kUnimplemented, {"conv1d (as conv2d", "no kernel", "int32"});
}

TEST(ConvTranspose1d, Errors) {
  const Symbol<DType> f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {2, 3, 5}), w = RandomTensor(f32, {3, 2, 3});
  using Opts = ops::ConvTranspose1dOptions;
  auto call = [&](const TensorPtr& xx, const TensorPtr& ww, const Opts& o) {
    return [=] { ops::ConvTranspose1d(xx, ww, nullptr, o); };
  };
  ExpectError(call(RandomTensor(f32, {2, 3, 1, 5}), w, {}),
              {"conv_transpose1d: ", "x must be 3-D (N, C_in, L)", "(2, 3, 1, 5)"});
  ExpectError(call(x, RandomTensor(f32, {3, 2}), {}), {"conv_transpose1d: ", "weight must be 3-D", "(3, 2)"});
  ExpectError(call(x, w, {.stride = 2, .output_padding = 2}),
              {"conv_transpose1d: ", "output_padding is 2", "smaller than stride = 2 or dilation = 1"});
  ExpectError(call(x, w, {.output_padding = -1}), {"conv_transpose1d: ", "output_padding is -1", ">= 0"});
  ExpectError(call(x, w, {.groups = 2}),
              {"conv_transpose1d (as conv_transpose2d of x viewed as (N, C, 1, L)): conv_transpose2d: ", "groups=2",
               "does not divide", "3 input channels"});
  ExpectError(call(RandomTensor(f32, {1, 3, 1}), w, {.padding = 2}), {"conv_transpose1d (as", "output size would be < 1"});
}

// conv1d then conv_transpose1d (an autoencoder's shape) traced with an unknown length, forward and
// backward (observed through SGD with lr 1), runs at two lengths equal to eager.
TEST(Conv1d, LazyGraphWithUnknownLengthEqualsEager) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session_owner);
  TensorPtr w1 = RandomTensor(DType::Float64(), {4, 3, 3}), w2 = RandomTensor(DType::Float64(), {4, 3, 4});
  w1->set_requires_grad(true);
  w2->set_requires_grad(true);
  const TensorPtr b1 = RandomTensor(DType::Float64(), {4});
  auto forward = [&](const TensorPtr& x, const TensorPtr& c1, const TensorPtr& c2) {
    const TensorPtr h = ops::Relu(ops::Conv1d(x, c1, b1, {.stride = 2, .padding = 1}));
    const TensorPtr y = ops::ConvTranspose1d(h, c2, nullptr, {.stride = 2, .padding = 1, .output_padding = 1});
    return std::pair(y, ops::Sum(ops::Mul(y, y)));
  };
  graph::Graph g(session_owner, "conv1d", graph::GraphOptions{});
  g.BeginBuild();
  const auto [y, loss] = forward(g.AddInput("x", DType::Float64(), Shape{2, 3, Dim::Unknown()}), w1, w2);
  EXPECT_EQ(y->shape(), (Shape{2, 3, Dim::Unknown()}));
  Backward({loss}, {nullptr});
  g.AddOptimizer(std::make_shared<SGD>(std::vector<TensorPtr>{w1, w2}, SgdOptions{.lr = 1.0}));
  g.AddOutput(y);
  g.EndBuild();
  for (int64_t len : {9, 14}) {
    SCOPED_TRACE(len);
    const TensorPtr xv = RandomTensor(DType::Float64(), {2, 3, len});
    const std::vector<double> before1 = ToDoubles(w1), before2 = ToDoubles(w2);
    TensorPtr e1 = FromDoubles(DType::Float64(), w1->shape(), before1), e2 = FromDoubles(DType::Float64(), w2->shape(), before2);
    e1->set_requires_grad(true);
    e2->set_requires_grad(true);
    const auto [ey, eloss] = forward(xv, e1, e2);
    Backward({eloss}, {nullptr});
    const std::vector<TensorPtr> out = g.Run({xv});
    ExpectTensorNear(out[0], DType::Float64(), ey->shape(), ToDoubles(ey), 1e-12, 1e-12);
    const std::vector<double> after1 = ToDoubles(w1), g1 = ToDoubles(e1->grad());
    const std::vector<double> after2 = ToDoubles(w2), g2 = ToDoubles(e2->grad());
    for (size_t i = 0; i < after1.size(); ++i) EXPECT_NEAR(before1[i] - after1[i], g1[i], 1e-9) << i;
    for (size_t i = 0; i < after2.size(); ++i) EXPECT_NEAR(before2[i] - after2[i], g2[i], 1e-9) << i;
  }
}

// ---- conv3d ---------------------------------------------------------------------------------------

struct Case3d {
  Shape x;
  int64_t out;
  std::vector<int64_t> k, stride, padding, dilation;
  int64_t groups;
  bool bias;

  int64_t c() const { return x[1].value(); }
  int64_t in(int a) const { return x[2 + a].value(); }
  int64_t len(int a) const { return (in(a) + 2 * padding[a] - dilation[a] * (k[a] - 1) - 1) / stride[a] + 1; }
  Shape weight_shape() const { return {out, c() / groups, k[0], k[1], k[2]}; }
  Shape y_shape() const { return {x[0].value(), out, len(0), len(1), len(2)}; }
  ops::Conv3dOptions options() const { return {stride, padding, dilation, groups}; }
  Attrs attrs() const {
    return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
  }
  std::string name() const {
    return fmt::format("x {} out {} k [{}] stride [{}] padding [{}] dilation [{}] groups {} bias {}", x, out,
                       fmt::join(k, ","), fmt::join(stride, ","), fmt::join(padding, ","), fmt::join(dilation, ","),
                       groups, bias);
  }
  // Calls f(y index, x index, weight index) for every product term of the convolution.
  template <typename F>
  void ForEachTerm(F&& f) const {
    const Shape ys = y_shape(), ws = weight_shape();
    const int64_t cg = c() / groups, og = out / groups;
    for (int64_t i = 0; i < ys.numel(); ++i) {
      const std::vector<int64_t> yi = Unravel(i, ys);
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t kz = 0; kz < k[0]; ++kz)
          for (int64_t ky = 0; ky < k[1]; ++ky)
            for (int64_t kx = 0; kx < k[2]; ++kx) {
              const int64_t taps[3] = {kz, ky, kx};
              std::vector<int64_t> xi = {yi[0], yi[1] / og * cg + ci, 0, 0, 0};
              bool inside = true;
              for (int a = 0; a < 3; ++a) {
                xi[2 + a] = yi[2 + a] * stride[a] - padding[a] + taps[a] * dilation[a];
                inside &= xi[2 + a] >= 0 && xi[2 + a] < in(a);
              }
              if (inside) f(At(yi, ys), At(xi, x), At({yi[1], ci, kz, ky, kx}, ws));
            }
    }
  }
};

std::vector<double> RefConv3d(const Case3d& k, const TensorPtr& x, const TensorPtr& w, const TensorPtr& bias) {
  const std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w);
  std::vector<double> y = BiasRows(k.y_shape(), bias);
  k.ForEachTerm([&](size_t yi, size_t xi, size_t wi) { y[yi] += xv[xi] * wv[wi]; });
  return y;
}

const std::vector<Case3d> kConv3dCases = {
    {{1, 2, 4, 5, 5}, 3, {2, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1, true},
    {{2, 4, 5, 4, 6}, 6, {3, 2, 3}, {2, 1, 2}, {1, 0, 1}, {1, 2, 1}, 2, true},
    {{1, 3, 3, 4, 4}, 3, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}, {1, 1, 1}, 3, false},  // depthwise
    {{2, 2, 6, 3, 3}, 2, {3, 1, 1}, {2, 1, 1}, {2, 0, 0}, {2, 1, 1}, 1, true},   // depth only
    {{2, 8, 4, 6, 6}, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, true},  // a video-net block
};

// Empty operands and a depth stride beyond oneDNN's int32 descriptors (the loops run there).
const std::vector<Case3d> kConv3dEdgeCases = {
    {{0, 2, 3, 3, 3}, 2, {2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1, true},  // N = 0
    {{1, 0, 3, 3, 3}, 2, {2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1, true},  // no input channels: the bias
    {{1, 3, 3, 3, 3}, 0, {2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1, true},  // no output channels
    {{1, 2, 2, 3, 3}, 2, {1, 2, 2}, {int64_t{1} << 40, 1, 1}, {0, 1, 0}, {1, 1, 1}, 1, true},
};

void CheckConv3dForward(const Case3d& k, Symbol<DType> dt) {
  SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
  const TensorPtr x = RandomTensor(dt, k.x), w = RandomTensor(dt, k.weight_shape());
  const TensorPtr b = k.bias ? RandomTensor(dt, {k.out}) : TensorPtr();
  const std::vector<double> want = RefConv3d(k, x, w, b);
  ExpectTensorNear(ops::Conv3d(x, w, b, k.options()), dt, k.y_shape(), want, Tol(dt), Tol(dt));
  ExpectTensorNear(ops::Conv3d(NonContiguous(x), NonContiguous(w), b ? NonContiguous(b) : b, k.options()), dt,
                   k.y_shape(), want, Tol(dt), Tol(dt));
  {
    NoGradGuard no_grad;  // oneDNN's inference primitives
    ExpectTensorNear(ops::Conv3d(x, w, b, k.options()), dt, k.y_shape(), want, Tol(dt), Tol(dt));
  }
  MarkCovered("conv3d", dt);
}

void CheckConv3dBackward(const Case3d& k, Symbol<DType> dt) {
  const OpDef& bwd_data = OpRegistry::Global().Get("conv3d_backward_data");
  const OpDef& bwd_weight = OpRegistry::Global().Get("conv3d_backward_weight");
  SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
  const TensorPtr x = RandomTensor(dt, k.x), w = RandomTensor(dt, k.weight_shape());
  const TensorPtr dy = RandomTensor(dt, k.y_shape());
  const std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w), dyv = ToDoubles(dy);
  const Shape ws = k.weight_shape(), ys = k.y_shape();
  std::vector<double> dx(static_cast<size_t>(k.x.numel()), 0.0), dw(static_cast<size_t>(ws.numel()), 0.0);
  std::vector<double> db(static_cast<size_t>(k.out), 0.0);
  k.ForEachTerm([&](size_t yi, size_t xi, size_t wi) {
    dx[xi] += dyv[yi] * wv[wi];
    dw[wi] += dyv[yi] * xv[xi];
  });
  for (int64_t i = 0; i < ys.numel(); ++i) db[static_cast<size_t>(Unravel(i, ys)[1])] += dyv[static_cast<size_t>(i)];
  ExpectTensorNear(Apply1(bwd_data, {dy, w, x}, k.attrs()), dt, k.x, dx, Tol(dt), Tol(dt));
  ExpectTensorNear(Apply1(bwd_data, {NonContiguous(dy), NonContiguous(w), NonContiguous(x)}, k.attrs()), dt, k.x,
                   dx, Tol(dt), Tol(dt));
  std::vector<TensorPtr> r = Apply(bwd_weight, {x, dy, w}, k.attrs());
  ExpectTensorNear(r[0], dt, ws, dw, Tol(dt), Tol(dt));
  ExpectTensorNear(r[1], dt, {k.out}, db, Tol(dt), Tol(dt));
  r = Apply(bwd_weight, {NonContiguous(x), NonContiguous(dy), NonContiguous(w)}, k.attrs());
  ExpectTensorNear(r[0], dt, ws, dw, Tol(dt), Tol(dt));
  ExpectTensorNear(r[1], dt, {k.out}, db, Tol(dt), Tol(dt));
  MarkCovered("conv3d_backward_data", dt);
  MarkCovered("conv3d_backward_weight", dt);
}

TEST(Conv3d, MatchesReferenceLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const Case3d& k : kConv3dCases) CheckConv3dForward(k, dt);
  }
}

TEST(Conv3d, EmptyOperandsAndHugeAttributesMatchReferenceLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const Case3d& k : kConv3dEdgeCases) CheckConv3dForward(k, dt);
  }
}

TEST(Conv3d, BackwardOpsMatchReferenceLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const Case3d& k : kConv3dCases) CheckConv3dBackward(k, dt);
    for (const Case3d& k : kConv3dEdgeCases) CheckConv3dBackward(k, dt);
  }
}

TEST(Conv3d, Gradients) {
  const std::vector<Case3d> cases = {
      {{1, 2, 3, 3, 4}, 2, {2, 2, 3}, {1, 1, 1}, {0, 1, 0}, {1, 1, 1}, 1, true},
      {{2, 4, 4, 3, 3}, 4, {3, 2, 2}, {2, 1, 2}, {1, 1, 0}, {1, 1, 1}, 2, true},
      {{1, 2, 5, 3, 3}, 2, {2, 1, 2}, {1, 2, 1}, {1, 0, 1}, {2, 1, 1}, 1, false},
  };
  for (const Case3d& k : cases) {
    SCOPED_TRACE(k.name());
    std::vector<TensorPtr> in = {Leaf(k.x), Leaf(k.weight_shape())};
    if (k.bias) in.push_back(Leaf({k.out}));
    ExpectGradientsMatch(
        [&](const std::vector<TensorPtr>& t) {
          return ops::Conv3d(t[0], t[1], t.size() > 2 ? t[2] : TensorPtr(), k.options());
        },
        in);
  }
}

// float32 gradients (oneDNN's 3-D backward primitives) equal the float64 ones at float32 tolerance.
TEST(Conv3d, Float32GradientsMatchFloat64) {
  const Case3d k{{2, 4, 5, 5, 4}, 6, {3, 3, 2}, {2, 1, 1}, {1, 1, 0}, {1, 1, 2}, 2, true};
  ExpectFloat32GradientsMatchFloat64(
      [&](const TensorPtr& x, const TensorPtr& w, const TensorPtr& b) { return ops::Conv3d(x, w, b, k.options()); },
      {k.x, k.weight_shape(), {k.out}}, k.y_shape());
}

TEST(Conv3d, Errors) {
  const Symbol<DType> f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {2, 4, 5, 5, 5}), w = RandomTensor(f32, {6, 4, 3, 3, 3});
  using Opts = ops::Conv3dOptions;
  auto call = [&](const TensorPtr& xx, const TensorPtr& ww, const TensorPtr& b, const Opts& o) {
    return [=] { ops::Conv3d(xx, ww, b, o); };
  };
  ExpectError(call(RandomTensor(f32, {4, 5, 5, 5}), w, nullptr, {}),
              {"conv3d: ", "x must be 5-D (N, C, D, H, W)", "(4, 5, 5, 5)"});
  ExpectError(call(x, RandomTensor(f32, {6, 4, 3, 3}), nullptr, {}),
              {"conv3d: ", "weight must be 5-D", "kD, kH, kW", "(6, 4, 3, 3)"});
  ExpectError(call(x, RandomTensor(f32, {6, 3, 3, 3, 3}), nullptr, {}),
              {"conv3d: ", "x (2, 4, 5, 5, 5) has 4 channels", "weight.shape[1] * groups = 3 * 1 = 3"});
  ExpectError(call(x, RandomTensor(f32, {6, 1, 3, 3, 3}), nullptr, {.groups = 4}),
              {"conv3d: ", "groups=4", "does not divide", "6 output channels"});
  ExpectError(call(x, w, nullptr, {.groups = 0}), {"conv3d: ", "groups must be >= 1"});
  ExpectError(call(x, w, nullptr, {.stride = {1, 0, 1}}), {"conv3d: ", "stride must be three values >= 1", "[1, 0, 1]"});
  ExpectError(call(x, w, nullptr, {.stride = {1, 1}}), {"conv3d: ", "stride must be three values", "[1, 1]"});
  ExpectError(call(x, w, nullptr, {.padding = {-1, 0, 0}}), {"conv3d: ", "padding", "[-1, 0, 0]"});
  ExpectError(call(x, w, nullptr, {.dilation = {1, 1, 0}}), {"conv3d: ", "dilation", "[1, 1, 0]"});
  ExpectError(call(x, RandomTensor(f32, {6, 4, 3, 0, 3}), nullptr, {}),
              {"conv3d: ", "weight (6, 4, 3, 0, 3)", "empty kernel (kD, kH, kW)", ">= 1"});
  ExpectError(call(RandomTensor(f32, {1, 4, 2, 5, 5}), w, nullptr, {}),
              {"conv3d: ", "output size would be (0, 3, 3)", "x (1, 4, 2, 5, 5)", "kernel (3, 3, 3)"});
  ExpectError(call(x, w, nullptr, {.dilation = {INT64_MAX, 1, 1}}),
              {"conv3d: ", "dilation[0]", "overflows int64", "kD = 3"});
  ExpectError(call(x, w, nullptr, {.padding = {0, 0, INT64_MAX}}),
              {"conv3d: ", "padding[2]", "(W + 2 * padding) overflows int64"});
  ExpectError(call(x, w, RandomTensor(f32, {5}), {}), {"conv3d: ", "bias must be 1-D", "out_channels = 6", "(5,)"});
  ExpectError(call(x, w, RandomTensor(DType::Float64(), {6}), {}), {"conv3d: ", "bias is float64", "x is float32"});
  ExpectError(call(x, RandomTensor(DType::Float64(), {6, 4, 3, 3, 3}), nullptr, {}),
              {"conv3d: ", "weight is float64", "x is float32"});
  ExpectError(call(RandomTensor(DType::Bool(), {1, 1, 2, 2, 2}), RandomTensor(DType::Bool(), {1, 1, 1, 1, 1}), nullptr,
                   {}),
              {"conv3d: ", "x is bool"});
  ExpectError(call(RandomTensor(DType::Int64(), {1, 1, 2, 2, 2}), RandomTensor(DType::Int64(), {1, 1, 1, 1, 1}),
                   nullptr, {}),
              StatusCode::kUnimplemented, {"conv3d: ", "no kernel", "int64"});
  // The backward ops check grad_y against the forward output.
  ExpectError([&] {
    Apply1(OpRegistry::Global().Get("conv3d_backward_data"), {RandomTensor(f32, {2, 6, 3, 3, 2}), w, x},
           Case3d{{2, 4, 5, 5, 5}, 6, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1, false}.attrs());
  },
              {"conv3d_backward_data: ", "grad_y (2, 6, 3, 3, 2) does not match the conv3d output (2, 6, 3, 3, 3)"});
}

// A lazy graph traced with an unknown N, forward and backward (observed through SGD with lr 1), runs at
// two batch sizes equal to eager.
TEST(Conv3d, LazyGraphWithUnknownBatchEqualsEager) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session_owner);
  const ops::Conv3dOptions o{.stride = {2, 1, 1}, .padding = {1, 1, 0}, .groups = 2};
  TensorPtr w = RandomTensor(DType::Float64(), {4, 1, 3, 2, 2});
  w->set_requires_grad(true);
  const TensorPtr b = RandomTensor(DType::Float64(), {4});
  auto loss_of = [&](const TensorPtr& x, const TensorPtr& weight) {
    const TensorPtr y = ops::Conv3d(x, weight, b, o);
    return std::pair(y, ops::Sum(ops::Mul(y, y)));
  };
  graph::Graph g(session_owner, "conv3d", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr xin = g.AddInput("x", DType::Float64(), Shape{Dim::Unknown(), 2, 5, 4, 3});
  const auto [y, loss] = loss_of(xin, w);
  EXPECT_EQ(y->shape(), (Shape{Dim::Unknown(), 4, 3, 5, 2}));
  Backward({loss}, {nullptr});
  g.AddOptimizer(std::make_shared<SGD>(std::vector<TensorPtr>{w}, SgdOptions{.lr = 1.0}));
  g.AddOutput(y);
  g.EndBuild();
  for (const int64_t n : {2, 3}) {
    SCOPED_TRACE(fmt::format("N {}", n));
    const TensorPtr xv = RandomTensor(DType::Float64(), {n, 2, 5, 4, 3});
    const std::vector<double> before = ToDoubles(w);
    TensorPtr eager_w = FromDoubles(DType::Float64(), w->shape(), before);
    eager_w->set_requires_grad(true);
    const auto [ey, eloss] = loss_of(xv, eager_w);
    Backward({eloss}, {nullptr});
    const std::vector<TensorPtr> out = g.Run({xv});
    ExpectTensorNear(out[0], DType::Float64(), ey->shape(), ToDoubles(ey), 1e-12, 1e-12);
    const std::vector<double> after = ToDoubles(w), grad = ToDoubles(eager_w->grad());
    for (size_t i = 0; i < after.size(); ++i) EXPECT_NEAR(before[i] - after[i], grad[i], 1e-9) << i;
  }
}

}  // namespace
}  // namespace oneflow::test
