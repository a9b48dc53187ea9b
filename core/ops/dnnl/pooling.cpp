// Pooling over (N, C, H, W): max_pool2d, avg_pool2d, adaptive_avg_pool2d and their backward ops.
//
// max_pool2d gives the values and the int64 indices of the maxima (h * W + w within the input plane,
// as PyTorch's return_indices; -1 where a dilated window misses the input, whose value is -inf), which
// max_pool2d_backward scatters into; both are loops over planes or, channels last, over pixels (float32
// with 8k channels: 8 channels per AVX2 vector) (oneDNN's max pooling keeps its indices in an opaque,
// layout-dependent workspace that a tensor output cannot describe). avg_pool2d
// runs oneDNN for float32 except where PyTorch's divisor differs from oneDNN's (count_include_pad with
// a ceil_mode window past the padding), then loops like float64. adaptive_avg_pool2d (any output
// size, windows [floor(i*H/oh), ceil((i+1)*H/oh))) is loops.
//
// Every windowed pooling takes padding (top, left) before and padding_end (bottom, right) after the input
// (empty: symmetric); max pooling pads with -inf, avg pooling as PyTorch / ONNX AveragePool (see
// ForEachAvgWindow).
//
// The backward ops take the forward input x only for its shape (strided inputs: nothing is copied).
#include <algorithm>
#include <limits>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/op/dispatch.h"
#include "core/op/layout.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/cpu/x86_simd.h"
#include "core/ops/dnnl/dnnl_common.h"
#include "core/ops/ops.h"
#include "core/ops/window.h"

namespace oneflow {
namespace {

using namespace dnnl_util;

enum class PoolKind { kMax, kAvg, kAdaptive };

struct PoolParams {
  int64_t kernel[2] = {1, 1};
  Window2d win;
  bool count_include_pad = true;
};

PoolParams PoolParamsOf(const Attrs& attrs, PoolKind kind) {
  PoolParams p;
  const std::vector<int64_t> k = Pair(attrs, "kernel_size", 1);
  const std::vector<int64_t> stride = attrs.Ints("stride").empty() ? k : Pair(attrs, "stride", 1);
  const std::vector<int64_t> padding = Pair(attrs, "padding", 0), padding_end = PaddingEnd(attrs, padding);
  OF_CHECK(padding[0] <= k[0] / 2 && padding[1] <= k[1] / 2)
      << "padding " << AttrValueToString(padding) << " must be at most half of kernel_size "
      << AttrValueToString(k);
  OF_CHECK(padding_end[0] <= k[0] / 2 && padding_end[1] <= k[1] / 2)
      << "padding_end " << AttrValueToString(padding_end) << " must be at most half of kernel_size "
      << AttrValueToString(k);
  const std::vector<int64_t> dilation = kind == PoolKind::kMax ? Pair(attrs, "dilation", 1) : std::vector<int64_t>{1, 1};
  for (int a = 0; a < 2; ++a) {
    p.kernel[a] = k[a];
    p.win.stride[a] = stride[a];
    p.win.padding[a] = padding[a];
    p.win.padding_end[a] = padding_end[a];
    p.win.dilation[a] = dilation[a];
  }
  p.win.ceil_mode = attrs.Bool("ceil_mode");
  if (kind == PoolKind::kAvg) p.count_include_pad = attrs.Bool("count_include_pad");
  return p;
}

// x must be 4-D with non-empty H and W (as PyTorch: every window would lie in the padding); N and C
// may be 0 (an empty result). Averages are fractions: they need a floating x.
void CheckInput(const TensorMeta& x, PoolKind kind) {
  OF_CHECK(x.shape.ndim() == 4) << "x must be 4-D (N, C, H, W), got " << x.shape;
  if (kind == PoolKind::kMax) {
    CheckNumeric(x, "x");
  } else {
    CheckFloating(x, "x");
  }
  OF_CHECK(!(x.shape[2] == 0 || x.shape[3] == 0)) << "x " << x.shape << " has an empty spatial dim";
}

Shape PoolOutShape(const TensorMeta& x, const Attrs& attrs, PoolKind kind) {
  CheckInput(x, kind);
  const Shape& s = x.shape;
  if (kind == PoolKind::kAdaptive) {
    const std::vector<int64_t> out = Pair(attrs, "output_size", 1);
    return Shape{s[0], s[1], out[0], out[1]};
  }
  const PoolParams p = PoolParamsOf(attrs, kind);
  const auto [oh, ow] = WindowOutput(s, p.kernel[0], p.kernel[1], p.win);
  return Shape{s[0], s[1], oh, ow};
}

std::vector<TensorMeta> InferMaxPool(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape y = PoolOutShape(in[0], attrs, PoolKind::kMax);
  return {{in[0].dtype, y, in[0].device}, {DType::Int64(), y, in[0].device}};
}
std::vector<TensorMeta> InferAvgPool(std::span<const TensorMeta> in, const Attrs& attrs) {
  return {{in[0].dtype, PoolOutShape(in[0], attrs, PoolKind::kAvg), in[0].device}};
}
std::vector<TensorMeta> InferAdaptiveAvgPool(std::span<const TensorMeta> in, const Attrs& attrs) {
  return {{in[0].dtype, PoolOutShape(in[0], attrs, PoolKind::kAdaptive), in[0].device}};
}

// grad_y (and indices) must match the forward output for x; the result is x's meta.
TensorMeta InferPoolBackward(const TensorMeta& dy, const TensorMeta& x, const Attrs& attrs, PoolKind kind) {
  const Shape y = PoolOutShape(x, attrs, kind);
  OF_CHECK(dy.dtype == x.dtype) << "grad_y is " << dy.dtype << " but x is " << x.dtype;
  bool ok = dy.shape.ndim() == 4;
  for (int64_t d = 0; ok && d < 4; ++d) ok = !(dy.shape[d].is_known() && y[d].is_known() && dy.shape[d] != y[d]);
  OF_CHECK(ok) << "grad_y " << dy.shape << " does not match the pooling output " << y << " for x " << x.shape;
  return x;
}
// Inputs (grad_y, indices, x).
std::vector<TensorMeta> InferMaxPoolBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  OF_CHECK(in[1].dtype == DType::Int64() && in[1].shape == in[0].shape)
      << "indices must be int64 of grad_y's shape " << in[0].shape << ", got " << in[1].dtype << " " << in[1].shape;
  return {InferPoolBackward(in[0], in[2], attrs, PoolKind::kMax)};
}
// Inputs (grad_y, x).
std::vector<TensorMeta> InferAvgPoolBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  return {InferPoolBackward(in[0], in[1], attrs, PoolKind::kAvg)};
}
std::vector<TensorMeta> InferAdaptiveAvgPoolBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  return {InferPoolBackward(in[0], in[1], attrs, PoolKind::kAdaptive)};
}

