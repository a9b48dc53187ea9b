// Views and layout: reshape/view, flatten, squeeze, unsqueeze, transpose, permute, narrow and expand are
// view ops (the output shares the input's storage with its own shape, strides and offset; reshape and
// flatten copy only when no strides can express the result); contiguous, cat, stack and
// narrow_backward copy bytes, so their kernels take every dtype.
//
// Target shapes (reshape, view, expand) are attributes holding Dim encodings, plus -1 for "inferred"
// (reshape) or "kept" (expand), so that a graph can pass symbolic targets; eager calls must give
// concrete sizes.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/ranges.h>

#include "core/op/dispatch.h"
#include "core/ops/ops.h"
#include "core/ops/register.h"
#include "core/session/session.h"
#include "core/tensor/copy.h"

namespace oneflow {
namespace {

// ---- list attributes ------------------------------------------------------------------------------
// (The argument's name is formatted only on the error path: these run on every call.)

// Entry k of a dims list (`what`[k]) made non-negative.
int64_t NormalizeEntry(int64_t axis, int64_t ndim, std::string_view what, size_t k) {
  if (axis >= -ndim && axis < ndim) return axis < 0 ? axis + ndim : axis;
  return NormalizeAxis(axis, ndim, fmt::format("{}[{}]", what, k));
}

// Entry k of a shape list (`what`[k]) as a Dim: a size, OF_DIM_UNKNOWN or a named symbol.
Dim DimEntry(int64_t raw, std::string_view what, size_t k) {
  return raw >= 0 ? Dim(raw) : Dim::FromRaw(raw, fmt::format("{}[{}]", what, k));
}

// ---- target shapes ---------------------------------------------------------------------------------

// "[2, -1, N, ?]".
std::string TargetString(const std::vector<int64_t>& raw) {
  std::string s = "[";
  for (size_t i = 0; i < raw.size(); ++i) {
    if (i > 0) s += ", ";
    const int64_t r = raw[i];
    const bool dim_encoding = r >= 0 || r < Dim::kUnknownValue + Dim::kMaxSymbols;
    s += dim_encoding ? Dim::FromRaw(r, "shape").ToString() : std::to_string(r);
  }
  return s + "]";
}

// The target's dims, with -1 (allowed once, at *infer_at) left as a placeholder 1.
std::vector<Dim> ParseTarget(const std::vector<int64_t>& raw, std::string_view what, int64_t* infer_at) {
  std::vector<Dim> dims;
  dims.reserve(raw.size());
  *infer_at = -1;
  for (size_t i = 0; i < raw.size(); ++i) {
    const int64_t r = raw[i];
    if (r == -1) {
      OF_CHECK(*infer_at < 0) << what << " " << TargetString(raw) << " has more than one -1 (at " << *infer_at
                              << " and " << i << "); only one dim can be inferred";
      *infer_at = static_cast<int64_t>(i);
      dims.emplace_back(1);
    } else if (r < -1 && r >= Dim::kUnknownValue + Dim::kMaxSymbols) {
      OF_THROW(InvalidArgument) << what << "[" << i << "] is " << r << " in " << what << " " << TargetString(raw)
                                << ": sizes must be >= 0, or -1 for one inferred dim";
    } else {
      dims.push_back(DimEntry(r, what, i));
    }
  }
  return dims;
}

// Eager ops run on concrete sizes: an unknown or symbolic dim in a target is the caller's error.
void CheckConcreteTarget(const std::vector<int64_t>& raw, std::string_view what) {
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] >= -1) continue;
    const Dim d = Dim::FromRaw(raw[i], what);
    OF_THROW(InvalidArgument) << what << " " << TargetString(raw) << " is not concrete: " << what << "[" << i << "] is "
                              << (d.is_unknown() ? "unknown (OF_DIM_UNKNOWN)"
                                                 : fmt::format("the symbol '{}'", d.symbol_name()))
                              << ", and an eager op needs concrete sizes (or -1)";
  }
}

// A reshape target for `shape` that stays computable when one dim is unknown (-1 in its place).
std::vector<int64_t> TargetOf(const Shape& shape) {
  std::vector<int64_t> raw(shape.raw().begin(), shape.raw().end());
  if (std::count_if(shape.begin(), shape.end(), [](Dim d) { return d.is_unknown(); }) == 1) {
    *std::find(raw.begin(), raw.end(), Dim::kUnknownValue) = -1;
  }
  return raw;
}

