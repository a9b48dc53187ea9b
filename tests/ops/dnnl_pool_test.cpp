// max_pool2d, avg_pool2d, adaptive_avg_pool2d and their backward ops against float64 loops;
// gradients by finite differences.
#include <cmath>

#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

// Whether a 4-D shape's channels-last layout differs from row-major (Note [Channels-last activations]).
bool IsChannelsLastShape(const Shape& s) { return Canonical(s, MemoryFormat::kChannelsLast) == MemoryFormat::kChannelsLast; }

const std::vector<Symbol<DType>> kDTypes = FloatingDTypes();
double Tol(Symbol<DType> dt) { return TolFor(dt, 1e-5, 1e-12); }

struct PoolCase {
  Shape x;
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceil_mode;
  bool count_include_pad = true;

  std::vector<int64_t> step() const { return stride.empty() ? kernel : stride; }
  int64_t Out(int a) const {
    const int64_t in = x[2 + a].value(), s = step()[a], p = padding[a];
    const int64_t span = in + 2 * p - dilation[a] * (kernel[a] - 1) - 1;
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + p) --out;
    return out;
  }
  Shape y_shape() const { return {x[0], x[1], Out(0), Out(1)}; }
  ops::Pool2dOptions options() const { return {kernel, stride, padding, dilation, ceil_mode, count_include_pad}; }
  Attrs attrs(bool max) const {
    Attrs a{{"kernel_size", kernel}, {"stride", stride}, {"padding", padding}, {"ceil_mode", ceil_mode}};
    if (max) a.Set("dilation", dilation);
    else a.Set("count_include_pad", count_include_pad);
    return a;
  }
  std::string name() const {
    return fmt::format("x {} kernel [{}] stride [{}] padding [{}] dilation [{}] ceil {} include_pad {}", x,
                       fmt::join(kernel, ","), fmt::join(stride, ","), fmt::join(padding, ","), fmt::join(dilation, ","),
                       ceil_mode, count_include_pad);
  }
};

