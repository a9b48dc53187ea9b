// matmul and linear against float64 reference loops; gradients by finite differences.
// (conv2d: dnnl_conv_test.cpp; batch_norm: dnnl_norm_test.cpp; pooling: dnnl_pool_test.cpp.)
#include <thread>

#include "core/device/thread_pool.h"
#include "core/op/dispatch.h"
#include "core/ops/dnnl/dnnl_common.h"
#include "core/ops/dnnl/sgemm.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kDTypes = FloatingDTypes();

// float32 results against float64 references of the same (float32) inputs.
double Tol(Symbol<DType> dt) { return TolFor(dt, 2e-4, 1e-10); }

TensorPtr MatmulOp(const TensorPtr& a, const TensorPtr& b, bool ta, bool tb) {
  return Apply1(OpRegistry::Global().Get("matmul"), {a, b}, {{"transpose_a", ta}, {"transpose_b", tb}});
}

// Reference: op(a) @ op(b) with NumPy broadcasting of batch dims; a and b have >= 2 dims.
std::vector<double> RefMatmul(const TensorPtr& a, const TensorPtr& b, bool ta, bool tb, Shape* out_shape) {
  const Shape& as = a->shape();
  const Shape& bs = b->shape();
  const std::vector<double> av = ToDoubles(a), bv = ToDoubles(b);
  const int64_t ar = as[as.ndim() - 2].value(), ac = as[as.ndim() - 1].value();
  const int64_t br = bs[bs.ndim() - 2].value(), bc = bs[bs.ndim() - 1].value();
  const int64_t m = ta ? ac : ar, k = ta ? ar : ac, n = tb ? br : bc;
  EXPECT_EQ(k, tb ? bc : br);
  const int64_t rank = std::max(as.ndim(), bs.ndim()) - 2;
  Shape batch;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t ai = d - (rank - (as.ndim() - 2)), bi = d - (rank - (bs.ndim() - 2));
    const int64_t asz = ai >= 0 ? as[ai].value() : 1, bsz = bi >= 0 ? bs[bi].value() : 1;
    batch.push_back(std::max(asz, bsz));
  }
  Shape a_batch(std::vector<Dim>(as.begin(), as.end() - 2)), b_batch(std::vector<Dim>(bs.begin(), bs.end() - 2));
  *out_shape = batch;
  out_shape->push_back(m);
  out_shape->push_back(n);
  const int64_t nb = batch.numel();
  std::vector<double> out(static_cast<size_t>(nb * m * n));
  for (int64_t bi = 0; bi < nb; ++bi) {
    const std::vector<int64_t> idx = Unravel(bi, batch);
    const int64_t a_off = BroadcastIndex(idx, a_batch, batch) * ar * ac;
    const int64_t b_off = BroadcastIndex(idx, b_batch, batch) * br * bc;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) {
          const double x = av[static_cast<size_t>(a_off + (ta ? q * ac + i : i * ac + q))];
          const double y = bv[static_cast<size_t>(b_off + (tb ? j * bc + q : q * bc + j))];
          s += x * y;
        }
        out[static_cast<size_t>((bi * m + i) * n + j)] = s;
      }
    }
  }
  return out;
}

void CheckMatmul(const Shape& as, const Shape& bs, bool ta, bool tb) {
  for (Symbol<DType> dt : kDTypes) {
    SCOPED_TRACE(fmt::format("{} {} @ {} ta={} tb={}", dt->name(), as, bs, ta, tb));
    const TensorPtr a = RandomTensor(dt, as), b = RandomTensor(dt, bs);
    Shape shape;
    const std::vector<double> want = RefMatmul(a, b, ta, tb, &shape);
    ExpectTensorNear(MatmulOp(a, b, ta, tb), dt, shape, want, Tol(dt), Tol(dt));
    // The kernel takes strided inputs: every other element of a wider storage is copied first.
    ExpectTensorNear(MatmulOp(NonContiguous(a), NonContiguous(b), ta, tb), dt, shape, want, Tol(dt), Tol(dt));
    MarkCovered("matmul", dt);
  }
}

