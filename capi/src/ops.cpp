// The C ABI of the op library: each function checks its handles, opens the session's scope (so that
// kernels use its thread pool and generator) and calls the op's C++ function in core/ops/ops.h
// (capi/src/op_call.h has the frame every op function shares).
#include <string>
#include <vector>

#include "capi/src/op_call.h"
#include "core/op/op_registry.h"
#include "capi/src/window_options.h"
#include "core/ops/ops.h"
#include "core/ops/window.h"

using namespace oneflow;
using capi::Borrow;
using capi::BorrowList;
using capi::Flag;
using capi::Guard;
using capi::Ints;
using capi::Optional;
using capi::PaddingEnd;
using capi::PoolOptions;
using capi::ReadPoolOptions;
using capi::ReadOptions;
using capi::Require;
using capi::Run;
using capi::Unwrap;
using capi::Wrap;

namespace {

ops::Reduction ReductionOf(int32_t reduction) {
  switch (reduction) {
    case OF_REDUCTION_NONE: return ops::Reduction::kNone;
    case OF_REDUCTION_MEAN: return ops::Reduction::kMean;
    case OF_REDUCTION_SUM: return ops::Reduction::kSum;
    default:
      OF_THROW(InvalidArgument) << "options->reduction is " << reduction
                                << "; expected OF_REDUCTION_NONE (0), OF_REDUCTION_MEAN (1) or OF_REDUCTION_SUM (2)";
  }
}

ops::BatchNormOptions BatchNormOptionsOf(const of_batch_norm_options_t* options) {
  const of_batch_norm_options_t o = ReadOptions(options, of_batch_norm_options_init, "options");
  ops::BatchNormOptions b;
  b.training = Flag(o.training, "options->training");
  b.momentum = o.momentum;
  b.eps = o.eps;
  return b;
}

}  // namespace

extern "C" {

// ---- elementwise ------------------------------------------------------------------------------------

#define OF_BINARY_OP(name, Fn)                                                                          \
  of_status_t* of_##name(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor) { \
    return Run(__func__, session, out_tensor, [&] { return ops::Fn(Borrow(a, "a"), Borrow(b, "b")); });               \
  }
#define OF_SCALAR_OP(name, Fn)                                                                      \
  of_status_t* of_##name(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor) { \
    return Run(__func__, session, out_tensor, [&] { return ops::Fn(Borrow(a, "a"), b); });                    \
  }
#define OF_UNARY_OP(name, Fn)                                                                \
  of_status_t* of_##name(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor) { \
    return Run(__func__, session, out_tensor, [&] { return ops::Fn(Borrow(x, "x")); });                \
  }

OF_BINARY_OP(add, Add)
OF_BINARY_OP(sub, Sub)
OF_BINARY_OP(mul, Mul)
OF_BINARY_OP(div, Div)
OF_BINARY_OP(pow, Pow)
OF_BINARY_OP(maximum, Maximum)
OF_BINARY_OP(minimum, Minimum)
OF_BINARY_OP(gt, Gt)
OF_BINARY_OP(ge, Ge)
OF_BINARY_OP(lt, Lt)
OF_BINARY_OP(le, Le)
OF_BINARY_OP(eq, Eq)
OF_BINARY_OP(ne, Ne)
OF_BINARY_OP(logical_and, LogicalAnd)
OF_BINARY_OP(logical_or, LogicalOr)

OF_SCALAR_OP(add_scalar, AddScalar)
OF_SCALAR_OP(sub_scalar, SubScalar)
OF_SCALAR_OP(mul_scalar, MulScalar)
OF_SCALAR_OP(div_scalar, DivScalar)
OF_SCALAR_OP(pow_scalar, PowScalar)
OF_SCALAR_OP(maximum_scalar, MaximumScalar)
OF_SCALAR_OP(minimum_scalar, MinimumScalar)
OF_SCALAR_OP(gt_scalar, GtScalar)
OF_SCALAR_OP(ge_scalar, GeScalar)
OF_SCALAR_OP(lt_scalar, LtScalar)
OF_SCALAR_OP(le_scalar, LeScalar)
OF_SCALAR_OP(eq_scalar, EqScalar)
OF_SCALAR_OP(ne_scalar, NeScalar)

