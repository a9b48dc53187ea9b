// Views and layout: every op against reference index arithmetic written here (on row-major value
// lists), storage sharing and contiguity of views, non-contiguous inputs, chains of views, copies for
// every dtype, symbolic shape inference, finite-difference gradients and errors.
#include <functional>
#include <initializer_list>

#include "core/op/dispatch.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

std::vector<Symbol<DType>> AllDTypes() {
  std::vector<Symbol<DType>> out;
  for (DataType d : kAllTypes) out.push_back(DType::Get(d));
  return out;
}
// Views have no kernel and move no data; these cover each kind of element.
const std::vector<Symbol<DType>>& ViewDTypes() {
  static const std::vector<Symbol<DType>> d = {DType::Float32(), DType::Float64(), DType::Int64(), DType::Bool()};
  return d;
}

// A tensor's values and shape, for references computed independently of the code under test.
struct Ref {
  Shape shape;
  std::vector<double> v;
};
Ref RefOf(const TensorPtr& t) { return {t->shape(), ToDoubles(t)}; }

Ref RefPermute(const Ref& x, const std::vector<int64_t>& perm) {
  Shape shape;
  for (int64_t p : perm) shape.push_back(x.shape[p]);
  Ref out{shape, std::vector<double>(x.v.size())};
  for (int64_t o = 0; o < static_cast<int64_t>(x.v.size()); ++o) {
    const std::vector<int64_t> oi = Unravel(o, shape);
    std::vector<int64_t> ii(oi.size());
    for (size_t k = 0; k < perm.size(); ++k) ii[static_cast<size_t>(perm[k])] = oi[k];
    out.v[static_cast<size_t>(o)] = x.v[static_cast<size_t>(Ravel(ii, x.shape))];
  }
  return out;
}

Ref RefNarrow(const Ref& x, int64_t dim, int64_t start, int64_t length) {
  Shape shape = x.shape;
  shape[dim] = length;
  Ref out{shape, {}};
  for (int64_t o = 0; o < shape.numel(); ++o) {
    std::vector<int64_t> i = Unravel(o, shape);
    i[static_cast<size_t>(dim)] += start;
    out.v.push_back(x.v[static_cast<size_t>(Ravel(i, x.shape))]);
  }
  return out;
}

Ref RefExpand(const Ref& x, const Shape& shape) {
  Ref out{shape, {}};
  for (int64_t o = 0; o < shape.numel(); ++o) {
    out.v.push_back(x.v[static_cast<size_t>(BroadcastIndex(Unravel(o, shape), x.shape, shape))]);
  }
  return out;
}

Ref RefCat(const std::vector<Ref>& xs, int64_t dim) {
  Shape shape = xs[0].shape;
  int64_t total = 0;
  for (const Ref& x : xs) total += x.shape[dim].value();
  shape[dim] = total;
  Ref out{shape, {}};
  for (int64_t o = 0; o < shape.numel(); ++o) {
    std::vector<int64_t> i = Unravel(o, shape);
    size_t k = 0;
    while (i[static_cast<size_t>(dim)] >= xs[k].shape[dim].value())
      i[static_cast<size_t>(dim)] -= xs[k++].shape[dim].value();
    out.v.push_back(xs[k].v[static_cast<size_t>(Ravel(i, xs[k].shape))]);
  }
  return out;
}

// Byte copies and views are exact.
void ExpectRef(const TensorPtr& t, Symbol<DType> dtype, const Ref& want) {
  ExpectTensorNear(t, dtype, want.shape, want.v, 0, 0);
}

bool SameStorage(const TensorPtr& a, const TensorPtr& b) { return a->storage() == b->storage(); }


TensorPtr Leaf(const Shape& shape) {
  TensorPtr t = RandomTensor(DType::Float64(), shape);
  t->set_requires_grad(true);
  return t;
}

const OpDef& Op(std::string_view name) { return OpRegistry::Global().Get(name); }

// ---- reshape, view, flatten ------------------------------------------------------------------------

TEST(Reshape, ContiguousInputGivesAView) {
  for (Symbol<DType> dt : ViewDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr x = RandomTensor(dt, Shape{2, 3, 4});
    const Ref r = RefOf(x);
    const std::vector<std::pair<std::vector<int64_t>, Shape>> cases = {{{4, -1}, Shape{4, 6}},
                                                                       {{24}, Shape{24}},
                                                                       {{-1}, Shape{24}},
                                                                       {{2, 3, 2, 2}, Shape{2, 3, 2, 2}},
                                                                       {{1, 24, 1}, Shape{1, 24, 1}},
                                                                       {{3, 1, -1}, Shape{3, 1, 8}}};
    for (const auto& [target, want] : cases) {
      TensorPtr y = ops::Reshape(x, target);
      EXPECT_TRUE(SameStorage(x, y));
      EXPECT_TRUE(y->is_contiguous());
      ExpectRef(y, dt, {want, r.v});
    }
    TensorPtr one = RandomTensor(dt, Shape{1, 1});
    ExpectRef(ops::Reshape(one, {}), dt, {Shape{}, ToDoubles(one)});
    ExpectRef(ops::Reshape(ops::Reshape(one, {}), {1, 1, 1}), dt, {Shape{1, 1, 1}, ToDoubles(one)});
    TensorPtr empty = RandomTensor(dt, Shape{0, 3});
    ExpectRef(ops::Reshape(empty, {3, 0, 5}), dt, {Shape{3, 0, 5}, {}});
    MarkCovered("reshape", dt);
  }
}

