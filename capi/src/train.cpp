// The C ABI of training: initialisers (core/train/init.h) and optimizers (core/train/optimizer.h).
#include <memory>
#include <string>
#include <vector>

#include "capi/src/capi_internal.h"
#include "core/train/init.h"
#include "core/train/optimizer.h"

using namespace oneflow;
using capi::Borrow;
using capi::BorrowList;
using capi::Flag;
using capi::Guard;
using capi::ReadOptions;
using capi::Require;
using capi::Unwrap;
using capi::Wrap;

namespace {


// The body of the initialisers: runs fill(tensor) in the session's scope.
template <typename Fill>
of_status_t* Init(const char* function, of_session_t* session, of_tensor_t* tensor, Fill&& fill) {
  return Guard(function, [&] {
    Session& s = capi::SessionOf(session);
    TensorPtr t = Borrow(tensor, "tensor");
    SessionScope scope(s);
    fill(t);
  });
}

init::KaimingOptions KaimingFromC(const of_kaiming_options_t* options) {
  const of_kaiming_options_t o = ReadOptions(options, of_kaiming_options_init, "options");
  init::KaimingOptions k;
  k.a = o.a;
  switch (o.mode) {
    case OF_FAN_MODE_FAN_IN: k.mode = "fan_in"; break;
    case OF_FAN_MODE_FAN_OUT: k.mode = "fan_out"; break;
    default:
      OF_THROW(InvalidArgument) << "options->mode is " << o.mode
                                << ", not OF_FAN_MODE_FAN_IN (0) or OF_FAN_MODE_FAN_OUT (1)";
  }
  switch (o.nonlinearity) {
    case OF_NONLINEARITY_LINEAR: k.nonlinearity = "linear"; break;
    case OF_NONLINEARITY_SIGMOID: k.nonlinearity = "sigmoid"; break;
    case OF_NONLINEARITY_TANH: k.nonlinearity = "tanh"; break;
    case OF_NONLINEARITY_RELU: k.nonlinearity = "relu"; break;
    case OF_NONLINEARITY_LEAKY_RELU: k.nonlinearity = "leaky_relu"; break;
    default:
      OF_THROW(InvalidArgument) << "options->nonlinearity is " << o.nonlinearity
                                << ", not one of OF_NONLINEARITY_* (0 to 4)";
  }
  return k;
}


// The body of the optimizer constructors: makes the optimizer in the session's scope.
template <typename Make>
of_status_t* Create(const char* function, of_session_t* session, of_optimizer_t** out_optimizer, Make&& make) {
  return Guard(function, [&] {
    Session& s = capi::SessionOf(session);
    Require(out_optimizer, "out_optimizer");
    SessionScope scope(s);
    auto optimizer = std::make_unique<of_optimizer_t>(of_optimizer_t{make()});
    *out_optimizer = optimizer.release();
  });
}

Optimizer& Impl(of_optimizer_t* optimizer) { return *Require(optimizer, "optimizer")->impl; }

}  // namespace

