package org.oneflow;

import java.lang.ref.Cleaner;
import java.util.function.LongConsumer;

/**
 * One C reference of a binding object (a tensor, graph, optimizer or process group) and the session
 * reference it holds (none for a process group, which belongs to no session): released exactly once,
 * by {@link #close()} or, for an object left unclosed, by the Cleaner.
 * The released state never refers to its owner (a Cleaner action must not, or the owner would stay
 * reachable).
 */
final class NativeRef {
  private static final class State implements Runnable {
    volatile long ptr;
    final SessionHandle session;
    final LongConsumer release;

    State(long ptr, SessionHandle session, LongConsumer release) {
      this.ptr = ptr;
      this.session = session;
      this.release = release;
    }

    @Override
    public void run() {
      long p = ptr;
      ptr = 0;
      release.accept(p);
      if (session != null) session.release();
    }
  }

  private final State state;
  private final Cleaner.Cleanable cleanable;
  private final String what;

  /** Takes over `ptr` (released with `release`) and a new reference to `session` (null: none), for `owner`. */
  NativeRef(Object owner, long ptr, SessionHandle session, LongConsumer release, String what) {
    this.state = new State(ptr, session == null ? null : session.retain(), release);
    this.cleanable = Resources.CLEANER.register(owner, state);
    this.what = what;
  }

  /** The C handle; IllegalStateException once closed. */
  long ptr() {
    long p = state.ptr;
    if (p == 0) throw new IllegalStateException("oneflow: this " + what + " is closed");
    return p;
  }

  SessionHandle session() {
    return state.session;
  }

  boolean isClosed() {
    return state.ptr == 0;
  }

  /** Releases both references; a second call does nothing. */
  void close() {
    cleanable.clean();
  }
}
