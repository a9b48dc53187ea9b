// pad, interpolate, pixel_shuffle and pixel_unshuffle (core/ops/resample.h) against float64 loops
// written here; gradients by finite differences; the gradient ops against the adjoint computed here;
// errors; pad and interpolate in a lazy graph over an unknown batch dim.
#include <cmath>
#include <limits>

#include <fmt/ranges.h>

#include "core/graph/graph.h"
#include "core/op/dispatch.h"
#include "core/ops/resample.h"
#include "core/train/optimizer.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

using ops::PadMode;

const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }

std::vector<Symbol<DType>> AllDTypes() {
  std::vector<Symbol<DType>> out;
  for (DataType d : kAllTypes) out.push_back(DType::Get(d));
  return out;
}
const std::vector<Symbol<DType>> kFloating = FloatingDTypes();

// ---- pad ------------------------------------------------------------------------------------------

// The input coordinate that output coordinate c of a dim of size n with left pad l reads; -1: the fill.
int64_t PadSource(PadMode mode, int64_t c, int64_t l, int64_t n) {
  const int64_t i = c - l;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kReflect: return i < 0 ? -i : 2 * (n - 1) - i;
    case PadMode::kReplicate: return i < 0 ? 0 : n - 1;
    case PadMode::kCircular: return ((i % n) + n) % n;
  }
  return -1;
}

Shape PaddedShape(const Shape& x, const std::vector<int64_t>& pads) {
  Shape out = x;
  for (size_t k = 0; k < pads.size(); ++k) {
    const int64_t d = x.ndim() - 1 - static_cast<int64_t>(k / 2);
    out[d] = Dim(out[d].value() + pads[k]);
  }
  return out;
}

// For every output element, the flat input index it reads (-1: the fill value).
std::vector<int64_t> PadSources(const Shape& x, const std::vector<int64_t>& pads, PadMode mode) {
  const Shape out = PaddedShape(x, pads);
  std::vector<int64_t> left(static_cast<size_t>(x.ndim()), 0);
  for (size_t k = 0; k < pads.size(); k += 2) left[static_cast<size_t>(x.ndim() - 1 - static_cast<int64_t>(k / 2))] = pads[k];
  std::vector<int64_t> src;
  for (int64_t f = 0; f < out.numel(); ++f) {
    std::vector<int64_t> idx = Unravel(f, out);
    bool fill = false;
    for (int64_t d = 0; d < x.ndim(); ++d) {
      const int64_t i = PadSource(mode, idx[static_cast<size_t>(d)], left[static_cast<size_t>(d)], x[d].value());
      fill = fill || i < 0;
      idx[static_cast<size_t>(d)] = i;
    }
    src.push_back(fill ? -1 : Ravel(idx, x));
  }
  return src;
}

std::vector<double> RefPad(const TensorPtr& x, const std::vector<int64_t>& pads, PadMode mode, double value) {
  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> out;
  for (int64_t i : PadSources(x->shape(), pads, mode)) out.push_back(i < 0 ? value : xv[static_cast<size_t>(i)]);
  return out;
}

// The adjoint: every dy element summed into the input element it was read from.
std::vector<double> RefPadGrad(const Shape& x, const std::vector<int64_t>& pads, PadMode mode, const TensorPtr& dy) {
  const std::vector<double> g = ToDoubles(dy);
  std::vector<double> dx(static_cast<size_t>(x.numel()), 0.0);
  const std::vector<int64_t> src = PadSources(x, pads, mode);
  for (size_t k = 0; k < src.size(); ++k) {
    if (src[k] >= 0) dx[static_cast<size_t>(src[k])] += g[k];
  }
  return dx;
}

struct PadCase {
  Shape x;
  std::vector<int64_t> pads;
  std::vector<PadMode> modes;
};

const std::vector<PadMode> kAllModes = {PadMode::kConstant, PadMode::kReflect, PadMode::kReplicate, PadMode::kCircular};

const std::vector<PadCase>& PadCases() {
  static const std::vector<PadCase> cases = {
      {{3, 5}, {1, 2}, kAllModes},
      {{4}, {3, 3}, kAllModes},
      {{2, 3, 4}, {1, 3, 2, 0}, kAllModes},
      {{2, 3, 4, 5}, {1, 0, 0, 2, 1, 1}, kAllModes},  // three padded dims
      {{3, 4}, {2, 1, 2, 1}, kAllModes},              // every dim of a 2-D input (beyond PyTorch's)
      {{2, 3, 4}, {4, 4}, {PadMode::kCircular, PadMode::kConstant, PadMode::kReplicate}},  // pad == size
      {{2, 3, 300}, {5, 7}, kAllModes},               // rows longer than the parallel grain's share
      {{3, 5}, {-1, 2, 1, -2}, {PadMode::kConstant}},  // negative pads crop
      {{3, 5}, {-2, -3}, {PadMode::kConstant}},       // cropped to nothing
      {{0, 3}, {1, 1, 2, 0}, {PadMode::kConstant}},   // an empty x padded into a full one
      {{0, 3}, {1, 1}, kAllModes},                    // an empty x staying empty
      {{2, 3}, {}, kAllModes},                        // no pads: a copy
      {{}, {}, kAllModes},                            // 0-d
      {{2, 1, 3}, {0, 0, 2, 2}, {PadMode::kConstant, PadMode::kReplicate}},  // a size-1 dim
  };
  return cases;
}