// The output shape of reshaping `in` into the target `raw`. Symbols that appear on both sides cancel,
// so (N, 3, 4) -> [N, -1] gives (N, 12) and (N, 3, 4) -> [-1, 12] gives (N, 12); what cannot be
// computed is unknown, and what cannot be checked is checked when the sizes are concrete.
Shape ReshapeShape(const Shape& in, const std::vector<int64_t>& raw) {
  int64_t infer_at = -1;
  std::vector<Dim> dims = ParseTarget(raw, "shape", &infer_at);
  std::vector<Dim> in_rest = in.dims(), out_rest;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (static_cast<int64_t>(i) == infer_at) continue;
    auto it = dims[i].is_symbol() ? std::find(in_rest.begin(), in_rest.end(), dims[i]) : in_rest.end();
    if (it != in_rest.end()) {
      in_rest.erase(it);
    } else {
      out_rest.push_back(dims[i]);
    }
  }
  Dim in_known = 1, out_known = 1, in_symbol;
  int in_symbols = 0, in_unknown = 0, out_other = 0;
  for (Dim d : in_rest) {
    if (d.is_known()) {
      in_known *= d;
    } else if (d.is_symbol()) {
      ++in_symbols;
      in_symbol = d;
    } else {
      ++in_unknown;
    }
  }
  for (Dim d : out_rest) {
    if (d.is_known()) {
      out_known *= d;
    } else {
      ++out_other;
    }
  }
  const bool comparable = in_symbols == 0 && in_unknown == 0 && out_other == 0;
  auto mismatch = [&]() {
    std::string counts;
    if (in.is_static()) counts = fmt::format(" ({} elements)", in.numel());
    OF_THROW(InvalidArgument) << "shape " << TargetString(raw) << " is invalid for an input of shape " << in << counts
                              << ": the element counts differ";
  };
  if (infer_at < 0) {
    if (comparable && in_known != out_known) mismatch();
  } else {
    Dim inferred;
    if (comparable) {
      OF_CHECK(out_known != 0) << "shape " << TargetString(raw) << " cannot infer its -1 for an input of shape " << in
                               << ": with a 0-sized dim the -1 could be any size";
      if (in_known.value() % out_known.value() != 0) mismatch();
      inferred = in_known / out_known;
    } else if (in_symbols == 1 && in_unknown == 0 && out_other == 0 && out_known != 0 && in_known == out_known) {
      inferred = in_symbol;
    }
    dims[static_cast<size_t>(infer_at)] = inferred;
  }
  return Shape(std::move(dims));
}

