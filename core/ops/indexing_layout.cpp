// Layout ops of the indexing family: tril, triu, flip, roll, repeat and the strided slice.
//
// flip, roll and repeat are one kernel (Remap): each output coordinate c along dim d reads the input's
// coordinate table[d][c], a per-dim table computed from the attributes (flip: size-1-c, roll: (c - shift)
// mod size, repeat: c mod size, stored as its period 0 .. size-1), so rows along the last dim are a gather
// (or a memcpy where the last dim's table is the identity). Elements move as bits: every dtype.
// slice is a view for positive steps; a negative step copies through a view with a negative stride
// that never escapes the kernel (CopyStrided takes signed strides).
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/ranges.h>

#include "core/op/dispatch.h"
#include "core/ops/cpu/element_bits.h"
#include "core/ops/indexing.h"
#include "core/ops/ops.h"
#include "core/ops/register.h"
#include "core/tensor/copy.h"

namespace oneflow {
namespace {

constexpr int64_t kGrain = int64_t{1} << 15;

// ---- tril, triu ----------------------------------------------------------------------------------

std::vector<TensorMeta> InferTriangle(std::span<const TensorMeta> in, const Attrs&) {
  OF_CHECK(in[0].shape.ndim() >= 2) << "x must have at least 2 dims (a batch of matrices), got shape " << in[0].shape;
  return {in[0]};
}
// Keeps the elements with j - i <= diagonal (tril) or >= diagonal (triu) of each matrix; zeroes the rest.
template <bool kUpper>
void TriangleKernel(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &out = ctx.out(0);
  const int64_t rows = x.shape()[x.ndim() - 2].value(), cols = x.shape()[x.ndim() - 1].value();
  const int64_t diagonal = ctx.attrs.Int("diagonal");
  const int64_t all_rows = cols == 0 ? 0 : x.numel() / cols;
  cpu::VisitBits(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    const U* px = x.data<const U>();
    U* po = out.data<U>();
    ctx.pool.ParallelFor(all_rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(cols, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t i = r % rows;
        // Columns [0, split) are kept by tril and zeroed by triu (split = i + diagonal + 1 for tril,
        // i + diagonal for triu), clamped to [0, cols]; computed in a range where nothing overflows.
        const int64_t d = std::clamp<int64_t>(diagonal, -cols - 1, cols + 1);
        const int64_t split = std::clamp<int64_t>(i + d + (kUpper ? 0 : 1), 0, cols);
        const U* s = px + r * cols;
        U* o = po + r * cols;
        if (kUpper) {
          std::fill(o, o + split, U(0));
          std::copy(s + split, s + cols, o + split);
        } else {
          std::copy(s, s + split, o);
          std::fill(o + split, o + cols, U(0));
        }
      }
    });
  });
}
template <bool kUpper>
std::vector<TensorPtr> TriangleBackward(const BackwardContext& ctx) {
  const int64_t diagonal = ctx.attrs.Int("diagonal");
  return {kUpper ? ops::Triu(ctx.grad_outputs[0], diagonal) : ops::Tril(ctx.grad_outputs[0], diagonal)};
}

// ---- flip, roll, repeat: the remap kernel ----------------------------------------------------------

// dims list entries made non-negative and checked for repeats; `what` names the list.
std::vector<int64_t> NormalizeDims(const std::vector<int64_t>& dims, int64_t ndim, std::string_view what) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(ndim), false);
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = NormalizeAxis(dims[k], ndim, fmt::format("{}[{}]", what, k));
    OF_CHECK(!seen[static_cast<size_t>(d)]) << what << " [" << fmt::format("{}", fmt::join(dims, ", "))
                                            << "] names dim " << d << " more than once";
    seen[static_cast<size_t>(d)] = true;
    out.push_back(d);
  }
  return out;
}

// Per output dim, the input coordinate of each output coordinate; an empty table is the identity, and a
// table shorter than the output's dim repeats (repeat's: the input's coordinates, once per tile), so that
// no table is longer than a dim of x. Kernels build them only for a non-empty output: the dims of an
// empty tensor may be as large as int64 allows.
using Tables = std::vector<std::vector<int64_t>>;

