// Optimizers over a list of parameter tensors (leaves), with PyTorch's semantics: SGD (momentum,
// dampening, nesterov, weight decay) and Adam / AdamW.
//
// Each parameter's update is one registered op ("sgd_update", "adam_update", in optimizer_ops.cpp)
// that writes the parameter and its state buffers in place (mutated_inputs) and has no outputs and no
// backward, so that a lazy graph can add update nodes. Step() runs them with grad mode off.
//
// An optimizer holds references to its parameters and its state. It is not thread-safe: one thread
// at a time may call it (the parameters' data are written without locks).
//
// Note [Loss scaling]
// float16 gradients underflow: a loss scaled by S before backward gives gradients S times larger, which
// the update divides by S again (PyTorch's GradScaler, dynamic). With EnableLossScaling the optimizer
// owns S (a 0-d float32 tensor) and three more 0-d tensors: found_inf, growth_tracker, skipped_steps.
// A step is then three kinds of ops, in this order, eagerly or traced into a graph (one run = one step,
// no host synchronisation inside it):
//   non_finite_check(found_inf, grads...)   found_inf = 1 if any gradient holds an inf or NaN, else 0
//   sgd_update / adam_update(..., found_inf, scale) per parameter: nothing written when found_inf, else
//       the update of grad / scale (Adam's step count does not advance on a skipped step)
//   update_loss_scale(scale, growth_tracker, skipped_steps, found_inf)
//       found_inf: scale *= backoff_factor, growth_tracker = 0, skipped_steps += 1; otherwise after
//       growth_interval steps in a row without one, scale *= growth_factor (if that stays finite)
// The updates read the scale before update_loss_scale writes it (program order, kept by graphs). In a
// data-parallel graph the check reads the averaged gradients, so every rank skips the same steps.
// SGD's first step (momentum buffer = d) is host state; a skipped step is not its first step (it reads
// found_inf after the step).
#pragma once

#include <cstdint>
#include <vector>

#include "core/op/attrs.h"
#include "core/tensor/tensor.h"

namespace oneflow {

struct OpDef;

struct SgdOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening == 0
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled_weight_decay = false;  // AdamW: param *= 1 - lr * weight_decay, instead of L2 in the gradient
};

// InvalidArgument naming the hyperparameter unless it is valid (PyTorch's checks: lr, momentum,
// weight_decay, eps >= 0 and finite; betas in [0, 1); dampening finite; nesterov as above).
// Dynamic loss scaling (Note [Loss scaling]); PyTorch's GradScaler defaults.
struct LossScaleOptions {
  double init_scale = 65536.0;     // finite, > 0
  double growth_factor = 2.0;      // finite, > 1
  double backoff_factor = 0.5;     // in (0, 1)
  int64_t growth_interval = 2000;  // >= 1 steps without inf/NaN before the scale grows
};

void CheckSgdOptions(const SgdOptions& options);
void CheckAdamOptions(const AdamOptions& options);
void CheckLossScaleOptions(const LossScaleOptions& options);

// The loss scaler's state: 0-d tensors on the parameters' device (Note [Loss scaling]).
struct LossScaleState {
  TensorPtr scale;           // float32, the factor the loss and hence the gradients carry
  TensorPtr growth_tracker;  // int64, steps in a row without inf/NaN gradients
  TensorPtr found_inf;       // float32, 1 when the last step's gradients held an inf or NaN (it was skipped)
  TensorPtr skipped_steps;   // int64, steps skipped so far
};

