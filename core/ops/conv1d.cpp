// conv1d and conv_transpose1d as composites of the 2-D ops (core/ops/convolution.h): x (N, C, L) viewed
// as (N, C, 1, L), the weight (.., .., K) as (.., .., 1, K), the 2-D op with the 1-D attributes on the
// W axis, and the result's unit H dim squeezed away. Autograd and lazy graphs (an unknown L flows
// through the views and the 2-D inference) need nothing of their own.
//
// What the 1-D call gets wrong is reported in 1-D terms here; what only the 2-D op can judge (sizes
// too small for the kernel, dtypes, int64 overflow) comes from it, prefixed with the 1-D op's name.
#include <string>

#include "core/common/error.h"
#include "core/ops/convolution.h"
#include "core/ops/ops.h"

namespace oneflow::ops {
namespace {

void CheckOperands(std::string_view op, const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias,
                   std::string_view x_layout, std::string_view w_layout) {
  OF_CHECK(x != nullptr) << op << ": x is null";
  OF_CHECK(weight != nullptr) << op << ": weight is null";
  OF_CHECK(x->ndim() == 3) << op << ": x must be 3-D " << x_layout << ", got " << x->shape();
  OF_CHECK(weight->ndim() == 3) << op << ": weight must be 3-D " << w_layout << ", got " << weight->shape();
  OF_CHECK(!bias || bias->ndim() == 1) << op << ": bias must be 1-D, got " << bias->shape();
}

void CheckScalars(std::string_view op, int64_t stride, int64_t padding, int64_t dilation, int64_t groups) {
  OF_CHECK(stride >= 1) << op << ": stride must be >= 1, got " << stride;
  OF_CHECK(padding >= 0) << op << ": padding must be >= 0, got " << padding;
  OF_CHECK(dilation >= 1) << op << ": dilation must be >= 1, got " << dilation;
  OF_CHECK(groups >= 1) << op << ": groups must be >= 1, got " << groups;
}

// Runs the 2-D op; its errors are prefixed "<op> (as <op2d> of x viewed as (N, C, 1, L)): ".
template <typename Fn>
TensorPtr Via2d(std::string_view op, std::string_view op2d, Fn&& fn) {
  try {
    return Squeeze(fn(), {2});
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("{} (as {} of x viewed as (N, C, 1, L)): {}", op, op2d, e.message()));
  }
}

}  // namespace

TensorPtr Conv1d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, const Conv1dOptions& o) {
  CheckOperands("conv1d", x, weight, bias, "(N, C, L)", "(out_channels, in_channels / groups, K)");
  CheckScalars("conv1d", o.stride, o.padding, o.dilation, o.groups);
  return Via2d("conv1d", "conv2d", [&] {
    return Conv2d(Unsqueeze(x, 2), Unsqueeze(weight, 2), bias,
                  {.stride = {1, o.stride}, .padding = {0, o.padding}, .dilation = {1, o.dilation}, .groups = o.groups});
  });
}

TensorPtr ConvTranspose1d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias,
                          const ConvTranspose1dOptions& o) {
  CheckOperands("conv_transpose1d", x, weight, bias, "(N, C_in, L)", "(in_channels, out_channels / groups, K)");
  CheckScalars("conv_transpose1d", o.stride, o.padding, o.dilation, o.groups);
  OF_CHECK(o.output_padding >= 0 && (o.output_padding < o.stride || o.output_padding < o.dilation))
      << "conv_transpose1d: output_padding is " << o.output_padding << "; it must be >= 0 and smaller than stride = "
      << o.stride << " or dilation = " << o.dilation;
  return Via2d("conv_transpose1d", "conv_transpose2d", [&] {
    return ConvTranspose2d(Unsqueeze(x, 2), Unsqueeze(weight, 2), bias,
                           {.stride = {1, o.stride},
                            .padding = {0, o.padding},
                            .output_padding = {0, o.output_padding},
                            .dilation = {1, o.dilation},
                            .groups = o.groups});
  });
}

}  // namespace oneflow::ops
