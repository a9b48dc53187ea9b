// conv2d, conv2d_backward_data and conv2d_backward_weight against direct float64 loops; gradients by
// finite differences.
#include <thread>

#include "core/op/dispatch.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kDTypes = {DType::Float32(), DType::Float64()};
double Tol(Symbol<DType> dt) { return dt == DType::Float32() ? 2e-4 : 1e-10; }

struct ConvCase {
  Shape x;
  int64_t out, kh, kw;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  bool bias;

  int64_t n() const { return x[0].value(); }
  int64_t c() const { return x[1].value(); }
  int64_t h() const { return x[2].value(); }
  int64_t w() const { return x[3].value(); }
  int64_t oh() const { return (h() + 2 * padding[0] - dilation[0] * (kh - 1) - 1) / stride[0] + 1; }
  int64_t ow() const { return (w() + 2 * padding[1] - dilation[1] * (kw - 1) - 1) / stride[1] + 1; }
  Shape weight_shape() const { return {out, c() / groups, kh, kw}; }
  Shape y_shape() const { return {n(), out, oh(), ow()}; }
  ops::Conv2dOptions options() const { return {stride, padding, dilation, groups}; }
  Attrs attrs() const { return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}}; }
  std::string name() const {
    return fmt::format("x {} out {} k {}x{} stride [{}] padding [{}] dilation [{}] groups {} bias {}", x, out, kh, kw,
                       fmt::join(stride, ","), fmt::join(padding, ","), fmt::join(dilation, ","), groups, bias);
  }

  // Calls fn(n, o, c, oy, ox, iy, ix, ki, kj) for every product term of the convolution.
  template <typename Fn>
  void ForEachTerm(Fn&& fn) const {
    const int64_t cg = c() / groups, og = out / groups;
    for (int64_t b = 0; b < n(); ++b)
      for (int64_t o = 0; o < out; ++o)
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t oy = 0; oy < oh(); ++oy)
            for (int64_t ox = 0; ox < ow(); ++ox)
              for (int64_t ki = 0; ki < kh; ++ki)
                for (int64_t kj = 0; kj < kw; ++kj) {
                  const int64_t iy = oy * stride[0] - padding[0] + ki * dilation[0];
                  const int64_t ix = ox * stride[1] - padding[1] + kj * dilation[1];
                  if (iy < 0 || iy >= h() || ix < 0 || ix >= w()) continue;
                  fn(b, o, o / og * cg + ci, ci, oy, ox, iy, ix, ki, kj);
                }
  }
};

const std::vector<ConvCase> kCases = {
    {{1, 3, 7, 9}, 4, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, true},
    {{3, 4, 8, 7}, 6, 3, 2, {2, 2}, {1, 1}, {1, 1}, 2, true},
    {{3, 2, 9, 9}, 3, 3, 3, {1, 2}, {2, 1}, {2, 2}, 1, false},
    {{2, 6, 5, 6}, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 6, true},  // depthwise
    {{1, 16, 14, 14}, 32, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true},
    {{2, 3, 15, 13}, 8, 7, 7, {2, 2}, {3, 3}, {1, 1}, 1, false},  // a ResNet stem
    {{2, 8, 5, 5}, 8, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false},
    {{3, 8, 7, 6}, 16, 1, 1, {2, 2}, {0, 0}, {1, 1}, 1, false},  // a downsampling shortcut
    {{1, 4, 6, 6}, 4, 2, 2, {1, 1}, {1, 0}, {3, 1}, 2, true},
};

std::vector<double> RefConv(const ConvCase& k, const TensorPtr& x, const TensorPtr& w, const TensorPtr& bias) {
  const std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w);
  const Shape ys = k.y_shape(), xs = k.x, ws = k.weight_shape();
  std::vector<double> y(static_cast<size_t>(ys.numel()), 0.0);
  if (bias) {
    const std::vector<double> bv = ToDoubles(bias);
    for (int64_t i = 0; i < ys.numel(); ++i) y[static_cast<size_t>(i)] = bv[static_cast<size_t>(Unravel(i, ys)[1])];
  }
  k.ForEachTerm([&](int64_t b, int64_t o, int64_t c, int64_t ci, int64_t oy, int64_t ox, int64_t iy, int64_t ix,
                    int64_t ki, int64_t kj) {
    y[static_cast<size_t>(Ravel({b, o, oy, ox}, ys))] +=
        xv[static_cast<size_t>(Ravel({b, c, iy, ix}, xs))] * wv[static_cast<size_t>(Ravel({o, ci, ki, kj}, ws))];
  });
  return y;
}

