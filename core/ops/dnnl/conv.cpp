// conv2d, conv3d and their backward ops (conv{2,3}d_backward_data, conv{2,3}d_backward_weight, which
// also gives the bias gradient). The ranks share the kernels, which read the rank from x (see ConvGeom).
// float32: oneDNN convolution in the layouts it picks (format any), reordered from and to our plain
// NC(D)HW tensors, except 3x3 stride-1 convolutions of 16 to 256 channels on channels-last data, which run
// Winograd kernels (core/ops/cpu/winograd.h; the weight gradient only when no bias gradient is asked), and
// the weight gradient, (stride 1) backward data and (few positions) forward of 1x1 ones on channels-last
// data, which are one sgemm each (Note [1x1 convolutions as products]), and on channels-last data without
// a bias products over the patches of x (Notes [Convolutions over few positions as products], [Weight
// gradients as products over patches]); strided 1x1 ones on channels-last data run over x gathered at
// their output positions (Note [Strided 1x1 convolutions]);
// float64: direct loops, which float32 also runs where oneDNN does not (empty
// operands, sizes beyond its int32 descriptors: see DnnlRuns).
//
// padding pads (top, left), padding_end (bottom, right; empty: as padding; conv2d only): oneDNN's
// padding_l and padding_r; the loops need only the begin padding (the output size bounds the rest).
//
// The backward ops take the forward input x (or weight) only for its shape: with strides > 1 the input
// size does not follow from the output's. They read only its metadata, so they take strided inputs.
#include <algorithm>
#include <optional>
#include <string>

#include "core/autograd/autograd.h"
#include "core/op/dispatch.h"
#include "core/op/layout.h"
#include "core/ops/convolution.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/cpu/row_products.h"
#include "core/ops/cpu/winograd.h"
#include "core/ops/dnnl/conv_common.h"
#include "core/ops/dnnl/sgemm.h"
#include "core/ops/ops.h"
#include "core/ops/window.h"

namespace oneflow {
namespace {

using namespace dnnl_util;

// oneDNN's (D,) H, W attributes.
memory::dims Strides(const ConvGeom& g) {
  if (g.is3d) return {g.sd, g.win.stride[0], g.win.stride[1]};
  return {g.win.stride[0], g.win.stride[1]};
}
memory::dims Dilates(const ConvGeom& g) {
  if (g.is3d) return {g.dd - 1, g.win.dilation[0] - 1, g.win.dilation[1] - 1};
  return {g.win.dilation[0] - 1, g.win.dilation[1] - 1};
}
memory::dims PaddingL(const ConvGeom& g) {
  if (g.is3d) return {g.pd, g.win.padding[0], g.win.padding[1]};
  return {g.win.padding[0], g.win.padding[1]};
}
memory::dims PaddingR(const ConvGeom& g) {
  if (g.is3d) return {g.pd, g.win.padding_end[0], g.win.padding_end[1]};
  return {g.win.padding_end[0], g.win.padding_end[1]};
}

// An int list attribute of exactly three values >= `min` (conv3d's (D, H, W)).
std::vector<int64_t> Triple(const Attrs& attrs, std::string_view name, int64_t min) {
  const std::vector<int64_t>& v = attrs.Ints(name);
  OF_CHECK(v.size() == 3 && v[0] >= min && v[1] >= min && v[2] >= min)
      << name << " must be three values >= " << min << ", got " << AttrValueToString(v);
  return v;
}

// The depth window as axis 0 of a Window2d (for WindowOut, once inference has checked its arithmetic).
Window2d DepthWindow(int64_t stride, int64_t padding, int64_t dilation) {
  Window2d win;
  win.stride[0] = stride;
  win.padding[0] = win.padding_end[0] = padding;
  win.dilation[0] = dilation;
  return win;
}

}  // namespace

// ---- shared with fused_conv.cpp (see conv_common.h) ------------------------------------------------

namespace dnnl_util {

ConvParams ConvParamsOf(const Attrs& attrs, int rank) {
  ConvParams p;
  p.rank = rank;
  p.groups = attrs.Int("groups");
  if (rank == 3) {
    const std::vector<int64_t> stride = Triple(attrs, "stride", 1), padding = Triple(attrs, "padding", 0),
                               dilation = Triple(attrs, "dilation", 1);
    p.depth_stride = stride[0];
    p.depth_padding = padding[0];
    p.depth_dilation = dilation[0];
    for (int a = 0; a < 2; ++a) {
      p.win.stride[a] = stride[a + 1];
      p.win.padding[a] = p.win.padding_end[a] = padding[a + 1];
      p.win.dilation[a] = dilation[a + 1];
    }
    OF_CHECK(p.groups >= 1) << "groups must be >= 1, got " << p.groups;
    return p;
  }
  const std::vector<int64_t> stride = Pair(attrs, "stride", 1), padding = Pair(attrs, "padding", 0),
                             padding_end = PaddingEnd(attrs, padding), dilation = Pair(attrs, "dilation", 1);
  for (int a = 0; a < 2; ++a) {
    p.win.stride[a] = stride[a];
    p.win.padding[a] = padding[a];
    p.win.padding_end[a] = padding_end[a];
    p.win.dilation[a] = dilation[a];
  }
  OF_CHECK(p.groups >= 1) << "groups must be >= 1, got " << p.groups;
  return p;
}

ConvGeom ConvGeomOf(const Tensor& x, const Tensor& w, const Attrs& attrs) {
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  const bool is3d = xs.ndim() == 5;
  const ConvParams p = ConvParamsOf(attrs, is3d ? 3 : 2);
  const int s = is3d ? 1 : 0;  // the (H, W) dims follow the depth
  ConvGeom g{xs[0].value(), xs[1].value(), xs[2 + s].value(), xs[3 + s].value(), ws[0].value(),
             ws[2 + s].value(), ws[3 + s].value(), 0, 0, p.groups, p.win};
  if (is3d) {
    g.is3d = true;
    g.d = xs[2].value();
    g.kd = ws[2].value();
    g.sd = p.depth_stride;
    g.pd = p.depth_padding;
    g.dd = p.depth_dilation;
    g.od = WindowOut(g.d, g.kd, DepthWindow(g.sd, g.pd, g.dd), 0);
  }
  g.oh = WindowOut(g.h, g.kh, g.win, 0);
  g.ow = WindowOut(g.w, g.kw, g.win, 1);
  return g;
}

memory::dims SrcDims(const ConvGeom& g) {
  if (g.is3d) return {g.n, g.c, g.d, g.h, g.w};
  return {g.n, g.c, g.h, g.w};
}
memory::dims DstDims(const ConvGeom& g) {
  if (g.is3d) return {g.n, g.o, g.od, g.oh, g.ow};
  return {g.n, g.o, g.oh, g.ow};
}
memory::dims WeightDims(const ConvGeom& g) {
  if (g.is3d) {
    if (g.g == 1) return {g.o, g.c, g.kd, g.kh, g.kw};
    return {g.g, g.og(), g.cg(), g.kd, g.kh, g.kw};
  }
  if (g.g == 1) return {g.o, g.c, g.kh, g.kw};
  return {g.g, g.og(), g.cg(), g.kh, g.kw};
}

int64_t ConvWork(const ConvGeom& g) { return g.n * g.o * g.od * g.oh * g.ow * g.cg() * g.kd * g.kh * g.kw / 8; }

bool DnnlRuns(const ConvGeom& g) {
  if (std::min({g.n, g.c, g.d, g.h, g.w, g.o, g.od, g.oh, g.ow}) == 0) return false;
  if (g.is3d && !FitsDnnl({g.d, g.kd, g.od, g.sd, g.dd, g.d + 2 * g.pd, g.dd * (g.kd - 1) + 1})) return false;
  return FitsDnnl({g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.oh, g.ow, g.g, g.win.stride[0], g.win.stride[1],
                   g.win.dilation[0], g.win.dilation[1], PaddedInput(g.h, g.win, 0), PaddedInput(g.w, g.win, 1),
                   DilatedKernel(g.kh, g.win, 0), DilatedKernel(g.kw, g.win, 1)});
}

Key ConvKey(const Exec& exec, int64_t kind, const ConvGeom& g, bool flag) {
  Key key = {exec.threads, kind, g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.win.stride[0], g.win.stride[1],
             g.win.padding[0], g.win.padding[1], g.win.padding_end[0], g.win.padding_end[1], g.win.dilation[0],
             g.win.dilation[1], g.g, flag, g.channels_last};
  if (g.is3d) key.insert(key.end(), {g.d, g.kd, g.sd, g.pd, g.dd});  // a longer key: never a 2-D one's
  return key;
}

memory::desc UserData(const ConvGeom& g, const memory::dims& dims) { return DataDesc(dims, g.channels_last); }
memory::desc PrimData(const ConvGeom& g, const memory::dims& dims) {
  return g.channels_last ? DataDesc(dims, true) : AnyDesc(dims);
}

dnnl::convolution_forward::desc ConvFwdDesc(const ConvGeom& g, dnnl::prop_kind prop, bool bias) {
  const memory::desc src = PrimData(g, SrcDims(g)), w = AnyDesc(WeightDims(g)), dst = PrimData(g, DstDims(g));
  if (bias) {
    return dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct, src, w, PlainDesc({g.o}), dst,
                                           Strides(g), Dilates(g), PaddingL(g), PaddingR(g));
  }
  return dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct, src, w, dst, Strides(g),
                                         Dilates(g), PaddingL(g), PaddingR(g));
}

