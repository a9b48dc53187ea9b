// The resampling ops' C++ API: pad (core/ops/pad.cpp); interpolate, pixel_shuffle and pixel_unshuffle
// (core/ops/resample.cpp). Conventions as in core/ops/ops.h; PyTorch's torch.nn.functional semantics
// unless said otherwise.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/tensor/tensor.h"

namespace oneflow::ops {

// ---- pad ------------------------------------------------------------------------------------------
enum class PadMode { kConstant, kReflect, kReplicate, kCircular };
// Names "constant", "reflect", "replicate", "circular" (F.pad's); InvalidArgument otherwise.
PadMode PadModeFromName(std::string_view name);
std::string_view PadModeName(PadMode mode);

// F.pad: `pads` pairs up from the last dim backwards, (left, right) of the last dim, then (top, bottom)
// of the one before, ...; an even count of at most 2 * ndim.
//   constant   `value` (representable in x's dtype) around x; negative pads crop. Any dtype, any rank.
//   reflect    mirrors x without repeating the edge; each pad >= 0 and < the dim's size.
//   replicate  repeats the edge element; each pad >= 0, a padded dim must not be empty.
//   circular   wraps around; each pad >= 0 and <= the dim's size.
// The three non-constant modes take any dtype and pad any trailing dims of any rank (PyTorch restricts
// them to the last 1-3 dims of a 2-5-D input, which is a subset); `value` must be 0 for them.
// Differentiable: constant's gradient is a crop (pad by -pads), the others' sums the gradient of every
// padded cell into the cell it copies.
TensorPtr Pad(const TensorPtr& x, const std::vector<int64_t>& pads, PadMode mode = PadMode::kConstant,
              double value = 0.0);

// ---- interpolate ----------------------------------------------------------------------------------
enum class InterpolateMode { kNearest, kNearestExact, kLinear, kBicubic };
// Names "nearest", "nearest-exact", "linear", "bicubic" (F.interpolate's; linear stands for bilinear
// and trilinear too, by the spatial rank); InvalidArgument otherwise.
InterpolateMode InterpolateModeFromName(std::string_view name);
std::string_view InterpolateModeName(InterpolateMode mode);

struct InterpolateOptions {
  InterpolateMode mode = InterpolateMode::kNearest;
  bool align_corners = false;  // linear and bicubic only (PyTorch refuses it for the nearest modes)
  // Per spatial dim, the scale factor of the coordinate mapping (finite, >= 0); 0 = in / out. Entries
  // past the spatial rank must be 0.
  std::array<double, 3> scale_factor = {0, 0, 0};
};
// x (N, C, spatial...) with 1-3 spatial dims, each of size >= 1, floating point; `size` has one
// entry per spatial dim: the output's size (>= 1), or 0 to take floor(in * scale_factor) (then > 0).
// A given scale_factor maps coordinates as F.interpolate(scale_factor=s, recompute_scale_factor=False)
// (aten's upsample_*(x, size, scales)); align_corners ignores it, as PyTorch. nearest picks
// floor(dst * scale), nearest-exact floor((dst + 0.5) * scale), the scale in float32 as PyTorch;
// linear interpolates (in float32 for float32 x, float64 for float64); bicubic uses PyTorch's cubic
// convolution (A = -0.75) over 4 inputs per dim, indices clamped to the edge, at any of the 1-3
// spatial ranks (PyTorch's bicubic takes 2 only; 1 and 3 are the same separable filter).
// Differentiable in x: the gradient is the adjoint (each output's gradient summed into the inputs it read, with their
// weights).
TensorPtr Interpolate(const TensorPtr& x, const std::vector<int64_t>& size, const InterpolateOptions& options = {});

// ---- pixel shuffle --------------------------------------------------------------------------------
// (..., C * r * r, H, W) -> (..., C, H * r, W * r): out[..., c, h * r + i, w * r + j] =
// x[..., c * r * r + i * r + j, h, w]; r = upscale_factor >= 1; x has at least 3 dims. Any dtype.
TensorPtr PixelShuffle(const TensorPtr& x, int64_t upscale_factor);
// The inverse: (..., C, H * r, W * r) -> (..., C * r * r, H, W), r = downscale_factor >= 1.
TensorPtr PixelUnshuffle(const TensorPtr& x, int64_t downscale_factor);

}  // namespace oneflow::ops
