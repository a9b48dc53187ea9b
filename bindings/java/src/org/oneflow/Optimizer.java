package org.oneflow;

import java.lang.ref.Reference;
import org.oneflow.jni.OneflowC;

/**
 * An optimizer (SGD, Adam, AdamW) over a fixed list of parameters, each of which it keeps alive
 * natively. Not thread-safe: one thread at a time, and no other thread may use the parameters during
 * {@link #step()}. close() is idempotent; a Cleaner is the backstop.
 */
public final class Optimizer implements AutoCloseable {
  private final NativeRef ref;

  private Optimizer(SessionHandle s, long ptr) {
    this.ref = new NativeRef(this, ptr, s, p -> OneflowC.of_optimizer_destroy(p), "optimizer");
  }

  static Optimizer sgd(SessionHandle s, Tensor[] params, SgdOptions options) {
    long[] p = Tensor.ptrs(params, "params");
    long[] out = new long[1];
    org.oneflow.jni.of_sgd_options_t o = options == null ? null : options.toNative();
    try {
      Status.check(OneflowC.of_optimizer_sgd_create(s.ptr(), p, o, out));
    } finally {
      if (o != null) o.delete();
      Reference.reachabilityFence(params);
    }
    return new Optimizer(s, out[0]);
  }

  static Optimizer adam(SessionHandle s, Tensor[] params, AdamOptions options) {
    long[] p = Tensor.ptrs(params, "params");
    long[] out = new long[1];
    org.oneflow.jni.of_adam_options_t o = options == null ? null : options.toNative();
    try {
      Status.check(OneflowC.of_optimizer_adam_create(s.ptr(), p, o, out));
    } finally {
      if (o != null) o.delete();
      Reference.reachabilityFence(params);
    }
    return new Optimizer(s, out[0]);
  }

  long ptr() {
    return ref.ptr();
  }

  /** Updates every parameter that has a grad, in place. */
  public void step() {
    try {
      Status.check(OneflowC.of_optimizer_step(ref.session().ptr(), ptr()));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Clears every parameter's grad. */
  public void zeroGrad() {
    try {
      Status.check(OneflowC.of_optimizer_zero_grad(ptr()));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The learning rate of the following steps (finite, >= 0). */
  public void setLr(double lr) {
    try {
      Status.check(OneflowC.of_optimizer_set_lr(ptr(), lr));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  public double lr() {
    double[] out = new double[1];
    try {
      Status.check(OneflowC.of_optimizer_lr(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0];
  }

  // ---- dynamic loss scaling (float16 mixed precision) --------------------------------------------

  /**
   * Turns dynamic loss scaling on (null: the defaults): backward runs on {@link #scaleLoss}'s result,
   * a step whose gradients hold an inf or NaN is skipped and the scale backs off, and it grows after
   * growthInterval clean steps; eagerly and inside graph runs. Before the first step and before
   * {@link Graph#addOptimizer}, else FailedPreconditionException.
   */
  public void enableLossScaling(LossScaleOptions options) {
    org.oneflow.jni.of_loss_scale_options_t o = options == null ? null : options.toNative();
    try {
      Status.check(OneflowC.of_optimizer_enable_loss_scaling(ref.session().ptr(), ptr(), o));
    } finally {
      if (o != null) o.delete();
      Reference.reachabilityFence(this);
    }
  }

  /** loss * the current scale, to call backward on (a new tensor; traced in a graph build). */
  public Tensor scaleLoss(Tensor loss) {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_optimizer_scale_loss(ref.session().ptr(), ptr(), Tensor.ptr(loss, "loss"), out));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(loss);
    }
    return new Tensor(ref.session(), out[0]);
  }

  /** The current loss scale (1 when loss scaling is off). */
  public double lossScale() {
    double[] scale = new double[1];
    long[] skipped = new long[1];
    lossScaleState(scale, skipped);
    return scale[0];
  }

  /** The number of steps skipped for inf/NaN gradients so far. */
  public long skippedSteps() {
    double[] scale = new double[1];
    long[] skipped = new long[1];
    lossScaleState(scale, skipped);
    return skipped[0];
  }

  private void lossScaleState(double[] scale, long[] skipped) {
    try {
      Status.check(OneflowC.of_optimizer_loss_scale(ptr(), scale, skipped));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  @Override
  public void close() {
    ref.close();
  }
}
