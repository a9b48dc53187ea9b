// max_unpool2d (PyTorch's max_unpool2d, the inverse of max_pool2d with indices) and its backward.
//
// max_unpool2d(x, indices): y (N, C, H', W') zeros with y[n, c].flat[indices[n, c, h, w]] = x[n, c, h, w]
// (a later position in x wins where indices repeat, as PyTorch's CPU kernel). (H', W') is the attribute
// output_size, or when it is empty max pooling's inverse size (H - 1) * stride - padding - padding_end
// + kernel_size from the pooling attributes. max_unpool2d_backward(grad_y, indices) gathers grad_y at
// the indices. Loops over planes; indices outside the output plane are InvalidArgument naming the
// position.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "core/op/dispatch.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/dnnl/dnnl_common.h"
#include "core/ops/window.h"

namespace oneflow {
namespace {

using namespace dnnl_util;

// The default output length (H - 1) * stride - padding - padding_end + kernel along one axis; an int64
// overflow is InvalidArgument.
int64_t DefaultOut(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int axis) {
  const __int128 wide = static_cast<__int128>(in - 1) * s + k - pb - pe;  // exact: each term is an int64
  const auto out = static_cast<int64_t>(wide);
  if (wide != out) {
    OF_THROW(InvalidArgument) << "the output size (" << (axis == 0 ? "H" : "W") << " - 1) * stride[" << axis
                              << "] - padding - padding_end + kernel_size overflows int64 for "
                              << (axis == 0 ? "H" : "W") << " = " << in << ", stride " << s;
  }
  return out;
}

// v within int64's range, for messages.
int64_t Clamped(__int128 v) {
  return static_cast<int64_t>(
      std::clamp<__int128>(v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
}

// The output (H', W') for x's shape: unknown where it follows from an unknown dim of x.
std::pair<Dim, Dim> UnpoolOutput(const Shape& x, const Attrs& attrs) {
  const std::vector<int64_t> k = Pair(attrs, "kernel_size", 1);
  const std::vector<int64_t> stride = attrs.Ints("stride").empty() ? k : Pair(attrs, "stride", 1);
  const std::vector<int64_t> padding = Pair(attrs, "padding", 0), padding_end = PaddingEnd(attrs, padding);
  const std::vector<int64_t>& size = attrs.Ints("output_size");
  OF_CHECK(size.empty() || size.size() == 2)
      << "output_size must be empty (the default) or two values (H, W), got " << AttrValueToString(size);
  Dim out[2];
  for (int a = 0; a < 2; ++a) {
    const Dim in = x[2 + a];
    std::optional<int64_t> dflt;
    if (in.is_known()) dflt = DefaultOut(in.value(), k[a], stride[a], padding[a], padding_end[a], a);
    if (size.empty()) {
      if (dflt) out[a] = *dflt;
    } else {
      out[a] = size[a];
      // PyTorch accepts sizes within one stride of the default (the sizes max pooling maps to x's); the
      // bounds in 128 bits (a default near int64's limits plus a stride overflows int64), shown clamped.
      const __int128 d = dflt.value_or(0), lo = d - stride[a], hi = d + stride[a];
      OF_CHECK(!dflt || (size[a] >= lo && size[a] <= hi))
          << "output_size " << AttrValueToString(size) << " must lie within stride " << AttrValueToString(stride)
          << " of the default size along each dim; dim " << a << " allows [" << Clamped(lo) << ", " << Clamped(hi)
          << "] for x " << x;
    }
  }
  OF_CHECK((!out[0].is_known() || out[0].value() >= 1) && (!out[1].is_known() || out[1].value() >= 1))
      << "the output size would be (" << out[0] << ", " << out[1] << ") for x " << x << "; each must be >= 1";
  return {out[0], out[1]};
}

// indices must be int64 with x's (N, C, H, W) where both are known.
void CheckIndices(const TensorMeta& indices, const Shape& x, std::string_view x_name) {
  OF_CHECK(indices.dtype == DType::Int64()) << "indices must be int64, got " << indices.dtype;
  bool ok = indices.shape.ndim() == 4;
  for (int64_t d = 0; ok && d < 4; ++d) {
    ok = !(indices.shape[d].is_known() && x[d].is_known() && indices.shape[d] != x[d]);
  }
  OF_CHECK(ok) << "indices " << indices.shape << " must have " << x_name << "'s shape " << x;
}

// Inputs (x, indices).
std::vector<TensorMeta> InferMaxUnpool(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta& x = in[0];
  OF_CHECK(x.shape.ndim() == 4) << "x must be 4-D (N, C, H, W), got " << x.shape;
  CheckNumeric(x, "x");
  CheckIndices(in[1], x.shape, "x");
  const auto [oh, ow] = UnpoolOutput(x.shape, attrs);
  return {{x.dtype, Shape{x.shape[0], x.shape[1], oh, ow}, x.device}};
}

// Inputs (grad_y, indices); grad_x has the indices' shape.
std::vector<TensorMeta> InferMaxUnpoolBackward(std::span<const TensorMeta> in, const Attrs&) {
  const TensorMeta& dy = in[0];
  OF_CHECK(dy.shape.ndim() == 4) << "grad_y must be 4-D (N, C, H', W'), got " << dy.shape;
  const Shape& is = in[1].shape;
  OF_CHECK(in[1].dtype == DType::Int64() && is.ndim() == 4) << "indices must be 4-D int64, got " << in[1].dtype << " "
                                                           << is;
  for (int64_t d = 0; d < 2; ++d) {
    OF_CHECK(!(is[d].is_known() && dy.shape[d].is_known() && is[d] != dy.shape[d]))
        << "indices " << is << " must have grad_y's (N, C) = (" << dy.shape[0] << ", " << dy.shape[1] << ")";
  }
  return {{dy.dtype, is, dy.device}};
}

// The position (n, c, h, w) of flat element `i` of a 4-D shape, for messages.
std::string Position(int64_t i, const Shape& s) {
  const int64_t w = s[3].value(), h = s[2].value(), c = s[1].value();
  return fmt::format("[{}, {}, {}, {}]", i / w / h / c, i / w / h % c, i / w % h, i % w);
}

void CheckIndex(int64_t v, int64_t plane, int64_t i, const Shape& s, const Shape& out) {
  OF_CHECK(v >= 0 && v < plane) << "indices" << Position(i, s) << " = " << v << " is outside the output plane of "
                                << out[2] << " x " << out[3] << " = " << plane << " elements";
}

template <typename T>
void MaxUnpool2dKernel(KernelContext& ctx) {
  const TensorPtr xt = ContiguousInput(ctx, 0), it = ContiguousInput(ctx, 1);
  const Shape& xs = xt->shape();
  const Shape& ys = ctx.out(0).shape();
  const int64_t planes = xs[0].value() * xs[1].value(), in_plane = xs[2].value() * xs[3].value();
  const int64_t out_plane = ys[2].value() * ys[3].value();
  const T* x = xt->data<T>();
  const int64_t* idx = it->data<int64_t>();
  T* y = ctx.out(0).data<T>();
  ctx.pool.ParallelFor(planes, GrainFor(in_plane + out_plane), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      T* yp = y + p * out_plane;
      std::fill(yp, yp + out_plane, T(0));
      const T* xp = x + p * in_plane;
      const int64_t* ip = idx + p * in_plane;
      for (int64_t i = 0; i < in_plane; ++i) {
        const int64_t v = ip[i];
        if (v < 0 || v >= out_plane) CheckIndex(v, out_plane, p * in_plane + i, xs, ys);
        yp[v] = xp[i];
      }
    }
  });
}

// Inputs (grad_y, indices).
template <typename T>
void MaxUnpool2dBackwardKernel(KernelContext& ctx) {
  const TensorPtr dyt = ContiguousInput(ctx, 0), it = ContiguousInput(ctx, 1);
  const Shape& ys = dyt->shape();
  const Shape& xs = it->shape();
  const int64_t planes = xs[0].value() * xs[1].value(), in_plane = xs[2].value() * xs[3].value();
  const int64_t out_plane = ys[2].value() * ys[3].value();
  const T* dy = dyt->data<T>();
  const int64_t* idx = it->data<int64_t>();
  T* dx = ctx.out(0).data<T>();
  ctx.pool.ParallelFor(planes, GrainFor(in_plane), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const T* dyp = dy + p * out_plane;
      const int64_t* ip = idx + p * in_plane;
      T* dxp = dx + p * in_plane;
      for (int64_t i = 0; i < in_plane; ++i) {
        const int64_t v = ip[i];
        if (v < 0 || v >= out_plane) CheckIndex(v, out_plane, p * in_plane + i, xs, ys);
        dxp[i] = dyp[v];
      }
    }
  });
}