// out (contiguous) [c] = x (contiguous, shape `in`, of out's rank) [table[d][c_d mod its length]].
void Remap(const Tensor& x, const Shape& in, const Tensor& out, const Tables& tables, ThreadPool& pool) {
  const int64_t nd = out.ndim();
  if (out.numel() == 0) return;
  if (nd == 0) {
    std::memcpy(out.raw_data(), x.raw_data(), out.nbytes());
    return;
  }
  const std::vector<int64_t> strides = ContiguousStrides(in);
  const int64_t cols = out.shape()[nd - 1].value(), rows = out.numel() / cols;
  const std::vector<int64_t>& last = tables[static_cast<size_t>(nd - 1)];
  cpu::VisitBits(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    const U* px = x.data<const U>();
    U* po = out.data<U>();
    pool.ParallelFor(rows, std::max<int64_t>(1, kGrain / cols), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t rem = r, base = 0;
        for (int64_t d = nd - 2; d >= 0; --d) {
          const int64_t size = out.shape()[d].value(), c = rem % size;
          rem /= size;
          const std::vector<int64_t>& t = tables[static_cast<size_t>(d)];
          base += (t.empty() ? c : t[static_cast<size_t>(c) % t.size()]) * strides[static_cast<size_t>(d)];
        }
        const U* s = px + base;
        U* o = po + r * cols;
        if (last.empty()) {
          std::memcpy(o, s, static_cast<size_t>(cols) * sizeof(U));
          continue;
        }
        const int64_t period = static_cast<int64_t>(last.size());
        for (int64_t c0 = 0; c0 < cols; c0 += period) {  // the last dim's table, once per period
          const int64_t n = std::min(period, cols - c0);
          for (int64_t c = 0; c < n; ++c) o[c0 + c] = s[last[static_cast<size_t>(c)]];
        }
      }
    });
  });
}

std::vector<TensorMeta> InferFlip(std::span<const TensorMeta> in, const Attrs& attrs) {
  NormalizeDims(attrs.Ints("dims"), in[0].shape.ndim(), "dims");
  return {in[0]};
}
void FlipKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.numel() == 0) return;
  Tables tables(static_cast<size_t>(x.ndim()));
  for (int64_t d : NormalizeDims(ctx.attrs.Ints("dims"), x.ndim(), "dims")) {
    const int64_t size = x.shape()[d].value();
    std::vector<int64_t>& t = tables[static_cast<size_t>(d)];
    t.resize(static_cast<size_t>(size));
    for (int64_t c = 0; c < size; ++c) t[static_cast<size_t>(c)] = size - 1 - c;
  }
  Remap(x, x.shape(), ctx.out(0), tables, ctx.pool);
}
std::vector<TensorPtr> FlipBackward(const BackwardContext& ctx) {
  return {ops::Flip(ctx.grad_outputs[0], ctx.attrs.Ints("dims"))};
}

// Roll: shifts pair with dims; with no dims a single shift rolls the flattened tensor.
std::vector<TensorMeta> InferRoll(std::span<const TensorMeta> in, const Attrs& attrs) {
  const std::vector<int64_t>& shifts = attrs.Ints("shifts");
  const std::vector<int64_t>& dims = attrs.Ints("dims");
  for (size_t k = 0; k < shifts.size(); ++k) {
    OF_CHECK(shifts[k] != std::numeric_limits<int64_t>::min())
        << "shifts[" << k << "] is " << shifts[k] << ", out of range (its negation, the gradient's shift, overflows)";
  }
  if (dims.empty()) {
    OF_CHECK(shifts.size() == 1) << "shifts has " << shifts.size()
                                 << " entries; without dims (a roll of the flattened tensor) it must have one";
  } else {
    OF_CHECK(shifts.size() == dims.size()) << "shifts has " << shifts.size() << " entries but dims has "
                                           << dims.size() << "; they must pair up";
    // Repeated dims are allowed, as in PyTorch: their shifts add up.
    for (size_t k = 0; k < dims.size(); ++k) {
      NormalizeAxis(dims[k], in[0].shape.ndim(), fmt::format("dims[{}]", k));
    }
  }
  return {in[0]};
}
// (c - shift) mod size for c in [0, size), without overflow for any shift.
std::vector<int64_t> RollTable(int64_t size, int64_t shift) {
  const int64_t s = ((shift % size) + size) % size;
  std::vector<int64_t> t(static_cast<size_t>(size));
  for (int64_t c = 0; c < size; ++c) t[static_cast<size_t>(c)] = c >= s ? c - s : c - s + size;
  return t;
}
void RollKernel(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &out = ctx.out(0);
  const std::vector<int64_t>& shifts = ctx.attrs.Ints("shifts");
  const std::vector<int64_t>& dims = ctx.attrs.Ints("dims");
  if (x.numel() == 0) return;
  if (dims.empty()) {  // the flattened roll: out.flat[(i + shift) mod n] = x.flat[i], two copies
    const int64_t n = x.numel(), s = ((shifts[0] % n) + n) % n;
    const size_t esize = x.dtype()->bytes();
    const char* px = static_cast<const char*>(x.raw_data());
    char* po = static_cast<char*>(out.raw_data());
    std::memcpy(po + static_cast<size_t>(s) * esize, px, static_cast<size_t>(n - s) * esize);
    std::memcpy(po, px + static_cast<size_t>(n - s) * esize, static_cast<size_t>(s) * esize);
    return;
  }
  std::vector<int64_t> total(static_cast<size_t>(x.ndim()), 0);
  std::vector<bool> rolled(static_cast<size_t>(x.ndim()), false);
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = NormalizeAxis(dims[k], x.ndim(), "dims");
    const int64_t size = x.shape()[d].value();
    // Reduced per shift so that adding them cannot overflow.
    total[static_cast<size_t>(d)] = (total[static_cast<size_t>(d)] + shifts[k] % size) % size;
    rolled[static_cast<size_t>(d)] = true;
  }
  Tables tables(static_cast<size_t>(x.ndim()));
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (rolled[static_cast<size_t>(d)]) tables[static_cast<size_t>(d)] = RollTable(x.shape()[d].value(), total[static_cast<size_t>(d)]);
  }
  Remap(x, x.shape(), out, tables, ctx.pool);
}
std::vector<TensorPtr> RollBackward(const BackwardContext& ctx) {
  std::vector<int64_t> shifts = ctx.attrs.Ints("shifts");
  for (int64_t& s : shifts) s = -s;  // InferRoll refused INT64_MIN
  return {ops::Roll(ctx.grad_outputs[0], shifts, ctx.attrs.Ints("dims"))};
}