TEST(Reshape, NonContiguousInputsViewWhenStridesAllowElseCopy) {
  for (Symbol<DType> dt : ViewDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr x = RandomTensor(dt, Shape{2, 3, 4});
    // (3, 2, 4) with strides (4, 12, 1): splitting a dim is a view, merging dims 1 and 2 is not.
    TensorPtr p = ops::Permute(x, {1, 0, 2});
    const Ref rp = RefPermute(RefOf(x), {1, 0, 2});
    TensorPtr split = ops::Reshape(p, {3, 2, 2, 2});
    EXPECT_TRUE(SameStorage(x, split));
    EXPECT_FALSE(split->is_contiguous());
    EXPECT_EQ(split->strides(), (std::vector<int64_t>{4, 12, 2, 1}));
    ExpectRef(split, dt, {Shape{3, 2, 2, 2}, rp.v});
    TensorPtr merged = ops::Reshape(p, {3, 8});
    EXPECT_FALSE(SameStorage(x, merged));
    EXPECT_TRUE(merged->is_contiguous());
    ExpectRef(merged, dt, {Shape{3, 8}, rp.v});

    // Narrowed rows (strides (6, 1)): the rows stay apart, so merging copies, splitting rows views.
    TensorPtr m = RandomTensor(dt, Shape{4, 6});
    TensorPtr n = ops::Narrow(m, 1, 1, 3);
    const Ref rn = RefNarrow(RefOf(m), 1, 1, 3);
    TensorPtr rows = ops::Reshape(n, {2, 2, 3});
    EXPECT_TRUE(SameStorage(m, rows));
    EXPECT_EQ(rows->strides(), (std::vector<int64_t>{12, 6, 1}));
    ExpectRef(rows, dt, {Shape{2, 2, 3}, rn.v});
    TensorPtr flat = ops::Reshape(n, {-1});
    EXPECT_FALSE(SameStorage(m, flat));
    ExpectRef(flat, dt, {Shape{12}, rn.v});

    // Expanded (stride 0) dims split into stride-0 dims.
    TensorPtr c = RandomTensor(dt, Shape{3, 1});
    TensorPtr e = ops::Expand(c, {3, 4});
    const Ref re = RefExpand(RefOf(c), Shape{3, 4});
    TensorPtr es = ops::Reshape(e, {3, 2, 2});
    EXPECT_TRUE(SameStorage(c, es));
    EXPECT_EQ(es->strides(), (std::vector<int64_t>{1, 0, 0}));
    ExpectRef(es, dt, {Shape{3, 2, 2}, re.v});
    ExpectRef(ops::Reshape(e, {12}), dt, {Shape{12}, re.v});

    // The harness's every-other-element layout.
    TensorPtr nc = NonContiguous(RandomTensor(dt, Shape{3, 4}));
    ExpectRef(ops::Reshape(nc, {4, 3}), dt, {Shape{4, 3}, ToDoubles(nc)});
    TensorPtr nc_split = ops::Reshape(nc, {3, 2, 2});
    EXPECT_TRUE(SameStorage(nc, nc_split));
    ExpectRef(nc_split, dt, {Shape{3, 2, 2}, ToDoubles(nc)});
  }
}

TEST(View, SharesStorageOrSaysWhyNot) {
  for (Symbol<DType> dt : ViewDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr x = RandomTensor(dt, Shape{2, 3, 4});
    TensorPtr y = ops::View(x, {6, -1});
    EXPECT_TRUE(SameStorage(x, y));
    ExpectRef(y, dt, {Shape{6, 4}, ToDoubles(x)});
    TensorPtr t = ops::Transpose(x, 1, 2);  // (2, 4, 3)
    TensorPtr tv = ops::View(t, {2, 2, 2, 3});
    EXPECT_TRUE(SameStorage(x, tv));
    ExpectRef(tv, dt, {Shape{2, 2, 2, 3}, ToDoubles(t)});
    ExpectError([&] { ops::View(t, {2, 12}); }, {"view:", "(2, 4, 3)", "[12, 1, 4]", "use reshape"});
    MarkCovered("view", dt);
  }
}

TEST(Flatten, MergesARangeOfDims) {
  for (Symbol<DType> dt : ViewDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr x = RandomTensor(dt, Shape{2, 3, 4, 5});
    const std::vector<double> v = ToDoubles(x);
    TensorPtr a = ops::Flatten(x, 1, 2);
    EXPECT_TRUE(SameStorage(x, a));
    ExpectRef(a, dt, {Shape{2, 12, 5}, v});
    ExpectRef(ops::Flatten(x), dt, {Shape{120}, v});
    ExpectRef(ops::Flatten(x, -2), dt, {Shape{2, 3, 20}, v});
    ExpectRef(ops::Flatten(x, 2, 2), dt, {Shape{2, 3, 4, 5}, v});
    TensorPtr s = RandomTensor(dt, Shape{});
    ExpectRef(ops::Flatten(s), dt, {Shape{1}, ToDoubles(s)});
    // A transposed input cannot merge in place: a copy.
    TensorPtr t = ops::Transpose(x, 0, 3);  // (5, 3, 4, 2)
    TensorPtr f = ops::Flatten(t, 0, 1);
    EXPECT_FALSE(SameStorage(x, f));
    ExpectRef(f, dt, {Shape{15, 4, 2}, RefPermute(RefOf(x), {3, 1, 2, 0}).v});
    // ...but dims 1 and 2 of it are still contiguous with each other: a view.
    TensorPtr g = ops::Flatten(t, 1, 2);
    EXPECT_TRUE(SameStorage(x, g));
    ExpectRef(g, dt, {Shape{5, 12, 2}, RefPermute(RefOf(x), {3, 1, 2, 0}).v});
    MarkCovered("flatten", dt);
  }
}

