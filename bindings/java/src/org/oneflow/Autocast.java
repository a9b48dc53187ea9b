package org.oneflow;

import org.oneflow.jni.OneflowC;

/**
 * An autocast (mixed precision) scope of the calling thread, as PyTorch's {@code torch.autocast}:
 * {@code try (Autocast ac = Autocast.enter(DType.BFLOAT16)) { ... }} runs conv2d, matmul and linear in
 * bfloat16 on float32 inputs (float32 accumulation) and softmax, the losses and the normalizations in
 * float32 inside; the casts are recorded ops, so float32 parameters get float32 gradients (see
 * of_autocast_set in oneflow_c.h). Close restores the previous dtype and must happen on the same thread.
 */
public final class Autocast extends ThreadScope {
  private final DType previous;

  private Autocast(DType previous) {
    super("an Autocast scope");
    this.previous = previous;
  }

  /** Sets this thread's autocast dtype (FLOAT16 or BFLOAT16; null: off) until close(). */
  public static Autocast enter(DType dtype) {
    return new Autocast(set(dtype));
  }

  @Override
  void restore() {
    set(previous);
  }

  /** The calling thread's autocast dtype, or null when off (the default). */
  public static DType dtype() {
    long[] out = new long[1];
    Status.check(OneflowC.of_autocast_get(out));
    return out[0] == 0 ? null : DType.of(out[0]);
  }

  /**
   * Sets the calling thread's autocast dtype (FLOAT16 or BFLOAT16; null: off); returns the previous one
   * (null when it was off). Another dtype is an InvalidArgumentException and changes nothing.
   */
  public static DType set(DType dtype) {
    long[] previous = new long[1];
    Status.check(OneflowC.of_autocast_set(dtype == null ? 0 : DType.ptr(dtype, "dtype"), previous));
    return previous[0] == 0 ? null : DType.of(previous[0]);
  }
}