ConvFwdEntry MakeConvFwdEntry(const ConvGeom& g, const dnnl::convolution_forward::primitive_desc& pd) {
  return ConvFwdEntry{pd, dnnl::convolution_forward(pd), Operand(UserData(g, SrcDims(g)), pd.src_desc(), true),
                      Operand(PlainDesc(WeightDims(g)), pd.weights_desc(), true),
                      Operand(UserData(g, DstDims(g)), pd.dst_desc(), false)};
}

void RunConvFwd(const ConvFwdEntry& e, const ConvGeom& g, dnnl::stream& stream, ThreadPool& pool, void* x, void* w,
                void* bias, void* y) {
  const memory dst = e.dst.Prepare(y, kSlotDst, stream);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, e.src.Prepare(x, kSlotSrc, stream)},
                                          {DNNL_ARG_WEIGHTS, e.weights.Prepare(w, kSlotWeights, stream, &pool)},
                                          {DNNL_ARG_DST, dst},
                                          {DNNL_ARG_SCRATCHPAD, Scratchpad(e.pd)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(PlainDesc({g.o}), Engine(), bias));
  e.prim.execute(stream, args);
  e.dst.Finish(dst, y, stream);
  stream.wait();
}

}  // namespace dnnl_util

namespace {

using namespace dnnl_util;

const char* OpName(int rank) { return rank == 3 ? "conv3d" : "conv2d"; }

// conv3d's output (D, H, W) for x (N, C, D, H, W) and weight (O, C / g, kD, kH, kW): a dim is unknown
// where x's or the kernel's is; the window arithmetic is checked wherever its operands are known.
Shape Conv3dSpatialOut(const Shape& x, const Shape& w, const ConvParams& p) {
  const int64_t stride[3] = {p.depth_stride, p.win.stride[0], p.win.stride[1]};
  const int64_t padding[3] = {p.depth_padding, p.win.padding[0], p.win.padding[1]};
  const int64_t dilation[3] = {p.depth_dilation, p.win.dilation[0], p.win.dilation[1]};
  static const char* const kIn[3] = {"D", "H", "W"};
  static const char* const kKernel[3] = {"kD", "kH", "kW"};
  Dim out[3];
  bool ok = true;
  for (int a = 0; a < 3; ++a) {
    int64_t padded = 0, extent = 0;
    const bool in_known = x[2 + a].is_known(), k_known = w[2 + a].is_known();
    OF_CHECK(!__builtin_mul_overflow(padding[a], 2, &padded) &&
             !(in_known && __builtin_add_overflow(padded, x[2 + a].value(), &padded)))
        << "padding[" << a << "] is " << padding[a] << ": the padded input (" << kIn[a]
        << " + 2 * padding) overflows int64";
    if (k_known) {
      const int64_t k = w[2 + a].value();
      OF_CHECK(!__builtin_mul_overflow(dilation[a], k - 1, &extent) && !__builtin_add_overflow(extent, 1, &extent))
          << "dilation[" << a << "] is " << dilation[a] << ": the dilated kernel (dilation * (" << kKernel[a]
          << " - 1) + 1) overflows int64 for " << kKernel[a] << " = " << k;
    }
    if (!in_known || !k_known) continue;
    const int64_t span = padded - extent;  // both >= 0: no overflow
    out[a] = span < 0 ? 0 : span / stride[a] + 1;
    ok &= out[a].value() >= 1;
  }
  OF_CHECK(ok) << "output size would be (" << out[0] << ", " << out[1] << ", " << out[2] << "): x " << x
               << " is too small for kernel (" << w[2] << ", " << w[3] << ", " << w[4] << ") with stride ("
               << stride[0] << ", " << stride[1] << ", " << stride[2] << "), padding (" << padding[0] << ", "
               << padding[1] << ", " << padding[2] << "), dilation (" << dilation[0] << ", " << dilation[1] << ", "
               << dilation[2] << ")";
  return Shape{out[0], out[1], out[2]};
}

// The output shape of conv2d / conv3d (p.rank) of (x, weight), checking both. Zero input channels are
// allowed (the result is the bias, as PyTorch's); an empty kernel is not.
Shape ConvOutShape(const Shape& x, const Shape& w, const ConvParams& p) {
  if (p.rank == 3) {
    OF_CHECK(x.ndim() == 5) << "x must be 5-D (N, C, D, H, W), got " << x;
    OF_CHECK(w.ndim() == 5) << "weight must be 5-D (out_channels, in_channels / groups, kD, kH, kW), got " << w;
    OF_CHECK(!(w[2] == 0 || w[3] == 0 || w[4] == 0))
        << "weight " << w << " has an empty kernel (kD, kH, kW) = (" << w[2] << ", " << w[3] << ", " << w[4]
        << "); kernel sizes must be >= 1";
  } else {
    OF_CHECK(x.ndim() == 4) << "x must be 4-D (N, C, H, W), got " << x;
    OF_CHECK(w.ndim() == 4) << "weight must be 4-D (out_channels, in_channels / groups, kH, kW), got " << w;
    OF_CHECK(!(w[2] == 0 || w[3] == 0)) << "weight " << w << " has an empty kernel (kH, kW) = (" << w[2] << ", "
                                        << w[3] << "); kernel sizes must be >= 1";
  }
  const int64_t g = p.groups;
  OF_CHECK(!w[0].is_known() || w[0].value() % g == 0)
      << "groups=" << g << " does not divide the " << w[0] << " output channels of weight " << w;
  if (x[1].is_known() && w[1].is_known() && (x[1].value() % g != 0 || x[1].value() / g != w[1].value())) {
    int64_t expect;
    const bool overflow = __builtin_mul_overflow(w[1].value(), g, &expect);
    OF_THROW(InvalidArgument) << "x " << x << " has " << x[1] << " channels but weight " << w << " with groups=" << g
                              << " expects weight.shape[1] * groups = " << w[1] << " * " << g << " = "
                              << (overflow ? std::string("more than int64 holds") : std::to_string(expect));
  }
  if (p.rank == 3) {
    const Shape spatial = Conv3dSpatialOut(x, w, p);
    return Shape{x[0], w[0], spatial[0], spatial[1], spatial[2]};
  }
  const auto [oh, ow] = WindowOutput(x, w[2], w[3], p.win);
  return Shape{x[0], w[0], oh, ow};
}

void CheckDType(const TensorMeta& t, const TensorMeta& ref, std::string_view name, std::string_view ref_name) {
  OF_CHECK(t.dtype == ref.dtype) << name << " is " << t.dtype << " but " << ref_name << " is " << ref.dtype
                                 << "; they must have one dtype";
}

void CheckBias(const TensorMeta& bias, const TensorMeta& x, const Shape& w) {
  CheckDType(bias, x, "bias", "x");
  OF_CHECK(bias.shape.ndim() == 1 && !(bias.shape[0].is_known() && w[0].is_known() && bias.shape[0] != w[0]))
      << "bias must be 1-D with out_channels = " << w[0] << " elements, got " << bias.shape;
}

template <int Rank>
std::vector<TensorMeta> InferConv(std::span<const TensorMeta> in, const Attrs& attrs) {
  const ConvParams p = ConvParamsOf(attrs, Rank);
  CheckNumeric(in[0], "x");
  CheckDType(in[1], in[0], "weight", "x");
  const Shape y = ConvOutShape(in[0].shape, in[1].shape, p);
  if (in[2].dtype) CheckBias(in[2], in[0], in[1].shape);
  return {{in[0].dtype, y, in[0].device}};
}

// grad_y must be what conv2d / conv3d (rank) of (x, weight) gives.
void CheckGradY(const TensorMeta& dy, const TensorMeta& x, const TensorMeta& w, const Attrs& attrs, int rank) {
  CheckNumeric(x, "x");
  CheckDType(dy, x, "grad_y", "x");
  CheckDType(w, x, "weight", "x");
  const Shape y = ConvOutShape(x.shape, w.shape, ConvParamsOf(attrs, rank));
  bool ok = dy.shape.ndim() == y.ndim();
  for (int64_t d = 0; ok && d < y.ndim(); ++d) {
    ok = !(dy.shape[d].is_known() && y[d].is_known() && dy.shape[d] != y[d]);
  }
  OF_CHECK(ok) << "grad_y " << dy.shape << " does not match the " << OpName(rank) << " output " << y << " of x "
               << x.shape << " and weight " << w.shape;
}

// Inputs (grad_y, weight, x); output grad_x.
template <int Rank>
std::vector<TensorMeta> InferConvBackwardData(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckGradY(in[0], in[2], in[1], attrs, Rank);
  return {in[2]};
}

// Inputs (x, grad_y, weight); outputs grad_weight and grad_bias: (out_channels), or (0) when attribute
// bias_grad is false (a convolution without a bias: oneDNN's weight gradient is up to twice as slow with
// the bias's).
template <int Rank>
std::vector<TensorMeta> InferConvBackwardWeight(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckGradY(in[1], in[0], in[2], attrs, Rank);
  const Dim bias = attrs.Bool("bias_grad") ? in[2].shape[0] : Dim(0);
  return {in[2], {in[2].dtype, Shape{bias}, in[2].device}};
}

// ---- kernels --------------------------------------------------------------------------------------

// The loops (float64, and float32 calls that oneDNN does not run: see DnnlRuns).
template <typename T>
void ConvRef(KernelContext& ctx);
template <typename T>
void ConvBackwardDataRef(KernelContext& ctx);
template <typename T>
void ConvBackwardWeightRef(KernelContext& ctx);

// The Winograd kernels' view of `g` if they run it (Note [Winograd convolutions]): 3x3, stride 1 or 2
// (Note [Winograd convolutions of stride 2]), one group, channels last.
std::optional<cpu::Winograd3x3> WinogradOf(const ConvGeom& g) {
  if (g.is3d || !g.channels_last || g.g != 1 || g.kh != 3 || g.kw != 3 || g.win.stride[0] != g.win.stride[1] ||
      g.win.dilation[0] != 1 || g.win.dilation[1] != 1) {
    return std::nullopt;
  }
  const cpu::Winograd3x3 s{g.n, g.c, g.h, g.w, g.o, g.oh, g.ow, g.win.padding[0], g.win.padding[1], g.win.stride[0]};
  if (!cpu::WinogradRuns(s)) return std::nullopt;
  return s;
}

struct ConvBwdDataEntry {
  dnnl::convolution_backward_data::primitive_desc pd;
  dnnl::convolution_backward_data prim;
  Operand diff_dst, weights, diff_src;
};
struct ConvBwdWeightsEntry {
  dnnl::convolution_backward_weights::primitive_desc pd;
  dnnl::convolution_backward_weights prim;
  Operand src, diff_dst, diff_weights;
};

// Note [1x1 convolutions as products]
// On channels-last data a 1x1 convolution without padding is a matrix product over the P = n * oh * ow
// output positions, which oneDNN's sgemm runs on the plain (o, c) weights, without the reorders to and
// from the blocked layouts of oneDNN's convolution primitives (on the pool's threads, as every product
// below: Note [Products on the pool's threads] in dnnl_common.cpp).
//
// The weight gradient: dW (o x c) = dY^T (o x P) X (P x c), X being x at the strided positions (gathered
// into a buffer when the stride is not 1). oneDNN's sgemm runs it faster than its 1x1 weight-gradient
// primitive plus the reorder of that primitive's blocked weights back to OIHW: on ResNet-50's 36 such
// convolutions (bench/profile_step.py, 2 threads, lazy) 47 ms against 120 ms per step at batch 4 and 387
// ms against 418 ms at batch 16 on an AVX-512 Xeon. oneDNN's sgemm runs it faster with min(o, c) rows, so
// where o > c the product is dW^T = X^T dY, transposed into dW: on AVX2 (an AVX2 EPYC) always, on
// AVX-512 over more than kTransposedGradientPositions positions only (over few, dW directly was faster
// than the transposed product and its transpose: ResNet-50's 512 -> 2048 at batch 1 0.50 against 1.83 ms
// on an AVX-512 EPYC, its 1024 -> 2048 shortcut at 7x7 and batch 16 (784 positions) 14 against 11 ms per
// step on an AVX-512 Xeon). There, single-threaded on half of ResNet-50's batch 16: 256 x 64 over 25,088
// positions 7.1 against 9.0 ms, 1024 x 256 over 1568 5.7 against 7.1; in its lazy step at batch 16 the 1x1
// weight gradients 264 -> 245 ms (the 256 x 64 ones 38 -> 26), at batch 4 62 -> 61, at batch 1 the same.
//
// The backward data of a stride-1 one: dX (P x c) = dY (P x o) W (o x c), in place of oneDNN's 1x1
// backward-data primitive and its weight reorder. Per call on ResNet-50's shapes (2 threads, AVX-512 EPYC)
// equal at large P and up to 1.8x faster at small P (the last stage's 7x7 images at batch 2: 1.03 against
// 1.84 ms); per training step (lazy) 3-4% less time at batch 1 (180 against 187 ms, the fastest of 15), the
// same at batch 4. Into 64 channels over many positions (ResNet-50's 256 -> 64 and 64 -> 64 at 56x56)
// sgemm's shares of dX's rows ran at 200-210 GFLOP/s (AVX-512 Xeon, 2 threads, lazy step at batch 16),
// and oneDNN's matmul on the same operands (it packs W once, its brgemm kernels pass over dY's rows) ran
// the four 256 -> 64 ones in 24.4 against 31.3 ms per step, the 64 -> 64 one in 1.6 against 1.9; at batch
// 4 (12,544 positions) 6.5 against 7.1 ms, at batch 1 (3136) 1.39 against 1.31 (slower), and into 128 or
// more channels the same or slower (the 1024 -> 256 ones 32.5 against 29.5 ms at batch 16).
//
// The forward of a stride-1 one without bias over fewer than 128 positions: Y^T (o x P) = W (o x c) X^T,
// transposed into Y. Only there: oneDNN's primitive plus its weight reorder took 2.04 against 0.96 ms for
// ResNet-50's 2048 -> 512 at 7x7 and batch 1 (P = 49), 2.59 against 1.75 at batch 2, but at P = 196 the
// product and its transpose were as often slower as faster (1024 -> 256 at 14x14, batch 1: 1.13 against
// 0.62 ms), as was X W^T without a transpose; ResNet-50's lazy step at batch 1 took 161-162 against 165-167
// ms (the fastest of 15, alternated). It is FewPositionsForward's case where the patches are x itself (Note
// [Convolutions over few positions as products]).
//
// The forward of one over at most kMatmulPositions positions (from 128 without a bias: the product above
// runs below): Y = X W^T (+ bias) on oneDNN's matmul primitive, which reads the plain weight as W^T (a
// transposed layout) and packs it block by block as its brgemm kernels go, where the convolution
// primitive takes it reordered to its blocked layout first, a pass over memory of its own (Note [1x1
// weights in blocks]). ResNet-50's training step at batch 4 (2 threads, AVX-512 EPYC, profiled,
// alternated): its 1x1 forwards at 7x7 (P = 196, the strided shortcut's gathered positions included) 16.1
// -> 13.7 ms, at 14x14 (P = 784) 29.6 -> 28.9 ms; at 3136 positions the matmul was slower (a cold 128 ->
// 512 call: 2.28 against 2.11 ms). Only where oneDNN runs AVX-512: on AVX2 its matmul is its sgemm (the X
// W^T above), no faster there. (The weight gradient and the backward data on the matmul too, over as many
// positions: within the noise at batch 4, the weight gradient 0.5 ms slower at batch 1.)

// Whether oneDNN runs AVX-512 kernels, its sgemm and matmul included (it follows the CPU, or
// ONEDNN_MAX_CPU_ISA).
bool OneDnnOnAvx512() {
  static const bool avx512 = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa()),
               avx512_core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
    return (isa & avx512_core) == avx512_core;
  }();
  return avx512;
}

