package org.oneflow;

/**
 * A scope over state of the calling thread (grad mode, autocast): close() restores what was there
 * before, once, and must happen on the thread that entered the scope.
 */
abstract class ThreadScope implements AutoCloseable {
  private final Thread thread = Thread.currentThread();
  private final String what;
  private boolean closed;

  ThreadScope(String what) {
    this.what = what;
  }

  /** Puts back the thread's state from before the scope. */
  abstract void restore();

  /** Restores the state before the scope. A second call does nothing. */
  @Override
  public final void close() {
    if (closed) return;
    if (Thread.currentThread() != thread) {
      throw new IllegalStateException("oneflow: " + what + " must be closed on the thread that entered it");
    }
    closed = true;
    restore();
  }
}
