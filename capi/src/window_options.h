// Reading the window options of the C ABI (of_conv2d_options_t, of_pool2d_options_t), shared by the
// conv and pooling functions (capi/src/ops.cpp) and the window family (capi/src/ops_window.cpp).
#pragma once

#include <vector>

#include "capi/src/op_call.h"
#include "core/ops/ops.h"

namespace oneflow::capi {

// options->padding_end as the ops take it: -1 in a dim is that dim's padding; symmetric padding gives
// an empty list (the attributes old callers get).
inline std::vector<int64_t> PaddingEnd(const int64_t (&padding)[2], const int64_t (&padding_end)[2]) {
  const std::vector<int64_t> end = {padding_end[0] == -1 ? padding[0] : padding_end[0],
                                    padding_end[1] == -1 ? padding[1] : padding_end[1]};
  if (end[0] == padding[0] && end[1] == padding[1]) return {};
  return end;
}

// Required pooling options (they carry the kernel size) with the defaults for a caller's missing tail.
inline of_pool2d_options_t ReadPoolOptions(const of_pool2d_options_t* given) {
  Require(given, "options");
  return ReadOptions(given, of_pool2d_options_init, "options");
}

inline ops::Pool2dOptions PoolOptions(const of_pool2d_options_t& o) {
  ops::Pool2dOptions p;
  p.kernel_size = {o.kernel_size[0], o.kernel_size[1]};
  // A zero stride means "the kernel size" per dim; the op then checks every value.
  p.stride = {o.stride[0] == 0 ? o.kernel_size[0] : o.stride[0], o.stride[1] == 0 ? o.kernel_size[1] : o.stride[1]};
  p.padding = {o.padding[0], o.padding[1]};
  p.dilation = {o.dilation[0], o.dilation[1]};
  p.ceil_mode = Flag(o.ceil_mode, "options->ceil_mode");
  p.count_include_pad = Flag(o.count_include_pad, "options->count_include_pad");
  return p;
}

}  // namespace oneflow::capi
