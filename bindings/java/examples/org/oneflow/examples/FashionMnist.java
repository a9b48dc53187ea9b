package org.oneflow.examples;

import java.io.DataInputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import org.oneflow.BatchNormOptions;
import org.oneflow.Conv2dOptions;
import org.oneflow.DType;
import org.oneflow.Dim;
import org.oneflow.FanMode;
import org.oneflow.Graph;
import org.oneflow.KaimingOptions;
import org.oneflow.NoGrad;
import org.oneflow.Nonlinearity;
import org.oneflow.Optimizer;
import org.oneflow.SafeTensors;
import org.oneflow.Session;
import org.oneflow.SessionOptions;
import org.oneflow.SgdOptions;
import org.oneflow.Tensor;

/**
 * Trains the Fashion-MNIST CNN of examples/fashion_mnist/train_fashion_mnist.c (the same network,
 * initialisation, SGD with Nesterov momentum and weight decay, cosine schedule) through two lazy
 * graphs: a training step (forward, cross-entropy, backward, the SGD update: one run per batch) and an
 * evaluation graph (batch norm in inference mode; it returns the number of correct predictions).
 *
 * <pre>
 * java -Djava.library.path=build/dev/bindings/java -cp build/dev/bindings/java/oneflow.jar:build/dev/bindings/java/oneflow-tests.jar \
 *     org.oneflow.examples.FashionMnist [--epochs N] [--batch-size N] [--lr X] [--width N] [--threads N]
 *     [--seed N] [--data DIR] [--out FILE] [--limit N] [--test-limit N] [--long]
 * </pre>
 */
public final class FashionMnist {
  private static final float MEAN = 0.2860f, STD = 0.3530f;
  private static final int EVAL_BATCH = 256;

  private FashionMnist() {}

  // ---- data ---------------------------------------------------------------------------------
  static final class Dataset {
    byte[] images;
    byte[] labels;
    int count, rows, cols;
  }

  private static byte[] readIdx(String path, int wantDims, int[] dims) throws IOException {
    try (InputStream raw = new FileInputStream(path); DataInputStream in = new DataInputStream(new GZIPInputStream(raw, 1 << 16))) {
      int magic = in.readInt();
      if ((magic >>> 8) != 0x08 || (magic & 0xff) != wantDims) throw new IOException(path + ": not an IDX file of " + wantDims + " dims");
      long n = 1;
      for (int i = 0; i < wantDims; ++i) {
        dims[i] = in.readInt();
        n *= dims[i];
      }
      byte[] data = new byte[(int) n];
      in.readFully(data);
      return data;
    }
  }

  static Dataset load(String dir, String split) throws IOException {
    Dataset d = new Dataset();
    int[] idims = new int[3], ldims = new int[1];
    d.images = readIdx(dir + "/" + split + "-images-idx3-ubyte.gz", 3, idims);
    d.labels = readIdx(dir + "/" + split + "-labels-idx1-ubyte.gz", 1, ldims);
    d.count = idims[0];
    d.rows = idims[1];
    d.cols = idims[2];
    if (ldims[0] != d.count) throw new IOException(dir + ": " + split + " has " + d.count + " images and " + ldims[0] + " labels");
    return d;
  }

  // ---- the model ----------------------------------------------------------------------------
  static final class Bn {
    Tensor weight, bias, runningMean, runningVar;
  }

  static final class Block {
    Tensor conv1, conv2, shortcut;
    Bn bn1, bn2, shortcutBn;
    int stride;
  }

  static final class Model {
    final Map<String, Tensor> all = new LinkedHashMap<>();
    final List<Tensor> trainable = new ArrayList<>();
    final Map<Tensor, String> names = new LinkedHashMap<>();
    Tensor stem, fcWeight, fcBias;
    Bn stemBn;
    final Block[] blocks = new Block[3];

    Tensor add(Session s, String name, double fill, boolean train, long... dims) {
      Tensor t = s.full(DType.FLOAT32, fill, dims);
      all.put(name, t);
      names.put(t, name);
      if (train) {
        t.setRequiresGrad(true);
        trainable.add(t);
      }
      return t;
    }

    Tensor conv(Session s, String name, long out, long in, long k) {
      Tensor w = add(s, name, 0.0, true, out, in, k, k);
      return w.initKaimingNormal(new KaimingOptions().mode(FanMode.FAN_OUT).nonlinearity(Nonlinearity.RELU));
    }

