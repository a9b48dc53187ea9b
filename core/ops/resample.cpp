// interpolate (nearest, nearest-exact, linear, bicubic) with its gradient op; pixel_shuffle and pixel_unshuffle.
//
// interpolate is separable: along each spatial dim, output coordinate o reads a few input coordinates
// with weights (taps: one for the nearest modes, two for linear, four for bicubic, as PyTorch's
// upsample kernels do). x is seen as (N * C, A, B, C') with missing leading spatial dims of size 1
// (whose taps are the identity), and one kernel applies three tap tables: each output row (n, a, b)
// sums the input rows its (a, b) taps name, weighted, each gathered along the last dim by that dim's
// taps. The gradient op applies the transposed tables (input coordinate i -> the outputs that read it
// and their weights) with the same kernel, so it is a gather over dx rows: one task owns each row, no
// races, and the sums' order is fixed.
//
// pixel_shuffle and pixel_unshuffle move elements as bits (every dtype); each output row of the last
// dim is written contiguously from r strided input streams (shuffle) or one stride-r stream
// (unshuffle). Each is the other's gradient.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/ranges.h>

#include "core/op/dispatch.h"
#include "core/ops/cpu/element_bits.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/register.h"
#include "core/ops/resample.h"

namespace oneflow {
namespace {

using ops::InterpolateMode;

constexpr int64_t kGrain = int64_t{1} << 15;
constexpr int64_t kMaxSpatial = 3;
// Source rows one output row of a linear forward combines at most (2 x 2 for trilinear).
constexpr int64_t kMaxSourceRows = 4;
const char* const kScaleAttrs[kMaxSpatial] = {"scale_0", "scale_1", "scale_2"};

// Two sizes that cannot be the same: both known and different, or two different symbols.
bool Conflict(Dim a, Dim b) { return a != b && !a.is_unknown() && !b.is_unknown() && a.is_known() == b.is_known(); }

// ---- interpolate: attributes and shapes -------------------------------------------------------------

struct InterpSpec {
  InterpolateMode mode;
  bool align_corners;
  int64_t spatial;  // 1-3
  std::array<double, kMaxSpatial> scale;
};

InterpSpec ParseInterp(const TensorMeta& x, const Attrs& attrs) {
  const Shape& s = x.shape;
  OF_CHECK(x.dtype->is_floating_point()) << "x must be floating point, got " << x.dtype;
  OF_CHECK(s.ndim() >= 3 && s.ndim() <= 5) << "x must be (N, C, spatial...) with 1 to 3 spatial dims, got " << s;
  InterpSpec spec{ops::InterpolateModeFromName(attrs.Get<std::string>("mode")), attrs.Bool("align_corners"),
                  s.ndim() - 2, {}};
  OF_CHECK(!spec.align_corners || spec.mode == InterpolateMode::kLinear || spec.mode == InterpolateMode::kBicubic)
      << "align_corners is only for linear and bicubic interpolation; " << ops::InterpolateModeName(spec.mode)
      << " takes none (as PyTorch)";
  for (int64_t k = 0; k < kMaxSpatial; ++k) {
    const double v = attrs.Float(kScaleAttrs[k]);
    OF_CHECK(std::isfinite(v) && v >= 0) << "scale_factor[" << k << "] is " << v << "; it must be finite and >= 0";
    OF_CHECK(k < spec.spatial || v == 0) << "scale_factor[" << k << "] is " << v << " but x " << s << " has only "
                                         << spec.spatial << " spatial dims";
    spec.scale[static_cast<size_t>(k)] = v;
  }
  const std::vector<int64_t>& size = attrs.Ints("size");
  OF_CHECK(static_cast<int64_t>(size.size()) == spec.spatial)
      << "size [" << fmt::format("{}", fmt::join(size, ", ")) << "] has " << size.size() << " entries but x " << s
      << " has " << spec.spatial << " spatial dims";
  return spec;
}

// The output's spatial size k for an input size `in`.
Dim OutputSize(const InterpSpec& spec, const Shape& x, const std::vector<int64_t>& size, int64_t k) {
  const Dim in = x[2 + k];
  OF_CHECK(!(in == 0)) << "x " << x << " has an empty spatial dim " << 2 + k << "; interpolate needs sizes >= 1";
  const int64_t want = size[static_cast<size_t>(k)];
  const double scale = spec.scale[static_cast<size_t>(k)];
  OF_CHECK(want >= 0) << "size[" << k << "] is " << want << "; it must be >= 1, or 0 to take floor(in * scale_factor)";
  if (want > 0) return Dim(want);
  OF_CHECK(scale > 0) << "size[" << k << "] is 0 and scale_factor[" << k << "] is 0; give one of them";
  if (!in.is_known()) return Dim::Unknown();
  const double out = std::floor(static_cast<double>(in.value()) * scale);
  OF_CHECK(out >= 1 && out < 9.2e18) << "scale_factor[" << k << "] = " << scale << " gives spatial dim " << 2 + k
                                     << " of x " << x << " the size " << out << "; it must be >= 1 and fit int64";
  return Dim(static_cast<int64_t>(out));
}

Shape InterpolatedShape(const InterpSpec& spec, const Shape& x, const Attrs& attrs) {
  const std::vector<int64_t>& size = attrs.Ints("size");
  Shape out{x[0], x[1]};
  for (int64_t k = 0; k < spec.spatial; ++k) out.push_back(OutputSize(spec, x, size, k));
  return out;
}

std::vector<TensorMeta> InferInterpolate(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta& x = in[0];
  const InterpSpec spec = ParseInterp(x, attrs);
  return {{x.dtype, InterpolatedShape(spec, x.shape, attrs), x.device}};
}

// (dy, x) -> dx of x's meta; x gives only its shape.
std::vector<TensorMeta> InferInterpolateBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta &dy = in[0], &x = in[1];
  const InterpSpec spec = ParseInterp(x, attrs);
  const Shape y = InterpolatedShape(spec, x.shape, attrs);
  bool ok = dy.dtype == x.dtype && dy.shape.ndim() == y.ndim();
  for (int64_t d = 0; ok && d < y.ndim(); ++d) ok = !Conflict(dy.shape[d], y[d]);
  OF_CHECK(ok) << "dy " << dy.dtype << " " << dy.shape << " must be the interpolated x: " << x.dtype << " " << y;
  return {x};
}

// ---- interpolate: taps ------------------------------------------------------------------------------

// Per output coordinate o, entries [offset[o], offset[o + 1]) of (index, weight).
template <typename A>
struct Taps {
  std::vector<int64_t> offset{0}, index;
  std::vector<A> weight;
  int64_t uniform = 1;  // entries per coordinate when all have the same count, else 0