// A 2-D 1x1 convolution of one group without padding (a product over the output positions, given
// channels-last data).
bool OneByOneProduct(const ConvGeom& g) {
  const Window2d& win = g.win;
  return !g.is3d && g.g == 1 && g.kh == 1 && g.kw == 1 && win.padding[0] == 0 && win.padding[1] == 0 &&
         win.padding_end[0] == 0 && win.padding_end[1] == 0;
}

// dst (cols x rows) = src (rows x cols)^T, in tiles of 64 rows x 32 columns of dst (both tiles' lines stay
// in L1).
void Transpose(const float* src, int64_t rows, int64_t cols, float* dst, ThreadPool& pool) {
  pool.ParallelFor(cols, 64, [&](int64_t begin, int64_t end) {
    for (int64_t j0 = begin; j0 < end; j0 += 64) {
      for (int64_t i0 = 0; i0 < rows; i0 += 32) {
        for (int64_t j = j0; j < std::min(j0 + 64, end); ++j) {
          for (int64_t i = i0; i < std::min(i0 + 32, rows); ++i) dst[j * rows + i] = src[i * cols + j];
        }
      }
    }
  });
}

// Note [Strided 1x1 convolutions]
// A 1x1 convolution of stride s > 1 without padding reads x only at the output positions (every s-th row
// and column): on channels-last data it is the stride-1 one of x gathered at those positions into a (P x
// c) buffer, and its backward data writes dx there and zeros elsewhere. oneDNN's primitives on the strided
// x ran ResNet-50's three downsampling shortcuts (batch 4, 2 threads, AVX-512 EPYC) at 155-180 GFLOP/s
// forward and about 190 backward, against 200-215 for its stride-1 1x1 ones; the gather and the scatter
// move (P x c) floats, a small part of a product over c and o channels. So all three passes run on the
// gathered positions, which are its patches (Patches): the forward on oneDNN's stride-1 primitive, the
// weight gradient as the product of Note [1x1 convolutions as products], the backward data as the one of
// Note [Convolutions over few positions as products] (whose rows go back to dx at their positions).