// ---- kernels --------------------------------------------------------------------------------------

// x (N, C, H, W) as N*C planes; y (N, C, OH, OW). With channels_last, both are stored (N, H, W, C)
// (Note [Channels-last activations]) and the loops run over pixels, C values at a time.
struct PoolGeom {
  int64_t planes, h, w, oh, ow;
  PoolParams p;
  int64_t n = 0, c = 0;
  bool channels_last = false;
};
// `y` is the output or its gradient: the call is channels last when x and y are (ChannelsLastCall).
PoolGeom GeomOf(const Tensor& x, const Tensor& y, const Attrs& attrs, PoolKind kind) {
  const Shape& xs = x.shape();
  const Shape& ys = y.shape();
  PoolGeom g{xs[0].value() * xs[1].value(), xs[2].value(), xs[3].value(), ys[2].value(), ys[3].value(), {}};
  if (kind != PoolKind::kAdaptive) g.p = PoolParamsOf(attrs, kind);
  g.n = xs[0].value();
  g.c = xs[1].value();
  g.channels_last = ChannelsLastCall(x, y);
  return g;
}

// Taps of one window that can lie inside the input (for work estimates, which must not overflow).
int64_t Taps(const PoolGeom& g) { return std::min(g.p.kernel[0], g.h) * std::min(g.p.kernel[1], g.w); }

// The kernel offsets k in [0, kernel) whose input start + k * dilation lies in [0, in), as [first, last).
std::pair<int64_t, int64_t> KernelRange(int64_t start, int64_t kernel, int64_t dilation, int64_t in) {
  const int64_t first = start < 0 ? CeilDiv(-start, dilation) : 0;
  const int64_t last = in > start ? std::min(kernel, CeilDiv(in - start, dilation)) : 0;
  return {first, std::max(first, last)};
}

// One plane. `g` is a by-value copy so that the stores through yp / ip cannot alias the sizes.
template <typename T>
void MaxPoolPlane(const T* xp, T* yp, int64_t* ip, const PoolGeom g) {
  const int64_t h = g.h, w = g.w, oh = g.oh, ow = g.ow, kh = g.p.kernel[0], kw = g.p.kernel[1];
  const int64_t sh = g.p.win.stride[0], sw = g.p.win.stride[1], ph = g.p.win.padding[0], pw = g.p.win.padding[1];
  const int64_t dh = g.p.win.dilation[0], dw = g.p.win.dilation[1];
  for (int64_t oy = 0; oy < oh; ++oy) {
    const int64_t y0 = oy * sh - ph;
    const auto [ki0, ki1] = KernelRange(y0, kh, dh, h);
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t x0 = ox * sw - pw;
      const auto [kj0, kj1] = KernelRange(x0, kw, dw, w);
      if (ki0 == ki1 || kj0 == kj1) {  // a dilated window may miss the input: -inf, no index
        yp[oy * ow + ox] = -std::numeric_limits<T>::infinity();
        ip[oy * ow + ox] = -1;
        continue;
      }
      // The maximum by branch-free max instructions, then the first index holding it; with a NaN,
      // the last NaN (NaN wins, as in PyTorch).
      int64_t best_i = (y0 + ki0 * dh) * w + x0 + kj0 * dw;
      T best = xp[best_i];
      bool nan = false;
      for (int64_t ki = ki0; ki < ki1; ++ki) {
        const int64_t row = (y0 + ki * dh) * w + x0;  // an index: x0 may be far left of the input
        for (int64_t kj = kj0; kj < kj1; ++kj) {
          const T v = xp[row + kj * dw];
          best = best > v ? best : v;
          nan |= v != v;
        }
      }
      bool found = false;
      for (int64_t ki = ki0; ki < ki1 && !found; ++ki) {
        const int64_t row = (y0 + ki * dh) * w + x0;
        for (int64_t kj = kj0; kj < kj1; ++kj) {
          const T v = xp[row + kj * dw];
          if (nan ? v != v : v == best) {
            best = v;
            best_i = row + kj * dw;
            found = !nan;
            if (found) break;
          }
        }
      }
      yp[oy * ow + ox] = best;
      ip[oy * ow + ox] = best_i;
    }
  }
}

