// The CUDA kernels against the CPU's: every op x dtype with a CUDA kernel runs on the same inputs on both
// devices (contiguous, strided, transposed, channels-last and broadcast operands) and the results must agree
// within the dtype's tolerance; then the coverage ledger must hold every CUDA kernel (a kernel registered
// without a comparison fails the run). Exits 77 (ctest: skipped) where this build or machine has no CUDA
// device, saying why.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/autograd/autograd.h"
#include "core/op/dispatch.h"
#include "core/ops/fused.h"
#include "core/tensor/copy.h"
#include "core/train/optimizer.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::test {
namespace {

const Device kCuda{DeviceType::kCUDA, 0};

// The same elements in the same layout (strides, offset) on `device`: t's whole storage is copied.
TensorPtr OnDevice(const TensorPtr& t, Device device) {
  const size_t nbytes = t->storage()->nbytes();
  TensorPtr base = Empty(DType::UInt8(), Shape{static_cast<int64_t>(nbytes)}, device);
  GetBackend(device).CopyFromHost(base->raw_data(), t->storage()->data(), nbytes);
  auto storage = base->storage();
  TensorPtr whole = Tensor::Make(storage, t->dtype(), Shape{static_cast<int64_t>(nbytes / t->dtype()->bytes())});
  return Tensor::MakeView(*whole, t->shape(), t->strides(), t->storage_offset());
}

TensorPtr ToCpu(const TensorPtr& t) { return CopyToDevice(t, Device::CPU()); }

// How far a CUDA result may be from the CPU's: transcendental functions differ by an ulp or two between the
// libraries, and float16/bfloat16 results may then round the other way (one ulp of theirs).
double Tolerance(Symbol<DType> dtype) {
  switch (dtype->data_type()) {
    case DataType::kFloat64:
      return 1e-12;
    case DataType::kFloat32:
      return 1e-5;
    case DataType::kFloat16:
      return 2e-3;
    default:
      return 1.6e-2;  // bfloat16
  }
}

// `tol` (relative and absolute): the dtype's Tolerance unless given.
void ExpectSameAsCpu(const TensorPtr& cuda_result, const TensorPtr& cpu_result, const std::string& what,
                     double tol = 0) {
  SCOPED_TRACE(what);
  ASSERT_EQ(cuda_result->device(), kCuda);
  EXPECT_EQ(cuda_result->memory_format(), cpu_result->memory_format());
  if (tol == 0) tol = Tolerance(cpu_result->dtype());
  ExpectTensorNear(ToCpu(cuda_result), cpu_result->dtype(), cpu_result->shape(), ToDoubles(cpu_result), tol, tol);
}

// Inputs in each op's domain: positive where the CPU would give NaN for negative values.
bool PositiveOnly(const std::string& op) { return op == "log" || op == "sqrt" || op == "rsqrt" || op == "pow"; }

std::vector<const OpDef*> OpcodeOps() {
  std::vector<const OpDef*> ops;
  for (const OpDef* op : OpRegistry::Global().All()) {
    if (op->fused_opcode >= 0) ops.push_back(op);
  }
  return ops;
}

const KernelDef& CudaKernel(const OpDef& op) {
  for (const KernelDef& k : op.kernels) {
    if (k.device == DeviceType::kCUDA) return k;
  }
  throw std::runtime_error(op.name + " has no CUDA kernel");
}

// Runs `op` on the CPU inputs and on their copies on the device (same layouts) and compares.
void CompareOp(const OpDef& op, const std::vector<TensorPtr>& cpu_inputs, const std::string& what) {
  std::vector<TensorPtr> cuda_inputs;
  for (const TensorPtr& t : cpu_inputs) cuda_inputs.push_back(OnDevice(t, kCuda));
  const TensorPtr expected = Apply1(op, cpu_inputs, {});
  const TensorPtr actual = Apply1(op, cuda_inputs, {});
  ExpectSameAsCpu(actual, expected, op.name + " " + what);
}

TEST(CudaElementwise, EveryOpWithAnOpcodeMatchesTheCpu) {
  const std::vector<const OpDef*> ops = OpcodeOps();
  ASSERT_GE(ops.size(), 19u);
  for (const OpDef* op : ops) {
    const bool binary = op->inputs.size() == 2;
    for (DataType d : CudaKernel(*op).dtypes) {
      const Symbol<DType> dtype = DType::Get(d);
      const double lo = PositiveOnly(op->name) ? 0.5 : -2.0;
      const TensorPtr a = RandomTensor(dtype, Shape{2, 3, 4, 5}, lo, 2.0);
      if (!binary) {
        for (const TensorPtr& x : Layouts(a)) CompareOp(*op, {x}, "x " + x->shape().ToString());
        CompareOp(*op, {RandomTensor(dtype, Shape{}, lo, 2.0)}, "0-d x");
        CompareOp(*op, {RandomTensor(dtype, Shape{0, 3}, lo, 2.0)}, "empty x");
      } else {
        // The second operand (divisor, exponent, saved output) stays away from 0 where that matters.
        const double b_lo = op->name == "div" ? 0.5 : -2.0;
        const TensorPtr b = RandomTensor(dtype, Shape{2, 3, 4, 5}, b_lo, 2.0);
        for (const TensorPtr& x : Layouts(a)) CompareOp(*op, {x, b}, "a in layout " + std::to_string(x->strides()[0]));
        for (const TensorPtr& y : Layouts(b)) CompareOp(*op, {a, y}, "b in layout " + std::to_string(y->strides()[0]));
        CompareOp(*op, {RandomTensor(dtype, Shape{3, 1, 5}, lo, 2.0), RandomTensor(dtype, Shape{4, 1}, b_lo, 2.0)},
                  "broadcast [3,1,5] x [4,1]");
        CompareOp(*op, {a, RandomTensor(dtype, Shape{}, b_lo, 2.0)}, "0-d b");
        CompareOp(*op, {a, Full(dtype, Shape{1}, 2.0, Device::CPU())}, "b = 2");
      }
      MarkCovered(op->name, dtype, DeviceType::kCUDA);
    }
  }
}

// cast between every pair of dtypes, exactly as the CPU: NaN, infinities, values beyond the target's range,
// fractions and negative values into unsigned types, in every layout.
TEST(CudaElementwise, CastMatchesTheCpuExactly) {
  const OpDef& cast = OpRegistry::Global().Get("cast");
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> specials = {0,    1,   -1,    2.5,  -2.5, 127.9, 128.4, 255.6, -129.2, 40000.7,
                                        -7e4, 3e9, -5e18, 1e30, nan,  inf,   -inf,  0.1,   65504,  7e4};
  for (DataType from : CudaKernel(cast).dtypes) {
    const Symbol<DType> in_dtype = DType::Get(from);
    std::vector<double> values(120);
    for (size_t i = 0; i < values.size(); ++i) values[i] = specials[i % specials.size()] * (i % 3 == 2 ? -1 : 1);
    const TensorPtr x = in_dtype->is_floating_point() ? FromDoubles(in_dtype, Shape{2, 3, 4, 5}, values)
                                                      : RandomTensor(in_dtype, Shape{2, 3, 4, 5}, -300.0, 300.0);
    for (DataType to : kAllTypes) {
      const Attrs attrs{{"dtype", DType::Get(to)}};
      for (const TensorPtr& layout : Layouts(x)) {
        ExpectSameAsCpu(Apply1(cast, {OnDevice(layout, kCuda)}, attrs), Apply1(cast, {layout}, attrs),
                        fmt::format("cast {} -> {}", in_dtype->name(), DType::Get(to)->name()), 1e-300);
      }
    }
    MarkCovered(cast.name, in_dtype, DeviceType::kCUDA);
  }
}

// NaN wins in maximum and minimum on both devices; infinities and signed zeros pass through.
TEST(CudaElementwise, NonFiniteValuesMatchTheCpu) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> av = {nan, 1.0, -inf, 0.0, -0.0, 3.0}, bv = {1.0, nan, 2.0, -0.0, 0.0, inf};
  for (const char* name : {"maximum", "minimum", "add", "mul", "div", "relu", "exp", "tanh", "sigmoid"}) {
    const OpDef& op = OpRegistry::Global().Get(name);
    for (const Symbol<DType>& dtype : FloatingDTypes()) {
      const TensorPtr a = FromDoubles(dtype, Shape{6}, av), b = FromDoubles(dtype, Shape{6}, bv);
      CompareOp(op, op.inputs.size() == 2 ? std::vector<TensorPtr>{a, b} : std::vector<TensorPtr>{a},
                std::string(dtype->name()));
    }
  }
}