TEST(Matmul, TwoDims) {
  CheckMatmul({3, 5}, {5, 4}, false, false);
  CheckMatmul({1, 7}, {7, 1}, false, false);
  CheckMatmul({17, 33}, {33, 9}, false, false);
  CheckMatmul({64, 128}, {128, 32}, false, false);
  CheckMatmul({32, 64}, {64, 128}, false, false);
  CheckMatmul({4, 0}, {0, 3}, false, false);  // empty inner dim: zeros
  CheckMatmul({0, 3}, {3, 2}, false, false);
}

TEST(Matmul, TransposeAttributes) {
  CheckMatmul({5, 3}, {5, 4}, true, false);
  CheckMatmul({3, 5}, {4, 5}, false, true);
  CheckMatmul({5, 3}, {4, 5}, true, true);
  CheckMatmul({2, 6, 3}, {2, 4, 6}, true, true);
  CheckMatmul({2, 6, 3}, {6, 4}, true, false);
}

TEST(Matmul, BatchedBroadcast) {
  CheckMatmul({2, 4, 5}, {2, 5, 3}, false, false);     // equal batches
  CheckMatmul({2, 3, 4, 5}, {5, 6}, false, false);     // 2-D b: folded into rows
  CheckMatmul({4, 5}, {3, 5, 6}, false, false);        // 2-D a
  CheckMatmul({3, 1, 4, 5}, {2, 5, 6}, false, false);  // both broadcast
  CheckMatmul({2, 1, 3, 4, 5}, {3, 5, 6}, false, false);
  CheckMatmul({1, 4, 5}, {3, 5, 2}, false, false);
  CheckMatmul({3, 4, 5}, {1, 6, 5}, false, true);
}

TEST(Matmul, TransposedViewsAreReadInPlace) {
  for (Symbol<DType> dt : kDTypes) {
    const TensorPtr a = RandomTensor(dt, {2, 5, 3}), b = RandomTensor(dt, {4, 5});
    Shape shape;
    const std::vector<double> want = RefMatmul(a, b, true, true, &shape);
    ExpectTensorNear(ops::Matmul(ops::Transpose(a, -1, -2), ops::Transpose(b, 0, 1)), dt, shape, want, Tol(dt),
                     Tol(dt));
    // A transposed view with the transpose attribute is the original again.
    const TensorPtr c = RandomTensor(dt, {3, 4});
    const std::vector<double> want2 = RefMatmul(a, c, false, false, &shape);
    ExpectTensorNear(MatmulOp(ops::Transpose(a, -1, -2), ops::Transpose(c, 0, 1), true, true), dt, shape, want2,
                     Tol(dt), Tol(dt));
  }
}

TEST(Matmul, OneDimOperandsAsNumPy) {
  for (Symbol<DType> dt : kDTypes) {
    const TensorPtr v = RandomTensor(dt, {5}), m = RandomTensor(dt, {5, 3}), mt = RandomTensor(dt, {4, 5});
    const TensorPtr bm = RandomTensor(dt, {2, 5, 3}), bmt = RandomTensor(dt, {2, 4, 5});
    Shape s;
    auto as_row = [&](const TensorPtr& t) { return FromDoubles(dt, {1, 5}, ToDoubles(t)); };
    auto as_col = [&](const TensorPtr& t) { return FromDoubles(dt, {5, 1}, ToDoubles(t)); };
    ExpectTensorNear(ops::Matmul(v, m), dt, {3}, RefMatmul(as_row(v), m, false, false, &s), Tol(dt), Tol(dt));
    ExpectTensorNear(ops::Matmul(mt, v), dt, {4}, RefMatmul(mt, as_col(v), false, false, &s), Tol(dt), Tol(dt));
    ExpectTensorNear(ops::Matmul(v, v), dt, {}, RefMatmul(as_row(v), as_col(v), false, false, &s), Tol(dt), Tol(dt));
    ExpectTensorNear(ops::Matmul(v, bm), dt, {2, 3}, RefMatmul(as_row(v), bm, false, false, &s), Tol(dt), Tol(dt));
    ExpectTensorNear(ops::Matmul(bmt, v), dt, {2, 4}, RefMatmul(bmt, as_col(v), false, false, &s), Tol(dt), Tol(dt));
  }
}