OF_UNARY_OP(logical_not, LogicalNot)
OF_UNARY_OP(neg, Neg)
OF_UNARY_OP(abs, Abs)
OF_UNARY_OP(exp, Exp)
OF_UNARY_OP(log, Log)
OF_UNARY_OP(sqrt, Sqrt)
OF_UNARY_OP(rsqrt, Rsqrt)
OF_UNARY_OP(relu, Relu)
OF_UNARY_OP(sigmoid, Sigmoid)
OF_UNARY_OP(tanh, Tanh)
OF_UNARY_OP(contiguous, Contiguous)
OF_UNARY_OP(zeros_like, ZerosLike)
OF_UNARY_OP(ones_like, OnesLike)

#undef OF_BINARY_OP
#undef OF_SCALAR_OP
#undef OF_UNARY_OP

of_status_t* of_where(of_session_t* session, const of_tensor_t* cond, const of_tensor_t* a, const of_tensor_t* b,
                      of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Where(Borrow(cond, "cond"), Borrow(a, "a"), Borrow(b, "b")); });
}

of_status_t* of_gelu(of_session_t* session, const of_tensor_t* x, int32_t tanh_approximation, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor,
             [&] { return ops::Gelu(Borrow(x, "x"), Flag(tanh_approximation, "tanh_approximation")); });
}

of_status_t* of_cast(of_session_t* session, const of_tensor_t* x, const of_dtype_t* dtype, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Cast(Borrow(x, "x"), Unwrap(dtype)); });
}

// ---- reductions -------------------------------------------------------------------------------------

#define OF_REDUCE_OP(name, Fn)                                                                               \
  of_status_t* of_##name(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,      \
                         int32_t keepdim, of_tensor_t** out_tensor) {                                                \
    return Run(__func__, session, out_tensor,                                                                       \
               [&] { return ops::Fn(Borrow(x, "x"), Ints(dims, ndims, "dims"), Flag(keepdim, "keepdim")); });   \
  }
#define OF_MOMENT_OP(name, Fn)                                                                          \
  of_status_t* of_##name(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims, \
                         int64_t correction, int32_t keepdim, of_tensor_t** out_tensor) {                       \
    return Run(__func__, session, out_tensor, [&] {                                                            \
      return ops::Fn(Borrow(x, "x"), Ints(dims, ndims, "dims"), correction, Flag(keepdim, "keepdim"));       \
    });                                                                                                 \
  }

OF_REDUCE_OP(sum, Sum)
OF_REDUCE_OP(mean, Mean)
OF_REDUCE_OP(max, Max)
OF_REDUCE_OP(min, Min)
OF_MOMENT_OP(var, Var)
OF_MOMENT_OP(std, Std)

#undef OF_REDUCE_OP
#undef OF_MOMENT_OP

of_status_t* of_argmax(of_session_t* session, const of_tensor_t* x, int64_t dim, int32_t keepdim, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Argmax(Borrow(x, "x"), dim, Flag(keepdim, "keepdim")); });
}

// ---- linear algebra, convolution, normalisation, pooling ----------------------------------------------

of_status_t* of_matmul(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Matmul(Borrow(a, "a"), Borrow(b, "b")); });
}

of_status_t* of_linear(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight,
                       const of_tensor_t* bias, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor,
             [&] { return ops::Linear(Borrow(x, "x"), Borrow(weight, "weight"), Optional(bias, "bias")); });
}

void of_conv2d_options_init(of_conv2d_options_t* options) {
  if (options == nullptr) return;
  *options = of_conv2d_options_t{};
  options->struct_size = sizeof(of_conv2d_options_t);
  options->stride[0] = options->stride[1] = 1;
  options->dilation[0] = options->dilation[1] = 1;
  options->groups = 1;
  options->padding_end[0] = options->padding_end[1] = -1;
}