std::string Name(const PadCase& k, PadMode mode) {
  return fmt::format("x {} pads [{}] {}", k.x, fmt::join(k.pads, ", "), ops::PadModeName(mode));
}

TEST(Pad, ForwardMatchesReference) {
  for (Symbol<DType> dt : AllDTypes()) {
    for (const PadCase& k : PadCases()) {
      for (PadMode mode : k.modes) {
        const TensorPtr x = RandomTensor(dt, k.x, -5, 5);
        const double value = mode == PadMode::kConstant ? 1.0 : 0.0;
        for (const TensorPtr& layout : Layouts(x)) {
          SCOPED_TRACE(fmt::format("{} {} strides [{}]", dt->name(), Name(k, mode), fmt::join(layout->strides(), ", ")));
          const TensorPtr y = ops::Pad(layout, k.pads, mode, value);
          ExpectTensorNear(y, dt, PaddedShape(k.x, k.pads), RefPad(x, k.pads, mode, value), 0, 0);
        }
      }
    }
    MarkCovered("pad", dt);
  }
  // A fill that only float dtypes hold, and infinities.
  const TensorPtr x = RandomTensor(DType::Float32(), {2, 2});
  ExpectTensorNear(ops::Pad(x, {1, 0}, PadMode::kConstant, -0.5), DType::Float32(), {2, 3},
                   RefPad(x, {1, 0}, PadMode::kConstant, -0.5), 0, 0);
  const double inf = std::numeric_limits<double>::infinity();
  ExpectTensorNear(ops::Pad(x, {0, 1}, PadMode::kConstant, -inf), DType::Float32(), {2, 3},
                   RefPad(x, {0, 1}, PadMode::kConstant, -inf), 0, 0);
}

TEST(Pad, BackwardOpIsTheAdjoint) {
  for (Symbol<DType> dt : kFloating) {
    for (const PadCase& k : PadCases()) {
      for (PadMode mode : k.modes) {
        if (mode == PadMode::kConstant) continue;
        SCOPED_TRACE(fmt::format("{} {}", dt->name(), Name(k, mode)));
        const TensorPtr dy = RandomTensor(dt, PaddedShape(k.x, k.pads));
        for (const TensorPtr& layout : Layouts(dy)) {
          const TensorPtr dx = Apply1(Op("pad_backward"), {layout},
                                      {{"pads", k.pads}, {"mode", std::string(ops::PadModeName(mode))}});
          ExpectTensorNear(dx, dt, k.x, RefPadGrad(k.x, k.pads, mode, dy), RtolFor(dt), AtolFor(dt));
        }
      }
    }
    MarkCovered("pad_backward", dt);
  }
}

TEST(Pad, Gradients) {
  const Symbol<DType> f64 = DType::Float64();
  for (const PadCase& k : PadCases()) {
    if (k.x.numel() == 0 || k.x.numel() > 150) continue;
    for (PadMode mode : k.modes) {
      SCOPED_TRACE(Name(k, mode));
      const TensorPtr x = RandomTensor(f64, k.x);
      x->set_requires_grad(true);
      ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return ops::Pad(in[0], k.pads, mode, 0.5 * (mode == PadMode::kConstant)); },
                           {x});
      // Second order: pad_backward's own gradient is pad.
      if (mode != PadMode::kConstant) {
        const TensorPtr dy = RandomTensor(f64, PaddedShape(k.x, k.pads));
        dy->set_requires_grad(true);
        ExpectGradientsMatch(
            [&](const std::vector<TensorPtr>& in) {
              return Apply1(Op("pad_backward"), {in[0]}, {{"pads", k.pads}, {"mode", std::string(ops::PadModeName(mode))}});
            },
            {dy});
      }
    }
  }
}