// A 2-D 1x1 convolution of one group without padding on channels-last data, of stride 1 (x and y are (P x
// c) and (P x o) matrices as they are) or not (Note [Strided 1x1 convolutions]).
bool OneByOneChannelsLast(const ConvGeom& g) { return OneByOneProduct(g) && g.channels_last; }
bool Strided(const ConvGeom& g) { return g.win.stride[0] != 1 || g.win.stride[1] != 1; }

// The stride-1 1x1 convolution over those positions: x is (n, oh, ow, c).
ConvGeom OverOutputPositions(ConvGeom g) {
  g.h = g.oh;
  g.w = g.ow;
  g.win.stride[0] = g.win.stride[1] = 1;
  return g;
}

// ... of stride 1 on channels-last data: x and y are (P x c) and (P x o) matrices as they are.
bool DenseOneByOne(const ConvGeom& g) { return OneByOneChannelsLast(g) && !Strided(g); }

// The backward data of a dense 1x1 convolution with at most kMatmulDataChannels input channels over at
// least kMatmulDataPositions positions runs on oneDNN's matmul where it runs AVX-512 (Note [1x1
// convolutions as products]).
constexpr int64_t kMatmulDataChannels = 64;
constexpr int64_t kMatmulDataPositions = 12544;

bool OneByOneBackwardData(KernelContext& ctx, const ConvGeom& g, const float* dy, const float* w, float* dx) {
  if (!DenseOneByOne(g)) return false;
  const int64_t p = g.n * g.oh * g.ow;
  if (g.c <= kMatmulDataChannels && p >= kMatmulDataPositions && OneDnnOnAvx512()) {
    // dY row-major, W (o x c) row-major; no batch dims.
    const GemmPlan plan{.m = p, .k = g.o, .n = g.c, .a_rs = g.o, .a_cs = 1, .b_rs = g.c, .b_cs = 1};
    RunGemmF32(ctx, plan, dy, w, nullptr, dx);
    return true;
  }
  PoolSgemm(ctx.pool, 'N', 'N', p, g.c, g.o, dy, g.o, w, g.c, 0.0f, dx, g.c);
  return true;
}

// Note [Convolutions over few positions as products]
// Over few output positions the weight outweighs the data, and oneDNN's primitives reorder all of it to
// their blocked layout on every call, forward and both backwards (ResNet-18's 512-channel 3x3 convolutions
// on 2x2 images at batch 8: 9 MiB of weights for 151 MFLOP; 1.9 ms forward, 2.0 ms weight gradient and 1.2
// ms backward data per call on 2 threads of an AVX-512 EPYC). On channels-last data such a convolution is
// a product with the weight as it is, (o x c kh kw), over the patches of x: X_col (P x c kh kw), one row
// per output position, ordered as a weight row (channel, then tap), zero where the window reads padding:
//   forward       Y^T (o x P) = W X_col^T, transposed into Y
//   backward data dX_col (P x c kh kw) = dY W, whose rows are added back into dx at their windows
//   weight grad   dW = dY^T X_col
// run by oneDNN's sgemm: 1.0, 0.95 and 0.93 ms for the calls above; ResNet-18's lazy step at batch 8 took
// 42.5 against 49-50 ms, ResNet-50's at batch 1 (its last stage's 7x7 images) 148-150 against 157-160 ms.
// Below kFewPositions positions only: at 196 (ResNet-50's last stage at batch 4) the forward product took
// 6.5 against 4.4 ms per call (the weight gradient runs so at any count of positions where the weight is
// large: Note [Weight gradients as products over patches]). (A dense 1x1 convolution's patches are x
// itself, its forward is the one of Note [1x1 convolutions as products]; its backwards have their own
// products there, tried first.)
constexpr int64_t kFewPositions = 128;

// Whether `g` runs as products over its patches: 2-D, one group, channels last, fewer than kFewPositions
// output positions.
bool FewPositions(const ConvGeom& g) {
  return !g.is3d && g.g == 1 && g.channels_last && g.n * g.oh * g.ow < kFewPositions;
}

// Calls fn(p, t, iy, ix) for output position p and tap t = ki * kw + kj of each window whose input
// position (iy, ix) is inside x (the others read padding); positions [begin, end).
template <typename Fn>
void ForEachTapInside(const ConvGeom& g, int64_t begin, int64_t end, Fn&& fn) {
  const Window2d& win = g.win;
  for (int64_t p = begin; p < end; ++p) {
    const int64_t oy = p / g.ow % g.oh, ox = p % g.ow;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const int64_t iy = oy * win.stride[0] - win.padding[0] + ki * win.dilation[0];
      if (iy < 0 || iy >= g.h) continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t ix = ox * win.stride[1] - win.padding[1] + kj * win.dilation[1];
        if (ix >= 0 && ix < g.w) fn(p, ki * g.kw + kj, iy, ix);
      }
    }
  }
}

// Rows [first, last) of X_col (P x c kh kw) of x (NHWC): x itself for a 1x1 convolution of stride 1 (and
// no padding), else in a buffer of `slot` (for a strided one, x's rows at the output positions).
const float* Patches(const ConvGeom& g, const float* x, int64_t first, int64_t last, BufferSlot slot,
                     ThreadPool& pool) {
  const int64_t taps = g.kh * g.kw, row = g.c * taps;
  if (OneByOneProduct(g) && !Strided(g)) return x + first * row;
  auto* cols = static_cast<float*>(Buffer(slot, static_cast<size_t>((last - first) * row) * sizeof(float)));
  if (OneByOneProduct(g)) {
    pool.ParallelFor(last - first, GrainFor(g.c), [&](int64_t begin, int64_t end) {
      for (int64_t r = first + begin; r < first + end; ++r) {
        const int64_t n = r / (g.oh * g.ow), oy = r / g.ow % g.oh, ox = r % g.ow;
        std::copy_n(x + ((n * g.h + oy * g.win.stride[0]) * g.w + ox * g.win.stride[1]) * g.c, g.c,
                    cols + (r - first) * g.c);
      }
    });
    return cols;
  }
  pool.ParallelFor(last - first, GrainFor(row), [&](int64_t begin, int64_t end) {
    std::fill(cols + begin * row, cols + end * row, 0.0f);
    ForEachTapInside(g, first + begin, first + end, [&](int64_t r, int64_t t, int64_t iy, int64_t ix) {
      const float* in = x + ((r / (g.oh * g.ow) * g.h + iy) * g.w + ix) * g.c;
      float* out = cols + (r - first) * row + t;
      for (int64_t ci = 0; ci < g.c; ++ci) out[ci * taps] = in[ci];
    });
  });
  return cols;
}

// The 1x1 weight gradients that SumRowProducts sums (Note [Weight gradients as sums of row products] in
// core/ops/cpu/row_products.h): weights of at most kRowProductWeights elements (ResNet-50's at 56x56: 64 x
// 64 to 128 x 256), over at least kRowProductPositions positions (one 56x56 image). The 512 x 128 and 128 x
// 512 ones at 28x28 took as long as on sgemm in the step (23.4 against 23.5 ms, 18.5 against 17.9 at batch
// 16), though 6% faster stand-alone.
constexpr int64_t kRowProductWeights = int64_t{1} << 15;
constexpr int64_t kRowProductPositions = 3136;

// Positions from which an AVX-512 1x1 weight gradient with o > c is formed transposed (Note [1x1
// convolutions as products]).
constexpr int64_t kTransposedGradientPositions = 1024;

bool OneByOneWeightGradient(KernelContext& ctx, const ConvGeom& g, bool bias) {
  if (bias || !OneByOneProduct(g) || !ChannelsLastCall(ctx.in(0), ctx.in(1))) return false;
  const int64_t p = g.n * g.oh * g.ow;
  const float* x = Patches(g, ctx.in(0).data<float>(), 0, p, kSlotSrc, ctx.pool);
  const float* dy = ctx.in(1).data<float>();
  float* dw = ctx.out(0).data<float>();
  if (g.o * g.c <= kRowProductWeights && p >= kRowProductPositions && cpu::RowProductsRun(g.c)) {
    PoolDepthShares(
        ctx.pool, g.o, g.c, p, 0.0f, dw, g.c, [&](int64_t p0, int64_t p1, float beta, float* out, int64_t ldo) {
          cpu::SumRowProducts(p1 - p0, g.o, g.c, dy + p0 * g.o, g.o, x + p0 * g.c, g.c, beta != 0.0f, out, ldo);
        });
    return true;
  }
  if (g.o <= g.c || (OneDnnOnAvx512() && p <= kTransposedGradientPositions)) {
    PoolSgemm(ctx.pool, 'T', 'N', g.o, g.c, p, dy, g.o, x, g.c, 0.0f, dw, g.c);
    return true;
  }
  auto* dw_t = static_cast<float*>(Buffer(kSlotDst, static_cast<size_t>(g.o * g.c) * sizeof(float)));
  PoolSgemm(ctx.pool, 'T', 'N', g.c, g.o, p, x, g.c, dy, g.o, 0.0f, dw_t, g.o);
  Transpose(dw_t, g.c, g.o, dw, ctx.pool);
  return true;
}