// A program with temporaries, reused registers and a one-element input, as the fusion pass makes them.
TEST(CudaElementwise, FusedProgramsMatchTheCpu) {
  const OpDef& op = OpRegistry::Global().Get("fused_elementwise");
  auto code = [](FusedOpcode c) { return static_cast<int64_t>(c); };
  // r3 = x0 * x1; r4 = r3 + x2; r3 = relu(r4); r4 = tanh(r3); r5 = r4 - x0; r3 = pow(r5, x2); y = sigmoid(r3)
  const std::vector<int64_t> program = {code(FusedOpcode::kMul),     3, 0, 1,  code(FusedOpcode::kAdd),  4, 3, 2,
                                        code(FusedOpcode::kRelu),    3, 4, -1, code(FusedOpcode::kTanh), 4, 3, -1,
                                        code(FusedOpcode::kSub),     5, 4, 0,  code(FusedOpcode::kPow),  3, 5, 2,
                                        code(FusedOpcode::kSigmoid), 6, 3, -1};
  for (DataType d : CudaKernel(op).dtypes) {
    const Symbol<DType> dtype = DType::Get(d);
    const TensorPtr x0 = RandomTensor(dtype, Shape{4, 3, 8, 8}), x1 = RandomTensor(dtype, Shape{4, 3, 8, 8});
    const TensorPtr x2 = Full(dtype, Shape{1}, 2.0, Device::CPU());
    for (const TensorPtr& a : Layouts(x0)) {
      std::vector<TensorPtr> cuda_inputs = {OnDevice(a, kCuda), OnDevice(x1, kCuda), OnDevice(x2, kCuda)};
      const TensorPtr expected = Apply1(op, {a, x1, x2}, {{"program", program}});
      const TensorPtr actual = Apply1(op, cuda_inputs, {{"program", program}});
      ExpectSameAsCpu(actual, expected, "fused " + std::string(dtype->name()));
    }
    MarkCovered(op.name, dtype, DeviceType::kCUDA);
  }
  // A malformed program is the same InvalidArgument on the device.
  const TensorPtr x = OnDevice(RandomTensor(DType::Float32(), Shape{3}), kCuda);
  ExpectError(
      [&] {
        Apply1(op, {x}, {{"program", std::vector<int64_t>{code(FusedOpcode::kAdd), 1, 0, 7}}});
      },
      {"fused_elementwise", "instruction 0", "reads register 7"});
}