    Bn bn(Session s, String prefix, long channels) {
      Bn b = new Bn();
      b.weight = add(s, prefix + ".weight", 1.0, true, channels);
      b.bias = add(s, prefix + ".bias", 0.0, true, channels);
      b.runningMean = add(s, prefix + ".running_mean", 0.0, false, channels);
      b.runningVar = add(s, prefix + ".running_var", 1.0, false, channels);
      return b;
    }

    Model(Session s, int width) {
      stem = conv(s, "stem.weight", width, 1, 3);
      stemBn = bn(s, "stem.bn", width);
      long in = width;
      for (int b = 0; b < 3; ++b) {
        Block blk = new Block();
        long out = (long) width << b;
        blk.stride = b == 0 ? 1 : 2;
        blk.conv1 = conv(s, "block" + b + ".conv1.weight", out, in, 3);
        blk.bn1 = bn(s, "block" + b + ".bn1", out);
        blk.conv2 = conv(s, "block" + b + ".conv2.weight", out, out, 3);
        blk.bn2 = bn(s, "block" + b + ".bn2", out);
        if (blk.stride != 1 || in != out) {
          blk.shortcut = conv(s, "block" + b + ".shortcut.weight", out, in, 1);
          blk.shortcutBn = bn(s, "block" + b + ".shortcut.bn", out);
        }
        blocks[b] = blk;
        in = out;
      }
      double bound = 1.0 / Math.sqrt(in);
      fcWeight = add(s, "fc.weight", 0.0, true, 10, in).initUniform(-bound, bound);
      fcBias = add(s, "fc.bias", 0.0, true, 10).initUniform(-bound, bound);
    }

    void close() {
      for (Tensor t : all.values()) t.close();
    }
  }

  /** The tensors of one trace, closed together. */
  static final class Arena implements AutoCloseable {
    final List<Tensor> items = new ArrayList<>();

    Tensor keep(Tensor t) {
      items.add(t);
      return t;
    }

    @Override
    public void close() {
      for (Tensor t : items) t.close();
      items.clear();
    }
  }

  static Tensor conv(Arena a, Tensor x, Tensor w, int stride, int pad) {
    return a.keep(x.conv2d(w, null, new Conv2dOptions().stride(stride).padding(pad)));
  }

  static Tensor batchNorm(Arena a, Tensor x, Bn bn, boolean training) {
    return a.keep(x.batchNorm(bn.weight, bn.bias, bn.runningMean, bn.runningVar, new BatchNormOptions().training(training)));
  }

  /** relu(batchNorm(x) + addend) as one op; addend may be null. */
  static Tensor batchNormAddRelu(Arena a, Tensor x, Bn bn, boolean training, Tensor addend) {
    return a.keep(x.batchNormAddRelu(addend, bn.weight, bn.bias, bn.runningMean, bn.runningVar,
        new BatchNormOptions().training(training)));
  }

  /** images (N, 1, 28, 28) -> logits (N, 10), traced into the open build. */
  static Tensor forward(Arena a, Model m, Tensor x, boolean training) {
    Tensor h = batchNormAddRelu(a, conv(a, x, m.stem, 1, 1), m.stemBn, training, null);
    for (Block blk : m.blocks) {
      Tensor y = batchNormAddRelu(a, conv(a, h, blk.conv1, blk.stride, 1), blk.bn1, training, null);
      Tensor shortcut = h;
      if (blk.shortcut != null) shortcut = batchNorm(a, conv(a, h, blk.shortcut, blk.stride, 0), blk.shortcutBn, training);
      h = batchNormAddRelu(a, conv(a, y, blk.conv2, 1, 1), blk.bn2, training, shortcut);
    }
    Tensor pooled = a.keep(h.adaptiveAvgPool2d(1, 1));
    Tensor flat = a.keep(pooled.flatten(1, -1));
    return a.keep(flat.linear(m.fcWeight, m.fcBias));
  }

  static Graph beginGraph(Session s, Model m, String name, int rows, int cols, Arena a, Tensor[] inputs) {
    Graph g = s.graph(name);
    g.beginBuild();
    for (Tensor t : m.trainable) g.addParameter(t, m.names.get(t));
    inputs[0] = a.keep(g.addInput("images", DType.FLOAT32, Dim.UNKNOWN, 1, rows, cols));
    inputs[1] = a.keep(g.addInput("labels", DType.INT64, Dim.UNKNOWN));
    return g;
  }

  static Graph trainGraph(Session s, Model m, Optimizer opt, int rows, int cols) {
    try (Arena a = new Arena()) {
      Tensor[] in = new Tensor[2];
      Graph g = beginGraph(s, m, "fashion_mnist_train", rows, cols, a, in);
      Tensor loss = a.keep(forward(a, m, in[0], true).crossEntropy(in[1]));
      loss.backward();
      g.addOptimizer(opt);
      g.addOutput(loss);
      g.endBuild();
      return g;
    }
  }