// ---- squeeze, unsqueeze ------------------------------------------------------------------------------

TEST(Squeeze, RemovesSizeOneDims) {
  for (Symbol<DType> dt : ViewDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr x = RandomTensor(dt, Shape{1, 3, 1, 2});
    const std::vector<double> v = ToDoubles(x);
    TensorPtr all = ops::Squeeze(x);
    EXPECT_TRUE(SameStorage(x, all));
    EXPECT_TRUE(all->is_contiguous());
    ExpectRef(all, dt, {Shape{3, 2}, v});
    ExpectRef(ops::Squeeze(x, {0}), dt, {Shape{3, 1, 2}, v});
    ExpectRef(ops::Squeeze(x, {-2}), dt, {Shape{1, 3, 2}, v});
    ExpectRef(ops::Squeeze(x, {2, 0}), dt, {Shape{3, 2}, v});
    TensorPtr none = RandomTensor(dt, Shape{3, 2});
    ExpectRef(ops::Squeeze(none), dt, RefOf(none));
    TensorPtr nc = NonContiguous(x);
    TensorPtr s = ops::Squeeze(nc);
    EXPECT_TRUE(SameStorage(nc, s));
    EXPECT_FALSE(s->is_contiguous());
    EXPECT_EQ(s->strides(), (std::vector<int64_t>{nc->strides()[1], nc->strides()[3]}));
    ExpectRef(s, dt, {Shape{3, 2}, v});
    MarkCovered("squeeze", dt);
  }
}

TEST(Unsqueeze, InsertsASizeOneDim) {
  for (Symbol<DType> dt : ViewDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr x = RandomTensor(dt, Shape{3, 2});
    const std::vector<double> v = ToDoubles(x);
    const std::vector<std::pair<int64_t, Shape>> cases = {
        {0, Shape{1, 3, 2}}, {1, Shape{3, 1, 2}}, {2, Shape{3, 2, 1}}, {-1, Shape{3, 2, 1}}, {-3, Shape{1, 3, 2}}};
    for (const auto& [dim, shape] : cases) {
      TensorPtr y = ops::Unsqueeze(x, dim);
      EXPECT_TRUE(SameStorage(x, y));
      EXPECT_TRUE(y->is_contiguous());
      ExpectRef(y, dt, {shape, v});
    }
    TensorPtr nc = NonContiguous(x);
    TensorPtr y = ops::Unsqueeze(nc, 1);
    EXPECT_FALSE(y->is_contiguous());
    ExpectRef(y, dt, {Shape{3, 1, 2}, v});
    TensorPtr s = RandomTensor(dt, Shape{});
    ExpectRef(ops::Unsqueeze(s, 0), dt, {Shape{1}, ToDoubles(s)});
    MarkCovered("unsqueeze", dt);
  }
}

// ---- transpose, permute ------------------------------------------------------------------------------

TEST(Transpose, SwapsTwoDims) {
  for (Symbol<DType> dt : ViewDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr x = RandomTensor(dt, Shape{2, 3, 4});
    const Ref r = RefOf(x);
    TensorPtr y = ops::Transpose(x, 0, 2);
    EXPECT_TRUE(SameStorage(x, y));
    EXPECT_FALSE(y->is_contiguous());
    ExpectRef(y, dt, RefPermute(r, {2, 1, 0}));
    ExpectRef(ops::Transpose(x, 1, -1), dt, RefPermute(r, {0, 2, 1}));
    TensorPtr same = ops::Transpose(x, 1, 1);
    EXPECT_TRUE(same->is_contiguous());
    ExpectRef(same, dt, r);
    TensorPtr nc = NonContiguous(x);
    ExpectRef(ops::Transpose(nc, -3, -2), dt, RefPermute(r, {1, 0, 2}));
    // Transposing twice is the identity, in data and in layout.
    TensorPtr back = ops::Transpose(y, 2, 0);
    EXPECT_TRUE(back->is_contiguous());
    ExpectRef(back, dt, r);
    MarkCovered("transpose", dt);
  }
}

TEST(Permute, ReordersDims) {
  for (Symbol<DType> dt : ViewDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr x = RandomTensor(dt, Shape{2, 3, 4, 5});
    const Ref r = RefOf(x);
    for (const std::vector<int64_t>& perm :
         std::vector<std::vector<int64_t>>{{3, 1, 0, 2}, {0, 1, 2, 3}, {1, 2, 3, 0}}) {
      TensorPtr y = ops::Permute(x, perm);
      EXPECT_TRUE(SameStorage(x, y));
      ExpectRef(y, dt, RefPermute(r, perm));
    }
    ExpectRef(ops::Permute(x, {-1, -2, 0, 1}), dt, RefPermute(r, {3, 2, 0, 1}));
    ExpectRef(ops::Permute(NonContiguous(x), {2, 0, 3, 1}), dt, RefPermute(r, {2, 0, 3, 1}));
    TensorPtr s = RandomTensor(dt, Shape{});
    ExpectRef(ops::Permute(s, {}), dt, RefOf(s));
    MarkCovered("permute", dt);
  }
}

// ---- narrow, expand ----------------------------------------------------------------------------------

// An empty tensor's views address nothing: their offset is 0 even where start * stride is huge (a byte
// offset of (2^62 - 1) * 8 overflowed when the view's data was read).
TEST(Narrow, EmptyViewsHaveNoOffset) {
  const TensorPtr x = Empty(DType::Int64(), Shape{int64_t{1} << 62, 0}, Device::CPU());
  const TensorPtr y = ops::Narrow(x, 0, (int64_t{1} << 62) - 1, 1);
  EXPECT_EQ(y->shape(), (Shape{1, 0}));
  EXPECT_EQ(y->storage_offset(), 0);
  EXPECT_EQ(y->raw_data(), x->raw_data());
  CopyToHost(*y, nullptr, 0);
}