TEST(Pad, Errors) {
  const Symbol<DType> f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {2, 3});
  ExpectError([&] { ops::Pad(x, {1}); }, {"pad: ", "pads [1] has 1 entries", "even number"});
  ExpectError([&] { ops::Pad(x, {1, 1, 1, 1, 1, 1}); }, {"pad: ", "3 (left, right) pairs", "x (2, 3) has only 2 dims"});
  ExpectError([&] { ops::Pad(x, {-2, -2}); }, {"pad: ", "constant pads (-2, -2) of dim 1", "negative size -1"});
  ExpectError([&] { ops::Pad(x, {-1, 0}, PadMode::kReflect); },
              {"pad: ", "pads[0] is -1", "reflect padding needs pads >= 0"});
  ExpectError([&] { ops::Pad(x, {3, 0}, PadMode::kReflect); },
              {"pad: ", "reflect padding of dim 1 of x (size 3) needs each pad < 3", "(3, 0)"});
  ExpectError([&] { ops::Pad(x, {0, 0, 0, 2}, PadMode::kReflect); },
              {"pad: ", "reflect padding of dim 0 of x (size 2) needs each pad < 2"});
  ExpectError([&] { ops::Pad(x, {4, 0}, PadMode::kCircular); },
              {"pad: ", "circular padding of dim 1 of x (size 3) needs each pad <= 3"});
  ExpectError([&] { ops::Pad(RandomTensor(f32, {2, 0}), {1, 0}, PadMode::kReplicate); },
              {"pad: ", "replicate padding of dim 1 of x needs a non-empty dim"});
  ExpectError([&] { ops::Pad(x, {1, 1}, PadMode::kReflect, 2.0); },
              {"pad: ", "value is 2", "reflect padding takes no value"});
  ExpectError([&] { ops::Pad(RandomTensor(DType::Int8(), {2}), {1, 1}, PadMode::kConstant, 300.0); },
              {"pad: ", "value", "300"});
  ExpectError([&] { ops::Pad(x, {std::numeric_limits<int64_t>::min(), 0}); }, {"pad: ", "pads[0]", "out of range"});
  ExpectError([&] { ops::Pad(x, {std::numeric_limits<int64_t>::max(), 1}); }, {"pad: ", "overflow int64"});
  ExpectError([&] { Apply1(Op("pad"), {x}, {{"pads", std::vector<int64_t>{1, 1}}, {"mode", std::string("edge")}}); },
              {"pad: ", "mode is \"edge\"", "\"reflect\""});
  ExpectError([&] { ops::Pad(nullptr, {1, 1}); }, {"pad", "x"});
  // The gradient op: dy must be floating and a padded shape; constant mode is not its job.
  const auto grad = [&](const TensorPtr& dy, std::vector<int64_t> pads, std::string mode) {
    Apply1(Op("pad_backward"), {dy}, {{"pads", std::move(pads)}, {"mode", std::move(mode)}});
  };
  ExpectError([&] { grad(RandomTensor(f32, {2, 3}), {1, 1}, "constant"); }, {"pad_backward: ", "crop"});
  ExpectError([&] { grad(RandomTensor(f32, {2, 1}), {1, 1}, "reflect"); }, {"pad_backward: ", "dy's dim 1 of size 1", "smaller"});
  ExpectError([&] { grad(RandomTensor(f32, {2, 4}), {2, 1}, "reflect"); }, {"pad_backward: ", "reflect padding of dim 1"});
  ExpectError([&] { grad(RandomTensor(DType::Int32(), {2, 4}), {1, 1}, "reflect"); },
              {"pad_backward: ", "dy must be floating point", "int32"});
}

// ---- interpolate ----------------------------------------------------------------------------------

using ops::InterpolateMode;
using ops::InterpolateOptions;

struct Tap {
  int64_t index;
  double weight;
};

// PyTorch's taps of one dim (UpSample.h), written out independently of the kernel: the nearest modes
// with a float32 scale, linear in the accumulation type A (float for float32, as PyTorch's CPU kernel,
// whose rounding of the source coordinate shows at sizes in the hundreds).
template <typename A>
std::vector<std::vector<Tap>> RefTaps(InterpolateMode mode, bool align, int64_t in, int64_t out, double scale) {
  std::vector<std::vector<Tap>> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    if (mode == InterpolateMode::kNearest || mode == InterpolateMode::kNearestExact) {
      const float s = scale > 0 ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / static_cast<float>(out);
      const double pos = mode == InterpolateMode::kNearest ? static_cast<double>(static_cast<float>(o) * s)
                                                           : static_cast<double>(static_cast<float>((o + 0.5) * s));
      taps[static_cast<size_t>(o)] = {{!(pos > 0) ? 0 : pos >= static_cast<double>(in - 1) ? in - 1 : static_cast<int64_t>(std::floor(pos)), 1.0}};
      continue;
    }
    A src;
    if (align) {
      src = out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) * static_cast<A>(o) : A(0);
    } else {
      const A s = scale > 0 ? static_cast<A>(1.0 / scale) : static_cast<A>(in) / static_cast<A>(out);
      src = s * (static_cast<A>(o) + A(0.5)) - A(0.5);
      if (mode == InterpolateMode::kLinear) src = std::max(A(0), src);
    }
    if (mode == InterpolateMode::kBicubic) {  // UpSample.h: cubic_convolution1 and 2 with A = -0.75
      const A f = std::floor(src);
      const int64_t i0 = f >= static_cast<A>(in - 1) ? in - 1 : static_cast<int64_t>(f);
      const A t = std::min(std::max(src - static_cast<A>(i0), A(0)), A(1));
      const A a = A(-0.75);
      const auto cc1 = [&](A v) { return ((a + 2) * v - (a + 3)) * v * v + 1; };
      const auto cc2 = [&](A v) { return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a; };
      const A w[4] = {cc2(t + 1), cc1(t), cc1(1 - t), cc2(2 - t)};
      for (int64_t k = 0; k < 4; ++k) {
        taps[static_cast<size_t>(o)].push_back({std::clamp<int64_t>(i0 - 1 + k, 0, in - 1), static_cast<double>(w[k])});
      }
      continue;
    }
    const int64_t i0 = src >= static_cast<A>(in - 1) ? in - 1 : static_cast<int64_t>(src);
    const int64_t i1 = std::min(i0 + 1, in - 1);
    const A l1 = std::min(std::max(src - static_cast<A>(i0), A(0)), A(1));
    taps[static_cast<size_t>(o)] = {{i0, static_cast<double>(A(1) - l1)}, {i1, static_cast<double>(l1)}};
  }
  return taps;
}

