#include "core/train/optimizer.h"

#include <cmath>
#include <string>
#include <unordered_set>

#include "core/autograd/autograd.h"
#include "core/op/dispatch.h"
#include "core/ops/ops.h"
#include "core/session/session.h"
#include "core/tensor/copy.h"
#include "core/tensor/factory.h"

namespace oneflow {

Optimizer::Optimizer(std::vector<TensorPtr> params, double lr, const OpDef& update)
    : params_(std::move(params)), lr_(lr) {
  OF_CHECK(!params_.empty()) << "the parameter list is empty";
  std::unordered_set<const Tensor*> seen;
  for (size_t i = 0; i < params_.size(); ++i) {
    const TensorPtr& p = params_[i];
    OF_CHECK(p) << "parameter " << i << " is null";
    CheckWritable(*p, "parameter " + std::to_string(i));  // eager, not read-only, no overlapping elements
    OF_CHECK(seen.insert(p.get()).second) << "parameter " << i << " appears more than once";
    OF_CHECK(p->is_leaf()) << "parameter " << i << " is not a leaf tensor (it was computed by an op); "
                           << "optimizers update leaves";
    OF_CHECK(p->is_contiguous()) << "parameter " << i << " must be contiguous (it is updated in place)";
    OF_CHECK(update.FindKernel(p->device().type, p->dtype()) != nullptr)
        << "parameter " << i << " (" << p->dtype() << " on " << p->device() << ") is not supported by " << update.name
        << ": parameters must be floating-point CPU tensors";
  }
}

void Optimizer::set_lr(double lr) {
  OF_CHECK(std::isfinite(lr) && lr >= 0.0) << "lr must be finite and >= 0, got " << lr;
  lr_ = lr;
}

void Optimizer::ZeroGrad() {
  for (const TensorPtr& p : params_) p->set_grad(nullptr);
}

void Optimizer::Step() {
  OF_CHECK(OpInterceptor::Current() == nullptr)
      << "step during a graph build: attach the optimizer to the graph (add_optimizer) to trace its updates";
  // Everything that can fail comes before the first write, so that a failed step updates nothing:
  // the checks, contiguous copies of strided gradients, and the state of parameters stepped first now.
  std::vector<TensorPtr> grads(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = *params_[i];
    TensorPtr g = p.grad();
    if (!g) continue;
    CheckEager(*g, "the gradient of parameter " + std::to_string(i));
    OF_CHECK(g->dtype() == p.dtype() && g->shape() == p.shape() && g->device() == p.device())
        << "the gradient of parameter " << i << " is a " << g->dtype() << " tensor of shape " << g->shape() << " on "
        << g->device() << ", but the parameter is " << p.dtype() << " " << p.shape() << " on " << p.device();
    grads[i] = g->is_contiguous() ? std::move(g) : MakeContiguous(g, &Session::Current().thread_pool());
  }
  NoGradGuard no_grad;
  std::vector<TensorPtr> present;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!grads[i]) continue;
    PrepareState(i);
    present.push_back(grads[i]);
  }
  if (present.empty()) return;
  used_ = true;
  if (loss_scaling()) ops::NonFiniteCheck(scaler_, present);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!grads[i]) continue;
    try {
      Update(i, grads[i]);
    } catch (const Error& e) {
      throw Error(e.code(), "parameter " + std::to_string(i) + ": " + e.message());
    }
  }
  if (loss_scaling()) ops::UpdateLossScale(scaler_, scale_options_);
}

void Optimizer::EnableLossScaling(const LossScaleOptions& options) {
  CheckLossScaleOptions(options);
  if (loss_scaling()) OF_THROW(FailedPrecondition) << "loss scaling is already on";
  if (used_) {
    OF_THROW(FailedPrecondition) << "loss scaling must be turned on before the optimizer's first step and before it "
                                    "is added to a graph";
  }
  const Device device = params_[0]->device();
  scaler_ = LossScaleState{.scale = Full(DType::Float32(), Shape{}, options.init_scale, device),
                           .growth_tracker = Full(DType::Int64(), Shape{}, 0.0, device),
                           .found_inf = Full(DType::Float32(), Shape{}, 0.0, device),
                           .skipped_steps = Full(DType::Int64(), Shape{}, 0.0, device)};
  scale_options_ = options;
}

TensorPtr Optimizer::ScaleLoss(const TensorPtr& loss) const {
  OF_CHECK(loss) << "the loss is null";
  if (!loss_scaling()) {
    OF_THROW(FailedPrecondition) << "loss scaling is off: turn it on (enable_loss_scaling) before scaling a loss";
  }
  OF_CHECK(loss->dtype()->is_floating_point()) << "the loss must be floating-point, got " << loss->dtype();
  return ops::Mul(loss, scaler_.scale);
}

