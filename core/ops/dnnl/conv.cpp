// conv2d and its backward ops (conv2d_backward_data, conv2d_backward_weight, which also gives the bias
// gradient). float32: oneDNN convolution in the layouts it picks (format any), reordered from and to
// our plain NCHW tensors; float64: direct loops, which float32 also runs where oneDNN does not (empty
// operands, sizes beyond its int32 descriptors: see DnnlRuns).
//
// padding pads (top, left), padding_end (bottom, right; empty: as padding): oneDNN's padding_l and
// padding_r; the loops need only the begin padding (the output size bounds the rest).
//
// The backward ops take the forward input x (or weight) only for its shape: with strides > 1 the input
// size does not follow from the output's. They read only its metadata, so they take strided inputs.
#include <algorithm>
#include <string>

#include "core/autograd/autograd.h"
#include "core/op/dispatch.h"
#include "core/ops/dnnl/conv_common.h"
#include "core/ops/ops.h"
#include "core/ops/window.h"

namespace oneflow {
namespace {

using namespace dnnl_util;

memory::dims Strides(const ConvGeom& g) { return {g.win.stride[0], g.win.stride[1]}; }
memory::dims Dilates(const ConvGeom& g) { return {g.win.dilation[0] - 1, g.win.dilation[1] - 1}; }
memory::dims PaddingL(const ConvGeom& g) { return {g.win.padding[0], g.win.padding[1]}; }
memory::dims PaddingR(const ConvGeom& g) { return {g.win.padding_end[0], g.win.padding_end[1]}; }

}  // namespace

// ---- shared with fused_conv.cpp (see conv_common.h) ------------------------------------------------

namespace dnnl_util {

ConvParams ConvParamsOf(const Attrs& attrs) {
  ConvParams p;
  const std::vector<int64_t> stride = Pair(attrs, "stride", 1), padding = Pair(attrs, "padding", 0),
                             padding_end = PaddingEnd(attrs, padding), dilation = Pair(attrs, "dilation", 1);
  for (int a = 0; a < 2; ++a) {
    p.win.stride[a] = stride[a];
    p.win.padding[a] = padding[a];
    p.win.padding_end[a] = padding_end[a];
    p.win.dilation[a] = dilation[a];
  }
  p.groups = attrs.Int("groups");
  OF_CHECK(p.groups >= 1) << "groups must be >= 1, got " << p.groups;
  return p;
}

ConvGeom ConvGeomOf(const Tensor& x, const Tensor& w, const Attrs& attrs) {
  const ConvParams p = ConvParamsOf(attrs);
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  ConvGeom g{xs[0].value(), xs[1].value(), xs[2].value(), xs[3].value(), ws[0].value(), ws[2].value(),
             ws[3].value(), 0, 0, p.groups, p.win};
  g.oh = WindowOut(g.h, g.kh, g.win, 0);
  g.ow = WindowOut(g.w, g.kw, g.win, 1);
  return g;
}

memory::dims SrcDims(const ConvGeom& g) { return {g.n, g.c, g.h, g.w}; }
memory::dims DstDims(const ConvGeom& g) { return {g.n, g.o, g.oh, g.ow}; }
memory::dims WeightDims(const ConvGeom& g) {
  if (g.g == 1) return {g.o, g.c, g.kh, g.kw};
  return {g.g, g.og(), g.cg(), g.kh, g.kw};
}

int64_t ConvWork(const ConvGeom& g) { return g.n * g.o * g.oh * g.ow * g.cg() * g.kh * g.kw / 8; }

bool DnnlRuns(const ConvGeom& g) {
  if (std::min({g.n, g.c, g.h, g.w, g.o, g.oh, g.ow}) == 0) return false;
  return FitsDnnl({g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.oh, g.ow, g.g, g.win.stride[0], g.win.stride[1],
                   g.win.dilation[0], g.win.dilation[1], PaddedInput(g.h, g.win, 0), PaddedInput(g.w, g.win, 1),
                   DilatedKernel(g.kh, g.win, 0), DilatedKernel(g.kw, g.win, 1)});
}

Key ConvKey(const Exec& exec, int64_t kind, const ConvGeom& g, bool flag) {
  return {exec.threads, kind, g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.win.stride[0], g.win.stride[1],
          g.win.padding[0], g.win.padding[1], g.win.padding_end[0], g.win.padding_end[1], g.win.dilation[0],
          g.win.dilation[1], g.g, flag};
}

dnnl::convolution_forward::desc ConvFwdDesc(const ConvGeom& g, dnnl::prop_kind prop, bool bias) {
  const memory::desc src = AnyDesc(SrcDims(g)), w = AnyDesc(WeightDims(g)), dst = AnyDesc(DstDims(g));
  if (bias) {
    return dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct, src, w, PlainDesc({g.o}), dst,
                                           Strides(g), Dilates(g), PaddingL(g), PaddingR(g));
  }
  return dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct, src, w, dst, Strides(g),
                                         Dilates(g), PaddingL(g), PaddingR(g));
}