struct InterpCase {
  Shape x;
  std::vector<int64_t> size;
  InterpolateOptions options;
};

// Every output element as its input elements and weights (flat indices of x).
std::vector<std::vector<Tap>> RefInterpolation(const InterpCase& k, const Shape& y, Symbol<DType> dt) {
  const int64_t sp = k.x.ndim() - 2;
  std::vector<std::vector<std::vector<Tap>>> dims;
  for (int64_t d = 0; d < sp; ++d) {
    const auto taps = dt == DType::Float32() ? RefTaps<float> : RefTaps<double>;
    dims.push_back(taps(k.options.mode, k.options.align_corners, k.x[2 + d].value(), y[2 + d].value(),
                        k.options.scale_factor[static_cast<size_t>(d)]));
  }
  std::vector<std::vector<Tap>> out;
  for (int64_t f = 0; f < y.numel(); ++f) {
    const std::vector<int64_t> idx = Unravel(f, y);
    std::vector<Tap> combos = {{0, 1.0}};
    std::vector<std::vector<int64_t>> coords = {{idx[0], idx[1]}};
    for (int64_t d = 0; d < sp; ++d) {
      std::vector<Tap> next;
      std::vector<std::vector<int64_t>> next_coords;
      for (size_t c = 0; c < combos.size(); ++c) {
        for (const Tap& t : dims[static_cast<size_t>(d)][static_cast<size_t>(idx[static_cast<size_t>(2 + d)])]) {
          next.push_back({0, combos[c].weight * t.weight});
          next_coords.push_back(coords[c]);
          next_coords.back().push_back(t.index);
        }
      }
      combos = std::move(next);
      coords = std::move(next_coords);
    }
    for (size_t c = 0; c < combos.size(); ++c) combos[c].index = Ravel(coords[c], k.x);
    out.push_back(std::move(combos));
  }
  return out;
}

Shape RefInterpolatedShape(const InterpCase& k) {
  Shape y{k.x[0], k.x[1]};
  for (size_t d = 0; d < k.size.size(); ++d) {
    y.push_back(k.size[d] > 0 ? Dim(k.size[d])
                              : Dim(static_cast<int64_t>(std::floor(static_cast<double>(k.x[2 + static_cast<int64_t>(d)].value()) *
                                                                    k.options.scale_factor[d]))));
  }
  return y;
}

const std::vector<InterpCase>& InterpCases() {
  static const std::vector<InterpCase> cases = [] {
    std::vector<InterpCase> c;
    const auto all = [&](Shape x, std::vector<int64_t> size, std::array<double, 3> scale = {0, 0, 0}) {
      for (InterpolateMode m : {InterpolateMode::kNearest, InterpolateMode::kNearestExact, InterpolateMode::kLinear,
                                InterpolateMode::kBicubic}) {
        c.push_back({x, size, {.mode = m, .align_corners = false, .scale_factor = scale}});
      }
      for (InterpolateMode m : {InterpolateMode::kLinear, InterpolateMode::kBicubic}) {
        c.push_back({x, size, {.mode = m, .align_corners = true, .scale_factor = scale}});
      }
    };
    all({2, 3, 5}, {8});
    all({2, 3, 9}, {4});
    all({1, 2, 4}, {1});
    all({1, 1, 1}, {3});
    all({2, 2, 4, 5}, {7, 3});
    all({1, 1, 3, 3}, {0, 0}, {2, 2, 0});        // size from the scale
    all({1, 1, 5}, {0}, {1.7, 0, 0});           // a fractional scale: floor(8.5) = 8
    all({1, 2, 5, 4}, {6, 9}, {1.3, 2.5, 0});    // size and scale both given (aten's upsample_*)
    all({1, 2, 3, 4, 2}, {5, 2, 3});
    all({2, 1, 2, 3, 4}, {0, 0, 0}, {1.5, 2, 0.5});
    all({1, 1, 2}, {10}, {0.5, 0, 0});          // a scale that maps past the last input: clamped
    all({1, 1, 3}, {4}, {1e-300, 0, 0});        // 1 / scale overflows to inf
    all({2, 3, 40, 600}, {33, 700});            // rows longer than the grain
    all({0, 3, 4}, {6});                        // no batch
    return c;
  }();
  return cases;
}