const std::vector<PoolCase> kMaxCases = {
    {{1, 2, 7, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
    {{3, 2, 8, 7}, {2, 3}, {1, 2}, {0, 1}, {1, 1}, false},
    {{2, 3, 9, 9}, {3, 2}, {2, 1}, {1, 0}, {2, 1}, false},
    {{3, 1, 7, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
    {{1, 2, 6, 6}, {2, 2}, {}, {0, 0}, {1, 1}, true},
    {{2, 4, 5, 8}, {3, 3}, {3, 3}, {1, 0}, {1, 2}, true},
    {{2, 16, 16, 16}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
};

TEST(MaxPool2d, MatchesLoopsWithIndices) {
  const OpDef& op = OpRegistry::Global().Get("max_pool2d");
  for (Symbol<DType> dt : kDTypes) {
    for (const PoolCase& k : kMaxCases) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
      const TensorPtr x = RandomTensor(dt, k.x);
      const std::vector<double> xv = ToDoubles(x);
      const Shape ys = k.y_shape();
      std::vector<double> y, idx;
      const int64_t h = k.x[2].value(), w = k.x[3].value();
      for (int64_t i = 0; i < ys.numel(); ++i) {
        const std::vector<int64_t> o = Unravel(i, ys);
        double best = -INFINITY, best_i = -1;
        for (int64_t ki = 0; ki < k.kernel[0]; ++ki) {
          for (int64_t kj = 0; kj < k.kernel[1]; ++kj) {
            const int64_t iy = o[2] * k.step()[0] - k.padding[0] + ki * k.dilation[0];
            const int64_t ix = o[3] * k.step()[1] - k.padding[1] + kj * k.dilation[1];
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            const double v = xv[static_cast<size_t>(Ravel({o[0], o[1], iy, ix}, k.x))];
            if (best_i < 0 || v > best) {
              best = v;
              best_i = static_cast<double>(iy * w + ix);
            }
          }
        }
        y.push_back(best);
        idx.push_back(best_i);
      }
      std::vector<TensorPtr> r = Apply(op, {NonContiguous(x)}, k.attrs(true));
      ExpectTensorNear(r[0], dt, ys, y, 0, 0);
      ExpectTensorNear(r[1], DType::Int64(), ys, idx, 0, 0);
      ExpectTensorNear(ops::MaxPool2d(x, k.options()), dt, ys, y, 0, 0);
      if (IsChannelsLastShape(k.x)) {  // values and indices keep x's format
        r = Apply(op, {ChannelsLast(x)}, k.attrs(true));
        ExpectTensorNear(r[0], dt, ys, y, 0, 0);
        ExpectTensorNear(r[1], DType::Int64(), ys, idx, 0, 0);
        EXPECT_EQ(r[0]->memory_format(), Canonical(ys, MemoryFormat::kChannelsLast));
      }
      MarkCovered("max_pool2d", dt);
    }
  }
}

TEST(MaxPool2d, EdgeValues) {
  const OpDef& op = OpRegistry::Global().Get("max_pool2d");
  const OpDef& bwd = OpRegistry::Global().Get("max_pool2d_backward");
  for (Symbol<DType> dt : kDTypes) {
    // NaN wins (the last one); ties give the first maximum.
    const TensorPtr x = FromDoubles(dt, {1, 1, 2, 3}, {1, NAN, 3, 2, NAN, 0});
    std::vector<TensorPtr> r = Apply(op, {x}, {{"kernel_size", std::vector<int64_t>{2, 3}}});
    EXPECT_TRUE(std::isnan(ToDoubles(r[0])[0]));
    EXPECT_EQ(ToDoubles(r[1])[0], 4);
    r = Apply(op, {FromDoubles(dt, {1, 1, 2, 2}, {5, 1, 5, 5})}, {{"kernel_size", std::vector<int64_t>{2, 2}}});
    EXPECT_EQ(ToDoubles(r[0])[0], 5);
    EXPECT_EQ(ToDoubles(r[1])[0], 0);
    // The same two planes as channels of one channels-last x.
    const TensorPtr two = ChannelsLast(FromDoubles(dt, {1, 2, 2, 2}, {1, NAN, 3, NAN, 5, 1, 5, 5}));
    r = Apply(op, {two}, {{"kernel_size", std::vector<int64_t>{2, 2}}});
    EXPECT_TRUE(std::isnan(ToDoubles(r[0])[0]));
    EXPECT_EQ(ToDoubles(r[1])[0], 3);  // the last NaN
    EXPECT_EQ(ToDoubles(r[0])[1], 5);
    EXPECT_EQ(ToDoubles(r[1])[1], 0);  // the first maximum
    // Eight channels (the vector kernels' width): each channel's own choice.
    const TensorPtr eight = ChannelsLast(FromDoubles(dt, {1, 8, 2, 2}, {1,         NAN,       3,         NAN,        //
                                                                        5,         1,         5,         5,          //
                                                                        NAN,       7,         1,         2,          //
                                                                        -INFINITY, -INFINITY, -INFINITY, -INFINITY,  //
                                                                        1,         2,         3,         4,          //
                                                                        4,         3,         2,         1,          //
                                                                        2,         9,         9,         1,          //
                                                                        -1,        -INFINITY, NAN,       8}));
    r = Apply(op, {eight}, {{"kernel_size", std::vector<int64_t>{2, 2}}});
    ExpectTensorNear(r[0], dt, {1, 8, 1, 1}, {NAN, 5, NAN, -INFINITY, 4, 4, 9, NAN}, 0, 0);
    ExpectTensorNear(r[1], DType::Int64(), {1, 8, 1, 1}, {3, 0, 0, 0, 3, 0, 1, 2}, 0, 0);
    // A dilated window that misses the input: -inf and index -1, which the backward skips.
    const TensorPtr z = RandomTensor(dt, {1, 1, 4, 4});
    const Attrs attrs{{"kernel_size", std::vector<int64_t>{2, 2}}, {"stride", std::vector<int64_t>{1, 1}},
                      {"padding", std::vector<int64_t>{1, 1}}, {"dilation", std::vector<int64_t>{5, 5}}};
    r = Apply(op, {z}, attrs);
    ExpectTensorNear(r[0], dt, {1, 1, 1, 1}, {-INFINITY});
    ExpectTensorNear(r[1], DType::Int64(), {1, 1, 1, 1}, {-1});
    ExpectTensorNear(Apply1(bwd, {FromDoubles(dt, {1, 1, 1, 1}, {1}), r[1], z}, attrs), dt, {1, 1, 4, 4},
                     std::vector<double>(16, 0.0));
  }
}

TEST(Pooling, UnknownDimsFlowThroughInference) {
  const Dim n = Dim::NewSymbol("N");
  const std::vector<TensorMeta> in = {{DType::Float32(), Shape{n, 3, Dim(), 9}, Device::CPU()}};
  const Attrs attrs{{"kernel_size", std::vector<int64_t>{3, 3}}, {"stride", std::vector<int64_t>{2, 2}},
                    {"padding", std::vector<int64_t>{1, 1}}, {"dilation", std::vector<int64_t>{1, 1}},
                    {"ceil_mode", false}};
  EXPECT_EQ(OpRegistry::Global().Get("max_pool2d").infer(in, attrs)[0].shape, (Shape{n, 3, Dim(), 5}));
  EXPECT_EQ(OpRegistry::Global().Get("adaptive_avg_pool2d").infer(in, {{"output_size", std::vector<int64_t>{2, 1}}})[0].shape,
            (Shape{n, 3, 2, 1}));
}

TEST(MaxPool2d, BackwardOpScattersIntoIndices) {
  const OpDef& bwd = OpRegistry::Global().Get("max_pool2d_backward");
  for (Symbol<DType> dt : kDTypes) {
    for (const PoolCase& k : kMaxCases) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
      const Shape ys = k.y_shape();
      const int64_t plane = k.x[2].value() * k.x[3].value();
      const TensorPtr dy = RandomTensor(dt, ys);
      // Any indices inside the plane, repeats included (overlapping windows share maxima).
      const TensorPtr idx = RandomTensor(DType::Int64(), ys, 0, static_cast<double>(plane));
      const std::vector<double> dyv = ToDoubles(dy), iv = ToDoubles(idx);
      std::vector<double> dx(static_cast<size_t>(k.x.numel()), 0.0);
      for (int64_t i = 0; i < ys.numel(); ++i) {
        const int64_t p = i / (ys[2].value() * ys[3].value());
        dx[static_cast<size_t>(p * plane + static_cast<int64_t>(iv[static_cast<size_t>(i)]))] += dyv[static_cast<size_t>(i)];
      }
      const TensorPtr x = RandomTensor(dt, k.x);
      ExpectTensorNear(Apply1(bwd, {NonContiguous(dy), idx, NonContiguous(x)}, k.attrs(true)), dt, k.x, dx, Tol(dt),
                       Tol(dt));
      if (IsChannelsLastShape(k.x) && IsChannelsLastShape(ys)) {
        const TensorPtr dxc = Apply1(bwd, {ChannelsLast(dy), ChannelsLast(idx), x}, k.attrs(true));
        ExpectTensorNear(dxc, dt, k.x, dx, Tol(dt), Tol(dt));
        EXPECT_EQ(dxc->memory_format(), MemoryFormat::kChannelsLast);
      }
      // An index past the plane, as the last one: an error in either layout, not a write outside dx.
      std::vector<double> bad = iv;
      bad.back() = static_cast<double>(plane);
      const TensorPtr bad_idx = FromDoubles(DType::Int64(), ys, bad);
      ExpectError([&] { Apply1(bwd, {dy, bad_idx, x}, k.attrs(true)); }, {"outside the input plane"});
      if (IsChannelsLastShape(k.x) && IsChannelsLastShape(ys)) {
        ExpectError(
            [&] {
              Apply1(bwd, {ChannelsLast(dy), ChannelsLast(bad_idx), x}, k.attrs(true));
            },
            {"outside the input plane"});
      }
      MarkCovered("max_pool2d_backward", dt);
    }
  }
}

// Calls fn(out_flat, in_flat, divisor) for each (output, input) pair of an average pooling window,
// with PyTorch's divisor.
template <typename Fn>
void ForEachAvgTerm(const PoolCase& k, Fn&& fn) {
  const Shape ys = k.y_shape();
  const int64_t h = k.x[2].value(), w = k.x[3].value();
  for (int64_t i = 0; i < ys.numel(); ++i) {
    const std::vector<int64_t> o = Unravel(i, ys);
    const int64_t y0 = o[2] * k.step()[0] - k.padding[0], x0 = o[3] * k.step()[1] - k.padding[1];
    const int64_t y1 = std::min(y0 + k.kernel[0], h + k.padding[0]), x1 = std::min(x0 + k.kernel[1], w + k.padding[1]);
    int64_t valid = 0;
    for (int64_t iy = y0; iy < y1; ++iy)
      for (int64_t ix = x0; ix < x1; ++ix) valid += iy >= 0 && iy < h && ix >= 0 && ix < w;
    const int64_t divisor = k.count_include_pad ? (y1 - y0) * (x1 - x0) : valid;
    for (int64_t iy = y0; iy < y1; ++iy)
      for (int64_t ix = x0; ix < x1; ++ix)
        if (iy >= 0 && iy < h && ix >= 0 && ix < w) fn(i, Ravel({o[0], o[1], iy, ix}, k.x), divisor);
  }
}

std::vector<PoolCase> AvgCases() {
  std::vector<PoolCase> cases;
  const std::vector<PoolCase> base = {
      {{1, 2, 7, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
      {{3, 2, 8, 7}, {2, 3}, {1, 2}, {0, 1}, {1, 1}, false},
      {{3, 1, 7, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},  // ceil mode: last windows past the padding
      {{1, 2, 6, 6}, {2, 2}, {}, {0, 0}, {1, 1}, true},
      {{2, 4, 5, 8}, {3, 3}, {3, 3}, {1, 0}, {1, 1}, true},
      {{2, 16, 16, 16}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
  };
  for (PoolCase k : base) {
    for (bool include : {true, false}) {
      k.count_include_pad = include;
      cases.push_back(k);
    }
  }
  return cases;
}

TEST(AvgPool2d, MatchesLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const PoolCase& k : AvgCases()) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
      const TensorPtr x = RandomTensor(dt, k.x);
      const std::vector<double> xv = ToDoubles(x);
      std::vector<double> y(static_cast<size_t>(k.y_shape().numel()), 0.0);
      ForEachAvgTerm(k, [&](int64_t o, int64_t i, int64_t d) {
        y[static_cast<size_t>(o)] += xv[static_cast<size_t>(i)] / static_cast<double>(d);
      });
      ExpectTensorNear(ops::AvgPool2d(NonContiguous(x), k.options()), dt, k.y_shape(), y, Tol(dt), Tol(dt));
      if (IsChannelsLastShape(k.x)) {
        const TensorPtr yc = ops::AvgPool2d(ChannelsLast(x), k.options());
        ExpectTensorNear(yc, dt, k.y_shape(), y, Tol(dt), Tol(dt));
        EXPECT_EQ(yc->memory_format(), Canonical(k.y_shape(), MemoryFormat::kChannelsLast));
      }
      MarkCovered("avg_pool2d", dt);
    }
  }
}

TEST(AvgPool2d, BackwardOpMatchesLoops) {
  const OpDef& bwd = OpRegistry::Global().Get("avg_pool2d_backward");
  for (Symbol<DType> dt : kDTypes) {
    for (const PoolCase& k : AvgCases()) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), k.name()));
      const TensorPtr x = RandomTensor(dt, k.x), dy = RandomTensor(dt, k.y_shape());
      const std::vector<double> dyv = ToDoubles(dy);
      std::vector<double> dx(static_cast<size_t>(k.x.numel()), 0.0);
      ForEachAvgTerm(k, [&](int64_t o, int64_t i, int64_t d) {
        dx[static_cast<size_t>(i)] += dyv[static_cast<size_t>(o)] / static_cast<double>(d);
      });
      ExpectTensorNear(Apply1(bwd, {NonContiguous(dy), NonContiguous(x)}, k.attrs(false)), dt, k.x, dx, Tol(dt),
                       Tol(dt));
      if (IsChannelsLastShape(k.y_shape())) {
        const TensorPtr dxc = Apply1(bwd, {ChannelsLast(dy), x}, k.attrs(false));
        ExpectTensorNear(dxc, dt, k.x, dx, Tol(dt), Tol(dt));
        EXPECT_EQ(dxc->memory_format(), Canonical(k.x, MemoryFormat::kChannelsLast));
      }
      MarkCovered("avg_pool2d_backward", dt);
    }
  }
}