  int64_t size() const { return static_cast<int64_t>(offset.size()) - 1; }
  void Add(int64_t i, A w) {
    index.push_back(i);
    weight.push_back(w);
  }
  void EndRow() {
    offset.push_back(static_cast<int64_t>(index.size()));
    const int64_t n = offset[offset.size() - 1] - offset[offset.size() - 2];
    if (offset.size() == 2) uniform = n;
    if (uniform != n) uniform = 0;
  }
};

// The forward taps of one dim (in -> out), as PyTorch's upsample kernels (UpSample.h): the nearest
// modes use a float32 scale, linear and bicubic the accumulation type A.
template <typename A>
Taps<A> ForwardTaps(const InterpSpec& spec, int64_t in, int64_t out, double given_scale) {
  Taps<A> t;
  if (spec.mode == InterpolateMode::kNearest || spec.mode == InterpolateMode::kNearestExact) {
    const float scale = given_scale > 0 ? static_cast<float>(1.0 / given_scale)
                                        : static_cast<float>(in) / static_cast<float>(out);
    for (int64_t o = 0; o < out; ++o) {
      const float f = spec.mode == InterpolateMode::kNearest
                          ? std::floor(static_cast<float>(o) * scale)
                          : std::floor(static_cast<float>((static_cast<double>(o) + 0.5) * static_cast<double>(scale)));
      // Compared before the conversion: a tiny given scale_factor makes the scale infinite (and 0 * inf
      // NaN, which stands for 0 * scale = 0).
      t.Add(!(f > 0) ? 0 : f >= static_cast<float>(in - 1) ? in - 1 : static_cast<int64_t>(f), A(1));
      t.EndRow();
    }
    return t;
  }
  A scale;
  if (spec.align_corners) {
    scale = out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0);
  } else {
    scale = given_scale > 0 ? static_cast<A>(1.0 / given_scale) : static_cast<A>(in) / static_cast<A>(out);
  }
  const bool cubic = spec.mode == InterpolateMode::kBicubic;
  for (int64_t o = 0; o < out; ++o) {
    A src = spec.align_corners ? scale * static_cast<A>(o) : scale * (static_cast<A>(o) + A(0.5)) - A(0.5);
    if (cubic) {
      // PyTorch's upsample_bicubic2d: src not clamped below, the 4 taps i0 - 1 .. i0 + 2 clamped to the
      // edge, the cubic convolution's weights of t.
      const A f = std::floor(src);
      const int64_t i0 = f >= static_cast<A>(in - 1) ? in - 1 : static_cast<int64_t>(f);
      const A t1 = std::min(std::max(src - static_cast<A>(i0), A(0)), A(1));
      constexpr A kA = A(-0.75);
      const auto near = [&](A v) { return ((kA + 2) * v - (kA + 3)) * v * v + 1; };                // |v| <= 1
      const auto far = [&](A v) { return ((kA * v - 5 * kA) * v + 8 * kA) * v - 4 * kA; };  // 1 < |v| < 2
      const A w[4] = {far(t1 + 1), near(t1), near(1 - t1), far(2 - t1)};
      for (int64_t k = 0; k < 4; ++k) t.Add(std::clamp<int64_t>(i0 - 1 + k, 0, in - 1), w[k]);
      t.EndRow();
      continue;
    }
    if (src < A(0)) src = A(0);
    // A given scale_factor smaller than out / in maps past the last input: clamped there, with the
    // weight in [0, 1], as PyTorch's guard_index_and_lambda.
    const int64_t i0 = src >= static_cast<A>(in - 1) ? in - 1 : static_cast<int64_t>(src);
    const int64_t step = i0 < in - 1 ? 1 : 0;
    const A l1 = std::min(std::max(src - static_cast<A>(i0), A(0)), A(1));
    t.Add(i0, A(1) - l1);
    t.Add(i0 + step, l1);
    t.EndRow();
  }
  return t;
}

