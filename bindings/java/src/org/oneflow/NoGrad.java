package org.oneflow;

import org.oneflow.jni.OneflowC;

/**
 * A no-grad scope of the calling thread (grad mode is per thread, as in PyTorch):
 * {@code try (NoGrad ng = NoGrad.enter()) { ... }} records no backward graph inside and restores the
 * previous mode on close, which must happen on the same thread.
 */
public final class NoGrad extends ThreadScope {
  private final boolean previous;

  private NoGrad(boolean previous) {
    super("a NoGrad scope");
    this.previous = previous;
  }

  /** Switches grad mode off for this thread until close(). */
  public static NoGrad enter() {
    boolean[] previous = new boolean[1];
    Status.check(OneflowC.of_grad_set_enabled(false, previous));
    return new NoGrad(previous[0]);
  }

  @Override
  void restore() {
    Status.check(OneflowC.of_grad_set_enabled(previous, null));
  }

  /** The calling thread's grad mode. */
  public static boolean isGradEnabled() {
    boolean[] out = new boolean[1];
    Status.check(OneflowC.of_grad_is_enabled(out));
    return out[0];
  }

  /** Sets the calling thread's grad mode; returns the previous one. */
  public static boolean setGradEnabled(boolean enabled) {
    boolean[] previous = new boolean[1];
    Status.check(OneflowC.of_grad_set_enabled(enabled, previous));
    return previous[0];
  }
}