// Adaptive windows [floor(i*in/out), ceil((i+1)*in/out)).
struct AdaptiveCase {
  Shape x;
  std::vector<int64_t> out;
};
const std::vector<AdaptiveCase> kAdaptiveCases = {
    {{2, 3, 7, 5}, {1, 1}}, {{1, 2, 7, 5}, {3, 2}}, {{3, 2, 8, 8}, {4, 4}},
    {{1, 2, 3, 3}, {5, 4}}, {{2, 1, 9, 10}, {4, 3}}, {{2, 8, 7, 7}, {1, 1}},
};

template <typename Fn>
void ForEachAdaptiveTerm(const AdaptiveCase& k, Fn&& fn) {
  const Shape ys{k.x[0], k.x[1], k.out[0], k.out[1]};
  const int64_t h = k.x[2].value(), w = k.x[3].value();
  for (int64_t i = 0; i < ys.numel(); ++i) {
    const std::vector<int64_t> o = Unravel(i, ys);
    const int64_t y0 = static_cast<int64_t>(std::floor(static_cast<double>(o[2] * h) / static_cast<double>(k.out[0])));
    const int64_t y1 = static_cast<int64_t>(std::ceil(static_cast<double>((o[2] + 1) * h) / static_cast<double>(k.out[0])));
    const int64_t x0 = static_cast<int64_t>(std::floor(static_cast<double>(o[3] * w) / static_cast<double>(k.out[1])));
    const int64_t x1 = static_cast<int64_t>(std::ceil(static_cast<double>((o[3] + 1) * w) / static_cast<double>(k.out[1])));
    for (int64_t iy = y0; iy < y1; ++iy)
      for (int64_t ix = x0; ix < x1; ++ix) fn(i, Ravel({o[0], o[1], iy, ix}, k.x), (y1 - y0) * (x1 - x0));
  }
}