constexpr int64_t kMatmulPositions = 1024;

// The forward of a dense 1x1 convolution over at most kMatmulPositions positions on oneDNN's matmul, where
// it runs AVX-512 (Note [1x1 convolutions as products]): Y (P x o) = X (P x c) W^T (+ bias), a linear over
// the positions, the weight (o, c) read transposed. x is (P x c).
bool OneByOneMatmulForward(KernelContext& ctx, const ConvGeom& g, const void* x, bool bias) {
  const int64_t p = g.n * g.oh * g.ow;
  if (!DenseOneByOne(g) || p > kMatmulPositions || !OneDnnOnAvx512()) return false;
  // X row-major, W^T with W's rows as its columns; no batch dims.
  const GemmPlan plan{.m = p, .k = g.c, .n = g.o, .a_rs = g.c, .a_cs = 1, .b_rs = 1, .b_cs = g.c};
  const TensorPtr w = ContiguousInput(ctx, 1), b = bias ? ContiguousInput(ctx, 2) : TensorPtr();
  RunGemmF32(ctx, plan, x, w->raw_data(), bias ? b->raw_data() : nullptr, ctx.out(0).raw_data());
  return true;
}

bool FewPositionsForward(KernelContext& ctx, const ConvGeom& g, bool bias) {
  if (bias || !FewPositions(g)) return false;
  const int64_t p = g.n * g.oh * g.ow, row = g.c * g.kh * g.kw;
  const float* cols = Patches(g, ctx.in(0).data<float>(), 0, p, kSlotSrc, ctx.pool);
  auto* y_t = static_cast<float*>(Buffer(kSlotDst, static_cast<size_t>(g.o * p) * sizeof(float)));
  PoolSgemm(ctx.pool, 'N', 'T', g.o, p, row, ContiguousInput(ctx, 1)->data<float>(), row, cols, row, 0.0f, y_t, p);
  Transpose(y_t, g.o, p, ctx.out(0).data<float>(), ctx.pool);
  return true;
}

// The backward data over patches, over few positions and for strided 1x1 convolutions (Note [Strided 1x1
// convolutions]).
bool PatchesBackwardData(KernelContext& ctx, const ConvGeom& g, const float* dy, const float* w, float* dx) {
  if (!FewPositions(g) && !(OneByOneChannelsLast(g) && Strided(g))) return false;
  const int64_t p = g.n * g.oh * g.ow, taps = g.kh * g.kw, row = g.c * taps;
  auto* cols = static_cast<float*>(Buffer(kSlotSrc, static_cast<size_t>(p * row) * sizeof(float)));
  PoolSgemm(ctx.pool, 'N', 'N', p, row, g.o, dy, g.o, w, row, 0.0f, cols, row);
  if (OneByOneChannelsLast(g)) {  // strided: each row of cols is one position of dx, the others are zeros
    ctx.pool.ParallelFor(g.n * g.h, GrainFor(g.w * g.c), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t n = r / g.h, iy = r % g.h, oy = iy / g.win.stride[0];
        float* out = dx + r * g.w * g.c;
        if (iy % g.win.stride[0] != 0 || oy >= g.oh) {
          std::fill_n(out, g.w * g.c, 0.0f);
          continue;
        }
        for (int64_t ix = 0; ix < g.w; ++ix, out += g.c) {
          const int64_t ox = ix / g.win.stride[1];
          if (ix % g.win.stride[1] == 0 && ox < g.ow) {
            std::copy_n(cols + ((n * g.oh + oy) * g.ow + ox) * g.c, g.c, out);
          } else {
            std::fill_n(out, g.c, 0.0f);
          }
        }
      }
    });
    return true;
  }
  // Each image's patches add into its own part of dx only.
  const int64_t plane = g.oh * g.ow;
  ctx.pool.ParallelFor(g.n, 1, [&](int64_t begin, int64_t end) {
    std::fill(dx + begin * g.h * g.w * g.c, dx + end * g.h * g.w * g.c, 0.0f);
    ForEachTapInside(g, begin * plane, end * plane, [&](int64_t r, int64_t t, int64_t iy, int64_t ix) {
      float* out = dx + ((r / plane * g.h + iy) * g.w + ix) * g.c;
      const float* in = cols + r * row + t;
      for (int64_t ci = 0; ci < g.c; ++ci) out[ci] += in[ci * taps];
    });
  });
  return true;
}

// Note [Weight gradients as products over patches]
// oneDNN 2.6's weight-gradient primitive (jit:avx512_core) ran the 3x3 convolutions that the Winograd
// kernels do not (512 channels; stride 2 too, before Note [Winograd convolutions of stride 2]) at 120-165
// GFLOP/s on 2 threads of an AVX-512 EPYC, and its result is reordered back from its blocked layout. dW =
// dY^T X_col over all positions ran ResNet-50's at batch 4 in 4.4-5.0 against 4.6-7.9 ms per call (sgemm,
// 200+ GFLOP/s; at 56x56 images 5.0 against 6.1 ms), at batch 16 the same or faster but for the
// 512-channel stride-1 one (18 against 17 ms). The positions are taken in chunks whose patches fill about
// kPatchBytes (their sums added up by sgemm's beta), which stay in the last-level cache between the copy
// and the product and bound the buffer. (The 512-channel 3x3 ones of stride 1 and 2 now run on the
// Winograd kernels over 64 tiles and more: Note [Winograd passes by position] in
// core/ops/cpu/winograd.cpp.) Not for weights of fewer than kManyWeights elements over many
// positions: few outputs, each a long sum, which sgemm splits poorly between threads; ResNet's stem (64 x
// 3 x 7 x 7, 12544 positions at batch 4) took 12.5 against 5.3 ms, the main job's 64 x 32 x 3 x 3 of
// stride 2 (3136 positions) 1.0-1.2 against 0.73 ms. (ResNet-18's 128 x 64 x 3 x 3 of stride 2: the same.)
constexpr int64_t kManyWeights = int64_t{1} << 16;
constexpr size_t kPatchBytes = size_t{8} << 20;

// Note [Weight gradients over image channels]
// A convolution over an image's few channels (ResNet's stem: 64 x 3 x 7 x 7 of stride 2, 200,704 positions
// at batch 16) has a small weight and long sums, which oneDNN's jit kernel ran at about 200 GFLOP/s (16.8
// ms per call on 2 threads of an AVX-512 Xeon) and sgemm over patches slower still (Note [Weight gradients
// as products over patches]). On channels-last x with dilation 1, a window's taps of one input row are kw
// * c consecutive floats, and those of the next output position along the row start stride * c floats
// further: for each row ki of the window, dW^T's rows (ki, kj, ci) (kw c x o) summed over one row of
// output positions are SumRowProducts of x's input row read with rows stride * c floats apart
// (overlapping, no patches formed) and dY's rows, in tiles of 7 x 64 (RowTile, 21 = 3 x 7 of the stem's).
// The positions whose windows reach into the padding have their rows formed with zeros. The threads share
// the positions (PoolDepthShares); dW^T is transposed into dW. 12.6-13 against 16.8 ms for the stem.
constexpr int64_t kImageChannels = 4;

// Whether `g`'s weight gradient runs so: 2-D, one group, channels last, at most kImageChannels input
// channels, dilation 1, a weight of fewer than kManyWeights elements, o a multiple of 64, at least
// kRowProductPositions positions.
bool ImageChannelsWeightGradient(const ConvGeom& g) {
  return !g.is3d && g.g == 1 && g.channels_last && g.c <= kImageChannels && g.win.dilation[0] == 1 &&
         g.win.dilation[1] == 1 && g.o * g.c * g.kh * g.kw < kManyWeights &&
         g.n * g.oh * g.ow >= kRowProductPositions && cpu::RowProductsRun(g.o, cpu::RowTile::k7x64);
}

