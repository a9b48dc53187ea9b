package org.oneflow;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.Test;

/** The rest of the API surface: versions, the op registry, options defaults, creation and initialisers. */
public class ApiTest {
  @Test
  public void dlpackRoundTripSharesMemory() {
    try (Session s = new Session(); Tensor x = s.tensor(new float[] {1, 2, 3, 4}, 2, 2)) {
      try (Tensor back = s.fromDlpack(x.toDlpack())) {
        assertSame(DType.FLOAT32, back.dtype());
        back.initConstant(9);
        assertArrayEquals(new float[] {9, 9, 9, 9}, x.toFloatArray(), 0f);
      }
      try (Tensor back = s.fromDlpackLegacy(x.toDlpackLegacy())) {
        back.initConstant(1);
        assertArrayEquals(new float[] {1, 1, 1, 1}, x.toFloatArray(), 0f);
      }
      assertThrows(InvalidArgumentException.class, () -> s.fromDlpack(0));
    }
  }

  @Test
  public void asByteBufferIsAViewOfTheTensor() {
    try (Session s = new Session()) {
      ByteBuffer bytes;
      try (Tensor x = s.tensor(new float[] {1, 2, 3, 4}, 2, 2)) {
        bytes = x.asByteBuffer();
        assertEquals(16, bytes.capacity());
        assertEquals(3f, bytes.getFloat(8), 0f);
        bytes.putFloat(0, 10f);                 // a write through the buffer is the tensor's
        assertEquals(10f, x.toFloatArray()[0], 0f);
        x.initConstant(7);                      // and the tensor's writes are the buffer's
        try (Tensor t = x.transpose(0, 1)) {
          assertThrows(IllegalStateException.class, t::asByteBuffer);
        }
      }
      assertEquals(7f, bytes.getFloat(12), 0f); // the memory outlives the closed tensor
      try (Tensor empty = s.zeros(DType.INT32, 0, 3)) {
        assertEquals(0, empty.asByteBuffer().capacity());
      }
    }
  }

