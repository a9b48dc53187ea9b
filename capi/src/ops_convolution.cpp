// The C ABI of the 3-D, transposed and 1-D convolutions (core/ops/convolution.h).
#include "capi/src/op_call.h"
#include "core/ops/convolution.h"

using namespace oneflow;
using capi::Borrow;
using capi::Optional;
using capi::ReadOptions;
using capi::Run;

extern "C" {

void of_conv_transpose2d_options_init(of_conv_transpose2d_options_t* options) {
  if (options == nullptr) return;
  *options = of_conv_transpose2d_options_t{};
  options->struct_size = sizeof(of_conv_transpose2d_options_t);
  options->stride[0] = options->stride[1] = 1;
  options->dilation[0] = options->dilation[1] = 1;
  options->groups = 1;
}

of_status_t* of_conv_transpose2d(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight,
                                 const of_tensor_t* bias, const of_conv_transpose2d_options_t* options,
                                 of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_conv_transpose2d_options_t o = ReadOptions(options, of_conv_transpose2d_options_init, "options");
    ops::ConvTranspose2dOptions c;
    c.stride = {o.stride[0], o.stride[1]};
    c.padding = {o.padding[0], o.padding[1]};
    c.output_padding = {o.output_padding[0], o.output_padding[1]};
    c.dilation = {o.dilation[0], o.dilation[1]};
    c.groups = o.groups;
    return ops::ConvTranspose2d(Borrow(x, "x"), Borrow(weight, "weight"), Optional(bias, "bias"), c);
  });
}

void of_conv1d_options_init(of_conv1d_options_t* options) {
  if (options == nullptr) return;
  *options = of_conv1d_options_t{};
  options->struct_size = sizeof(of_conv1d_options_t);
  options->stride = 1;
  options->dilation = 1;
  options->groups = 1;
}

of_status_t* of_conv1d(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight, const of_tensor_t* bias,
                       const of_conv1d_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_conv1d_options_t o = ReadOptions(options, of_conv1d_options_init, "options");
    return ops::Conv1d(Borrow(x, "x"), Borrow(weight, "weight"), Optional(bias, "bias"),
                       {.stride = o.stride, .padding = o.padding, .dilation = o.dilation, .groups = o.groups});
  });
}

void of_conv_transpose1d_options_init(of_conv_transpose1d_options_t* options) {
  if (options == nullptr) return;
  *options = of_conv_transpose1d_options_t{};
  options->struct_size = sizeof(of_conv_transpose1d_options_t);
  options->stride = 1;
  options->dilation = 1;
  options->groups = 1;
}

of_status_t* of_conv_transpose1d(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight,
                                 const of_tensor_t* bias, const of_conv_transpose1d_options_t* options,
                                 of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_conv_transpose1d_options_t o = ReadOptions(options, of_conv_transpose1d_options_init, "options");
    return ops::ConvTranspose1d(Borrow(x, "x"), Borrow(weight, "weight"), Optional(bias, "bias"),
                                {.stride = o.stride,
                                 .padding = o.padding,
                                 .output_padding = o.output_padding,
                                 .dilation = o.dilation,
                                 .groups = o.groups});
  });
}

void of_conv3d_options_init(of_conv3d_options_t* options) {
  if (options == nullptr) return;
  *options = of_conv3d_options_t{};
  options->struct_size = sizeof(of_conv3d_options_t);
  for (int a = 0; a < 3; ++a) options->stride[a] = options->dilation[a] = 1;
  options->groups = 1;
}

of_status_t* of_conv3d(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight, const of_tensor_t* bias,
                       const of_conv3d_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_conv3d_options_t o = ReadOptions(options, of_conv3d_options_init, "options");
    ops::Conv3dOptions c;
    c.stride = {o.stride[0], o.stride[1], o.stride[2]};
    c.padding = {o.padding[0], o.padding[1], o.padding[2]};
    c.dilation = {o.dilation[0], o.dilation[1], o.dilation[2]};
    c.groups = o.groups;
    return ops::Conv3d(Borrow(x, "x"), Borrow(weight, "weight"), Optional(bias, "bias"), c);
  });
}

}  // extern "C"
