// conv2d, conv2d_backward_data and conv2d_backward_weight against direct float64 loops; gradients by
// finite differences.
#include <thread>

#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/ops/fused.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kDTypes = FloatingDTypes();
double Tol(Symbol<DType> dt) { return TolFor(dt, 2e-4, 1e-10); }

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
    // 1x1 convolutions as products on channels-last data (Note [1x1 convolutions as products]): weight
    // gradients with fewer output than input channels (the product is dW), more (dW, or on AVX2 dW^T
    // transposed in tiles of 64 x 32: ops.convolutions_on_avx2), and an uneven stride (x gathered); the
    // backward data of the stride-1 ones, and their forward (fewer than 128 positions, no bias).
    {{2, 16, 6, 5}, 8, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false},
    {{2, 8, 5, 5}, 72, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false},
    {{2, 40, 7, 6}, 24, 1, 1, {2, 1}, {0, 0}, {1, 1}, 1, true},
    // ... their forward over 128 to 1024 positions on oneDNN's matmul, with and without a bias, of stride 1
    // and 2 (over the gathered positions).
    {{2, 24, 10, 12}, 40, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false},
    {{3, 16, 9, 9}, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true},
    {{2, 32, 20, 17}, 48, 1, 1, {2, 2}, {0, 0}, {1, 1}, 1, false},
    // ... with fewer input channels than oneDNN's channel block, on a workspace larger than a page
    // (Note [oneDNN 1x1 weight gradients on NHWC]: ASan sees the overflow if it comes back).
    {{16, 4, 28, 28}, 8, 1, 1, {2, 2}, {0, 0}, {1, 1}, 1, false},
    {{1, 4, 6, 6}, 4, 2, 2, {1, 1}, {1, 0}, {3, 1}, 2, true},
    // 3x3 stride 1 with multiples of 8 channels: Winograd F(2x2, 3x3) on channels-last data (Note
    // [Winograd convolutions]), with odd output sizes (partial tiles), paddings 0 and 2, 8 output
    // channels beyond a multiple of 16, and many tiles (several blocks and threads).
    {{2, 16, 9, 7}, 24, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},
    {{3, 16, 6, 10}, 16, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, false},
    {{1, 24, 11, 12}, 16, 3, 3, {1, 1}, {2, 2}, {1, 1}, 1, true},
    {{8, 16, 19, 20}, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false},
    // ... and of stride 2, by the phases of x (Note [Winograd convolutions of stride 2]): odd and even sizes
    // of x and y (partial tiles, dx's last row and column read by no window), paddings 0 to 2, many tiles.
    {{2, 16, 13, 11}, 24, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true},
    {{3, 16, 12, 14}, 16, 3, 3, {2, 2}, {0, 0}, {1, 1}, 1, false},
    {{2, 24, 15, 16}, 16, 3, 3, {2, 2}, {2, 2}, {1, 1}, 1, true},
    {{8, 16, 40, 37}, 32, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, false},
    // Without a bias, on channels-last data and over fewer than 128 output positions, the others run as
    // products over their patches (Note [Convolutions over few positions as products]); this one has 264,
    // where oneDNN's primitives run.
    {{2, 6, 24, 22}, 10, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, false},
};
// ... with many channels (float32 only, where the Winograd kernels run: the float64 loops are slow): few
// tiles, split evenly across the threads, and the products' columns in panels, the second one of 8
// columns (forward) or 16 (backward data); of stride 1 and 2. With 4 MiB of transformed weights and more,
// by position (Note [Winograd passes by position]): 256 x 256 channels of stride 2 (more below).
const std::vector<ConvCase> kManyChannels = {{{1, 256, 8, 8}, 136, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},
                                             {{1, 256, 16, 15}, 136, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true},
                                             {{1, 256, 16, 15}, 256, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, false}};

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