// Autograd on the device: gradients of a chain of elementwise ops equal the CPU's.
TEST(CudaElementwise, GradientsMatchTheCpu) {
  for (const Symbol<DType>& dtype : {DType::Float32(), DType::Float64()}) {
    const TensorPtr a = RandomTensor(dtype, Shape{5, 7}), b = RandomTensor(dtype, Shape{5, 7});
    const TensorPtr w = RandomTensor(dtype, Shape{5, 7});
    auto grads = [&](Device device) {
      TensorPtr x = CopyToDevice(a, device), y = CopyToDevice(b, device);
      x->set_requires_grad(true);
      y->set_requires_grad(true);
      const TensorPtr out = ops::Tanh(ops::Relu(ops::Add(ops::Mul(x, y), ops::Exp(ops::Sigmoid(x)))));
      Backward({ops::Div(out, ops::Add(y, Full(dtype, Shape{}, 3.0, device)))}, {CopyToDevice(w, device)});
      return std::vector<TensorPtr>{x->grad(), y->grad()};
    };
    const std::vector<TensorPtr> expected = grads(Device::CPU()), actual = grads(kCuda);
    ExpectSameAsCpu(actual[0], expected[0], "da " + std::string(dtype->name()));
    ExpectSameAsCpu(actual[1], expected[1], "db " + std::string(dtype->name()));
  }
}

