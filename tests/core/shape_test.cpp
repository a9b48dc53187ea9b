// Shape and the shared shape functions over symbolic dims.
#include "core/common/shape.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "tests/core/test_util.h"

namespace oneflow {
namespace {

using testing::ExpectError;

const Dim kU = Dim::Unknown();

std::vector<int64_t> Raw(const Shape& s) { return {s.raw().begin(), s.raw().end()}; }

TEST(Shape, DesignSeedCase) {
  // DESIGN.md: (unknown, 4) unsqueeze(0) is (1, unknown, 4); its sum over dim 1 is the static (1, 4).
  const Shape s{kU, 4};
  const Shape u = UnsqueezeShape(s, 0);
  EXPECT_EQ(u, (Shape{1, kU, 4}));
  EXPECT_EQ(u.ToString(), "(1, ?, 4)");
  EXPECT_EQ(Raw(u), (std::vector<int64_t>{1, Dim::kUnknownValue, 4}));
  const int64_t axis1[] = {1};
  const Shape r = ReduceShape(u, axis1, /*keepdim=*/false);
  EXPECT_EQ(r, (Shape{1, 4}));
  EXPECT_TRUE(r.is_static());
  EXPECT_EQ(r.numel(), 4);
  const Shape k = ReduceShape(u, axis1, /*keepdim=*/true);
  EXPECT_EQ(k, (Shape{1, 1, 4}));
  EXPECT_TRUE(k.is_static());
  EXPECT_FALSE(u.is_static());
}

TEST(Shape, Basics) {
  const Shape s{2, 3, 4};
  EXPECT_EQ(s.ndim(), 3);
  EXPECT_EQ(s[1].raw(), 3);
  EXPECT_EQ(s.At(-1).raw(), 4);
  EXPECT_EQ(s.At(0).raw(), 2);
  ExpectError([&] { s.At(3); }, StatusCode::kInvalidArgument, "3");
  ExpectError([&] { s.At(-4); }, StatusCode::kInvalidArgument, "-4");
  EXPECT_EQ(Shape().ndim(), 0);
  EXPECT_EQ(Shape(std::vector<Dim>{5, 6}), (Shape{5, 6}));
  const Dim n = Dim::NewSymbol("N"), m = Dim::NewSymbol("M");
  EXPECT_EQ((Shape{kU, 4}), (Shape{kU, 4}));
  EXPECT_EQ((Shape{n, 4}), (Shape{n, 4}));
  EXPECT_NE((Shape{n, 4}), (Shape{m, 4}));
  EXPECT_NE((Shape{n, 4}), (Shape{kU, 4}));
  EXPECT_NE((Shape{4}), (Shape{4, 1}));
  // raw() views the dims in place as int64_t.
  const Shape sym{n, 7};
  EXPECT_EQ(reinterpret_cast<const void*>(sym.raw().data()), reinterpret_cast<const void*>(sym.dims().data()));
  EXPECT_EQ(sym.raw()[0], n.raw());
  EXPECT_EQ(sym.raw()[1], 7);
}

TEST(Shape, ToString) {
  EXPECT_EQ(Shape().ToString(), "()");
  EXPECT_EQ((Shape{3}).ToString(), "(3,)");
  EXPECT_EQ((Shape{kU}).ToString(), "(?,)");
  const Dim n = Dim::NewSymbol("N");
  EXPECT_EQ((Shape{2, kU, n}).ToString(), "(2, ?, N)");
  EXPECT_EQ((Shape{2, 3}).ToString(), "(2, 3)");
  EXPECT_EQ(fmt::format("{}", Shape{0, 1}), "(0, 1)");
}

TEST(Shape, Numel) {
  EXPECT_EQ(Shape().numel(), 1);
  EXPECT_EQ((Shape{7}).numel(), 7);
  EXPECT_EQ((Shape{2, 3, 4}).numel(), 24);
  EXPECT_EQ((Shape{2, 0, 4}).numel(), 0);
  EXPECT_EQ((Shape{0}).numel(), 0);
  const Dim n = Dim::NewSymbol("N");
  ExpectError([] { (Shape{2, kU}).numel(); }, StatusCode::kInvalidArgument, "(2, ?)", "dim 1", "not concrete");
  ExpectError([&] { (Shape{n, 3}).numel(); }, StatusCode::kInvalidArgument, "dim 0", "'N'");
  // Even with a zero dim, a shape that is not static has no numel().
  ExpectError([] { (Shape{kU, 0}).numel(); }, StatusCode::kInvalidArgument, "dim 0");
  ExpectError([] { (Shape{int64_t{1} << 40, int64_t{1} << 40}).numel(); }, StatusCode::kOutOfRange, "overflow");
  // One rule whatever the order: the non-zero sizes must multiply within int64, even when a 0 makes the
  // count 0 (the product is 0 either way).
  constexpr int64_t k62 = int64_t{1} << 62;
  ExpectError([] { (Shape{k62, k62, 0}).numel(); }, StatusCode::kOutOfRange, "overflow");
  ExpectError([] { (Shape{0, k62, k62}).numel(); }, StatusCode::kOutOfRange, "overflow");
  ExpectError([] { (Shape{k62, 0, k62}).numel_dim(); }, StatusCode::kOutOfRange, "non-zero sizes");
  // ... or an unknown dim makes it unknown: no concrete shape of (?, 2^62, 2^62) is valid.
  ExpectError([] { (Shape{kU, k62, k62}).numel_dim(); }, StatusCode::kOutOfRange, "non-zero sizes");
  ExpectError([&] { (Shape{k62, n, k62}).numel_dim(); }, StatusCode::kOutOfRange, "non-zero sizes");
  EXPECT_EQ((Shape{0, k62, 1}).numel(), 0);
}

TEST(Shape, NumelDim) {
  EXPECT_EQ(Shape().numel_dim().raw(), 1);
  EXPECT_EQ((Shape{2, 3}).numel_dim().raw(), 6);
  EXPECT_TRUE((Shape{kU, 4}).numel_dim().is_unknown());
  EXPECT_TRUE((Shape{4, kU}).numel_dim().is_unknown());
  const Dim n = Dim::NewSymbol("N");
  EXPECT_TRUE((Shape{n, 4}).numel_dim().is_unknown());
  EXPECT_TRUE((Shape{n, kU}).numel_dim().is_unknown());
  EXPECT_EQ((Shape{kU, 0}).numel_dim().raw(), 0);
  EXPECT_EQ((Shape{0, kU}).numel_dim().raw(), 0);
  EXPECT_EQ((Shape{n, 3, 0}).numel_dim().raw(), 0);
}

TEST(Shape, ContiguousStrides) {
  EXPECT_EQ(ContiguousStrides(Shape()), (std::vector<int64_t>{}));
  EXPECT_EQ(ContiguousStrides(Shape{5}), (std::vector<int64_t>{1}));
  EXPECT_EQ(ContiguousStrides(Shape{2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(ContiguousStrides(Shape{4, 1, 3}), (std::vector<int64_t>{3, 3, 1}));
  // A zero dim counts as 1 for the strides of the dims before it (as PyTorch does).
  EXPECT_EQ(ContiguousStrides(Shape{2, 0, 3}), (std::vector<int64_t>{3, 3, 1}));
  // An empty shape whose other dims multiply past int64 (a fuzz_ops finding, through of_view): the
  // strides that would overflow stop at INT64_MAX.
  const int64_t big = int64_t{1} << 62, max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(ContiguousStrides(Shape{0, 5, big, 2}), (std::vector<int64_t>{max, max, 2, 1}));
  EXPECT_EQ(ContiguousStrides(Shape{0, big, 2}), (std::vector<int64_t>{max, 2, 1}));
  ExpectError([] { ContiguousStrides(Shape{2, kU}); }, StatusCode::kInvalidArgument, "?");
}

TEST(Shape, NormalizeAxis) {
  EXPECT_EQ(NormalizeAxis(0, 3), 0);
  EXPECT_EQ(NormalizeAxis(2, 3), 2);
  EXPECT_EQ(NormalizeAxis(-1, 3), 2);
  EXPECT_EQ(NormalizeAxis(-3, 3), 0);
  ExpectError([] { NormalizeAxis(3, 3); }, StatusCode::kInvalidArgument, "dim 3", "3 dims", "-3..2");
  ExpectError([] { NormalizeAxis(-4, 3); }, StatusCode::kInvalidArgument, "-4");
  ExpectError([] { NormalizeAxis(1, 1, "softmax dim"); }, StatusCode::kInvalidArgument, "softmax dim 1",
              "1 dim");
  ExpectError([] { NormalizeAxis(0, 0); }, StatusCode::kInvalidArgument, "0 dims");
}

TEST(Shape, FromRaw) {
  const int64_t dims[] = {2, Dim::kUnknownValue, 4};
  EXPECT_EQ(Shape::FromRaw(dims, 3), (Shape{2, kU, 4}));
  EXPECT_EQ(Shape::FromRaw(nullptr, 0), Shape());
  EXPECT_EQ(Shape::FromRaw(dims, 0), Shape());
  const Dim n = Dim::NewSymbol("N");
  const int64_t sym[] = {n.raw(), 1};
  EXPECT_EQ(Shape::FromRaw(sym, 2), (Shape{n, 1}));
  ExpectError([] { Shape::FromRaw(nullptr, 2, "shape"); }, StatusCode::kInvalidArgument, "shape", "NULL", "2");
  const int64_t bad[] = {2, 3, -7};
  ExpectError([&] { Shape::FromRaw(bad, 3); }, StatusCode::kInvalidArgument, "dims[2]", "-7");
  ExpectError([&] { Shape::FromRaw(bad, 3, "sizes"); }, StatusCode::kInvalidArgument, "sizes[2]");
}

TEST(Shape, CheckStatic) {
  EXPECT_NO_THROW(CheckStatic(Shape(), "zeros"));
  EXPECT_NO_THROW(CheckStatic(Shape{2, 0}, "zeros"));
  ExpectError([] { CheckStatic(Shape{2, kU}, "zeros"); }, StatusCode::kInvalidArgument, "zeros", "(2, ?)",
              "not concrete", "dim 1", "unknown");
  const Dim seq = Dim::NewSymbol("seq");
  ExpectError([&] { CheckStatic(Shape{seq, kU}, "ones"); }, StatusCode::kInvalidArgument, "ones", "dim 0",
              "'seq'");
}

TEST(Shape, BroadcastShapes) {
  const Dim n = Dim::NewSymbol("N"), m = Dim::NewSymbol("M");
  struct Case {
    Shape a, b, expected;
  };
  const Case cases[] = {
      {Shape{2, 3}, Shape{2, 3}, Shape{2, 3}},
      {Shape{2, 1}, Shape{1, 3}, Shape{2, 3}},
      {Shape{3}, Shape{2, 1}, Shape{2, 3}},   // rank extension
      {Shape{}, Shape{4, 5}, Shape{4, 5}},    // a scalar
      {Shape{5, 1, 7}, Shape{3, 1}, Shape{5, 3, 7}},
      {Shape{0}, Shape{1}, Shape{0}},
      {Shape{n}, Shape{n}, Shape{n}},  // static-safe: stays N
      {Shape{n}, Shape{1}, Shape{n}},
      {Shape{1}, Shape{n}, Shape{n}},
      {Shape{n}, Shape{5}, Shape{5}},
      {Shape{5}, Shape{n}, Shape{5}},
      {Shape{n}, Shape{m}, Shape{kU}},
      {Shape{kU}, Shape{kU}, Shape{kU}},
      {Shape{kU}, Shape{1}, Shape{kU}},
      {Shape{kU}, Shape{5}, Shape{5}},
      {Shape{5}, Shape{kU}, Shape{5}},
      {Shape{kU}, Shape{n}, Shape{kU}},
      {Shape{n}, Shape{kU}, Shape{kU}},
      {Shape{n, 1, 4}, Shape{3, 1}, Shape{n, 3, 4}},
      {Shape{kU, 4}, Shape{4}, Shape{kU, 4}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.a.ToString() + " with " + c.b.ToString());
    const Shape r = BroadcastShapes(c.a, c.b);
    EXPECT_EQ(r, c.expected) << "got " << r.ToString();
    EXPECT_EQ(Raw(r), Raw(c.expected));
  }
  ExpectError([] { BroadcastShapes(Shape{2, 3}, Shape{4, 3}); }, StatusCode::kInvalidArgument, "(2, 3)",
              "(4, 3)");
  ExpectError([] { BroadcastShapes(Shape{3}, Shape{2, 4}); }, StatusCode::kInvalidArgument, "(3,)", "(2, 4)");
  ExpectError([&] { BroadcastShapes(Shape{n, 2}, Shape{n, 0}); }, StatusCode::kInvalidArgument, "(N, 2)",
              "(N, 0)");
}

TEST(Shape, UnsqueezeShape) {
  EXPECT_EQ(UnsqueezeShape(Shape{2, 3}, 0), (Shape{1, 2, 3}));
  EXPECT_EQ(UnsqueezeShape(Shape{2, 3}, 1), (Shape{2, 1, 3}));
  EXPECT_EQ(UnsqueezeShape(Shape{2, 3}, 2), (Shape{2, 3, 1}));
  EXPECT_EQ(UnsqueezeShape(Shape{2, 3}, -1), (Shape{2, 3, 1}));
  EXPECT_EQ(UnsqueezeShape(Shape{2, 3}, -3), (Shape{1, 2, 3}));
  EXPECT_EQ(UnsqueezeShape(Shape(), 0), (Shape{1}));
  ExpectError([] { UnsqueezeShape(Shape{2, 3}, 3); }, StatusCode::kInvalidArgument, "3");
  ExpectError([] { UnsqueezeShape(Shape{2, 3}, -4); }, StatusCode::kInvalidArgument, "-4");
}

TEST(Shape, ReduceShape) {
  const Shape s{2, 3, 4};
  const int64_t a0[] = {0}, a_neg[] = {-1}, a02[] = {0, 2}, dup[] = {1, -2}, bad[] = {3};
  EXPECT_EQ(ReduceShape(s, a0, false), (Shape{3, 4}));
  EXPECT_EQ(ReduceShape(s, a_neg, false), (Shape{2, 3}));
  EXPECT_EQ(ReduceShape(s, a02, false), (Shape{3}));
  EXPECT_EQ(ReduceShape(s, a02, true), (Shape{1, 3, 1}));
  EXPECT_EQ(ReduceShape(s, {}, false), Shape());
  EXPECT_EQ(ReduceShape(s, {}, true), (Shape{1, 1, 1}));
  const Dim n = Dim::NewSymbol("N");
  EXPECT_EQ(ReduceShape(Shape{n, kU, 5}, a0, false), (Shape{kU, 5}));
  ExpectError([&] { ReduceShape(s, dup, false); }, StatusCode::kInvalidArgument, "more than once");
  ExpectError([&] { ReduceShape(s, bad, false); }, StatusCode::kInvalidArgument, "3");
}

TEST(ShapeBinding, BindAndResolve) {
  const Dim n = Dim::NewSymbol("N"), m = Dim::NewSymbol("M");
  ShapeBinding b;
  EXPECT_EQ(b.Resolve(n).raw(), n.raw());  // unbound: itself
  b.Bind(Shape{n, 4}, Shape{2, 4}, "x");
  EXPECT_EQ(b.Resolve(n).raw(), 2);
  EXPECT_EQ(b.Resolve(Dim(7)).raw(), 7);
  EXPECT_TRUE(b.Resolve(kU).is_unknown());
  EXPECT_EQ(b.Resolve(m).raw(), m.raw());
  EXPECT_EQ(b.Resolve(Shape{n, m, 3, kU}), (Shape{2, m, 3, kU}));
  // The same symbol with the same size again is fine; unknown dims accept any size.
  b.Bind(Shape{kU, n}, Shape{9, 2}, "y");
  b.Bind(Shape{m}, Shape{5}, "z");
  EXPECT_EQ(b.Resolve(Shape{n, m}), (Shape{2, 5}));
}

TEST(ShapeBinding, SymbolConflict) {
  const Dim n = Dim::NewSymbol("N");
  ShapeBinding b;
  b.Bind(Shape{n, 4}, Shape{2, 4}, "x");
  ExpectError([&] { b.Bind(Shape{n}, Shape{3}, "y"); }, StatusCode::kInvalidArgument, "y", "N", "3", "2");
  EXPECT_EQ(b.Resolve(n).raw(), 2);  // the earlier binding stands
  // Two occurrences in one shape must agree too.
  ShapeBinding b2;
  ExpectError([&] { b2.Bind(Shape{n, n}, Shape{2, 3}, "square"); }, StatusCode::kInvalidArgument, "square");
}

TEST(ShapeBinding, Mismatches) {
  const Dim n = Dim::NewSymbol("N");
  ShapeBinding b;
  ExpectError([&] { b.Bind(Shape{n, 4}, Shape{2, 4, 1}, "input"); }, StatusCode::kInvalidArgument, "input",
              "(N, 4)", "(2, 4, 1)");
  ExpectError([&] { b.Bind(Shape{n, 4}, Shape{2, 5}, "input"); }, StatusCode::kInvalidArgument, "input",
              "(N, 4)", "(2, 5)");
  ExpectError([&] { b.Bind(Shape{n, 4}, Shape{kU, 4}, "input"); }, StatusCode::kInvalidArgument, "input",
              "not concrete");
}

}  // namespace
}  // namespace oneflow
