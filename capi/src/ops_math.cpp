// The C ABI of the math op family (core/ops/math.h): each function opens the session's frame
// (capi/src/op_call.h) and calls the op's C++ function.
#include "capi/src/op_call.h"
#include "core/ops/math.h"

using namespace oneflow;
using capi::Borrow;
using capi::Optional;
using capi::Run;

extern "C" {

#define OF_UNARY_OP(name, Fn)                                                                       \
  of_status_t* of_##name(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor) { \
    return Run(__func__, session, out_tensor, [&] { return ops::Fn(Borrow(x, "x")); });           \
  }
#define OF_BINARY_OP(name, Fn)                                                                          \
  of_status_t* of_##name(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b,          \
                         of_tensor_t** out_tensor) {                                                  \
    return Run(__func__, session, out_tensor, [&] { return ops::Fn(Borrow(a, "a"), Borrow(b, "b")); }); \
  }

OF_UNARY_OP(sin, Sin)
OF_UNARY_OP(cos, Cos)
OF_UNARY_OP(tan, Tan)
OF_UNARY_OP(asin, Asin)
OF_UNARY_OP(acos, Acos)
OF_UNARY_OP(atan, Atan)
OF_UNARY_OP(sinh, Sinh)
OF_UNARY_OP(cosh, Cosh)
OF_UNARY_OP(asinh, Asinh)
OF_UNARY_OP(acosh, Acosh)
OF_UNARY_OP(atanh, Atanh)
OF_UNARY_OP(erf, Erf)
OF_UNARY_OP(erfinv, Erfinv)
OF_UNARY_OP(log1p, Log1p)
OF_UNARY_OP(expm1, Expm1)
OF_UNARY_OP(reciprocal, Reciprocal)
OF_UNARY_OP(silu, Silu)
OF_UNARY_OP(mish, Mish)
OF_UNARY_OP(selu, Selu)
OF_UNARY_OP(hardswish, Hardswish)
OF_UNARY_OP(hardsigmoid, Hardsigmoid)
OF_UNARY_OP(floor, Floor)
OF_UNARY_OP(ceil, Ceil)
OF_UNARY_OP(round, Round)
OF_UNARY_OP(trunc, Trunc)
OF_UNARY_OP(sign, Sign)
OF_UNARY_OP(isnan, IsNan)
OF_UNARY_OP(isinf, IsInf)
OF_UNARY_OP(isfinite, IsFinite)
OF_UNARY_OP(bitwise_not, BitwiseNot)

OF_BINARY_OP(atan2, Atan2)
OF_BINARY_OP(fmod, Fmod)
OF_BINARY_OP(remainder, Remainder)
OF_BINARY_OP(bitwise_and, BitwiseAnd)
OF_BINARY_OP(bitwise_or, BitwiseOr)
OF_BINARY_OP(bitwise_xor, BitwiseXor)
OF_BINARY_OP(bitwise_left_shift, BitwiseLeftShift)
OF_BINARY_OP(bitwise_right_shift, BitwiseRightShift)

#undef OF_UNARY_OP
#undef OF_BINARY_OP

of_status_t* of_softplus(of_session_t* session, const of_tensor_t* x, double beta, double threshold,
                         of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Softplus(Borrow(x, "x"), beta, threshold); });
}

of_status_t* of_elu(of_session_t* session, const of_tensor_t* x, double alpha, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Elu(Borrow(x, "x"), alpha); });
}

of_status_t* of_leaky_relu(of_session_t* session, const of_tensor_t* x, double negative_slope,
                           of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::LeakyRelu(Borrow(x, "x"), negative_slope); });
}

of_status_t* of_hardtanh(of_session_t* session, const of_tensor_t* x, double min_val, double max_val,
                         of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Hardtanh(Borrow(x, "x"), min_val, max_val); });
}

of_status_t* of_clamp(of_session_t* session, const of_tensor_t* x, const of_tensor_t* min, const of_tensor_t* max,
                      of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor,
             [&] { return ops::Clamp(Borrow(x, "x"), Optional(min, "min"), Optional(max, "max")); });
}

of_status_t* of_clamp_scalar(of_session_t* session, const of_tensor_t* x, double min, double max,
                             of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::ClampScalar(Borrow(x, "x"), min, max); });
}

}  // extern "C"