// Strides that let `x` be seen as `shape` (same element count) without copying, if any: every run of
// x's dims that is contiguous among itself may be merged or split (PyTorch's computeStride).
std::optional<std::vector<int64_t>> ViewStrides(const Tensor& x, const Shape& shape) {
  const int64_t n = shape.ndim();
  if (x.numel() == 0 || x.ndim() == 0) return ContiguousStrides(shape);
  std::vector<int64_t> strides(static_cast<size_t>(n));
  const std::vector<int64_t>& old_strides = x.strides();
  int64_t view_d = n - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = x.ndim() - 1; d >= 0; --d) {
    tensor_numel *= x.shape()[d].value();
    // The end of a contiguous chunk: assign the view dims that cover it.
    if (d == 0 || (x.shape()[d - 1].value() != 1 &&
                   old_strides[static_cast<size_t>(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d].value() == 1)) {
        strides[static_cast<size_t>(view_d)] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d].value();
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[static_cast<size_t>(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

TensorPtr ViewAs(const TensorPtr& x, const Shape& shape) {
  std::optional<std::vector<int64_t>> strides = ViewStrides(*x, shape);
  OF_CHECK(strides.has_value()) << "a tensor of shape " << x->shape() << " with strides ["
                                << fmt::format("{}", fmt::join(x->strides(), ", ")) << "] cannot be viewed as shape "
                                << shape << ": the dims it merges are not contiguous with each other; use reshape "
                                << "(which copies) or contiguous() first";
  return Tensor::MakeView(*x, shape, std::move(*strides), x->storage_offset());
}

// A view when the strides allow, else a contiguous copy seen as `shape`.
TensorPtr ReshapeOrCopy(const TensorPtr& x, const Shape& shape) {
  if (std::optional<std::vector<int64_t>> strides = ViewStrides(*x, shape)) {
    return Tensor::MakeView(*x, shape, std::move(*strides), x->storage_offset());
  }
  TensorPtr c = MakeContiguous(x, &Session::Current().thread_pool());
  return Tensor::MakeView(*c, shape, ContiguousStrides(shape), c->storage_offset());
}

// ---- reshape, view, flatten, squeeze, unsqueeze ------------------------------------------------------

std::vector<TensorMeta> InferReshape(std::span<const TensorMeta> in, const Attrs& attrs) {
  return {{in[0].dtype, ReshapeShape(in[0].shape, attrs.Ints("shape")), in[0].device}};
}
TensorPtr ReshapeView(const TensorPtr& x, const TensorMeta& out, const Attrs& attrs) {
  CheckConcreteTarget(attrs.Ints("shape"), "shape");
  return ReshapeOrCopy(x, out.shape);
}
TensorPtr ViewView(const TensorPtr& x, const TensorMeta& out, const Attrs& attrs) {
  CheckConcreteTarget(attrs.Ints("shape"), "shape");
  return ViewAs(x, out.shape);
}
// Flatten, squeeze and unsqueeze get their output shape from inference; the layout follows from it.
TensorPtr FlattenView(const TensorPtr& x, const TensorMeta& out, const Attrs&) { return ReshapeOrCopy(x, out.shape); }

// Reshape, view, flatten, squeeze, unsqueeze: the gradient is reshaped back to the input's shape.
std::vector<TensorPtr> ReshapeBackward(const BackwardContext& ctx) {
  return {ops::Reshape(ctx.grad_outputs[0], TargetOf(ctx.inputs[0]->shape()))};
}

std::vector<TensorMeta> InferFlatten(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  if (s.ndim() == 0) {  // a 0-d tensor flattens to (1,), as in PyTorch
    const int64_t start = attrs.Int("start_dim"), end = attrs.Int("end_dim");
    OF_CHECK((start == 0 || start == -1) && (end == 0 || end == -1))
        << "start_dim " << start << " and end_dim " << end << " are out of range for a 0-d tensor (expected 0 or -1)";
    return {{in[0].dtype, Shape{1}, in[0].device}};
  }
  const int64_t start = NormalizeAxis(attrs.Int("start_dim"), s.ndim(), "start_dim");
  const int64_t end = NormalizeAxis(attrs.Int("end_dim"), s.ndim(), "end_dim");
  OF_CHECK(start <= end) << "start_dim " << attrs.Int("start_dim") << " comes after end_dim " << attrs.Int("end_dim")
                         << " for a tensor of shape " << s;
  Shape out;
  Dim merged = 1;
  for (int64_t i = 0; i < s.ndim(); ++i) {
    if (i < start || i > end) {
      out.push_back(s[i]);
    } else {
      merged *= s[i];
      if (i == end) out.push_back(merged);
    }
  }
  return {{in[0].dtype, std::move(out), in[0].device}};
}

// Which dims squeeze removes: the listed ones (each must be size 1; a dim whose size is not known yet
// is taken to be 1 and checked when it is), or every known size-1 dim.
std::vector<bool> SqueezedDims(const Shape& s, const std::vector<int64_t>& dims) {
  std::vector<bool> removed(static_cast<size_t>(s.ndim()), false);
  if (dims.empty()) {
    for (int64_t i = 0; i < s.ndim(); ++i) removed[static_cast<size_t>(i)] = s[i] == 1;
    return removed;
  }
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = NormalizeEntry(dims[k], s.ndim(), "dims", k);
    OF_CHECK(!removed[static_cast<size_t>(d)]) << "dims[" << k << "] (" << dims[k] << ") appears more than once";
    OF_CHECK(!s[d].is_known() || s[d] == 1)
        << "dims[" << k << "] is dim " << dims[k] << " of shape " << s << ", which has size " << s[d] << ", not 1";
    removed[static_cast<size_t>(d)] = true;
  }
  return removed;
}

std::vector<TensorMeta> InferSqueeze(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  const std::vector<bool> removed = SqueezedDims(s, attrs.Ints("dims"));
  Shape out;
  for (int64_t i = 0; i < s.ndim(); ++i) {
    if (!removed[static_cast<size_t>(i)]) out.push_back(s[i]);
  }
  return {{in[0].dtype, std::move(out), in[0].device}};
}
TensorPtr SqueezeView(const TensorPtr& x, const TensorMeta& out, const Attrs& attrs) {
  const std::vector<bool> removed = SqueezedDims(x->shape(), attrs.Ints("dims"));
  std::vector<int64_t> strides;
  for (int64_t i = 0; i < x->ndim(); ++i) {
    if (!removed[static_cast<size_t>(i)]) strides.push_back(x->strides()[static_cast<size_t>(i)]);
  }
  return Tensor::MakeView(*x, out.shape, std::move(strides), x->storage_offset());
}

std::vector<TensorMeta> InferUnsqueeze(std::span<const TensorMeta> in, const Attrs& attrs) {
  return {{in[0].dtype, UnsqueezeShape(in[0].shape, attrs.Int("dim")), in[0].device}};
}
TensorPtr UnsqueezeView(const TensorPtr& x, const TensorMeta& out, const Attrs& attrs) {
  const int64_t d = NormalizeAxis(attrs.Int("dim"), x->ndim() + 1, "unsqueeze dim");
  std::vector<int64_t> strides = x->strides();
  const int64_t stride = d < x->ndim() ? x->shape()[d].value() * strides[static_cast<size_t>(d)] : 1;
  strides.insert(strides.begin() + d, stride);
  return Tensor::MakeView(*x, out.shape, std::move(strides), x->storage_offset());
}

// ---- transpose, permute ------------------------------------------------------------------------------

// The permutation `dims` with each entry made non-negative; InvalidArgument unless it is one of [0, ndim).
std::vector<int64_t> NormalizePermutation(const std::vector<int64_t>& dims, const Shape& s) {
  OF_CHECK(static_cast<int64_t>(dims.size()) == s.ndim())
      << "dims [" << fmt::format("{}", fmt::join(dims, ", ")) << "] has " << dims.size()
      << " entries for a tensor of shape " << s << " with " << s.ndim() << " dims";
  std::vector<int64_t> perm(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t k = 0; k < dims.size(); ++k) {
    perm[k] = NormalizeEntry(dims[k], s.ndim(), "dims", k);
    OF_CHECK(!seen[static_cast<size_t>(perm[k])]) << "dims [" << fmt::format("{}", fmt::join(dims, ", "))
                                                  << "] is not a permutation: dim " << perm[k] << " appears twice";
    seen[static_cast<size_t>(perm[k])] = true;
  }
  return perm;
}

std::vector<int64_t> TransposePermutation(int64_t ndim, const Attrs& attrs) {
  std::vector<int64_t> perm(static_cast<size_t>(ndim));
  for (int64_t i = 0; i < ndim; ++i) perm[static_cast<size_t>(i)] = i;
  if (ndim == 0) {  // as in PyTorch, a 0-d tensor transposes dims 0/-1 to itself
    OF_CHECK((attrs.Int("dim0") == 0 || attrs.Int("dim0") == -1) && (attrs.Int("dim1") == 0 || attrs.Int("dim1") == -1))
        << "dim0 " << attrs.Int("dim0") << " and dim1 " << attrs.Int("dim1")
        << " are out of range for a 0-d tensor (expected 0 or -1)";
    return perm;
  }
  std::swap(perm[static_cast<size_t>(NormalizeAxis(attrs.Int("dim0"), ndim, "dim0"))],
            perm[static_cast<size_t>(NormalizeAxis(attrs.Int("dim1"), ndim, "dim1"))]);
  return perm;
}

TensorMeta Permuted(const TensorMeta& in, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t p : perm) out.push_back(in.shape[p]);
  return {in.dtype, std::move(out), in.device};
}
TensorPtr PermutedView(const TensorPtr& x, const TensorMeta& out, const std::vector<int64_t>& perm) {
  std::vector<int64_t> strides;
  strides.reserve(perm.size());
  for (int64_t p : perm) strides.push_back(x->strides()[static_cast<size_t>(p)]);
  return Tensor::MakeView(*x, out.shape, std::move(strides), x->storage_offset());
}

std::vector<TensorMeta> InferTranspose(std::span<const TensorMeta> in, const Attrs& attrs) {
  return {Permuted(in[0], TransposePermutation(in[0].shape.ndim(), attrs))};
}
TensorPtr TransposeView(const TensorPtr& x, const TensorMeta& out, const Attrs& attrs) {
  return PermutedView(x, out, TransposePermutation(x->ndim(), attrs));
}
std::vector<TensorPtr> TransposeBackward(const BackwardContext& ctx) {
  return {ops::Transpose(ctx.grad_outputs[0], ctx.attrs.Int("dim0"), ctx.attrs.Int("dim1"))};
}

std::vector<TensorMeta> InferPermute(std::span<const TensorMeta> in, const Attrs& attrs) {
  return {Permuted(in[0], NormalizePermutation(attrs.Ints("dims"), in[0].shape))};
}
TensorPtr PermuteView(const TensorPtr& x, const TensorMeta& out, const Attrs& attrs) {
  return PermutedView(x, out, NormalizePermutation(attrs.Ints("dims"), x->shape()));
}
std::vector<TensorPtr> PermuteBackward(const BackwardContext& ctx) {
  const std::vector<int64_t> perm = NormalizePermutation(ctx.attrs.Ints("dims"), ctx.inputs[0]->shape());
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {ops::Permute(ctx.grad_outputs[0], inverse)};
}

// ---- contiguous --------------------------------------------------------------------------------------

std::vector<TensorMeta> InferSame(std::span<const TensorMeta> in, const Attrs&) { return {in[0]}; }
void ContiguousKernel(KernelContext& ctx) { CopyStrided(ctx.in(0), ctx.out(0), &ctx.pool); }
std::vector<TensorPtr> IdentityBackward(const BackwardContext& ctx) { return {ctx.grad_outputs[0]}; }

// ---- narrow ------------------------------------------------------------------------------------------

struct NarrowRange {
  int64_t dim, start;
};
// Checks dim, start and length against `s`; a negative start counts from the end of the dim.
NarrowRange CheckNarrow(const Shape& s, const Attrs& attrs) {
  OF_CHECK(s.ndim() > 0) << "cannot narrow a 0-d tensor";
  const int64_t dim = NormalizeAxis(attrs.Int("dim"), s.ndim(), "dim");
  int64_t start = attrs.Int("start");
  const int64_t length = attrs.Int("length");
  const Dim size = s[dim];
  OF_CHECK(length >= 0) << "length " << length << " is negative";
  if (start < 0) {
    OF_CHECK(size.is_known()) << "a negative start (" << start << ") needs a known size of dim " << dim << " in shape "
                              << s;
    start += size.value();
  }
  OF_CHECK(start >= 0 && (!size.is_known() || start <= size.value()))
      << "start " << attrs.Int("start") << " is out of range for dim " << dim << " of shape " << s;
  // length <= size - start, which cannot overflow (0 <= start <= size), unlike start + length.
  OF_CHECK(size.is_known() ? length <= size.value() - start : length <= std::numeric_limits<int64_t>::max() - start)
      << "start " << start << " + length " << length << " is past the end of dim " << dim << " (size " << size
      << ") of shape " << s;
  return {dim, start};
}

std::vector<TensorMeta> InferNarrow(std::span<const TensorMeta> in, const Attrs& attrs) {
  const NarrowRange r = CheckNarrow(in[0].shape, attrs);
  TensorMeta out = in[0];
  out.shape[r.dim] = attrs.Int("length");
  return {out};
}
TensorPtr NarrowView(const TensorPtr& x, const TensorMeta& out, const Attrs& attrs) {
  const NarrowRange r = CheckNarrow(x->shape(), attrs);
  return Tensor::MakeView(*x, out.shape, x->strides(),
                          x->storage_offset() + r.start * x->strides()[static_cast<size_t>(r.dim)]);
}
std::vector<TensorPtr> NarrowBackward(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get("narrow_backward");
  const NarrowRange r = CheckNarrow(ctx.inputs[0]->shape(), ctx.attrs);
  return {Apply1(op, {ctx.grad_outputs[0], ctx.inputs[0]}, {{"dim", r.dim}, {"start", r.start}})};
}

// narrow_backward(dy, like): zeros of like's shape with dy written at [start, start + dy's size) of dim.
std::vector<TensorMeta> InferNarrowGrad(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta &dy = in[0], &like = in[1];
  OF_CHECK(dy.dtype == like.dtype) << "dy is " << dy.dtype << " but like is " << like.dtype;
  OF_CHECK(dy.shape.ndim() == like.shape.ndim() && dy.shape.ndim() > 0)
      << "dy has shape " << dy.shape << " but like has shape " << like.shape;
  const int64_t dim = NormalizeAxis(attrs.Int("dim"), like.shape.ndim(), "dim");
  const int64_t start = attrs.Int("start");
  for (int64_t i = 0; i < like.shape.ndim(); ++i) {
    const Dim a = dy.shape[i], b = like.shape[i];
    const bool ok = i == dim ? start >= 0 && (!a.is_known() || !b.is_known() || start + a.value() <= b.value())
                             : !(a.is_known() && b.is_known() && a != b);
    OF_CHECK(ok) << "dy of shape " << dy.shape << " does not fit into like of shape " << like.shape << " at start "
                 << start << " of dim " << dim;
  }
  return {like};
}
void NarrowGradKernel(KernelContext& ctx) {
  const Tensor &dy = ctx.in(0), &out = ctx.out(0);
  std::memset(out.raw_data(), 0, out.nbytes());
  const int64_t dim = NormalizeAxis(ctx.attrs.Int("dim"), out.ndim(), "dim");
  const int64_t offset = out.storage_offset() + ctx.attrs.Int("start") * out.strides()[static_cast<size_t>(dim)];
  if (dy.numel() > 0) CopyStrided(dy, *Tensor::MakeView(out, dy.shape(), out.strides(), offset), &ctx.pool);
}
std::vector<TensorPtr> NarrowGradBackward(const BackwardContext& ctx) {
  const int64_t dim = NormalizeAxis(ctx.attrs.Int("dim"), ctx.inputs[0]->ndim(), "dim");
  return {ops::Narrow(ctx.grad_outputs[0], dim, ctx.attrs.Int("start"), ctx.inputs[0]->shape()[dim].value()), nullptr};
}

// ---- cat, stack --------------------------------------------------------------------------------------

// Checks that tensors[i] matches tensors[0] in dtype and rank, and its dims other than `skip` (-1: none)
// against `shape`, refining unknown dims of `shape` with what tensors[i] knows.
void MergeShapes(std::span<const TensorMeta> in, size_t i, int64_t skip, Shape& shape) {
  const TensorMeta& t = in[i];
  OF_CHECK(t.dtype == in[0].dtype) << "tensors[" << i << "] is " << t.dtype << " but tensors[0] is " << in[0].dtype
                                   << "; all tensors need one dtype (cast them first)";
  OF_CHECK(t.shape.ndim() == shape.ndim())
      << "tensors[" << i << "] has shape " << t.shape << " (" << t.shape.ndim() << "-D) but tensors[0] has shape "
      << in[0].shape << " (" << in[0].shape.ndim() << "-D)";
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    const Dim a = shape[d], b = t.shape[d];
    if (d == skip || a == b) continue;
    OF_CHECK(!(a.is_known() && b.is_known()))
        << "tensors[" << i << "] has shape " << t.shape << " but tensors[0] has shape " << in[0].shape
        << ": sizes differ at dim " << d << (skip >= 0 ? fmt::format(" (cat is along dim {})", skip) : "");
    // What the tensors say about the dim: a known size, else a symbol (when only one is named).
    if (b.is_known() || (a.is_unknown() && b.is_symbol())) {
      shape[d] = b;
    } else if (a.is_symbol() && b.is_symbol()) {
      shape[d] = Dim::Unknown();
    }
  }
}

std::vector<TensorMeta> InferCat(std::span<const TensorMeta> in, const Attrs& attrs) {
  OF_CHECK(in[0].shape.ndim() > 0) << "tensors[0] is 0-d; cat needs tensors with at least one dim (use stack)";
  const int64_t dim = NormalizeAxis(attrs.Int("dim"), in[0].shape.ndim(), "dim");
  Shape shape = in[0].shape;
  Dim total = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    MergeShapes(in, i, dim, shape);
    total += in[i].shape[dim];
  }
  shape[dim] = total;
  return {{in[0].dtype, std::move(shape), in[0].device}};
}
void CatKernel(KernelContext& ctx) {
  const Tensor& out = ctx.out(0);
  const int64_t dim = NormalizeAxis(ctx.attrs.Int("dim"), out.ndim(), "dim");
  const int64_t stride = out.strides()[static_cast<size_t>(dim)];
  int64_t offset = out.storage_offset();
  for (const TensorPtr& in : ctx.inputs) {
    if (in->numel() > 0) CopyStrided(*in, *Tensor::MakeView(out, in->shape(), out.strides(), offset), &ctx.pool);
    offset += in->shape()[dim].value() * stride;
  }
}
std::vector<TensorPtr> CatBackward(const BackwardContext& ctx) {
  const int64_t dim = NormalizeAxis(ctx.attrs.Int("dim"), ctx.inputs[0]->ndim(), "dim");
  std::vector<TensorPtr> grads(ctx.inputs.size());
  int64_t start = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const int64_t size = ctx.inputs[i]->shape()[dim].value();
    if (ctx.needs_input_grad[i]) grads[i] = ops::Narrow(ctx.grad_outputs[0], dim, start, size);
    start += size;
  }
  return grads;
}