TEST(AdaptiveAvgPool2d, MatchesLoops) {
  const OpDef& bwd = OpRegistry::Global().Get("adaptive_avg_pool2d_backward");
  for (Symbol<DType> dt : kDTypes) {
    for (const AdaptiveCase& k : kAdaptiveCases) {
      SCOPED_TRACE(fmt::format("{} x {} out [{}]", dt->name(), k.x, fmt::join(k.out, ",")));
      const Shape ys{k.x[0], k.x[1], k.out[0], k.out[1]};
      const TensorPtr x = RandomTensor(dt, k.x), dy = RandomTensor(dt, ys);
      const std::vector<double> xv = ToDoubles(x), dyv = ToDoubles(dy);
      std::vector<double> y(static_cast<size_t>(ys.numel()), 0.0), dx(static_cast<size_t>(k.x.numel()), 0.0);
      ForEachAdaptiveTerm(k, [&](int64_t o, int64_t i, int64_t d) {
        y[static_cast<size_t>(o)] += xv[static_cast<size_t>(i)] / static_cast<double>(d);
        dx[static_cast<size_t>(i)] += dyv[static_cast<size_t>(o)] / static_cast<double>(d);
      });
      ExpectTensorNear(ops::AdaptiveAvgPool2d(NonContiguous(x), k.out), dt, ys, y, Tol(dt), Tol(dt));
      ExpectTensorNear(Apply1(bwd, {NonContiguous(dy), NonContiguous(x)}, {{"output_size", k.out}}), dt, k.x, dx,
                       Tol(dt), Tol(dt));
      if (IsChannelsLastShape(k.x)) {
        ExpectTensorNear(ops::AdaptiveAvgPool2d(ChannelsLast(x), k.out), dt, ys, y, Tol(dt), Tol(dt));
        const TensorPtr dxc = Apply1(bwd, {IsChannelsLastShape(ys) ? ChannelsLast(dy) : dy, ChannelsLast(x)},
                                     {{"output_size", k.out}});
        ExpectTensorNear(dxc, dt, k.x, dx, Tol(dt), Tol(dt));
        EXPECT_EQ(dxc->memory_format(), MemoryFormat::kChannelsLast);
      }
      MarkCovered("adaptive_avg_pool2d", dt);
      MarkCovered("adaptive_avg_pool2d_backward", dt);
    }
  }
}