of_status_t* of_conv2d(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight,
                       const of_tensor_t* bias, const of_conv2d_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_conv2d_options_t o = ReadOptions(options, of_conv2d_options_init, "options");
    ops::Conv2dOptions c;
    c.stride = {o.stride[0], o.stride[1]};
    c.padding = {o.padding[0], o.padding[1]};
    c.dilation = {o.dilation[0], o.dilation[1]};
    c.groups = o.groups;
    return ops::Conv2d(Borrow(x, "x"), Borrow(weight, "weight"), Optional(bias, "bias"), c,
                       PaddingEnd(o.padding, o.padding_end));
  });
}

void of_batch_norm_options_init(of_batch_norm_options_t* options) {
  if (options == nullptr) return;
  *options = of_batch_norm_options_t{};
  options->struct_size = sizeof(of_batch_norm_options_t);
  options->training = 1;
  options->momentum = 0.1;
  options->eps = 1e-5;
}

of_status_t* of_batch_norm(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight,
                           const of_tensor_t* bias, of_tensor_t* running_mean, of_tensor_t* running_var,
                           const of_batch_norm_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const ops::BatchNormOptions b = BatchNormOptionsOf(options);
    return ops::BatchNorm(Borrow(x, "x"), Optional(weight, "weight"), Optional(bias, "bias"),
                          Optional(running_mean, "running_mean"), Optional(running_var, "running_var"), b);
  });
}

of_status_t* of_batch_norm_add_relu(of_session_t* session, const of_tensor_t* x, const of_tensor_t* addend,
                                    const of_tensor_t* weight, const of_tensor_t* bias, of_tensor_t* running_mean,
                                    of_tensor_t* running_var, const of_batch_norm_options_t* options,
                                    of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const ops::BatchNormOptions b = BatchNormOptionsOf(options);
    return ops::BatchNormAddRelu(Borrow(x, "x"), Optional(addend, "addend"), Optional(weight, "weight"),
                                 Optional(bias, "bias"), Optional(running_mean, "running_mean"),
                                 Optional(running_var, "running_var"), b);
  });
}

void of_pool2d_options_init(of_pool2d_options_t* options) {
  if (options == nullptr) return;
  *options = of_pool2d_options_t{};
  options->struct_size = sizeof(of_pool2d_options_t);
  options->dilation[0] = options->dilation[1] = 1;
  options->count_include_pad = 1;
  options->padding_end[0] = options->padding_end[1] = -1;
}

of_status_t* of_max_pool2d(of_session_t* session, const of_tensor_t* x, const of_pool2d_options_t* options,
                           of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_pool2d_options_t o = ReadPoolOptions(options);
    return ops::MaxPool2d(Borrow(x, "x"), PoolOptions(o), PaddingEnd(o.padding, o.padding_end));
  });
}

of_status_t* of_avg_pool2d(of_session_t* session, const of_tensor_t* x, const of_pool2d_options_t* options,
                           of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_pool2d_options_t o = ReadPoolOptions(options);
    return ops::AvgPool2d(Borrow(x, "x"), PoolOptions(o), PaddingEnd(o.padding, o.padding_end));
  });
}

of_status_t* of_adaptive_avg_pool2d(of_session_t* session, const of_tensor_t* x, int64_t out_h, int64_t out_w,
                                    of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::AdaptiveAvgPool2d(Borrow(x, "x"), {out_h, out_w}); });
}

// ---- views and layout ---------------------------------------------------------------------------------

of_status_t* of_reshape(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndim,
                        of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Reshape(Borrow(x, "x"), Ints(dims, ndim, "dims")); });
}

of_status_t* of_view(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndim,
                     of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::View(Borrow(x, "x"), Ints(dims, ndim, "dims")); });
}

of_status_t* of_flatten(of_session_t* session, const of_tensor_t* x, int64_t start_dim, int64_t end_dim,
                        of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Flatten(Borrow(x, "x"), start_dim, end_dim); });
}

of_status_t* of_squeeze(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                        of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Squeeze(Borrow(x, "x"), Ints(dims, ndims, "dims")); });
}