std::vector<TensorMeta> InferStack(std::span<const TensorMeta> in, const Attrs& attrs) {
  Shape shape = in[0].shape;
  for (size_t i = 0; i < in.size(); ++i) MergeShapes(in, i, -1, shape);
  const int64_t dim = NormalizeAxis(attrs.Int("dim"), shape.ndim() + 1, "dim");
  shape.insert(dim, Dim(static_cast<int64_t>(in.size())));
  return {{in[0].dtype, std::move(shape), in[0].device}};
}
void StackKernel(KernelContext& ctx) {
  const Tensor& out = ctx.out(0);
  const int64_t dim = NormalizeAxis(ctx.attrs.Int("dim"), out.ndim(), "dim");
  std::vector<int64_t> strides = out.strides();
  const int64_t stride = strides[static_cast<size_t>(dim)];
  strides.erase(strides.begin() + dim);
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& in = ctx.in(i);
    if (in.numel() == 0) continue;
    const int64_t offset = out.storage_offset() + static_cast<int64_t>(i) * stride;
    CopyStrided(in, *Tensor::MakeView(out, in.shape(), strides, offset), &ctx.pool);
  }
}
std::vector<TensorPtr> StackBackward(const BackwardContext& ctx) {
  const int64_t dim = NormalizeAxis(ctx.attrs.Int("dim"), ctx.inputs[0]->ndim() + 1, "dim");
  std::vector<TensorPtr> grads(ctx.inputs.size());
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (ctx.needs_input_grad[i]) {
      grads[i] = ops::Squeeze(ops::Narrow(ctx.grad_outputs[0], dim, static_cast<int64_t>(i), 1), {dim});
    }
  }
  return grads;
}