TEST(Conv2d, MatchesDirectLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const ConvCase& k : kCases) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
      const TensorPtr x = RandomTensor(dt, k.x), w = RandomTensor(dt, k.weight_shape());
      const TensorPtr b = k.bias ? RandomTensor(dt, {k.out}) : TensorPtr();
      const std::vector<double> want = RefConv(k, x, w, b);
      ExpectTensorNear(ops::Conv2d(x, w, b, k.options()), dt, k.y_shape(), want, Tol(dt), Tol(dt));
      ExpectTensorNear(ops::Conv2d(NonContiguous(x), NonContiguous(w), b ? NonContiguous(b) : b, k.options()), dt,
                       k.y_shape(), want, Tol(dt), Tol(dt));
      {
        NoGradGuard no_grad;  // inference primitives
        ExpectTensorNear(ops::Conv2d(x, w, b, k.options()), dt, k.y_shape(), want, Tol(dt), Tol(dt));
      }
      MarkCovered("conv2d", dt);
    }
  }
}

TEST(Conv2d, BackwardOpsMatchDirectLoops) {
  const OpDef& bwd_data = OpRegistry::Global().Get("conv2d_backward_data");
  const OpDef& bwd_weight = OpRegistry::Global().Get("conv2d_backward_weight");
  for (Symbol<DType> dt : kDTypes) {
    for (const ConvCase& k : kCases) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
      const TensorPtr x = RandomTensor(dt, k.x), w = RandomTensor(dt, k.weight_shape());
      const TensorPtr dy = RandomTensor(dt, k.y_shape());
      const std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w), dyv = ToDoubles(dy);
      const Shape ws = k.weight_shape(), ys = k.y_shape();
      std::vector<double> dx(static_cast<size_t>(k.x.numel()), 0.0), dw(static_cast<size_t>(ws.numel()), 0.0);
      std::vector<double> db(static_cast<size_t>(k.out), 0.0);
      k.ForEachTerm([&](int64_t b, int64_t o, int64_t c, int64_t ci, int64_t oy, int64_t ox, int64_t iy, int64_t ix,
                        int64_t ki, int64_t kj) {
        const double g = dyv[static_cast<size_t>(Ravel({b, o, oy, ox}, ys))];
        dx[static_cast<size_t>(Ravel({b, c, iy, ix}, k.x))] += g * wv[static_cast<size_t>(Ravel({o, ci, ki, kj}, ws))];
        dw[static_cast<size_t>(Ravel({o, ci, ki, kj}, ws))] += g * xv[static_cast<size_t>(Ravel({b, c, iy, ix}, k.x))];
      });
      for (int64_t i = 0; i < ys.numel(); ++i) db[static_cast<size_t>(Unravel(i, ys)[1])] += dyv[static_cast<size_t>(i)];

      ExpectTensorNear(Apply1(bwd_data, {dy, w, x}, k.attrs()), dt, k.x, dx, Tol(dt), Tol(dt));
      // Strided inputs: x gives only its shape; the others are made contiguous.
      ExpectTensorNear(Apply1(bwd_data, {NonContiguous(dy), NonContiguous(w), NonContiguous(x)}, k.attrs()), dt, k.x,
                       dx, Tol(dt), Tol(dt));
      std::vector<TensorPtr> r = Apply(bwd_weight, {x, dy, w}, k.attrs());
      ExpectTensorNear(r[0], dt, ws, dw, Tol(dt), Tol(dt));
      ExpectTensorNear(r[1], dt, {k.out}, db, Tol(dt), Tol(dt));
      r = Apply(bwd_weight, {NonContiguous(x), NonContiguous(dy), NonContiguous(w)}, k.attrs());
      ExpectTensorNear(r[0], dt, ws, dw, Tol(dt), Tol(dt));
      MarkCovered("conv2d_backward_data", dt);
      MarkCovered("conv2d_backward_weight", dt);
    }
  }
}