of_status_t* of_unsqueeze(of_session_t* session, const of_tensor_t* x, int64_t dim, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Unsqueeze(Borrow(x, "x"), dim); });
}

of_status_t* of_transpose(of_session_t* session, const of_tensor_t* x, int64_t dim0, int64_t dim1,
                          of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Transpose(Borrow(x, "x"), dim0, dim1); });
}

of_status_t* of_permute(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                        of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Permute(Borrow(x, "x"), Ints(dims, ndims, "dims")); });
}

of_status_t* of_narrow(of_session_t* session, const of_tensor_t* x, int64_t dim, int64_t start, int64_t length,
                       of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Narrow(Borrow(x, "x"), dim, start, length); });
}

of_status_t* of_cat(of_session_t* session, const of_tensor_t* const* tensors, size_t n, int64_t dim,
                    of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Cat(BorrowList(tensors, n, "tensors"), dim); });
}

of_status_t* of_stack(of_session_t* session, const of_tensor_t* const* tensors, size_t n, int64_t dim,
                      of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Stack(BorrowList(tensors, n, "tensors"), dim); });
}

of_status_t* of_expand(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndim,
                       of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Expand(Borrow(x, "x"), Ints(dims, ndim, "dims")); });
}

// ---- softmax, losses, dropout, filled tensors -----------------------------------------------------------

of_status_t* of_softmax(of_session_t* session, const of_tensor_t* x, int64_t dim, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Softmax(Borrow(x, "x"), dim); });
}

of_status_t* of_log_softmax(of_session_t* session, const of_tensor_t* x, int64_t dim, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::LogSoftmax(Borrow(x, "x"), dim); });
}

void of_loss_options_init(of_loss_options_t* options) {
  if (options == nullptr) return;
  *options = of_loss_options_t{};
  options->struct_size = sizeof(of_loss_options_t);
  options->reduction = OF_REDUCTION_MEAN;
  options->ignore_index = -100;
}

of_status_t* of_cross_entropy(of_session_t* session, const of_tensor_t* logits, const of_tensor_t* target,
                              const of_loss_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_loss_options_t o = ReadOptions(options, of_loss_options_init, "options");
    return ops::CrossEntropy(Borrow(logits, "logits"), Borrow(target, "target"), ReductionOf(o.reduction), o.ignore_index,
                             o.label_smoothing);
  });
}

of_status_t* of_nll_loss(of_session_t* session, const of_tensor_t* log_probs, const of_tensor_t* target,
                         const of_loss_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_loss_options_t o = ReadOptions(options, of_loss_options_init, "options");
    if (o.label_smoothing != 0.0) {
      OF_THROW(InvalidArgument) << "options->label_smoothing is " << o.label_smoothing
                                << "; nll_loss takes none (use of_cross_entropy)";
    }
    return ops::NllLoss(Borrow(log_probs, "log_probs"), Borrow(target, "target"), ReductionOf(o.reduction), o.ignore_index);
  });
}

of_status_t* of_dropout(of_session_t* session, const of_tensor_t* x, double p, int32_t training, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Dropout(Borrow(x, "x"), p, Flag(training, "training")); });
}

of_status_t* of_full_like(of_session_t* session, const of_tensor_t* x, double value, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::FullLike(Borrow(x, "x"), value); });
}

// ---- the registry --------------------------------------------------------------------------------------

of_status_t* of_op_count(size_t* out_count) {
  return Guard(__func__, [&] { *Require(out_count, "out_count") = OpRegistry::Global().All().size(); });
}

of_status_t* of_op_name(size_t index, const char** out_name) {
  return Guard(__func__, [&] {
    Require(out_name, "out_name");
    const std::vector<const OpDef*> all = OpRegistry::Global().All();
    if (index >= all.size()) OF_THROW(OutOfRange) << "index " << index << " is past the " << all.size() << " ops";
    *out_name = all[index]->name.c_str();  // the registry is never destroyed
  });
}

}  // extern "C"