// The transpose: per input coordinate, the outputs that read it and their weights (output order).
template <typename A>
Taps<A> Transposed(const Taps<A>& t, int64_t in) {
  std::vector<int64_t> count(static_cast<size_t>(in) + 1, 0);
  for (int64_t i : t.index) ++count[static_cast<size_t>(i) + 1];
  Taps<A> r;
  r.offset.assign(static_cast<size_t>(in) + 1, 0);
  for (int64_t i = 0; i < in; ++i) r.offset[static_cast<size_t>(i) + 1] = r.offset[static_cast<size_t>(i)] + count[static_cast<size_t>(i) + 1];
  r.index.resize(t.index.size());
  r.weight.resize(t.index.size());
  std::vector<int64_t> fill(r.offset.begin(), r.offset.end() - 1);
  for (int64_t o = 0; o < t.size(); ++o) {
    for (int64_t e = t.offset[static_cast<size_t>(o)]; e < t.offset[static_cast<size_t>(o) + 1]; ++e) {
      const size_t slot = static_cast<size_t>(fill[static_cast<size_t>(t.index[static_cast<size_t>(e)])]++);
      r.index[slot] = o;
      r.weight[slot] = t.weight[static_cast<size_t>(e)];
    }
  }
  r.uniform = 0;
  return r;
}