// Empty operands, and attributes far beyond oneDNN's int32 descriptors whose result is still defined:
// float32 runs the loops there, and both dtypes must match the reference.
const std::vector<ConvCase> kEdgeCases = {
    {{1, 0, 5, 5}, 2, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, true},    // no input channels: y is the bias (PyTorch)
    {{2, 0, 4, 4}, 3, 2, 2, {1, 1}, {1, 1}, {1, 1}, 3, false},   // ... or zeros, with groups
    {{1, 4, 0, 5}, 2, 3, 3, {1, 1}, {2, 0}, {1, 1}, 1, true},    // H = 0: every tap reads padding
    {{0, 4, 5, 5}, 2, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, true},    // N = 0: an empty y
    {{1, 4, 5, 5}, 0, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, true},    // no output channels
    {{1, 4, 5, 6}, 2, 3, 3, {INT64_MAX, int64_t{1} << 31}, {0, 1}, {1, 1}, 1, true},  // one window per dim
    {{1, 3, 4, 5}, 2, 1, 1, {1, 1}, {0, 0}, {INT64_MAX, INT64_MAX}, 1, true},        // dilation of a 1x1 kernel
    // Taps at -2^40, 0, 2^40: only the middle one reads x.
    {{1, 2, 5, 6}, 2, 3, 3, {int64_t{1} << 42, 1}, {int64_t{1} << 40, 1}, {int64_t{1} << 40, 1}, 1, true},
};

void CheckForward(const ConvCase& k, Symbol<DType> dt) {
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
  // Note [Channels-last activations]: float32 (and the half dtypes, through it) writes y channels last
  // (where that differs from row-major), from x in either format.
  const MemoryFormat y_format =
      dt != DType::Float64() ? Canonical(k.y_shape(), MemoryFormat::kChannelsLast) : MemoryFormat::kContiguous;
  EXPECT_EQ(ops::Conv2d(x, w, b, k.options())->memory_format(), y_format);
  if (Canonical(k.x, MemoryFormat::kChannelsLast) == MemoryFormat::kChannelsLast) {
    const TensorPtr y = ops::Conv2d(ChannelsLast(x), w, b, k.options());
    ExpectTensorNear(y, dt, k.y_shape(), want, Tol(dt), Tol(dt));
    EXPECT_EQ(y->memory_format(), y_format);
  }
  MarkCovered("conv2d", dt);
}

TEST(Conv2d, MatchesDirectLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const ConvCase& k : kCases) CheckForward(k, dt);
  }
  for (const ConvCase& k : kManyChannels) CheckForward(k, DType::Float32());
}

TEST(Conv2d, EmptyOperandsAndHugeAttributesMatchDirectLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const ConvCase& k : kEdgeCases) CheckForward(k, dt);
  }
}

void CheckBackward(const ConvCase& k, Symbol<DType> dt) {
  const OpDef& bwd_data = OpRegistry::Global().Get("conv2d_backward_data");
  const OpDef& bwd_weight = OpRegistry::Global().Get("conv2d_backward_weight");
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
  // Channels-last x and grad_y (either or both), as a channels-last forward gives them.
  const bool x_cl = Canonical(k.x, MemoryFormat::kChannelsLast) == MemoryFormat::kChannelsLast;
  const bool dy_cl = Canonical(ys, MemoryFormat::kChannelsLast) == MemoryFormat::kChannelsLast;
  if (x_cl || dy_cl) {
    const TensorPtr xc = x_cl ? ChannelsLast(x) : x, dyc = dy_cl ? ChannelsLast(dy) : dy;
    const TensorPtr dxc = Apply1(bwd_data, {dyc, w, xc}, k.attrs());
    ExpectTensorNear(dxc, dt, k.x, dx, Tol(dt), Tol(dt));
    if (dt != DType::Float64()) {
      EXPECT_EQ(dxc->memory_format(), Canonical(k.x, MemoryFormat::kChannelsLast));
    }
    for (const auto& [xi, dyi] : {std::pair(xc, dy), std::pair(x, dyc), std::pair(xc, dyc)}) {
      r = Apply(bwd_weight, {xi, dyi, w}, k.attrs());
      ExpectTensorNear(r[0], dt, ws, dw, Tol(dt), Tol(dt));
      ExpectTensorNear(r[1], dt, {k.out}, db, Tol(dt), Tol(dt));
      EXPECT_TRUE(r[0]->is_contiguous());
    }
  }
  // Without the bias gradient (a convolution without a bias): the same weight gradient, an empty grad_bias.
  Attrs no_bias = k.attrs();
  no_bias.Set("bias_grad", false);
  for (const TensorPtr& xi : {x, x_cl ? ChannelsLast(x) : x}) {
    r = Apply(bwd_weight, {xi, dy_cl ? ChannelsLast(dy) : dy, w}, no_bias);
    ExpectTensorNear(r[0], dt, ws, dw, Tol(dt), Tol(dt));
    EXPECT_EQ(r[1]->shape(), Shape{0});
  }
  MarkCovered("conv2d_backward_data", dt);
  MarkCovered("conv2d_backward_weight", dt);
}