  static Graph evalGraph(Session s, Model m, int rows, int cols) {
    try (NoGrad ng = NoGrad.enter(); Arena a = new Arena()) {
      Tensor[] in = new Tensor[2];
      Graph g = beginGraph(s, m, "fashion_mnist_eval", rows, cols, a, in);
      Tensor pred = a.keep(forward(a, m, in[0], false).argmax(1, false));
      Tensor hits = a.keep(pred.eq(in[1]));
      g.addOutput(a.keep(hits.sum()));
      g.endBuild();
      return g;
    }
  }

  static void batch(Session s, Dataset ds, int[] order, int first, int n, float[] ib, long[] lb, Tensor[] out) {
    int pixels = ds.rows * ds.cols;
    float[] images = ib.length == n * pixels ? ib : new float[n * pixels];
    long[] labels = lb.length == n ? lb : new long[n];
    for (int i = 0; i < n; ++i) {
      int idx = order != null ? order[first + i] : first + i;
      int src = idx * pixels, dst = i * pixels;
      for (int p = 0; p < pixels; ++p) images[dst + p] = ((ds.images[src + p] & 0xff) / 255.0f - MEAN) / STD;
      labels[i] = ds.labels[idx];
    }
    out[0] = s.tensor(images, n, 1, ds.rows, ds.cols);
    out[1] = s.tensor(labels, n);
  }

  static double evaluate(Session s, Graph g, Dataset test, int count) {
    long correct = 0;
    int pixels = test.rows * test.cols;
    float[] ib = new float[EVAL_BATCH * pixels];
    long[] lb = new long[EVAL_BATCH];
    try (NoGrad ng = NoGrad.enter()) {
      for (int first = 0; first < count; first += EVAL_BATCH) {
        int n = Math.min(EVAL_BATCH, count - first);
        Tensor[] in = new Tensor[2];
        batch(s, test, null, first, n, ib, lb, in);
        try (Tensor images = in[0]; Tensor labels = in[1]) {
          Tensor[] out = g.run(images, labels);
          try (Tensor total = out[0]) {
            correct += total.toLongArray()[0];
          }
        }
      }
    }
    return (double) correct / count;
  }

  static void shuffle(int[] order, long[] state) {
    for (int i = 0; i < order.length; ++i) order[i] = i;
    for (int i = order.length; i > 1; --i) {
      state[0] = state[0] * 6364136223846793005L + 1442695040888963407L;
      int j = (int) ((state[0] >>> 33) % i);
      int t = order[i - 1];
      order[i - 1] = order[j];
      order[j] = t;
    }
  }