namespace ops {
// One SGD step on `param` (updated in place) with gradient `grad` (same dtype and shape):
//   d = grad + weight_decay * param
//   if momentum != 0:  buf = first_step ? d : momentum * buf + (1 - dampening) * d
//                      d = nesterov ? d + momentum * buf : buf
//   param -= lr * d
// `momentum_buffer` (updated in place) is required when momentum != 0, else it may be null. On a
// parameter's first step PyTorch sets the buffer to d: `first_step` says so (the buffer's contents are
// then not read). With `scaling`, grad is read as grad / scale and nothing is written when found_inf.
void SgdUpdate(const TensorPtr& param, const TensorPtr& grad, const TensorPtr& momentum_buffer,
               const SgdOptions& options, bool first_step, const LossScaleState* scaling = nullptr);
// One Adam step; `step` is a 0-d int64 tensor holding the number of steps taken so far, incremented
// first (so bias correction uses the new count t):
//   g = grad (+ weight_decay * param unless decoupled);  if decoupled: param *= 1 - lr * weight_decay
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   param -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// param, exp_avg (m), exp_avg_sq (v) and step are updated in place; `scaling` as for SgdUpdate.
void AdamUpdate(const TensorPtr& param, const TensorPtr& grad, const TensorPtr& exp_avg, const TensorPtr& exp_avg_sq,
                const TensorPtr& step, const AdamOptions& options, const LossScaleState* scaling = nullptr);
// state.found_inf = whether any of `grads` (floating, any dtypes) holds an inf or NaN.
void NonFiniteCheck(const LossScaleState& state, const std::vector<TensorPtr>& grads);
// The scale's update after a step (Note [Loss scaling]).
void UpdateLossScale(const LossScaleState& state, const LossScaleOptions& options);
}  // namespace ops

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  const std::vector<TensorPtr>& params() const { return params_; }

  // Updates every parameter that has a gradient; parameters without one are skipped (their state is
  // not created or advanced). Every gradient is checked first (eager, dtype, shape, device:
  // InvalidArgument / FailedPrecondition naming the parameter) and all new state is allocated before
  // the first parameter is written, so a step that fails updates nothing.
  void Step();
  // Sets every parameter's .grad to null.
  void ZeroGrad();

  double lr() const { return lr_; }
  void set_lr(double lr);  // finite and >= 0

  // --- dynamic loss scaling (Note [Loss scaling]) ---
  // Turns it on, with its state on the parameters' device. FailedPrecondition when it is already on
  // or the optimizer has stepped or been traced into a graph (the scale must be there from the start).
  void EnableLossScaling(const LossScaleOptions& options);
  bool loss_scaling() const { return scaler_.scale != nullptr; }
  // loss * scale (an op: differentiable, and traced as such in a graph build, where it reads the scale
  // at each run). FailedPrecondition when loss scaling is off; `loss` must be floating point.
  TensorPtr ScaleLoss(const TensorPtr& loss) const;
  // The current scale (1 when loss scaling is off) and the number of steps skipped so far.
  double loss_scale() const;
  int64_t skipped_steps() const;
  // Whether the last step (eager or a graph run) was skipped for inf/NaN gradients.
  bool last_step_skipped() const;

  // --- lazy graphs (core/graph/graph.h): an update is traced once and run at every step ---
  // A graph's step: TraceStepBegin with the lazy gradients of the parameters that have one (the loss
  // scaler's check), TraceUpdate for each of them, TraceStepEnd (the scale's update). TraceUpdate
  // traces parameter i's update with its lazy gradient into the graph being built on this thread; the
  // parameter's state is created (eagerly) first, so the graph binds it as variables.
  void TraceStepBegin(const std::vector<TensorPtr>& lazy_grads);
  void TraceUpdate(size_t i, const TensorPtr& lazy_grad);
  void TraceStepEnd();
  // Before a run: sets the traced update's attributes that change between steps (lr; SGD's first step).
  virtual void RefreshTracedAttrs(size_t i, Attrs& attrs) const;
  // After a run that executed parameter i's traced update (which may have been skipped: last_step_skipped).
  virtual void TracedStepDone(size_t /*i*/) {}

 protected:
  // Checks the parameters: at least one, none null, no repeats, leaves, contiguous, and with a kernel
  // of `update` for their dtype and device. InvalidArgument naming the parameter's index otherwise.
  Optimizer(std::vector<TensorPtr> params, double lr, const OpDef& update);
  // Creates parameter i's state if it has none yet (before any parameter is written).
  virtual void PrepareState(size_t i) = 0;
  // Updates parameter i, whose state is prepared and whose gradient `grad` has been checked.
  virtual void Update(size_t i, const TensorPtr& grad) = 0;
  // The loss scaler's state for the updates' inputs; null when loss scaling is off.
  const LossScaleState* scaling() const { return loss_scaling() ? &scaler_ : nullptr; }

 private:
  std::vector<TensorPtr> params_;
  double lr_;
  bool used_ = false;  // stepped or traced: loss scaling can no longer be turned on
  LossScaleOptions scale_options_;
  LossScaleState scaler_;  // all null when loss scaling is off
};

class SGD final : public Optimizer {
 public:
  SGD(std::vector<TensorPtr> params, const SgdOptions& options);
  const SgdOptions& options() const { return options_; }
  // Parameter i's momentum buffer; null before its first step (or trace) or without momentum.
  const TensorPtr& momentum_buffer(size_t i) const { return momentum_buffers_.at(i); }
  void RefreshTracedAttrs(size_t i, Attrs& attrs) const override;
  void TracedStepDone(size_t i) override;

 private:
  void PrepareState(size_t i) override;
  void Update(size_t i, const TensorPtr& grad) override;
  SgdOptions options_;
  std::vector<TensorPtr> momentum_buffers_;
  std::vector<bool> started_;  // parameter i has taken a step (its buffer holds a value)
};

// Adam, or AdamW with options.decoupled_weight_decay.
class Adam final : public Optimizer {
 public:
  Adam(std::vector<TensorPtr> params, const AdamOptions& options);
  const AdamOptions& options() const { return options_; }
  // Parameter i's state (null before its first step): the moment estimates and the step count.
  const TensorPtr& exp_avg(size_t i) const { return state_.at(i).exp_avg; }
  const TensorPtr& exp_avg_sq(size_t i) const { return state_.at(i).exp_avg_sq; }
  int64_t step_count(size_t i) const;

 private:
  void PrepareState(size_t i) override;
  void Update(size_t i, const TensorPtr& grad) override;
  struct State {
    TensorPtr exp_avg, exp_avg_sq, step;
  };
  AdamOptions options_;
  std::vector<State> state_;
};

}  // namespace oneflow