TEST(Pooling, Gradients) {
  auto leaf = [](const Shape& s) {
    TensorPtr t = RandomTensor(DType::Float64(), s);
    t->set_requires_grad(true);
    return t;
  };
  for (size_t i = 0; i < 6; ++i) {
    const PoolCase& k = kMaxCases[i];
    SCOPED_TRACE(k.name());
    ExpectGradientsMatch([&](const std::vector<TensorPtr>& t) { return ops::MaxPool2d(t[0], k.options()); },
                         {leaf(k.x)});
  }
  for (const PoolCase& k : AvgCases()) {
    if (k.x.numel() > 1000) continue;
    SCOPED_TRACE(k.name());
    ExpectGradientsMatch([&](const std::vector<TensorPtr>& t) { return ops::AvgPool2d(t[0], k.options()); },
                         {leaf(k.x)});
  }
  for (const AdaptiveCase& k : kAdaptiveCases) {
    if (k.x.numel() > 1000) continue;
    ExpectGradientsMatch([&](const std::vector<TensorPtr>& t) { return ops::AdaptiveAvgPool2d(t[0], k.out); },
                         {leaf(k.x)});
  }
}


TEST(Pooling, Errors) {
  const auto f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {2, 3, 6, 6});
  ExpectError([&] { ops::MaxPool2d(RandomTensor(f32, {3, 6, 6}), {.kernel_size = {2, 2}}); },
              {"max_pool2d: ", "4-D", "(3, 6, 6)"});
  ExpectError([&] { ops::AvgPool2d(RandomTensor(f32, {3, 6, 6}), {.kernel_size = {2, 2}}); },
              {"avg_pool2d: ", "4-D", "(3, 6, 6)"});
  ExpectError([&] { ops::MaxPool2d(x, {.kernel_size = {0, 2}}); }, {"max_pool2d: ", "kernel_size", "[0, 2]"});
  ExpectError([&] { ops::MaxPool2d(x, {.kernel_size = {2}}); }, {"max_pool2d: ", "kernel_size", "two values"});
  ExpectError([&] { ops::MaxPool2d(x, {.kernel_size = {2, 2}, .stride = {0, 1}}); }, {"max_pool2d: ", "stride"});
  ExpectError([&] { ops::MaxPool2d(x, {.kernel_size = {3, 3}, .padding = {2, 0}}); },
              {"max_pool2d: ", "padding [2, 0]", "half of kernel_size [3, 3]"});
  ExpectError([&] { ops::AvgPool2d(x, {.kernel_size = {2, 2}, .padding = {0, 2}}); }, {"avg_pool2d: ", "half"});
  ExpectError([&] { ops::MaxPool2d(x, {.kernel_size = {7, 2}}); }, {"max_pool2d: ", "output size", "(2, 3, 6, 6)"});
  ExpectError([&] { ops::MaxPool2d(x, {.kernel_size = {3, 3}, .dilation = {3, 1}}); }, {"max_pool2d: ", "output size"});
  ExpectError([&] { ops::AvgPool2d(x, {.kernel_size = {2, 2}, .dilation = {2, 2}}); }, {"avg_pool2d: ", "dilation"});
  ExpectError([&] { ops::AdaptiveAvgPool2d(x, {0, 2}); }, {"adaptive_avg_pool2d: ", "output_size", "[0, 2]"});
  ExpectError([&] { ops::AdaptiveAvgPool2d(RandomTensor(f32, {2, 3, 0, 4}), {1, 1}); },
              {"adaptive_avg_pool2d: ", "empty"});
  ExpectError([&] { ops::AdaptiveAvgPool2d(RandomTensor(f32, {6, 6}), {1, 1}); }, {"adaptive_avg_pool2d: ", "4-D"});
}