TEST(Conv2d, BackwardOpsMatchDirectLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const ConvCase& k : kCases) CheckBackward(k, dt);
  }
  for (const ConvCase& k : kManyChannels) CheckBackward(k, DType::Float32());
}

// dW (o, c, kh, kw) of conv2d(x, w) for grad_y dy, in float64 loops over the terms of `k`.
std::vector<double> RefWeightGradient(const ConvCase& k, const TensorPtr& x, const TensorPtr& dy) {
  const std::vector<double> xv = ToDoubles(x), dyv = ToDoubles(dy);
  const Shape ws = k.weight_shape(), ys = k.y_shape();
  std::vector<double> dw(static_cast<size_t>(ws.numel()), 0.0);
  k.ForEachTerm([&](int64_t b, int64_t o, int64_t c, int64_t ci, int64_t oy, int64_t ox, int64_t iy, int64_t ix,
                    int64_t ki, int64_t kj) {
    dw[static_cast<size_t>(Ravel({o, ci, ki, kj}, ws))] +=
        dyv[static_cast<size_t>(Ravel({b, o, oy, ox}, ys))] * xv[static_cast<size_t>(Ravel({b, c, iy, ix}, k.x))];
  });
  return dw;
}

// The weight gradient of channels-last x and grad_y without a bias gradient, against the loops.
void CheckWeightGradientWithoutBias(const ConvCase& k) {
  const auto f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, k.x), dy = RandomTensor(f32, k.y_shape());
  const TensorPtr w = RandomTensor(f32, k.weight_shape());  // gives the weight's shape only
  Attrs attrs = k.attrs();
  attrs.Set("bias_grad", false);
  const OpDef& bwd_weight = OpRegistry::Global().Get("conv2d_backward_weight");
  ExpectTensorNear(Apply(bwd_weight, {ChannelsLast(x), ChannelsLast(dy), w}, attrs)[0], f32, k.weight_shape(),
                   RefWeightGradient(k, x, dy), Tol(f32), Tol(f32));
}