TEST(Narrow, SlicesWithAnOffset) {
  for (Symbol<DType> dt : ViewDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr x = RandomTensor(dt, Shape{4, 5, 6});
    const Ref r = RefOf(x);
    TensorPtr y = ops::Narrow(x, 1, 1, 3);
    EXPECT_TRUE(SameStorage(x, y));
    EXPECT_EQ(y->storage_offset(), x->storage_offset() + 6);
    EXPECT_FALSE(y->is_contiguous());
    ExpectRef(y, dt, RefNarrow(r, 1, 1, 3));
    TensorPtr rows = ops::Narrow(x, 0, 2, 2);
    EXPECT_TRUE(rows->is_contiguous());
    ExpectRef(rows, dt, RefNarrow(r, 0, 2, 2));
    ExpectRef(ops::Narrow(x, -1, -2, 2), dt, RefNarrow(r, 2, 4, 2));
    ExpectRef(ops::Narrow(x, 2, 6, 0), dt, RefNarrow(r, 2, 6, 0));
    ExpectRef(ops::Narrow(ops::Narrow(x, 2, 1, 4), 2, 1, 2), dt, RefNarrow(r, 2, 2, 2));
    ExpectRef(ops::Narrow(NonContiguous(x), 2, 3, 3), dt, RefNarrow(r, 2, 3, 3));
    MarkCovered("narrow", dt);
  }
}

TEST(Expand, BroadcastsWithStrideZero) {
  for (Symbol<DType> dt : ViewDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr x = RandomTensor(dt, Shape{3, 1});
    const Ref r = RefOf(x);
    TensorPtr y = ops::Expand(x, {2, 3, 4});
    EXPECT_TRUE(SameStorage(x, y));
    EXPECT_EQ(y->strides(), (std::vector<int64_t>{0, 1, 0}));
    ExpectRef(y, dt, RefExpand(r, Shape{2, 3, 4}));
    ExpectRef(ops::Expand(x, {-1, 5}), dt, RefExpand(r, Shape{3, 5}));
    ExpectRef(ops::Expand(x, {3, 1}), dt, r);
    ExpectRef(ops::Expand(x, {3, 0}), dt, {Shape{3, 0}, {}});
    TensorPtr s = RandomTensor(dt, Shape{});
    ExpectRef(ops::Expand(s, {2, 3}), dt, RefExpand(RefOf(s), Shape{2, 3}));
    TensorPtr nc = NonContiguous(RandomTensor(dt, Shape{1, 4}));
    ExpectRef(ops::Expand(nc, {3, -1}), dt, RefExpand(RefOf(nc), Shape{3, 4}));
    MarkCovered("expand", dt);
  }
}

// ---- copies: contiguous, cat, stack, narrow_backward (every dtype) ---------------------------------------

TEST(Contiguous, CopiesStridedInputsOnly) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr x = RandomTensor(dt, Shape{3, 4, 5});
    const Ref r = RefOf(x);
    EXPECT_EQ(ops::Contiguous(x).get(), x.get());
    const std::vector<std::pair<TensorPtr, Ref>> cases = {
        {ops::Transpose(x, 0, 2), RefPermute(r, {2, 1, 0})},
        {NonContiguous(x), r},
        {ops::Narrow(x, 1, 1, 2), RefNarrow(r, 1, 1, 2)},
        {ops::Expand(ops::Narrow(x, 2, 0, 1), {2, 3, 4, 3}), RefExpand(RefNarrow(r, 2, 0, 1), Shape{2, 3, 4, 3})},
    };
    for (const auto& [in, want] : cases) {
      ASSERT_FALSE(in->is_contiguous());
      TensorPtr y = ops::Contiguous(in);
      EXPECT_FALSE(SameStorage(x, y));
      EXPECT_TRUE(y->is_contiguous());
      EXPECT_EQ(y->strides(), ContiguousStrides(y->shape()));
      ExpectRef(y, dt, want);
    }
    // Large enough to be split across threads.
    TensorPtr big = RandomTensor(dt, Shape{300, 257});
    ExpectRef(ops::Contiguous(ops::Transpose(big, 0, 1)), dt, RefPermute(RefOf(big), {1, 0}));
    // A short innermost dim whose outer neighbour is contiguous in the source, as NCHW -> NHWC of few
    // channels (copied in tiles: Note [Transposing copies]): partial tiles, on one thread and split.
    for (const Shape& s : {Shape{2, 3, 600}, Shape{8, 5, 2000}}) {
      TensorPtr planes = RandomTensor(dt, s);
      ExpectRef(ops::Contiguous(ops::Transpose(planes, 1, 2)), dt, RefPermute(RefOf(planes), {0, 2, 1}));
    }
    // Through the op itself (the functional returns contiguous inputs as they are).
    TensorPtr copy = Apply1(Op("contiguous"), {x});
    EXPECT_FALSE(SameStorage(x, copy));
    ExpectRef(copy, dt, r);
    MarkCovered("contiguous", dt);
  }
}