// Window arithmetic that would overflow int64 is refused naming the attribute (never wrapped, never a
// oneDNN failure), in eager calls, the backward ops and a lazy graph.
TEST(Pooling, OverflowingAttributesAreInvalidArgumentsNamingThem) {
  const auto f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {1, 4, 5, 5});
  const ops::Pool2dOptions huge{.kernel_size = {INT64_MAX, 2}, .padding = {INT64_MAX / 2, 0}};
  const std::vector<std::string> padded = {"padding[0] is 4611686018427387903",
                                           "the padded input (H + 2 * padding) overflows int64"};
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    SCOPED_TRACE(op);
    auto run = [&](const ops::Pool2dOptions& o) {
      return [&, o] { std::string(op) == "max_pool2d" ? ops::MaxPool2d(x, o) : ops::AvgPool2d(x, o); };
    };
    std::vector<std::string> parts = padded;
    parts.insert(parts.begin(), std::string(op) + ": ");
    ExpectError(run(huge), parts);
    // padding * 2 would overflow in the half-kernel check itself.
    ExpectError(run({.kernel_size = {INT64_MAX, 2}, .padding = {INT64_MAX, 0}}),
                {std::string(op) + ": ", "padding [9223372036854775807, 0]", "at most half of kernel_size"});
  }
  ExpectError([&] { ops::MaxPool2d(x, {.kernel_size = {3, 3}, .dilation = {INT64_MAX, 1}}); },
              {"max_pool2d: ", "dilation[0] is 9223372036854775807", "the dilated kernel", "overflows int64"});
  const Attrs attrs{{"kernel_size", huge.kernel_size}, {"stride", huge.kernel_size}, {"padding", huge.padding}};
  ExpectError([&] { Apply1(OpRegistry::Global().Get("avg_pool2d_backward"), {RandomTensor(f32, {1, 4, 1, 2}), x}, attrs); },
              {"avg_pool2d_backward: ", "padding[0] is 4611686018427387903", "padded input"});
  // In a graph the doubled padding fits, so the overflow shows when H is known: at compile time.
  const auto session = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session);
  graph::Graph g(session, "pool", graph::GraphOptions{});
  g.BeginBuild();
  g.AddOutput(ops::AvgPool2d(g.AddInput("x", f32, Shape{1, 4, Dim(), 5}), huge));
  g.EndBuild();
  ExpectError([&] { g.Run({x}); }, {"avg_pool2d: ", "padding[0] is 4611686018427387903", "padded input"});
}