// Repeat (PyTorch's Tensor.repeat): repeats has at least x's rank; x gets leading size-1 dims to match
// and is tiled repeats[d] times along each dim.
std::vector<TensorMeta> InferRepeat(std::span<const TensorMeta> in, const Attrs& attrs) {
  const std::vector<int64_t>& repeats = attrs.Ints("repeats");
  const Shape& s = in[0].shape;
  const int64_t lead = static_cast<int64_t>(repeats.size()) - s.ndim();
  OF_CHECK(lead >= 0) << "repeats [" << fmt::format("{}", fmt::join(repeats, ", ")) << "] has " << repeats.size()
                      << " entries, fewer than the " << s.ndim() << " dims of x " << s;
  Shape out;
  for (size_t k = 0; k < repeats.size(); ++k) {
    OF_CHECK(repeats[k] >= 0) << "repeats[" << k << "] is " << repeats[k] << "; repeats must be >= 0";
    const Dim size = static_cast<int64_t>(k) < lead ? Dim(1) : s[static_cast<int64_t>(k) - lead];
    if (size.is_known()) {
      OF_CHECK(repeats[k] == 0 || size.value() <= std::numeric_limits<int64_t>::max() / repeats[k])
          << "repeats[" << k << "] = " << repeats[k] << " times size " << size << " overflows int64";
    }
    out.push_back(size * Dim(repeats[k]));
  }
  return {{in[0].dtype, std::move(out), in[0].device}};
}
void RepeatKernel(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &out = ctx.out(0);
  const int64_t lead = out.ndim() - x.ndim();
  if (out.numel() == 0) return;
  Shape in;
  for (int64_t d = 0; d < out.ndim(); ++d) in.push_back(d < lead ? Dim(1) : x.shape()[d - lead]);
  Tables tables(static_cast<size_t>(out.ndim()));
  for (int64_t d = 0; d < out.ndim(); ++d) {
    const int64_t size = in[d].value();
    if (size == out.shape()[d].value()) continue;
    std::vector<int64_t>& t = tables[static_cast<size_t>(d)];  // x's coordinates, repeated (Tables)
    t.resize(static_cast<size_t>(size));
    std::iota(t.begin(), t.end(), int64_t{0});
  }
  Remap(x, in, out, tables, ctx.pool);
}
// The gradient sums the tiles: dy seen as (r0, s0, r1, s1, ...) summed over the r axes.
std::vector<TensorPtr> RepeatBackward(const BackwardContext& ctx) {
  const std::vector<int64_t>& repeats = ctx.attrs.Ints("repeats");
  const TensorPtr& x = ctx.inputs[0];
  const int64_t lead = static_cast<int64_t>(repeats.size()) - x->ndim();
  std::vector<int64_t> split, summed;
  for (size_t k = 0; k < repeats.size(); ++k) {
    const Dim size = static_cast<int64_t>(k) < lead ? Dim(1) : x->shape()[static_cast<int64_t>(k) - lead];
    summed.push_back(static_cast<int64_t>(split.size()));
    split.push_back(repeats[k]);
    split.push_back(size.raw());
  }
  TensorPtr g = ops::Sum(ops::Reshape(ctx.grad_outputs[0], split), summed);
  const auto raw = x->shape().raw();
  return {ops::Reshape(g, std::vector<int64_t>(raw.begin(), raw.end()))};
}

