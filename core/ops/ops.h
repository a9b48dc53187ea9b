// The op library's C++ API: one function per op, used by the C ABI, by backward functions and by the
// engine's own code. Every function goes through op dispatch (core/op/dispatch.h), so it runs eagerly
// or records a graph node, records autograd, and reports errors naming the op and the argument.
//
// Conventions: tensors are taken as `const TensorPtr&` and never modified, except by the functions
// under "In place" and the optimizer updates; results are new tensors (views share their input's
// storage). Dims may be negative (counted from the end). Binary ops broadcast (NumPy rules) and
// promote dtypes (PromoteTypes) before calling the kernel; a scalar operand becomes a 0-d tensor
// (ScalarLike) first, so that it is an ordinary (free) tensor to a graph.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/common/shape.h"
#include "core/tensor/tensor.h"

namespace oneflow::ops {

// ---- scalars and filled tensors -------------------------------------------------------------------
// A 0-d tensor holding `value` for use with `like`: like's dtype when it is floating, or when `value` is
// integral and like is an integer type; int64 for an integral value with a bool tensor; float32
// otherwise (PyTorch's rule for Python scalars). On like's device.
TensorPtr ScalarLike(const TensorPtr& like, double value);
TensorPtr ZerosLike(const TensorPtr& x);
TensorPtr OnesLike(const TensorPtr& x);
TensorPtr FullLike(const TensorPtr& x, double value);  // value must be representable in x's dtype

// ---- elementwise binary (broadcasting, promoting) -------------------------------------------------
TensorPtr Add(const TensorPtr& a, const TensorPtr& b);
TensorPtr Sub(const TensorPtr& a, const TensorPtr& b);
TensorPtr Mul(const TensorPtr& a, const TensorPtr& b);
TensorPtr Div(const TensorPtr& a, const TensorPtr& b);  // true division: integer inputs give float32
TensorPtr Pow(const TensorPtr& a, const TensorPtr& b);
TensorPtr Maximum(const TensorPtr& a, const TensorPtr& b);
TensorPtr Minimum(const TensorPtr& a, const TensorPtr& b);
// With a scalar second operand.
TensorPtr AddScalar(const TensorPtr& a, double b);
TensorPtr SubScalar(const TensorPtr& a, double b);
TensorPtr MulScalar(const TensorPtr& a, double b);
TensorPtr DivScalar(const TensorPtr& a, double b);
TensorPtr PowScalar(const TensorPtr& a, double b);
TensorPtr MaximumScalar(const TensorPtr& a, double b);
TensorPtr MinimumScalar(const TensorPtr& a, double b);

// ---- comparisons and logic (bool results) ---------------------------------------------------------
TensorPtr Gt(const TensorPtr& a, const TensorPtr& b);
TensorPtr Ge(const TensorPtr& a, const TensorPtr& b);
TensorPtr Lt(const TensorPtr& a, const TensorPtr& b);
TensorPtr Le(const TensorPtr& a, const TensorPtr& b);
TensorPtr Eq(const TensorPtr& a, const TensorPtr& b);
TensorPtr Ne(const TensorPtr& a, const TensorPtr& b);
TensorPtr GtScalar(const TensorPtr& a, double b);
TensorPtr GeScalar(const TensorPtr& a, double b);
TensorPtr LtScalar(const TensorPtr& a, double b);
TensorPtr LeScalar(const TensorPtr& a, double b);
TensorPtr EqScalar(const TensorPtr& a, double b);
TensorPtr NeScalar(const TensorPtr& a, double b);
// cond must be bool; a and b broadcast and promote with each other and with cond.
TensorPtr Where(const TensorPtr& cond, const TensorPtr& a, const TensorPtr& b);
// Inputs of any dtype are read as truth values (non-zero is true); results are bool.
TensorPtr LogicalAnd(const TensorPtr& a, const TensorPtr& b);
TensorPtr LogicalOr(const TensorPtr& a, const TensorPtr& b);
TensorPtr LogicalNot(const TensorPtr& a);

// ---- elementwise unary ----------------------------------------------------------------------------
TensorPtr Neg(const TensorPtr& x);
TensorPtr Abs(const TensorPtr& x);
// exp, log, sqrt, rsqrt, sigmoid, tanh, gelu: floating inputs keep their dtype; integer and bool
// inputs give float32 (as PyTorch).
TensorPtr Exp(const TensorPtr& x);
TensorPtr Log(const TensorPtr& x);
TensorPtr Sqrt(const TensorPtr& x);
TensorPtr Rsqrt(const TensorPtr& x);
TensorPtr Relu(const TensorPtr& x);
TensorPtr Sigmoid(const TensorPtr& x);
TensorPtr Tanh(const TensorPtr& x);
TensorPtr Gelu(const TensorPtr& x, bool tanh_approximation = false);
// Any dtype to any dtype (float to integer truncates toward zero; non-zero to bool is true).
TensorPtr Cast(const TensorPtr& x, Symbol<DType> dtype);

// ---- reductions -----------------------------------------------------------------------------------
// `dims` empty = all dims. sum of bool/integer inputs gives int64; mean needs a floating input.
TensorPtr Sum(const TensorPtr& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
TensorPtr Mean(const TensorPtr& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
TensorPtr Max(const TensorPtr& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
TensorPtr Min(const TensorPtr& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// Index (int64) of the first maximum along `dim`.
TensorPtr Argmax(const TensorPtr& x, int64_t dim, bool keepdim = false);
// Variance with Bessel-style `correction` (1 = unbiased) and its square root.
TensorPtr Var(const TensorPtr& x, const std::vector<int64_t>& dims = {}, int64_t correction = 1, bool keepdim = false);
TensorPtr Std(const TensorPtr& x, const std::vector<int64_t>& dims = {}, int64_t correction = 1, bool keepdim = false);
// Sums `x` down to `shape` (the inverse of broadcasting `shape` to x's shape): broadcasting backward.
TensorPtr SumToShape(const TensorPtr& x, const Shape& shape);

// ---- linear algebra (oneDNN on the CPU) -----------------------------------------------------------
// 2-D (m,k)@(k,n); 1-D operands as in NumPy; batched (...,m,k)@(...,k,n) with broadcast batch dims.
TensorPtr Matmul(const TensorPtr& a, const TensorPtr& b);
// x (..., in) @ weight(out, in)^T + bias(out); bias may be null.
TensorPtr Linear(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias);

// ---- convolution, normalisation, pooling (oneDNN on the CPU) --------------------------------------
struct Conv2dOptions {
  std::vector<int64_t> stride = {1, 1};
  std::vector<int64_t> padding = {0, 0};
  std::vector<int64_t> dilation = {1, 1};
  int64_t groups = 1;
};
// x (N, C, H, W), weight (O, C/groups, kH, kW), bias (O) or null.
TensorPtr Conv2d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, const Conv2dOptions& options = {});

struct BatchNormOptions {
  bool training = true;
  double momentum = 0.1;  // running = (1 - momentum) * running + momentum * batch statistic
  double eps = 1e-5;
};
// x (N, C, ...); weight, bias, running_mean, running_var (C) each may be null. Training: normalises with
// the batch statistics and, when the running stats are given, updates them in place (unbiased batch
// variance). Inference: normalises with the running stats, which are then required.
TensorPtr BatchNorm(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias,
                    const TensorPtr& running_mean, const TensorPtr& running_var, const BatchNormOptions& options);
// relu(BatchNorm(x, ...) + addend), the addend (x's dtype and shape) may be null: one pass over x where the
// kernels fuse it (float32 channels-last).
TensorPtr BatchNormAddRelu(const TensorPtr& x, const TensorPtr& addend, const TensorPtr& weight, const TensorPtr& bias,
                           const TensorPtr& running_mean, const TensorPtr& running_var,
                           const BatchNormOptions& options);

struct Pool2dOptions {
  std::vector<int64_t> kernel_size{};    // required, 2 values
  std::vector<int64_t> stride{};         // empty = kernel_size
  std::vector<int64_t> padding = {0, 0};
  std::vector<int64_t> dilation = {1, 1};  // max pooling only
  bool ceil_mode = false;
  bool count_include_pad = true;         // avg pooling only
};
TensorPtr MaxPool2d(const TensorPtr& x, const Pool2dOptions& options);
TensorPtr AvgPool2d(const TensorPtr& x, const Pool2dOptions& options);
TensorPtr AdaptiveAvgPool2d(const TensorPtr& x, const std::vector<int64_t>& output_size);

// ---- views and layout -----------------------------------------------------------------------------
// `shape` may hold one -1 (inferred). Reshape returns a view when the strides allow, else a copy;
// View requires a view and says so otherwise.
TensorPtr Reshape(const TensorPtr& x, const std::vector<int64_t>& shape);
TensorPtr View(const TensorPtr& x, const std::vector<int64_t>& shape);
TensorPtr Flatten(const TensorPtr& x, int64_t start_dim = 0, int64_t end_dim = -1);
// Removes the given size-1 dims (dims empty = every size-1 dim).
TensorPtr Squeeze(const TensorPtr& x, const std::vector<int64_t>& dims = {});
TensorPtr Unsqueeze(const TensorPtr& x, int64_t dim);
TensorPtr Transpose(const TensorPtr& x, int64_t dim0, int64_t dim1);
TensorPtr Permute(const TensorPtr& x, const std::vector<int64_t>& dims);
TensorPtr Contiguous(const TensorPtr& x);  // x itself when already contiguous
TensorPtr Narrow(const TensorPtr& x, int64_t dim, int64_t start, int64_t length);
TensorPtr Cat(const std::vector<TensorPtr>& tensors, int64_t dim);
TensorPtr Stack(const std::vector<TensorPtr>& tensors, int64_t dim);
// Broadcasts size-1 dims to `shape` (-1 keeps a dim; new leading dims allowed) without copying.
TensorPtr Expand(const TensorPtr& x, const std::vector<int64_t>& shape);

// ---- softmax, losses, dropout ---------------------------------------------------------------------
TensorPtr Softmax(const TensorPtr& x, int64_t dim);
TensorPtr LogSoftmax(const TensorPtr& x, int64_t dim);
enum class Reduction { kNone, kMean, kSum };
// Names "none", "mean", "sum"; InvalidArgument otherwise.
Reduction ReductionFromName(std::string_view name);
std::string_view ReductionName(Reduction reduction);
// logits (N, C), target (N) int64 class indices in [0, C) (or ignore_index, which is skipped and not
// counted in the mean). Mean is over the non-ignored targets.
TensorPtr CrossEntropy(const TensorPtr& logits, const TensorPtr& target, Reduction reduction = Reduction::kMean,
                       int64_t ignore_index = -100, double label_smoothing = 0.0);
TensorPtr NllLoss(const TensorPtr& log_probs, const TensorPtr& target, Reduction reduction = Reduction::kMean,
                  int64_t ignore_index = -100);
// Zeroes each element with probability p and scales the rest by 1/(1-p), drawing from the current
// session's generator (reproducible under a seed); identity when !training or p == 0.
TensorPtr Dropout(const TensorPtr& x, double p, bool training = true);

}  // namespace oneflow::ops
