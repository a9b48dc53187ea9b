// Half precision (Note [Half precision in float32]): every floating op has float16 and bfloat16 kernels;
// a half kernel equals its float32 kernel on the same values, rounded; inputs an op updates in place
// are rounded back; other dtypes pass through. The per-op comparisons against float64 references are
// in each op's own test file (FloatingDTypes()).
#include <cmath>

#include "core/op/dispatch.h"
#include "core/train/optimizer.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const std::vector<Symbol<DType>> kHalves = {DType::Float16(), DType::BFloat16()};

// x's values in `dtype` (exact: every half value is a float32 value).
TensorPtr As(const TensorPtr& x, Symbol<DType> dtype) { return FromDoubles(dtype, x->shape(), ToDoubles(x)); }

// The values of the float32 result `wide` rounded to `dtype`: what a half kernel must give exactly.
std::vector<double> Rounded(const TensorPtr& wide, Symbol<DType> dtype) { return ToDoubles(As(wide, dtype)); }

TEST(HalfKernels, EveryOpWithAFloat32KernelHasThem) {
  int ops = 0;
  for (const OpDef* op : OpRegistry::Global().All()) {
    if (op->FindKernel(DeviceType::kCPU, DType::Float32()) == nullptr) continue;
    // Its kernel is selected by the loss scale, float32 whatever the model's dtype (Note [Loss scaling]).
    if (op->name == "update_loss_scale") continue;
    ++ops;
    for (Symbol<DType> dt : kHalves) {
      EXPECT_NE(op->FindKernel(DeviceType::kCPU, dt), nullptr) << op->name << " has no " << dt->name() << " kernel";
    }
  }
  EXPECT_GT(ops, 100);
}

TEST(HalfKernels, EqualTheFloat32KernelRounded) {
  for (Symbol<DType> dt : kHalves) {
    const TensorPtr x = RandomTensor(dt, {2, 3, 6, 6});
    const TensorPtr w = RandomTensor(dt, {4, 3, 3, 3});
    const TensorPtr b = RandomTensor(dt, {4});
    const TensorPtr y = ops::Conv2d(x, w, b, {.padding = {1, 1}});
    const TensorPtr wide =
        ops::Conv2d(As(x, DType::Float32()), As(w, DType::Float32()), As(b, DType::Float32()), {.padding = {1, 1}});
    ExpectTensorNear(y, dt, wide->shape(), Rounded(wide, dt), 0, 0);
    // Channels last: the half call keeps the format through its float32 kernel.
    const TensorPtr y_cl = ops::Conv2d(ChannelsLast(x), w, b, {.padding = {1, 1}});
    EXPECT_EQ(y_cl->memory_format(), MemoryFormat::kChannelsLast);
    ExpectTensorNear(y_cl, dt, wide->shape(), Rounded(wide, dt), 0, 0);

    const TensorPtr logits = RandomTensor(dt, {5, 7});
    const TensorPtr target = FromDoubles(DType::Int64(), {5}, {0, 6, 3, 3, 1});
    const TensorPtr loss = ops::CrossEntropy(logits, target);
    const TensorPtr wide_loss = ops::CrossEntropy(As(logits, DType::Float32()), target);
    ExpectTensorNear(loss, dt, {}, Rounded(wide_loss, dt), 0, 0);
    const TensorPtr index = ops::Argmax(logits, 1);
    ExpectTensorNear(index, DType::Int64(), {5}, ToDoubles(ops::Argmax(As(logits, DType::Float32()), 1)), 0, 0);
  }
}

TEST(HalfKernels, RoundBackTheInputsAnOpUpdates) {
  for (Symbol<DType> dt : kHalves) {
    // batch_norm in training updates its running statistics.
    const TensorPtr x = RandomTensor(dt, {4, 3, 2, 2});
    const TensorPtr mean = RandomTensor(dt, {3}, -0.5, 0.5), var = RandomTensor(dt, {3}, 0.5, 1.5);
    const TensorPtr mean32 = As(mean, DType::Float32()), var32 = As(var, DType::Float32());
    const TensorPtr y = ops::BatchNorm(x, nullptr, nullptr, mean, var, {.training = true});
    const TensorPtr y32 = ops::BatchNorm(As(x, DType::Float32()), nullptr, nullptr, mean32, var32, {.training = true});
    ExpectTensorNear(y, dt, x->shape(), Rounded(y32, dt), 0, 0);
    ExpectTensorNear(mean, dt, {3}, Rounded(mean32, dt), 0, 0);
    ExpectTensorNear(var, dt, {3}, Rounded(var32, dt), 0, 0);

    // An optimizer step updates the parameter and its state; a float32 parameter is not widened.
    const TensorPtr p = RandomTensor(dt, {7}), g = RandomTensor(dt, {7}), buf = RandomTensor(dt, {7});
    const TensorPtr p32 = As(p, DType::Float32()), buf32 = As(buf, DType::Float32());
    const SgdOptions sgd{.lr = 0.1, .momentum = 0.9};
    ops::SgdUpdate(p, g, buf, sgd, false);
    ops::SgdUpdate(p32, As(g, DType::Float32()), buf32, sgd, false);
    ExpectTensorNear(p, dt, {7}, Rounded(p32, dt), 0, 0);
    ExpectTensorNear(buf, dt, {7}, Rounded(buf32, dt), 0, 0);

    // Inference reads the running statistics and writes nothing back.
    const std::vector<double> before = ToDoubles(mean);
    ops::BatchNorm(x, nullptr, nullptr, mean, var, {.training = false});
    ExpectTensorNear(mean, dt, {3}, before, 0, 0);
  }
}

}  // namespace
}  // namespace oneflow::test