// Weight gradients over few input channels, summed along x's rows (Note [Weight gradients over image
// channels]): ResNet's stem at one 112x112 image, a 5x3 window of stride (2, 1) over 4 channels whose
// windows reach into the padding on both sides, one channel into 128; the threads' shares of the
// positions start and end inside rows.
TEST(Conv2d, ImageChannelWeightGradientsInThreadSharesMatchDirectLoops) {
  const auto f32 = DType::Float32();
  const OpDef& bwd_weight = OpRegistry::Global().Get("conv2d_backward_weight");
  for (const ConvCase& k : {ConvCase{{1, 3, 112, 112}, 64, 7, 7, {2, 2}, {3, 3}, {1, 1}, 1, false},
                            ConvCase{{2, 4, 81, 50}, 64, 5, 3, {2, 1}, {1, 2}, {1, 1}, 1, false},
                            ConvCase{{1, 1, 60, 60}, 128, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false}}) {
    SCOPED_TRACE(k.name());
    const TensorPtr x = RandomTensor(f32, k.x), dy = RandomTensor(f32, k.y_shape());
    const TensorPtr w = RandomTensor(f32, k.weight_shape());  // gives the weight's shape only
    const std::vector<double> want = RefWeightGradient(k, x, dy);
    Attrs attrs = k.attrs();
    attrs.Set("bias_grad", false);
    for (int32_t threads : {1, 2, 3}) {
      SCOPED_TRACE(fmt::format("{} threads", threads));
      Session session(SessionOptions{.num_threads = threads});
      SessionScope scope(session);
      ExpectTensorNear(Apply(bwd_weight, {ChannelsLast(x), ChannelsLast(dy), w}, attrs)[0], f32, k.weight_shape(), want,
                       Tol(f32), Tol(f32));
    }
  }
}

// Note [Weight gradients as products over patches]: a weight of 16 x 4608 elements, and 484 positions are
// two chunks of patches (455 fill 8 MiB), the second one added to the first's product.
TEST(Conv2d, WeightGradientOverPatchesInChunks) {
  CheckWeightGradientWithoutBias({{1, 512, 44, 44}, 16, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, false});
}

// The Winograd weight gradient of float32 channels-last operands on `threads` threads against oneDNN's of the
// same operands (with the bias gradient, which the Winograd kernels do not give).
void CheckWinogradWeightGradientAgainstOneDnn(const ConvCase& k, int32_t threads) {
  SCOPED_TRACE(fmt::format("{} on {} threads", k.name(), threads));
  const auto f32 = DType::Float32();
  const TensorPtr x = ChannelsLast(RandomTensor(f32, k.x)), dy = ChannelsLast(RandomTensor(f32, k.y_shape()));
  const TensorPtr w = RandomTensor(f32, k.weight_shape());  // gives the weight's shape only
  Session session(SessionOptions{.num_threads = threads});
  SessionScope scope(session);
  const OpDef& bwd_weight = OpRegistry::Global().Get("conv2d_backward_weight");
  Attrs winograd = k.attrs(), onednn = k.attrs();
  winograd.Set("bias_grad", false);
  onednn.Set("bias_grad", true);
  ExpectTensorNear(Apply(bwd_weight, {x, dy, w}, winograd)[0], f32, k.weight_shape(),
                   ToDoubles(Apply(bwd_weight, {x, dy, w}, onednn)[0]), Tol(f32), Tol(f32));
}

// The Winograd weight gradient with sums of 1 MiB to 4 MiB (64 x 256 channels), in blocks of at most 4 MiB
// of transformed input and output gradient: on one thread the 256 tiles are 2 blocks of 128, which add
// into the same sums; of stride 1 and 2.
TEST(Conv2d, WinogradWeightGradientInLargeBlocks) {
  CheckWinogradWeightGradientAgainstOneDnn({{1, 64, 32, 32}, 256, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false}, 1);
  CheckWinogradWeightGradientAgainstOneDnn({{1, 64, 64, 64}, 256, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, false}, 1);
}

// ... with sums of 4 MiB and more, by position (Note [Winograd passes by position]): 512 x 128 channels over
// 441 tiles, two spans of tiles (the second one added into the first's sums); 256 x 256 of stride 2; 512 x
// 512 over 128 tiles of 7x7 images. On 1 and 3 threads (each weight matrix's products on one of them).
TEST(Conv2d, WinogradWeightGradientByPosition) {
  for (const ConvCase& k : {ConvCase{{1, 512, 42, 42}, 128, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false},
                            ConvCase{{1, 256, 30, 30}, 256, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, false},
                            ConvCase{{8, 512, 7, 7}, 512, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false}}) {
    for (int32_t threads : {1, 3}) CheckWinogradWeightGradientAgainstOneDnn(k, threads);
  }
}