// The taps of one window over channels-last rows `w` pixels wide: rows y0 + ki * dh for ki in [ki0, ki1),
// columns x0 + kj * dw for kj in [kj0, kj1), all inside the input.
struct PixelWindow {
  int64_t w, y0, x0, dh, dw, ki0, ki1, kj0, kj1;
};

#if defined(__x86_64__)
// MaxPoolPixel for float32 with c a multiple of 8, on AVX2: 8 channels at a time, the same choice per
// lane (a later tap replaces the best when it is NaN or, both ordered, greater), the taps as int32 lanes
// (tap < h * w, which the caller checks fits) widened to int64 at the end.
OF_AVX2 void MaxPoolPixelAvx2(const float* xn, int64_t c, const PixelWindow& win, float* yp, int64_t* ip) {
  for (int64_t k = 0; k < c; k += 8) {
    __m256 best = _mm256_setzero_ps();
    __m256i best_tap = _mm256_setzero_si256();
    bool first = true;
    for (int64_t ki = win.ki0; ki < win.ki1; ++ki) {
      for (int64_t kj = win.kj0; kj < win.kj1; ++kj) {
        const int64_t tap = (win.y0 + ki * win.dh) * win.w + win.x0 + kj * win.dw;
        const __m256 v = _mm256_loadu_ps(xn + tap * c + k);
        const __m256i tap_v = _mm256_set1_epi32(static_cast<int32_t>(tap));
        if (first) {
          best = v;
          best_tap = tap_v;
          first = false;
          continue;
        }
        const __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), _mm256_cmp_ps(v, best, _CMP_GT_OQ));
        best = _mm256_blendv_ps(best, v, take);
        best_tap = _mm256_blendv_epi8(best_tap, tap_v, _mm256_castps_si256(take));
      }
    }
    _mm256_storeu_ps(yp + k, best);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(ip + k), _mm256_cvtepi32_epi64(_mm256_castsi256_si128(best_tap)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(ip + k + 4),
                        _mm256_cvtepi32_epi64(_mm256_extracti128_si256(best_tap, 1)));
  }
}
#endif

// Channels last: output pixel `o` (y at n, oy, ox) of all channels, as MaxPoolPlane does per plane:
// the first maximum in window order, or the last NaN.
template <typename T>
void MaxPoolPixel(const T* x, T* y, int64_t* idx, int64_t o, const PoolGeom& g) {
  const int64_t c = g.c, n = o / (g.oh * g.ow), oy = o / g.ow % g.oh, ox = o % g.ow;
  const int64_t dh = g.p.win.dilation[0], dw = g.p.win.dilation[1];
  const int64_t y0 = oy * g.p.win.stride[0] - g.p.win.padding[0], x0 = ox * g.p.win.stride[1] - g.p.win.padding[1];
  const auto [ki0, ki1] = KernelRange(y0, g.p.kernel[0], dh, g.h);
  const auto [kj0, kj1] = KernelRange(x0, g.p.kernel[1], dw, g.w);
  T* yp = y + o * c;
  int64_t* ip = idx + o * c;
  if (ki0 == ki1 || kj0 == kj1) {  // a dilated window may miss the input: -inf, no index
    std::fill_n(yp, c, -std::numeric_limits<T>::infinity());
    std::fill_n(ip, c, int64_t{-1});
    return;
  }
  const T* xn = x + n * g.h * g.w * c;
#if defined(__x86_64__)
  if constexpr (std::is_same_v<T, float>) {
    if (c % 8 == 0 && g.h * g.w <= std::numeric_limits<int32_t>::max() && cpu::HasAvx2Fma()) {
      return MaxPoolPixelAvx2(xn, c, {g.w, y0, x0, dh, dw, ki0, ki1, kj0, kj1}, yp, ip);
    }
  }
#endif
  bool first = true;
  for (int64_t ki = ki0; ki < ki1; ++ki) {
    for (int64_t kj = kj0; kj < kj1; ++kj) {
      const int64_t tap = (y0 + ki * dh) * g.w + x0 + kj * dw;
      const T* v = xn + tap * c;
      if (first) {
        std::copy_n(v, c, yp);
        std::fill_n(ip, c, tap);
        first = false;
        continue;
      }
      for (int64_t k = 0; k < c; ++k) {
        if (v[k] != v[k] || (yp[k] == yp[k] && v[k] > yp[k])) {
          yp[k] = v[k];
          ip[k] = tap;
        }
      }
    }
  }
}

template <typename T>
void MaxPool2dKernel(KernelContext& ctx) {
  const PoolGeom g = GeomOf(ctx.in(0), ctx.out(0), ctx.attrs, PoolKind::kMax);
  const T* x = ctx.in(0).data<T>();
  T* y = ctx.out(0).data<T>();
  int64_t* idx = ctx.out(1).data<int64_t>();
  const int64_t in_plane = g.h * g.w, out_plane = g.oh * g.ow;
  if (g.channels_last) {
    ctx.pool.ParallelFor(g.n * out_plane, GrainFor(g.c * Taps(g)), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) MaxPoolPixel(x, y, idx, o, g);
    });
    return;
  }
  ctx.pool.ParallelFor(g.planes, GrainFor(out_plane * Taps(g)), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) MaxPoolPlane(x + p * in_plane, y + p * out_plane, idx + p * out_plane, g);
  });
}