// dW^T (kh kw c x o, rows in (ki, kj, ci) order) += the sums over output positions [first, last), a row of
// positions at a time.
void SumImageWindows(const ConvGeom& g, const float* x, const float* dy, int64_t first, int64_t last, float* dw_t) {
  const int64_t run = g.kw * g.c, sh = g.win.stride[0], sw = g.win.stride[1], ph = g.win.padding[0],
                pw = g.win.padding[1];
  // The positions [inner0, inner1) of a row whose windows lie inside x along the width.
  const int64_t inner0 = std::min(g.ow, CeilDiv(pw, sw)),
                inner1 = std::max(inner0, std::min(g.ow, g.w - g.kw + pw >= 0 ? (g.w - g.kw + pw) / sw + 1 : 0));
  const int64_t most_edges = g.ow - (inner1 - inner0);
  auto* edge = static_cast<float*>(Buffer(kSlotExtra, static_cast<size_t>(most_edges * (run + g.o)) * sizeof(float)));
  float* edge_dy = edge + most_edges * run;
  constexpr auto kTile = cpu::RowTile::k7x64;
  for (int64_t p = first; p < last;) {
    const int64_t r = p / g.ow, n = r / g.oh, oy = r % g.oh, ox0 = p % g.ow, ox1 = std::min(g.ow, ox0 + last - p);
    const int64_t in0 = std::clamp(inner0, ox0, ox1), in1 = std::clamp(inner1, in0, ox1);
    const float* dyr = dy + r * g.ow * g.o;
    // dY's rows of the edge positions, in the order of their formed rows.
    int64_t edges = 0;
    for (int64_t ox = ox0; ox < ox1; ++ox) {
      if (ox < in0 || ox >= in1) std::copy_n(dyr + ox * g.o, g.o, edge_dy + edges++ * g.o);
    }
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const int64_t iy = oy * sh - ph + ki;
      if (iy < 0 || iy >= g.h) continue;  // the window row reads padding
      const float* in = x + (n * g.h + iy) * g.w * g.c;
      float* out = dw_t + ki * run * g.o;
      if (in1 > in0) {
        cpu::SumRowProducts(in1 - in0, run, g.o, in + (in0 * sw - pw) * g.c, sw * g.c, dyr + in0 * g.o, g.o, true, out,
                            g.o, kTile);
      }
      if (edges == 0) continue;
      for (int64_t ox = ox0, e = 0; ox < ox1; ++ox) {
        if (ox >= in0 && ox < in1) continue;
        float* row = edge + e++ * run;
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const int64_t ix = ox * sw - pw + kj;
          if (ix >= 0 && ix < g.w) {
            std::copy_n(in + ix * g.c, g.c, row + kj * g.c);
          } else {
            std::fill_n(row + kj * g.c, g.c, 0.0f);
          }
        }
      }
      cpu::SumRowProducts(edges, run, g.o, edge, run, edge_dy, g.o, true, out, g.o, kTile);
    }
    p += ox1 - ox0;
  }
}

bool ImageChannelsWeightGradientRun(KernelContext& ctx, const ConvGeom& g, const float* x, const float* dy) {
  if (!ImageChannelsWeightGradient(g)) return false;
  const int64_t row = g.c * g.kh * g.kw, taps = g.kh * g.kw;
  auto* dw_t = static_cast<float*>(Buffer(kSlotDst, static_cast<size_t>(row * g.o) * sizeof(float)));
  PoolDepthShares(ctx.pool, row, g.o, g.n * g.oh * g.ow, 0.0f, dw_t, g.o,
                  [&](int64_t p0, int64_t p1, float, float* out, int64_t ldo) {
                    for (int64_t i = 0; i < row; ++i) std::fill_n(out + i * ldo, g.o, 0.0f);  // beta is 0
                    SumImageWindows(g, x, dy, p0, p1, out);
                  });
  float* dw = ctx.out(0).data<float>();
  ctx.pool.ParallelFor(g.o, GrainFor(row), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      for (int64_t t = 0; t < taps; ++t) {
        for (int64_t ci = 0; ci < g.c; ++ci) dw[(o * g.c + ci) * taps + t] = dw_t[(t * g.c + ci) * g.o + o];
      }
    }
  });
  return true;
}

bool PatchesWeightGradient(KernelContext& ctx, const ConvGeom& g, bool bias, const float* x, const float* dy) {
  const int64_t p = g.n * g.oh * g.ow, row = g.c * g.kh * g.kw;
  if (bias || g.is3d || g.g != 1 || !g.channels_last || (p >= kFewPositions && g.o * row < kManyWeights)) return false;
  const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>(kPatchBytes / sizeof(float)) / row);
  float* dw = ctx.out(0).data<float>();
  int64_t first = 0;
  do {  // once at least: without positions the product (beta 0) zeros dw
    const int64_t last = std::min(p, first + chunk);
    const float* cols = Patches(g, x, first, last, kSlotSrc, ctx.pool);
    PoolSgemm(ctx.pool, 'T', 'N', g.o, row, last - first, dy + first * g.o, g.o, cols, row, first == 0 ? 0.0f : 1.0f,
              dw, row);
    first = last;
  } while (first < p);
  return true;
}

void ConvF32(KernelContext& ctx) {
  ConvGeom g = ConvGeomOf(ctx.in(0), ctx.in(1), ctx.attrs);
  if (!DnnlRuns(g)) return RunContiguous(ctx, ConvRef<float>);
  g.channels_last = ChannelsLastCall(ctx.in(0), ctx.out(0));
  const bool bias = ctx.inputs[2] != nullptr;
  if (const auto s = WinogradOf(g)) {
    return cpu::WinogradForward(*s, ctx.in(0).data<float>(), ContiguousInput(ctx, 1)->data<float>(),
                                bias ? ContiguousInput(ctx, 2)->data<float>() : nullptr, ctx.out(0).data<float>(),
                                ctx.pool);
  }
  if (FewPositionsForward(ctx, g, bias)) return;
  void* x = ctx.in(0).raw_data();
  if (OneByOneChannelsLast(g) && Strided(g)) {  // Note [Strided 1x1 convolutions]; oneDNN takes void* inputs
    x = const_cast<float*>(Patches(g, ctx.in(0).data<float>(), 0, g.n * g.oh * g.ow, kSlotExtra, ctx.pool));
    g = OverOutputPositions(g);
  }
  if (OneByOneMatmulForward(ctx, g, x, bias)) return;
  // Training-mode primitives when autograd may follow; inference ones otherwise.
  const bool training = GradMode::is_enabled();
  const Exec exec = PrepareExec(ctx.pool, ConvWork(g));
  static auto* cache = new PrimitiveCache<ConvFwdEntry>();
  auto e = cache->Get(ConvKey(exec, bias ? 1 : 0, g, training), [&] {
    const auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    const dnnl::convolution_forward::primitive_desc pd(ConvFwdDesc(g, prop, bias), DefaultAttr(), Engine());
    return MakeConvFwdEntry(g, pd);
  });
  RunConvFwd(*e, g, exec.stream, ctx.pool, x, ctx.in(1).raw_data(), bias ? ctx.in(2).raw_data() : nullptr,
             ctx.out(0).raw_data());
}

void ConvBackwardDataF32(KernelContext& ctx) {
  ConvGeom g = ConvGeomOf(ctx.in(2), ctx.in(1), ctx.attrs);
  if (!DnnlRuns(g)) return RunContiguous(ctx, ConvBackwardDataRef<float>);
  g.channels_last = ChannelsLastCall(ctx.in(0), ctx.out(0));
  const TensorPtr dy = g.channels_last ? ctx.inputs[0] : ContiguousInput(ctx, 0), w = ContiguousInput(ctx, 1);
  void* dx = ctx.out(0).raw_data();
  if (const auto s = WinogradOf(g)) {
    return cpu::WinogradBackwardData(*s, dy->data<float>(), w->data<float>(), static_cast<float*>(dx), ctx.pool);
  }
  if (OneByOneBackwardData(ctx, g, dy->data<float>(), w->data<float>(), static_cast<float*>(dx)) ||
      PatchesBackwardData(ctx, g, dy->data<float>(), w->data<float>(), static_cast<float*>(dx))) {
    return;
  }
  const Exec exec = PrepareExec(ctx.pool, ConvWork(g));
  static auto* cache = new PrimitiveCache<ConvBwdDataEntry>();
  auto e = cache->Get(ConvKey(exec, 2, g, false), [&] {
    const dnnl::convolution_forward::primitive_desc hint(ConvFwdDesc(g, dnnl::prop_kind::forward_training, false),
                                                         DefaultAttr(), Engine());
    const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, PrimData(g, SrcDims(g)),
                                                     AnyDesc(WeightDims(g)), PrimData(g, DstDims(g)), Strides(g),
                                                     Dilates(g), PaddingL(g), PaddingR(g));
    dnnl::convolution_backward_data::primitive_desc pd(desc, DefaultAttr(), Engine(), hint);
    return ConvBwdDataEntry{pd, dnnl::convolution_backward_data(pd),
                            Operand(UserData(g, DstDims(g)), pd.diff_dst_desc(), true),
                            Operand(PlainDesc(WeightDims(g)), pd.weights_desc(), true),
                            Operand(UserData(g, SrcDims(g)), pd.diff_src_desc(), false)};
  });
  dnnl::stream& stream = exec.stream;
  const memory diff_src = e->diff_src.Prepare(dx, kSlotDst, stream);
  e->prim.execute(stream, {{DNNL_ARG_DIFF_DST, e->diff_dst.Prepare(dy->raw_data(), kSlotDiff, stream)},
                           {DNNL_ARG_WEIGHTS, e->weights.Prepare(w->raw_data(), kSlotWeights, stream)},
                           {DNNL_ARG_DIFF_SRC, diff_src},
                           {DNNL_ARG_SCRATCHPAD, Scratchpad(e->pd)}});
  e->diff_src.Finish(diff_src, dx, stream);
  stream.wait();
}