TEST(Matmul, Gradients) {
  auto leaf = [](const Shape& s) {
    TensorPtr t = RandomTensor(DType::Float64(), s);
    t->set_requires_grad(true);
    return t;
  };
  auto check = [&](const Shape& as, const Shape& bs, bool ta, bool tb) {
    SCOPED_TRACE(fmt::format("{} @ {} ta={} tb={}", as, bs, ta, tb));
    ExpectGradientsMatch([&](const std::vector<TensorPtr>& in) { return MatmulOp(in[0], in[1], ta, tb); },
                         {leaf(as), leaf(bs)});
  };
  check({3, 4}, {4, 5}, false, false);
  check({4, 3}, {4, 5}, true, false);
  check({3, 4}, {5, 4}, false, true);
  check({4, 3}, {5, 4}, true, true);
  check({2, 3, 4}, {2, 4, 5}, false, false);
  check({2, 3, 4}, {4, 5}, false, false);  // b shared by the batch
  check({2, 3, 4}, {5, 4}, false, true);
  check({2, 4, 3}, {4, 5}, true, false);
  check({3, 4}, {2, 4, 5}, false, false);  // a shared by the batch
  check({2, 1, 3, 4}, {3, 4, 2}, false, false);
  ExpectGradientsMatch([](const std::vector<TensorPtr>& in) { return ops::Matmul(in[0], in[1]); },
                       {leaf({4}), leaf({2, 4, 3})});
  ExpectGradientsMatch([](const std::vector<TensorPtr>& in) { return ops::Matmul(in[0], in[1]); },
                       {leaf({3, 4}), leaf({4})});
}


TEST(Matmul, Errors) {
  const TensorPtr a = RandomTensor(DType::Float32(), {2, 3}), b = RandomTensor(DType::Float32(), {4, 5});
  ExpectError([&] { ops::Matmul(a, b); }, StatusCode::kInvalidArgument, {"matmul: ", "(2, 3)", "(4, 5)", "3", "4"});
  ExpectError([&] { ops::Matmul(RandomTensor(DType::Float32(), {3}), b); }, StatusCode::kInvalidArgument,
              {"matmul: ", "(3,)", "(4, 5)"});
  ExpectError([&] { ops::Matmul(RandomTensor(DType::Float32(), {2, 2, 3}), RandomTensor(DType::Float32(), {3, 3, 4})); },
              StatusCode::kInvalidArgument, {"matmul: ", "batch dims", "(2, 2, 3)", "(3, 3, 4)"});
  ExpectError([&] { ops::Matmul(a, RandomTensor(DType::Float64(), {3, 2})); }, StatusCode::kInvalidArgument,
              {"matmul: ", "float32", "float64"});
  ExpectError([&] { ops::Matmul(RandomTensor(DType::Float32(), {}), a); }, StatusCode::kInvalidArgument,
              {"matmul: ", "at least 1 dim"});
  // One dtype rule (oneflow_c.h, ops "DTypes"): bool is not a number (INVALID_ARGUMENT).
  ExpectError(
      [&] {
        ops::Matmul(RandomTensor(DType::Bool(), {2, 2}), RandomTensor(DType::Bool(), {2, 2}));
      },
      StatusCode::kInvalidArgument, {"matmul: ", "a is bool", "numbers"});
  ExpectError([&] { ops::Matmul(RandomTensor(DType::Int32(), {2, 2}), RandomTensor(DType::Int64(), {2, 2})); },
              StatusCode::kInvalidArgument, {"matmul: ", "int32", "int64", "one dtype"});
  ExpectError(
      [&] {
        ops::Linear(RandomTensor(DType::Bool(), {2, 2}), RandomTensor(DType::Bool(), {2, 2}), nullptr);
      },
      StatusCode::kInvalidArgument, {"linear: ", "x is bool"});
}

TEST(Matmul, UnknownDimsFlowThroughInference) {
  const OpDef& op = OpRegistry::Global().Get("matmul");
  const Dim n = Dim::NewSymbol("N");
  Attrs attrs{{"transpose_a", false}, {"transpose_b", false}};
  std::vector<TensorMeta> in = {{DType::Float32(), Shape{n, Dim(), 3}, Device::CPU()},
                                {DType::Float32(), Shape{3, 7}, Device::CPU()}};
  EXPECT_EQ(op.infer(in, attrs)[0].shape, (Shape{n, Dim(), 7}));
  in[1].shape = Shape{Dim(), 7};
  EXPECT_EQ(op.infer(in, attrs)[0].shape, (Shape{n, Dim(), 7}));
}