// dst (rows, A, B, C) from src (rows, IA, IB, IC): dst[n, a, b, c] = sum over the taps (i, wa) of a,
// (j, wb) of b and (k, wc) of c of wa * wb * wc * src[n, i, j, k]. `copy`: every tap is one entry of
// weight 1 (nearest forward), so rows are plain gathers.
template <typename T, typename A>
void ApplyTaps(const T* src, T* dst, int64_t rows, const std::array<int64_t, 3>& in, const std::array<Taps<A>, 3>& taps,
               ThreadPool& pool) {
  const Taps<A>&ta = taps[0], &tb = taps[1], &tc = taps[2];
  const int64_t oa = ta.size(), ob = tb.size(), oc = tc.size();
  const bool copy = ta.uniform == 1 && tb.uniform == 1 && tc.uniform == 1 &&
                    std::all_of(tc.weight.begin(), tc.weight.end(), [](A w) { return w == A(1); }) &&
                    std::all_of(ta.weight.begin(), ta.weight.end(), [](A w) { return w == A(1); }) &&
                    std::all_of(tb.weight.begin(), tb.weight.end(), [](A w) { return w == A(1); });
  const int64_t taps_per_row = std::max<int64_t>(1, static_cast<int64_t>(tc.index.size()));
  pool.ParallelFor(rows * oa * ob, std::max<int64_t>(1, kGrain / taps_per_row), [&](int64_t begin, int64_t end) {
    std::vector<A> acc(static_cast<size_t>(oc));
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r % ob, a = (r / ob) % oa, n = r / (ob * oa);
      T* out = dst + r * oc;
      const T* plane = src + n * in[0] * in[1] * in[2];
      if (copy) {
        const T* s = plane + (ta.index[static_cast<size_t>(a)] * in[1] + tb.index[static_cast<size_t>(b)]) * in[2];
        for (int64_t c = 0; c < oc; ++c) out[c] = s[tc.index[static_cast<size_t>(c)]];
        continue;
      }
      const int64_t* ki = tc.index.data();
      const A* kw = tc.weight.data();
      // Linear forward: the (a, b) taps' source rows (2 for bilinear) combined in one pass per output.
      const int64_t na = ta.offset[static_cast<size_t>(a) + 1] - ta.offset[static_cast<size_t>(a)];
      const int64_t nb = tb.offset[static_cast<size_t>(b) + 1] - tb.offset[static_cast<size_t>(b)];
      if (tc.uniform == 2 && na * nb <= kMaxSourceRows) {
        std::array<A, kMaxSourceRows> w{};
        std::array<const T*, kMaxSourceRows> rows_in{};
        int64_t n_in = 0;
        for (int64_t ea = ta.offset[static_cast<size_t>(a)]; ea < ta.offset[static_cast<size_t>(a) + 1]; ++ea) {
          for (int64_t eb = tb.offset[static_cast<size_t>(b)]; eb < tb.offset[static_cast<size_t>(b) + 1]; ++eb, ++n_in) {
            w[static_cast<size_t>(n_in)] = ta.weight[static_cast<size_t>(ea)] * tb.weight[static_cast<size_t>(eb)];
            rows_in[static_cast<size_t>(n_in)] =
                plane + (ta.index[static_cast<size_t>(ea)] * in[1] + tb.index[static_cast<size_t>(eb)]) * in[2];
          }
        }
        if (n_in == 2) {
          const T *s0 = rows_in[0], *s1 = rows_in[1];
          const A w0 = w[0], w1 = w[1];
          for (int64_t c = 0; c < oc; ++c) {
            const int64_t k0 = ki[2 * c], k1 = ki[2 * c + 1];
            const A a0 = kw[2 * c], a1 = kw[2 * c + 1];
            out[c] = static_cast<T>(w0 * (a0 * static_cast<A>(s0[k0]) + a1 * static_cast<A>(s0[k1])) +
                                    w1 * (a0 * static_cast<A>(s1[k0]) + a1 * static_cast<A>(s1[k1])));
          }
        } else {
          for (int64_t c = 0; c < oc; ++c) {
            const int64_t k0 = ki[2 * c], k1 = ki[2 * c + 1];
            const A a0 = kw[2 * c], a1 = kw[2 * c + 1];
            A v = 0;
            for (int64_t j = 0; j < n_in; ++j) {
              const T* sj = rows_in[static_cast<size_t>(j)];
              v += w[static_cast<size_t>(j)] * (a0 * static_cast<A>(sj[k0]) + a1 * static_cast<A>(sj[k1]));
            }
            out[c] = static_cast<T>(v);
          }
        }
        continue;
      }
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t ea = ta.offset[static_cast<size_t>(a)]; ea < ta.offset[static_cast<size_t>(a) + 1]; ++ea) {
        for (int64_t eb = tb.offset[static_cast<size_t>(b)]; eb < tb.offset[static_cast<size_t>(b) + 1]; ++eb) {
          const A w = ta.weight[static_cast<size_t>(ea)] * tb.weight[static_cast<size_t>(eb)];
          const T* s = plane + (ta.index[static_cast<size_t>(ea)] * in[1] + tb.index[static_cast<size_t>(eb)]) * in[2];
          const int64_t* off = tc.offset.data();
          for (int64_t c = 0; c < oc; ++c) {
            A sum = 0;
            for (int64_t e = off[c]; e < off[c + 1]; ++e) sum += kw[e] * static_cast<A>(s[ki[e]]);
            acc[static_cast<size_t>(c)] += w * sum;
          }
        }
      }
      for (int64_t c = 0; c < oc; ++c) out[c] = static_cast<T>(acc[static_cast<size_t>(c)]);
    }
  });
}

