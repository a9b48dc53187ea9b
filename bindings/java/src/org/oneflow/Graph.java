package org.oneflow;

import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.oneflow.jni.OneflowC;

/**
 * A lazy graph (of_graph_t): traced once from ordinary op calls between {@link #beginBuild()} and
 * {@link #endBuild()}, then run many times.
 *
 * <pre>{@code
 * try (Graph g = session.graph("step")) {
 *   g.beginBuild();
 *   try (Tensor x = g.addInput("x", DType.FLOAT32, Dim.UNKNOWN, 4); Tensor y = x.relu()) {
 *     g.addOutput(y);
 *   }
 *   g.endBuild();
 *   Tensor[] out = g.run(batch);
 * }
 * }</pre>
 *
 * <p>The graph holds a reference to its session's native state and keeps working after the Session is
 * closed. Threads: the build methods must be called on the thread that began the build; run and the
 * queries may be called from any thread (runs of one graph are serialised by the library). close()
 * must not race with other uses of this object.
 */
public final class Graph implements AutoCloseable {
  private final NativeRef ref;

  Graph(SessionHandle s, String name, GraphOptions options) {
    long[] out = new long[1];
    org.oneflow.jni.of_graph_options_t o = options == null ? null : options.toNative();
    try {
      Status.check(OneflowC.of_graph_create(s.ptr(), name, o, out));
    } finally {
      if (o != null) o.delete();
    }
    this.ref = new NativeRef(this, out[0], s, p -> OneflowC.of_graph_destroy(p), "graph");
  }

  long ptr() {
    return ref.ptr();
  }

  /** Destroys the graph: ends an open build and releases its variables (its free tensors). Idempotent. */
  @Override
  public void close() {
    ref.close();
  }