// Inputs (grad_y, indices, x); grad_y and indices in the call's format (layout inputs).
template <typename T>
void MaxPool2dBackwardKernel(KernelContext& ctx) {
  const PoolGeom g = GeomOf(ctx.out(0), ctx.in(0), ctx.attrs, PoolKind::kMax);
  const T* dy = ctx.in(0).data<T>();
  const int64_t* idx = ctx.in(1).data<int64_t>();
  T* dx = ctx.out(0).data<T>();
  const int64_t in_plane = g.h * g.w, out_plane = g.oh * g.ow;
  auto check = [&](int64_t i) {
    OF_CHECK(i < in_plane) << "index " << i << " is outside the input plane of " << in_plane << " elements";
  };
  if (g.channels_last) {  // one image per task: its pixels scatter into its own dx
    ctx.pool.ParallelFor(g.n, GrainFor(g.c * (in_plane + out_plane)), [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        T* dxn = dx + n * in_plane * g.c;
        // dx's rows are zeroed as the first index into each comes (in output order the windows go down the
        // image), so that the sums add into lines still in the cache: zeroing the whole image first, a
        // pass over memory of its own, took ResNet's 16 x 64 x 112 x 112 7.2 against 5.0 ms (2 threads).
        int64_t zeroed = 0;  // input rows [0, zeroed) are zeroed
        for (int64_t o = n * out_plane; o < (n + 1) * out_plane; ++o) {
          const int64_t* io = idx + o * g.c;
          const T* dyo = dy + o * g.c;
          for (int64_t k = 0; k < g.c; ++k) {
            const int64_t i = io[k];
            if (i < 0) continue;  // a window that missed the input
            if (i >= zeroed * g.w) {
              check(i);
              const int64_t rows = i / g.w + 1;
              std::fill(dxn + zeroed * g.w * g.c, dxn + rows * g.w * g.c, T(0));
              zeroed = rows;
            }
            dxn[i * g.c + k] += dyo[k];
          }
        }
        std::fill(dxn + zeroed * g.w * g.c, dxn + in_plane * g.c, T(0));
      }
    });
    return;
  }
  ctx.pool.ParallelFor(g.planes, GrainFor(in_plane + out_plane), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      T* dxp = dx + plane * in_plane;
      std::fill(dxp, dxp + in_plane, T(0));
      const T* dyp = dy + plane * out_plane;
      const int64_t* ip = idx + plane * out_plane;
      for (int64_t o = 0; o < out_plane; ++o) {
        if (ip[o] < 0) continue;  // a window that missed the input
        check(ip[o]);
        dxp[ip[o]] += dyp[o];
      }
    }
  });
}

// Calls fn(out_index, y0, y1, x0, x1, divisor) for each output of a plane: its window clamped to the
// input, and PyTorch's divisor (the window within the padded input, or only its valid part). The
// window ends min(start + k, in + p_end) and the divisor are formed without overflow for huge kernels.
template <typename Fn>
void ForEachAvgWindow(const PoolGeom& g, Fn&& fn) {
  const int64_t kh = g.p.kernel[0], kw = g.p.kernel[1], sh = g.p.win.stride[0], sw = g.p.win.stride[1];
  const int64_t ph = g.p.win.padding[0], pw = g.p.win.padding[1];
  const int64_t peh = g.p.win.padding_end[0], pew = g.p.win.padding_end[1];
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const int64_t ys = oy * sh - ph, ye = kh < g.h + peh - ys ? ys + kh : g.h + peh;
    const int64_t y0 = std::max<int64_t>(ys, 0), y1 = std::min(ye, g.h);
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const int64_t xs = ox * sw - pw, xe = kw < g.w + pew - xs ? xs + kw : g.w + pew;
      const int64_t x0 = std::max<int64_t>(xs, 0), x1 = std::min(xe, g.w);
      const double divisor = g.p.count_include_pad ? static_cast<double>(ye - ys) * static_cast<double>(xe - xs)
                                                   : static_cast<double>((y1 - y0) * (x1 - x0));
      fn(oy * g.ow + ox, y0, y1, x0, x1, divisor);
    }
  }
}

// Adaptive windows: [floor(i*in/out), ceil((i+1)*in/out)).
template <typename Fn>
void ForEachAdaptiveWindow(const PoolGeom& g, Fn&& fn) {
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const int64_t y0 = oy * g.h / g.oh, y1 = ((oy + 1) * g.h + g.oh - 1) / g.oh;
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const int64_t x0 = ox * g.w / g.ow, x1 = ((ox + 1) * g.w + g.ow - 1) / g.ow;
      fn(oy * g.ow + ox, y0, y1, x0, x1, static_cast<double>((y1 - y0) * (x1 - x0)));
    }
  }
}

// Calls fn(out_index, y0, y1, x0, x1, divisor) for each output of a plane (ForEachAvgWindow or
// ForEachAdaptiveWindow).
template <PoolKind kKind, typename Fn>
void ForEachWindow(const PoolGeom& g, Fn&& fn) {
  if constexpr (kKind == PoolKind::kAvg) {
    ForEachAvgWindow(g, fn);
  } else {
    ForEachAdaptiveWindow(g, fn);
  }
}