  public static void main(String[] args) throws IOException {
    int epochs = 2, batchSize = 64, width = 16, threads = 0, limit = 0, testLimit = 0;
    double lr = 0.05;
    long seed = 42;
    String data = "/usr/share/datasets/fashion-mnist", outPath = "fashion_mnist.safetensors";
    for (int i = 0; i < args.length; ++i) {
      String a = args[i];
      if (a.equals("--long")) {
        epochs = 6;
        continue;
      }
      if (a.equals("--help") || a.equals("-h") || i + 1 >= args.length) {
        System.err.println("usage: FashionMnist [--epochs N] [--batch-size N] [--lr X] [--width N] [--threads N] [--seed N]\n"
            + "       [--data DIR] [--out FILE] [--limit N] [--test-limit N] [--long]\n"
            + "defaults: 2 epochs, batch 64, lr 0.05, width 16, all cores, data in /usr/share/datasets/fashion-mnist,\n"
            + "weights saved to fashion_mnist.safetensors; --limit/--test-limit: use only the first N training/test images");
        throw new IllegalArgumentException(a.startsWith("-h") || a.equals("--help") ? "help" : a + " needs a value");
      }
      String v = args[++i];
      switch (a) {
        case "--epochs": epochs = Integer.parseInt(v); break;
        case "--batch-size": batchSize = Integer.parseInt(v); break;
        case "--lr": lr = Double.parseDouble(v); break;
        case "--width": width = Integer.parseInt(v); break;
        case "--threads": threads = Integer.parseInt(v); break;
        case "--seed": seed = Long.parseUnsignedLong(v); break;
        case "--data": data = v; break;
        case "--out": outPath = v; break;
        case "--limit": limit = Integer.parseInt(v); break;
        case "--test-limit": testLimit = Integer.parseInt(v); break;
        default: throw new IllegalArgumentException("unknown option " + a);
      }
    }
    if (epochs < 1 || batchSize < 1 || width < 1 || threads < 0 || !(lr > 0)) {
      throw new IllegalArgumentException("epochs, batch size and width must be >= 1, threads >= 0, lr > 0");
    }
    Dataset train = load(data, "train"), test = load(data, "t10k");
    if (limit > 0 && limit < train.count) train.count = limit;
    int testCount = testLimit > 0 && testLimit < test.count ? testLimit : test.count;

    try (Session s = new Session(new SessionOptions().seed(seed).numThreads(threads))) {
      Model model = new Model(s, width);
      Optimizer opt = s.sgd(model.trainable.toArray(new Tensor[0]),
          new SgdOptions().lr(lr).momentum(0.9).nesterov(true).weightDecay(5e-4));
      System.out.printf("Fashion-MNIST: %d training and %d test images; ResNet-style CNN, width %d, %d parameter tensors%n",
          train.count, testCount, width, model.trainable.size());
      System.out.printf("%d epochs, batch %d, SGD lr %.3g (cosine schedule), momentum 0.9, nesterov, weight decay 5e-4%n",
          epochs, batchSize, lr);
      long t0 = System.nanoTime();
      Graph trainG = trainGraph(s, model, opt, train.rows, train.cols);
      Graph evalG = evalGraph(s, model, test.rows, test.cols);
      System.out.printf("lazy graphs: training step and evaluation traced in %.0f ms (compiled at their first run)%n",
          (System.nanoTime() - t0) * 1e-6);
      int pixels = train.rows * train.cols;
      float[] ib = new float[batchSize * pixels];
      long[] lb = new long[batchSize];
      int[] order = new int[train.count];
      long[] rng = {seed};
      boolean tty = System.console() != null;
      long stepsPerEpoch = (train.count + batchSize - 1) / batchSize, totalSteps = stepsPerEpoch * epochs, step = 0;
      double accuracy = 0;
      long runStarted = System.nanoTime();
      for (int epoch = 1; epoch <= epochs; ++epoch) {
        shuffle(order, rng);
        long started = System.nanoTime();
        double lossSum = 0;
        int seen = 0;
        for (int first = 0; first < train.count; first += batchSize, ++step) {
          int n = Math.min(batchSize, train.count - first);
          opt.setLr(lr * 0.5 * (1.0 + Math.cos(Math.PI * step / totalSteps)));
          Tensor[] in = new Tensor[2];
          batch(s, train, order, first, n, ib, lb, in);
          float loss;
          try (Tensor images = in[0]; Tensor labels = in[1]) {
            Tensor[] out = trainG.run(images, labels);
            try (Tensor l = out[0]) {
              loss = l.toFloatArray()[0];
            }
          }
          lossSum += (double) loss * n;
          seen += n;
          if (tty ? (step % 10 == 0 || seen == train.count) : (seen == train.count || step % 200 == 0)) {
            progress(epoch, epochs, seen, train.count, lossSum / seen, started, tty);
          }
        }
        if (tty) System.err.println();
        accuracy = evaluate(s, evalG, test, testCount);
        System.out.printf("epoch %d/%d: train loss %.4f, test accuracy %.2f%%, %.1f s%n", epoch, epochs, lossSum / seen,
            100 * accuracy, (System.nanoTime() - started) * 1e-9);
      }
      SafeTensors.save(outPath, model.all);
      System.out.printf("final test accuracy %.2f%% after %.0f s; weights saved to %s (%d tensors, safetensors)%n",
          100 * accuracy, (System.nanoTime() - runStarted) * 1e-9, outPath, model.all.size());
      trainG.close();
      evalG.close();
      opt.close();
      model.close();
    }
  }

  static void progress(int epoch, int epochs, int done, int total, double loss, long started, boolean tty) {
    double elapsed = (System.nanoTime() - started) * 1e-9;
    double rate = elapsed > 0 ? done / elapsed : 0, eta = rate > 0 ? (total - done) / rate : 0;
    int w = 30, filled = (int) ((double) w * done / total);
    StringBuilder bar = new StringBuilder();
    for (int i = 0; i < w; ++i) bar.append(i < filled ? '#' : (i == filled ? '>' : '.'));
    System.err.printf("%sepoch %d/%d [%s] %6d/%d  %6.0f img/s  loss %.4f  ETA %3.0fs%s", tty ? "\r" : "", epoch, epochs, bar,
        done, total, rate, loss, eta, tty ? "" : "\n");
    System.err.flush();
  }
}