std::string Name(const InterpCase& k) {
  return fmt::format("x {} size [{}] {} align_corners {} scale [{}]", k.x, fmt::join(k.size, ", "),
                     ops::InterpolateModeName(k.options.mode), k.options.align_corners,
                     fmt::join(k.options.scale_factor, ", "));
}

TEST(Interpolate, KnownValues) {
  const Symbol<DType> f32 = DType::Float32();
  const TensorPtr x = FromDoubles(f32, {1, 1, 4}, {0, 1, 2, 3});
  InterpolateOptions linear{.mode = InterpolateMode::kLinear};
  ExpectTensorNear(ops::Interpolate(x, {8}, linear), f32, {1, 1, 8}, {0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3});
  linear.align_corners = true;
  ExpectTensorNear(ops::Interpolate(x, {7}, linear), f32, {1, 1, 7}, {0, 0.5, 1, 1.5, 2, 2.5, 3});
  ExpectTensorNear(ops::Interpolate(x, {3}), f32, {1, 1, 3}, {0, 1, 2});
  ExpectTensorNear(ops::Interpolate(x, {3}, {.mode = InterpolateMode::kNearestExact}), f32, {1, 1, 3}, {0, 2, 3});
  ExpectTensorNear(ops::Interpolate(x, {8}), f32, {1, 1, 8}, {0, 0, 1, 1, 2, 2, 3, 3});
  // NaN spreads to the outputs that read it, with a zero weight too (0 * NaN, as PyTorch's kernel).
  const TensorPtr n = FromDoubles(f32, {1, 1, 3}, {0, NAN, 2});
  ExpectTensorNear(ops::Interpolate(n, {5}, {.mode = InterpolateMode::kLinear, .align_corners = true}), f32, {1, 1, 5},
                   {NAN, NAN, NAN, NAN, 2});
  ExpectTensorNear(ops::Interpolate(n, {6}, {.mode = InterpolateMode::kNearest}), f32, {1, 1, 6}, {0, 0, NAN, NAN, 2, 2});
}

TEST(Interpolate, ForwardMatchesReference) {
  for (Symbol<DType> dt : kFloating) {
    for (const InterpCase& k : InterpCases()) {
      const TensorPtr x = RandomTensor(dt, k.x);
      const Shape y = RefInterpolatedShape(k);
      const std::vector<double> xv = ToDoubles(x);
      std::vector<double> want;
      for (const std::vector<Tap>& taps : RefInterpolation(k, y, dt)) {
        double v = 0;
        for (const Tap& t : taps) v += t.weight * xv[static_cast<size_t>(t.index)];
        want.push_back(v);
      }
      for (const TensorPtr& layout : Layouts(x)) {
        SCOPED_TRACE(fmt::format("{} {} strides [{}]", dt->name(), Name(k), fmt::join(layout->strides(), ", ")));
        ExpectTensorNear(ops::Interpolate(layout, k.size, k.options), dt, y, want, RtolFor(dt), AtolFor(dt));
      }
    }
    MarkCovered("interpolate", dt);
  }
}

TEST(Interpolate, BackwardOpIsTheAdjoint) {
  for (Symbol<DType> dt : kFloating) {
    for (const InterpCase& k : InterpCases()) {
      SCOPED_TRACE(fmt::format("{} {}", dt->name(), Name(k)));
      const Shape y = RefInterpolatedShape(k);
      const TensorPtr x = RandomTensor(dt, k.x);
      const TensorPtr dy = RandomTensor(dt, y);
      const std::vector<double> g = ToDoubles(dy);
      std::vector<double> want(static_cast<size_t>(k.x.numel()), 0.0);
      const std::vector<std::vector<Tap>> ref = RefInterpolation(k, y, dt);
      for (size_t o = 0; o < ref.size(); ++o) {
        for (const Tap& t : ref[o]) want[static_cast<size_t>(t.index)] += t.weight * g[o];
      }
      const Attrs attrs{{"size", k.size},
                        {"mode", std::string(ops::InterpolateModeName(k.options.mode))},
                        {"align_corners", k.options.align_corners},
                        {"scale_0", k.options.scale_factor[0]},
                        {"scale_1", k.options.scale_factor[1]},
                        {"scale_2", k.options.scale_factor[2]}};
      for (const TensorPtr& layout : Layouts(dy)) {
        // float32 sums up to hundreds of terms per element in the downsampling cases.
        ExpectTensorNear(Apply1(Op("interpolate_backward"), {layout, x}, attrs), dt, k.x, want, 4 * RtolFor(dt),
                         4 * AtolFor(dt));
      }
    }
    MarkCovered("interpolate_backward", dt);
  }
}

