package org.oneflow;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.After;
import org.junit.Test;

/**
 * Process groups, collectives and data-parallel graphs in one process: a group of world size 1 in a
 * fresh temporary rendezvous directory (groups of several processes are the library's tests,
 * tests/dist/).
 */
public class ProcessGroupTest {
  private final java.util.List<Path> dirs = new java.util.ArrayList<>();

  private Path tempDir() throws IOException {
    Path d = Files.createTempDirectory("oneflow-java-pg");
    dirs.add(d);
    return d;
  }

  @After
  public void removeDirs() throws IOException {
    for (Path d : dirs) {
      try (Stream<Path> all = Files.walk(d)) {
        all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private ProcessGroup oneRank() throws IOException {
    return new ProcessGroup(new ProcessGroupOptions().rendezvous(tempDir().toString()).timeoutMs(10000));
  }

  private static <T extends OneflowException> T expect(Class<T> type, int code, org.junit.function.ThrowingRunnable r,
      String... words) {
    T e = assertThrows(type, r);
    assertEquals(e.toString(), code, e.code());
    for (String w : words) assertTrue("'" + e.getMessage() + "' should name '" + w + "'", e.getMessage().contains(w));
    return e;
  }

  @Test
  public void optionsDefaultsComeFromTheLibrary() {
    ProcessGroupOptions o = new ProcessGroupOptions();
    assertEquals(0, o.rank());
    assertEquals(1, o.worldSize());
    assertEquals(30000, o.timeoutMs());
    assertNull(o.rendezvous());
    assertNull(o.host());
    assertEquals("/x", o.rendezvous("/x").rendezvous());
    DataParallelOptions d = new DataParallelOptions();
    assertEquals(25L << 20, d.bucketBytes());
    assertFalse(d.syncBatchNormStats());
  }

  @Test
  public void oneRankCollectives() throws Exception {
    float[] v = {1.5f, -2, 3, 0.25f, 8, -1};
    try (ProcessGroup g = oneRank(); Session s = new Session(); Tensor x = s.tensor(v, 2, 3)) {
      assertEquals(0, g.rank());
      assertEquals(1, g.worldSize());
      assertEquals("ProcessGroup(rank 0 of 1)", g.toString());
      g.barrier();
      for (ReduceOp op : ReduceOp.values()) {
        try (Tensor y = g.allReduce(x, op)) {
          assertArrayEquals(new long[] {2, 3}, y.shape());
          assertArrayEquals(op.toString(), v, y.toFloatArray(), 0f);
        }
      }
      try (Tensor ints = s.tensor(new long[] {7, -8, 9}, 3); Tensor y = g.allReduce(ints, ReduceOp.SUM)) {
        assertArrayEquals(new long[] {7, -8, 9}, y.toLongArray());
      }
      try (Tensor b = g.broadcast(x, 0)) {
        assertArrayEquals(new long[] {2, 3}, b.shape());
        assertArrayEquals(v, b.toFloatArray(), 0f);
      }
      try (Tensor a = g.allGather(x)) {
        assertArrayEquals(new long[] {1, 2, 3}, a.shape());
        assertSame(DType.FLOAT32, a.dtype());
        assertArrayEquals(v, a.toFloatArray(), 0f);
      }
    }
  }

  @Test
  public void reduceOpIsAnOpenSet() throws Exception {
    // A value this binding does not name survives as its number; the library refuses it.
    ReduceOp unknown = ReduceOp.of(42);
    assertEquals(42, unknown.value());
    assertFalse(unknown.isNamed());
    assertEquals("ReduceOp(42)", unknown.toString());
    assertEquals(unknown, ReduceOp.of(42));
    assertNotSame(unknown, ReduceOp.of(42));
    assertSame(ReduceOp.MAX, ReduceOp.of(2));
    assertSame(ReduceOp.MIN, ReduceOp.valueOf("MIN"));
    assertEquals(4, ReduceOp.values().length);
    try (ProcessGroup g = oneRank(); Session s = new Session(); Tensor x = s.tensor(new float[] {1, 2}, 2)) {
      expect(InvalidArgumentException.class, 3, () -> g.allReduce(x, unknown), "op", "42");
    }
  }

  @Test
  public void errors() throws Exception {
    Path dir = tempDir();
    // A rank outside [0, worldSize).
    expect(InvalidArgumentException.class, 3,
        () -> new ProcessGroup(new ProcessGroupOptions().rank(1).worldSize(1).rendezvous(dir.toString())),
        "rank must be in [0, world_size = 1)", "got 1");
    // A rendezvous directory that cannot be written (its parent is a file).
    Path file = Files.writeString(dir.resolve("a-file"), "x");
    String bad = file.resolve("sub").toString();
    expect(InvalidArgumentException.class, 3, () -> new ProcessGroup(new ProcessGroupOptions().rendezvous(bad)), bad,
        "is not a writable directory");
    // No rendezvous (null options are the defaults), and one that cannot be passed to C.
    expect(InvalidArgumentException.class, 3, () -> new ProcessGroup(null), "rendezvous");
    assertThrows(IllegalArgumentException.class, () -> new ProcessGroup(new ProcessGroupOptions().rendezvous("a\0b")));
    // Collectives: a root out of range, a bool all_reduce, mean of integers; a closed group.
    ProcessGroup g = oneRank();
    try (Session s = new Session(); Tensor x = s.tensor(new float[] {1, 2}, 2);
         Tensor flags = s.tensor(new boolean[] {true, false}, 2); Tensor ints = s.tensor(new int[] {1, 2}, 2)) {
      expect(InvalidArgumentException.class, 3, () -> g.broadcast(x, 1), "root must be a rank in [0, 1)", "got 1");
      expect(InvalidArgumentException.class, 3, () -> g.allReduce(flags, ReduceOp.SUM), "bool");
      expect(InvalidArgumentException.class, 3, () -> g.allReduce(ints, ReduceOp.MEAN), "mean needs a floating x");
      assertThrows(NullPointerException.class, () -> g.allGather(null));
      g.close();
      g.close();
      assertTrue(g.isClosed());
      assertThrows(IllegalStateException.class, () -> g.allGather(x));
      assertThrows(IllegalStateException.class, g::rank);
    }
  }

  /** A linear regression trained by a graph: its parameters, optimizer and graph. */
  private static final class Trainer implements AutoCloseable {
    final Tensor w, b;
    final Optimizer opt;
    final Graph graph;

    Trainer(Session s) {
      w = s.tensor(new float[] {0.1f, -0.2f, 0.3f}, 1, 3).setRequiresGrad(true);
      b = s.zeros(DType.FLOAT32, 1).setRequiresGrad(true);
      opt = s.sgd(new Tensor[] {w, b}, new SgdOptions().lr(0.1).momentum(0.9));
      graph = s.graph("dp_train");
      graph.beginBuild();
      try (Tensor gx = graph.addInput("x", DType.FLOAT32, Dim.UNKNOWN, 3);
           Tensor gy = graph.addInput("y", DType.FLOAT32, Dim.UNKNOWN, 1); Tensor h = gx.linear(w, b);
           Tensor d = h.sub(gy); Tensor sq = d.mul(d); Tensor loss = sq.mean(new long[0], false)) {
        loss.backward();
        graph.addOptimizer(opt);
        graph.addOutput(loss);
      }
      graph.endBuild();
    }

    float[] losses(Session s, int steps) {
      float[] out = new float[steps];
      try (Tensor x = s.tensor(new float[] {1, 0, 2, -1, 1, 0.5f, 0, 2, -1, 3, 1, 1}, 4, 3);
           Tensor y = s.tensor(new float[] {1, -0.5f, 2, 0}, 4, 1)) {
        for (int i = 0; i < steps; ++i) {
          Tensor[] r = graph.run(x, y);
          out[i] = r[0].toFloatArray()[0];
          r[0].close();
        }
      }
      return out;
    }

    @Override
    public void close() {
      graph.close();
      opt.close();
      w.close();
      b.close();
    }
  }

  @Test
  public void dataParallelTrainingStep() throws Exception {
    try (Session s = new Session(); Trainer plain = new Trainer(s); Trainer dp = new Trainer(s);
         ProcessGroup g = oneRank()) {
      float[] want = plain.losses(s, 4);
      assertTrue(java.util.Arrays.toString(want), want[3] < want[0]);
      dp.graph.setDataParallel(g, new DataParallelOptions().bucketBytes(8));
      // One rank: averaging over the ranks changes nothing.
      assertArrayEquals(want, dp.losses(s, 4), 0f);
      assertArrayEquals(plain.w.toFloatArray(), dp.w.toFloatArray(), 0f);
      // Only before the first run, and only for a training graph.
      expect(FailedPreconditionException.class, 9, () -> dp.graph.setDataParallel(g), "already run");
      try (Graph inference = s.graph("no_optimizer")) {
        inference.beginBuild();
        try (Tensor x = inference.addInput("x", DType.FLOAT32, 2); Tensor y = x.relu()) {
          inference.addOutput(y);
        }
        inference.endBuild();
        expect(FailedPreconditionException.class, 9, () -> inference.setDataParallel(g, null), "no optimizer");
      }
    }
  }

  @Test
  public void groupAndGraphCloseOrGcInAnyOrder() throws Exception {
    try (Session s = new Session()) {
      // The group first: the data-parallel graph keeps it alive and keeps training.
      try (Trainer t = new Trainer(s)) {
        ProcessGroup g = oneRank();
        t.graph.setDataParallel(g);
        g.close();
        float[] l = t.losses(s, 3);
        assertTrue(java.util.Arrays.toString(l), l[2] < l[0]);
      }
      // The graph first.
      try (ProcessGroup g = oneRank()) {
        Trainer t = new Trainer(s);
        t.graph.setDataParallel(g);
        t.losses(s, 1);
        t.close();
        g.barrier();
      }
      // A group left to the Cleaner while its data-parallel graph trains on.
      try (Trainer t = new Trainer(s)) {
        t.graph.setDataParallel(oneRank());
        for (int i = 0; i < 3; ++i) System.gc();
        t.losses(s, 2);
      }
      // A graph that traced collectives needs its group when it runs: once the Cleaner has released a
      // group left unclosed, the run fails.
      try (Graph gg = s.graph("gather"); Tensor in = s.tensor(new float[] {3, 4}, 1, 2)) {
        traceAndRunCollectives(gg, in); // with a group it leaves unclosed and unreachable
        FailedPreconditionException failed = null;
        for (int i = 0; i < 200 && failed == null; ++i) {
          System.gc();
          Thread.sleep(10);
          try {
            gg.run(in)[0].close();
          } catch (FailedPreconditionException e) {
            failed = e;
          }
        }
        assertTrue("the Cleaner should have released the group", failed != null);
        assertTrue(failed.getMessage(), failed.getMessage().contains("destroyed"));
      }
    }
  }

  /** Builds gg as allGather(allReduce(x)) over a new group, runs it once, and drops the group unclosed. */
  private void traceAndRunCollectives(Graph gg, Tensor in) throws IOException {
    ProcessGroup group = oneRank();
    gg.beginBuild();
    try (Tensor x = gg.addInput("x", DType.FLOAT32, Dim.UNKNOWN, 2); Tensor r = group.allReduce(x, ReduceOp.SUM);
         Tensor a = group.allGather(r)) {
      gg.addOutput(a);
    }
    gg.endBuild();
    Tensor[] out = gg.run(in);
    assertArrayEquals(new long[] {1, 1, 2}, out[0].shape());
    assertArrayEquals(new float[] {3, 4}, out[0].toFloatArray(), 0f);
    out[0].close();
  }
}