TEST(Cat, JoinsAlongADim) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr a = RandomTensor(dt, Shape{2, 3, 4}), b = RandomTensor(dt, Shape{2, 1, 4}),
              c = RandomTensor(dt, Shape{2, 5, 4}), e = RandomTensor(dt, Shape{2, 0, 4});
    ExpectRef(ops::Cat({a, b, c}, 1), dt, RefCat({RefOf(a), RefOf(b), RefOf(c)}, 1));
    ExpectRef(ops::Cat({a, e, b}, -2), dt, RefCat({RefOf(a), RefOf(e), RefOf(b)}, 1));
    TensorPtr d = RandomTensor(dt, Shape{5, 3, 4});
    ExpectRef(ops::Cat({a, d, a}, 0), dt, RefCat({RefOf(a), RefOf(d), RefOf(a)}, 0));
    TensorPtr f = RandomTensor(dt, Shape{2, 3, 1});
    ExpectRef(ops::Cat({a, f}, 2), dt, RefCat({RefOf(a), RefOf(f)}, 2));
    // Non-contiguous inputs: every-other-element, transposed, expanded.
    TensorPtr t = ops::Transpose(RandomTensor(dt, Shape{4, 3, 2}), 0, 2);
    TensorPtr x = ops::Expand(RandomTensor(dt, Shape{1, 3, 1}), {2, 3, 4});
    ExpectRef(ops::Cat({NonContiguous(a), t, x}, 1), dt, RefCat({RefOf(a), RefOf(t), RefOf(x)}, 1));
    TensorPtr one = ops::Cat({a}, 0);
    EXPECT_FALSE(SameStorage(a, one));
    ExpectRef(one, dt, RefOf(a));
    TensorPtr big0 = RandomTensor(dt, Shape{200, 300}), big1 = RandomTensor(dt, Shape{200, 100});
    ExpectRef(ops::Cat({big0, big1}, 1), dt, RefCat({RefOf(big0), RefOf(big1)}, 1));
    MarkCovered("cat", dt);
  }
}

TEST(Stack, JoinsAlongANewDim) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr a = RandomTensor(dt, Shape{2, 3}), b = RandomTensor(dt, Shape{2, 3}), c = RandomTensor(dt, Shape{2, 3});
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      SCOPED_TRACE(dim);
      const int64_t d = dim < 0 ? dim + 3 : dim;
      // Reference: out[..., k, ...] = inputs[k][...].
      const std::vector<Ref> refs = {RefOf(a), RefOf(b), RefOf(NonContiguous(c))};
      Shape shape{2, 3};
      shape.insert(d, 3);
      Ref want{shape, {}};
      for (int64_t o = 0; o < shape.numel(); ++o) {
        std::vector<int64_t> i = Unravel(o, shape);
        const int64_t k = i[static_cast<size_t>(d)];
        i.erase(i.begin() + d);
        want.v.push_back(refs[static_cast<size_t>(k)].v[static_cast<size_t>(Ravel(i, Shape{2, 3}))]);
      }
      ExpectRef(ops::Stack({a, b, NonContiguous(c)}, dim), dt, want);
    }
    TensorPtr s = RandomTensor(dt, Shape{});
    ExpectRef(ops::Stack({s, s}, 0), dt, {Shape{2}, {ToDoubles(s)[0], ToDoubles(s)[0]}});
    ExpectRef(ops::Stack({RandomTensor(dt, Shape{0, 2})}, 1), dt, {Shape{0, 1, 2}, {}});
    MarkCovered("stack", dt);
  }
}

TEST(NarrowBackward, WritesIntoZeros) {
  for (Symbol<DType> dt : AllDTypes()) {
    SCOPED_TRACE(dt->name());
    TensorPtr like = RandomTensor(dt, Shape{2, 7, 4});
    TensorPtr dy = NonContiguous(RandomTensor(dt, Shape{2, 3, 4}));
    TensorPtr dx = Apply1(Op("narrow_backward"), {dy, like}, {{"dim", int64_t{1}}, {"start", int64_t{2}}});
    Ref want{Shape{2, 7, 4}, std::vector<double>(56, 0.0)};
    const std::vector<double> v = ToDoubles(dy);
    for (int64_t o = 0; o < 24; ++o) {
      std::vector<int64_t> i = Unravel(o, Shape{2, 3, 4});
      i[1] += 2;
      want.v[static_cast<size_t>(Ravel(i, Shape{2, 7, 4}))] = v[static_cast<size_t>(o)];
    }
    ExpectRef(dx, dt, want);
    MarkCovered("narrow_backward", dt);
  }
  ExpectError(
      [] {
        Apply1(Op("narrow_backward"),
               {RandomTensor(DType::Float32(), Shape{2, 3}), RandomTensor(DType::Float32(), Shape{2, 4})},
               {{"dim", int64_t{1}}, {"start", int64_t{2}}});
      },
      {"narrow_backward:", "(2, 3)", "(2, 4)"});
}

// ---- chains ----------------------------------------------------------------------------------------