  @Test
  public void autocastRunsLinearInBfloat16AndSoftmaxInFloat32() {
    try (Session s = new Session();
         Tensor x = s.tensor(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
         Tensor w = s.tensor(new float[] {1, 1, 1}, 1, 3);
         Tensor b = s.tensor(new float[] {0.5f}, 1)) {
      assertEquals(null, Autocast.dtype());
      try (Autocast ac = Autocast.enter(DType.BFLOAT16)) {
        assertSame(DType.BFLOAT16, Autocast.dtype());
        try (Tensor y = x.linear(w, b); Tensor y32 = y.cast(DType.FLOAT32); Tensor p = y.softmax(0)) {
          assertSame(DType.BFLOAT16, y.dtype());
          assertArrayEquals(new float[] {6.5f, 15.5f}, y32.toFloatArray(), 0f);
          assertSame(DType.FLOAT32, p.dtype());
        }
        assertThrows(InvalidArgumentException.class, () -> Autocast.set(DType.FLOAT32));
        assertSame(DType.BFLOAT16, Autocast.dtype());  // the refused call changed nothing
      }
      assertEquals(null, Autocast.dtype());
      try (Tensor y = x.linear(w, b)) {
        assertSame(DType.FLOAT32, y.dtype());
      }
    }
  }

  @Test
  public void lossScalingUnscalesFiniteStepsAndSkipsInfOnes() {
    try (Session s = new Session();
         Tensor p = s.tensor(new float[] {1, -2}, 2).setRequiresGrad(true);
         Optimizer opt = s.sgd(new Tensor[] {p}, new SgdOptions().lr(0.5))) {
      assertEquals(1.0, opt.lossScale(), 0.0);
      assertThrows(FailedPreconditionException.class, () -> opt.scaleLoss(p));
      assertThrows(InvalidArgumentException.class,
                   () -> opt.enableLossScaling(new LossScaleOptions().growthInterval(0)));
      opt.enableLossScaling(new LossScaleOptions().initScale(1024).growthInterval(2));
      float[][] xs = {{0.5f, 1}, {Float.POSITIVE_INFINITY, 1}};
      float[][] want = {{0.75f, -2.5f}, {0.75f, -2.5f}};  // p -= 0.5 x; then skipped
      double[] scales = {1024, 512};
      for (int step = 0; step < 2; ++step) {
        opt.zeroGrad();
        try (Tensor x = s.tensor(xs[step], 2); Tensor xp = x.mul(p); Tensor loss = xp.sum();
             Tensor scaled = opt.scaleLoss(loss)) {
          scaled.backward();
        }
        opt.step();
        assertArrayEquals(want[step], p.toFloatArray(), 0f);
        assertEquals(scales[step], opt.lossScale(), 0.0);
        assertEquals(step, opt.skippedSteps());
      }
      assertThrows(FailedPreconditionException.class, () -> opt.enableLossScaling(null));
    }
  }

  @Test
  public void opsWithSeveralResultsReturnThemInOrder() {
    try (Session s = new Session(); Tensor x = s.tensor(new float[] {3, 1, 4, 1.5f, 9}, 5)) {
      Tensor[] topk = x.topk(2, 0, true, true);
      try (Tensor values = topk[0]; Tensor indices = topk[1]) {
        assertEquals(2, topk.length);
        assertArrayEquals(new float[] {9, 4}, values.toFloatArray(), 0f);
        assertSame(DType.INT64, indices.dtype());
        assertArrayEquals(new long[] {4, 2}, indices.toLongArray());
      }
      Tensor[] sorted = x.sort(0, false);
      try (Tensor values = sorted[0]; Tensor order = sorted[1]) {
        assertArrayEquals(new long[] {1, 3, 0, 2, 4}, order.toLongArray());
      }
      assertThrows(InvalidArgumentException.class, () -> x.topk(6, 0, true, true));
    }
  }

  @Test
  public void library() {
    assertEquals(Library.headerAbiVersion(), Library.abiVersion());
    int[] v = Library.version();
    assertEquals(v[0] + "." + v[1] + "." + v[2], Library.versionString());
    Library.cudaIsBuilt();
    assertTrue(Library.opNames().contains("add"));
    assertTrue(Library.opNames().contains("conv2d"));
  }

  @Test
  public void devicesCopiesAndMemoryCounters() {
    try (Session s = new Session()) {
      Library.DeviceMemoryStats before = Library.deviceMemoryStats(Library.DEVICE_CPU, 0), during = before;
      try (Tensor x = s.tensor(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
          Tensor xt = x.transpose(0, 1);
          Tensor copy = xt.copyToDevice(Library.DEVICE_CPU, 0)) {
        assertArrayEquals(new float[] {1, 4, 2, 5, 3, 6}, copy.toFloatArray(), 0f);
        assertArrayEquals(new int[] {Library.DEVICE_CPU, 0}, copy.device());
        // Only counts that the cleaners of earlier tests' tensors (which run at any time) cannot lower.
        during = Library.deviceMemoryStats(Library.DEVICE_CPU, 0);
        assertTrue(during.allocations >= before.allocations + 2);
        assertTrue(during.bytesReserved >= during.bytesInUse);
        assertTrue(during.peakBytesInUse >= during.bytesInUse);
        assertThrows(UnavailableException.class, () -> x.copyToDevice(Library.DEVICE_CUDA, 4096));
        assertThrows(InvalidArgumentException.class, () -> x.copyToDevice(7, 0));
      }
      Library.emptyDeviceCache(Library.DEVICE_CPU, 0);
      Library.DeviceMemoryStats after = Library.deviceMemoryStats(Library.DEVICE_CPU, 0);
      assertTrue(after.bytesInUse + 2 * 24 <= during.bytesInUse);  // x's and the copy's storage
      assertTrue(after.bytesReserved <= during.bytesReserved);
      assertTrue(after.deviceFrees >= during.deviceFrees);
      assertThrows(UnavailableException.class, () -> Library.deviceMemoryStats(Library.DEVICE_CUDA, 4096));
      assertThrows(InvalidArgumentException.class, () -> Library.emptyDeviceCache(Library.DEVICE_CPU, -1));
    }
  }

  @Test
  public void optionsDefaultsComeFromTheLibrary() {
    assertArrayEquals(new long[] {1, 1}, new Conv2dOptions().stride());
    assertEquals(1, new Conv2dOptions().groups());
    assertEquals(Reduction.MEAN, new LossOptions().reduction());
    assertEquals(-100, new LossOptions().ignoreIndex());
    assertEquals(0.001, new SgdOptions().lr(), 0);
    assertEquals(0.9, new AdamOptions().beta1(), 0);
    assertTrue(new BatchNormOptions().training());
    assertEquals(8, new GraphOptions().planCacheSize());
    assertEquals(Nonlinearity.LEAKY_RELU, new KaimingOptions().nonlinearity());
    assertEquals(0x5eedL, new SessionOptions().seed());
    assertArrayEquals(new long[] {3, 2}, new Pool2dOptions().kernelSize(3, 2).kernelSize());
    assertThrows(IllegalArgumentException.class, () -> new Pool2dOptions().kernelSize(1, 2, 3));
    assertTrue(new Conv2dOptions().toString().contains("stride=[1, 1]"));
  }

  @Test
  public void creationAndInitialisers() {
    try (Session s = new Session(new SessionOptions().seed(5))) {
      float[] first;
      try (Tensor r = s.rand(DType.FLOAT32, 8)) {
        first = r.toFloatArray();
      }
      s.manualSeed(5);
      try (Tensor r = s.rand(DType.FLOAT32, new TensorOptions(), 8); Tensor n = s.randn(DType.FLOAT64, 3);
           Tensor e = s.empty(DType.INT32, 2); Tensor o = s.ones(DType.INT64, 2); Tensor z = s.zeros(DType.BOOL, 2);
           Tensor a = s.arange(0, 5, 2, DType.INT64); Tensor f = s.full(DType.FLOAT16, 1.5, 1)) {
        assertArrayEquals(first, r.toFloatArray(), 0);
        assertSame(DType.FLOAT64, n.dtype());
        assertArrayEquals(new long[] {2}, e.shape());
        assertArrayEquals(new long[] {1, 1}, o.toLongArray());
        assertArrayEquals(new boolean[] {false, false}, z.toBooleanArray());
        assertArrayEquals(new long[] {0, 2, 4}, a.toLongArray());
        assertEquals(1.5, f.item(), 0);
        assertEquals(1, r.device()[0]);
        assertEquals(32, r.nbytes());
        assertEquals(1, r.ndim());
      }
      try (Tensor w = s.zeros(DType.FLOAT32, 4, 3)) {
        w.initUniform(-1, 1).initNormal(0, 1).initXavierUniform(1).initXavierNormal(1).initKaimingUniform(null)
            .initKaimingNormal(new KaimingOptions().mode(FanMode.FAN_OUT)).initConstant(2);
        assertArrayEquals(new float[] {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, w.toFloatArray(), 0);
        try (Tensor shared = w.share()) {
          w.close();
          assertEquals(12, shared.numel()); // its own reference
        }
      }
      ByteBuffer out = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
      try (Tensor t = s.tensor(new float[] {3, 4}, 2)) {
        t.copyTo(out);
        assertEquals(4, out.getFloat(4), 0);
      }
    }
  }

  @Test
  public void moreOps() {
    try (Session s = new Session(); Tensor x = s.tensor(new float[] {-1, 0, 2, 3}, 2, 2);
         Tensor logits = s.tensor(new float[] {2, 0, 0, 2}, 2, 2); Tensor target = s.tensor(new long[] {0, 1}, 2);
         Tensor ce = logits.crossEntropy(target, new LossOptions().reduction(Reduction.SUM));
         Tensor ls = logits.logSoftmax(1); Tensor nll = ls.nllLoss(target); Tensor sm = logits.softmax(1);
         Tensor g = x.gelu(false); Tensor d = x.dropout(0.5, false); Tensor img = s.ones(DType.FLOAT32, 1, 1, 4, 4);
         Tensor mp = img.maxPool2d(new Pool2dOptions().kernelSize(2)); Tensor ap = img.avgPool2d(new Pool2dOptions().kernelSize(2));
         Tensor zl = x.zerosLike(); Tensor fl = x.fullLike(7); Tensor c = x.contiguous(); Tensor v = c.view(new long[] {4});
         Tensor sq = x.unsqueeze(0).squeeze(null); Tensor ab = x.abs(); Tensor mx = x.maximumScalar(0)) {
      double expectedCe = 2 * Math.log(1 + Math.exp(-2));
      assertEquals(expectedCe, ce.item(), 1e-5);
      assertEquals(expectedCe / 2, nll.item(), 1e-5);
      assertEquals(2, sm.sum().item(), 1e-5); // two rows summing to one each
      assertArrayEquals(new float[] {-1, 0, 2, 3}, d.toFloatArray(), 0);
      assertArrayEquals(new long[] {1, 1, 2, 2}, mp.shape());
      assertArrayEquals(new float[] {1, 1, 1, 1}, ap.toFloatArray(), 0);
      assertArrayEquals(new float[] {7, 7, 7, 7}, fl.toFloatArray(), 0);
      assertArrayEquals(new long[] {4}, v.shape());
      assertArrayEquals(new long[] {2, 2}, sq.shape());
      assertArrayEquals(new float[] {1, 0, 2, 3}, ab.toFloatArray(), 0);
      assertArrayEquals(new float[] {0, 0, 2, 3}, mx.toFloatArray(), 0);
      assertNotEquals(0, g.toFloatArray()[3], 0);
      assertFalse(zl.toString().isEmpty());
    }
  }

  @Test
  public void graphQueries() {
    try (Session s = new Session(); Graph g = s.graph("queries", new GraphOptions().fuse(false))) {
      g.beginBuild();
      try (Tensor x = g.addInput("x", DType.FLOAT32, Dim.UNKNOWN, 2); Tensor y = x.relu()) {
        g.addOutput(y);
      }
      g.endBuild();
      assertEquals(1, g.inputCount());
      assertEquals(1, g.outputCount());
      assertEquals(0, g.memoryStats().compileCount);
      try (Tensor in = s.ones(DType.FLOAT32, 3, 2)) {
        for (Tensor t : g.run(in)) t.close();
      }
      Graph.MemoryStats st = g.memoryStats();
      assertEquals(1, st.compileCount);
      assertTrue(st.toString(), st.nodeCount > 0);
      assertTrue(g.dump(), g.dump().contains("relu"));
    }
  }

  @Test
  public void profiledGraphDumpShowsStepTimes() {
    assertFalse(new GraphOptions().profile());
    for (boolean profile : new boolean[] {true, false}) {
      try (Session s = new Session(); Graph g = s.graph("profiled", new GraphOptions().fuse(false).profile(profile))) {
        g.beginBuild();
        try (Tensor x = g.addInput("x", DType.FLOAT32, Dim.UNKNOWN, 8); Tensor xt = x.transpose(0, 1);
             Tensor m = x.matmul(xt); Tensor y = m.exp()) {
          g.addOutput(y);
        }
        g.endBuild();
        try (Tensor in = s.full(DType.FLOAT32, 0.1, 4, 8)) {
          for (int i = 0; i < 2; ++i) {
            for (Tensor t : g.run(in)) t.close();
          }
        }
        String dump = g.dump();
        assertEquals(dump, profile, dump.contains("profile: 2 runs"));
        assertEquals(dump, profile, dump.contains("    matmul: 1 step, "));
      }
    }
  }
}