double Optimizer::loss_scale() const { return loss_scaling() ? *scaler_.scale->data<float>() : 1.0; }

int64_t Optimizer::skipped_steps() const { return loss_scaling() ? *scaler_.skipped_steps->data<int64_t>() : 0; }

bool Optimizer::last_step_skipped() const { return loss_scaling() && *scaler_.found_inf->data<float>() != 0.0f; }

void Optimizer::TraceStepBegin(const std::vector<TensorPtr>& lazy_grads) {
  used_ = true;
  if (!loss_scaling()) return;
  NoGradGuard no_grad;
  ops::NonFiniteCheck(scaler_, lazy_grads);
}

void Optimizer::TraceStepEnd() {
  if (!loss_scaling()) return;
  NoGradGuard no_grad;
  ops::UpdateLossScale(scaler_, scale_options_);
}

void Optimizer::TraceUpdate(size_t i, const TensorPtr& lazy_grad) {
  OF_CHECK_INTERNAL(lazy_grad && lazy_grad->is_lazy()) << "TraceUpdate needs a lazy gradient";
  const Tensor& p = *params_.at(i);
  OF_CHECK(lazy_grad->dtype() == p.dtype() && lazy_grad->shape() == p.shape())
      << "the gradient of parameter " << i << " is " << lazy_grad->dtype() << " " << lazy_grad->shape()
      << ", but the parameter is " << p.dtype() << " " << p.shape();
  NoGradGuard no_grad;
  PrepareState(i);
  Update(i, lazy_grad);
}

void Optimizer::RefreshTracedAttrs(size_t /*i*/, Attrs& attrs) const { attrs.Set("lr", lr_); }

void SGD::RefreshTracedAttrs(size_t i, Attrs& attrs) const {
  Optimizer::RefreshTracedAttrs(i, attrs);
  attrs.Set("first_step", options_.momentum != 0.0 && !started_[i]);
}

SGD::SGD(std::vector<TensorPtr> params, const SgdOptions& options)
    : Optimizer(std::move(params), (CheckSgdOptions(options), options.lr), OpRegistry::Global().Get("sgd_update")),
      options_(options) {
  momentum_buffers_.resize(this->params().size());
  started_.resize(this->params().size());
}

void SGD::PrepareState(size_t i) {
  const TensorPtr& param = params()[i];
  TensorPtr& buffer = momentum_buffers_[i];
  if (options_.momentum != 0.0 && !buffer) buffer = Empty(param->dtype(), param->shape(), param->device());
}

void SGD::Update(size_t i, const TensorPtr& grad) {
  SgdOptions o = options_;
  o.lr = lr();
  const bool first_step = o.momentum != 0.0 && !started_[i];
  ops::SgdUpdate(params()[i], grad, momentum_buffers_[i], o, first_step, scaling());
  // A traced update has not run yet: the graph reports its steps (TracedStepDone).
  if (!grad->is_lazy() && !last_step_skipped()) started_[i] = true;
}

void SGD::TracedStepDone(size_t i) {
  if (!last_step_skipped()) started_[i] = true;
}

Adam::Adam(std::vector<TensorPtr> params, const AdamOptions& options)
    : Optimizer(std::move(params), (CheckAdamOptions(options), options.lr),
                OpRegistry::Global().Get("adam_update")),
      options_(options) {
  state_.resize(this->params().size());
}

int64_t Adam::step_count(size_t i) const {
  const TensorPtr& step = state_.at(i).step;
  return step ? *step->data<int64_t>() : 0;
}

void Adam::PrepareState(size_t i) {
  const TensorPtr& param = params()[i];
  State& s = state_[i];
  if (s.step) return;
  const Device device = param->device();
  // Zero moments and step count: the state of a parameter that has not stepped yet.
  s = State{Full(param->dtype(), param->shape(), 0.0, device), Full(param->dtype(), param->shape(), 0.0, device),
            Full(DType::Int64(), Shape{}, 0.0, device)};
}

void Adam::Update(size_t i, const TensorPtr& grad) {
  AdamOptions o = options_;
  o.lr = lr();
  const TensorPtr& param = params()[i];
  State& s = state_[i];
  ops::AdamUpdate(param, grad, s.exp_avg, s.exp_avg_sq, s.step, o, scaling());
}

}  // namespace oneflow