// ---- expand ------------------------------------------------------------------------------------------

std::vector<TensorMeta> InferExpand(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  const std::vector<int64_t>& raw = attrs.Ints("shape");
  const int64_t lead = static_cast<int64_t>(raw.size()) - s.ndim();
  OF_CHECK(lead >= 0) << "shape " << TargetString(raw) << " has fewer dims than the input's shape " << s;
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(raw.size()); ++i) {
    const int64_t r = raw[static_cast<size_t>(i)];
    if (i < lead) {
      OF_CHECK(r != -1) << "shape " << TargetString(raw) << " has -1 at new leading dim " << i << " (input shape " << s
                        << "); -1 can only keep an existing dim";
    }
    const Dim want = r == -1 ? s[i - lead] : DimEntry(r, "shape", static_cast<size_t>(i));
    if (i < lead) {
      out.push_back(want);
      continue;
    }
    const Dim have = s[i - lead];
    OF_CHECK(!(have.is_known() && want.is_known() && have != want && have != 1))
        << "cannot expand shape " << s << " to " << TargetString(raw) << ": dim " << i - lead << " has size " << have
        << ", and only size-1 dims can be expanded";
    // An unknown target keeps what the input knows (unless it is 1, which could be expanded to anything).
    out.push_back(!want.is_known() && have.is_known() && have != 1 ? have : want);
  }
  return {{in[0].dtype, std::move(out), in[0].device}};
}
TensorPtr ExpandView(const TensorPtr& x, const TensorMeta& out, const Attrs& attrs) {
  CheckConcreteTarget(attrs.Ints("shape"), "shape");
  const int64_t lead = out.shape.ndim() - x->ndim();
  std::vector<int64_t> strides(static_cast<size_t>(out.shape.ndim()), 0);
  for (int64_t i = 0; i < x->ndim(); ++i) {
    if (x->shape()[i] == out.shape[i + lead]) {
      strides[static_cast<size_t>(i + lead)] = x->strides()[static_cast<size_t>(i)];
    }
  }
  return Tensor::MakeView(*x, out.shape, std::move(strides), x->storage_offset());
}
std::vector<TensorPtr> ExpandBackward(const BackwardContext& ctx) {
  return {ops::SumToShape(ctx.grad_outputs[0], ctx.inputs[0]->shape())};
}

