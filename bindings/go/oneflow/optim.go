package oneflow

/*
#include <oneflow/oneflow_c.h>
*/
import "C"

import (
	"runtime"
	"sync"
)

// Optimizer updates a fixed list of parameters from their grads (SGD, Adam/AdamW, PyTorch's
// semantics). The C optimizer is not thread-safe; this type serialises its calls with a mutex. It
// holds references to its parameters and to its session's C handle. Close is idempotent and safe from
// any goroutine.
type Optimizer struct {
	ptr  *C.of_optimizer_t
	core *sessionCore
	life life
	mu   sync.Mutex
}

type optimizerCreator func(*C.of_session_t, **C.of_tensor_t, C.size_t, **C.of_optimizer_t) *C.of_status_t

func (s *Session) newOptimizer(what string, params []*Tensor, f optimizerCreator) (*Optimizer, error) {
	c, err := s.begin(what)
	if err != nil {
		return nil, err
	}
	defer s.end()
	cp, err := tensorsArg(what, "params", params)
	if err != nil {
		return nil, err
	}
	defer endTensors(params)
	var out *C.of_optimizer_t
	st := f(c.ptr, tensorsPtr(cp), C.size_t(len(cp)), &out)
	runtime.KeepAlive(s)
	runtime.KeepAlive(params)
	if err := statusError(st); err != nil {
		return nil, err
	}
	c.ref()
	o := &Optimizer{ptr: out, core: c}
	runtime.SetFinalizer(o, (*Optimizer).Close)
	return o, nil
}

// NewSGD creates SGD over params (contiguous float CPU leaves); opts nil: the defaults.
func (s *Session) NewSGD(params []*Tensor, opts *SGDOptions) (*Optimizer, error) {
	return s.newOptimizer("NewSGD", params, func(sp *C.of_session_t, p **C.of_tensor_t, n C.size_t, out **C.of_optimizer_t) *C.of_status_t {
		var co C.of_sgd_options_t
		return C.of_optimizer_sgd_create(sp, p, n, opts.cOptions(&co), out)
	})
}

// NewAdam creates Adam (AdamW with DecoupledWeightDecay) over params; opts nil: the defaults.
func (s *Session) NewAdam(params []*Tensor, opts *AdamOptions) (*Optimizer, error) {
	return s.newOptimizer("NewAdam", params, func(sp *C.of_session_t, p **C.of_tensor_t, n C.size_t, out **C.of_optimizer_t) *C.of_status_t {
		var co C.of_adam_options_t
		return C.of_optimizer_adam_create(sp, p, n, opts.cOptions(&co), out)
	})
}

// Close frees the optimizer (a graph it was added to keeps what it needs).
func (o *Optimizer) Close() error {
	if o != nil && o.life.close() {
		o.free()
	}
	return nil
}

func (o *Optimizer) free() {
	runtime.SetFinalizer(o, nil)
	C.of_optimizer_destroy(o.ptr)
	o.core.unref()
}

func (o *Optimizer) begin(what string) (*sessionCore, error) {
	if o == nil || !o.life.enter() {
		return nil, closedError(what, "optimizer")
	}
	return o.core, nil
}

func (o *Optimizer) end() {
	if o.life.exit() {
		o.free()
	}
}

// Step updates every parameter that has a grad.
func (o *Optimizer) Step() error {
	c, err := o.begin("Step")
	if err != nil {
		return err
	}
	defer o.end()
	o.mu.Lock()
	defer o.mu.Unlock()
	st := C.of_optimizer_step(c.ptr, o.ptr)
	runtime.KeepAlive(o)
	return statusError(st)
}

// ZeroGrad clears every parameter's grad.
func (o *Optimizer) ZeroGrad() error {
	if _, err := o.begin("ZeroGrad"); err != nil {
		return err
	}
	defer o.end()
	o.mu.Lock()
	defer o.mu.Unlock()
	st := C.of_optimizer_zero_grad(o.ptr)
	runtime.KeepAlive(o)
	return statusError(st)
}

// SetLR sets the learning rate of the following steps (and graph runs).
func (o *Optimizer) SetLR(lr float64) error {
	if _, err := o.begin("SetLR"); err != nil {
		return err
	}
	defer o.end()
	o.mu.Lock()
	defer o.mu.Unlock()
	st := C.of_optimizer_set_lr(o.ptr, C.double(lr))
	runtime.KeepAlive(o)
	return statusError(st)
}

// LR is the current learning rate.
func (o *Optimizer) LR() (float64, error) {
	if _, err := o.begin("LR"); err != nil {
		return 0, err
	}
	defer o.end()
	o.mu.Lock()
	defer o.mu.Unlock()
	var lr C.double
	st := C.of_optimizer_lr(o.ptr, &lr)
	runtime.KeepAlive(o)
	return float64(lr), statusError(st)
}

// EnableLossScaling turns dynamic loss scaling on (float16 mixed precision; opts nil: the defaults):
// call Backward on ScaleLoss's result; a step whose gradients hold an inf or NaN is skipped and the
// scale backs off, and it grows after GrowthInterval clean steps, eagerly and inside graph runs. Before
// the first step and before Graph.AddOptimizer.
func (o *Optimizer) EnableLossScaling(opts *LossScaleOptions) error {
	c, err := o.begin("EnableLossScaling")
	if err != nil {
		return err
	}
	defer o.end()
	o.mu.Lock()
	defer o.mu.Unlock()
	var co C.of_loss_scale_options_t
	st := C.of_optimizer_enable_loss_scaling(c.ptr, o.ptr, opts.cOptions(&co))
	runtime.KeepAlive(o)
	return statusError(st)
}

// ScaleLoss returns loss times the current scale, to call Backward on (traced inside Graph.Build).
func (o *Optimizer) ScaleLoss(loss *Tensor) (*Tensor, error) {
	c, err := o.begin("ScaleLoss")
	if err != nil {
		return nil, err
	}
	defer o.end()
	cl, err := tensorArg("ScaleLoss", "loss", loss)
	if err != nil {
		return nil, err
	}
	defer loss.endArg()
	o.mu.Lock()
	defer o.mu.Unlock()
	var out *C.of_tensor_t
	st := C.of_optimizer_scale_loss(c.ptr, o.ptr, cl, &out)
	runtime.KeepAlive(o)
	runtime.KeepAlive(loss)
	return c.tensorResult(st, out)
}

// LossScale is the current loss scale (1 when loss scaling is off) and the number of steps skipped so
// far for inf/NaN gradients.
func (o *Optimizer) LossScale() (scale float64, skippedSteps int64, err error) {
	if _, err := o.begin("LossScale"); err != nil {
		return 0, 0, err
	}
	defer o.end()
	o.mu.Lock()
	defer o.mu.Unlock()
	var cs C.double
	var ck C.int64_t
	st := C.of_optimizer_loss_scale(o.ptr, &cs, &ck)
	runtime.KeepAlive(o)
	return float64(cs), int64(ck), statusError(st)
}