// x (n, c, h, w)'s channels [c0, c1) (a tensor of the dtype; values in NCHW order).
TensorPtr ChannelRange(const TensorPtr& x, int64_t c0, int64_t c1) {
  const Shape& s = x->shape();
  const std::vector<double> v = ToDoubles(x);
  const int64_t plane = s[2].value() * s[3].value(), c = s[1].value();
  std::vector<double> out;
  for (int64_t n = 0; n < s[0].value(); ++n) {
    out.insert(out.end(), v.begin() + (n * c + c0) * plane, v.begin() + (n * c + c1) * plane);
  }
  return FromDoubles(x->dtype(), Shape{s[0], Dim(c1 - c0), s[2], s[3]}, out);
}

// The forward and backward data by position with 512 input channels over 64 tiles of 7x7 images (ResNet-50's
// last stage at batch 4; over fewer they run oneDNN's kernels), of stride 1 and 2: y as the sum of the
// convolutions of x's and w's two halves of 256 channels, dx's halves as the backward data of w's halves,
// which the Winograd kernels run in blocks (their float64 references take long at these sizes).
TEST(Conv2d, WinogradByPositionAsTheSumOfTheInputChannelHalves) {
  const auto f32 = DType::Float32();
  for (const ConvCase& k : {ConvCase{{4, 512, 7, 7}, 136, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false},
                            ConvCase{{4, 512, 14, 13}, 136, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, false}}) {
    SCOPED_TRACE(k.name());
    const TensorPtr x = RandomTensor(f32, k.x), w = RandomTensor(f32, k.weight_shape());
    const TensorPtr dy = ChannelsLast(RandomTensor(f32, k.y_shape()));
    const OpDef& bwd_data = OpRegistry::Global().Get("conv2d_backward_data");
    std::vector<double> y(static_cast<size_t>(k.y_shape().numel()), 0.0), dx;
    for (int64_t c0 : {0, 256}) {
      const TensorPtr xh = ChannelsLast(ChannelRange(x, c0, c0 + 256)), wh = ChannelRange(w, c0, c0 + 256);
      const std::vector<double> part = ToDoubles(ops::Conv2d(xh, wh, TensorPtr(), k.options()));
      for (size_t i = 0; i < y.size(); ++i) y[i] += part[i];
      const TensorPtr dxh = ChannelsLast(Apply1(bwd_data, {dy, wh, xh}, k.attrs()));
      dx.resize(static_cast<size_t>(k.x.numel()));
      const std::vector<double> dxv = ToDoubles(dxh);
      const int64_t plane = k.x[2].value() * k.x[3].value();
      for (int64_t n = 0; n < k.x[0].value(); ++n) {
        std::copy_n(dxv.begin() + n * 256 * plane, 256 * plane, dx.begin() + (n * 512 + c0) * plane);
      }
    }
    ExpectTensorNear(ops::Conv2d(ChannelsLast(x), w, TensorPtr(), k.options()), f32, k.y_shape(), y, Tol(f32),
                     Tol(f32));
    ExpectTensorNear(Apply1(bwd_data, {dy, w, ChannelsLast(x)}, k.attrs()), f32, k.x, dx, Tol(f32), Tol(f32));
  }
}

