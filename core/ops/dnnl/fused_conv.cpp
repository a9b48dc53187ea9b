// fused_conv_bn_act (see core/ops/fused.h): relu?(batch_norm_inference(conv2d(x, weight, bias))) as one
// convolution, the inference-graph fusion. The batch norm is folded into the convolution on every call
// (its tensors are variables that may change between runs), in double and rounded once:
//   scale = gamma / sqrt(running_var + eps),  w' = w * scale[o],  b' = (b - running_mean) * scale + beta.
// float32: one oneDNN convolution with bias b' and, with relu, an eltwise relu post-op, built and run by
// conv2d's forward code (conv_common.h); float64 (and float32 calls oneDNN does not run, see DnnlRuns):
// conv2d's own kernel on (w', b'), then relu.
#include <cmath>

#include "core/op/dispatch.h"
#include "core/op/layout.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/dnnl/conv_common.h"
#include "core/ops/fused.h"
#include "core/tensor/factory.h"

namespace oneflow {
namespace {

using namespace dnnl_util;

enum InputIndex : size_t { kX, kWeight, kBias, kBnWeight, kBnBias, kRunningMean, kRunningVar, kNumInputs };
constexpr const char* kInputNames[kNumInputs] = {"x",       "weight",       "bias",       "bn_weight",
                                                 "bn_bias", "running_mean", "running_var"};

const OpDef& Conv2dOp() {
  static const OpDef& op = OpRegistry::Global().Get("conv2d");
  return op;
}

std::vector<TensorMeta> InferFusedConvBnAct(std::span<const TensorMeta> in, const Attrs& attrs) {
  // conv2d's checks and output (it reads only its own attributes).
  const TensorMeta y = Conv2dOp().infer(in.subspan(0, 3), attrs)[0];
  const Dim c = y.shape[1];
  for (size_t i = kBnWeight; i < kNumInputs; ++i) {
    if (!in[i].dtype) continue;  // bn_weight, bn_bias are optional (dispatch checked the others)
    OF_CHECK(in[i].dtype == y.dtype) << kInputNames[i] << " is " << in[i].dtype << " but x is " << y.dtype
                                     << "; they must have one dtype";
    const Shape& s = in[i].shape;
    OF_CHECK(s.ndim() == 1 && !(s[0].is_known() && c.is_known() && s[0] != c))
        << kInputNames[i] << " must be 1-D with out_channels = " << c << " elements (the convolution's output is "
        << y.shape << "), got " << s;
  }
  CheckedEps(attrs);
  return {y};
}

// ---- folding --------------------------------------------------------------------------------------

// Per output channel: the weight scale and the folded bias b'.
struct Folded {
  std::vector<double> scale, bias;
};

template <typename T>
Folded Fold(const KernelContext& ctx, int64_t channels) {
  auto data = [&](size_t i) { return ctx.inputs[i] ? ctx.in(i).data<T>() : nullptr; };
  const T *b = data(kBias), *gamma = data(kBnWeight), *beta = data(kBnBias);
  const T *mean = data(kRunningMean), *var = data(kRunningVar);
  const double eps = ctx.attrs.Float("eps");
  Folded f{std::vector<double>(static_cast<size_t>(channels)), std::vector<double>(static_cast<size_t>(channels))};
  for (size_t o = 0; o < static_cast<size_t>(channels); ++o) {
    const double s = (gamma ? static_cast<double>(gamma[o]) : 1.0) / std::sqrt(static_cast<double>(var[o]) + eps);
    f.scale[o] = s;
    f.bias[o] = ((b ? static_cast<double>(b[o]) : 0.0) - static_cast<double>(mean[o])) * s +
                (beta ? static_cast<double>(beta[o]) : 0.0);
  }
  return f;
}

// w'[o, ...] = w[o, ...] * scale[o] and b' into `w_out` / `b_out`.
template <typename T>
void FoldInto(KernelContext& ctx, const Folded& f, T* w_out, T* b_out) {
  const Tensor& w = ctx.in(kWeight);
  const int64_t channels = static_cast<int64_t>(f.scale.size());
  const int64_t per_channel = channels == 0 ? 0 : w.numel() / channels;
  const T* src = w.data<T>();
  ctx.pool.ParallelFor(channels, GrainFor(per_channel), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const double s = f.scale[static_cast<size_t>(o)];
      for (int64_t k = o * per_channel; k < (o + 1) * per_channel; ++k) {
        w_out[k] = static_cast<T>(static_cast<double>(src[k]) * s);
      }
    }
  });
  for (size_t o = 0; o < f.bias.size(); ++o) b_out[o] = static_cast<T>(f.bias[o]);
}

template <typename T>
void FusedConvBnActLoops(KernelContext& ctx);

// ---- float32: oneDNN --------------------------------------------------------------------------------

