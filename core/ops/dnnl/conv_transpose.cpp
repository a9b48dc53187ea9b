// conv_transpose2d: the adjoint of conv2d, composed from conv2d's ops and kernels (conv.cpp) rather
// than new convolution arithmetic. With conv2d's geometry taken at the transposed output y
// (N, C_out, H', W') and weight (C_in, C_out / groups, kH, kW) read as conv2d's (O, C / groups, kH, kW):
//   forward        conv2d_backward_data's kernel (oneDNN for float32, loops for float64) with grad_y = x,
//                  then the bias;
//   grad x         conv2d(grad_y, weight);
//   grad weight    conv2d_backward_weight(grad_y as its x, x as its grad_y);
//   grad bias      the sum of grad_y over (N, H', W').
// This holds when conv2d of a (H', W') input gives back x's (H, W), i.e. output_padding < stride: the
// op requires that. ops::ConvTranspose2d takes output_padding < dilation too (PyTorch's rule) by
// zero-padding x: e = output_padding / stride extra rows of zeros and output_padding - e * stride.
#include <algorithm>
#include <vector>

#include "core/op/dispatch.h"
#include "core/ops/convolution.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/dnnl/dnnl_common.h"
#include "core/ops/ops.h"
#include "core/ops/register.h"

namespace oneflow {
namespace {

using namespace dnnl_util;

struct TransposeParams {
  std::vector<int64_t> stride, padding, output_padding, dilation;
  int64_t groups;
};

TransposeParams ParamsOf(const Attrs& attrs) {
  TransposeParams p{Pair(attrs, "stride", 1), Pair(attrs, "padding", 0), Pair(attrs, "output_padding", 0),
                    Pair(attrs, "dilation", 1), attrs.Int("groups")};
  OF_CHECK(p.groups >= 1) << "groups must be >= 1, got " << p.groups;
  return p;
}

// The attributes of conv2d's op `def` (conv2d, conv2d_backward_data, conv2d_backward_weight) for the
// same geometry: ours where it has the name, its default for any other (conv2d_backward_weight's bias_grad).
Attrs ConvAttrsFor(const OpDef& def, const Attrs& attrs) {
  Attrs conv;
  for (const AttrSpec& spec : def.attrs) {
    const AttrValue* value = attrs.Find(spec.name);
    conv.Set(spec.name, value != nullptr ? *value : spec.default_value);
  }
  return conv;
}

// The transposed output length along `axis` (0: H, 1: W) for input length `in` and kernel `k`:
// (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1, unknown where in or k is.
// The uncropped extent (the same without the padding) must fit in int64: it is the padded input of the
// conv2d whose kernels run. This is the one place that reads the padding.
Dim TransposedOut(Dim in, Dim k, const TransposeParams& p, int axis) {
  if (!in.is_known() || !k.is_known()) return Dim::Unknown();
  const int64_t s = p.stride[axis], pad = p.padding[axis], op = p.output_padding[axis], d = p.dilation[axis];
  int64_t full, taps, pad2, out;
  if (__builtin_mul_overflow(in.value() - 1, s, &full) || __builtin_mul_overflow(d, k.value() - 1, &taps) ||
      __builtin_add_overflow(full, taps, &full) || __builtin_add_overflow(full, op + 1, &full)) {
    const char* names[2][2] = {{"H", "kH"}, {"W", "kW"}};
    OF_THROW(InvalidArgument) << "the output size (" << names[axis][0] << " - 1) * stride[" << axis << "] + dilation["
                              << axis << "] * (" << names[axis][1] << " - 1) + output_padding[" << axis
                              << "] + 1 overflows int64 for " << names[axis][0] << " = " << in << ", "
                              << names[axis][1] << " = " << k << ", stride " << s << ", dilation " << d;
  }
  // A doubled padding or a difference beyond int64 is a negative output.
  if (__builtin_mul_overflow(pad, 2, &pad2) || __builtin_sub_overflow(full, pad2, &out)) return Dim(int64_t{0});
  return Dim(std::max<int64_t>(out, 0));
}

std::vector<TensorMeta> InferConvTranspose2d(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TransposeParams p = ParamsOf(attrs);
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;
  CheckNumeric(in[0], "x");
  OF_CHECK(in[1].dtype == in[0].dtype) << "weight is " << in[1].dtype << " but x is " << in[0].dtype
                                       << "; they must have one dtype";
  OF_CHECK(x.ndim() == 4) << "x must be 4-D (N, C_in, H, W), got " << x;
  OF_CHECK(w.ndim() == 4) << "weight must be 4-D (in_channels, out_channels / groups, kH, kW), got " << w;
  OF_CHECK(!(w[2] == 0 || w[3] == 0)) << "weight " << w << " has an empty kernel (kH, kW) = (" << w[2] << ", " << w[3]
                                      << "); kernel sizes must be >= 1";
  // conv2d of the output gives x's gradient only for a non-empty (H, W).
  OF_CHECK(!(x[2] == 0 || x[3] == 0)) << "x " << x << " is empty in (H, W); H and W must be >= 1";
  for (int a = 0; a < 2; ++a) {
    OF_CHECK(p.output_padding[a] < p.stride[a])
        << "output_padding[" << a << "] is " << p.output_padding[a] << "; it must be smaller than stride[" << a
        << "] = " << p.stride[a];
  }
  const int64_t g = p.groups;
  OF_CHECK(!(x[1].is_known() && w[0].is_known() && x[1] != w[0]))
      << "x " << x << " has " << x[1] << " channels but weight " << w << " takes weight.shape[0] = " << w[0]
      << " input channels";
  const Dim cin = x[1].is_known() ? x[1] : w[0];
  OF_CHECK(!cin.is_known() || cin.value() % g == 0)
      << "groups=" << g << " does not divide the " << cin << " input channels of x " << x << " and weight " << w;
  Dim cout = w[1] * g;
  if (w[1].is_known()) {
    int64_t c;
    OF_CHECK(!__builtin_mul_overflow(w[1].value(), g, &c))
        << "weight " << w << " with groups=" << g << " gives weight.shape[1] * groups output channels, more than int64 holds";
    cout = c;
  }
  const Dim oh = TransposedOut(x[2], w[2], p, 0), ow = TransposedOut(x[3], w[3], p, 1);
  OF_CHECK(!(oh == 0 || ow == 0)) << "output size would be < 1 in (H, W): x " << x << " with kernel (" << w[2] << ", "
                                  << w[3] << "), stride (" << p.stride[0] << ", " << p.stride[1] << "), padding ("
                                  << p.padding[0] << ", " << p.padding[1] << "), output_padding ("
                                  << p.output_padding[0] << ", " << p.output_padding[1] << "), dilation ("
                                  << p.dilation[0] << ", " << p.dilation[1] << ")";
  if (const TensorMeta& b = in[2]; b.dtype) {
    OF_CHECK(b.dtype == in[0].dtype) << "bias is " << b.dtype << " but x is " << in[0].dtype
                                     << "; they must have one dtype";
    OF_CHECK(b.shape.ndim() == 1 && !(b.shape[0].is_known() && cout.is_known() && b.shape[0] != cout))
        << "bias must be 1-D with out_channels = " << cout << " elements, got " << b.shape;
  }
  return {{in[0].dtype, Shape{x[0], cout, oh, ow}, in[0].device}};
}

// conv2d_backward_data's kernel with grad_y = x, weight and the output y standing for conv2d's x (whose
// shape alone it reads), writing y; then y += bias per channel.
template <typename T>
void ConvTranspose2dKernel(KernelContext& ctx) {
  static const OpDef& data = OpRegistry::Global().Get("conv2d_backward_data");
  const KernelDef* kernel = data.FindKernel(DeviceType::kCPU, ctx.in(0).dtype());
  OF_CHECK_INTERNAL(kernel != nullptr) << "conv2d_backward_data has no kernel for " << ctx.in(0).dtype();
  const std::vector<TensorPtr> inputs = {ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]};
  const Attrs attrs = ConvAttrsFor(data, ctx.attrs);
  KernelContext inner{inputs, ctx.outputs, attrs, ctx.pool, ctx.generator};
  kernel->fn(inner);
  if (!ctx.inputs[2]) return;
  const Shape& ys = ctx.out(0).shape();
  const int64_t channels = ys[1].value(), plane = ys[2].value() * ys[3].value();
  const T* bias = ctx.in(2).data<T>();
  T* y = ctx.out(0).data<T>();
  ctx.pool.ParallelFor(ys[0].value() * channels, GrainFor(plane), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T b = bias[i % channels];
      T* yp = y + i * plane;
      for (int64_t k = 0; k < plane; ++k) yp[k] += b;
    }
  });
}