// ---- linear -----------------------------------------------------------------------------------------

std::vector<double> RefLinear(const TensorPtr& x, const TensorPtr& w, const TensorPtr& bias) {
  const std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w);
  const std::vector<double> bv = bias ? ToDoubles(bias) : std::vector<double>();
  const int64_t out = w->shape()[0].value(), in = w->shape()[1].value(), rows = x->numel() / std::max<int64_t>(in, 1);
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double s = bias ? bv[static_cast<size_t>(o)] : 0.0;
      for (int64_t i = 0; i < in; ++i) s += xv[static_cast<size_t>(r * in + i)] * wv[static_cast<size_t>(o * in + i)];
      y[static_cast<size_t>(r * out + o)] = s;
    }
  }
  return y;
}

TEST(Linear, MatchesReference) {
  struct Case {
    Shape x;
    int64_t out;
    bool bias;
  };
  const std::vector<Case> cases = {{{5, 7}, 3, true}, {{2, 4, 7}, 6, true}, {{7}, 3, true},
                                   {{5, 7}, 3, false}, {{32, 64}, 128, true}, {{1, 1}, 1, true}};
  for (Symbol<DType> dt : kDTypes) {
    for (const Case& c : cases) {
      SCOPED_TRACE(fmt::format("{} x {} out {} bias {}", dt->name(), c.x, c.out, c.bias));
      const int64_t in = c.x[c.x.ndim() - 1].value();
      const TensorPtr x = RandomTensor(dt, c.x), w = RandomTensor(dt, {c.out, in});
      const TensorPtr b = c.bias ? RandomTensor(dt, {c.out}) : TensorPtr();
      Shape shape = c.x;
      shape[shape.ndim() - 1] = c.out;
      const std::vector<double> want = RefLinear(x, w, b);
      ExpectTensorNear(ops::Linear(x, w, b), dt, shape, want, Tol(dt), Tol(dt));
      ExpectTensorNear(ops::Linear(NonContiguous(x), NonContiguous(w), b ? NonContiguous(b) : b), dt, shape, want,
                       Tol(dt), Tol(dt));
      MarkCovered("linear", dt);
    }
  }
}

TEST(Linear, Gradients) {
  auto leaf = [](const Shape& s) {
    TensorPtr t = RandomTensor(DType::Float64(), s);
    t->set_requires_grad(true);
    return t;
  };
  auto fn = [](const std::vector<TensorPtr>& in) { return ops::Linear(in[0], in[1], in.size() > 2 ? in[2] : TensorPtr()); };
  ExpectGradientsMatch(fn, {leaf({4, 5}), leaf({3, 5}), leaf({3})});
  ExpectGradientsMatch(fn, {leaf({2, 3, 5}), leaf({4, 5}), leaf({4})});
  ExpectGradientsMatch(fn, {leaf({5}), leaf({3, 5}), leaf({3})});
  ExpectGradientsMatch(fn, {leaf({4, 5}), leaf({3, 5})});
}

TEST(Linear, Errors) {
  const TensorPtr x = RandomTensor(DType::Float32(), {2, 5});
  ExpectError([&] { ops::Linear(x, RandomTensor(DType::Float32(), {3, 4}), nullptr); }, StatusCode::kInvalidArgument,
              {"linear: ", "(2, 5)", "(3, 4)"});
  ExpectError([&] { ops::Linear(x, RandomTensor(DType::Float32(), {3, 5}), RandomTensor(DType::Float32(), {4})); },
              StatusCode::kInvalidArgument, {"linear: ", "bias", "(4,)"});
  ExpectError([&] { ops::Linear(x, RandomTensor(DType::Float32(), {5}), nullptr); }, StatusCode::kInvalidArgument,
              {"linear: ", "weight must be 2-D"});
}

// ---- integer matmul and linear ------------------------------------------------------------------------