extern "C" {

of_status_t* of_init_uniform(of_session_t* session, of_tensor_t* tensor, double a, double b) {
  return Init(__func__, session, tensor, [&](const TensorPtr& t) { init::Uniform(t, a, b); });
}

of_status_t* of_init_normal(of_session_t* session, of_tensor_t* tensor, double mean, double std) {
  return Init(__func__, session, tensor, [&](const TensorPtr& t) { init::Normal(t, mean, std); });
}

of_status_t* of_init_constant(of_session_t* session, of_tensor_t* tensor, double value) {
  return Init(__func__, session, tensor, [&](const TensorPtr& t) { init::Constant(t, value); });
}

void of_kaiming_options_init(of_kaiming_options_t* options) {
  if (options == nullptr) return;
  *options = of_kaiming_options_t{};
  options->struct_size = sizeof(of_kaiming_options_t);
  options->a = 0.0;
  options->mode = OF_FAN_MODE_FAN_IN;
  options->nonlinearity = OF_NONLINEARITY_LEAKY_RELU;
}

of_status_t* of_init_kaiming_uniform(of_session_t* session, of_tensor_t* tensor, const of_kaiming_options_t* options) {
  return Init(__func__, session, tensor, [&](const TensorPtr& t) { init::KaimingUniform(t, KaimingFromC(options)); });
}

of_status_t* of_init_kaiming_normal(of_session_t* session, of_tensor_t* tensor, const of_kaiming_options_t* options) {
  return Init(__func__, session, tensor, [&](const TensorPtr& t) { init::KaimingNormal(t, KaimingFromC(options)); });
}

of_status_t* of_init_xavier_uniform(of_session_t* session, of_tensor_t* tensor, double gain) {
  return Init(__func__, session, tensor, [&](const TensorPtr& t) { init::XavierUniform(t, gain); });
}

of_status_t* of_init_xavier_normal(of_session_t* session, of_tensor_t* tensor, double gain) {
  return Init(__func__, session, tensor, [&](const TensorPtr& t) { init::XavierNormal(t, gain); });
}

void of_sgd_options_init(of_sgd_options_t* options) {
  if (options == nullptr) return;
  const SgdOptions d;
  *options = of_sgd_options_t{};
  options->struct_size = sizeof(of_sgd_options_t);
  options->lr = d.lr;
  options->momentum = d.momentum;
  options->dampening = d.dampening;
  options->weight_decay = d.weight_decay;
  options->nesterov = d.nesterov ? 1 : 0;
}

void of_adam_options_init(of_adam_options_t* options) {
  if (options == nullptr) return;
  const AdamOptions d;
  *options = of_adam_options_t{};
  options->struct_size = sizeof(of_adam_options_t);
  options->lr = d.lr;
  options->beta1 = d.beta1;
  options->beta2 = d.beta2;
  options->eps = d.eps;
  options->weight_decay = d.weight_decay;
  options->decoupled_weight_decay = d.decoupled_weight_decay ? 1 : 0;
}

of_status_t* of_optimizer_sgd_create(of_session_t* session, of_tensor_t* const* params, size_t n,
                                     const of_sgd_options_t* options, of_optimizer_t** out_optimizer) {
  return Create(__func__, session, out_optimizer, [&] {
    const of_sgd_options_t o = ReadOptions(options, of_sgd_options_init, "options");
    const SgdOptions sgd{.lr = o.lr,
                         .momentum = o.momentum,
                         .dampening = o.dampening,
                         .weight_decay = o.weight_decay,
                         .nesterov = Flag(o.nesterov, "options->nesterov")};
    return std::make_unique<SGD>(BorrowList(params, n, "params"), sgd);
  });
}

of_status_t* of_optimizer_adam_create(of_session_t* session, of_tensor_t* const* params, size_t n,
                                      const of_adam_options_t* options, of_optimizer_t** out_optimizer) {
  return Create(__func__, session, out_optimizer, [&] {
    const of_adam_options_t o = ReadOptions(options, of_adam_options_init, "options");
    const AdamOptions adam{.lr = o.lr,
                           .beta1 = o.beta1,
                           .beta2 = o.beta2,
                           .eps = o.eps,
                           .weight_decay = o.weight_decay,
                           .decoupled_weight_decay = Flag(o.decoupled_weight_decay, "options->decoupled_weight_decay")};
    return std::make_unique<Adam>(BorrowList(params, n, "params"), adam);
  });
}

of_status_t* of_optimizer_step(of_session_t* session, of_optimizer_t* optimizer) {
  return Guard(__func__, [&] {
    Session& s = capi::SessionOf(session);
    Optimizer& impl = Impl(optimizer);
    SessionScope scope(s);
    impl.Step();
  });
}

of_status_t* of_optimizer_zero_grad(of_optimizer_t* optimizer) {
  return Guard(__func__, [&] { Impl(optimizer).ZeroGrad(); });
}

of_status_t* of_optimizer_set_lr(of_optimizer_t* optimizer, double lr) {
  return Guard(__func__, [&] { Impl(optimizer).set_lr(lr); });
}

of_status_t* of_optimizer_lr(const of_optimizer_t* optimizer, double* out_lr) {
  return Guard(__func__, [&] {
    const double lr = Impl(const_cast<of_optimizer_t*>(optimizer)).lr();
    *Require(out_lr, "out_lr") = lr;
  });
}

void of_optimizer_destroy(of_optimizer_t* optimizer) { delete optimizer; }

void of_loss_scale_options_init(of_loss_scale_options_t* options) {
  if (options == nullptr) return;
  const LossScaleOptions d;
  *options = of_loss_scale_options_t{};
  options->struct_size = sizeof(of_loss_scale_options_t);
  options->init_scale = d.init_scale;
  options->growth_factor = d.growth_factor;
  options->backoff_factor = d.backoff_factor;
  options->growth_interval = d.growth_interval;
}

of_status_t* of_optimizer_enable_loss_scaling(of_session_t* session, of_optimizer_t* optimizer,
                                              const of_loss_scale_options_t* options) {
  return Guard(__func__, [&] {
    Session& s = capi::SessionOf(session);
    Optimizer& impl = Impl(optimizer);
    const of_loss_scale_options_t o = ReadOptions(options, of_loss_scale_options_init, "options");
    SessionScope scope(s);
    impl.EnableLossScaling(LossScaleOptions{.init_scale = o.init_scale,
                                            .growth_factor = o.growth_factor,
                                            .backoff_factor = o.backoff_factor,
                                            .growth_interval = o.growth_interval});
  });
}

of_status_t* of_optimizer_scale_loss(of_session_t* session, of_optimizer_t* optimizer, of_tensor_t* loss,
                                     of_tensor_t** out_scaled) {
  return Guard(__func__, [&] {
    Session& s = capi::SessionOf(session);
    const Optimizer& impl = Impl(optimizer);
    TensorPtr l = Borrow(loss, "loss");
    Require(out_scaled, "out_scaled");
    SessionScope scope(s);
    *out_scaled = Wrap(impl.ScaleLoss(l));
  });
}

of_status_t* of_optimizer_loss_scale(const of_optimizer_t* optimizer, double* out_scale, int64_t* out_skipped_steps) {
  return Guard(__func__, [&] {
    const Optimizer& impl = Impl(const_cast<of_optimizer_t*>(optimizer));
    if (out_scale != nullptr) *out_scale = impl.loss_scale();
    if (out_skipped_steps != nullptr) *out_skipped_steps = impl.skipped_steps();
  });
}

}  // extern "C"