TEST(Conv2d, Gradients) {
  auto leaf = [](const Shape& s) {
    TensorPtr t = RandomTensor(DType::Float64(), s);
    t->set_requires_grad(true);
    return t;
  };
  const std::vector<ConvCase> cases = {
      {{1, 3, 5, 6}, 2, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {{2, 4, 6, 5}, 4, 3, 2, {2, 2}, {1, 1}, {1, 1}, 2, true},
      {{2, 2, 7, 7}, 3, 3, 3, {1, 2}, {2, 1}, {2, 2}, 1, false},
      {{1, 3, 4, 5}, 3, 3, 3, {1, 1}, {1, 1}, {1, 1}, 3, true},
  };
  for (const ConvCase& k : cases) {
    SCOPED_TRACE(k.name());
    std::vector<TensorPtr> in = {leaf(k.x), leaf(k.weight_shape())};
    if (k.bias) in.push_back(leaf({k.out}));
    ExpectGradientsMatch(
        [&](const std::vector<TensorPtr>& t) { return ops::Conv2d(t[0], t[1], t.size() > 2 ? t[2] : TensorPtr(), k.options()); },
        in);
  }
  // Only the weight: the data gradient is skipped.
  const ConvCase& k = cases[1];
  TensorPtr x = RandomTensor(DType::Float64(), k.x);
  ExpectGradientsMatch([&](const std::vector<TensorPtr>& t) { return ops::Conv2d(x, t[0], TensorPtr(), k.options()); },
                       {leaf(k.weight_shape())});
}

// Primitives are cached per thread count, buffers per thread: other thread counts and concurrent
// callers get the same results.
TEST(Conv2d, ThreadCountsAndConcurrentCallers) {
  const ConvCase k{{2, 16, 18, 18}, 24, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, true};
  const auto f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, k.x), w = RandomTensor(f32, k.weight_shape()), b = RandomTensor(f32, {k.out});
  const std::vector<double> want = RefConv(k, x, w, b);
  auto check = [&] { ExpectTensorNear(ops::Conv2d(x, w, b, k.options()), f32, k.y_shape(), want, Tol(f32), Tol(f32)); };
  for (int32_t threads : {1, 3, 2}) {
    Session session(SessionOptions{.num_threads = threads});
    SessionScope scope(session);
    check();
  }
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 3; ++i) check();
    });
  }
  for (std::thread& t : callers) t.join();
}


TEST(Conv2d, Errors) {
  const auto f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {2, 3, 8, 8});
  ExpectError([&] { ops::Conv2d(x, RandomTensor(f32, {4, 4, 3, 3}), nullptr); },
              {"conv2d: ", "(2, 3, 8, 8)", "3 channels", "(4, 4, 3, 3)", "groups=1", "expects", "4"});
  ExpectError([&] { ops::Conv2d(x, RandomTensor(f32, {4, 1, 3, 3}), nullptr, {.groups = 3}); },
              {"conv2d: ", "groups=3", "does not divide", "4 output channels"});
  ExpectError([&] { ops::Conv2d(RandomTensor(f32, {3, 8, 8}), RandomTensor(f32, {4, 3, 3, 3}), nullptr); },
              {"conv2d: ", "x must be 4-D", "(3, 8, 8)"});
  ExpectError([&] { ops::Conv2d(x, RandomTensor(f32, {4, 3, 3}), nullptr); }, {"conv2d: ", "weight must be 4-D"});
  ExpectError([&] { ops::Conv2d(x, RandomTensor(f32, {4, 3, 3, 3}), nullptr, {.stride = {0, 1}}); },
              {"conv2d: ", "stride", "[0, 1]"});
  ExpectError([&] { ops::Conv2d(x, RandomTensor(f32, {4, 3, 3, 3}), nullptr, {.padding = {-1, 0}}); },
              {"conv2d: ", "padding"});
  ExpectError([&] { ops::Conv2d(x, RandomTensor(f32, {4, 3, 3, 3}), nullptr, {.groups = 0}); },
              {"conv2d: ", "groups must be >= 1"});
  ExpectError([&] { ops::Conv2d(RandomTensor(f32, {1, 3, 2, 8}), RandomTensor(f32, {4, 3, 3, 3}), nullptr); },
              {"conv2d: ", "output size", "(1, 3, 2, 8)", "kernel (3, 3)"});
  ExpectError([&] { ops::Conv2d(x, RandomTensor(f32, {4, 3, 3, 3}), RandomTensor(f32, {5})); },
              {"conv2d: ", "bias", "(5,)"});
  ExpectError([&] { ops::Conv2d(x, RandomTensor(DType::Float64(), {4, 3, 3, 3}), nullptr); },
              {"conv2d: ", "float64", "float32"});
}

TEST(Conv2d, UnknownDimsFlowThroughInference) {
  const OpDef& op = OpRegistry::Global().Get("conv2d");
  const Dim n = Dim::NewSymbol("N");
  Attrs attrs{{"stride", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{1, 1}},
              {"dilation", std::vector<int64_t>{1, 1}}, {"groups", int64_t{1}}};
  std::vector<TensorMeta> in = {{DType::Float32(), Shape{n, 3, Dim(), 9}, Device::CPU()},
                                {DType::Float32(), Shape{8, 3, 3, 3}, Device::CPU()},
                                {}};
  EXPECT_EQ(op.infer(in, attrs)[0].shape, (Shape{n, 8, Dim(), 5}));
}

}  // namespace
}  // namespace oneflow::test
