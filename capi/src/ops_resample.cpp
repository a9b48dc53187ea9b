// The C ABI of the resampling ops (core/ops/resample.h).
#include "capi/src/op_call.h"
#include "core/ops/resample.h"

using namespace oneflow;
using capi::Borrow;
using capi::Flag;
using capi::Ints;
using capi::ReadOptions;
using capi::Run;

namespace {

ops::PadMode PadModeOf(of_pad_mode_t mode) {
  switch (mode) {
    case OF_PAD_CONSTANT: return ops::PadMode::kConstant;
    case OF_PAD_REFLECT: return ops::PadMode::kReflect;
    case OF_PAD_REPLICATE: return ops::PadMode::kReplicate;
    case OF_PAD_CIRCULAR: return ops::PadMode::kCircular;
    default:
      OF_THROW(InvalidArgument) << "options->mode is " << mode
                                << "; expected OF_PAD_CONSTANT (0), OF_PAD_REFLECT (1), OF_PAD_REPLICATE (2) or "
                                   "OF_PAD_CIRCULAR (3)";
  }
}

ops::InterpolateMode InterpolateModeOf(of_interpolate_mode_t mode) {
  switch (mode) {
    case OF_INTERPOLATE_NEAREST: return ops::InterpolateMode::kNearest;
    case OF_INTERPOLATE_NEAREST_EXACT: return ops::InterpolateMode::kNearestExact;
    case OF_INTERPOLATE_LINEAR: return ops::InterpolateMode::kLinear;
    case OF_INTERPOLATE_BICUBIC: return ops::InterpolateMode::kBicubic;
    default:
      OF_THROW(InvalidArgument) << "options->mode is " << mode
                                << "; expected OF_INTERPOLATE_NEAREST (0), OF_INTERPOLATE_NEAREST_EXACT (1), "
                                   "OF_INTERPOLATE_LINEAR (2) or OF_INTERPOLATE_BICUBIC (3)";
  }
}

}  // namespace

extern "C" {

void of_pad_options_init(of_pad_options_t* options) {
  if (options == nullptr) return;
  *options = of_pad_options_t{};
  options->struct_size = sizeof(of_pad_options_t);
  options->mode = OF_PAD_CONSTANT;
}

of_status_t* of_pad(of_session_t* session, const of_tensor_t* x, const int64_t* pads, size_t npads,
                    const of_pad_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_pad_options_t o = ReadOptions(options, of_pad_options_init, "options");
    return ops::Pad(Borrow(x, "x"), Ints(pads, npads, "pads"), PadModeOf(o.mode), o.value);
  });
}

void of_interpolate_options_init(of_interpolate_options_t* options) {
  if (options == nullptr) return;
  *options = of_interpolate_options_t{};
  options->struct_size = sizeof(of_interpolate_options_t);
  options->mode = OF_INTERPOLATE_NEAREST;
}

of_status_t* of_interpolate(of_session_t* session, const of_tensor_t* x, const int64_t* size, size_t nsize,
                            const of_interpolate_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_interpolate_options_t o = ReadOptions(options, of_interpolate_options_init, "options");
    ops::InterpolateOptions opts;
    opts.mode = InterpolateModeOf(o.mode);
    opts.align_corners = Flag(o.align_corners, "options->align_corners");
    for (size_t k = 0; k < 3; ++k) opts.scale_factor[k] = o.scale_factor[k];
    return ops::Interpolate(Borrow(x, "x"), Ints(size, nsize, "size"), opts);
  });
}

of_status_t* of_pixel_shuffle(of_session_t* session, const of_tensor_t* x, int64_t upscale_factor,
                              of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::PixelShuffle(Borrow(x, "x"), upscale_factor); });
}

of_status_t* of_pixel_unshuffle(of_session_t* session, const of_tensor_t* x, int64_t downscale_factor,
                                of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::PixelUnshuffle(Borrow(x, "x"), downscale_factor); });
}

}  // extern "C"
