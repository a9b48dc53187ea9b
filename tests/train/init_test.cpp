// Initialisers: fans and gains against PyTorch's formulas, the statistics of the random ones, layouts,
// determinism across thread counts, and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "tests/ops/op_test_util.h"
#include "core/session/session.h"
#include "core/tensor/factory.h"
#include "core/train/init.h"

namespace oneflow {
namespace {

const Symbol<DType> kF32 = DType::Float32();
const Symbol<DType> kF64 = DType::Float64();

std::vector<double> Values(const TensorPtr& t) {
  std::vector<double> out;
  const std::vector<int64_t>& strides = t->strides();
  const int64_t n = t->numel();
  std::vector<int64_t> index(static_cast<size_t>(t->ndim()), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
    VisitDType(t->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      out.push_back(static_cast<double>(t->data<T>()[offset]));
    });
    for (int64_t d = t->ndim() - 1; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < t->shape()[d].value()) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
  return out;
}

struct Stats {
  double mean, std, min, max;
};
Stats StatsOf(const std::vector<double>& v) {
  const double n = static_cast<double>(v.size());
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  double sq = 0;
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / n), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

// A session of its own for each test, so that draws do not depend on the order tests run in.
class InitTest : public ::testing::Test {
 protected:
  Session session_{SessionOptions{.seed = 42, .num_threads = 2}};
  SessionScope scope_{session_};
};

using ::oneflow::test::ExpectError;

TEST(CalculateFans, LinearAndConvWeightsAsPyTorch) {
  // nn.Linear(5, 3).weight is (3, 5): fan_in 5, fan_out 3.
  EXPECT_EQ(init::CalculateFans(Shape{3, 5}).fan_in, 5);
  EXPECT_EQ(init::CalculateFans(Shape{3, 5}).fan_out, 3);
  // nn.Conv2d(4, 8, 3).weight is (8, 4, 3, 3): fan_in 4 * 9 = 36, fan_out 8 * 9 = 72.
  EXPECT_EQ(init::CalculateFans(Shape{8, 4, 3, 3}).fan_in, 36);
  EXPECT_EQ(init::CalculateFans(Shape{8, 4, 3, 3}).fan_out, 72);
  // Conv1d-like (O, I, k).
  EXPECT_EQ(init::CalculateFans(Shape{6, 2, 5}).fan_in, 10);
  EXPECT_EQ(init::CalculateFans(Shape{6, 2, 5}).fan_out, 30);
  ExpectError([] { init::CalculateFans(Shape{7}); }, {"at least 2 dims", "(7,)"});
  ExpectError([] { init::CalculateFans(Shape{}); }, {"at least 2 dims"});
}

TEST(CalculateGain, PyTorchValues) {
  EXPECT_DOUBLE_EQ(init::CalculateGain("linear"), 1.0);
  EXPECT_DOUBLE_EQ(init::CalculateGain("sigmoid"), 1.0);
  EXPECT_DOUBLE_EQ(init::CalculateGain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(init::CalculateGain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::CalculateGain("leaky_relu"), std::sqrt(2.0 / (1.0 + 0.01 * 0.01)));
  EXPECT_DOUBLE_EQ(init::CalculateGain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
  ExpectError([] { init::CalculateGain("softplus"); }, {"nonlinearity", "softplus"});
}

TEST_F(InitTest, UniformAndNormalStatistics) {
  const int64_t n = 200000;
  for (Symbol<DType> dtype : {kF32, kF64}) {
    TensorPtr t = Empty(dtype, Shape{n}, Device::CPU());
    init::Uniform(t, -2.0, 3.0);
    Stats s = StatsOf(Values(t));
    EXPECT_GE(s.min, -2.0);
    EXPECT_LT(s.max, 3.0);
    EXPECT_NEAR(s.mean, 0.5, 0.02);               // sigma of the mean: 1.44 / sqrt(n) = 0.003
    EXPECT_NEAR(s.std, 5.0 / std::sqrt(12.0), 0.01);
    EXPECT_LT(s.min, -1.99);
    EXPECT_GT(s.max, 2.99);

    init::Normal(t, 1.5, 0.25);
    s = StatsOf(Values(t));
    EXPECT_NEAR(s.mean, 1.5, 0.005);  // sigma of the mean: 0.25 / sqrt(n) = 0.0006
    EXPECT_NEAR(s.std, 0.25, 0.003);
  }
  // Degenerate but valid parameters.
  TensorPtr t = Empty(kF64, Shape{10}, Device::CPU());
  init::Uniform(t, 4.0, 4.0);
  EXPECT_EQ(Values(t), std::vector<double>(10, 4.0));
  init::Normal(t, -1.0, 0.0);
  EXPECT_EQ(Values(t), std::vector<double>(10, -1.0));
}

TEST_F(InitTest, KaimingBoundsAndStdFollowPyTorch) {
  const Shape shape{256, 128, 3, 3};  // conv weight: fan_in 1152, fan_out 2304
  TensorPtr w = Empty(kF32, shape, Device::CPU());
  // Defaults (a = 0, fan_in, leaky_relu): gain sqrt(2), bound = sqrt(2) * sqrt(3 / 1152).
  init::KaimingUniform(w);
  double bound = std::sqrt(2.0) * std::sqrt(3.0 / 1152.0);
  Stats s = StatsOf(Values(w));
  EXPECT_GE(s.min, -bound);
  EXPECT_LE(s.max, bound);
  EXPECT_GT(s.max, 0.999 * bound);
  EXPECT_NEAR(s.std, bound / std::sqrt(3.0), 0.01 * bound);
  EXPECT_NEAR(s.mean, 0.0, 0.01 * bound);

  // fan_out with leaky_relu slope 0.2: std = sqrt(2 / 1.04) / sqrt(2304).
  init::KaimingNormal(w, {.a = 0.2, .mode = "fan_out", .nonlinearity = "leaky_relu"});
  s = StatsOf(Values(w));
  EXPECT_NEAR(s.std, std::sqrt(2.0 / 1.04) / std::sqrt(2304.0), 0.01 * s.std);
  EXPECT_NEAR(s.mean, 0.0, 0.01 * s.std);

  // tanh on a linear weight (out 300, in 700): std = 5/3 / sqrt(700); `a` is ignored.
  TensorPtr lin = Empty(kF64, Shape{300, 700}, Device::CPU());
  init::KaimingNormal(lin, {.a = 5.0, .mode = "fan_in", .nonlinearity = "tanh"});
  s = StatsOf(Values(lin));
  EXPECT_NEAR(s.std, (5.0 / 3.0) / std::sqrt(700.0), 0.01 * s.std);
  init::KaimingUniform(lin, {.mode = "fan_out", .nonlinearity = "relu"});
  bound = std::sqrt(2.0) * std::sqrt(3.0 / 300.0);
  s = StatsOf(Values(lin));
  EXPECT_LE(s.max, bound);
  EXPECT_GT(s.max, 0.999 * bound);
}

TEST_F(InitTest, XavierBoundsAndStdFollowPyTorch) {
  TensorPtr w = Empty(kF64, Shape{400, 600}, Device::CPU());
  // bound = gain * sqrt(6 / (fan_in + fan_out)).
  init::XavierUniform(w, 2.0);
  const double bound = 2.0 * std::sqrt(6.0 / 1000.0);
  Stats s = StatsOf(Values(w));
  EXPECT_GE(s.min, -bound);
  EXPECT_LE(s.max, bound);
  EXPECT_GT(s.max, 0.999 * bound);
  init::XavierNormal(w);
  s = StatsOf(Values(w));
  EXPECT_NEAR(s.std, std::sqrt(2.0 / 1000.0), 0.01 * s.std);
}

TEST_F(InitTest, ConstantsOnEveryFloatingDtypeAndLayout) {
  for (DataType code : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    const Symbol<DType> dtype = DType::Get(code);
    TensorPtr t = Empty(dtype, Shape{3, 4}, Device::CPU());
    init::Constant(t, -0.5);
    EXPECT_EQ(Values(t), std::vector<double>(12, -0.5)) << dtype->name();
    init::Zeros(t);
    EXPECT_EQ(Values(t), std::vector<double>(12, 0.0)) << dtype->name();
    init::Ones(t);
    EXPECT_EQ(Values(t), std::vector<double>(12, 1.0)) << dtype->name();
    // Random ones on the 16-bit types stay in range.
    init::Uniform(t, 0.0, 1.0);
    Stats s = StatsOf(Values(t));
    EXPECT_GE(s.min, 0.0) << dtype->name();
    EXPECT_LE(s.max, 1.0) << dtype->name();
  }
  // A strided view (the transpose of a (4, 3) tensor) is filled through its own strides: only its
  // elements change, and they equal a contiguous fill from the same seed in row-major order.
  TensorPtr base = Full(kF64, Shape{4, 3}, 7.0, Device::CPU());
  TensorPtr view = Tensor::MakeView(*base, Shape{3, 4}, {1, 3}, 0);
  init::Constant(view, 2.0);
  EXPECT_EQ(Values(base), std::vector<double>(12, 2.0));
  session_.generator().ManualSeed(9);
  init::Normal(view);
  session_.generator().ManualSeed(9);
  TensorPtr contiguous = Empty(kF64, Shape{3, 4}, Device::CPU());
  init::Normal(contiguous);
  EXPECT_EQ(Values(view), Values(contiguous));

  // A column of a wider tensor: the other columns keep their values.
  TensorPtr wide = Full(kF32, Shape{5, 2}, 3.0, Device::CPU());
  TensorPtr column = Tensor::MakeView(*wide, Shape{5}, {2}, 1);
  init::Uniform(column, -1.0, 0.0);
  const std::vector<double> all = Values(wide);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(all[2 * i], 3.0);
    EXPECT_LT(all[2 * i + 1], 0.0);
  }
}

TEST(Init, DeterministicForASeedWhateverTheThreadCount) {
  std::vector<std::vector<double>> results;
  for (int32_t threads : {1, 2, 3, 8}) {
    Session session(SessionOptions{.seed = 7, .num_threads = threads});
    SessionScope scope(session);
    TensorPtr a = Empty(kF32, Shape{512, 300}, Device::CPU());  // above the parallel grain
    TensorPtr b = Empty(kF64, Shape{100, 1000}, Device::CPU());
    init::KaimingUniform(a);
    init::XavierNormal(b);
    std::vector<double> r = Values(a);
    const std::vector<double> rb = Values(b);
    r.insert(r.end(), rb.begin(), rb.end());
    results.push_back(std::move(r));
  }
  for (size_t i = 1; i < results.size(); ++i) EXPECT_TRUE(results[i] == results[0]) << "thread count #" << i;

  // Consecutive calls draw new values.
  Session session(SessionOptions{.seed = 7});
  SessionScope scope(session);
  TensorPtr a = Empty(kF64, Shape{8}, Device::CPU());
  TensorPtr b = Empty(kF64, Shape{8}, Device::CPU());
  init::Normal(a);
  init::Normal(b);
  EXPECT_NE(Values(a), Values(b));
}

TEST_F(InitTest, ErrorsWriteNothingAndKeepTheGenerator) {
  TensorPtr w = Full(kF32, Shape{4, 3}, 9.0, Device::CPU());
  const Generator::Range before = session_.generator().Reserve(0);
  ExpectError([&] { init::Uniform(nullptr, 0, 1); }, {"tensor", "null"});
  ExpectError([&] { init::Uniform(Full(DType::Int32(), Shape{2}, 0, Device::CPU())); }, {"floating", "int32"});
  ExpectError([&] { init::Uniform(w, 1.0, 0.5); }, {"a", "b", "0.5"});
  ExpectError([&] { init::Uniform(w, -INFINITY, 0.5); }, {"a", "finite"});
  ExpectError([&] { init::Normal(w, 0.0, -1.0); }, {"std", "-1"});
  ExpectError([&] { init::Normal(w, NAN, 1.0); }, {"mean", "finite"});
  ExpectError([&] { init::Constant(Empty(DType::Float16(), Shape{2}, Device::CPU()), 1e6); },
              {"value", "float16"});
  ExpectError([&] { init::KaimingUniform(w, {.mode = "fan_avg"}); }, {"mode", "fan_avg"});
  ExpectError([&] { init::KaimingNormal(w, {.nonlinearity = "selu_"}); }, {"nonlinearity", "selu_"});
  ExpectError([&] { init::KaimingUniform(Empty(kF32, Shape{5}, Device::CPU())); }, {"2 dims", "(5,)"});
  ExpectError([&] { init::XavierUniform(Empty(kF32, Shape{}, Device::CPU())); }, {"2 dims", "()"});
  ExpectError([&] { init::XavierNormal(w, -1.0); }, {"gain", "-1"});
  ExpectError([&] { init::KaimingUniform(w, {.a = NAN}); }, {"a", "finite"});
  EXPECT_EQ(Values(w), std::vector<double>(12, 9.0));
  const Generator::Range after = session_.generator().Reserve(0);
  EXPECT_EQ(after.first_counter, before.first_counter);

  // A zero-element weight is left alone (PyTorch warns and returns), without drawing.
  TensorPtr empty = Empty(kF32, Shape{0, 5}, Device::CPU());
  init::KaimingUniform(empty, {.mode = "fan_out"});
  init::XavierNormal(empty);
  init::Uniform(empty);
  EXPECT_EQ(session_.generator().Reserve(0).first_counter, before.first_counter);
}

}  // namespace
}  // namespace oneflow