// x's geometry as (rows, 3 spatial sizes), leading spatial dims of size 1 added.
std::array<int64_t, 3> Spatial3(const Shape& s) {
  std::array<int64_t, 3> out = {1, 1, 1};
  const int64_t k = s.ndim() - 2;
  for (int64_t d = 0; d < k; ++d) out[static_cast<size_t>(3 - k + d)] = s[2 + d].value();
  return out;
}

template <typename A>
std::array<Taps<A>, 3> AllTaps(const InterpSpec& spec, const std::array<int64_t, 3>& in, const std::array<int64_t, 3>& out) {
  std::array<Taps<A>, 3> taps;
  for (int64_t d = 0; d < 3; ++d) {
    const int64_t k = d - (3 - spec.spatial);  // the spatial dim, < 0 for an added one
    if (k < 0) {
      taps[static_cast<size_t>(d)].Add(0, A(1));
      taps[static_cast<size_t>(d)].EndRow();
    } else {
      taps[static_cast<size_t>(d)] = ForwardTaps<A>(spec, in[static_cast<size_t>(d)], out[static_cast<size_t>(d)],
                                                    spec.scale[static_cast<size_t>(k)]);
    }
  }
  return taps;
}

template <bool kBackward>
void InterpolateKernel(KernelContext& ctx) {
  const Tensor& x = kBackward ? ctx.in(1) : ctx.in(0);
  const Tensor& src = ctx.in(0);
  const Tensor& dst = ctx.out(0);
  const InterpSpec spec = ParseInterp(MetaOf(x), ctx.attrs);
  const Shape& y = kBackward ? src.shape() : dst.shape();
  const std::array<int64_t, 3> in = Spatial3(x.shape()), out = Spatial3(y);
  const int64_t rows = x.shape()[0].value() * x.shape()[1].value();
  if (dst.numel() == 0) return;
  VisitDType(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      using A = T;  // float32 accumulates in float32 as PyTorch's CPU kernels, float64 in float64
      std::array<Taps<A>, 3> taps = AllTaps<A>(spec, in, out);
      if constexpr (kBackward) {
        for (size_t d = 0; d < 3; ++d) taps[d] = Transposed(taps[d], in[d]);
        ApplyTaps<T, A>(src.data<const T>(), dst.data<T>(), rows, out, taps, ctx.pool);
      } else {
        ApplyTaps<T, A>(src.data<const T>(), dst.data<T>(), rows, in, taps, ctx.pool);
      }
    }
  });
}

std::vector<TensorPtr> InterpolateBackward(const BackwardContext& ctx) {
  static const OpDef& grad_op = OpRegistry::Global().Get("interpolate_backward");
  return {Apply1(grad_op, {ctx.grad_outputs[0], ctx.inputs[0]}, ctx.attrs)};
}
// interpolate_backward is linear in dy, with interpolate as its adjoint.
std::vector<TensorPtr> InterpolateBackwardBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("interpolate");
  return {Apply1(op, {ctx.grad_outputs[0]}, ctx.attrs), nullptr};
}

// ---- pixel_shuffle, pixel_unshuffle -----------------------------------------------------------------

int64_t Factor(const Attrs& attrs, std::string_view name) {
  const int64_t r = attrs.Int(name);
  // r * r must fit int64 (3037000499^2 < 2^63).
  OF_CHECK(r >= 1 && r <= 3037000499) << name << " is " << r << "; it must be >= 1 (and its square fit int64)";
  return r;
}

void CheckBatchedImage(const Shape& x) {
  OF_CHECK(x.ndim() >= 3) << "x must be (..., C, H, W) with at least 3 dims, got " << x;
}

// A known size times r, checked.
Dim Times(Dim d, int64_t r, std::string_view name, const Shape& x) {
  if (d.is_known()) {
    int64_t v = 0;
    OF_CHECK(!__builtin_mul_overflow(d.value(), r, &v)) << name << " " << r << " times size " << d << " of x " << x
                                                        << " overflows int64";
    return Dim(v);
  }
  return r == 1 ? d : Dim::Unknown();
}

