//! Optimizers (PyTorch's SGD, Adam and AdamW semantics).
use crate::{check, state, sys, AdamOptions, LossScaleOptions, Result, SgdOptions, Session, Tensor};
use std::ptr::NonNull;

/// An optimizer over a fixed list of parameters (it holds a reference to each).
pub struct Optimizer {
    raw: NonNull<sys::of_optimizer_t>,
    session: Session,
}

// SAFETY: the header: an optimizer "is not thread-safe: one thread at a time may use it" — so Send
// (moving it between threads) but not Sync; its mutating calls take &mut self and the state lock.
unsafe impl Send for Optimizer {}

impl Drop for Optimizer {
    fn drop(&mut self) {
        let _s = state::write();
        unsafe { sys::of_optimizer_destroy(self.raw.as_ptr()) }
    }
}

fn raw_params(params: &[&Tensor]) -> Vec<*mut sys::of_tensor_t> {
    params.iter().map(|t| t.raw()).collect()
}

impl Optimizer {
    fn made(session: &Session, status: *mut sys::of_status_t, raw: *mut sys::of_optimizer_t) -> Result<Optimizer> {
        check(status)?;
        Ok(Optimizer { raw: NonNull::new(raw).expect("non-NULL on success"), session: session.clone() })
    }

    /// SGD over `params` (contiguous float32/float64 CPU leaves).
    pub fn sgd(session: &Session, params: &[&Tensor], options: &SgdOptions) -> Result<Optimizer> {
        let p = raw_params(params);
        let c = options.to_c();
        let mut raw = std::ptr::null_mut();
        let _s = state::write();
        let status = unsafe { sys::of_optimizer_sgd_create(session.handle.raw(), p.as_ptr(), p.len(), &c, &mut raw) };
        Optimizer::made(session, status, raw)
    }

    /// Adam, or AdamW with `decoupled_weight_decay`.
    pub fn adam(session: &Session, params: &[&Tensor], options: &AdamOptions) -> Result<Optimizer> {
        let p = raw_params(params);
        let c = options.to_c();
        let mut raw = std::ptr::null_mut();
        let _s = state::write();
        let status = unsafe { sys::of_optimizer_adam_create(session.handle.raw(), p.as_ptr(), p.len(), &c, &mut raw) };
        Optimizer::made(session, status, raw)
    }

    pub(crate) fn raw(&self) -> *mut sys::of_optimizer_t {
        self.raw.as_ptr()
    }

    /// Updates every parameter that has a grad, in place.
    pub fn step(&mut self) -> Result<()> {
        let _s = state::write();
        check(unsafe { sys::of_optimizer_step(self.session.handle.raw(), self.raw()) })
    }

    /// Clears every parameter's grad.
    pub fn zero_grad(&mut self) -> Result<()> {
        let _s = state::write();
        check(unsafe { sys::of_optimizer_zero_grad(self.raw()) })
    }

    /// Sets the learning rate of the following steps (and graph runs).
    pub fn set_lr(&mut self, lr: f64) -> Result<()> {
        let _s = state::write();
        check(unsafe { sys::of_optimizer_set_lr(self.raw(), lr) })
    }

    /// The learning rate.
    pub fn lr(&self) -> Result<f64> {
        let _s = state::read();
        let mut lr = 0.0;
        check(unsafe { sys::of_optimizer_lr(self.raw(), &mut lr) })?;
        Ok(lr)
    }

    /// Turns dynamic loss scaling on (float16 mixed precision): call backward on
    /// [`Optimizer::scale_loss`]'s result; a step whose gradients hold an inf or NaN is skipped and
    /// the scale backs off, and it grows after `growth_interval` clean steps, eagerly and inside graph
    /// runs. Before the first step and before the optimizer is added to a graph.
    pub fn enable_loss_scaling(&mut self, options: &LossScaleOptions) -> Result<()> {
        let c = options.to_c();
        let _s = state::write();
        check(unsafe { sys::of_optimizer_enable_loss_scaling(self.session.handle.raw(), self.raw(), &c) })
    }

    /// `loss` times the current scale, to call backward on (traced in a graph build).
    pub fn scale_loss(&self, loss: &Tensor) -> Result<Tensor> {
        let _s = state::read();
        let mut raw = std::ptr::null_mut();
        check(unsafe { sys::of_optimizer_scale_loss(self.session.handle.raw(), self.raw(), loss.raw(), &mut raw) })?;
        Ok(unsafe { Tensor::from_raw(raw, self.session.handle.clone()) })
    }

    /// The current loss scale (1 when loss scaling is off) and the number of steps skipped so far.
    pub fn loss_scale(&self) -> Result<(f64, i64)> {
        let _s = state::read();
        let (mut scale, mut skipped) = (0.0, 0i64);
        check(unsafe { sys::of_optimizer_loss_scale(self.raw(), &mut scale, &mut skipped) })?;
        Ok((scale, skipped))
    }
}