TEST(ViewChains, ShareStorageUntilContiguous) {
  TensorPtr x = RandomTensor(DType::Float32(), Shape{2, 3, 4, 5});
  Ref r = RefOf(x);
  TensorPtr y = ops::Permute(x, {0, 2, 1, 3});  // (2, 4, 3, 5)
  r = RefPermute(r, {0, 2, 1, 3});
  y = ops::Narrow(y, 3, 1, 3);  // (2, 4, 3, 3)
  r = RefNarrow(r, 3, 1, 3);
  y = ops::Transpose(y, 1, 3);  // (2, 3, 3, 4)
  r = RefPermute(r, {0, 3, 2, 1});
  y = ops::Unsqueeze(y, 0);  // (1, 2, 3, 3, 4)
  r.shape = Shape{1, 2, 3, 3, 4};
  y = ops::Expand(y, {2, -1, -1, -1, -1});
  r = RefExpand(r, Shape{2, 2, 3, 3, 4});
  y = ops::Squeeze(ops::Narrow(y, 0, 1, 1), {0});
  r = RefNarrow(r, 0, 1, 1);
  r.shape = Shape{2, 3, 3, 4};
  EXPECT_TRUE(SameStorage(x, y));
  EXPECT_FALSE(y->is_contiguous());
  ExpectRef(y, DType::Float32(), r);
  TensorPtr c = ops::Contiguous(y);
  EXPECT_FALSE(SameStorage(x, c));
  EXPECT_TRUE(c->is_contiguous());
  ExpectRef(c, DType::Float32(), r);
  ExpectRef(ops::View(c, {6, 12}), DType::Float32(), {Shape{6, 12}, r.v});
  ExpectRef(ops::Reshape(y, {6, 12}), DType::Float32(), {Shape{6, 12}, r.v});
  // A write through a view is seen by the base.
  ops::Narrow(x, 3, 4, 1)->data<float>()[0] = 42.0f;
  EXPECT_EQ(ToDoubles(x)[4], 42.0);
}

// ---- gradients -------------------------------------------------------------------------------------