// The forward and backward data by position over two spans of tiles (512 x 136 channels, 3 images of 196
// tiles, spans of 294): each image as the same pass over that image alone (one span).
TEST(Conv2d, WinogradByPositionOverSpansAsImageByImage) {
  const auto f32 = DType::Float32();
  const ConvCase k{{3, 512, 28, 28}, 136, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false};
  const ConvCase one{{1, 512, 28, 28}, 136, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false};
  const TensorPtr x = RandomTensor(f32, k.x), dy = RandomTensor(f32, k.y_shape());
  const TensorPtr w = RandomTensor(f32, k.weight_shape());
  const OpDef& bwd_data = OpRegistry::Global().Get("conv2d_backward_data");
  const std::vector<double> xv = ToDoubles(x), dyv = ToDoubles(dy);
  const std::vector<double> y = ToDoubles(ops::Conv2d(ChannelsLast(x), w, TensorPtr(), k.options()));
  const std::vector<double> dx = ToDoubles(Apply1(bwd_data, {ChannelsLast(dy), w, ChannelsLast(x)}, k.attrs()));
  const auto image = [](const std::vector<double>& v, int64_t i, int64_t size) {
    return std::vector<double>(v.begin() + i * size, v.begin() + (i + 1) * size);
  };
  const int64_t x_size = one.x.numel(), y_size = one.y_shape().numel();
  for (int64_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(fmt::format("image {}", i));
    const TensorPtr xi = ChannelsLast(FromDoubles(f32, one.x, image(xv, i, x_size)));
    const TensorPtr dyi = ChannelsLast(FromDoubles(f32, one.y_shape(), image(dyv, i, y_size)));
    ExpectTensorNear(ops::Conv2d(xi, w, TensorPtr(), one.options()), f32, one.y_shape(), image(y, i, y_size), Tol(f32),
                     Tol(f32));
    ExpectTensorNear(Apply1(bwd_data, {dyi, w, xi}, one.attrs()), f32, one.x, image(dx, i, x_size), Tol(f32), Tol(f32));
  }
}

// ... with smaller sums (16 x 256 channels) in blocks that stay in the L2 cache: on one thread its 64 tiles
// are 2 blocks. Against the float64 loops.
TEST(Conv2d, WinogradWeightGradientOverSeveralBlocks) {
  Session one_thread(SessionOptions{.num_threads = 1});
  SessionScope scope(one_thread);
  CheckWeightGradientWithoutBias({{1, 16, 16, 16}, 256, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false});
}

