// The math op family's C++ API (core/ops/math_unary.cpp, math_binary.cpp): trigonometric and
// hyperbolic functions, erf and its inverse, activations, rounding, NaN/inf tests, atan2, fmod and
// remainder, the bitwise ops and clamp. Conventions as in core/ops/ops.h.
#pragma once

#include "core/tensor/tensor.h"

namespace oneflow::ops {

// ---- unary floating (PyTorch semantics) ------------------------------------------------------------
// Floating inputs keep their dtype; integer and bool inputs give float32.
TensorPtr Sin(const TensorPtr& x);
TensorPtr Cos(const TensorPtr& x);
TensorPtr Tan(const TensorPtr& x);
TensorPtr Asin(const TensorPtr& x);
TensorPtr Acos(const TensorPtr& x);
TensorPtr Atan(const TensorPtr& x);
TensorPtr Sinh(const TensorPtr& x);
TensorPtr Cosh(const TensorPtr& x);
TensorPtr Asinh(const TensorPtr& x);
TensorPtr Acosh(const TensorPtr& x);
TensorPtr Atanh(const TensorPtr& x);
TensorPtr Erf(const TensorPtr& x);
TensorPtr Erfinv(const TensorPtr& x);  // erf^-1 on [-1, 1] (+-inf at +-1, NaN outside)
TensorPtr Log1p(const TensorPtr& x);
TensorPtr Expm1(const TensorPtr& x);
TensorPtr Reciprocal(const TensorPtr& x);

// ---- activations (floating as above) ----------------------------------------------------------------
TensorPtr Silu(const TensorPtr& x);  // x * sigmoid(x)
TensorPtr Mish(const TensorPtr& x);  // x * tanh(softplus(x))
// log(1 + e^(beta x)) / beta, or x where beta x > threshold; beta must be non-zero.
TensorPtr Softplus(const TensorPtr& x, double beta = 1.0, double threshold = 20.0);
TensorPtr Elu(const TensorPtr& x, double alpha = 1.0);  // x > 0 ? x : alpha (e^x - 1)
TensorPtr Selu(const TensorPtr& x);                     // scale * elu(x, alpha) with SELU's constants
TensorPtr LeakyRelu(const TensorPtr& x, double negative_slope = 0.01);
TensorPtr Hardswish(const TensorPtr& x);    // x * relu6(x + 3) / 6
TensorPtr Hardsigmoid(const TensorPtr& x);  // relu6(x + 3) / 6
// min(max(x, min_val), max_val); min_val must not exceed max_val.
TensorPtr Hardtanh(const TensorPtr& x, double min_val = -1.0, double max_val = 1.0);

// ---- rounding and sign (keep the dtype; integers pass through; bool refused but by sign) ------------
TensorPtr Floor(const TensorPtr& x);
TensorPtr Ceil(const TensorPtr& x);
TensorPtr Round(const TensorPtr& x);  // halves to even
TensorPtr Trunc(const TensorPtr& x);
TensorPtr Sign(const TensorPtr& x);  // -1, 0 or 1 (0 for NaN); bool stays bool

// ---- NaN and infinity tests (any dtype, bool results) ------------------------------------------------
TensorPtr IsNan(const TensorPtr& x);
TensorPtr IsInf(const TensorPtr& x);
TensorPtr IsFinite(const TensorPtr& x);

// ---- binary (broadcasting, promoting) ----------------------------------------------------------------
TensorPtr Atan2(const TensorPtr& a, const TensorPtr& b);  // integer operands give float32
// a - trunc(a / b) * b (the sign of a) and a - floor(a / b) * b (the sign of b); not bool. An integer
// division by zero is InvalidArgument.
TensorPtr Fmod(const TensorPtr& a, const TensorPtr& b);
TensorPtr Remainder(const TensorPtr& a, const TensorPtr& b);

// ---- bitwise (bool and integer dtypes; the shifts integers only) ------------------------------------
TensorPtr BitwiseAnd(const TensorPtr& a, const TensorPtr& b);
TensorPtr BitwiseOr(const TensorPtr& a, const TensorPtr& b);
TensorPtr BitwiseXor(const TensorPtr& a, const TensorPtr& b);
TensorPtr BitwiseNot(const TensorPtr& x);
// a << b and a >> b (arithmetic for signed a). Shift counts that are negative or at least the width
// give 0 (left) and the sign fill, 0 or -1 (right), as PyTorch.
TensorPtr BitwiseLeftShift(const TensorPtr& a, const TensorPtr& b);
TensorPtr BitwiseRightShift(const TensorPtr& a, const TensorPtr& b);

// ---- clamp ------------------------------------------------------------------------------------------
// min(max(x, min), max) with x, min and max broadcast and promoted (not bool); either bound may be
// null (unbounded), both null returns x. Where min > max the result is max; a NaN anywhere gives NaN.
TensorPtr Clamp(const TensorPtr& x, const TensorPtr& min, const TensorPtr& max);
// The same with scalar bounds (PyTorch's rule for Python scalars); -inf and +inf mean unbounded.
TensorPtr ClampScalar(const TensorPtr& x, double min, double max);

}  // namespace oneflow::ops