const std::vector<Symbol<DType>> kIntDTypes = {DType::Int8(), DType::UInt8(), DType::Int16(), DType::Int32(),
                                               DType::Int64()};

// An exact integer value (|v| < 2^53) wrapped to `dtype` as two's complement: what PyTorch's integer
// matmul gives when the true result does not fit.
double Wrap(double v, Symbol<DType> dtype) {
  const auto i = static_cast<int64_t>(v);
  switch (dtype->data_type()) {
    case DataType::kInt8: return static_cast<int8_t>(i);
    case DataType::kUInt8: return static_cast<uint8_t>(i);
    case DataType::kInt16: return static_cast<int16_t>(i);
    case DataType::kInt32: return static_cast<int32_t>(i);
    default: return static_cast<double>(i);
  }
}
std::vector<double> Wrapped(std::vector<double> v, Symbol<DType> dtype) {
  for (double& x : v) x = Wrap(x, dtype);
  return v;
}

// Random values whose products wrap in the 8- and 16-bit dtypes (the double references stay exact).
TensorPtr RandomInts(Symbol<DType> dt, const Shape& s) {
  return dt == DType::UInt8() ? RandomTensor(dt, s, 0, 256) : RandomTensor(dt, s, -128, 128);
}

void CheckIntMatmul(const Shape& as, const Shape& bs, bool ta, bool tb) {
  for (Symbol<DType> dt : kIntDTypes) {
    SCOPED_TRACE(fmt::format("{} {} @ {} ta={} tb={}", dt->name(), as, bs, ta, tb));
    const TensorPtr a = RandomInts(dt, as), b = RandomInts(dt, bs);
    Shape shape;
    const std::vector<double> want = Wrapped(RefMatmul(a, b, ta, tb, &shape), dt);
    ExpectTensorNear(MatmulOp(a, b, ta, tb), dt, shape, want, 0, 0);
    ExpectTensorNear(MatmulOp(NonContiguous(a), NonContiguous(b), ta, tb), dt, shape, want, 0, 0);
    MarkCovered("matmul", dt);
  }
}

TEST(Matmul, IntegersMatchAWrappingReference) {
  CheckIntMatmul({3, 5}, {5, 4}, false, false);
  CheckIntMatmul({64, 128}, {128, 32}, false, false);  // enough rows for several pool threads
  CheckIntMatmul({4, 0}, {0, 3}, false, false);        // empty inner dim: zeros
  CheckIntMatmul({5, 3}, {4, 5}, true, true);
  CheckIntMatmul({2, 6, 3}, {6, 4}, true, false);
  CheckIntMatmul({3, 1, 4, 5}, {2, 5, 6}, false, false);
  CheckIntMatmul({2, 3, 4, 5}, {5, 6}, false, false);
  CheckIntMatmul({3, 4, 5}, {1, 6, 5}, false, true);
  for (Symbol<DType> dt : kIntDTypes) {  // NumPy's 1-D operands, and transposed views read in place
    SCOPED_TRACE(dt->name());
    const TensorPtr v = RandomInts(dt, {5}), m = RandomInts(dt, {5, 3}), bm = RandomInts(dt, {2, 4, 5});
    Shape s;
    ExpectTensorNear(ops::Matmul(v, m), dt, {3},
                     Wrapped(RefMatmul(FromDoubles(dt, {1, 5}, ToDoubles(v)), m, false, false, &s), dt), 0, 0);
    ExpectTensorNear(ops::Matmul(bm, v), dt, {2, 4},
                     Wrapped(RefMatmul(bm, FromDoubles(dt, {5, 1}, ToDoubles(v)), false, false, &s), dt), 0, 0);
    ExpectTensorNear(ops::Matmul(ops::Transpose(m, 0, 1), ops::Transpose(bm, -1, -2)), dt, {2, 3, 4},
                     Wrapped(RefMatmul(m, bm, true, true, &s), dt), 0, 0);
  }
}