// Reductions over every kind of dim set, input layout and dtype, with ties and NaNs for the extremes.
TEST(CudaReduce, EveryReductionMatchesTheCpu) {
  const std::vector<std::vector<int64_t>> dim_sets = {{}, {0}, {1}, {-1}, {0, 2}, {1, 3}, {0, 1, 2, 3}};
  for (const char* name : {"sum", "mean", "max", "min", "var", "std"}) {
    const OpDef& op = OpRegistry::Global().Get(name);
    const bool has_correction = op.name == "var" || op.name == "std";
    for (DataType d : CudaKernel(op).dtypes) {
      const Symbol<DType> dtype = DType::Get(d);
      const TensorPtr x = RandomTensor(dtype, Shape{3, 4, 5, 6});
      for (const TensorPtr& layout : Layouts(x)) {
        for (const std::vector<int64_t>& dims : dim_sets) {
          for (bool keepdim : {false, true}) {
            Attrs attrs{{"dims", dims}, {"keepdim", keepdim}};
            if (has_correction) attrs.Set("correction", int64_t{keepdim ? 0 : 1});
            const TensorPtr expected = Apply1(op, {layout}, attrs);
            const TensorPtr actual = Apply1(op, {OnDevice(layout, kCuda)}, attrs);
            ExpectSameAsCpu(actual, expected, op.name + " over " + std::to_string(dims.size()) + " dims");
          }
        }
      }
      // A large reduction (many elements per block) and an empty one.
      const TensorPtr big = RandomTensor(dtype, Shape{3, 70000});
      const Attrs over_rows{{"dims", std::vector<int64_t>{1}}};
      ExpectSameAsCpu(Apply1(op, {OnDevice(big, kCuda)}, over_rows), Apply1(op, {big}, over_rows), op.name + " big");
      if (op.name != "max" && op.name != "min") {
        const TensorPtr empty = RandomTensor(dtype, Shape{4, 0});
        ExpectSameAsCpu(Apply1(op, {OnDevice(empty, kCuda)}, over_rows), Apply1(op, {empty}, over_rows),
                        op.name + " empty");
      }
      MarkCovered(op.name, dtype, DeviceType::kCUDA);
    }
  }
  const OpDef& argmax = OpRegistry::Global().Get("argmax");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DataType d : CudaKernel(argmax).dtypes) {
    const Symbol<DType> dtype = DType::Get(d);
    // Ties go to the first index, and the first NaN wins: as the CPU.
    const TensorPtr ties = FromDoubles(dtype, Shape{3, 4}, {1, 3, 3, 2, nan, 1, nan, 5, 0, 0, 0, 0});
    const TensorPtr x = RandomTensor(dtype, Shape{3, 4, 5, 6});
    for (const TensorPtr& t : {ties, x, Transposed(x)}) {
      for (int64_t dim = 0; dim < t->ndim(); ++dim) {
        const Attrs attrs{{"dim", dim}, {"keepdim", dim == 0}};
        ExpectSameAsCpu(Apply1(argmax, {OnDevice(t, kCuda)}, attrs), Apply1(argmax, {t}, attrs), "argmax");
      }
    }
    MarkCovered(argmax.name, dtype, DeviceType::kCUDA);
  }
}

// The gradient helpers: sum_to_shape (broadcast gradients) and broadcast_like (sum and mean gradients).
TEST(CudaReduce, GradientHelpersMatchTheCpu) {
  const OpDef& sum_to_shape = OpRegistry::Global().Get("sum_to_shape");
  const OpDef& broadcast_like = OpRegistry::Global().Get("broadcast_like");
  for (DataType d : CudaKernel(sum_to_shape).dtypes) {
    const Symbol<DType> dtype = DType::Get(d);
    const TensorPtr x = RandomTensor(dtype, Shape{3, 4, 5, 6});
    for (const TensorPtr& layout : Layouts(x)) {
      for (const std::vector<int64_t>& target :
           std::vector<std::vector<int64_t>>{{4, 1, 6}, {1, 1}, {3, 4, 5, 6}, {}}) {
        const Attrs attrs{{"shape", target}};
        ExpectSameAsCpu(Apply1(sum_to_shape, {OnDevice(layout, kCuda)}, attrs), Apply1(sum_to_shape, {layout}, attrs),
                        "sum_to_shape");
      }
      for (bool mean : {false, true}) {
        const TensorPtr y = RandomTensor(dtype, Shape{4, 1});
        const Attrs attrs{{"dims", std::vector<int64_t>{0, 3}}, {"mean", mean}};
        ExpectSameAsCpu(Apply1(broadcast_like, {OnDevice(y, kCuda), OnDevice(layout, kCuda)}, attrs),
                        Apply1(broadcast_like, {y, layout}, attrs), "broadcast_like");
      }
    }
    MarkCovered(sum_to_shape.name, dtype, DeviceType::kCUDA);
    MarkCovered(broadcast_like.name, dtype, DeviceType::kCUDA);
  }
  // Through autograd: broadcasting operands and reductions to a scalar loss.
  for (const Symbol<DType>& dtype : {DType::Float32(), DType::Float64()}) {
    const TensorPtr a = RandomTensor(dtype, Shape{4, 5, 6}), b = RandomTensor(dtype, Shape{5, 1});
    auto grads = [&](Device device) {
      TensorPtr x = CopyToDevice(a, device), y = CopyToDevice(b, device);
      x->set_requires_grad(true);
      y->set_requires_grad(true);
      const TensorPtr z = ops::Mul(ops::Add(x, y), ops::Sub(x, y));
      const TensorPtr loss =
          ops::Add(ops::Mean(ops::Sum(z, {0}, false), {}, false), ops::Sum(ops::Mean(z, {2}, true), {}, false));
      Backward({loss}, {});
      return std::vector<TensorPtr>{x->grad(), y->grad()};
    };
    const std::vector<TensorPtr> expected = grads(Device::CPU()), actual = grads(kCuda);
    ExpectSameAsCpu(actual[0], expected[0], "dx " + std::string(dtype->name()));
    ExpectSameAsCpu(actual[1], expected[1], "dy " + std::string(dtype->name()));
  }
}