template <typename T, PoolKind kKind>
void AvgPoolLoops(KernelContext& ctx, const Tensor& x, const Tensor& y) {
  const PoolGeom g = GeomOf(x, y, ctx.attrs, kKind);
  const T* xd = x.data<T>();
  T* yd = y.data<T>();
  const int64_t window = kKind == PoolKind::kAvg ? Taps(g) : (g.h / g.oh + 1) * (g.w / g.ow + 1);
  if (g.channels_last) {  // one image per task, C sums at a time, in the planes' order of taps
    ctx.pool.ParallelFor(g.n, GrainFor(g.c * g.oh * g.ow * window), [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        const T* xn = xd + n * g.h * g.w * g.c;
        T* yn = yd + n * g.oh * g.ow * g.c;
        ForEachWindow<kKind>(g, [&](int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1, double divisor) {
          T* yo = yn + o * g.c;
          std::fill_n(yo, g.c, T(0));
          for (int64_t iy = y0; iy < y1; ++iy) {
            for (int64_t ix = x0; ix < x1; ++ix) {
              const T* v = xn + (iy * g.w + ix) * g.c;
              for (int64_t k = 0; k < g.c; ++k) yo[k] += v[k];
            }
          }
          for (int64_t k = 0; k < g.c; ++k) yo[k] /= static_cast<T>(divisor);
        });
      }
    });
    return;
  }
  ctx.pool.ParallelFor(g.planes, GrainFor(g.oh * g.ow * window), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* xp = xd + plane * g.h * g.w;
      T* yp = yd + plane * g.oh * g.ow;
      auto avg = [&](int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1, double divisor) {
        T s = 0;
        for (int64_t iy = y0; iy < y1; ++iy) {
          for (int64_t ix = x0; ix < x1; ++ix) s += xp[iy * g.w + ix];
        }
        yp[o] = s / static_cast<T>(divisor);
      };
      ForEachWindow<kKind>(g, avg);
    }
  });
}

// dy in the call's format (a layout input); x gives only its shape.
template <typename T, PoolKind kKind>
void AvgPoolBackwardLoops(KernelContext& ctx, const Tensor& dy, const Tensor& x, const Tensor& dx) {
  const PoolGeom g = GeomOf(dx, dy, ctx.attrs, kKind);
  const T* dyd = dy.data<T>();
  T* dxd = dx.data<T>();
  const int64_t window = kKind == PoolKind::kAvg ? Taps(g) : (g.h / g.oh + 1) * (g.w / g.ow + 1);
  OF_CHECK_INTERNAL(x.shape() == dx.shape()) << "avg pool backward: x and grad_x differ";
  if (g.channels_last) {
    ctx.pool.ParallelFor(g.n, GrainFor(g.c * (g.oh * g.ow * window + g.h * g.w)), [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        T* dxn = dxd + n * g.h * g.w * g.c;
        std::fill_n(dxn, g.h * g.w * g.c, T(0));
        const T* dyn = dyd + n * g.oh * g.ow * g.c;
        ForEachWindow<kKind>(g, [&](int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1, double divisor) {
          const T* d = dyn + o * g.c;
          for (int64_t iy = y0; iy < y1; ++iy) {
            for (int64_t ix = x0; ix < x1; ++ix) {
              T* v = dxn + (iy * g.w + ix) * g.c;
              for (int64_t k = 0; k < g.c; ++k) v[k] += d[k] / static_cast<T>(divisor);
            }
          }
        });
      }
    });
    return;
  }
  ctx.pool.ParallelFor(g.planes, GrainFor(g.oh * g.ow * window + g.h * g.w), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      T* dxp = dxd + plane * g.h * g.w;
      std::fill(dxp, dxp + g.h * g.w, T(0));
      const T* dyp = dyd + plane * g.oh * g.ow;
      auto spread = [&](int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1, double divisor) {
        const T v = dyp[o] / static_cast<T>(divisor);
        for (int64_t iy = y0; iy < y1; ++iy) {
          for (int64_t ix = x0; ix < x1; ++ix) dxp[iy * g.w + ix] += v;
        }
      };
      ForEachWindow<kKind>(g, spread);
    }
  });
}

// oneDNN avg pooling (float32) -------------------------------------------------------------------------

// Right padding that makes oneDNN's output size ours (ceil mode adds a partial last window).
int64_t RightPad(const PoolGeom& g, int axis) {
  const int64_t in = axis == 0 ? g.h : g.w, out = axis == 0 ? g.oh : g.ow;
  return std::max(g.p.win.padding_end[axis],
                  (out - 1) * g.p.win.stride[axis] + g.p.kernel[axis] - in - g.p.win.padding[axis]);
}

// Whether oneDNN runs this average pooling: its descriptors are checked in int (FitsDnnl), and its
// include_padding divides by the full kernel, where PyTorch's window stops at the padded input.
bool DnnlAvgRuns(const PoolGeom& g) {
  if (std::min({g.planes, g.oh, g.ow}) == 0) return false;
  // The padded input bounds the kernel and padding; with it in int32, RightPad cannot overflow.
  if (!FitsDnnl({g.planes, g.h, g.w, g.oh, g.ow, g.p.win.stride[0], g.p.win.stride[1],
                 PaddedInput(g.h, g.p.win, 0), PaddedInput(g.w, g.p.win, 1)}) ||
      !FitsDnnl({RightPad(g, 0), RightPad(g, 1), g.h + g.p.win.padding[0] + RightPad(g, 0),
                 g.w + g.p.win.padding[1] + RightPad(g, 1)})) {
    return false;
  }
  return !g.p.count_include_pad ||
         (RightPad(g, 0) == g.p.win.padding_end[0] && RightPad(g, 1) == g.p.win.padding_end[1]);
}