  /** Opens the build on the calling thread: op calls on this thread with this graph's session record nodes. */
  public void beginBuild() {
    try {
      Status.check(OneflowC.of_graph_begin_build(ptr()));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Declares the next input: a lazy tensor of dtype and dims (sizes, Dim.UNKNOWN or session symbols). */
  public Tensor addInput(String name, DType dtype, long... dims) {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_graph_add_input(ptr(), name, DType.ptr(dtype, "dtype"), dims == null ? new long[0] : dims, out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return new Tensor(ref.session(), out[0]);
  }

  /** Registers an eager floating-point leaf as a trainable variable called name (before its first use). */
  public void addParameter(Tensor tensor, String name) {
    try {
      Status.check(OneflowC.of_graph_add_parameter(ptr(), Tensor.ptr(tensor, "tensor"), name));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(tensor);
    }
  }

  /** Declares a lazy tensor of this graph as the next output. */
  public void addOutput(Tensor tensor) {
    try {
      Status.check(OneflowC.of_graph_add_output(ptr(), Tensor.ptr(tensor, "tensor")));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(tensor);
    }
  }

  /** Traces the optimizer's updates of the parameters that received a traced gradient; the graph keeps it alive. */
  public void addOptimizer(Optimizer optimizer) {
    try {
      Status.check(OneflowC.of_graph_add_optimizer(ptr(), optimizer.ptr()));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(optimizer);
    }
  }

  public void endBuild() {
    try {
      Status.check(OneflowC.of_graph_end_build(ptr()));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Makes every run of this training graph (built with an optimizer) one data-parallel step over group:
   * each rank runs the graph on its own inputs (its share of the global batch); the first run broadcasts
   * rank 0's parameters and batch-norm running statistics, and each step averages the gradients over the
   * ranks (in buckets of options.bucketBytes) before the optimizer's updates. The graph keeps the group
   * alive natively (close them in any order). FailedPreconditionException once the graph has run, or for
   * a built graph without an optimizer.
   *
   * @param options null: the defaults of of_data_parallel_options_init
   */
  public void setDataParallel(ProcessGroup group, DataParallelOptions options) {
    if (group == null) throw new NullPointerException("group is null");
    org.oneflow.jni.of_data_parallel_options_t o = options == null ? null : options.toNative();
    try {
      Status.check(OneflowC.of_graph_set_data_parallel(ptr(), group.ptr(), o));
    } finally {
      if (o != null) o.delete();
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(group);
    }
  }

  /** setDataParallel with the default options. */
  public void setDataParallel(ProcessGroup group) {
    setDataParallel(group, null);
  }

  /** Runs the built graph on eager inputs (in declaration order); returns the outputs (close them). */
  public Tensor[] run(Tensor... inputs) {
    long[] in = Tensor.ptrs(inputs, "inputs");
    long[] out = new long[outputCount()];
    try {
      Status.check(OneflowC.of_graph_run(ptr(), in, out));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(inputs);
    }
    Tensor[] result = new Tensor[out.length];
    for (int i = 0; i < out.length; ++i) result[i] = new Tensor(ref.session(), out[i]);
    return result;
  }

  public int inputCount() {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_graph_input_count(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return (int) out[0];
  }

  public int outputCount() {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_graph_output_count(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return (int) out[0];
  }

  /** The names of the graph's free tensors (non-trainable variables held for it by the session). */
  public List<String> freeTensorNames() {
    long[] count = new long[1];
    List<String> names = new ArrayList<>();
    try {
      Status.check(OneflowC.of_graph_free_tensor_count(ptr(), count));
      for (long i = 0; i < count[0]; ++i) {
        byte[][] name = new byte[1][];
        Status.check(OneflowC.of_graph_free_tensor_name(ptr(), i, name));
        names.add(new String(name[0], StandardCharsets.UTF_8));
      }
    } finally {
      Reference.reachabilityFence(this);
    }
    return names;
  }

  /** The graph as text (inputs, variables, nodes, compiled plans). */
  public String dump() {
    long[] length = new long[1];
    try {
      Status.check(OneflowC.of_graph_dump(ptr(), null, length));
      byte[] buf = new byte[(int) length[0] + 1];
      Status.check(OneflowC.of_graph_dump(ptr(), buf, length));
      return new String(buf, 0, (int) Math.min(length[0], buf.length - 1), StandardCharsets.UTF_8);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The memory plan of the most recent run (all zero before the first). */
  public MemoryStats memoryStats() {
    org.oneflow.jni.of_graph_memory_stats_t s = new org.oneflow.jni.of_graph_memory_stats_t();
    try {
      Status.check(OneflowC.of_graph_memory_stats(ptr(), s));
      return new MemoryStats(s.getPlanned_peak_bytes(), s.getIntermediate_bytes(), s.getBuffer_count(),
          s.getInplace_count(), s.getNode_count(), s.getSpecialization_count(), s.getCompile_count(),
          s.getCached_plan_bytes());
    } finally {
      s.delete();
      Reference.reachabilityFence(this);
    }
  }

  /** of_graph_memory_stats_t as values. */
  public static final class MemoryStats {
    public final long plannedPeakBytes, intermediateBytes, bufferCount, inplaceCount, nodeCount,
        specializationCount, compileCount, cachedPlanBytes;

    MemoryStats(long plannedPeakBytes, long intermediateBytes, long bufferCount, long inplaceCount, long nodeCount,
        long specializationCount, long compileCount, long cachedPlanBytes) {
      this.plannedPeakBytes = plannedPeakBytes;
      this.intermediateBytes = intermediateBytes;
      this.bufferCount = bufferCount;
      this.inplaceCount = inplaceCount;
      this.nodeCount = nodeCount;
      this.specializationCount = specializationCount;
      this.compileCount = compileCount;
      this.cachedPlanBytes = cachedPlanBytes;
    }

    @Override
    public String toString() {
      return "MemoryStats{peak=" + plannedPeakBytes + ", intermediates=" + intermediateBytes + ", buffers=" + bufferCount
          + ", inplace=" + inplaceCount + ", nodes=" + nodeCount + ", specializations=" + specializationCount
          + ", compiles=" + compileCount + ", cachedPlanBytes=" + cachedPlanBytes + "}";
    }
  }
}
