// Autograd semantics: leaves and non-leaves, accumulation, explicit and implicit gradients, no-grad
// scopes, detach, retain_graph and the freed-graph error — against hand-computed values.
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

TensorPtr Leaf(const Shape& shape, const std::vector<double>& values) {
  TensorPtr t = FromDoubles(DType::Float64(), shape, values);
  t->set_requires_grad(true);
  return t;
}

TEST(Autograd, LeafAndNonLeaf) {
  TensorPtr x = Leaf(Shape{3}, {1, 2, 3});
  TensorPtr c = FromDoubles(DType::Float64(), Shape{3}, {4, 5, 6});
  EXPECT_TRUE(x->is_leaf());
  EXPECT_TRUE(c->is_leaf());
  EXPECT_FALSE(c->requires_grad());
  TensorPtr y = ops::Mul(x, c);
  EXPECT_FALSE(y->is_leaf());
  EXPECT_TRUE(y->requires_grad());
  ASSERT_TRUE(y->grad_fn());
  EXPECT_EQ(y->grad_fn()->op().name, "mul");
  TensorPtr z = ops::Mul(c, c);  // no input requires grad: no node
  EXPECT_TRUE(z->is_leaf());
  EXPECT_FALSE(z->requires_grad());
  EXPECT_THROW(y->set_requires_grad(false), Error);
  EXPECT_THROW(FromDoubles(DType::Int64(), Shape{2}, {1, 2})->set_requires_grad(true), Error);
}

TEST(Autograd, ImplicitGradientOfScalarAndAccumulation) {
  TensorPtr x = Leaf(Shape{3}, {1, -2, 3});
  // d/dx sum(x * x + x) = 2x + 1; x is used three times (a diamond in the graph).
  auto loss = [&] { return ops::Sum(ops::Add(ops::Mul(x, x), x)); };
  Backward({loss()}, {nullptr});
  ExpectTensorNear(x->grad(), DType::Float64(), Shape{3}, {3, -3, 7});
  TensorPtr first = x->grad();
  Backward({loss()}, {nullptr});  // accumulates
  ExpectTensorNear(x->grad(), DType::Float64(), Shape{3}, {6, -6, 14});
  // The first gradient tensor was not written in place.
  ExpectTensorNear(first, DType::Float64(), Shape{3}, {3, -3, 7});
}

TEST(Autograd, ExplicitGradientAndShapeChecks) {
  TensorPtr x = Leaf(Shape{2}, {1, 2});
  TensorPtr y = ops::MulScalar(x, 3.0);
  try {
    Backward({y}, {nullptr});
    FAIL() << "implicit gradient of a 2-element tensor";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("single-element"), std::string::npos) << e.message();
  }
  EXPECT_THROW(Backward({y}, {FromDoubles(DType::Float64(), Shape{3}, {1, 1, 1})}), Error);
  EXPECT_THROW(Backward({y}, {FromDoubles(DType::Float32(), Shape{2}, {1, 1})}), Error);
  Backward({y}, {FromDoubles(DType::Float64(), Shape{2}, {10, -1})});
  ExpectTensorNear(x->grad(), DType::Float64(), Shape{2}, {30, -3});
}

TEST(Autograd, RootThatDoesNotRequireGradIsAnError) {
  TensorPtr c = FromDoubles(DType::Float64(), Shape{}, {1});
  try {
    Backward({c}, {nullptr});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("does not require grad"), std::string::npos) << e.message();
  }
}

TEST(Autograd, SecondBackwardThroughFreedGraphFailsUnlessRetained) {
  TensorPtr x = Leaf(Shape{2}, {1, 2});
  TensorPtr loss = ops::Sum(ops::Mul(x, x));
  Backward({loss}, {nullptr});
  try {
    Backward({loss}, {nullptr});
    FAIL() << "second backward through a freed graph";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(e.message().find("retain_graph"), std::string::npos) << e.message();
  }
  TensorPtr w = Leaf(Shape{2}, {1, 2});
  TensorPtr l2 = ops::Sum(ops::Mul(w, w));
  Backward({l2}, {nullptr}, /*retain_graph=*/true);
  Backward({l2}, {nullptr});
  ExpectTensorNear(w->grad(), DType::Float64(), Shape{2}, {4, 8});
}

TEST(Autograd, NoGradScopeRecordsNothing) {
  TensorPtr x = Leaf(Shape{2}, {1, 2});
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(GradMode::is_enabled());
    TensorPtr y = ops::Mul(x, x);
    EXPECT_FALSE(y->requires_grad());
    EXPECT_TRUE(y->is_leaf());
  }
  EXPECT_TRUE(GradMode::is_enabled());
}

TEST(Autograd, DetachCutsTheGraphAndSharesData) {
  TensorPtr x = Leaf(Shape{2}, {1, 2});
  TensorPtr y = ops::Mul(x, x);
  TensorPtr d = y->Detach();
  EXPECT_TRUE(d->is_leaf());
  EXPECT_FALSE(d->requires_grad());
  EXPECT_EQ(d->raw_data(), y->raw_data());
  // loss = sum(detach(x*x) * x): the gradient treats x*x as a constant.
  Backward({ops::Sum(ops::Mul(d, x))}, {nullptr});
  ExpectTensorNear(x->grad(), DType::Float64(), Shape{2}, {1, 4});
}

TEST(Autograd, MultipleRootsAndUnreachedInputs) {
  TensorPtr a = Leaf(Shape{2}, {1, 2});
  TensorPtr b = Leaf(Shape{2}, {3, 4});
  TensorPtr ya = ops::Sum(ops::Mul(a, a));
  TensorPtr yb = ops::Sum(ops::Mul(a, b));
  Backward({ya, yb}, {nullptr, nullptr});
  ExpectTensorNear(a->grad(), DType::Float64(), Shape{2}, {2 + 3, 4 + 4});
  ExpectTensorNear(b->grad(), DType::Float64(), Shape{2}, {1, 2});
  TensorPtr c = Leaf(Shape{2}, {5, 6});
  Backward({ops::Sum(ops::Mul(a, a))}, {nullptr});
  EXPECT_FALSE(c->grad());
}

TEST(Autograd, LeafRootGetsItsGradient) {
  TensorPtr x = Leaf(Shape{}, {2});
  Backward({x}, {nullptr});
  ExpectTensorNear(x->grad(), DType::Float64(), Shape{}, {1});
}

TEST(Autograd, GradientsFlowThroughAChainOfDifferentOps) {
  // loss = mean(relu(x @ w + b)) over a 2x2 batch; check against finite differences.
  TensorPtr x = Leaf(Shape{2, 3}, {0.5, -1, 2, 1, 0.25, -0.5});
  TensorPtr w = Leaf(Shape{3, 2}, {0.1, -0.2, 0.3, 0.4, -0.5, 0.6});
  TensorPtr b = Leaf(Shape{2}, {0.05, -0.1});
  ExpectGradientsMatch(
      [](const std::vector<TensorPtr>& in) {
        return ops::Mean(ops::Relu(ops::Add(ops::Matmul(in[0], in[1]), in[2])));
      },
      {x, w, b});
}

}  // namespace
}  // namespace oneflow::test