const std::vector<int64_t> kNoInts;

}  // namespace

namespace ops {

TensorPtr Reshape(const TensorPtr& x, const std::vector<int64_t>& shape) {
  static const OpDef& op = OpRegistry::Global().Get("reshape");
  return Apply1(op, {x}, {{"shape", shape}});
}
TensorPtr View(const TensorPtr& x, const std::vector<int64_t>& shape) {
  static const OpDef& op = OpRegistry::Global().Get("view");
  return Apply1(op, {x}, {{"shape", shape}});
}
TensorPtr Flatten(const TensorPtr& x, int64_t start_dim, int64_t end_dim) {
  static const OpDef& op = OpRegistry::Global().Get("flatten");
  return Apply1(op, {x}, {{"start_dim", start_dim}, {"end_dim", end_dim}});
}
TensorPtr Squeeze(const TensorPtr& x, const std::vector<int64_t>& dims) {
  static const OpDef& op = OpRegistry::Global().Get("squeeze");
  return Apply1(op, {x}, {{"dims", dims}});
}
TensorPtr Unsqueeze(const TensorPtr& x, int64_t dim) {
  static const OpDef& op = OpRegistry::Global().Get("unsqueeze");
  return Apply1(op, {x}, {{"dim", dim}});
}
TensorPtr Transpose(const TensorPtr& x, int64_t dim0, int64_t dim1) {
  static const OpDef& op = OpRegistry::Global().Get("transpose");
  return Apply1(op, {x}, {{"dim0", dim0}, {"dim1", dim1}});
}
TensorPtr Permute(const TensorPtr& x, const std::vector<int64_t>& dims) {
  static const OpDef& op = OpRegistry::Global().Get("permute");
  return Apply1(op, {x}, {{"dims", dims}});
}
TensorPtr Contiguous(const TensorPtr& x) {
  static const OpDef& op = OpRegistry::Global().Get("contiguous");
  if (x && OpInterceptor::Current() == nullptr && x->is_contiguous()) return x;
  return Apply1(op, {x});
}
TensorPtr Narrow(const TensorPtr& x, int64_t dim, int64_t start, int64_t length) {
  static const OpDef& op = OpRegistry::Global().Get("narrow");
  return Apply1(op, {x}, {{"dim", dim}, {"start", start}, {"length", length}});
}
namespace {
// The tensors cast to their promoted dtype (the cat and stack ops copy bytes, so they take one dtype;
// the casts are ops too: traced in graphs, differentiable). Null entries are left for dispatch to name.
std::vector<TensorPtr> Promoted(const std::vector<TensorPtr>& tensors) {
  Symbol<DType> dtype;
  for (const TensorPtr& t : tensors) {
    if (t) dtype = dtype ? PromoteTypes(dtype, t->dtype()) : t->dtype();
  }
  std::vector<TensorPtr> out = tensors;
  for (TensorPtr& t : out) {
    if (t && t->dtype() != dtype) t = Cast(t, dtype);
  }
  return out;
}
}  // namespace

TensorPtr Cat(const std::vector<TensorPtr>& tensors, int64_t dim) {
  static const OpDef& op = OpRegistry::Global().Get("cat");
  return Apply1(op, Promoted(tensors), {{"dim", dim}});
}
TensorPtr Stack(const std::vector<TensorPtr>& tensors, int64_t dim) {
  static const OpDef& op = OpRegistry::Global().Get("stack");
  return Apply1(op, Promoted(tensors), {{"dim", dim}});
}
TensorPtr Expand(const TensorPtr& x, const std::vector<int64_t>& shape) {
  static const OpDef& op = OpRegistry::Global().Get("expand");
  return Apply1(op, {x}, {{"shape", shape}});
}

}  // namespace ops