dnnl::algorithm AvgAlg(const PoolGeom& g) {
  return g.p.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                               : dnnl::algorithm::pooling_avg_exclude_padding;
}

// x and y as oneDNN sees them: N*C planes of one channel, or (N, C, H, W) in NHWC order.
memory::desc AvgSrcDesc(const PoolGeom& g) {
  return g.channels_last ? DataDesc({g.n, g.c, g.h, g.w}, true) : PlainDesc({g.planes, 1, g.h, g.w});
}
memory::desc AvgDstDesc(const PoolGeom& g) {
  return g.channels_last ? DataDesc({g.n, g.c, g.oh, g.ow}, true) : PlainDesc({g.planes, 1, g.oh, g.ow});
}

dnnl::pooling_forward::desc AvgFwdDesc(const PoolGeom& g, dnnl::prop_kind prop) {
  return dnnl::pooling_forward::desc(prop, AvgAlg(g), AvgSrcDesc(g), AvgDstDesc(g),
                                     {g.p.win.stride[0], g.p.win.stride[1]}, {g.p.kernel[0], g.p.kernel[1]},
                                     {g.p.win.padding[0], g.p.win.padding[1]}, {RightPad(g, 0), RightPad(g, 1)});
}

int64_t AvgWork(const PoolGeom& g) { return g.planes * (g.h * g.w + g.oh * g.ow * Taps(g)); }

Key AvgKey(const Exec& exec, int64_t kind, const PoolGeom& g) {
  return {exec.threads, kind, g.planes, g.h, g.w, g.oh, g.ow, g.p.kernel[0], g.p.kernel[1],
          g.p.win.stride[0], g.p.win.stride[1], g.p.win.padding[0], g.p.win.padding[1], g.p.win.padding_end[0],
          g.p.win.padding_end[1], g.p.count_include_pad, g.channels_last ? g.c : 0};
}

struct AvgFwdEntry {
  dnnl::pooling_forward::primitive_desc pd;
  dnnl::pooling_forward prim;
};
struct AvgBwdEntry {
  dnnl::pooling_backward::primitive_desc pd;
  dnnl::pooling_backward prim;
};

void AvgPool2dF32(KernelContext& ctx) {
  const PoolGeom g = GeomOf(ctx.in(0), ctx.out(0), ctx.attrs, PoolKind::kAvg);
  if (!DnnlAvgRuns(g)) return AvgPoolLoops<float, PoolKind::kAvg>(ctx, ctx.in(0), ctx.out(0));
  const Exec exec = PrepareExec(ctx.pool, AvgWork(g));
  static auto* cache = new PrimitiveCache<AvgFwdEntry>();
  auto e = cache->Get(AvgKey(exec, 0, g), [&] {
    dnnl::pooling_forward::primitive_desc pd(AvgFwdDesc(g, dnnl::prop_kind::forward_inference), DefaultAttr(),
                                             Engine());
    return AvgFwdEntry{pd, dnnl::pooling_forward(pd)};
  });
  dnnl::stream& stream = exec.stream;
  e->prim.execute(stream, {{DNNL_ARG_SRC, memory(e->pd.src_desc(), Engine(), ctx.in(0).raw_data())},
                           {DNNL_ARG_DST, memory(e->pd.dst_desc(), Engine(), ctx.out(0).raw_data())},
                           {DNNL_ARG_SCRATCHPAD, Scratchpad(e->pd)}});
  stream.wait();
}

// Inputs (grad_y, x); grad_y in the call's format.
void AvgPool2dBackwardF32(KernelContext& ctx) {
  const TensorPtr& dy = ctx.inputs[0];
  const PoolGeom g = GeomOf(ctx.out(0), *dy, ctx.attrs, PoolKind::kAvg);
  if (!DnnlAvgRuns(g)) return AvgPoolBackwardLoops<float, PoolKind::kAvg>(ctx, *dy, ctx.in(1), ctx.out(0));
  const Exec exec = PrepareExec(ctx.pool, AvgWork(g));
  static auto* cache = new PrimitiveCache<AvgBwdEntry>();
  auto e = cache->Get(AvgKey(exec, 1, g), [&] {
    const dnnl::pooling_forward::primitive_desc hint(AvgFwdDesc(g, dnnl::prop_kind::forward_training), DefaultAttr(),
                                                     Engine());
    dnnl::pooling_backward::desc desc(AvgAlg(g), AvgSrcDesc(g), AvgDstDesc(g),
                                      {g.p.win.stride[0], g.p.win.stride[1]}, {g.p.kernel[0], g.p.kernel[1]},
                                      {g.p.win.padding[0], g.p.win.padding[1]}, {RightPad(g, 0), RightPad(g, 1)});
    dnnl::pooling_backward::primitive_desc pd(desc, DefaultAttr(), Engine(), hint);
    return AvgBwdEntry{pd, dnnl::pooling_backward(pd)};
  });
  dnnl::stream& stream = exec.stream;
  e->prim.execute(stream, {{DNNL_ARG_DIFF_DST, memory(e->pd.diff_dst_desc(), Engine(), dy->raw_data())},
                           {DNNL_ARG_DIFF_SRC, memory(e->pd.diff_src_desc(), Engine(), ctx.out(0).raw_data())},
                           {DNNL_ARG_SCRATCHPAD, Scratchpad(e->pd)}});
  stream.wait();
}