// Products through cuBLAS: row- and column-major (transposed) operands, broadcast and equal batch dims, a
// shared 2-D operand, k = 0, and linear with and without a bias. Sums of k products differ in order
// between the libraries, so the tolerance grows with k.
TEST(CudaMatmul, ProductsMatchTheCpu) {
  const OpDef& matmul = OpRegistry::Global().Get("matmul");
  const OpDef& linear = OpRegistry::Global().Get("linear");
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  const std::vector<Case> cases = {
      {{5, 7}, {7, 3}, false, false},
      {{7, 5}, {7, 3}, true, false},
      {{5, 7}, {3, 7}, false, true},
      {{7, 5}, {3, 7}, true, true},
      {{4, 5, 7}, {7, 3}, false, false},
      {{4, 5, 7}, {4, 7, 3}, false, false},
      {{2, 1, 5, 7}, {3, 7, 6}, false, false},
      {{4, 7, 5}, {7, 3}, true, false},
      {{5, 0}, {0, 3}, false, false},
      {{1, 9}, {9, 1}, false, false},
      {{3, 64, 33}, {3, 33, 65}, false, false},
  };
  for (DataType d : CudaKernel(matmul).dtypes) {
    const Symbol<DType> dtype = DType::Get(d);
    for (const Case& k : cases) {
      const TensorPtr a = RandomTensor(dtype, k.a), b = RandomTensor(dtype, k.b);
      const Attrs attrs{{"transpose_a", k.ta}, {"transpose_b", k.tb}};
      for (const TensorPtr& x : {a, k.a.ndim() >= 2 ? Transposed(a) : a}) {
        const TensorPtr expected = Apply1(matmul, {x, b}, attrs);
        const TensorPtr actual = Apply1(matmul, {OnDevice(x, kCuda), OnDevice(b, kCuda)}, attrs);
        const double inner = static_cast<double>(k.a[k.ta ? k.a.ndim() - 2 : k.a.ndim() - 1].value());
        ExpectSameAsCpu(actual, expected, "matmul " + k.a.ToString() + " @ " + k.b.ToString(),
                        Tolerance(dtype) * std::max(1.0, std::sqrt(inner)));
      }
    }
    MarkCovered(matmul.name, dtype, DeviceType::kCUDA);
    for (const Shape& xs : {Shape{6, 20}, Shape{2, 3, 20}, Shape{20}}) {
      const TensorPtr x = RandomTensor(dtype, xs), w = RandomTensor(dtype, Shape{8, 20});
      for (const TensorPtr& bias : {RandomTensor(dtype, Shape{8}), TensorPtr()}) {
        const TensorPtr expected = Apply1(linear, {x, w, bias});
        const TensorPtr actual =
            Apply1(linear, {OnDevice(x, kCuda), OnDevice(w, kCuda), bias ? OnDevice(bias, kCuda) : bias});
        ExpectSameAsCpu(actual, expected, "linear " + xs.ToString(), Tolerance(dtype) * std::sqrt(20.0));
      }
    }
    MarkCovered(linear.name, dtype, DeviceType::kCUDA);
  }
  // Gradients through both: an MLP layer's backward on the device equals the CPU's.
  for (const Symbol<DType>& dtype : {DType::Float32(), DType::Float64()}) {
    const TensorPtr x = RandomTensor(dtype, Shape{6, 20}), w = RandomTensor(dtype, Shape{8, 20});
    const TensorPtr bias = RandomTensor(dtype, Shape{8}), v = RandomTensor(dtype, Shape{8, 5});
    auto grads = [&](Device device) {
      std::vector<TensorPtr> leaves = {CopyToDevice(x, device), CopyToDevice(w, device), CopyToDevice(bias, device),
                                       CopyToDevice(v, device)};
      for (const TensorPtr& t : leaves) t->set_requires_grad(true);
      const TensorPtr h = ops::Relu(ops::Linear(leaves[0], leaves[1], leaves[2]));
      Backward({ops::Mean(ops::Matmul(h, leaves[3]), {}, false)}, {});
      std::vector<TensorPtr> g;
      for (const TensorPtr& t : leaves) g.push_back(t->grad());
      return g;
    };
    const std::vector<TensorPtr> expected = grads(Device::CPU()), actual = grads(kCuda);
    for (size_t i = 0; i < expected.size(); ++i) {
      ExpectSameAsCpu(actual[i], expected[i], "gradient " + std::to_string(i) + " " + std::string(dtype->name()),
                      Tolerance(dtype) * 5);
    }
  }
}