ConvFwdEntry MakeConvFwdEntry(const ConvGeom& g, const dnnl::convolution_forward::primitive_desc& pd) {
  return ConvFwdEntry{pd, dnnl::convolution_forward(pd), Operand(PlainDesc(SrcDims(g)), pd.src_desc(), true),
                      Operand(PlainDesc(WeightDims(g)), pd.weights_desc(), true),
                      Operand(PlainDesc(DstDims(g)), pd.dst_desc(), false)};
}

void RunConvFwd(const ConvFwdEntry& e, const ConvGeom& g, dnnl::stream& stream, void* x, void* w, void* bias,
                void* y) {
  const memory dst = e.dst.Prepare(y, kSlotDst, stream);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, e.src.Prepare(x, kSlotSrc, stream)},
                                          {DNNL_ARG_WEIGHTS, e.weights.Prepare(w, kSlotWeights, stream)},
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

// The output shape of conv2d(x, weight), checking both. Zero input channels are allowed (the result is
// the bias, as PyTorch's); an empty kernel is not.
Shape ConvOutShape(const Shape& x, const Shape& w, const ConvParams& p) {
  OF_CHECK(x.ndim() == 4) << "x must be 4-D (N, C, H, W), got " << x;
  OF_CHECK(w.ndim() == 4) << "weight must be 4-D (out_channels, in_channels / groups, kH, kW), got " << w;
  OF_CHECK(!(w[2] == 0 || w[3] == 0)) << "weight " << w << " has an empty kernel (kH, kW) = (" << w[2] << ", " << w[3]
                                      << "); kernel sizes must be >= 1";
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

std::vector<TensorMeta> InferConv2d(std::span<const TensorMeta> in, const Attrs& attrs) {
  const ConvParams p = ConvParamsOf(attrs);
  CheckNumeric(in[0], "x");
  CheckDType(in[1], in[0], "weight", "x");
  const Shape y = ConvOutShape(in[0].shape, in[1].shape, p);
  if (in[2].dtype) CheckBias(in[2], in[0], in[1].shape);
  return {{in[0].dtype, y, in[0].device}};
}

// grad_y must be what conv2d(x, weight) gives.
void CheckGradY(const TensorMeta& dy, const TensorMeta& x, const TensorMeta& w, const Attrs& attrs) {
  CheckNumeric(x, "x");
  CheckDType(dy, x, "grad_y", "x");
  CheckDType(w, x, "weight", "x");
  const Shape y = ConvOutShape(x.shape, w.shape, ConvParamsOf(attrs));
  bool ok = dy.shape.ndim() == 4;
  for (int64_t d = 0; ok && d < 4; ++d) ok = !(dy.shape[d].is_known() && y[d].is_known() && dy.shape[d] != y[d]);
  OF_CHECK(ok) << "grad_y " << dy.shape << " does not match the conv2d output " << y << " of x " << x.shape
               << " and weight " << w.shape;
}

// Inputs (grad_y, weight, x); output grad_x.
std::vector<TensorMeta> InferConv2dBackwardData(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckGradY(in[0], in[2], in[1], attrs);
  return {in[2]};
}

// Inputs (x, grad_y, weight); outputs grad_weight, grad_bias.
std::vector<TensorMeta> InferConv2dBackwardWeight(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckGradY(in[1], in[0], in[2], attrs);
  return {in[2], {in[2].dtype, Shape{in[2].shape[0]}, in[2].device}};
}

// ---- kernels --------------------------------------------------------------------------------------

// The loops (float64, and float32 calls that oneDNN does not run: see DnnlRuns).
template <typename T>
void Conv2dRef(KernelContext& ctx);
template <typename T>
void Conv2dBackwardDataRef(KernelContext& ctx);
template <typename T>
void Conv2dBackwardWeightRef(KernelContext& ctx);

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

void Conv2dF32(KernelContext& ctx) {
  const ConvGeom g = ConvGeomOf(ctx.in(0), ctx.in(1), ctx.attrs);
  if (!DnnlRuns(g)) return Conv2dRef<float>(ctx);
  const bool bias = ctx.inputs[2] != nullptr;
  // Training-mode primitives when autograd may follow; inference ones otherwise.
  const bool training = GradMode::is_enabled();
  const Exec exec = PrepareExec(ctx.pool, ConvWork(g));
  static auto* cache = new PrimitiveCache<ConvFwdEntry>();
  auto e = cache->Get(ConvKey(exec, bias ? 1 : 0, g, training), [&] {
    const auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    const dnnl::convolution_forward::primitive_desc pd(ConvFwdDesc(g, prop, bias), DefaultAttr(), Engine());
    return MakeConvFwdEntry(g, pd);
  });
  RunConvFwd(*e, g, exec.stream, ctx.in(0).raw_data(), ctx.in(1).raw_data(), bias ? ctx.in(2).raw_data() : nullptr,
             ctx.out(0).raw_data());
}

void Conv2dBackwardDataF32(KernelContext& ctx) {
  const ConvGeom g = ConvGeomOf(ctx.in(2), ctx.in(1), ctx.attrs);
  if (!DnnlRuns(g)) return Conv2dBackwardDataRef<float>(ctx);
  const TensorPtr dy = ContiguousInput(ctx, 0), w = ContiguousInput(ctx, 1);
  void* dx = ctx.out(0).raw_data();
  const Exec exec = PrepareExec(ctx.pool, ConvWork(g));
  static auto* cache = new PrimitiveCache<ConvBwdDataEntry>();
  auto e = cache->Get(ConvKey(exec, 2, g, false), [&] {
    const dnnl::convolution_forward::primitive_desc hint(ConvFwdDesc(g, dnnl::prop_kind::forward_training, false),
                                                         DefaultAttr(), Engine());
    const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, AnyDesc(SrcDims(g)),
                                                     AnyDesc(WeightDims(g)), AnyDesc(DstDims(g)), Strides(g),
                                                     Dilates(g), PaddingL(g), PaddingR(g));
    dnnl::convolution_backward_data::primitive_desc pd(desc, DefaultAttr(), Engine(), hint);
    return ConvBwdDataEntry{pd, dnnl::convolution_backward_data(pd),
                            Operand(PlainDesc(DstDims(g)), pd.diff_dst_desc(), true),
                            Operand(PlainDesc(WeightDims(g)), pd.weights_desc(), true),
                            Operand(PlainDesc(SrcDims(g)), pd.diff_src_desc(), false)};
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

void Conv2dBackwardWeightF32(KernelContext& ctx) {
  const ConvGeom g = ConvGeomOf(ctx.in(0), ctx.in(2), ctx.attrs);
  // An empty x still has a bias gradient (the sum of grad_y): the loops give it.
  if (!DnnlRuns(g)) return Conv2dBackwardWeightRef<float>(ctx);
  const TensorPtr x = ContiguousInput(ctx, 0), dy = ContiguousInput(ctx, 1);
  void* dw = ctx.out(0).raw_data();
  void* db = ctx.out(1).raw_data();
  const Exec exec = PrepareExec(ctx.pool, ConvWork(g));
  static auto* cache = new PrimitiveCache<ConvBwdWeightsEntry>();
  auto e = cache->Get(ConvKey(exec, 3, g, true), [&] {
    const dnnl::convolution_forward::primitive_desc hint(ConvFwdDesc(g, dnnl::prop_kind::forward_training, true),
                                                         DefaultAttr(), Engine());
    const dnnl::convolution_backward_weights::desc desc(
        dnnl::algorithm::convolution_direct, AnyDesc(SrcDims(g)), AnyDesc(WeightDims(g)), PlainDesc({g.o}),
        AnyDesc(DstDims(g)), Strides(g), Dilates(g), PaddingL(g), PaddingR(g));
    dnnl::convolution_backward_weights::primitive_desc pd(desc, DefaultAttr(), Engine(), hint);
    return ConvBwdWeightsEntry{pd, dnnl::convolution_backward_weights(pd),
                               Operand(PlainDesc(SrcDims(g)), pd.src_desc(), true),
                               Operand(PlainDesc(DstDims(g)), pd.diff_dst_desc(), true),
                               Operand(PlainDesc(WeightDims(g)), pd.diff_weights_desc(), false)};
  });
  dnnl::stream& stream = exec.stream;
  const memory diff_weights = e->diff_weights.Prepare(dw, kSlotWeights, stream);
  e->prim.execute(stream, {{DNNL_ARG_SRC, e->src.Prepare(x->raw_data(), kSlotSrc, stream)},
                           {DNNL_ARG_DIFF_DST, e->diff_dst.Prepare(dy->raw_data(), kSlotDiff, stream)},
                           {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                           {DNNL_ARG_DIFF_BIAS, memory(PlainDesc({g.o}), Engine(), db)},
                           {DNNL_ARG_SCRATCHPAD, Scratchpad(e->pd)}});
  e->diff_weights.Finish(diff_weights, dw, stream);
  stream.wait();
}

// The loops -------------------------------------------------------------------------------------------
// Input positions are formed as integer indices, valid by ValidRange (never as out-of-range pointers).

template <typename T>
void Conv2dRef(KernelContext& ctx) {
  const ConvGeom g = ConvGeomOf(ctx.in(0), ctx.in(1), ctx.attrs);
  const T* x = ctx.in(0).data<T>();
  const T* w = ctx.in(1).data<T>();
  const T* bias = ctx.inputs[2] ? ctx.in(2).data<T>() : nullptr;
  T* y = ctx.out(0).data<T>();
  const int64_t cg = g.cg(), og = g.og(), plane = g.oh * g.ow;
  const auto [sh, sw] = std::pair(g.win.stride[0], g.win.stride[1]);
  const auto [ph, pw] = std::pair(g.win.padding[0], g.win.padding[1]);
  const auto [dh, dw] = std::pair(g.win.dilation[0], g.win.dilation[1]);
  ctx.pool.ParallelFor(g.n * g.o, GrainFor(plane * cg * g.kh * g.kw), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / g.o, o = i % g.o, c0 = o / og * cg;
      T* yp = y + i * plane;
      std::fill(yp, yp + plane, bias ? bias[o] : T(0));
      for (int64_t ci = 0; ci < cg; ++ci) {
        const T* xp = x + (n * g.c + c0 + ci) * g.h * g.w;
        const T* wp = w + (o * cg + ci) * g.kh * g.kw;
        for (int64_t ki = 0; ki < g.kh; ++ki) {
          const auto [y0, y1] = ValidRange(g.oh, g.h, sh, ph, ki * dh);
          for (int64_t kj = 0; kj < g.kw; ++kj) {
            const auto [x0, x1] = ValidRange(g.ow, g.w, sw, pw, kj * dw);
            const T wv = wp[ki * g.kw + kj];
            for (int64_t oy = y0; oy < y1; ++oy) {
              const int64_t row = (oy * sh - ph + ki * dh) * g.w + (kj * dw - pw);
              T* yrow = yp + oy * g.ow;
              for (int64_t ox = x0; ox < x1; ++ox) yrow[ox] += wv * xp[row + ox * sw];
            }
          }
        }
      }
    }
  });
}

template <typename T>
void Conv2dBackwardDataRef(KernelContext& ctx) {
  const TensorPtr dyt = ContiguousInput(ctx, 0), wt = ContiguousInput(ctx, 1);
  const ConvGeom g = ConvGeomOf(ctx.in(2), *wt, ctx.attrs);
  const T* dy = dyt->data<T>();
  const T* w = wt->data<T>();
  T* dx = ctx.out(0).data<T>();
  const int64_t cg = g.cg(), og = g.og();
  const auto [sh, sw] = std::pair(g.win.stride[0], g.win.stride[1]);
  const auto [ph, pw] = std::pair(g.win.padding[0], g.win.padding[1]);
  const auto [dh, dw] = std::pair(g.win.dilation[0], g.win.dilation[1]);
  ctx.pool.ParallelFor(g.n * g.c, GrainFor(g.oh * g.ow * og * g.kh * g.kw), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / g.c, c = i % g.c, ci = c % cg, o0 = c / cg * og;
      T* dxp = dx + i * g.h * g.w;
      std::fill(dxp, dxp + g.h * g.w, T(0));
      for (int64_t o = o0; o < o0 + og; ++o) {
        const T* dyp = dy + (n * g.o + o) * g.oh * g.ow;
        const T* wp = w + (o * cg + ci) * g.kh * g.kw;
        for (int64_t ki = 0; ki < g.kh; ++ki) {
          const auto [y0, y1] = ValidRange(g.oh, g.h, sh, ph, ki * dh);
          for (int64_t kj = 0; kj < g.kw; ++kj) {
            const auto [x0, x1] = ValidRange(g.ow, g.w, sw, pw, kj * dw);
            const T wv = wp[ki * g.kw + kj];
            for (int64_t oy = y0; oy < y1; ++oy) {
              const int64_t row = (oy * sh - ph + ki * dh) * g.w + (kj * dw - pw);
              const T* dyrow = dyp + oy * g.ow;
              for (int64_t ox = x0; ox < x1; ++ox) dxp[row + ox * sw] += wv * dyrow[ox];
            }
          }
        }
      }
    }
  });
}