// Attributes beyond oneDNN's int32 descriptors whose result is defined: the loops compute it (float32
// included), overflow-free, as worked out by hand on x = 0, 1, ..., 24 in a 5x5 plane.
TEST(Pooling, HugeAttributesWithDefinedResults) {
  std::vector<double> iota(25);
  for (size_t i = 0; i < iota.size(); ++i) iota[i] = static_cast<double>(i);
  const OpDef& max_op = OpRegistry::Global().Get("max_pool2d");
  const OpDef& avg_bwd = OpRegistry::Global().Get("avg_pool2d_backward");
  for (Symbol<DType> dt : kDTypes) {
    SCOPED_TRACE(dt->name());
    const TensorPtr x = FromDoubles(dt, {1, 1, 5, 5}, iota);
    // A stride past INT64_MAX / 2 in H: one window there; ceil mode adds a partial second window in W.
    const ops::Pool2dOptions one_row{.kernel_size = {3, 3}, .stride = {INT64_MAX, 3}, .ceil_mode = true};
    std::vector<TensorPtr> r = Apply(max_op, {x}, {{"kernel_size", one_row.kernel_size}, {"stride", one_row.stride},
                                                   {"ceil_mode", true}});
    ExpectTensorNear(r[0], dt, {1, 1, 1, 2}, {12, 14}, 0, 0);
    ExpectTensorNear(r[1], DType::Int64(), {1, 1, 1, 2}, {12, 14}, 0, 0);
    // (0+1+2+5+6+7+10+11+12) / 9 and (3+4+8+9+13+14) / 6: the window stops at the input's end.
    ExpectTensorNear(ops::AvgPool2d(x, one_row), dt, {1, 1, 1, 2}, {6, 8.5}, 1e-6, 1e-6);
    ExpectTensorNear(ops::AvgPool2d(x, {.kernel_size = {3, 3}, .stride = {INT64_MAX, 3}}), dt, {1, 1, 1, 1}, {6}, 1e-6,
                     1e-6);
    // A 2^40 window padded by 2^39: one window, whose divisor 2^80 (with the padding) exceeds int64.
    const int64_t k = int64_t{1} << 40, p = int64_t{1} << 39;
    const ops::Pool2dOptions wide{.kernel_size = {k, k}, .padding = {p, p}};
    const double d = std::ldexp(1.0, 80);
    // (Rounded to dt: float16 has no 2^-72, its result is 0.)
    const double tol = TolFor(dt, 1e-6, 1e-6);
    ExpectTensorNear(ops::AvgPool2d(x, wide), dt, {1, 1, 1, 1}, RoundedTo(dt, {300 / d}), tol, 0);
    ExpectTensorNear(ops::AvgPool2d(x, {.kernel_size = {k, k}, .padding = {p, p}, .count_include_pad = false}), dt,
                     {1, 1, 1, 1}, {12}, 1e-6, 0);
    const Attrs wide_attrs{{"kernel_size", wide.kernel_size}, {"stride", wide.kernel_size}, {"padding", wide.padding}};
    ExpectTensorNear(Apply1(avg_bwd, {FromDoubles(dt, {1, 1, 1, 1}, {1}), x}, wide_attrs), dt, {1, 1, 5, 5},
                     RoundedTo(dt, std::vector<double>(25, 1 / d)), tol, 0);
    // A dilation of INT64_MAX on a 1x1 kernel changes nothing.
    r = Apply(max_op, {x}, {{"kernel_size", std::vector<int64_t>{1, 1}}, {"dilation", std::vector<int64_t>{INT64_MAX, INT64_MAX}}});
    ExpectTensorNear(r[0], dt, {1, 1, 5, 5}, iota, 0, 0);
    ExpectTensorNear(r[1], DType::Int64(), {1, 1, 5, 5}, iota, 0, 0);
  }
}