// An empty x still has a bias gradient (the sum of grad_y), and huge attributes run the loops.
TEST(Conv2d, BackwardOpsOfEmptyOperandsAndHugeAttributesMatchDirectLoops) {
  for (Symbol<DType> dt : kDTypes) {
    for (const ConvCase& k : kEdgeCases) CheckBackward(k, dt);
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

// The 1x1 products over many positions on the pool's threads (Note [Products on the pool's threads]): the
// backward data (4096 x 16 x 32) in shares of dx's rows, the weight gradient over 4096 positions as the
// transposed product dW^T (16 x 32: more output than input channels, Note [1x1 convolutions as products])
// in shares of the positions, each summed apart and added after; on 1, 2 and 3 threads (uneven shares).
// With 32 and 64 input channels over 3249 positions, the weight gradient is SumRowProducts' where the CPU
// has AVX-512 (Note [Weight gradients as sums of row products]): 31 and 96 output channels, tiles of 14
// rows and their last partial ones, the positions' last block partial. Into 16 channels over 12,544
// positions the backward data is oneDNN's matmul where oneDNN runs AVX-512.
TEST(Conv2d, OneByOneProductsInThreadSharesMatchDirectLoops) {
  for (int32_t threads : {1, 2, 3}) {
    SCOPED_TRACE(fmt::format("{} threads", threads));
    Session session(SessionOptions{.num_threads = threads});
    SessionScope scope(session);
    CheckBackward({{4, 16, 32, 32}, 32, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false}, DType::Float32());
    CheckBackward({{1, 64, 57, 57}, 31, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false}, DType::Float32());
    CheckBackward({{1, 32, 57, 57}, 96, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false}, DType::Float32());
    CheckBackward({{4, 16, 56, 56}, 24, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false}, DType::Float32());
  }
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

// Window arithmetic that would overflow int64 is refused naming the attribute (never wrapped, never a
// oneDNN failure), by conv2d, its backward ops and the fused op, which share the inference.
TEST(Conv2d, OverflowingAttributesAreInvalidArgumentsNamingThem) {
  const auto f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {1, 4, 5, 5}), w = RandomTensor(f32, {2, 4, 3, 3});
  const std::vector<std::string> dilated = {"dilation[0] is 9223372036854775807",
                                            "the dilated kernel (dilation * (kH - 1) + 1) overflows int64", "kH = 3"};
  const std::vector<std::string> padded = {"padding[1] is 4611686018427387903",
                                           "the padded input (W + 2 * padding) overflows int64"};
  const ops::Conv2dOptions huge_dilation{.dilation = {INT64_MAX, 1}}, huge_padding{.padding = {0, INT64_MAX / 2}};
  auto with = [](std::string prefix, std::vector<std::string> parts) {
    parts.insert(parts.begin(), std::move(prefix));
    return parts;
  };
  ExpectError([&] { ops::Conv2d(x, w, nullptr, huge_dilation); }, with("conv2d: ", dilated));
  ExpectError([&] { ops::Conv2d(x, w, nullptr, huge_padding); }, with("conv2d: ", padded));
  ExpectError([&] { ops::Conv2d(x, w, nullptr, {.dilation = {1, INT64_MAX / 2 + 1}}); },
              {"conv2d: ", "dilation[1]", "kW = 3"});
  ExpectError([&] { ops::Conv2d(x, w, nullptr, {.padding = {INT64_MAX, 0}}); }, {"conv2d: ", "padding[0]", "overflows"});
  const Attrs attrs{{"stride", std::vector<int64_t>{1, 1}}, {"padding", std::vector<int64_t>{0, 0}},
                    {"dilation", std::vector<int64_t>{INT64_MAX, 1}}, {"groups", int64_t{1}}};
  const TensorPtr dy = RandomTensor(f32, {1, 2, 3, 3});
  ExpectError([&] { Apply1(OpRegistry::Global().Get("conv2d_backward_data"), {dy, w, x}, attrs); },
              with("conv2d_backward_data: ", dilated));
  ExpectError([&] { Apply(OpRegistry::Global().Get("conv2d_backward_weight"), {x, dy, w}, attrs); },
              with("conv2d_backward_weight: ", dilated));
  const TensorPtr c2 = RandomTensor(f32, {2}, 0.5, 1.0);
  ExpectError([&] { ops::FusedConvBnAct(x, w, nullptr, c2, c2, c2, c2, huge_dilation, 1e-5, false); },
              with("fused_conv_bn_act: ", dilated));
  // An empty kernel is refused; groups too large for the channel arithmetic is a channel mismatch.
  ExpectError([&] { ops::Conv2d(x, RandomTensor(f32, {2, 4, 0, 3}), nullptr); },
              {"conv2d: ", "weight (2, 4, 0, 3)", "empty kernel", "(0, 3)", ">= 1"});
  ExpectError([&] { ops::Conv2d(x, RandomTensor(f32, {0, 2, 3, 3}), nullptr, {.groups = INT64_MAX}); },
              StatusCode::kInvalidArgument, {"conv2d: ", "4 channels", "groups=9223372036854775807", "more than int64"});
}

// One dtype rule (oneflow_c.h, ops "DTypes"): a dtype conv2d is defined for but has no kernel for is
// UNIMPLEMENTED naming the op and the dtype; bool (not a number) is INVALID_ARGUMENT.
TEST(Conv2d, DTypesWithoutKernels) {
  for (Symbol<DType> dt : {DType::Int64(), DType::Int8()}) {
    ExpectError([&] { ops::Conv2d(RandomTensor(dt, {1, 2, 4, 4}), RandomTensor(dt, {2, 2, 3, 3}), nullptr); },
                StatusCode::kUnimplemented, {"conv2d: ", "no kernel", std::string(dt->name())});
  }
  ExpectError([&] { ops::Conv2d(RandomTensor(DType::Bool(), {1, 2, 4, 4}), RandomTensor(DType::Bool(), {2, 2, 3, 3}), nullptr); },
              StatusCode::kInvalidArgument, {"conv2d: ", "x is bool"});
}

// The lazy graph gives the same statuses and results: at trace time what the known sizes decide, at
// compile time (the first run) what needs the concrete ones.
TEST(Conv2d, ExtremeCasesBehaveTheSameInAGraph) {
  const auto session = std::make_shared<Session>(SessionOptions{});
  SessionScope scope(*session);
  const auto f32 = DType::Float32();
  const TensorPtr w = RandomTensor(f32, {2, 4, 3, 3});
  {
    graph::Graph g(session, "dilated", graph::GraphOptions{});
    g.BeginBuild();
    const TensorPtr x = g.AddInput("x", f32, Shape{Dim::NewSymbol("N"), 4, Dim(), Dim()});
    ExpectError([&] { ops::Conv2d(x, w, nullptr, {.dilation = {INT64_MAX, 1}}); },
                {"conv2d: ", "dilation[0] is 9223372036854775807", "dilated kernel", "overflows int64"});
  }
  {
    graph::Graph g(session, "padded", graph::GraphOptions{});
    g.BeginBuild();
    const TensorPtr x = g.AddInput("x", f32, Shape{1, 4, Dim(), 5});
    g.AddOutput(ops::Conv2d(x, w, nullptr, {.padding = {INT64_MAX / 2, 0}}));
    g.EndBuild();
    ExpectError([&] { g.Run({RandomTensor(f32, {1, 4, 5, 5})}); },
                {"conv2d: ", "padding[0] is 4611686018427387903", "padded input (H + 2 * padding) overflows int64"});
  }
  {
    graph::Graph g(session, "ints", graph::GraphOptions{});
    g.BeginBuild();
    const TensorPtr x = g.AddInput("x", DType::Int64(), Shape{1, 2, 4, 4});
    g.AddOutput(ops::Conv2d(x, RandomTensor(DType::Int64(), {2, 2, 3, 3}), nullptr));
    g.EndBuild();
    ExpectError([&] { g.Run({RandomTensor(DType::Int64(), {1, 2, 4, 4})}); }, StatusCode::kUnimplemented,
                {"conv2d: ", "no kernel", "int64"});
  }
  // Zero input channels and a huge stride, through conv2d -> batch_norm (inference) -> relu, which the
  // graph fuses into fused_conv_bn_act: the eager ops' results.
  for (const ConvCase& k : {kEdgeCases[0], kEdgeCases[5]}) {
    SCOPED_TRACE(k.name());
    const TensorPtr wk = RandomTensor(f32, k.weight_shape()), b = RandomTensor(f32, {k.out});
    const TensorPtr gamma = RandomTensor(f32, {k.out}), beta = RandomTensor(f32, {k.out});
    const TensorPtr rm = RandomTensor(f32, {k.out}), rv = RandomTensor(f32, {k.out}, 0.5, 2.0);
    auto net = [&](const TensorPtr& x) {
      return ops::Relu(ops::BatchNorm(ops::Conv2d(x, wk, b, k.options()), gamma, beta, rm, rv, {.training = false}));
    };
    graph::Graph g(session, "fused", graph::GraphOptions{});
    g.BeginBuild();
    g.AddOutput(net(g.AddInput("x", f32, k.x)));
    g.EndBuild();
    const TensorPtr x = RandomTensor(f32, k.x);
    const std::vector<TensorPtr> out = g.Run({x});
    EXPECT_NE(g.Dump().find("fused_conv_bn_act"), std::string::npos) << g.Dump();
    const TensorPtr eager = net(x);
    ExpectTensorNear(out[0], f32, eager->shape(), ToDoubles(eager), 1e-5, 1e-5);
  }
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