// softmax and log_softmax along every dim, with their backward ops.
TEST(CudaSoftmax, ForwardAndBackwardMatchTheCpu) {
  for (const char* name : {"softmax", "log_softmax"}) {
    const OpDef& op = OpRegistry::Global().Get(name);
    const OpDef& backward = OpRegistry::Global().Get(std::string(name) + "_backward");
    for (DataType d : CudaKernel(op).dtypes) {
      const Symbol<DType> dtype = DType::Get(d);
      for (const Shape& shape : {Shape{4, 7}, Shape{2, 3, 5, 4}, Shape{3, 1000}, Shape{}, Shape{0, 3}}) {
        for (int64_t dim = -1; dim < std::max<int64_t>(shape.ndim(), 1); ++dim) {
          const TensorPtr x = RandomTensor(dtype, shape, -4.0, 4.0), dy = RandomTensor(dtype, shape);
          const Attrs attrs{{"dim", dim}};
          const TensorPtr y = Apply1(op, {x}, attrs);
          const std::string what = std::string(name) + " " + shape.ToString() + " dim " + std::to_string(dim);
          ExpectSameAsCpu(Apply1(op, {OnDevice(x, kCuda)}, attrs), y, what);
          ExpectSameAsCpu(Apply1(backward, {OnDevice(y, kCuda), OnDevice(dy, kCuda)}, attrs),
                          Apply1(backward, {y, dy}, attrs), what + " backward");
        }
      }
      MarkCovered(op.name, dtype, DeviceType::kCUDA);
      MarkCovered(backward.name, dtype, DeviceType::kCUDA);
    }
  }
}

// nll_loss and cross_entropy with their backward ops: every reduction, class weights, ignored targets, label
// smoothing, (N, C) and (N, C, d) inputs; a target out of range is the CPU's InvalidArgument.
TEST(CudaLosses, NllLossAndCrossEntropyMatchTheCpu) {
  for (const char* name : {"nll_loss", "cross_entropy"}) {
    const OpDef& op = OpRegistry::Global().Get(name);
    const OpDef& backward = OpRegistry::Global().Get(std::string(name) + "_backward");
    const bool ce = op.name == "cross_entropy";
    for (DataType d : CudaKernel(op).dtypes) {
      const Symbol<DType> dtype = DType::Get(d);
      for (const Shape& shape : {Shape{6, 5}, Shape{3, 4, 7}, Shape{0, 5}}) {
        Shape target_shape = shape;
        std::vector<Dim> dims(shape.begin(), shape.end());
        dims.erase(dims.begin() + 1);
        target_shape = Shape(dims);
        std::vector<double> classes(static_cast<size_t>(target_shape.numel()));
        for (size_t i = 0; i < classes.size(); ++i) classes[i] = i % 4 == 3 ? -100.0 : static_cast<double>((i * 3) % 5);
        const TensorPtr target = FromDoubles(DType::Int64(), target_shape, classes);
        const TensorPtr x = RandomTensor(dtype, shape, -3.0, 1.0);
        for (const TensorPtr& weight : {TensorPtr(), RandomTensor(dtype, Shape{shape[1]}, 0.2, 2.0)}) {
          for (const char* reduction : {"none", "mean", "sum"}) {
            for (double smoothing : {0.0, 0.1}) {
              if (!ce && smoothing != 0.0) continue;
              Attrs attrs{{"reduction", std::string(reduction)}, {"ignore_index", int64_t{-100}}};
              if (ce) attrs.Set("label_smoothing", smoothing);
              const std::string what = fmt::format("{} {} {} {} weight {} smoothing {}", name, dtype->name(),
                                                   shape.ToString(), reduction, weight != nullptr, smoothing);
              auto on = [&](const TensorPtr& t) { return t ? OnDevice(t, kCuda) : t; };
              const TensorPtr loss = Apply1(op, {x, target, weight}, attrs);
              ExpectSameAsCpu(Apply1(op, {on(x), on(target), on(weight)}, attrs), loss, what);
              const TensorPtr dy = RandomTensor(dtype, loss->shape());
              ExpectSameAsCpu(Apply1(backward, {on(dy), on(x), on(target), on(weight)}, attrs),
                              Apply1(backward, {dy, x, target, weight}, attrs), what + " backward");
            }
          }
        }
      }
      const TensorPtr bad = OnDevice(FromDoubles(DType::Int64(), Shape{2}, {1, 5}), kCuda);
      const TensorPtr x = OnDevice(RandomTensor(dtype, Shape{2, 5}), kCuda);
      ExpectError([&] { Apply1(op, {x, bad, nullptr}, {}); }, {name, "target[1] = 5 is out of range for 5 classes"});
      MarkCovered(op.name, dtype, DeviceType::kCUDA);
      MarkCovered(backward.name, dtype, DeviceType::kCUDA);
    }
  }
}