TEST(Interpolate, Gradients) {
  const Symbol<DType> f64 = DType::Float64();
  for (const InterpCase& k : InterpCases()) {
    if (k.x.numel() == 0 || k.x.numel() > 100 || RefInterpolatedShape(k).numel() > 300) continue;
    SCOPED_TRACE(Name(k));
    const TensorPtr x = RandomTensor(f64, k.x);
    x->set_requires_grad(true);
    ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return ops::Interpolate(in[0], k.size, k.options); }, {x});
    // interpolate_backward's gradient (w.r.t. dy) is interpolate.
    const TensorPtr dy = RandomTensor(f64, RefInterpolatedShape(k));
    dy->set_requires_grad(true);
    const TensorPtr xd = RandomTensor(f64, k.x);
    ExpectGradientsMatch(
        [&](const std::vector<TensorPtr>& in) {
          return Apply1(Op("interpolate_backward"), {in[0], xd},
                        {{"size", k.size},
                         {"mode", std::string(ops::InterpolateModeName(k.options.mode))},
                         {"align_corners", k.options.align_corners},
                         {"scale_0", k.options.scale_factor[0]},
                         {"scale_1", k.options.scale_factor[1]},
                         {"scale_2", k.options.scale_factor[2]}});
        },
        {dy});
  }
}

TEST(Interpolate, Errors) {
  const Symbol<DType> f32 = DType::Float32();
  const TensorPtr x = RandomTensor(f32, {1, 2, 4, 4});
  const InterpolateOptions linear{.mode = InterpolateMode::kLinear};
  ExpectError([&] { ops::Interpolate(RandomTensor(f32, {2, 4}), {3}); },
              {"interpolate: ", "x must be (N, C, spatial...) with 1 to 3 spatial dims", "(2, 4)"});
  ExpectError([&] { ops::Interpolate(RandomTensor(f32, {1, 1, 2, 2, 2, 2}), {3, 3, 3, 3}); },
              {"interpolate: ", "1 to 3 spatial dims"});
  ExpectError([&] { ops::Interpolate(RandomTensor(DType::Int64(), {1, 1, 4}), {3}); },
              {"interpolate: ", "x must be floating point", "int64"});
  ExpectError([&] { ops::Interpolate(x, {3}); }, {"interpolate: ", "size [3] has 1 entries", "2 spatial dims"});
  ExpectError([&] { ops::Interpolate(x, {3, -1}); }, {"interpolate: ", "size[1] is -1", "must be >= 1"});
  ExpectError([&] { ops::Interpolate(x, {3, 0}); }, {"interpolate: ", "size[1] is 0 and scale_factor[1] is 0"});
  ExpectError([&] { ops::Interpolate(x, {0, 3}, {.scale_factor = {0.1, 0, 0}}); },
              {"interpolate: ", "scale_factor[0] = 0.1 gives spatial dim 2", "the size 0"});
  ExpectError([&] { ops::Interpolate(x, {3, 3}, {.scale_factor = {-1, 0, 0}}); },
              {"interpolate: ", "scale_factor[0] is -1", "finite and >= 0"});
  ExpectError([&] { ops::Interpolate(x, {3, 3}, {.scale_factor = {NAN, 0, 0}}); }, {"interpolate: ", "scale_factor[0] is nan"});
  ExpectError([&] { ops::Interpolate(x, {3, 3}, {.scale_factor = {0, 0, 2}}); },
              {"interpolate: ", "scale_factor[2] is 2", "only 2 spatial dims"});
  ExpectError([&] { ops::Interpolate(x, {3, 3}, {.align_corners = true}); },
              {"interpolate: ", "align_corners is only for linear and bicubic interpolation", "nearest takes none"});
  ExpectError([&] { ops::Interpolate(RandomTensor(f32, {1, 2, 0, 4}), {3, 3}, linear); },
              {"interpolate: ", "empty spatial dim 2", "sizes >= 1"});
  ExpectError(
      [&] {
        Apply1(Op("interpolate"), {x}, {{"size", std::vector<int64_t>{2, 2}}, {"mode", std::string("cubic")}});
      },
      {"interpolate: ", "mode is \"cubic\"", "\"bicubic\""});
  ExpectError([&] { ops::Interpolate(nullptr, {3}); }, {"interpolate", "x"});
  ExpectError([&] { Apply1(Op("interpolate_backward"), {RandomTensor(f32, {1, 2, 3, 3}), x}, {{"size", std::vector<int64_t>{2, 2}}}); },
              {"interpolate_backward: ", "dy float32 (1, 2, 3, 3) must be the interpolated x: float32 (1, 2, 2, 2)"});
}

// ---- pixel_shuffle, pixel_unshuffle -----------------------------------------------------------------