void ConvBackwardWeightF32(KernelContext& ctx) {
  ConvGeom g = ConvGeomOf(ctx.in(0), ctx.in(2), ctx.attrs);
  // An empty x still has a bias gradient (the sum of grad_y): the loops give it.
  if (!DnnlRuns(g)) return RunContiguous(ctx, ConvBackwardWeightRef<float>);
  const bool bias = ctx.attrs.Bool("bias_grad");
  if (OneByOneWeightGradient(ctx, g, bias)) return;
  // Note [oneDNN 1x1 weight gradients on NHWC]: oneDNN books the reduce-to-unit-stride workspace of a
  // 1x1 convolution's weight gradient per input channel but fills it per channel block (8 with AVX2, 16
  // with AVX-512): on NHWC data with fewer input channels than a block it writes past its scratchpad
  // (seen with Debian's 2.6.3 on AVX2 machines; uxlfoundation/oneDNN#6035). Such calls take NCHW copies.
  g.channels_last = ChannelsLastCall(ctx.in(0), ctx.in(1)) && !(g.kd == 1 && g.kh == 1 && g.kw == 1 && g.cg() < 16);
  const TensorPtr x = g.channels_last ? ctx.inputs[0] : ContiguousInput(ctx, 0);
  const TensorPtr dy = g.channels_last ? ctx.inputs[1] : ContiguousInput(ctx, 1);
  void* dw = ctx.out(0).raw_data();
  if (const auto s = !bias ? WinogradOf(g) : std::nullopt) {
    return cpu::WinogradBackwardWeight(*s, x->data<float>(), dy->data<float>(), static_cast<float*>(dw), ctx.pool);
  }
  if ((!bias && ImageChannelsWeightGradientRun(ctx, g, x->data<float>(), dy->data<float>())) ||
      PatchesWeightGradient(ctx, g, bias, x->data<float>(), dy->data<float>())) {
    return;
  }
  const Exec exec = PrepareExec(ctx.pool, ConvWork(g));
  static auto* cache = new PrimitiveCache<ConvBwdWeightsEntry>();
  auto e = cache->Get(ConvKey(exec, 3, g, bias), [&] {
    const dnnl::convolution_forward::primitive_desc hint(ConvFwdDesc(g, dnnl::prop_kind::forward_training, bias),
                                                         DefaultAttr(), Engine());
    const memory::desc src = PrimData(g, SrcDims(g)), w = AnyDesc(WeightDims(g)), dst = PrimData(g, DstDims(g));
    const auto desc =
        bias ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src, w, PlainDesc({g.o}),
                                                        dst, Strides(g), Dilates(g), PaddingL(g), PaddingR(g))
             : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src, w, dst, Strides(g),
                                                        Dilates(g), PaddingL(g), PaddingR(g));
    dnnl::convolution_backward_weights::primitive_desc pd(desc, DefaultAttr(), Engine(), hint);
    return ConvBwdWeightsEntry{pd, dnnl::convolution_backward_weights(pd),
                               Operand(UserData(g, SrcDims(g)), pd.src_desc(), true),
                               Operand(UserData(g, DstDims(g)), pd.diff_dst_desc(), true),
                               Operand(PlainDesc(WeightDims(g)), pd.diff_weights_desc(), false)};
  });
  dnnl::stream& stream = exec.stream;
  const memory diff_weights = e->diff_weights.Prepare(dw, kSlotWeights, stream);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, e->src.Prepare(x->raw_data(), kSlotSrc, stream)},
                                          {DNNL_ARG_DIFF_DST, e->diff_dst.Prepare(dy->raw_data(), kSlotDiff, stream)},
                                          {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                                          {DNNL_ARG_SCRATCHPAD, Scratchpad(e->pd)}};
  if (bias) args.emplace(DNNL_ARG_DIFF_BIAS, memory(PlainDesc({g.o}), Engine(), ctx.out(1).raw_data()));
  e->prim.execute(stream, args);
  e->diff_weights.Finish(diff_weights, dw, stream);
  stream.wait();
}

// The loops -------------------------------------------------------------------------------------------
// Input positions are formed as integer indices, valid by ValidRange (never as out-of-range pointers).

template <typename T>
void ConvRef(KernelContext& ctx) {
  const ConvGeom g = ConvGeomOf(ctx.in(0), ctx.in(1), ctx.attrs);
  const T* x = ctx.in(0).data<T>();
  const T* w = ctx.in(1).data<T>();
  const T* bias = ctx.inputs[2] ? ctx.in(2).data<T>() : nullptr;
  T* y = ctx.out(0).data<T>();
  const int64_t cg = g.cg(), og = g.og(), plane = g.oh * g.ow, in_plane = g.h * g.w, taps = g.kd * g.kh * g.kw;
  const auto [sh, sw] = std::pair(g.win.stride[0], g.win.stride[1]);
  const auto [ph, pw] = std::pair(g.win.padding[0], g.win.padding[1]);
  const auto [dh, dw] = std::pair(g.win.dilation[0], g.win.dilation[1]);
  ctx.pool.ParallelFor(g.n * g.o, GrainFor(g.od * plane * cg * taps), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / g.o, o = i % g.o, c0 = o / og * cg;
      T* yp = y + i * g.od * plane;
      std::fill(yp, yp + g.od * plane, bias ? bias[o] : T(0));
      for (int64_t ci = 0; ci < cg; ++ci) {
        const T* xp = x + (n * g.c + c0 + ci) * g.d * in_plane;
        const T* wp = w + (o * cg + ci) * taps;
        for (int64_t kz = 0; kz < g.kd; ++kz) {
          const auto [z0, z1] = ValidRange(g.od, g.d, g.sd, g.pd, kz * g.dd);
          for (int64_t ki = 0; ki < g.kh; ++ki) {
            const auto [y0, y1] = ValidRange(g.oh, g.h, sh, ph, ki * dh);
            for (int64_t kj = 0; kj < g.kw; ++kj) {
              const auto [x0, x1] = ValidRange(g.ow, g.w, sw, pw, kj * dw);
              const T wv = wp[(kz * g.kh + ki) * g.kw + kj];
              for (int64_t oz = z0; oz < z1; ++oz) {
                const T* xz = xp + (oz * g.sd - g.pd + kz * g.dd) * in_plane;
                T* yz = yp + oz * plane;
                for (int64_t oy = y0; oy < y1; ++oy) {
                  const int64_t row = (oy * sh - ph + ki * dh) * g.w + (kj * dw - pw);
                  T* yrow = yz + oy * g.ow;
                  for (int64_t ox = x0; ox < x1; ++ox) yrow[ox] += wv * xz[row + ox * sw];
                }
              }
            }
          }
        }
      }
    }
  });
}

template <typename T>
void ConvBackwardDataRef(KernelContext& ctx) {
  const TensorPtr dyt = ContiguousInput(ctx, 0), wt = ContiguousInput(ctx, 1);
  const ConvGeom g = ConvGeomOf(ctx.in(2), *wt, ctx.attrs);
  const T* dy = dyt->data<T>();
  const T* w = wt->data<T>();
  T* dx = ctx.out(0).data<T>();
  const int64_t cg = g.cg(), og = g.og(), plane = g.oh * g.ow, in_plane = g.h * g.w, taps = g.kd * g.kh * g.kw;
  const auto [sh, sw] = std::pair(g.win.stride[0], g.win.stride[1]);
  const auto [ph, pw] = std::pair(g.win.padding[0], g.win.padding[1]);
  const auto [dh, dw] = std::pair(g.win.dilation[0], g.win.dilation[1]);
  ctx.pool.ParallelFor(g.n * g.c, GrainFor(g.od * plane * og * taps), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / g.c, c = i % g.c, ci = c % cg, o0 = c / cg * og;
      T* dxp = dx + i * g.d * in_plane;
      std::fill(dxp, dxp + g.d * in_plane, T(0));
      for (int64_t o = o0; o < o0 + og; ++o) {
        const T* dyp = dy + (n * g.o + o) * g.od * plane;
        const T* wp = w + (o * cg + ci) * taps;
        for (int64_t kz = 0; kz < g.kd; ++kz) {
          const auto [z0, z1] = ValidRange(g.od, g.d, g.sd, g.pd, kz * g.dd);
          for (int64_t ki = 0; ki < g.kh; ++ki) {
            const auto [y0, y1] = ValidRange(g.oh, g.h, sh, ph, ki * dh);
            for (int64_t kj = 0; kj < g.kw; ++kj) {
              const auto [x0, x1] = ValidRange(g.ow, g.w, sw, pw, kj * dw);
              const T wv = wp[(kz * g.kh + ki) * g.kw + kj];
              for (int64_t oz = z0; oz < z1; ++oz) {
                T* dxz = dxp + (oz * g.sd - g.pd + kz * g.dd) * in_plane;
                const T* dyz = dyp + oz * plane;
                for (int64_t oy = y0; oy < y1; ++oy) {
                  const int64_t row = (oy * sh - ph + ki * dh) * g.w + (kj * dw - pw);
                  const T* dyrow = dyz + oy * g.ow;
                  for (int64_t ox = x0; ox < x1; ++ox) dxz[row + ox * sw] += wv * dyrow[ox];
                }
              }
            }
          }
        }
      }
    }
  });
}