template <typename T>
void AvgPool2dRef(KernelContext& ctx) {
  AvgPoolLoops<T, PoolKind::kAvg>(ctx, ctx.in(0), ctx.out(0));
}
template <typename T>
void AvgPool2dBackwardRef(KernelContext& ctx) {
  AvgPoolBackwardLoops<T, PoolKind::kAvg>(ctx, ctx.in(0), ctx.in(1), ctx.out(0));
}
template <typename T>
void AdaptiveAvgPool2dKernel(KernelContext& ctx) {
  AvgPoolLoops<T, PoolKind::kAdaptive>(ctx, ctx.in(0), ctx.out(0));
}
template <typename T>
void AdaptiveAvgPool2dBackwardKernel(KernelContext& ctx) {
  AvgPoolBackwardLoops<T, PoolKind::kAdaptive>(ctx, ctx.in(0), ctx.in(1), ctx.out(0));
}

// ---- autograd -------------------------------------------------------------------------------------

std::vector<TensorPtr> MaxPool2dBackward(const BackwardContext& ctx) {
  static const OpDef& bwd = OpRegistry::Global().Get("max_pool2d_backward");
  const TensorPtr& dy = ctx.grad_outputs[0];
  if (!dy || !ctx.needs_input_grad[0]) return {nullptr};
  return {Apply1(bwd, {dy, ctx.outputs[1], ctx.inputs[0]}, ctx.attrs)};
}
std::vector<TensorPtr> AvgPool2dBackward(const BackwardContext& ctx) {
  static const OpDef& bwd = OpRegistry::Global().Get("avg_pool2d_backward");
  const TensorPtr& dy = ctx.grad_outputs[0];
  if (!dy || !ctx.needs_input_grad[0]) return {nullptr};
  return {Apply1(bwd, {dy, ctx.inputs[0]}, ctx.attrs)};
}
std::vector<TensorPtr> AdaptiveAvgPool2dBackward(const BackwardContext& ctx) {
  static const OpDef& bwd = OpRegistry::Global().Get("adaptive_avg_pool2d_backward");
  const TensorPtr& dy = ctx.grad_outputs[0];
  if (!dy || !ctx.needs_input_grad[0]) return {nullptr};
  return {Apply1(bwd, {dy, ctx.inputs[0]}, ctx.attrs)};
}

std::vector<AttrSpec> PoolAttrs(PoolKind kind) {
  std::vector<AttrSpec> attrs = {{"kernel_size", std::vector<int64_t>{}, true},
                                 {"stride", std::vector<int64_t>{}},
                                 {"padding", std::vector<int64_t>{0, 0}},
                                 {"ceil_mode", false}};
  if (kind == PoolKind::kMax) attrs.push_back({"dilation", std::vector<int64_t>{1, 1}});
  if (kind == PoolKind::kAvg) attrs.push_back({"count_include_pad", true});
  attrs.push_back({"padding_end", std::vector<int64_t>{}});  // empty (the default): `padding`, symmetric
  return attrs;
}

Attrs PoolCallAttrs(const ops::Pool2dOptions& o, PoolKind kind, const std::vector<int64_t>& padding_end = {}) {
  Attrs attrs{{"kernel_size", o.kernel_size}, {"stride", o.stride}, {"padding", o.padding}, {"ceil_mode", o.ceil_mode}};
  if (kind == PoolKind::kMax) attrs.Set("dilation", o.dilation);
  if (kind == PoolKind::kAvg) attrs.Set("count_include_pad", o.count_include_pad);
  if (!padding_end.empty()) attrs.Set("padding_end", padding_end);
  return attrs;
}

}  // namespace

namespace ops {
TensorPtr MaxPool2d(const TensorPtr& x, const Pool2dOptions& options) {
  static const OpDef& op = OpRegistry::Global().Get("max_pool2d");
  return Apply(op, {x}, PoolCallAttrs(options, PoolKind::kMax))[0];
}
TensorPtr MaxPool2d(const TensorPtr& x, const Pool2dOptions& options, const std::vector<int64_t>& padding_end) {
  return MaxPool2dWithIndices(x, options, padding_end).first;
}
std::pair<TensorPtr, TensorPtr> MaxPool2dWithIndices(const TensorPtr& x, const Pool2dOptions& options,
                                                     const std::vector<int64_t>& padding_end) {
  static const OpDef& op = OpRegistry::Global().Get("max_pool2d");
  std::vector<TensorPtr> r = Apply(op, {x}, PoolCallAttrs(options, PoolKind::kMax, padding_end));
  return {std::move(r[0]), std::move(r[1])};
}
TensorPtr AvgPool2d(const TensorPtr& x, const Pool2dOptions& options) { return AvgPool2d(x, options, {}); }
TensorPtr AvgPool2d(const TensorPtr& x, const Pool2dOptions& options, const std::vector<int64_t>& padding_end) {
  static const OpDef& op = OpRegistry::Global().Get("avg_pool2d");
  OF_CHECK(options.dilation == std::vector<int64_t>({1, 1}))
      << "avg_pool2d: dilation is not supported, got " << AttrValueToString(options.dilation);
  return Apply1(op, {x}, PoolCallAttrs(options, PoolKind::kAvg, padding_end));
}
TensorPtr AdaptiveAvgPool2d(const TensorPtr& x, const std::vector<int64_t>& output_size) {
  static const OpDef& op = OpRegistry::Global().Get("adaptive_avg_pool2d");
  return Apply1(op, {x}, {{"output_size", output_size}});
}
}  // namespace ops