// SGD steps on the device: every option combination, and a loss-scaled step skipped or unscaled by tensors
// that stay on the device.
TEST(CudaOptimizer, SgdStepsMatchTheCpu) {
  const OpDef& sgd = OpRegistry::Global().Get("sgd_update");
  for (DataType d : CudaKernel(sgd).dtypes) {
    const Symbol<DType> dtype = DType::Get(d);
    for (double momentum : {0.0, 0.9}) {
      for (bool nesterov : {false, true}) {
        if (nesterov && momentum == 0.0) continue;
        for (double weight_decay : {0.0, 0.01}) {
          for (double found : {-1.0, 0.0, 1.0}) {  // no loss scaling; scaling without / with overflows
            const TensorPtr p = RandomTensor(dtype, Shape{37}), g = RandomTensor(dtype, Shape{37});
            const TensorPtr buf = momentum != 0.0 ? RandomTensor(dtype, Shape{37}) : TensorPtr();
            TensorPtr found_inf, scale;
            if (found >= 0.0) {
              found_inf = Full(DType::Float32(), Shape{}, found, Device::CPU());
              scale = Full(DType::Float32(), Shape{}, 1024.0, Device::CPU());
            }
            for (bool first_step : {false, true}) {
              const Attrs attrs{{"lr", 0.1},
                                {"momentum", momentum},
                                {"dampening", 0.0},
                                {"weight_decay", weight_decay},
                                {"nesterov", nesterov},
                                {"first_step", first_step}};
              auto on = [&](const TensorPtr& t, Device device) { return t ? OnDevice(t, device) : t; };
              const std::vector<TensorPtr> cpu = {on(p, Device::CPU()), g, on(buf, Device::CPU()), found_inf, scale};
              const std::vector<TensorPtr> gpu = {on(p, kCuda), on(g, kCuda), on(buf, kCuda), on(found_inf, kCuda),
                                                  on(scale, kCuda)};
              Apply(sgd, cpu, attrs);
              Apply(sgd, gpu, attrs);
              const std::string what = fmt::format("sgd {} momentum {} nesterov {} decay {} found {} first {}",
                                                   dtype->name(), momentum, nesterov, weight_decay, found, first_step);
              ExpectSameAsCpu(gpu[0], cpu[0], what + " param");
              if (buf) ExpectSameAsCpu(gpu[2], cpu[2], what + " buffer");
            }
          }
        }
      }
    }
    MarkCovered(sgd.name, dtype, DeviceType::kCUDA);
  }
}