TEST(Matmul, IntegerOverflowWrapsAroundAsTwosComplement) {
  // By hand: 100 * 2 + 100 * 1 = 300 = 44 (mod 256); -128 * -1 = 128 = -128; uint8 200 * 2 = 400 = 144;
  // int16 300 * 300 = 90000 = 24464; int32 2^30 * 2 + 2^30 * 2 = 2^32 = 0; int64 (2^63 - 1) * 2 = -2.
  auto product = [](Symbol<DType> dt, const Shape& as, std::vector<double> a, const Shape& bs, std::vector<double> b) {
    return ToDoubles(ops::Matmul(FromDoubles(dt, as, a), FromDoubles(dt, bs, b)));
  };
  EXPECT_EQ(product(DType::Int8(), {1, 2}, {100, 100}, {2, 1}, {2, 1}), (std::vector<double>{44}));
  EXPECT_EQ(product(DType::Int8(), {1, 1}, {-128}, {1, 1}, {-1}), (std::vector<double>{-128}));
  EXPECT_EQ(product(DType::UInt8(), {1, 1}, {200}, {1, 1}, {2}), (std::vector<double>{144}));
  EXPECT_EQ(product(DType::Int16(), {1, 1}, {300}, {1, 1}, {300}), (std::vector<double>{24464}));
  EXPECT_EQ(product(DType::Int32(), {1, 2}, {1 << 30, 1 << 30}, {2}, {2, 2}), (std::vector<double>{0}));
  // int64 beyond doubles: built from int64 data.
  std::vector<int64_t> big = {INT64_MAX, 3}, two = {2, -1};
  const TensorPtr a = FromHost(DType::Int64(), {1, 2}, big.data(), 16, Device::CPU());
  const TensorPtr b = FromHost(DType::Int64(), {2}, two.data(), 16, Device::CPU());
  const TensorPtr c = ops::Matmul(a, b);
  ASSERT_EQ(c->shape(), Shape{1});
  EXPECT_EQ(c->data<int64_t>()[0], -5);  // 2 * (2^63 - 1) - 3 = 2^64 - 5 = -5 (mod 2^64)
  // linear: the bias is added in the same wrapping arithmetic.
  const TensorPtr y = ops::Linear(FromDoubles(DType::Int8(), {1, 2}, {100, 27}), FromDoubles(DType::Int8(), {1, 2}, {1, 1}),
                                  FromDoubles(DType::Int8(), {1}, {1}));
  EXPECT_EQ(ToDoubles(y), (std::vector<double>{-128}));  // 128 = -128 (mod 256)
}

TEST(Linear, IntegersMatchAWrappingReference) {
  struct Case {
    Shape x;
    int64_t out;
    bool bias;
  };
  const std::vector<Case> cases = {{{5, 7}, 3, true}, {{2, 4, 7}, 6, true}, {{7}, 3, false}, {{32, 64}, 128, true}};
  for (Symbol<DType> dt : kIntDTypes) {
    for (const Case& c : cases) {
      SCOPED_TRACE(fmt::format("{} x {} out {} bias {}", dt->name(), c.x, c.out, c.bias));
      const int64_t in = c.x[c.x.ndim() - 1].value();
      const TensorPtr x = RandomInts(dt, c.x), w = RandomInts(dt, {c.out, in});
      const TensorPtr b = c.bias ? RandomInts(dt, {c.out}) : TensorPtr();
      Shape shape = c.x;
      shape[shape.ndim() - 1] = c.out;
      const std::vector<double> want = Wrapped(RefLinear(x, w, b), dt);
      ExpectTensorNear(ops::Linear(x, w, b), dt, shape, want, 0, 0);
      ExpectTensorNear(ops::Linear(NonContiguous(x), NonContiguous(w), b), dt, shape, want, 0, 0);
      MarkCovered("linear", dt);
    }
  }
}

// ---- oneDNN's errors ------------------------------------------------------------------------------------