void RegisterViewOps(OpRegistry& registry) {
  auto op = [](std::string name, std::vector<std::string> inputs, std::vector<AttrSpec> attrs, InferFn infer,
               BackwardFn backward) {
    OpDef def;
    def.name = std::move(name);
    def.inputs = std::move(inputs);
    def.outputs = {"y"};
    def.attrs = std::move(attrs);
    def.infer = infer;
    def.backward = backward;
    return def;
  };
  auto view_op = [&](std::string name, std::vector<AttrSpec> attrs, InferFn infer, ViewFn view, BackwardFn backward) {
    OpDef def = op(std::move(name), {"x"}, std::move(attrs), infer, backward);
    def.view = view;
    registry.Register(std::move(def));
  };
  // Byte copies: every dtype, inputs at any strides.
  auto copy_op = [&](std::string name, std::vector<std::string> inputs, std::vector<AttrSpec> attrs, InferFn infer,
                     KernelFn kernel, BackwardFn backward) {
    OpDef def = op(std::move(name), std::move(inputs), std::move(attrs), infer, backward);
    def.kernels = {{DeviceType::kCPU, kAllTypes, kernel}};
    def.strided_inputs = true;
    return def;
  };
  const AttrSpec shape{"shape", kNoInts, true};
  view_op("reshape", {shape}, InferReshape, ReshapeView, ReshapeBackward);
  view_op("view", {shape}, InferReshape, ViewView, ReshapeBackward);
  view_op("flatten", {{"start_dim", int64_t{0}}, {"end_dim", int64_t{-1}}}, InferFlatten, FlattenView, ReshapeBackward);
  view_op("squeeze", {{"dims", kNoInts}}, InferSqueeze, SqueezeView, ReshapeBackward);
  view_op("unsqueeze", {{"dim", int64_t{0}, true}}, InferUnsqueeze, UnsqueezeView, ReshapeBackward);
  view_op("transpose", {{"dim0", int64_t{0}, true}, {"dim1", int64_t{0}, true}}, InferTranspose, TransposeView,
          TransposeBackward);
  view_op("permute", {{"dims", kNoInts, true}}, InferPermute, PermuteView, PermuteBackward);
  view_op("narrow", {{"dim", int64_t{0}, true}, {"start", int64_t{0}, true}, {"length", int64_t{0}, true}}, InferNarrow,
          NarrowView, NarrowBackward);
  view_op("expand", {shape}, InferExpand, ExpandView, ExpandBackward);

  registry.Register(copy_op("contiguous", {"x"}, {}, InferSame, ContiguousKernel, IdentityBackward));
  // dy is copied at its strides; like gives only its shape.
  registry.Register(copy_op("narrow_backward", {"dy", "like"}, {{"dim", int64_t{0}, true}, {"start", int64_t{0}, true}},
                            InferNarrowGrad, NarrowGradKernel, NarrowGradBackward));
  for (bool stack : {false, true}) {
    OpDef def = copy_op(stack ? "stack" : "cat", {"tensors"}, {{"dim", int64_t{0}}}, stack ? InferStack : InferCat,
                        stack ? StackKernel : CatKernel, stack ? StackBackward : CatBackward);
    def.variadic_inputs = true;
    registry.Register(std::move(def));
  }
}

}  // namespace oneflow
