// Optimizers over a list of parameter tensors (leaves), with PyTorch's semantics: SGD (momentum,
// dampening, nesterov, weight decay) and Adam / AdamW.
//
// Each parameter's update is one registered op ("sgd_update", "adam_update", in optimizer_ops.cpp)
// that writes the parameter and its state buffers in place (mutated_inputs) and has no outputs and no
// backward, so that a lazy graph can add update nodes. Step() runs them with grad mode off.
//
// An optimizer holds references to its parameters and its state. It is not thread-safe: one thread
// at a time may call it (the parameters' data are written without locks).
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
void CheckSgdOptions(const SgdOptions& options);
void CheckAdamOptions(const AdamOptions& options);

namespace ops {
// One SGD step on `param` (updated in place) with gradient `grad` (same dtype and shape):
//   d = grad + weight_decay * param
//   if momentum != 0:  buf = first_step ? d : momentum * buf + (1 - dampening) * d
//                      d = nesterov ? d + momentum * buf : buf
//   param -= lr * d
// `momentum_buffer` (updated in place) is required when momentum != 0, else it may be null. On a
// parameter's first step PyTorch sets the buffer to d: `first_step` says so (the buffer's contents are
// then not read).
void SgdUpdate(const TensorPtr& param, const TensorPtr& grad, const TensorPtr& momentum_buffer,
               const SgdOptions& options, bool first_step);
// One Adam step; `step` is a 0-d int64 tensor holding the number of steps taken so far, incremented
// first (so bias correction uses the new count t):
//   g = grad (+ weight_decay * param unless decoupled);  if decoupled: param *= 1 - lr * weight_decay
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   param -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// param, exp_avg (m), exp_avg_sq (v) and step are updated in place.
void AdamUpdate(const TensorPtr& param, const TensorPtr& grad, const TensorPtr& exp_avg, const TensorPtr& exp_avg_sq,
                const TensorPtr& step, const AdamOptions& options);
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

  // --- lazy graphs (core/graph/graph.h): an update is traced once and run at every step ---
  // Traces parameter i's update with its lazy gradient into the graph being built on this thread; the
  // parameter's state is created (eagerly) first, so the graph binds it as variables.
  void TraceUpdate(size_t i, const TensorPtr& lazy_grad);
  // Before a run: sets the traced update's attributes that change between steps (lr; SGD's first step).
  virtual void RefreshTracedAttrs(size_t i, Attrs& attrs) const;
  // After a run that executed parameter i's traced update.
  virtual void TracedStepDone(size_t /*i*/) {}

 protected:
  // Checks the parameters: at least one, none null, no repeats, leaves, contiguous, and with a kernel
  // of `update` for their dtype and device. InvalidArgument naming the parameter's index otherwise.
  Optimizer(std::vector<TensorPtr> params, double lr, const OpDef& update);
  // Creates parameter i's state if it has none yet (before any parameter is written).
  virtual void PrepareState(size_t i) = 0;
  // Updates parameter i, whose state is prepared and whose gradient `grad` has been checked.
  virtual void Update(size_t i, const TensorPtr& grad) = 0;

 private:
  std::vector<TensorPtr> params_;
  double lr_;
};

class SGD final : public Optimizer {
 public:
  SGD(std::vector<TensorPtr> params, const SgdOptions& options);
  const SgdOptions& options() const { return options_; }
  // Parameter i's momentum buffer; null before its first step (or trace) or without momentum.
  const TensorPtr& momentum_buffer(size_t i) const { return momentum_buffers_.at(i); }
  void RefreshTracedAttrs(size_t i, Attrs& attrs) const override;
  void TracedStepDone(size_t i) override { started_[i] = true; }

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