// ---- slice ---------------------------------------------------------------------------------------

struct SliceRange {
  int64_t dim, start, length, step;
};
// NumPy's slice.indices: bounds counted from the end when negative, then clamped to the dim.
SliceRange ResolveSlice(const Shape& s, const Attrs& attrs) {
  OF_CHECK(s.ndim() > 0) << "cannot slice a 0-d tensor";
  const int64_t dim = NormalizeAxis(attrs.Int("dim"), s.ndim(), "dim");
  const int64_t step = attrs.Int("step");
  OF_CHECK(step != 0) << "step must not be 0";
  OF_CHECK(step != std::numeric_limits<int64_t>::min()) << "step " << step << " is out of range (its negation overflows)";
  const int64_t n = s[dim].value();
  auto clamp = [&](int64_t v) {
    if (v < 0) {
      v = v < -n ? -1 : v + n;  // (v + n computed only where it cannot overflow)
      if (v < 0) return step < 0 ? int64_t{-1} : int64_t{0};
      return v;
    }
    return v >= n ? (step < 0 ? n - 1 : n) : v;
  };
  const int64_t start = clamp(attrs.Int("start")), end = clamp(attrs.Int("end"));
  int64_t length = 0;
  if (step > 0 && end > start) length = (end - start - 1) / step + 1;
  if (step < 0 && start > end) length = (start - end - 1) / -step + 1;
  return {dim, start, length, step};
}

std::vector<TensorMeta> InferSlice(std::span<const TensorMeta> in, const Attrs& attrs) {
  TensorMeta out = in[0];
  OF_CHECK(out.shape.ndim() > 0) << "cannot slice a 0-d tensor";
  const int64_t dim = NormalizeAxis(attrs.Int("dim"), out.shape.ndim(), "dim");
  OF_CHECK(attrs.Int("step") != 0) << "step must not be 0";
  // A dim whose size the graph does not know gives a length it does not know either.
  out.shape[dim] = out.shape[dim].is_known() ? Dim(ResolveSlice(out.shape, attrs).length) : Dim::Unknown();
  return {out};
}
// The slice as a view of x (a negative stride for a negative step: internal to the copy kernel).
TensorPtr SliceOf(const Tensor& x, const Shape& out, const SliceRange& r) {
  std::vector<int64_t> strides = x.strides();
  const int64_t stride = strides[static_cast<size_t>(r.dim)];
  // With two or more elements |step| < size, so the product stays within the storage's extent; a dim
  // of 0 or 1 elements keeps its stride (any serves, and a step near INT64_MAX would overflow).
  if (r.length > 1) strides[static_cast<size_t>(r.dim)] = stride * r.step;
  return Tensor::MakeView(x, out, std::move(strides), x.storage_offset() + (r.length == 0 ? 0 : r.start * stride));
}
TensorPtr SliceView(const TensorPtr& x, const TensorMeta& out, const Attrs& attrs) {
  const SliceRange r = ResolveSlice(x->shape(), attrs);
  OF_CHECK_INTERNAL(r.step > 0) << "slice view with a negative step";
  return SliceOf(*x, out.shape, r);
}
void SliceCopyKernel(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &out = ctx.out(0);
  if (out.numel() > 0) CopyStrided(*SliceOf(x, out.shape(), ResolveSlice(x.shape(), ctx.attrs)), out, &ctx.pool);
}
std::vector<TensorPtr> SliceBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("slice_backward");
  Attrs attrs = ctx.attrs;
  const int64_t dim = NormalizeAxis(ctx.attrs.Int("dim"), ctx.inputs[0]->ndim(), "dim");
  attrs.Set("size", ctx.inputs[0]->shape()[dim].raw());
  return {Apply1(op, {ctx.grad_outputs[0]}, std::move(attrs))};
}