std::vector<TensorMeta> InferPixelShuffle(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape& x = in[0].shape;
  CheckBatchedImage(x);
  const int64_t r = Factor(attrs, "upscale_factor"), nd = x.ndim();
  const Dim c = x[nd - 3];
  OF_CHECK(!c.is_known() || c.value() % (r * r) == 0)
      << "the " << c << " channels of x " << x << " are not divisible by upscale_factor^2 = " << r * r;
  Shape out = x;
  out[nd - 3] = c.is_known() ? Dim(c.value() / (r * r)) : (r == 1 ? c : Dim::Unknown());
  out[nd - 2] = Times(x[nd - 2], r, "upscale_factor", x);
  out[nd - 1] = Times(x[nd - 1], r, "upscale_factor", x);
  return {{in[0].dtype, std::move(out), in[0].device}};
}

std::vector<TensorMeta> InferPixelUnshuffle(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape& x = in[0].shape;
  CheckBatchedImage(x);
  const int64_t r = Factor(attrs, "downscale_factor"), nd = x.ndim();
  Shape out = x;
  for (int64_t d = nd - 2; d < nd; ++d) {
    OF_CHECK(!x[d].is_known() || x[d].value() % r == 0)
        << "dim " << d << " of x " << x << " (size " << x[d] << ") is not divisible by downscale_factor " << r;
    out[d] = x[d].is_known() ? Dim(x[d].value() / r) : (r == 1 ? x[d] : Dim::Unknown());
  }
  out[nd - 3] = Times(x[nd - 3], r * r, "downscale_factor^2", x);
  return {{in[0].dtype, std::move(out), in[0].device}};
}

// The shuffle's geometry: batch B (the leading dims), C output channels (shuffle) or input channels
// (unshuffle), the small H and W, and r.
struct ShuffleGeom {
  int64_t batch, c, h, w, r;
};
ShuffleGeom GeomOf(const Shape& small, int64_t r, int64_t channel_divisor) {
  const int64_t nd = small.ndim();
  int64_t batch = 1;
  for (int64_t d = 0; d < nd - 3; ++d) batch *= small[d].value();
  return {batch, small[nd - 3].value() / channel_divisor, small[nd - 2].value(), small[nd - 1].value(), r};
}

void PixelShuffleKernel(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &out = ctx.out(0);
  if (out.numel() == 0) return;
  const int64_t r = ctx.attrs.Int("upscale_factor");
  const ShuffleGeom g = GeomOf(x.shape(), r, r * r);  // x is (B, C r r, H, W)
  const int64_t ow = g.w * r, rows = g.batch * g.c * g.h * r;
  cpu::VisitBits(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    const U* px = x.data<const U>();
    U* po = out.data<U>();
    ctx.pool.ParallelFor(rows, std::max<int64_t>(1, kGrain / ow), [&](int64_t begin, int64_t end) {
      for (int64_t q = begin; q < end; ++q) {
        const int64_t oh = q % (g.h * r), bc = q / (g.h * r), h = oh / r, i = oh % r;
        // Input channel bc * r * r + i * r + j, row h, for j in [0, r).
        const U* s = px + ((bc * r * r + i * r) * g.h + h) * g.w;
        U* o = po + q * ow;
        for (int64_t j = 0; j < r; ++j) {
          const U* sj = s + j * g.h * g.w;
          for (int64_t w = 0; w < g.w; ++w) o[w * r + j] = sj[w];
        }
      }
    });
  });
}

void PixelUnshuffleKernel(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &out = ctx.out(0);
  if (out.numel() == 0) return;
  const int64_t r = ctx.attrs.Int("downscale_factor");
  const ShuffleGeom g = GeomOf(out.shape(), r, r * r);  // out is (B, C r r, H, W)
  const int64_t rows = g.batch * g.c * r * r * g.h;
  cpu::VisitBits(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    const U* px = x.data<const U>();
    U* po = out.data<U>();
    ctx.pool.ParallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(g.w, 1)), [&](int64_t begin, int64_t end) {
      for (int64_t q = begin; q < end; ++q) {
        const int64_t h = q % g.h, oc = q / g.h;  // oc = (b * C + c) * r * r + i * r + j
        const int64_t j = oc % r, i = (oc / r) % r, bc = oc / (r * r);
        const U* s = px + ((bc * g.h + h) * r + i) * g.w * r + j;
        U* o = po + q * g.w;
        for (int64_t w = 0; w < g.w; ++w) o[w] = s[w * r];
      }
    });
  });
}

