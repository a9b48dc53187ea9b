package org.oneflow;

import java.util.concurrent.atomic.AtomicLong;
import org.oneflow.jni.OneflowC;

/**
 * A session's C handle, shared by the Session and every object made from it (tensors, graphs,
 * optimizers), each of which holds one reference: of_session_destroy runs when the last is released,
 * so no call can race with it.
 */
final class SessionHandle {
  private final long ptr;
  private final AtomicLong refs = new AtomicLong(1);

  SessionHandle(long ptr) {
    this.ptr = ptr;
  }

  long ptr() {
    return ptr;
  }

  /** Adds a reference; only a holder of one may call it. */
  SessionHandle retain() {
    refs.incrementAndGet();
    return this;
  }

  void release() {
    long left = refs.decrementAndGet();
    if (left == 0) {
      OneflowC.of_session_destroy(ptr);
    } else if (left < 0) {
      throw new IllegalStateException("oneflow: session handle released too often");
    }
  }

  /** References held now (the session's own, if open, included). */
  long references() {
    return refs.get();
  }
}