template <typename T>
void Conv2dBackwardWeightRef(KernelContext& ctx) {
  const TensorPtr xt = ContiguousInput(ctx, 0), dyt = ContiguousInput(ctx, 1);
  const ConvGeom g = ConvGeomOf(*xt, ctx.in(2), ctx.attrs);
  const T* x = xt->data<T>();
  const T* dy = dyt->data<T>();
  T* dw = ctx.out(0).data<T>();
  T* db = ctx.out(1).data<T>();
  const int64_t cg = g.cg(), og = g.og(), plane = g.oh * g.ow;
  const auto [sh, sw] = std::pair(g.win.stride[0], g.win.stride[1]);
  const auto [ph, pw] = std::pair(g.win.padding[0], g.win.padding[1]);
  const auto [dh, dwl] = std::pair(g.win.dilation[0], g.win.dilation[1]);
  ctx.pool.ParallelFor(g.o * cg, GrainFor(g.n * plane * g.kh * g.kw), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t o = i / cg, ci = i % cg, c = o / og * cg + ci;
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        const auto [y0, y1] = ValidRange(g.oh, g.h, sh, ph, ki * dh);
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const auto [x0, x1] = ValidRange(g.ow, g.w, sw, pw, kj * dwl);
          T s = 0;
          for (int64_t n = 0; n < g.n; ++n) {
            const T* xp = x + (n * g.c + c) * g.h * g.w;
            const T* dyp = dy + (n * g.o + o) * plane;
            for (int64_t oy = y0; oy < y1; ++oy) {
              const int64_t row = (oy * sh - ph + ki * dh) * g.w + (kj * dwl - pw);
              const T* dyrow = dyp + oy * g.ow;
              for (int64_t ox = x0; ox < x1; ++ox) s += dyrow[ox] * xp[row + ox * sw];
            }
          }
          dw[i * g.kh * g.kw + ki * g.kw + kj] = s;
        }
      }
    }
  });
  ctx.pool.ParallelFor(g.o, GrainFor(g.n * plane), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      T s = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        const T* dyp = dy + (n * g.o + o) * plane;
        for (int64_t k = 0; k < plane; ++k) s += dyp[k];
      }
      db[o] = s;
    }
  });
}