void FusedConvBnActF32(KernelContext& ctx) {
  ConvGeom g = ConvGeomOf(ctx.in(kX), ctx.in(kWeight), ctx.attrs);
  if (!DnnlRuns(g)) return FusedConvBnActLoops<float>(ctx);  // conv2d's kernel handles channels last
  g.channels_last = ChannelsLastCall(ctx.in(kX), ctx.out(0));
  const bool relu = ctx.attrs.Bool("relu");
  const Folded f = Fold<float>(ctx, g.o);
  // w' then b' in the calling thread's kSlotExtra buffer (conv2d's operands use the other slots).
  const int64_t w_numel = ctx.in(kWeight).numel();
  auto* folded = static_cast<float*>(Buffer(kSlotExtra, static_cast<size_t>(w_numel + g.o) * sizeof(float)));
  FoldInto<float>(ctx, f, folded, folded + w_numel);

  const Exec exec = PrepareExec(ctx.pool, ConvWork(g));
  static auto* cache = new PrimitiveCache<ConvFwdEntry>();  // not conv2d's, so kind 0 throughout
  auto e = cache->Get(ConvKey(exec, 0, g, relu), [&] {
    dnnl::primitive_attr attr = DefaultAttr();
    if (relu) {
      dnnl::post_ops post;
      post.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(post);
    }
    const dnnl::convolution_forward::primitive_desc pd(ConvFwdDesc(g, dnnl::prop_kind::forward_inference, true), attr,
                                                       Engine());
    return MakeConvFwdEntry(g, pd);
  });
  RunConvFwd(*e, g, exec.stream, ctx.pool, ctx.in(kX).raw_data(), folded, folded + w_numel, ctx.out(0).raw_data());
}

// ---- float64 (and float32 calls oneDNN does not run): conv2d's kernel on the folded weights -----------

template <typename T>
void FusedConvBnActLoops(KernelContext& ctx) {
  const Tensor& w = ctx.in(kWeight);
  const int64_t channels = w.shape()[0].value();
  const Folded f = Fold<T>(ctx, channels);
  const TensorPtr w2 = Empty(w.dtype(), w.shape(), w.device());
  const TensorPtr b2 = Empty(w.dtype(), Shape{channels}, w.device());
  FoldInto<T>(ctx, f, w2->data<T>(), b2->data<T>());
  const KernelDef* conv = Conv2dOp().FindKernel(DeviceType::kCPU, w.dtype());
  OF_CHECK_INTERNAL(conv != nullptr) << "conv2d has no " << w.dtype() << " CPU kernel";
  const std::vector<TensorPtr> inputs = {ctx.inputs[kX], w2, b2};
  KernelContext sub{inputs, ctx.outputs, ctx.attrs, ctx.pool, ctx.generator};
  conv->fn(sub);  // float32: DnnlRuns is false here too, so conv2d runs its loops
  if (!ctx.attrs.Bool("relu")) return;
  T* y = ctx.out(0).data<T>();
  ctx.pool.ParallelFor(ctx.out(0).numel(), 32768, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = y[i] < T(0) ? T(0) : y[i];  // as relu (NaN stays NaN)
  });
}

}  // namespace

void RegisterFusedConvOps(OpRegistry& registry) {
  // conv2d's attributes (registered before the fused ops), then the batch norm's eps and the activation.
  std::vector<AttrSpec> attrs = registry.Get("conv2d").attrs;
  attrs.push_back({"eps", 1e-5});
  attrs.push_back({"relu", false});
  registry.Register(OpDef{
      .name = "fused_conv_bn_act",
      .inputs = {kInputNames, kInputNames + kNumInputs},
      .optional_inputs = {"bias", "bn_weight", "bn_bias"},
      .outputs = {"y"},
      .attrs = std::move(attrs),
      .infer = InferFusedConvBnAct,
      .kernels = cpu::WithHalfInFloat32(
          {{DeviceType::kCPU, {DataType::kFloat32}, Guarded<FusedConvBnActF32>, /*channels_last=*/true},
           {DeviceType::kCPU, {DataType::kFloat64}, FusedConvBnActLoops<double>}}),
      .layout = ChannelsLastLayout,  // as conv2d's
      .layout_inputs = {0},          // x
      .layout_outputs = {0},
  });
}

namespace ops {
TensorPtr FusedConvBnAct(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, const TensorPtr& bn_weight,
                         const TensorPtr& bn_bias, const TensorPtr& running_mean, const TensorPtr& running_var,
                         const Conv2dOptions& options, double eps, bool relu) {
  static const OpDef& op = OpRegistry::Global().Get("fused_conv_bn_act");
  return Apply1(op, {x, weight, bias, bn_weight, bn_bias, running_mean, running_var},
                {{"stride", options.stride},
                 {"padding", options.padding},
                 {"dilation", options.dilation},
                 {"groups", options.groups},
                 {"eps", eps},
                 {"relu", relu}});
}
}  // namespace ops

}  // namespace oneflow