TEST(ViewGradients, MatchFiniteDifferences) {
  using Fn = std::function<TensorPtr(const std::vector<TensorPtr>&)>;
  struct Case {
    const char* name;
    std::vector<Shape> shapes;
    Fn fn;
  };
  const std::vector<Case> cases = {
      {"reshape",
       {Shape{2, 3, 4}},
       [](auto& in) {
         return ops::Reshape(in[0], {4, -1});
       }},
      {"reshape (copy)", {Shape{2, 3, 4}}, [](auto& in) { return ops::Reshape(ops::Transpose(in[0], 0, 2), {-1}); }},
      {"view",
       {Shape{2, 3, 4}},
       [](auto& in) {
         return ops::View(in[0], {3, 8});
       }},
      {"flatten", {Shape{2, 3, 4}}, [](auto& in) { return ops::Flatten(in[0], 1); }},
      {"flatten (copy)",
       {Shape{2, 3, 4}},
       [](auto& in) {
         return ops::Flatten(ops::Permute(in[0], {2, 0, 1}));
       }},
      {"squeeze", {Shape{1, 3, 1, 2}}, [](auto& in) { return ops::Squeeze(in[0], {0}); }},
      {"unsqueeze", {Shape{3, 2}}, [](auto& in) { return ops::Unsqueeze(in[0], 1); }},
      {"transpose", {Shape{2, 3, 4}}, [](auto& in) { return ops::Transpose(in[0], 0, -1); }},
      {"permute",
       {Shape{2, 3, 4}},
       [](auto& in) {
         return ops::Permute(in[0], {1, 2, 0});
       }},
      {"contiguous", {Shape{3, 4}}, [](auto& in) { return ops::Contiguous(ops::Transpose(in[0], 0, 1)); }},
      {"narrow", {Shape{4, 5}}, [](auto& in) { return ops::Narrow(in[0], 1, 1, 3); }},
      {"narrow twice", {Shape{4, 5}}, [](auto& in) { return ops::Narrow(ops::Narrow(in[0], 0, 1, 3), 1, -2, 2); }},
      {"cat",
       {Shape{2, 3}, Shape{2, 1}, Shape{2, 4}},
       [](auto& in) {
         return ops::Cat({in[0], in[1], in[2]}, 1);
       }},
      {"stack",
       {Shape{2, 3}, Shape{2, 3}},
       [](auto& in) {
         return ops::Stack({in[0], in[1]}, 1);
       }},
      {"expand",
       {Shape{3, 1}},
       [](auto& in) {
         return ops::Expand(in[0], {2, 3, 4});
       }},
      {"narrow_backward",
       {Shape{2, 3}},
       [](auto& in) {
         TensorPtr like = Full(DType::Float64(), Shape{2, 6}, 0.0, Device::CPU());
         return Apply1(Op("narrow_backward"), {in[0], like}, {{"dim", int64_t{1}}, {"start", int64_t{2}}});
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<TensorPtr> inputs;
    for (const Shape& s : c.shapes) inputs.push_back(Leaf(s));
    try {
      ExpectGradientsMatch(c.fn, inputs);
    } catch (const Error& e) {
      ADD_FAILURE() << e.message();
    }
  }
}

TEST(ViewGradients, RecordTheirOps) {
  TensorPtr x = Leaf(Shape{2, 3});
  EXPECT_EQ(ops::Reshape(x, {3, 2})->grad_fn()->op().name, "reshape");
  EXPECT_EQ(ops::Transpose(x, 0, 1)->grad_fn()->op().name, "transpose");
  EXPECT_EQ(ops::Cat({x, x}, 0)->grad_fn()->op().name, "cat");
  // Contiguous of a contiguous tensor is the tensor itself.
  EXPECT_EQ(ops::Contiguous(x).get(), x.get());
  NoGradGuard no_grad;
  EXPECT_FALSE(ops::Reshape(x, {6})->requires_grad());
}

TEST(ViewGradients, RepeatedInputAccumulates) {
  TensorPtr x = Leaf(Shape{2, 2});
  TensorPtr y = ops::Cat({x, ops::Transpose(x, 0, 1)}, 0);  // (4, 2)
  Backward({y}, {FromDoubles(DType::Float64(), Shape{4, 2}, {1, 2, 3, 4, 10, 20, 30, 40})});
  // d/dx[i][j] = g0[i][j] + g1[j][i].
  ExpectTensorNear(x->grad(), DType::Float64(), Shape{2, 2}, {11, 32, 23, 44});
}

// ---- shape inference over symbolic dims ----------------------------------------------------------------

Shape Infer(std::string_view name, const std::vector<Shape>& shapes, Attrs attrs = {}) {
  const OpDef& op = Op(name);
  for (const AttrSpec& s : op.attrs) {
    if (!attrs.Has(s.name)) attrs.Set(s.name, s.default_value);
  }
  std::vector<TensorMeta> metas;
  for (const Shape& s : shapes) metas.push_back({DType::Float32(), s, Device::CPU()});
  return op.infer(metas, attrs)[0].shape;
}

// Shapes compare by Dim encodings (so two symbols named alike differ); the message prints them.
#define EXPECT_SHAPE(got, want) EXPECT_TRUE((got) == (want)) << (got).ToString() << " vs " << (want).ToString()

TEST(ViewInference, UnknownAndNamedDimsFlowThrough) {
  const Dim n = Dim::NewSymbol("N"), m = Dim::NewSymbol("M"), u = Dim::Unknown();
  using V = std::vector<int64_t>;
  EXPECT_SHAPE(Infer("unsqueeze", {Shape{u, 4}}, {{"dim", int64_t{0}}}), (Shape{1, u, 4}));
  EXPECT_SHAPE(Infer("reshape", {Shape{n, 3, 4}}, {{"shape", V{n.raw(), -1}}}), (Shape{n, 12}));
  EXPECT_SHAPE(Infer("reshape", {Shape{n, 3, 4}}, {{"shape", V{-1, 12}}}), (Shape{n, 12}));
  EXPECT_SHAPE(Infer("reshape", {Shape{3, n, 4}}, {{"shape", V{2, -1, 6}}}), (Shape{2, n, 6}));
  EXPECT_SHAPE(Infer("reshape", {Shape{u, 3, 4}}, {{"shape", V{-1, 12}}}), (Shape{u, 12}));
  EXPECT_SHAPE(Infer("reshape", {Shape{n, 3, 4}}, {{"shape", V{-1, 5}}}), (Shape{u, 5}));
  EXPECT_SHAPE(Infer("reshape", {Shape{n, m}}, {{"shape", V{m.raw(), n.raw()}}}), (Shape{m, n}));
  EXPECT_SHAPE(Infer("reshape", {Shape{2, 6}}, {{"shape", V{Dim::kUnknownValue, 4}}}), (Shape{u, 4}));
  EXPECT_SHAPE(Infer("view", {Shape{n, 2, 2}}, {{"shape", V{n.raw(), 4}}}), (Shape{n, 4}));
  ExpectError([&] { Infer("reshape", {Shape{n, 3}}, {{"shape", V{n.raw(), 4}}}); }, {"(N, 3)", "[N, 4]"});
  EXPECT_SHAPE(Infer("flatten", {Shape{n, 3, 4}}, {{"start_dim", int64_t{1}}}), (Shape{n, 12}));
  EXPECT_SHAPE(Infer("flatten", {Shape{n, 3, 4}}), (Shape{u}));
  EXPECT_SHAPE(Infer("flatten", {Shape{1, n, 1}}), (Shape{n}));
  EXPECT_SHAPE(Infer("squeeze", {Shape{n, 1, u}}), (Shape{n, u}));
  EXPECT_SHAPE(Infer("squeeze", {Shape{n, 1, u}}, {{"dims", V{2}}}), (Shape{n, 1}));
  EXPECT_SHAPE(Infer("transpose", {Shape{n, 3, m}}, {{"dim0", int64_t{0}}, {"dim1", int64_t{2}}}), (Shape{m, 3, n}));
  EXPECT_SHAPE(Infer("permute", {Shape{n, u, 3}}, {{"dims", V{2, 0, 1}}}), (Shape{3, n, u}));
  EXPECT_SHAPE(Infer("contiguous", {Shape{n, u}}), (Shape{n, u}));
  const Attrs narrow{{"dim", int64_t{1}}, {"start", int64_t{2}}, {"length", int64_t{3}}};
  EXPECT_SHAPE(Infer("narrow", {Shape{n, 10}}, narrow), (Shape{n, 3}));
  EXPECT_SHAPE(Infer("narrow", {Shape{4, m}}, narrow), (Shape{4, 3}));
  ExpectError(
      [&] {
        Infer("narrow", {Shape{4, m}}, {{"dim", int64_t{1}}, {"start", int64_t{-2}}, {"length", int64_t{1}}});
      },
      {"negative start"});
  EXPECT_SHAPE(Infer("cat", {Shape{n, 3}, Shape{n, 5}}, {{"dim", int64_t{1}}}), (Shape{n, 8}));
  EXPECT_SHAPE(Infer("cat", {Shape{n, 3}, Shape{m, 3}}, {{"dim", int64_t{0}}}), (Shape{u, 3}));
  EXPECT_SHAPE(Infer("cat", {Shape{u, 3}, Shape{2, 3}}, {{"dim", int64_t{1}}}), (Shape{2, 6}));
  EXPECT_SHAPE(Infer("stack", {Shape{n, 3}, Shape{n, 3}}, {{"dim", int64_t{0}}}), (Shape{2, n, 3}));
  EXPECT_SHAPE(Infer("stack", {Shape{n, u}, Shape{u, 3}}, {{"dim", int64_t{-1}}}), (Shape{n, 3, 2}));
  EXPECT_SHAPE(Infer("expand", {Shape{u, 1}}, {{"shape", V{-1, 5}}}), (Shape{u, 5}));
  EXPECT_SHAPE(Infer("expand", {Shape{1}}, {{"shape", V{m.raw(), n.raw()}}}), (Shape{m, n}));
  EXPECT_SHAPE(Infer("expand", {Shape{3, 1}}, {{"shape", V{Dim::kUnknownValue, 2}}}), (Shape{3, 2}));
}

// ---- errors ----------------------------------------------------------------------------------------

TEST(ViewErrors, NameTheArgumentAndTheShapes) {
  TensorPtr x = RandomTensor(DType::Float32(), Shape{2, 3});
  ExpectError([&] { ops::Reshape(x, {2, 5}); }, {"reshape:", "[2, 5]", "(2, 3)", "6 elements"});
  ExpectError([&] { ops::Reshape(x, {4, -1}); }, {"reshape:", "[4, -1]", "(2, 3)"});
  ExpectError([&] { ops::Reshape(x, {-1, -1}); }, {"reshape:", "more than one -1"});
  ExpectError([&] { ops::Reshape(x, {2, -3}); }, {"reshape:", "shape[1] is -3"});
  ExpectError([&] { ops::Reshape(x, {Dim::kUnknownValue, 3}); }, {"reshape:", "shape[0]", "OF_DIM_UNKNOWN"});
  ExpectError([&] { ops::Reshape(x, {Dim::NewSymbol("B").raw(), 3}); }, {"reshape:", "shape[0]", "symbol 'B'"});
  ExpectError([&] { ops::Reshape(RandomTensor(DType::Float32(), Shape{0, 3}), {0, -1}); }, {"reshape:", "any size"});
  ExpectError([&] { ops::View(x, {5}); }, {"view:", "[5]", "(2, 3)"});
  ExpectError([&] { ops::Flatten(x, 1, 0); }, {"flatten:", "start_dim 1", "end_dim 0"});
  ExpectError([&] { ops::Flatten(x, 2); }, {"flatten:", "start_dim 2"});
  ExpectError([&] { ops::Squeeze(x, {1}); }, {"squeeze:", "dims[0]", "size 3, not 1"});
  ExpectError([&] { ops::Squeeze(RandomTensor(DType::Float32(), Shape{1, 3}), {0, 5}); }, {"squeeze:", "dims[1] 5"});
  ExpectError([&] { ops::Unsqueeze(x, 3); }, {"unsqueeze:", "3"});
  ExpectError([&] { ops::Transpose(x, 0, 2); }, {"transpose:", "dim1 2"});
  ExpectError([&] { ops::Permute(x, {0}); }, {"permute:", "(2, 3)", "1 entries"});
  ExpectError([&] { ops::Permute(x, {1, -1}); }, {"permute:", "not a permutation"});
  ExpectError([&] { ops::Narrow(x, 1, 2, 2); }, {"narrow:", "past the end", "(2, 3)"});
  ExpectError([&] { ops::Narrow(x, 1, 4, 0); }, {"narrow:", "start 4", "out of range"});
  ExpectError([&] { ops::Narrow(x, 1, -4, 1); }, {"narrow:", "start -4"});
  ExpectError([&] { ops::Narrow(x, 1, 0, -1); }, {"narrow:", "length -1"});
  ExpectError([&] { ops::Narrow(x, 2, 0, 1); }, {"narrow:", "dim 2"});
  ExpectError([&] { ops::Expand(x, {2, 4}); }, {"expand:", "(2, 3)", "[2, 4]", "size-1"});
  ExpectError([&] { ops::Expand(x, {3}); }, {"expand:", "fewer dims"});
  ExpectError([&] { ops::Expand(x, {-1, 2, 3}); }, {"expand:", "-1", "leading"});
  ExpectError([&] { ops::Expand(RandomTensor(DType::Float32(), Shape{1}), {Dim::kUnknownValue}); },
              {"expand:", "shape[0]", "OF_DIM_UNKNOWN"});
  TensorPtr i = RandomTensor(DType::Int64(), Shape{2, 3});
  // Mixed dtypes promote (int64 with float32 is float32); the op itself takes one dtype.
  EXPECT_EQ(ops::Cat({x, x, i}, 0)->dtype(), DType::Float32());
  ExpectError([&] { Apply1(OpRegistry::Global().Get("cat"), {x, x, i}, {{"dim", int64_t{0}}}); },
              {"cat:", "tensors[2]", "int64", "float32"});
  ExpectError([&] { ops::Cat({x, RandomTensor(DType::Float32(), Shape{2, 3, 1})}, 0); }, {"cat:", "tensors[1]", "3-D"});
  ExpectError(
      [&] {
        ops::Cat({x, RandomTensor(DType::Float32(), Shape{2, 4})}, 0);
      },
      {"cat:", "tensors[1]", "(2, 4)", "(2, 3)", "dim 1"});
  ExpectError([&] { ops::Cat({x, x}, 2); }, {"cat:", "dim 2"});
  ExpectError([&] { ops::Cat({RandomTensor(DType::Float32(), Shape{})}, 0); }, {"cat:", "0-d"});
  ExpectError([&] { ops::Cat({}, 0); }, {"cat:", "at least 1"});
  ExpectError([&] { ops::Cat({x, nullptr}, 0); }, {"cat:", "null"});
  ExpectError(
      [&] {
        ops::Stack({x, RandomTensor(DType::Float32(), Shape{3, 2})}, 0);
      },
      {"stack:", "tensors[1]", "(3, 2)"});
  ExpectError([&] { ops::Stack({x, x}, 3); }, {"stack:", "dim 3"});
  ExpectError([&] { ops::Contiguous(nullptr); }, {"contiguous:", "null"});
}

}  // namespace
}  // namespace oneflow::test