std::vector<TensorPtr> MaxUnpool2dBackward(const BackwardContext& ctx) {
  static const OpDef& bwd = OpRegistry::Global().Get("max_unpool2d_backward");
  const TensorPtr& dy = ctx.grad_outputs[0];
  if (!dy || !ctx.needs_input_grad[0]) return {nullptr, nullptr};
  return {Apply1(bwd, {dy, ctx.inputs[1]}, {}), nullptr};
}

template <typename T>
struct Unpool {
  static void Run(KernelContext& ctx) { MaxUnpool2dKernel<T>(ctx); }
};
template <typename T>
struct UnpoolBackward {
  static void Run(KernelContext& ctx) { MaxUnpool2dBackwardKernel<T>(ctx); }
};
// Every numeric dtype, as PyTorch's max_unpool2d.
template <template <typename> class K>
std::vector<KernelDef> NumericKernels() {
  constexpr DeviceType kCPU = DeviceType::kCPU;
  return {{kCPU, {DataType::kFloat32}, K<float>::Run},   {kCPU, {DataType::kFloat64}, K<double>::Run},
          {kCPU, {DataType::kInt8}, K<int8_t>::Run},     {kCPU, {DataType::kUInt8}, K<uint8_t>::Run},
          {kCPU, {DataType::kInt16}, K<int16_t>::Run},   {kCPU, {DataType::kInt32}, K<int32_t>::Run},
          {kCPU, {DataType::kInt64}, K<int64_t>::Run}};
}

}  // namespace