// x (..., C r r, H, W) -> (..., C, H r, W r), by the index formula.
std::vector<double> RefPixelShuffle(const TensorPtr& x, int64_t r, Shape* out_shape) {
  const Shape& s = x->shape();
  const int64_t nd = s.ndim();
  Shape y = s;
  y[nd - 3] = Dim(s[nd - 3].value() / (r * r));
  y[nd - 2] = Dim(s[nd - 2].value() * r);
  y[nd - 1] = Dim(s[nd - 1].value() * r);
  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> out;
  for (int64_t f = 0; f < y.numel(); ++f) {
    std::vector<int64_t> idx = Unravel(f, y);
    const int64_t c = idx[static_cast<size_t>(nd - 3)], h = idx[static_cast<size_t>(nd - 2)], w = idx[static_cast<size_t>(nd - 1)];
    idx[static_cast<size_t>(nd - 3)] = c * r * r + (h % r) * r + (w % r);
    idx[static_cast<size_t>(nd - 2)] = h / r;
    idx[static_cast<size_t>(nd - 1)] = w / r;
    out.push_back(xv[static_cast<size_t>(Ravel(idx, s))]);
  }
  *out_shape = y;
  return out;
}

TEST(PixelShuffle, MatchesReferenceAndInverts) {
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{1, 4, 2, 3}, 2}, {{2, 18, 3, 2}, 3}, {{3, 2, 4, 1}, 1}, {{2, 3, 8, 2, 2}, 2}, {{8, 1, 5}, 2},
      {{0, 4, 2, 2}, 2}, {{2, 4, 0, 3}, 2}, {{1, 4, 30, 500}, 2}};
  for (Symbol<DType> dt : AllDTypes()) {
    for (const auto& [shape, r] : cases) {
      const TensorPtr x = RandomTensor(dt, shape, -5, 5);
      Shape y;
      const std::vector<double> want = RefPixelShuffle(x, r, &y);
      for (const TensorPtr& layout : Layouts(x)) {
        SCOPED_TRACE(fmt::format("{} x {} r {} strides [{}]", dt->name(), shape, r, fmt::join(layout->strides(), ", ")));
        const TensorPtr s = ops::PixelShuffle(layout, r);
        ExpectTensorNear(s, dt, y, want, 0, 0);
        // unshuffle of the shuffle is x, also from a non-contiguous layout of the shuffle.
        for (const TensorPtr& sl : Layouts(s)) ExpectTensorNear(ops::PixelUnshuffle(sl, r), dt, shape, ToDoubles(x), 0, 0);
      }
    }
    MarkCovered("pixel_shuffle", dt);
    MarkCovered("pixel_unshuffle", dt);
  }
}

TEST(PixelShuffle, Gradients) {
  const Symbol<DType> f64 = DType::Float64();
  const TensorPtr x = RandomTensor(f64, {2, 8, 2, 3});
  x->set_requires_grad(true);
  ExpectGradientsMatch([](const std::vector<TensorPtr>& in) { return ops::PixelShuffle(in[0], 2); }, {x});
  const TensorPtr z = RandomTensor(f64, {2, 2, 4, 6});
  z->set_requires_grad(true);
  ExpectGradientsMatch([](const std::vector<TensorPtr>& in) { return ops::PixelUnshuffle(in[0], 2); }, {z});
}

TEST(PixelShuffle, Errors) {
  const Symbol<DType> f32 = DType::Float32();
  ExpectError([&] { ops::PixelShuffle(RandomTensor(f32, {4, 2}), 2); },
              {"pixel_shuffle: ", "x must be (..., C, H, W) with at least 3 dims", "(4, 2)"});
  ExpectError([&] { ops::PixelShuffle(RandomTensor(f32, {1, 6, 2, 2}), 2); },
              {"pixel_shuffle: ", "the 6 channels of x (1, 6, 2, 2) are not divisible by upscale_factor^2 = 4"});
  ExpectError([&] { ops::PixelShuffle(RandomTensor(f32, {1, 4, 2, 2}), 0); },
              {"pixel_shuffle: ", "upscale_factor is 0", "must be >= 1"});
  ExpectError([&] { ops::PixelShuffle(RandomTensor(f32, {1, 4, 2, 2}), std::numeric_limits<int64_t>::max()); },
              {"pixel_shuffle: ", "upscale_factor is 9223372036854775807"});
  ExpectError([&] { ops::PixelUnshuffle(RandomTensor(f32, {1, 1, 3, 4}), 2); },
              {"pixel_unshuffle: ", "dim 2 of x (1, 1, 3, 4) (size 3) is not divisible by downscale_factor 2"});
  ExpectError([&] { ops::PixelUnshuffle(RandomTensor(f32, {1, 1, 4, 4}), -1); },
              {"pixel_unshuffle: ", "downscale_factor is -1"});
  ExpectError([&] { ops::PixelUnshuffle(RandomTensor(f32, {3}), 1); }, {"pixel_unshuffle: ", "at least 3 dims"});
}

// ---- a lazy graph over an unknown batch dim ---------------------------------------------------------