// Kernels (run through Guarded, as every oneDNN kernel is) whose primitive oneDNN refuses to create: a
// convolution whose dst does not follow from its src and weights (oneDNN's invalid_arguments), one it
// has no implementation for (unimplemented, thrown as oneDNN throws it), and an error while running.
void InconsistentConv(KernelContext&) {
  static auto* cache = new dnnl_util::PrimitiveCache<dnnl::convolution_forward::primitive_desc>();
  cache->Get({1}, [] {
    using dnnl_util::AnyDesc;
    const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                            AnyDesc({1, 4, 5, 5}), AnyDesc({2, 4, 3, 3}), AnyDesc({1, 2, 7, 7}), {1, 1},
                                            {0, 0}, {0, 0});
    return dnnl::convolution_forward::primitive_desc(d, dnnl_util::Engine());
  });
}
void UnimplementedPrimitive(KernelContext&) {
  static auto* cache = new dnnl_util::PrimitiveCache<int>();
  cache->Get({2}, []() -> int { throw dnnl::error(dnnl_unimplemented, "could not create a primitive descriptor"); });
}
void FailsWhileRunning(KernelContext&) { throw dnnl::error(dnnl_runtime_error, "could not execute a primitive"); }

TEST(Dnnl, RefusalsToCreateAPrimitiveAreTheCallersErrorsNamingTheCall) {
  const std::vector<TensorPtr> inputs = {RandomTensor(DType::Float32(), {1, 4, 5, 5}), nullptr};
  const std::vector<TensorPtr> outputs;
  const Attrs attrs{{"stride", std::vector<int64_t>{1, 1}}};
  KernelContext ctx{inputs, outputs, attrs, Session::Current().thread_pool(), Session::Current().generator()};
  ExpectError([&] { dnnl_util::Guarded<InconsistentConv>(ctx); }, StatusCode::kInvalidArgument,
              {"oneDNN cannot run this call", "(1, 4, 5, 5) float32, none", "stride=[1, 1]",
               "could not create a descriptor"});
  ExpectError([&] { dnnl_util::Guarded<UnimplementedPrimitive>(ctx); }, StatusCode::kUnimplemented,
              {"oneDNN cannot run this call", "(1, 4, 5, 5) float32", "could not create a primitive descriptor"});
  // A failure of a primitive that oneDNN created is ours.
  ExpectError([&] { dnnl_util::Guarded<FailsWhileRunning>(ctx); }, StatusCode::kInternal,
              {"oneDNN failed", "(1, 4, 5, 5) float32", "could not execute"});
}

// Note [1x1 weights in blocks]: a 1x1 convolution's weight in blocks of output channels, transposed by
// the engine on a pool, is what oneDNN's reorder makes of it: several blocks, the last one partial (its
// padding zeros), on one thread and on three; other layouts (taps, a block over input channels) go to
// oneDNN's reorder.
TEST(Dnnl, OneByOneWeightsInBlocksAreOneDnnsReorder) {
  using dnnl::memory;
  auto check = [](const memory::dims& dims, memory::format_tag tag) {
    SCOPED_TRACE(fmt::format("{} tag {}", fmt::join(dims, "x"), static_cast<int>(tag)));
    const TensorPtr w = RandomTensor(DType::Float32(), Shape(std::vector<Dim>(dims.begin(), dims.end())));
    const dnnl_util::Operand operand(dnnl_util::PlainDesc(dims), memory::desc(dims, memory::data_type::f32, tag), true);
    dnnl::stream stream(dnnl_util::Engine());
    const memory want = operand.Prepare(w->raw_data(), dnnl_util::kSlotExtra, stream);
    const auto* wp = static_cast<const float*>(want.get_data_handle());
    const std::vector<float> expected(wp, wp + want.get_desc().get_size() / sizeof(float));
    for (int32_t threads : {1, 3}) {
      ThreadPool pool(threads);
      const memory got = operand.Prepare(w->raw_data(), dnnl_util::kSlotWeights, stream, &pool);
      const auto* gp = static_cast<const float*>(got.get_data_handle());
      EXPECT_EQ(std::vector<float>(gp, gp + expected.size()), expected) << threads << " threads";
    }
  };
  check({100, 40, 1, 1}, memory::format_tag::Acdb48a);  // 3 blocks, 44 rows of padding
  check({128, 24, 1, 1}, memory::format_tag::Acdb64a);
  check({70, 17, 1, 1}, memory::format_tag::Acdb16a);  // columns beyond a whole tile
  check({64, 8, 3, 3}, memory::format_tag::Acdb32a);   // taps: oneDNN's reorder
  check({32, 32, 1, 1}, memory::format_tag::ABcd16b16a);
}