std::vector<TensorPtr> PixelShuffleBackward(const BackwardContext& ctx) {
  return {ops::PixelUnshuffle(ctx.grad_outputs[0], ctx.attrs.Int("upscale_factor"))};
}
std::vector<TensorPtr> PixelUnshuffleBackward(const BackwardContext& ctx) {
  return {ops::PixelShuffle(ctx.grad_outputs[0], ctx.attrs.Int("downscale_factor"))};
}

}  // namespace

namespace ops {

InterpolateMode InterpolateModeFromName(std::string_view name) {
  if (name == "nearest") return InterpolateMode::kNearest;
  if (name == "nearest-exact") return InterpolateMode::kNearestExact;
  if (name == "linear") return InterpolateMode::kLinear;
  if (name == "bicubic") return InterpolateMode::kBicubic;
  OF_THROW(InvalidArgument) << "mode is \"" << name
                            << "\"; expected \"nearest\", \"nearest-exact\", \"linear\" or \"bicubic\"";
}

std::string_view InterpolateModeName(InterpolateMode mode) {
  switch (mode) {
    case InterpolateMode::kNearest: return "nearest";
    case InterpolateMode::kNearestExact: return "nearest-exact";
    case InterpolateMode::kLinear: return "linear";
    case InterpolateMode::kBicubic: return "bicubic";
  }
  return "nearest";
}

TensorPtr Interpolate(const TensorPtr& x, const std::vector<int64_t>& size, const InterpolateOptions& options) {
  static const OpDef& op = OpRegistry::Global().Get("interpolate");
  return Apply1(op, {x},
                {{"size", size},
                 {"mode", std::string(InterpolateModeName(options.mode))},
                 {"align_corners", options.align_corners},
                 {"scale_0", options.scale_factor[0]},
                 {"scale_1", options.scale_factor[1]},
                 {"scale_2", options.scale_factor[2]}});
}

TensorPtr PixelShuffle(const TensorPtr& x, int64_t upscale_factor) {
  static const OpDef& op = OpRegistry::Global().Get("pixel_shuffle");
  return Apply1(op, {x}, {{"upscale_factor", upscale_factor}});
}
TensorPtr PixelUnshuffle(const TensorPtr& x, int64_t downscale_factor) {
  static const OpDef& op = OpRegistry::Global().Get("pixel_unshuffle");
  return Apply1(op, {x}, {{"downscale_factor", downscale_factor}});
}

}  // namespace ops

void RegisterPadOps(OpRegistry& registry);  // core/ops/pad.cpp

void RegisterResampleOps(OpRegistry& registry) {
  RegisterPadOps(registry);
  const std::vector<AttrSpec> interp_attrs = {{"size", std::vector<int64_t>{}, true},
                                              {"mode", std::string("nearest")},
                                              {"align_corners", false},
                                              {kScaleAttrs[0], 0.0},
                                              {kScaleAttrs[1], 0.0},
                                              {kScaleAttrs[2], 0.0}};
  registry.Register(OpDef{.name = "interpolate",
                          .inputs = {"x"},
                          .outputs = {"y"},
                          .attrs = interp_attrs,
                          .infer = InferInterpolate,
                          .backward = InterpolateBackward,
                          .kernels = CpuKernels(kFloatingTypes, InterpolateKernel<false>)});
  registry.Register(OpDef{.name = "interpolate_backward",
                          .inputs = {"dy", "x"},
                          .outputs = {"dx"},
                          .attrs = interp_attrs,
                          .infer = InferInterpolateBackward,
                          .backward = InterpolateBackwardBackward,
                          .kernels = CpuKernels(kFloatingTypes, InterpolateKernel<true>)});
  registry.Register(OpDef{.name = "pixel_shuffle", .inputs = {"x"}, .outputs = {"y"},
                          .attrs = {{"upscale_factor", int64_t{1}, true}}, .infer = InferPixelShuffle,
                          .backward = PixelShuffleBackward, .kernels = {{DeviceType::kCPU, kAllTypes, PixelShuffleKernel}}});
  registry.Register(OpDef{.name = "pixel_unshuffle", .inputs = {"x"}, .outputs = {"y"},
                          .attrs = {{"downscale_factor", int64_t{1}, true}}, .infer = InferPixelUnshuffle,
                          .backward = PixelUnshuffleBackward,
                          .kernels = {{DeviceType::kCPU, kAllTypes, PixelUnshuffleKernel}}});
}

}  // namespace oneflow