template <typename T>
void ConvBackwardWeightRef(KernelContext& ctx) {
  const TensorPtr xt = ContiguousInput(ctx, 0), dyt = ContiguousInput(ctx, 1);
  const ConvGeom g = ConvGeomOf(*xt, ctx.in(2), ctx.attrs);
  const T* x = xt->data<T>();
  const T* dy = dyt->data<T>();
  T* dw = ctx.out(0).data<T>();
  T* db = ctx.out(1).data<T>();
  const int64_t cg = g.cg(), og = g.og(), plane = g.oh * g.ow, in_plane = g.h * g.w, taps = g.kd * g.kh * g.kw;
  const int64_t volume = g.od * plane, in_volume = g.d * in_plane;
  const auto [sh, sw] = std::pair(g.win.stride[0], g.win.stride[1]);
  const auto [ph, pw] = std::pair(g.win.padding[0], g.win.padding[1]);
  const auto [dh, dwl] = std::pair(g.win.dilation[0], g.win.dilation[1]);
  ctx.pool.ParallelFor(g.o * cg, GrainFor(g.n * volume * taps), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t o = i / cg, ci = i % cg, c = o / og * cg + ci;
      for (int64_t kz = 0; kz < g.kd; ++kz) {
        const auto [z0, z1] = ValidRange(g.od, g.d, g.sd, g.pd, kz * g.dd);
        for (int64_t ki = 0; ki < g.kh; ++ki) {
          const auto [y0, y1] = ValidRange(g.oh, g.h, sh, ph, ki * dh);
          for (int64_t kj = 0; kj < g.kw; ++kj) {
            const auto [x0, x1] = ValidRange(g.ow, g.w, sw, pw, kj * dwl);
            T s = 0;
            for (int64_t n = 0; n < g.n; ++n) {
              const T* xp = x + (n * g.c + c) * in_volume;
              const T* dyp = dy + (n * g.o + o) * volume;
              for (int64_t oz = z0; oz < z1; ++oz) {
                const T* xz = xp + (oz * g.sd - g.pd + kz * g.dd) * in_plane;
                const T* dyz = dyp + oz * plane;
                for (int64_t oy = y0; oy < y1; ++oy) {
                  const int64_t row = (oy * sh - ph + ki * dh) * g.w + (kj * dwl - pw);
                  const T* dyrow = dyz + oy * g.ow;
                  for (int64_t ox = x0; ox < x1; ++ox) s += dyrow[ox] * xz[row + ox * sw];
                }
              }
            }
            dw[i * taps + (kz * g.kh + ki) * g.kw + kj] = s;
          }
        }
      }
    }
  });
  if (!ctx.attrs.Bool("bias_grad")) return;
  ctx.pool.ParallelFor(g.o, GrainFor(g.n * volume), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      T s = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        const T* dyp = dy + (n * g.o + o) * volume;
        for (int64_t k = 0; k < volume; ++k) s += dyp[k];
      }
      db[o] = s;
    }
  });
}

// ---- autograd -------------------------------------------------------------------------------------

template <int Rank>
std::vector<TensorPtr> ConvBackward(const BackwardContext& ctx) {
  static const OpDef& bwd_data = OpRegistry::Global().Get(Rank == 3 ? "conv3d_backward_data" : "conv2d_backward_data");
  static const OpDef& bwd_weight =
      OpRegistry::Global().Get(Rank == 3 ? "conv3d_backward_weight" : "conv2d_backward_weight");
  const TensorPtr& dy = ctx.grad_outputs[0];
  std::vector<TensorPtr> grads(3);
  if (!dy) return grads;
  const TensorPtr& x = ctx.inputs[0];
  const TensorPtr& w = ctx.inputs[1];
  if (ctx.needs_input_grad[0]) grads[0] = Apply1(bwd_data, {dy, w, x}, ctx.attrs);
  if (ctx.needs_input_grad[1] || ctx.needs_input_grad[2]) {
    Attrs attrs = ctx.attrs;
    attrs.Set("bias_grad", ctx.needs_input_grad[2]);
    std::vector<TensorPtr> r = Apply(bwd_weight, {x, dy, w}, attrs);
    if (ctx.needs_input_grad[1]) grads[1] = r[0];
    if (ctx.needs_input_grad[2]) grads[2] = r[1];
  }
  return grads;
}

// padding_end (bottom, right): empty (the default) is `padding`, symmetric.
std::vector<AttrSpec> ConvAttrs() {
  return {{"stride", std::vector<int64_t>{1, 1}},
          {"padding", std::vector<int64_t>{0, 0}},
          {"dilation", std::vector<int64_t>{1, 1}},
          {"groups", int64_t{1}},
          {"padding_end", std::vector<int64_t>{}}};
}

std::vector<AttrSpec> Conv3dAttrs() {
  return {{"stride", std::vector<int64_t>{1, 1, 1}},
          {"padding", std::vector<int64_t>{0, 0, 0}},
          {"dilation", std::vector<int64_t>{1, 1, 1}},
          {"groups", int64_t{1}}};
}

}  // namespace

namespace ops {
TensorPtr Conv2d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, const Conv2dOptions& options) {
  static const OpDef& op = OpRegistry::Global().Get("conv2d");
  return Apply1(op, {x, weight, bias},
                {{"stride", options.stride},
                 {"padding", options.padding},
                 {"dilation", options.dilation},
                 {"groups", options.groups}});
}
TensorPtr Conv2d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, const Conv2dOptions& options,
                 const std::vector<int64_t>& padding_end) {
  static const OpDef& op = OpRegistry::Global().Get("conv2d");
  return Apply1(op, {x, weight, bias},
                {{"stride", options.stride},
                 {"padding", options.padding},
                 {"dilation", options.dilation},
                 {"groups", options.groups},
                 {"padding_end", padding_end}});
}
TensorPtr Conv3d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, const Conv3dOptions& options) {
  static const OpDef& op = OpRegistry::Global().Get("conv3d");
  return Apply1(op, {x, weight, bias},
                {{"stride", options.stride},
                 {"padding", options.padding},
                 {"dilation", options.dilation},
                 {"groups", options.groups}});
}
}  // namespace ops

void RegisterConvOps(OpRegistry& registry) {
  // One set of kernels for both ranks (they read it from x); inference and autograd per rank.
  for (const int rank : {2, 3}) {
    const bool r3 = rank == 3;
    const std::string name = OpName(rank);
    const std::vector<AttrSpec> attrs = r3 ? Conv3dAttrs() : ConvAttrs();
    registry.Register(OpDef{
        .name = name,
        .inputs = {"x", "weight", "bias"},
        .optional_inputs = {"bias"},
        .outputs = {"y"},
        .attrs = attrs,
        .infer = r3 ? InferConv<3> : InferConv<2>,
        .backward = r3 ? ConvBackward<3> : ConvBackward<2>,
        .kernels =
            cpu::WithHalfInFloat32({{DeviceType::kCPU, {DataType::kFloat32}, Guarded<ConvF32>, /*channels_last=*/true},
                                    {DeviceType::kCPU, {DataType::kFloat64}, ConvRef<double>}}),
        .layout = ChannelsLastLayout,  // Note [Channels-last activations] (4-D only: conv3d stays contiguous)
        .layout_inputs = {0},
        .layout_outputs = {0},
        .fold_batch_norm = r3 ? "" : "fused_conv_bn_act",
        .autocast = AutocastPolicy::kLowPrecision,
    });
    registry.Register(OpDef{
        .name = name + "_backward_data",
        .inputs = {"grad_y", "weight", "x"},
        .outputs = {"grad_x"},
        .attrs = attrs,
        .infer = r3 ? InferConvBackwardData<3> : InferConvBackwardData<2>,
        .kernels = cpu::WithHalfInFloat32(
            {{DeviceType::kCPU, {DataType::kFloat32}, Guarded<ConvBackwardDataF32>, /*channels_last=*/true},
             {DeviceType::kCPU, {DataType::kFloat64}, ConvBackwardDataRef<double>}}),
        .strided_inputs = true,  // x gives only its shape
        .layout = ChannelsLastLayout,
        .layout_inputs = {0},
        .layout_outputs = {0},
    });
    std::vector<AttrSpec> weight_attrs = attrs;
    weight_attrs.push_back({"bias_grad", true});  // false: grad_bias is empty (0) and not computed
    registry.Register(OpDef{
        .name = name + "_backward_weight",
        .inputs = {"x", "grad_y", "weight"},
        .outputs = {"grad_weight", "grad_bias"},
        .attrs = weight_attrs,
        .infer = r3 ? InferConvBackwardWeight<3> : InferConvBackwardWeight<2>,
        .kernels = cpu::WithHalfInFloat32(
            {{DeviceType::kCPU, {DataType::kFloat32}, Guarded<ConvBackwardWeightF32>, /*channels_last=*/true},
             {DeviceType::kCPU, {DataType::kFloat64}, ConvBackwardWeightRef<double>}}),
        .strided_inputs = true,  // weight gives only its shape
        .layout = ChannelsLastLayout,
        .layout_inputs = {0, 1},  // x and grad_y; the weight gradients are contiguous
    });
  }
}

}  // namespace oneflow
