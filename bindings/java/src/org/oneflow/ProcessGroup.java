package org.oneflow;

import java.lang.ref.Reference;
import org.oneflow.jni.OneflowC;

/**
 * A process group (of_process_group_t): the ranks 0 .. worldSize - 1 of one job, each a process on this
 * machine or another, and the collectives between them (Gloo over TCP, CPU tensors). Every rank
 * creates it with the same world size and rendezvous and its own rank; then every rank must make the
 * same collective calls in the same order, with the same dtypes and shapes.
 *
 * <pre>{@code
 * try (ProcessGroup g = new ProcessGroup(new ProcessGroupOptions()
 *          .rank(rank).worldSize(worldSize).rendezvous("/shared/empty/dir"));
 *      Tensor sum = g.allReduce(x, ReduceOp.SUM)) {
 *   ...
 * }
 * }</pre>
 *
 * <p>A collective that fails (a peer exited: {@link UnavailableException}; one did not take part within
 * the timeout: a {@link OneflowException} with code DEADLINE_EXCEEDED) breaks the group, not the session,
 * tensors or graphs.
 *
 * <p>Ownership: the group belongs to no session. {@link #close()} leaves it (the other ranks' later
 * collectives fail); a second close does nothing; other uses after close are IllegalStateException; a
 * Cleaner is the backstop. A graph made data-parallel with it ({@link Graph#setDataParallel}) keeps the
 * group alive natively, so the two may be closed in any order; a graph that traced collectives needs
 * the group open when it runs (FailedPreconditionException after).
 *
 * <p>Threads: the library serialises the calls of one group, so it may be used from several threads
 * (the order of the collectives must still be the same on every rank); close() must not race with
 * other uses of this object.
 */
public final class ProcessGroup implements AutoCloseable {
  private final NativeRef ref;

  /**
   * Joins the group; returns once every rank has joined. InvalidArgumentException for options out of
   * range (a rank outside [0, worldSize)), a rendezvous directory that cannot be written, ranks that
   * disagree; DEADLINE_EXCEEDED naming the ranks that did not join within the timeout.
   *
   * @param options rank, world size, rendezvous (required), timeout, host
   */
  public ProcessGroup(ProcessGroupOptions options) {
    long[] out = new long[1];
    org.oneflow.jni.of_process_group_options_t o = (options == null ? new ProcessGroupOptions() : options).toNative();
    try {
      Status.check(OneflowC.of_process_group_create(o, out));
    } finally {
      o.delete();
    }
    this.ref = new NativeRef(this, out[0], null, p -> OneflowC.of_process_group_destroy(p), "process group");
  }

  long ptr() {
    return ref.ptr();
  }

  /** Leaves the group. Idempotent. */
  @Override
  public void close() {
    ref.close();
  }

  public boolean isClosed() {
    return ref.isClosed();
  }

  /** This process's rank, in [0, worldSize). */
  public int rank() {
    int[] out = new int[1];
    try {
      Status.check(OneflowC.of_process_group_rank(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0];
  }

  /** The number of ranks. */
  public int worldSize() {
    int[] out = new int[1];
    try {
      Status.check(OneflowC.of_process_group_world_size(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0];
  }

  /** Returns once every rank has called it (or fails as the collectives do). */
  public void barrier() {
    try {
      Status.check(OneflowC.of_process_group_barrier(ptr()));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  private interface Collective {
    long call(long session, long group, long x, long[] out);
  }

  /** Runs a collective on x in x's session (eagerly, or traced into a graph being built). */
  private Tensor collective(Tensor x, Collective f) {
    if (x == null) throw new NullPointerException("x is null");
    SessionHandle s = x.opSession();
    long[] out = new long[1];
    try {
      Status.check(f.call(s.ptr(), ptr(), x.ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(x);
    }
    return new Tensor(s, out[0]);
  }

  /**
   * x's elements combined over the ranks with op (numeric dtypes; MEAN needs a floating one). Not
   * differentiable.
   *
   * @return a new tensor of x's dtype and shape (close it)
   */
  public Tensor allReduce(Tensor x, ReduceOp op) {
    java.util.Objects.requireNonNull(op, "op");
    return collective(x, (s, g, t, out) -> OneflowC.of_all_reduce(s, g, t, op.value(), out));
  }

  /**
   * Rank root's x on every rank (any dtype; every rank passes the same dtype and shape).
   *
   * @return a new tensor (close it)
   */
  public Tensor broadcast(Tensor x, int root) {
    return collective(x, (s, g, t, out) -> OneflowC.of_broadcast(s, g, t, root, out));
  }

  /**
   * Every rank's x, stacked.
   *
   * @return a new tensor of shape (worldSize, *x.shape), rank r's x at index r (close it)
   */
  public Tensor allGather(Tensor x) {
    return collective(x, (s, g, t, out) -> OneflowC.of_all_gather(s, g, t, out));
  }

  @Override
  public String toString() {
    return isClosed() ? "ProcessGroup(closed)" : "ProcessGroup(rank " + rank() + " of " + worldSize() + ")";
  }
}
