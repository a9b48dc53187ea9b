package org.oneflow;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;
import org.junit.Test;

/** The nine scenarios of bindings/BINDINGS.md (the same names in every binding). */
public class ScenariosTest {
  private static final float EPS = 1e-5f;

  // ---- 1 ------------------------------------------------------------------------------------
  @Test
  public void dtype_identity() {
    DType[] all = DType.values();
    assertEquals(10, all.length);
    try (Session s = new Session(); Graph g = s.graph("dtypes")) {
      g.beginBuild();
      int k = 0;
      for (DType d : all) {
        assertSame(d, DType.fromCode(d.code()));
        assertSame(d, DType.fromName(d.name()));
        int[] dl = d.toDlpack();
        assertSame(d, DType.fromDlpack(dl[0], dl[1], dl[2]));
        assertSame(d, DType.promote(d, d));
        try (Tensor t = s.zeros(d, 2, 3)) {
          assertSame(d, t.dtype());
          assertTrue(t.dtype() == d);
        }
        try (Tensor lazy = g.addInput("x" + k++, d, Dim.UNKNOWN, 3)) {
          assertTrue(lazy.isLazy());
          assertSame(d, lazy.dtype());
        }
      }
    }
    assertSame(DType.FLOAT32, DType.fromName("float"));
    assertSame(DType.FLOAT64, DType.fromName("double"));
    assertSame(DType.FLOAT16, DType.fromName("half"));
    assertSame(DType.INT32, DType.fromName("int"));
    assertSame(DType.INT64, DType.fromName("long"));
    assertSame(DType.INT16, DType.fromName("short"));
    assertSame(DType.INT16, DType.promote(DType.UINT8, DType.INT8));
    assertSame(DType.FLOAT32, DType.promote(DType.FLOAT16, DType.BFLOAT16));
    assertSame(DType.INT32, DType.promote(DType.BOOL, DType.INT32));
    assertSame(DType.FLOAT32, DType.fromDlpack(2, 32, 1));
    assertTrue(DType.FLOAT32.isFloatingPoint() && DType.FLOAT32.isSigned() && !DType.FLOAT32.isInteger());
    assertTrue(DType.UINT8.isInteger() && !DType.UINT8.isSigned() && !DType.BOOL.isInteger());
    assertFalse(DType.FLOAT64.isComplex());
    assertEquals(4, DType.FLOAT32.size());
    assertEquals("bfloat16", DType.BFLOAT16.toString());
    try (Session s = new Session(); Tensor i = s.tensor(new int[] {1, 2}, 2); Tensor f = s.tensor(new double[] {1, 2}, 2);
         Tensor r = i.add(f)) {
      assertSame(DType.FLOAT64, r.dtype());
    }
    NotFoundException e = assertThrows(NotFoundException.class, () -> DType.fromCode(0));
    assertEquals(5, e.code());
    NotFoundException e2 = assertThrows(NotFoundException.class, () -> DType.fromName("float33"));
    assertTrue(e2.getMessage(), e2.getMessage().contains("float33"));
    assertThrows(NotFoundException.class, () -> DType.fromDlpack(2, 32, 4));
  }

