//! Dynamic loss scaling (of_optimizer_enable_loss_scaling): a finite step on the scaled loss equals
//! the unscaled step (scale 2^10: exact), a step whose gradients hold an inf is skipped and halves the
//! scale; too late after a step.
use oneflow::{LossScaleOptions, Optimizer, SgdOptions, Session};

#[test]
fn loss_scaling_unscales_finite_steps_and_skips_inf_ones() -> oneflow::Result<()> {
    let s = Session::new()?;
    let p = s.from_slice(&[2], &[1.0f32, -2.0])?;
    p.set_requires_grad(true)?;
    let mut opt = Optimizer::sgd(&s, &[&p], &SgdOptions { lr: 0.5, ..Default::default() })?;
    assert_eq!(opt.loss_scale()?, (1.0, 0));
    assert!(opt.scale_loss(&p).is_err(), "off: refused");
    let bad = LossScaleOptions { growth_interval: 0, ..Default::default() };
    let err = opt.enable_loss_scaling(&bad).expect_err("growth_interval 0 is refused");
    assert!(err.to_string().contains("growth_interval"), "{err}");
    opt.enable_loss_scaling(&LossScaleOptions { init_scale: 1024.0, growth_interval: 2, ..Default::default() })?;
    let xs = [[0.5f32, 1.0], [f32::INFINITY, 1.0]];
    for (step, x) in xs.iter().enumerate() {
        opt.zero_grad()?;
        let loss = s.from_slice(&[2], x)?.mul(&p)?.sum(&[], false)?;
        opt.scale_loss(&loss)?.backward(None, false)?;
        opt.step()?;
        assert_eq!(p.to_vec::<f32>()?, vec![0.75, -2.5], "step {step}"); // p -= 0.5 x, then skipped
        assert_eq!(opt.loss_scale()?, ([1024.0, 512.0][step], step as i64));
    }
    assert!(opt.enable_loss_scaling(&LossScaleOptions::default()).is_err(), "already on");
    Ok(())
}