// Empty H or W is refused as PyTorch does (every window would lie in the padding); empty N or C give
// empty results.
TEST(Pooling, EmptyInputs) {
  const auto f32 = DType::Float32();
  const ops::Pool2dOptions o{.kernel_size = {2, 2}, .padding = {1, 1}};
  for (const Shape& s : {Shape{1, 4, 0, 5}, Shape{1, 4, 5, 0}}) {
    ExpectError([&] { ops::MaxPool2d(RandomTensor(f32, s), o); }, {"max_pool2d: ", "empty spatial dim"});
    ExpectError([&] { ops::AvgPool2d(RandomTensor(f32, s), o); }, {"avg_pool2d: ", "empty spatial dim"});
  }
  for (Symbol<DType> dt : kDTypes) {
    for (const Shape& s : {Shape{0, 4, 5, 5}, Shape{2, 0, 5, 5}}) {
      const Shape ys{s[0], s[1], 3, 3};
      ExpectTensorNear(ops::MaxPool2d(RandomTensor(dt, s), o), dt, ys, {});
      ExpectTensorNear(ops::AvgPool2d(RandomTensor(dt, s), o), dt, ys, {});
      ExpectTensorNear(ops::AdaptiveAvgPool2d(RandomTensor(dt, s), {2, 2}), dt, {s[0], s[1], 2, 2}, {});
      ExpectTensorNear(Apply1(OpRegistry::Global().Get("avg_pool2d_backward"), {RandomTensor(dt, ys), RandomTensor(dt, s)},
                              {{"kernel_size", o.kernel_size}, {"padding", o.padding}}),
                       dt, s, {});
    }
  }
}

// One dtype rule (oneflow_c.h, ops "DTypes"): max pooling is defined for numbers but has no integer
// kernel (UNIMPLEMENTED naming the op and the dtype); averages of integers would be fractions, and bool
// is not a number (INVALID_ARGUMENT).
TEST(Pooling, DTypes) {
  const ops::Pool2dOptions o{.kernel_size = {2, 2}};
  ExpectError([&] { ops::MaxPool2d(RandomTensor(DType::Int32(), {1, 1, 4, 4}), o); }, StatusCode::kUnimplemented,
              {"max_pool2d: ", "no kernel", "int32"});
  ExpectError(
      [&] {
        ops::MaxPool2d(RandomTensor(DType::Bool(), {1, 1, 4, 4}), o);
      },
      StatusCode::kInvalidArgument, {"max_pool2d: ", "x is bool"});
  ExpectError([&] { ops::AvgPool2d(RandomTensor(DType::Int64(), {1, 1, 4, 4}), o); }, StatusCode::kInvalidArgument,
              {"avg_pool2d: ", "x must be floating", "int64"});
  ExpectError([&] { ops::AdaptiveAvgPool2d(RandomTensor(DType::UInt8(), {1, 1, 4, 4}), {1, 1}); },
              StatusCode::kInvalidArgument, {"adaptive_avg_pool2d: ", "x must be floating", "uint8"});
}

}  // namespace
}  // namespace oneflow::test