// The oneDNN caches, buffers and streams are per thread count and per thread: sessions with other
// thread counts and concurrent callers get the same results (conv2d: dnnl_conv_test.cpp).
TEST(Matmul, ThreadCountsAndConcurrentCallers) {
  const auto f32 = DType::Float32();
  const TensorPtr a = RandomTensor(f32, {96, 200}), b = RandomTensor(f32, {200, 150});
  Shape shape;
  const std::vector<double> want = RefMatmul(a, b, false, false, &shape);
  auto check = [&] { ExpectTensorNear(ops::Matmul(a, b), f32, shape, want, Tol(f32), Tol(f32)); };
  for (int32_t threads : {1, 3, 2}) {
    Session session(SessionOptions{.num_threads = threads});
    SessionScope scope(session);
    check();
  }
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 5; ++i) check();
    });
  }
  for (std::thread& t : callers) t.join();
}

// Note [Products on the pool's threads]: PoolSgemm's shares of C's rows, of its columns and of the depth
// (each at least 2^19 multiply-adds: these sizes split at 2 and 3 threads), and a product too small to
// share, with either operand transposed, beta 0 and 1, operands and C wider than their rows (lda, ldb,
// ldc), on 1 to 3 threads and from inside the pool's ParallelFor (the shares then run one after the
// other), against float64 loops; C's columns past n are left as they were.
TEST(PoolSgemm, SharesOfRowsColumnsAndDepthMatchLoops) {
  struct Case {
    int64_t m, n, k;
  };
  for (const Case& s : {Case{1024, 40, 48}, Case{40, 1024, 48}, Case{48, 40, 2048}, Case{7, 5, 3}}) {
    for (const char ta : {'N', 'T'}) {
      for (const char tb : {'N', 'T'}) {
        for (const float beta : {0.0f, 1.0f}) {
          SCOPED_TRACE(fmt::format("m {} n {} k {} {}{} beta {}", s.m, s.n, s.k, ta, tb, beta));
          const int64_t lda = (ta == 'N' ? s.k : s.m) + 3, ldb = (tb == 'N' ? s.n : s.k) + 5, ldc = s.n + 2;
          const std::vector<double> av = ToDoubles(RandomTensor(DType::Float32(), {ta == 'N' ? s.m : s.k, lda}));
          const std::vector<double> bv = ToDoubles(RandomTensor(DType::Float32(), {tb == 'N' ? s.k : s.n, ldb}));
          const std::vector<double> cv = ToDoubles(RandomTensor(DType::Float32(), {s.m, ldc}));
          std::vector<double> want = cv;
          for (int64_t i = 0; i < s.m; ++i) {
            for (int64_t j = 0; j < s.n; ++j) {
              double sum = beta * cv[static_cast<size_t>(i * ldc + j)];
              for (int64_t q = 0; q < s.k; ++q) {
                sum += av[static_cast<size_t>(ta == 'N' ? i * lda + q : q * lda + i)] *
                       bv[static_cast<size_t>(tb == 'N' ? q * ldb + j : j * ldb + q)];
              }
              want[static_cast<size_t>(i * ldc + j)] = sum;
            }
          }
          const std::vector<float> a(av.begin(), av.end()), b(bv.begin(), bv.end());
          for (const int32_t threads : {1, 2, 3}) {
            ThreadPool pool(threads);
            for (const bool nested : {false, true}) {
              std::vector<float> c(cv.begin(), cv.end());
              const auto run = [&] {
                dnnl_util::PoolSgemm(pool, ta, tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
              };
              if (nested) {
                pool.ParallelFor(1, 1, [&](int64_t, int64_t) { run(); });
              } else {
                run();
              }
              int64_t wrong = 0;
              for (size_t i = 0; i < c.size(); ++i) {
                const bool in_c = static_cast<int64_t>(i) % ldc < s.n;  // else the padding past n
                const double tol = in_c ? 2e-5 * static_cast<double>(s.k + 1) : 0.0;
                if (std::abs(c[i] - want[i]) > tol) ++wrong;
              }
              EXPECT_EQ(wrong, 0) << threads << " threads, nested " << nested;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace oneflow::test