// ---- autograd -------------------------------------------------------------------------------------

std::vector<TensorPtr> Conv2dBackward(const BackwardContext& ctx) {
  static const OpDef& bwd_data = OpRegistry::Global().Get("conv2d_backward_data");
  static const OpDef& bwd_weight = OpRegistry::Global().Get("conv2d_backward_weight");
  const TensorPtr& dy = ctx.grad_outputs[0];
  std::vector<TensorPtr> grads(3);
  if (!dy) return grads;
  const TensorPtr& x = ctx.inputs[0];
  const TensorPtr& w = ctx.inputs[1];
  if (ctx.needs_input_grad[0]) grads[0] = Apply1(bwd_data, {dy, w, x}, ctx.attrs);
  if (ctx.needs_input_grad[1] || ctx.needs_input_grad[2]) {
    std::vector<TensorPtr> r = Apply(bwd_weight, {x, dy, w}, ctx.attrs);
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
}  // namespace ops

void RegisterConvOps(OpRegistry& registry) {
  registry.Register(OpDef{
      .name = "conv2d",
      .inputs = {"x", "weight", "bias"},
      .optional_inputs = {"bias"},
      .outputs = {"y"},
      .attrs = ConvAttrs(),
      .infer = InferConv2d,
      .backward = Conv2dBackward,
      .kernels = {{DeviceType::kCPU, {DataType::kFloat32}, Guarded<Conv2dF32>},
                  {DeviceType::kCPU, {DataType::kFloat64}, Conv2dRef<double>}},
  });
  registry.Register(OpDef{
      .name = "conv2d_backward_data",
      .inputs = {"grad_y", "weight", "x"},
      .outputs = {"grad_x"},
      .attrs = ConvAttrs(),
      .infer = InferConv2dBackwardData,
      .kernels = {{DeviceType::kCPU, {DataType::kFloat32}, Guarded<Conv2dBackwardDataF32>},
                  {DeviceType::kCPU, {DataType::kFloat64}, Conv2dBackwardDataRef<double>}},
      .strided_inputs = true,  // x gives only its shape
  });
  registry.Register(OpDef{
      .name = "conv2d_backward_weight",
      .inputs = {"x", "grad_y", "weight"},
      .outputs = {"grad_weight", "grad_bias"},
      .attrs = ConvAttrs(),
      .infer = InferConv2dBackwardWeight,
      .kernels = {{DeviceType::kCPU, {DataType::kFloat32}, Guarded<Conv2dBackwardWeightF32>},
                  {DeviceType::kCPU, {DataType::kFloat64}, Conv2dBackwardWeightRef<double>}},
      .strided_inputs = true,  // weight gives only its shape
  });
}

}  // namespace oneflow
