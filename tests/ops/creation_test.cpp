// full_like / zeros_like / ones_like over every dtype, and the dtype rule for scalar operands.
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

TEST(FullLike, EveryDtypeMatchesShapeAndValue) {
  for (DataType code : kAllTypes) {
    const Symbol<DType> dtype = DType::Get(code);
    TensorPtr x = NonContiguous(RandomTensor(dtype, Shape{3, 5}));
    const double value = dtype->is_bool() ? 1.0 : 3.0;
    ExpectTensorNear(ops::FullLike(x, value), dtype, Shape{3, 5}, std::vector<double>(15, value), 0, 0);
    ExpectTensorNear(ops::ZerosLike(x), dtype, Shape{3, 5}, std::vector<double>(15, 0.0), 0, 0);
    ExpectTensorNear(ops::OnesLike(x), dtype, Shape{3, 5}, std::vector<double>(15, 1.0), 0, 0);
    MarkCovered("full_like", dtype);
  }
  ExpectTensorNear(ops::FullLike(RandomTensor(DType::Float32(), Shape{}), -0.5), DType::Float32(), Shape{}, {-0.5});
  ExpectTensorNear(ops::ZerosLike(RandomTensor(DType::Int64(), Shape{0, 4})), DType::Int64(), Shape{0, 4}, {});
}

TEST(FullLike, UnrepresentableValueIsAnError) {
  TensorPtr x = RandomTensor(DType::UInt8(), Shape{2});
  try {
    ops::FullLike(x, -1.0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("full_like"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("uint8"), std::string::npos) << e.message();
  }
  EXPECT_THROW(ops::FullLike(RandomTensor(DType::Bool(), Shape{2}), 2.0), Error);
}

TEST(ScalarLike, FollowsPyTorchScalarRules) {
  struct Case {
    DataType tensor;
    double value;
    DataType want;
  } cases[] = {
      {DataType::kFloat64, 2.0, DataType::kFloat64}, {DataType::kFloat32, 0.5, DataType::kFloat32},
      {DataType::kFloat16, 0.5, DataType::kFloat16}, {DataType::kInt32, 2.0, DataType::kInt32},
      {DataType::kInt32, 0.5, DataType::kFloat32},   {DataType::kUInt8, 255.0, DataType::kUInt8},
      {DataType::kInt8, -128.0, DataType::kInt8},    {DataType::kInt8, 300.5, DataType::kFloat32},
      {DataType::kBool, 1.0, DataType::kInt64},      {DataType::kBool, 0.0, DataType::kInt64},
      {DataType::kBool, 5.0, DataType::kInt64},      {DataType::kBool, 0.5, DataType::kFloat32},
      {DataType::kInt64, 1e18, DataType::kInt64},
  };
  for (const Case& c : cases) {
    TensorPtr s = ops::ScalarLike(RandomTensor(DType::Get(c.tensor), Shape{2}), c.value);
    EXPECT_EQ(s->dtype(), DType::Get(c.want)) << DType::Get(c.tensor)->name() << " with " << c.value;
    EXPECT_EQ(s->shape(), Shape{});
    EXPECT_EQ(ToDoubles(s)[0], c.value);
  }
}

// The dtype never depends on the scalar's magnitude: out of the tensor's range is an error, for every
// dtype and every *_scalar op (int8 + 300 used to be int64 while int8 + 1 was int8).
TEST(ScalarLike, OutOfRangeScalarsAreRefused) {
  struct Case {
    DataType tensor;
    double value;
  } cases[] = {{DataType::kInt8, 300.0},   {DataType::kInt8, -129.0},     {DataType::kUInt8, -1.0},
               {DataType::kUInt8, 256.0},  {DataType::kInt16, 40000.0},   {DataType::kInt32, 3e9},
               {DataType::kInt64, 1e19},   {DataType::kFloat16, 1e6},     {DataType::kBFloat16, 1e39},
               {DataType::kFloat32, 1e39}};
  using ScalarOp = TensorPtr (*)(const TensorPtr&, double);
  const ScalarOp scalar_ops[] = {ops::AddScalar, ops::SubScalar, ops::MulScalar, ops::DivScalar, ops::PowScalar,
                                 ops::MaximumScalar, ops::MinimumScalar, ops::GtScalar, ops::EqScalar};
  for (const Case& c : cases) {
    const TensorPtr t = RandomTensor(DType::Get(c.tensor), Shape{2});
    for (ScalarOp op : scalar_ops) {
      SCOPED_TRACE(fmt::format("{} with {}", DType::Get(c.tensor)->name(), c.value));
      ExpectError([&] { op(t, c.value); }, StatusCode::kInvalidArgument, {"scalar", "out of range", "cast"});
    }
  }
  // inf and nan are values of the floating dtypes.
  EXPECT_EQ(ops::AddScalar(RandomTensor(DType::Float16(), Shape{2}), INFINITY)->dtype(), DType::Float16());
  EXPECT_EQ(ops::AddScalar(RandomTensor(DType::Int8(), Shape{2}), NAN)->dtype(), DType::Float32());
}

}  // namespace
}  // namespace oneflow::test
