// The C ABI of the elementwise and weighted losses (core/ops/losses.h).
#include "capi/src/op_call.h"
#include "core/ops/losses.h"

using namespace oneflow;
using capi::Borrow;
using capi::Flag;
using capi::Optional;
using capi::ReadOptions;
using capi::Run;

namespace {

// The options' reduction; label_smoothing must be 0 unless the loss takes it.
ops::Reduction ReductionOf(const of_loss_options_t* given, bool smoothing_allowed, of_loss_options_t* out = nullptr) {
  const of_loss_options_t o = ReadOptions(given, of_loss_options_init, "options");
  if (!smoothing_allowed && o.label_smoothing != 0.0) {
    OF_THROW(InvalidArgument) << "options->label_smoothing is " << o.label_smoothing
                              << "; this loss takes none (only of_cross_entropy does)";
  }
  if (out != nullptr) *out = o;
  switch (o.reduction) {
    case OF_REDUCTION_NONE: return ops::Reduction::kNone;
    case OF_REDUCTION_MEAN: return ops::Reduction::kMean;
    case OF_REDUCTION_SUM: return ops::Reduction::kSum;
    default:
      OF_THROW(InvalidArgument) << "options->reduction is " << o.reduction
                                << "; expected OF_REDUCTION_NONE (0), OF_REDUCTION_MEAN (1) or OF_REDUCTION_SUM (2)";
  }
}

}  // namespace

extern "C" {

of_status_t* of_mse_loss(of_session_t* session, const of_tensor_t* input, const of_tensor_t* target,
                         const of_loss_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    return ops::MseLoss(Borrow(input, "input"), Borrow(target, "target"), ReductionOf(options, false));
  });
}

of_status_t* of_l1_loss(of_session_t* session, const of_tensor_t* input, const of_tensor_t* target,
                        const of_loss_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    return ops::L1Loss(Borrow(input, "input"), Borrow(target, "target"), ReductionOf(options, false));
  });
}

of_status_t* of_smooth_l1_loss(of_session_t* session, const of_tensor_t* input, const of_tensor_t* target, double beta,
                               const of_loss_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    return ops::SmoothL1Loss(Borrow(input, "input"), Borrow(target, "target"), ReductionOf(options, false), beta);
  });
}

of_status_t* of_binary_cross_entropy_with_logits(of_session_t* session, const of_tensor_t* input,
                                                 const of_tensor_t* target, const of_tensor_t* weight,
                                                 const of_tensor_t* pos_weight, const of_loss_options_t* options,
                                                 of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    return ops::BinaryCrossEntropyWithLogits(Borrow(input, "input"), Borrow(target, "target"),
                                             Optional(weight, "weight"), Optional(pos_weight, "pos_weight"),
                                             ReductionOf(options, false));
  });
}

of_status_t* of_kl_div(of_session_t* session, const of_tensor_t* input, const of_tensor_t* target, int32_t log_target,
                       const of_loss_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    return ops::KlDiv(Borrow(input, "input"), Borrow(target, "target"), ReductionOf(options, false),
                      Flag(log_target, "log_target"));
  });
}

of_status_t* of_weighted_cross_entropy(of_session_t* session, const of_tensor_t* logits, const of_tensor_t* target,
                                       const of_tensor_t* weight, const of_loss_options_t* options,
                                       of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    of_loss_options_t o;
    const ops::Reduction r = ReductionOf(options, true, &o);
    return ops::WeightedCrossEntropy(Borrow(logits, "logits"), Borrow(target, "target"), Optional(weight, "weight"), r,
                                     o.ignore_index, o.label_smoothing);
  });
}

of_status_t* of_weighted_nll_loss(of_session_t* session, const of_tensor_t* log_probs, const of_tensor_t* target,
                                  const of_tensor_t* weight, const of_loss_options_t* options,
                                  of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    of_loss_options_t o;
    const ops::Reduction r = ReductionOf(options, false, &o);
    return ops::WeightedNllLoss(Borrow(log_probs, "log_probs"), Borrow(target, "target"), Optional(weight, "weight"),
                                r, o.ignore_index);
  });
}

}  // extern "C"