// slice_backward(dy): zeros of x's shape (dy's with dim `size`) with dy written where the slice read.
std::vector<TensorMeta> InferSliceGrad(std::span<const TensorMeta> in, const Attrs& attrs) {
  TensorMeta out = in[0];
  OF_CHECK(out.shape.ndim() > 0) << "dy is 0-d";
  const int64_t dim = NormalizeAxis(attrs.Int("dim"), out.shape.ndim(), "dim");
  out.shape[dim] = Dim::FromRaw(attrs.Int("size"), "size");
  if (out.shape[dim].is_known() && in[0].shape[dim].is_known()) {
    OF_CHECK(ResolveSlice(out.shape, attrs).length == in[0].shape[dim].value())
        << "dy of shape " << in[0].shape << " is not the slice's shape at dim " << dim;
  }
  return {out};
}
void SliceGradKernel(KernelContext& ctx) {
  const Tensor &dy = ctx.in(0), &out = ctx.out(0);
  std::memset(out.raw_data(), 0, out.nbytes());
  if (dy.numel() > 0) CopyStrided(dy, *SliceOf(out, dy.shape(), ResolveSlice(out.shape(), ctx.attrs)), &ctx.pool);
}

}  // namespace

namespace ops {

TensorPtr Tril(const TensorPtr& x, int64_t diagonal) {
  static const OpDef& op = OpRegistry::Global().Get("tril");
  return Apply1(op, {x}, {{"diagonal", diagonal}});
}
TensorPtr Triu(const TensorPtr& x, int64_t diagonal) {
  static const OpDef& op = OpRegistry::Global().Get("triu");
  return Apply1(op, {x}, {{"diagonal", diagonal}});
}
TensorPtr Flip(const TensorPtr& x, const std::vector<int64_t>& dims) {
  static const OpDef& op = OpRegistry::Global().Get("flip");
  return Apply1(op, {x}, {{"dims", dims}});
}
TensorPtr Roll(const TensorPtr& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  static const OpDef& op = OpRegistry::Global().Get("roll");
  return Apply1(op, {x}, {{"shifts", shifts}, {"dims", dims}});
}
TensorPtr Repeat(const TensorPtr& x, const std::vector<int64_t>& repeats) {
  static const OpDef& op = OpRegistry::Global().Get("repeat");
  return Apply1(op, {x}, {{"repeats", repeats}});
}
TensorPtr Slice(const TensorPtr& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  static const OpDef& view = OpRegistry::Global().Get("slice");
  static const OpDef& copy = OpRegistry::Global().Get("slice_copy");
  // (step 0 goes to the view op, whose inference names the error.)
  return Apply1(step >= 0 ? view : copy, {x}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}});
}

}  // namespace ops

void RegisterIndexingLayoutOps(OpRegistry& registry) {
  const std::vector<int64_t> none;
  auto op = [](std::string name, std::vector<AttrSpec> attrs, InferFn infer, KernelFn kernel, BackwardFn backward) {
    return OpDef{.name = std::move(name), .inputs = {"x"}, .outputs = {"y"}, .attrs = std::move(attrs),
                 .infer = infer, .backward = backward, .kernels = {{DeviceType::kCPU, kAllTypes, kernel}}};
  };
  registry.Register(op("tril", {{"diagonal", int64_t{0}}}, InferTriangle, TriangleKernel<false>, TriangleBackward<false>));
  registry.Register(op("triu", {{"diagonal", int64_t{0}}}, InferTriangle, TriangleKernel<true>, TriangleBackward<true>));
  registry.Register(op("flip", {{"dims", none, true}}, InferFlip, FlipKernel, FlipBackward));
  registry.Register(op("roll", {{"shifts", none, true}, {"dims", none}}, InferRoll, RollKernel, RollBackward));
  registry.Register(op("repeat", {{"repeats", none, true}}, InferRepeat, RepeatKernel, RepeatBackward));
  const std::vector<AttrSpec> slice_attrs = {{"dim", int64_t{0}, true}, {"start", int64_t{0}, true},
                                             {"end", int64_t{0}, true}, {"step", int64_t{1}}};
  OpDef slice = op("slice", slice_attrs, InferSlice, nullptr, SliceBackward);
  slice.kernels.clear();
  slice.view = SliceView;
  registry.Register(std::move(slice));
  // Negative steps: a copy that reads x at its strides.
  OpDef slice_copy = op("slice_copy", slice_attrs, InferSlice, SliceCopyKernel, SliceBackward);
  slice_copy.strided_inputs = true;
  registry.Register(std::move(slice_copy));
  std::vector<AttrSpec> grad_attrs = slice_attrs;
  grad_attrs.push_back({"size", int64_t{0}, true});  // x's size at dim, a Dim encoding
  OpDef slice_grad = op("slice_backward", grad_attrs, InferSliceGrad, SliceGradKernel, nullptr);
  slice_grad.inputs = {"dy"};
  slice_grad.strided_inputs = true;
  registry.Register(std::move(slice_grad));
}

}  // namespace oneflow