namespace ops {
TensorPtr MaxUnpool2d(const TensorPtr& x, const TensorPtr& indices, const Pool2dOptions& options,
                      const std::vector<int64_t>& output_size, const std::vector<int64_t>& padding_end) {
  static const OpDef& op = OpRegistry::Global().Get("max_unpool2d");
  return Apply1(op, {x, indices},
                {{"kernel_size", options.kernel_size},
                 {"stride", options.stride},
                 {"padding", options.padding},
                 {"padding_end", padding_end},
                 {"output_size", output_size}});
}
}  // namespace ops

void RegisterMaxUnpoolOps(OpRegistry& registry) {
  registry.Register(OpDef{
      .name = "max_unpool2d",
      .inputs = {"x", "indices"},
      .outputs = {"y"},
      .attrs = {{"kernel_size", std::vector<int64_t>{}, true},
                {"stride", std::vector<int64_t>{}},
                {"padding", std::vector<int64_t>{0, 0}},
                {"padding_end", std::vector<int64_t>{}},   // empty (the default): `padding`, symmetric
                {"output_size", std::vector<int64_t>{}}},  // empty (the default): from the pooling attributes
      .infer = InferMaxUnpool,
      .backward = MaxUnpool2dBackward,
      .kernels = cpu::WithHalfInFloat32(NumericKernels<Unpool>()),
      .strided_inputs = true,  // made contiguous by the kernels
  });
  registry.Register(OpDef{
      .name = "max_unpool2d_backward",
      .inputs = {"grad_y", "indices"},
      .outputs = {"grad_x"},
      .infer = InferMaxUnpoolBackward,
      .kernels = cpu::WithHalfInFloat32(NumericKernels<UnpoolBackward>()),
      .strided_inputs = true,
  });
}

}  // namespace oneflow