void RegisterPoolingOps(OpRegistry& registry) {
  registry.Register(OpDef{
      .name = "max_pool2d",
      .inputs = {"x"},
      .outputs = {"y", "indices"},
      .attrs = PoolAttrs(PoolKind::kMax),
      .infer = InferMaxPool,
      .backward = MaxPool2dBackward,
      .kernels = cpu::WithHalfInFloat32(
          {{DeviceType::kCPU, {DataType::kFloat32}, MaxPool2dKernel<float>, /*channels_last=*/true},
           {DeviceType::kCPU, {DataType::kFloat64}, MaxPool2dKernel<double>, /*channels_last=*/true}}),
      .layout = LayoutOfInputs,
      .layout_inputs = {0},
      .layout_outputs = {0, 1},
  });
  registry.Register(OpDef{
      .name = "max_pool2d_backward",
      .inputs = {"grad_y", "indices", "x"},
      .outputs = {"grad_x"},
      .attrs = PoolAttrs(PoolKind::kMax),
      .infer = InferMaxPoolBackward,
      .kernels = cpu::WithHalfInFloat32(
          {{DeviceType::kCPU, {DataType::kFloat32}, MaxPool2dBackwardKernel<float>, /*channels_last=*/true},
           {DeviceType::kCPU, {DataType::kFloat64}, MaxPool2dBackwardKernel<double>, /*channels_last=*/true}}),
      .strided_inputs = true,  // x gives only its shape
      .layout = LayoutOfInputs,
      .layout_inputs = {0, 1},
      .layout_outputs = {0},
  });
  registry.Register(OpDef{
      .name = "avg_pool2d",
      .inputs = {"x"},
      .outputs = {"y"},
      .attrs = PoolAttrs(PoolKind::kAvg),
      .infer = InferAvgPool,
      .backward = AvgPool2dBackward,
      .kernels = cpu::WithHalfInFloat32(
          {{DeviceType::kCPU, {DataType::kFloat32}, Guarded<AvgPool2dF32>, /*channels_last=*/true},
           {DeviceType::kCPU, {DataType::kFloat64}, AvgPool2dRef<double>, /*channels_last=*/true}}),
      .layout = LayoutOfInputs,
      .layout_inputs = {0},
      .layout_outputs = {0},
  });
  registry.Register(OpDef{
      .name = "avg_pool2d_backward",
      .inputs = {"grad_y", "x"},
      .outputs = {"grad_x"},
      .attrs = PoolAttrs(PoolKind::kAvg),
      .infer = InferAvgPoolBackward,
      .kernels = cpu::WithHalfInFloat32(
          {{DeviceType::kCPU, {DataType::kFloat32}, Guarded<AvgPool2dBackwardF32>, /*channels_last=*/true},
           {DeviceType::kCPU, {DataType::kFloat64}, AvgPool2dBackwardRef<double>, /*channels_last=*/true}}),
      .strided_inputs = true,  // x gives only its shape
      .layout = LayoutOfInputs,
      .layout_inputs = {0},
      .layout_outputs = {0},
  });
  registry.Register(OpDef{
      .name = "adaptive_avg_pool2d",
      .inputs = {"x"},
      .outputs = {"y"},
      .attrs = {{"output_size", std::vector<int64_t>{}, true}},
      .infer = InferAdaptiveAvgPool,
      .backward = AdaptiveAvgPool2dBackward,
      .kernels = cpu::WithHalfInFloat32(
          {{DeviceType::kCPU, {DataType::kFloat32}, AdaptiveAvgPool2dKernel<float>, /*channels_last=*/true},
           {DeviceType::kCPU, {DataType::kFloat64}, AdaptiveAvgPool2dKernel<double>, /*channels_last=*/true}}),
      .layout = LayoutOfInputs,
      .layout_inputs = {0},
      .layout_outputs = {0},
  });
  registry.Register(OpDef{
      .name = "adaptive_avg_pool2d_backward",
      .inputs = {"grad_y", "x"},
      .outputs = {"grad_x"},
      .attrs = {{"output_size", std::vector<int64_t>{}, true}},
      .infer = InferAdaptiveAvgPoolBackward,
      .kernels = cpu::WithHalfInFloat32(
          {{DeviceType::kCPU, {DataType::kFloat32}, AdaptiveAvgPool2dBackwardKernel<float>, /*channels_last=*/true},
           {DeviceType::kCPU, {DataType::kFloat64}, AdaptiveAvgPool2dBackwardKernel<double>, /*channels_last=*/true}}),
      .strided_inputs = true,  // x gives only its shape
      .layout = LayoutOfInputs,
      .layout_inputs = {0},
      .layout_outputs = {0},
  });
}

}  // namespace oneflow