// pad (reflect) -> interpolate (bilinear) -> pixel_unshuffle, traced with an unknown batch: one graph
// runs at several batch sizes and equals eager.
TEST(Resample, LazyGraphWithAnUnknownBatchDim) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const Symbol<DType> f64 = DType::Float64();
  const InterpolateOptions linear{.mode = InterpolateMode::kLinear};
  const TensorPtr w = RandomTensor(f64, {1, 2, 1, 1});
  const auto model = [&](const TensorPtr& x) {
    return ops::PixelUnshuffle(ops::Interpolate(ops::Mul(ops::Pad(x, {1, 1, 2, 0}, PadMode::kReflect), w), {8, 6}, linear), 2);
  };
  graph::Graph g(session_owner, "resample", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr x = g.AddInput("x", f64, Shape{Dim::Unknown(), 2, 5, 6});
  const TensorPtr y = model(x);
  EXPECT_EQ(y->shape(), (Shape{Dim::Unknown(), 8, 4, 3}));
  g.AddOutput(y);
  g.EndBuild();
  EXPECT_NE(g.Dump().find("interpolate"), std::string::npos) << g.Dump();
  for (int64_t n : {1, 3, 1}) {
    const TensorPtr xv = RandomTensor(f64, {n, 2, 5, 6});
    const std::vector<TensorPtr> out = g.Run({xv});
    EXPECT_EQ(out[0]->shape(), (Shape{n, 8, 4, 3}));
    EXPECT_EQ(ToDoubles(out[0]), ToDoubles(model(xv)));
  }
}

// A training step through the three gradient ops in one graph over an unknown batch: loss =
// mean(pixel_unshuffle(interpolate(pad(x * w))) * t), SGD on w; the losses and w equal eager's.
TEST(Resample, LazyTrainingStepWithAnUnknownBatchDim) {
  const auto session_owner = std::make_shared<Session>(SessionOptions{});
  Session& session = *session_owner;
  SessionScope scope(session);
  const Symbol<DType> f64 = DType::Float64();
  const InterpolateOptions linear{.mode = InterpolateMode::kLinear};
  const auto loss_of = [&](const TensorPtr& x, const TensorPtr& t, const TensorPtr& w) {
    const TensorPtr p = ops::Pad(ops::Mul(x, w), {1, 1, 2, 0}, PadMode::kReflect);
    return ops::Mean(ops::Mul(ops::PixelUnshuffle(ops::Interpolate(p, {8, 6}, linear), 2), t));
  };
  const TensorPtr w0 = RandomTensor(f64, {1, 2, 1, 1});
  const auto clone = [](const TensorPtr& v) {
    TensorPtr c = FromDoubles(v->dtype(), v->shape(), ToDoubles(v));
    c->set_requires_grad(true);
    return c;
  };
  std::vector<TensorPtr> xs, ts;
  for (int64_t n : {2, 3, 1}) {
    xs.push_back(RandomTensor(f64, {n, 2, 5, 6}));
    ts.push_back(RandomTensor(f64, {n, 8, 4, 3}));
  }
  const SgdOptions sgd{.lr = 0.5};
  const TensorPtr we = clone(w0);
  SGD eager_opt({we}, sgd);
  std::vector<double> eager_losses;
  for (size_t i = 0; i < xs.size(); ++i) {
    const TensorPtr loss = loss_of(xs[i], ts[i], we);
    eager_losses.push_back(ToDoubles(loss)[0]);
    eager_opt.ZeroGrad();
    Backward({loss}, {nullptr});
    eager_opt.Step();
  }
  const TensorPtr wl = clone(w0);
  auto lazy_opt = std::make_shared<SGD>(std::vector<TensorPtr>{wl}, sgd);
  graph::Graph g(session_owner, "resample_train", graph::GraphOptions{});
  g.BeginBuild();
  const TensorPtr x = g.AddInput("x", f64, Shape{Dim::Unknown(), 2, 5, 6});
  const TensorPtr t = g.AddInput("t", f64, Shape{Dim::Unknown(), 8, 4, 3});
  const TensorPtr loss = loss_of(x, t, wl);
  Backward({loss}, {nullptr});
  g.AddOptimizer(lazy_opt);
  g.AddOutput(loss);
  g.EndBuild();
  for (const char* op : {"pad_backward", "interpolate_backward", "pixel_shuffle"}) {
    EXPECT_NE(g.Dump().find(op), std::string::npos) << op << "\n" << g.Dump();
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_NEAR(ToDoubles(g.Run({xs[i], ts[i]})[0])[0], eager_losses[i], 1e-12) << "step " << i;
  }
  const std::vector<double> we_v = ToDoubles(we), wl_v = ToDoubles(wl);
  for (size_t k = 0; k < we_v.size(); ++k) EXPECT_NEAR(wl_v[k], we_v[k], 1e-12);
}

}  // namespace
}  // namespace oneflow::test