std::vector<TensorPtr> ConvTranspose2dBackward(const BackwardContext& ctx) {
  static const OpDef& conv = OpRegistry::Global().Get("conv2d");
  static const OpDef& bwd_weight = OpRegistry::Global().Get("conv2d_backward_weight");
  const TensorPtr& dy = ctx.grad_outputs[0];
  std::vector<TensorPtr> grads(3);
  if (!dy) return grads;
  const TensorPtr& x = ctx.inputs[0];
  const TensorPtr& w = ctx.inputs[1];
  if (ctx.needs_input_grad[0]) grads[0] = Apply1(conv, {dy, w, nullptr}, ConvAttrsFor(conv, ctx.attrs));
  // conv2d_backward_weight's bias gradient would be the sum of x: not wanted here.
  if (ctx.needs_input_grad[1]) {
    Attrs attrs = ConvAttrsFor(bwd_weight, ctx.attrs);
    attrs.Set("bias_grad", false);
    grads[1] = Apply(bwd_weight, {dy, x, w}, attrs)[0];
  }
  if (ctx.needs_input_grad[2]) grads[2] = ops::Sum(dy, {0, 2, 3});
  return grads;
}

}  // namespace

namespace ops {

TensorPtr ConvTranspose2d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias,
                          const ConvTranspose2dOptions& options) {
  static const OpDef& op = OpRegistry::Global().Get("conv_transpose2d");
  std::vector<int64_t> output_padding = options.output_padding;
  TensorPtr xp = x;
  // output_padding >= stride (allowed below dilation): zero rows (columns) appended to x take the
  // multiples of stride, which add no taps but lengthen the output by stride each.
  if (output_padding.size() == 2 && options.stride.size() == 2 && options.dilation.size() == 2 && x &&
      x->ndim() == 4) {
    for (int a = 0; a < 2; ++a) {
      const int64_t s = options.stride[a], d = options.dilation[a], op_a = output_padding[a];
      const int64_t dim = 2 + a;
      // The op reports bad strides and empty inputs; the common case needs no padding.
      if (s < 1 || op_a < s || x->shape()[dim] == 0) continue;
      if (op_a >= d) {
        OF_THROW(InvalidArgument) << "conv_transpose2d: output_padding[" << a << "] is " << op_a
                                  << "; it must be smaller than stride[" << a << "] = " << s << " or dilation[" << a
                                  << "] = " << d;
      }
      std::vector<int64_t> extent(4, -1);
      extent[static_cast<size_t>(dim)] = op_a / s;
      const TensorPtr zeros = Expand(ZerosLike(Narrow(xp, dim, 0, 1)), extent);
      xp = Cat({xp, zeros}, dim);
      output_padding[static_cast<size_t>(a)] = op_a % s;
    }
  }
  return Apply1(op, {xp, weight, bias},
                {{"stride", options.stride},
                 {"padding", options.padding},
                 {"output_padding", output_padding},
                 {"dilation", options.dilation},
                 {"groups", options.groups}});
}

}  // namespace ops

void RegisterConvolutionOps(OpRegistry& registry) {
  registry.Register(OpDef{
      .name = "conv_transpose2d",
      .inputs = {"x", "weight", "bias"},
      .optional_inputs = {"bias"},
      .outputs = {"y"},
      .attrs = {{"stride", std::vector<int64_t>{1, 1}},
                {"padding", std::vector<int64_t>{0, 0}},
                {"output_padding", std::vector<int64_t>{0, 0}},
                {"dilation", std::vector<int64_t>{1, 1}},
                {"groups", int64_t{1}}},
      .infer = InferConvTranspose2d,
      .backward = ConvTranspose2dBackward,
      .kernels = cpu::WithHalfInFloat32({{DeviceType::kCPU, {DataType::kFloat32}, ConvTranspose2dKernel<float>},
                                         {DeviceType::kCPU, {DataType::kFloat64}, ConvTranspose2dKernel<double>}}),
      .autocast = AutocastPolicy::kLowPrecision,
  });
}

}  // namespace oneflow