// An MLP trained for a few steps on the device: the same losses and parameters as on the CPU.
TEST(CudaTraining, MlpStepsMatchTheCpu) {
  const Symbol<DType> dtype = DType::Float32();
  const TensorPtr x = RandomTensor(dtype, Shape{16, 12}), w1 = RandomTensor(dtype, Shape{20, 12}, -0.3, 0.3);
  const TensorPtr b1 = RandomTensor(dtype, Shape{20}, -0.1, 0.1), w2 = RandomTensor(dtype, Shape{5, 20}, -0.3, 0.3);
  std::vector<double> onehot(16 * 5, 0.0);
  for (int64_t i = 0; i < 16; ++i) onehot[static_cast<size_t>(i * 5 + (i * 7) % 5)] = 1.0;
  const TensorPtr labels = FromDoubles(dtype, Shape{16, 5}, onehot);
  std::vector<double> class_of(16);
  for (int64_t i = 0; i < 16; ++i) class_of[static_cast<size_t>(i)] = static_cast<double>((i * 7) % 5);
  const TensorPtr class_indices = FromDoubles(DType::Int64(), Shape{16}, class_of);
  auto train = [&](Device device) {
    std::vector<TensorPtr> params = {CopyToDevice(w1, device), CopyToDevice(b1, device), CopyToDevice(w2, device)};
    for (const TensorPtr& t : params) t->set_requires_grad(true);
    SGD optimizer(params, SgdOptions{.lr = 0.5, .momentum = 0.9, .nesterov = true});
    const TensorPtr input = CopyToDevice(x, device), target = CopyToDevice(labels, device);
    const TensorPtr classes = CopyToDevice(class_indices, device);
    std::vector<TensorPtr> losses;
    for (int step = 0; step < 5; ++step) {
      optimizer.ZeroGrad();
      const TensorPtr h = ops::Relu(ops::Linear(input, params[0], params[1]));
      const TensorPtr logits = ops::Matmul(h, ops::Transpose(params[2], 0, 1));
      const TensorPtr log_probs = ops::LogSoftmax(logits, 1);
      // Two losses of the same labels: through log_softmax and one-hot products, and cross_entropy.
      const TensorPtr loss = ops::Add(ops::Neg(ops::Mean(ops::Sum(ops::Mul(log_probs, target), {1}, false), {}, false)),
                                      ops::CrossEntropy(logits, classes));
      Backward({loss}, {});
      optimizer.Step();
      losses.push_back(loss);
    }
    losses.insert(losses.end(), params.begin(), params.end());
    return losses;
  };
  const std::vector<TensorPtr> expected = train(Device::CPU()), actual = train(kCuda);
  for (size_t i = 0; i < expected.size(); ++i) {
    ExpectSameAsCpu(actual[i], expected[i], (i < 5 ? "loss " : "parameter ") + std::to_string(i), 1e-4);
  }
}

// Views on the device become contiguous through the device's strided copy, for every element size.
TEST(CudaCopy, ViewsCopyBackInRowMajorOrder) {
  for (const Symbol<DType>& dtype : {DType::Bool(), DType::Int8(), DType::Float16(), DType::Int32(), DType::Float32(),
                                     DType::Int64(), DType::Float64()}) {
    const TensorPtr t = RandomTensor(dtype, Shape{3, 4, 5, 6});
    for (const TensorPtr& layout : Layouts(t)) {
      const TensorPtr on_device = OnDevice(layout, kCuda);
      EXPECT_EQ(ToDoubles(ToCpu(on_device)), ToDoubles(t)) << dtype->name();
      const TensorPtr view = ops::Narrow(ops::Permute(on_device, {2, 0, 3, 1}), 2, 1, 4);
      const TensorPtr expected = ops::Narrow(ops::Permute(layout, {2, 0, 3, 1}), 2, 1, 4);
      EXPECT_EQ(ToDoubles(ToCpu(view)), ToDoubles(expected)) << dtype->name();
      const TensorPtr copy = MakeContiguous(view, nullptr);
      EXPECT_TRUE(copy->is_contiguous());
      EXPECT_EQ(copy->device(), kCuda);
      EXPECT_EQ(ToDoubles(ToCpu(copy)), ToDoubles(expected)) << dtype->name();
    }
  }
}

// What has no CUDA kernel says so, naming the dtype and the device; inputs on two devices are an error
// naming both.
TEST(CudaErrors, MissingKernelsAndMixedDevicesAreClear) {
  const TensorPtr ints = OnDevice(RandomTensor(DType::Int64(), Shape{3}), kCuda);
  ExpectError([&] { ops::Relu(ints); }, StatusCode::kUnimplemented, {"relu", "int64", "cuda:0"});
  const TensorPtr x = OnDevice(RandomTensor(DType::Float32(), Shape{3}), kCuda);
  ExpectError([&] { ops::Add(x, RandomTensor(DType::Float32(), Shape{3})); }, {"add", "cuda:0", "cpu"});
}

}  // namespace
}  // namespace oneflow::test

int main(int argc, char** argv) {
  try {
    oneflow::GetBackend(oneflow::Device{oneflow::DeviceType::kCUDA, 0});
  } catch (const oneflow::Error& e) {
    std::printf("SKIPPED: %s\n", e.message().c_str());
    return 77;
  }
  return oneflow::test::RunConformanceTests(argc, argv, oneflow::DeviceType::kCUDA);
}