  // ---- 2 ------------------------------------------------------------------------------------
  @Test
  public void unknown_dims() {
    try (Session s = new Session()) {
      try (Graph g = s.graph("dims")) {
        g.beginBuild();
        try (Tensor x = g.addInput("x", DType.FLOAT32, Dim.UNKNOWN, 4); Tensor u = x.unsqueeze(0);
             Tensor r = u.sum(new long[] {1}, false)) {
          assertArrayEquals(new long[] {Dim.UNKNOWN, 4}, x.shape());
          assertArrayEquals(new long[] {1, Dim.UNKNOWN, 4}, u.shape());
          assertArrayEquals(new long[] {1, 4}, r.shape());
          assertTrue(u.toString(), u.toString().contains("(1, ?, 4)"));
          g.addOutput(r);
        }
        g.endBuild();
        for (int n : new int[] {1, 3, 7}) {
          try (Tensor in = s.ones(DType.FLOAT32, n, 4)) {
            Tensor[] out = g.run(in);
            assertArrayEquals(new long[] {1, 4}, out[0].shape());
            assertArrayEquals(new float[] {n, n, n, n}, out[0].toFloatArray(), EPS);
            out[0].close();
          }
        }
      }
      long n = s.dimSymbol("N"), m = s.dimSymbol("M");
      assertNotEquals(n, m);
      assertEquals(n, s.dimSymbol("N"));
      assertTrue(Dim.isSymbol(n) && !Dim.isKnown(n));
      assertFalse(Dim.isSymbol(Dim.UNKNOWN));
      assertEquals("N", Dim.symbolName(n));
      assertEquals("?", Dim.toString(Dim.UNKNOWN));
      assertEquals("(N, ?, 3)", Dim.toString(new long[] {n, Dim.UNKNOWN, 3}));
      try (Graph g = s.graph("symbols")) {
        g.beginBuild();
        try (Tensor a = g.addInput("left", DType.FLOAT32, n, 4); Tensor b = g.addInput("right", DType.FLOAT32, n, 4);
             Tensor c = a.add(b)) {
          assertTrue(a.toString(), a.toString().contains("(N, 4)"));
          g.addOutput(c);
        }
        g.endBuild();
        try (Tensor a = s.ones(DType.FLOAT32, 2, 4); Tensor b = s.ones(DType.FLOAT32, 2, 4)) {
          Tensor[] out = g.run(a, b);
          assertArrayEquals(new float[] {2, 2, 2, 2, 2, 2, 2, 2}, out[0].toFloatArray(), EPS);
          out[0].close();
        }
        try (Tensor a = s.ones(DType.FLOAT32, 2, 4); Tensor b = s.ones(DType.FLOAT32, 3, 4)) {
          InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> g.run(a, b));
          assertTrue(e.getMessage(), e.getMessage().contains("right") || e.getMessage().contains("left"));
          assertTrue(e.getMessage(), e.getMessage().contains("N"));
        }
      }
    }
  }

  // ---- 3 ------------------------------------------------------------------------------------
  @Test
  public void eager_ops() {
    try (Session s = new Session()) {
      try (Tensor a = s.tensor(new float[] {1, 2, 3, 4, 5, 6}, 2, 3); Tensor b = s.tensor(new float[] {10, 20, 30}, 3)) {
        try (Tensor c = a.add(b)) {
          assertArrayEquals(new float[] {11, 22, 33, 14, 25, 36}, c.toFloatArray(), EPS);
        }
        try (Tensor c = a.mul(b); Tensor d = c.subScalar(1).divScalar(2)) {
          assertArrayEquals(new float[] {4.5f, 19.5f, 44.5f, 19.5f, 49.5f, 89.5f}, d.toFloatArray(), EPS);
        }
        try (Tensor t = a.transpose(0, 1); Tensor mm = a.matmul(t)) {
          assertArrayEquals(new long[] {3, 2}, t.shape());
          assertArrayEquals(new float[] {1, 4, 2, 5, 3, 6}, t.toFloatArray(), EPS);
          assertArrayEquals(new float[] {14, 32, 32, 77}, mm.toFloatArray(), EPS);
        }
        try (Tensor r = a.sum(new long[] {1}, false); Tensor mean = a.mean(); Tensor mx = a.max(new long[] {0}, false);
             Tensor am = a.argmax(1, false); Tensor v = a.var(new long[] {1}, 1, true)) {
          assertArrayEquals(new float[] {6, 15}, r.toFloatArray(), EPS);
          assertEquals(3.5, mean.item(), 1e-6);
          assertArrayEquals(new float[] {4, 5, 6}, mx.toFloatArray(), EPS);
          assertSame(DType.INT64, am.dtype());
          assertArrayEquals(new long[] {2, 2}, am.toLongArray());
          assertArrayEquals(new long[] {2, 1}, v.shape());
          assertArrayEquals(new float[] {1, 1}, v.toFloatArray(), EPS);
        }
        try (Tensor r = a.reshape(new long[] {3, -1}); Tensor n = a.narrow(1, 1, 2); Tensor u = a.unsqueeze(0);
             Tensor cat = s.cat(new Tensor[] {a, a}, 0); Tensor st = s.stack(new Tensor[] {a, a}, 0);
             Tensor p = a.permute(new long[] {1, 0}); Tensor f = u.flatten(0, -1); Tensor e = b.expand(new long[] {2, 3})) {
          assertArrayEquals(new long[] {3, 2}, r.shape());
          assertArrayEquals(new float[] {2, 3, 5, 6}, n.toFloatArray(), EPS);
          assertArrayEquals(new long[] {1, 2, 3}, u.shape());
          assertArrayEquals(new long[] {4, 3}, cat.shape());
          assertArrayEquals(new long[] {2, 2, 3}, st.shape());
          assertArrayEquals(new float[] {1, 4, 2, 5, 3, 6}, p.toFloatArray(), EPS);
          assertArrayEquals(new long[] {6}, f.shape());
          assertArrayEquals(new float[] {10, 20, 30, 10, 20, 30}, e.toFloatArray(), EPS);
        }
        try (Tensor g = a.gtScalar(3); Tensor w = g.where(a, b)) {
          assertSame(DType.BOOL, g.dtype());
          assertArrayEquals(new boolean[] {false, false, false, true, true, true}, g.toBooleanArray());
          assertArrayEquals(new float[] {10, 20, 30, 4, 5, 6}, w.toFloatArray(), EPS);
        }
        String str = a.toString();
        assertTrue(str, str.contains("float32") && str.contains("(2, 3)") && str.contains("6.0"));
        // A shape mismatch names both shapes.
        try (Tensor bad = s.zeros(DType.FLOAT32, 4, 3)) {
          InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> a.add(bad));
          assertTrue(e.getMessage(), e.getMessage().contains("(2, 3)") && e.getMessage().contains("(4, 3)"));
        }
        // Copy-out checks the dtype.
        assertThrows(InvalidArgumentException.class, a::toIntArray);
      }
      // Promotion.
      try (Tensor i = s.tensor(new int[] {1, 2, 3}, 3); Tensor h = i.divScalar(2); Tensor k = i.addScalar(2);
           Tensor l = s.tensor(new long[] {1, 2, 3}, 3); Tensor il = i.add(l); Tensor sum = i.sum()) {
        assertSame(DType.FLOAT32, h.dtype());
        assertArrayEquals(new float[] {0.5f, 1, 1.5f}, h.toFloatArray(), EPS);
        assertSame(DType.INT32, k.dtype());
        assertArrayEquals(new int[] {3, 4, 5}, k.toIntArray());
        assertSame(DType.INT64, il.dtype());
        assertSame(DType.INT64, sum.dtype());
        assertEquals(6, sum.item(), 0);
      }
      // conv2d: a 3x3 image, a 2x2 kernel of ones.
      try (Tensor x = s.tensor(new float[] {1, 2, 3, 4, 5, 6, 7, 8, 9}, 1, 1, 3, 3); Tensor w = s.ones(DType.FLOAT32, 1, 1, 2, 2);
           Tensor bias = s.tensor(new float[] {1}, 1); Tensor y = x.conv2d(w); Tensor yb = x.conv2d(w, bias);
           Tensor yp = x.conv2d(w, null, new Conv2dOptions().padding(1))) {
        assertArrayEquals(new long[] {1, 1, 2, 2}, y.shape());
        assertArrayEquals(new float[] {12, 16, 24, 28}, y.toFloatArray(), EPS);
        assertArrayEquals(new float[] {13, 17, 25, 29}, yb.toFloatArray(), EPS);
        assertArrayEquals(new long[] {1, 1, 4, 4}, yp.shape());
      }
      // Every array type in and out, and a direct buffer without a copy.
      try (Tensor t = s.tensor(new double[] {1.5, -2}, 2)) {
        assertArrayEquals(new double[] {1.5, -2}, t.toDoubleArray(), 0);
      }
      try (Tensor t = s.tensor(new long[] {Long.MAX_VALUE, -1}, 2)) {
        assertArrayEquals(new long[] {Long.MAX_VALUE, -1}, t.toLongArray());
      }
      try (Tensor t = s.tensor(new byte[] {-128, 127}, 2); Tensor u = s.tensor(DType.UINT8, new byte[] {(byte) 255, 1}, 2)) {
        assertSame(DType.INT8, t.dtype());
        assertArrayEquals(new byte[] {-128, 127}, t.toByteArray());
        assertTrue(u.toString(), u.toString().contains("255"));
      }
      try (Tensor t = s.tensor(new short[] {-3, 300}, 2); Tensor h = s.tensor(DType.FLOAT16, new short[] {0x3c00, (short) 0xc000}, 2);
           Tensor hf = h.cast(DType.FLOAT32)) {
        assertArrayEquals(new short[] {-3, 300}, t.toShortArray());
        assertArrayEquals(new float[] {1, -2}, hf.toFloatArray(), 0);
        assertArrayEquals(new short[] {0x3c00, (short) 0xc000}, h.toShortArray());
      }
      try (Tensor t = s.tensor(new boolean[] {true, false, true}, 3); Tensor n = t.logicalNot()) {
        assertArrayEquals(new boolean[] {false, true, false}, n.toBooleanArray());
      }
      ByteBuffer buf = ByteBuffer.allocateDirect(12).order(ByteOrder.nativeOrder());
      buf.asFloatBuffer().put(new float[] {1, 2, 3});
      try (Tensor t = s.fromBuffer(DType.FLOAT32, buf, 3); Tensor d = t.mulScalar(2)) {
        assertArrayEquals(new float[] {2, 4, 6}, d.toFloatArray(), EPS);
        buf.putFloat(0, 10); // no copy: the tensor sees the buffer
        assertEquals(10, t.toFloatArray()[0], 0);
      }
      assertThrows(InvalidArgumentException.class, () -> s.tensor(DType.FLOAT32, new int[] {1}, 1));
    }
  }

  // ---- 4 ------------------------------------------------------------------------------------
  @Test
  public void autograd() throws Exception {
    try (Session s = new Session(); Tensor x = s.tensor(new float[] {1, 2, 3}, 3).setRequiresGrad(true)) {
      assertTrue(x.isLeaf() && x.requiresGrad());
      assertNull(x.grad());
      try (Tensor sq = x.mul(x); Tensor lin = x.mulScalar(3); Tensor sum = sq.add(lin); Tensor y = sum.sum()) {
        assertTrue(y.requiresGrad());
        assertFalse(y.isLeaf());
        y.backward();
      }
      try (Tensor g = x.grad()) {
        assertArrayEquals(new float[] {5, 7, 9}, g.toFloatArray(), EPS); // d/dx (x^2 + 3x) = 2x + 3
      }
      // Accumulates; cleared by setGrad(null).
      try (Tensor y = x.exp().sum()) {
        y.backward();
      }
      try (Tensor g = x.grad()) {
        assertEquals(5 + Math.exp(1), g.toFloatArray()[0], 1e-4);
      }
      x.setGrad(null);
      assertNull(x.grad());
      try (NoGrad ng = NoGrad.enter(); Tensor z = x.mulScalar(2)) {
        assertFalse(NoGrad.isGradEnabled());
        assertFalse(z.requiresGrad());
        // Grad mode is per thread: another thread still records.
        ExecutorService other = Executors.newSingleThreadExecutor();
        assertTrue(other.submit(NoGrad::isGradEnabled).get());
        other.shutdown();
      }
      assertTrue(NoGrad.isGradEnabled());
      try (Tensor d = x.detach(); Tensor z = d.mulScalar(2)) {
        assertFalse(d.requiresGrad());
        assertTrue(d.isLeaf());
        assertFalse(z.requiresGrad());
        assertArrayEquals(new float[] {1, 2, 3}, d.toFloatArray(), 0);
      }
      // An explicit gradient and a retained graph.
      try (Tensor y = x.mul(x); Tensor gy = s.tensor(new float[] {1, 0, 2}, 3)) {
        y.backward(gy, true);
        y.backward(gy, false);
        assertThrows(FailedPreconditionException.class, () -> y.backward(gy, false));
      }
      try (Tensor g = x.grad()) {
        assertArrayEquals(new float[] {4, 0, 24}, g.toFloatArray(), EPS); // twice 2x * gy
      }
    }
  }

  // ---- 5 ------------------------------------------------------------------------------------
  private static final int N = 16;

  private static Map<String, Tensor> params(Session s) {
    Random r = new Random(7);
    Map<String, Tensor> p = new LinkedHashMap<>();
    p.put("w1", s.tensor(randoms(r, 8 * 4, 0.5), 8, 4).setRequiresGrad(true));
    p.put("b1", s.tensor(randoms(r, 8, 0.1), 8).setRequiresGrad(true));
    p.put("w2", s.tensor(randoms(r, 3 * 8, 0.5), 3, 8).setRequiresGrad(true));
    p.put("b2", s.tensor(randoms(r, 3, 0.1), 3).setRequiresGrad(true));
    return p;
  }

  private static float[] randoms(Random r, int n, double scale) {
    float[] v = new float[n];
    for (int i = 0; i < n; ++i) v[i] = (float) (r.nextGaussian() * scale);
    return v;
  }

  private static Tensor loss(Map<String, Tensor> p, Tensor x, Tensor y) {
    try (Tensor h = x.linear(p.get("w1"), p.get("b1")); Tensor a = h.relu(); Tensor logits = a.linear(p.get("w2"), p.get("b2"))) {
      return logits.crossEntropy(y);
    }
  }

  private static float[] train(boolean lazy, Function<Tensor[], Optimizer> make, Session s, Map<String, Tensor> p) {
    Random r = new Random(11);
    float[] losses = new float[5];
    try (Tensor x = s.tensor(randoms(r, N * 4, 1), N, 4);
         Tensor y = s.tensor(new long[] {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, N);
         Optimizer opt = make.apply(p.values().toArray(new Tensor[0]))) {
      if (!lazy) {
        for (int i = 0; i < losses.length; ++i) {
          opt.zeroGrad();
          try (Tensor l = loss(p, x, y)) {
            l.backward();
            losses[i] = l.toFloatArray()[0];
          }
          opt.step();
        }
      } else {
        try (Graph g = s.graph("train")) {
          g.beginBuild();
          try (Tensor gx = g.addInput("x", DType.FLOAT32, Dim.UNKNOWN, 4); Tensor gy = g.addInput("y", DType.INT64, Dim.UNKNOWN);
               Tensor l = loss(p, gx, gy)) {
            l.backward();
            g.addOptimizer(opt);
            g.addOutput(l);
          }
          g.endBuild();
          for (int i = 0; i < losses.length; ++i) {
            Tensor[] out = g.run(x, y);
            losses[i] = out[0].toFloatArray()[0];
            out[0].close();
          }
        }
      }
    }
    return losses;
  }

  @Test
  public void training() throws Exception {
    try (Session s = new Session()) {
      List<Function<Tensor[], Optimizer>> optimizers = new ArrayList<>();
      optimizers.add(ps -> s.sgd(ps, new SgdOptions().lr(0.1).momentum(0.9)));
      optimizers.add(ps -> s.adam(ps, new AdamOptions().lr(0.01)));
      optimizers.add(ps -> s.adamW(ps, null));
      for (Function<Tensor[], Optimizer> make : optimizers) {
        Map<String, Tensor> eagerParams = params(s), lazyParams = params(s);
        float[] eager = train(false, make, s, eagerParams);
        float[] lazy = train(true, make, s, lazyParams);
        assertArrayEquals(eager, lazy, 1e-4f);
        assertTrue(java.util.Arrays.toString(eager), eager[4] < eager[0]);
        // The graph updated the eager parameters in place, as the eager steps did.
        assertArrayEquals(eagerParams.get("w2").toFloatArray(), lazyParams.get("w2").toFloatArray(), 1e-4f);
        for (Tensor t : eagerParams.values()) t.close();
        for (Tensor t : lazyParams.values()) t.close();
      }
      // safetensors round trip.
      Map<String, Tensor> p = params(s);
      File f = File.createTempFile("oneflow-java", ".safetensors");
      try {
        SafeTensors.save(f.getPath(), p);
        Map<String, Tensor> back = s.loadSafetensors(f.getPath());
        assertEquals(new ArrayList<>(p.keySet()), new ArrayList<>(back.keySet()));
        for (String k : p.keySet()) {
          assertArrayEquals(p.get(k).toFloatArray(), back.get(k).toFloatArray(), 0);
          assertArrayEquals(p.get(k).shape(), back.get(k).shape());
        }
        Map<String, Tensor> zeros = new LinkedHashMap<>();
        for (Map.Entry<String, Tensor> e : p.entrySet()) zeros.put(e.getKey(), s.zeros(DType.FLOAT32, e.getValue().shape()));
        SafeTensors.loadInto(f.getPath(), zeros, true);
        for (String k : p.keySet()) assertArrayEquals(p.get(k).toFloatArray(), zeros.get(k).toFloatArray(), 0);
        for (Tensor t : back.values()) t.close();
        for (Tensor t : zeros.values()) t.close();
      } finally {
        Files.deleteIfExists(f.toPath());
        for (Tensor t : p.values()) t.close();
      }
    }
  }

  // ---- 6 ------------------------------------------------------------------------------------
  @Test
  public void lazy_graph_free_tensor() throws Exception {
    float[] maskValues = {1, 0, 1, 1};
    try (Session s = new Session()) {
      long releasedBefore = Library.releasedBufferCount();
      Graph g = s.graph("seed_case");
      g.beginBuild();
      try (Tensor x = g.addInput("x", DType.FLOAT32, Dim.UNKNOWN, 4)) {
        ByteBuffer mb = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
        mb.asFloatBuffer().put(maskValues);
        try (Tensor mask = s.fromBuffer(DType.FLOAT32, mb, 4); // made inside the build: eager, a free tensor
             Tensor gt = x.gtScalar(0.5); Tensor gtf = gt.cast(DType.FLOAT32); Tensor out = gtf.mul(mask)) {
          assertFalse(mask.isLazy());
          assertTrue(out.isLazy());
          assertThrows(FailedPreconditionException.class, out::toFloatArray);
          g.addOutput(out);
        }
      }
      g.endBuild();
      List<String> free = g.freeTensorNames();
      assertTrue(free.toString(), free.size() >= 2); // the scalar 0.5 and the mask
      Random r = new Random(3);
      for (int n : new int[] {1, 3, 5, 2}) {
        float[] in = new float[n * 4];
        for (int i = 0; i < in.length; ++i) in[i] = r.nextFloat();
        try (Tensor t = s.tensor(in, n, 4)) {
          Tensor[] out = g.run(t);
          float[] got = out[0].toFloatArray();
          out[0].close();
          for (int i = 0; i < in.length; ++i) assertEquals((in[i] > 0.5f ? 1 : 0) * maskValues[i % 4], got[i], 0);
        }
      }
      assertTrue(g.dump().contains("seed_case") || g.dump().length() > 0);
      // The mask is held for the graph by the session: its buffer comes back only when the graph goes.
      assertEquals(releasedBefore, Library.releasedBufferCount());
      g.close();
      g.close();
      assertEquals(releasedBefore + 1, Library.releasedBufferCount());
      assertThrows(IllegalStateException.class, g::outputCount);
    }
  }

  // ---- 7 ------------------------------------------------------------------------------------
  @Test
  public void errors() throws Exception {
    try (Session s = new Session()) {
      List<OneflowException> seen = new ArrayList<>();
      seen.add(assertThrows(NotFoundException.class, () -> DType.fromCode(0)));
      try (Tensor a = s.zeros(DType.FLOAT32, 2, 3); Tensor b = s.zeros(DType.FLOAT32, 4, 3)) {
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> a.add(b));
        assertTrue(e.getMessage(), e.getMessage().contains("add"));
        seen.add(e);
        InvalidArgumentException pool = assertThrows(InvalidArgumentException.class, () -> a.maxPool2d(new Pool2dOptions()));
        seen.add(pool);
        InvalidArgumentException view = assertThrows(InvalidArgumentException.class, () -> a.reshape(new long[] {7}));
        seen.add(view);
        OutOfRangeException dims = assertThrows(OutOfRangeException.class, () -> s.zeros(DType.FLOAT32, 1L << 62, 1L << 62, 4));
        seen.add(dims);
      }
      InvalidArgumentException sym = assertThrows(InvalidArgumentException.class, () -> s.dimSymbol("9lives"));
      assertTrue(sym.getMessage(), sym.getMessage().contains("9lives"));
      seen.add(sym);
      String missing = "/nonexistent/oneflow-java-missing.safetensors";
      NotFoundException nf = assertThrows(NotFoundException.class, () -> s.loadSafetensors(missing));
      assertTrue(nf.getMessage(), nf.getMessage().contains(missing));
      seen.add(nf);
      try (Graph g = s.graph("unbuilt")) {
        seen.add(assertThrows(FailedPreconditionException.class, () -> g.run()));
      }
      try (Tensor p = s.zeros(DType.FLOAT32, 2).setRequiresGrad(true); Optimizer opt = s.sgd(new Tensor[] {p}, null)) {
        InvalidArgumentException lr = assertThrows(InvalidArgumentException.class, () -> opt.setLr(-1));
        assertTrue(lr.getMessage(), lr.getMessage().contains("lr"));
        seen.add(lr);
        assertEquals(0.001, opt.lr(), 1e-12); // failed calls change nothing
      }
      try (Tensor i = s.zeros(DType.INT32, 2)) {
        InvalidArgumentException rg = assertThrows(InvalidArgumentException.class, () -> i.setRequiresGrad(true));
        seen.add(rg);
      }
      for (OneflowException e : seen) {
        assertTrue(e.toString(), e.getMessage() != null && !e.getMessage().isEmpty());
        assertEquals(e.code(), OneflowException.of(e.code(), "x").code());
        System.out.println(e);
      }
      // An unknown code keeps its number.
      OneflowException unknown = OneflowException.of(99, "from the future");
      assertEquals(99, unknown.code());
      assertEquals("UNRECOGNIZED", unknown.codeName());
      assertSame(OneflowException.class, unknown.getClass());
      assertEquals("INVALID_ARGUMENT", new InvalidArgumentException("m").codeName());
    }
  }

  // ---- 8 ------------------------------------------------------------------------------------
  private static long rss() throws Exception {
    String[] f = new String(Files.readAllBytes(new File("/proc/self/statm").toPath())).trim().split(" ");
    return Long.parseLong(f[1]) * 4096;
  }

  @Test
  public void close_stress() throws Exception {
    try (Session s = new Session(new SessionOptions().numThreads(1))) {
      final int warmup = 200_000, measured = 800_000;
      long sink = 0;
      long t0 = System.nanoTime();
      for (int i = 0; i < warmup; ++i) {
        try (Tensor t = s.full(DType.FLOAT32, i, 4)) {
          sink += t.numel();
        }
      }
      System.gc();
      long before = rss();
      for (int i = 0; i < measured; ++i) {
        try (Tensor t = s.full(DType.FLOAT32, i, 4)) {
          sink += t.numel();
        }
      }
      System.gc();
      long after = rss();
      double secs = (System.nanoTime() - t0) * 1e-9;
      System.out.printf("close_stress: %d cycles in %.1f s (%.2f us each); RSS %.1f -> %.1f MiB (%+.2f MiB)%n",
          warmup + measured, secs, secs * 1e6 / (warmup + measured), before / 1048576.0, after / 1048576.0,
          (after - before) / 1048576.0);
      assertEquals(4L * (warmup + measured), sink);
      assertTrue("resident memory grew by " + (after - before) + " bytes", after - before < 4L << 20);

      // Double close is safe; use after close is a clear error.
      Tensor t = s.ones(DType.FLOAT32, 2);
      t.close();
      t.close();
      assertTrue(t.isClosed());
      assertThrows(IllegalStateException.class, t::numel);
      assertThrows(IllegalStateException.class, () -> t.addScalar(1));
      assertEquals("Tensor(closed)", t.toString());

      // Objects left to the Cleaner are released: 100,000 adopted buffers come back through the deleter.
      final int abandoned = 100_000;
      long released0 = Library.releasedBufferCount(), adopted0 = Library.adoptedBufferCount();
      ByteBuffer big = ByteBuffer.allocateDirect(abandoned * 4).order(ByteOrder.nativeOrder());
      for (int i = 0; i < abandoned; ++i) {
        ByteBuffer slice = big.position(i * 4).limit(i * 4 + 4).slice();
        big.clear();
        s.fromBuffer(DType.FLOAT32, slice, 1); // abandoned
      }
      assertEquals(adopted0 + abandoned, Library.adoptedBufferCount());
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (Library.releasedBufferCount() - released0 < abandoned && System.nanoTime() < deadline) {
        System.gc();
        Thread.sleep(20);
      }
      assertEquals(abandoned, Library.releasedBufferCount() - released0);
    }
    // After Session.close, tensors made from it keep working; the native session goes with the last one.
    Session s2 = new Session();
    Tensor kept = s2.ones(DType.FLOAT32, 3);
    s2.close();
    s2.close();
    assertThrows(IllegalStateException.class, () -> s2.zeros(DType.FLOAT32, 1));
    assertEquals(1, s2.nativeReferences());
    try (Tensor k2 = kept.addScalar(1)) {
      assertEquals(2, s2.nativeReferences());
      assertArrayEquals(new float[] {2, 2, 2}, k2.toFloatArray(), 0);
    }
    kept.close();
    assertEquals(0, s2.nativeReferences());
  }

  // ---- 9 ------------------------------------------------------------------------------------
  @Test
  public void threads() throws Exception {
    try (Session s = new Session(); Tensor w = s.tensor(new float[] {2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2}, 4, 4);
         Graph g = s.graph("shared")) {
      g.beginBuild();
      try (Tensor x = g.addInput("x", DType.FLOAT32, Dim.UNKNOWN, 4); Tensor y = x.matmul(w); Tensor z = y.addScalar(1)) {
        g.addOutput(z);
      }
      g.endBuild();
      final int threads = 4, iterations = 150;
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      List<Future<Integer>> results = new ArrayList<>();
      for (int t = 0; t < threads; ++t) {
        final int id = t;
        results.add(pool.submit(() -> {
          int checked = 0;
          for (int i = 0; i < iterations; ++i) {
            float v = id * 1000 + i;
            int rows = 1 + (i + id) % 3;
            try (Tensor a = s.full(DType.FLOAT32, v, rows, 4); Tensor m = a.matmul(w); Tensor sum = m.sum()) {
              if (Math.abs(sum.item() - 8.0 * v * rows) > 1e-3 * Math.max(1, v * rows)) fail("eager result " + sum.item());
            }
            try (Tensor a = s.full(DType.FLOAT32, v, rows, 4)) {
              Tensor[] out = g.run(a);
              float[] got = out[0].toFloatArray();
              out[0].close();
              if (got.length != rows * 4) fail("graph result size " + got.length);
              for (float f : got) {
                if (Math.abs(f - (2 * v + 1)) > 1e-3 * Math.max(1, v)) fail("graph result " + f);
              }
            }
            ++checked;
          }
          return checked;
        }));
      }
      int total = 0;
      for (Future<Integer> f : results) total += f.get();
      pool.shutdown();
      assertEquals(threads * iterations, total);
    }
  }
}
