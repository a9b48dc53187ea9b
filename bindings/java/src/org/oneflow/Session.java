package org.oneflow;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;
import org.oneflow.jni.OneflowC;

/**
 * A session: a thread pool, a random generator and a default device (of_session_t).
 *
 * <p>Ownership: the C session handle is shared, reference-counted, by this Session and by every tensor,
 * graph and optimizer made from it. {@link #close()} drops the Session's own reference (idempotent);
 * afterwards its methods throw IllegalStateException, while the objects made from it keep working;
 * the C handle is destroyed (of_session_destroy) when the last of them is closed or cleaned. A Session
 * left unclosed is released by a Cleaner.
 *
 * <p>Threads: a session is thread-safe (ops, tensor creation, random draws from several threads).
 * Grad mode ({@link NoGrad}) is per thread; close() must not race with other uses of this object.
 */
public final class Session extends SessionOps implements AutoCloseable {
  private static final class State implements Runnable {
    final SessionHandle handle;
    final AtomicBoolean closed = new AtomicBoolean();

    State(SessionHandle handle) {
      this.handle = handle;
    }

    @Override
    public void run() {
      if (closed.compareAndSet(false, true)) handle.release();
    }
  }

  private final State state;
  private final Cleaner.Cleanable cleanable;

  /** A session with the library's defaults (of_session_options_init). */
  public Session() {
    this(null);
  }

  /** A session with these options (null: the defaults). */
  public Session(SessionOptions options) {
    long[] out = new long[1];
    org.oneflow.jni.of_session_options_t o = options == null ? null : options.toNative();
    try {
      Status.check(OneflowC.of_session_create(o, out));
    } finally {
      if (o != null) o.delete();
    }
    this.state = new State(new SessionHandle(out[0]));
    this.cleanable = Resources.CLEANER.register(this, state);
  }

  @Override
  SessionHandle opSession() {
    if (state.closed.get()) throw new IllegalStateException("oneflow: this session is closed");
    return state.handle;
  }

  /** Drops this Session's reference to the native session. A second call does nothing. */
  @Override
  public void close() {
    cleanable.clean();
  }

  public boolean isClosed() {
    return state.closed.get();
  }

  /** References to the native session now: this Session's (while open) and its objects'. */
  long nativeReferences() {
    return state.handle.references();
  }

  private static long[] dims(long[] shape) {
    return shape == null ? new long[0] : shape;
  }

  private interface Create {
    long call(long session, org.oneflow.jni.of_tensor_options_t options, long[] out);
  }

  private Tensor create(TensorOptions options, Create f) {
    SessionHandle s = opSession();
    long[] out = new long[1];
    org.oneflow.jni.of_tensor_options_t o = options == null ? null : options.toNative();
    try {
      Status.check(f.call(s.ptr(), o, out));
    } finally {
      if (o != null) o.delete();
      Reference.reachabilityFence(this);
    }
    return new Tensor(s, out[0]);
  }

  /** Restarts the random generator from seed. */
  public void manualSeed(long seed) {
    try {
      Status.check(OneflowC.of_session_manual_seed(opSession().ptr(), seed));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The named dim symbol of this session (the same value for the same name). */
  public long dimSymbol(String name) {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_session_dim_symbol(opSession().ptr(), name, out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0];
  }

  // ---- tensors from Java data (copied) ------------------------------------------------------

  /** A tensor of dtype holding a copy of array (see {@code Tensor.toXArray} for which array fits which dtype). */
  public Tensor tensor(DType dtype, Object array, TensorOptions options, long... shape) {
    if (!Tensor.fits(dtype, array)) {
      throw new InvalidArgumentException("tensor: " + Tensor.arrayName(array) + " cannot hold dtype " + dtype);
    }
    long[] d = dims(shape);
    return create(options, (s, o, out) -> OneflowC.of_tensor_from_data(s, DType.ptr(dtype, "dtype"), d, array, o, out));
  }

  public Tensor tensor(DType dtype, Object array, long... shape) {
    return tensor(dtype, array, null, shape);
  }

  public Tensor tensor(float[] data, long... shape) {
    return tensor(DType.FLOAT32, data, null, shape);
  }

  public Tensor tensor(double[] data, long... shape) {
    return tensor(DType.FLOAT64, data, null, shape);
  }

  public Tensor tensor(int[] data, long... shape) {
    return tensor(DType.INT32, data, null, shape);
  }

  public Tensor tensor(long[] data, long... shape) {
    return tensor(DType.INT64, data, null, shape);
  }

  /** int8 (use tensor(DType.UINT8, bytes, shape) for uint8). */
  public Tensor tensor(byte[] data, long... shape) {
    return tensor(DType.INT8, data, null, shape);
  }

  /** int16 (use tensor(DType.FLOAT16 or BFLOAT16, bits, shape) for the half types' raw bits). */
  public Tensor tensor(short[] data, long... shape) {
    return tensor(DType.INT16, data, null, shape);
  }

  public Tensor tensor(boolean[] data, long... shape) {
    return tensor(DType.BOOL, data, null, shape);
  }

  /**
   * A CPU tensor over a direct buffer's bytes from its position to its limit, without a copy. The
   * buffer is kept reachable (a JNI global reference) until the library's deleter runs, when the
   * tensor's last reference goes. Write it in the platform's byte order
   * ({@code buffer.order(ByteOrder.nativeOrder())}), and not while an op may read it.
   */
  public Tensor fromBuffer(DType dtype, ByteBuffer buffer, long... shape) {
    if (buffer == null || !buffer.isDirect()) throw new IllegalArgumentException("fromBuffer: needs a direct ByteBuffer");
    SessionHandle s = opSession();
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_tensor_adopt_data(s.ptr(), DType.ptr(dtype, "dtype"), dims(shape), buffer.slice(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return new Tensor(s, out[0]);
  }

  /**
   * Imports a DLPack 1.x managed tensor (the address of a {@code DLManagedTensorVersioned}, from
   * native code) as a tensor over its memory, without a copy. The library takes the struct over: it
   * calls its deleter exactly once, when the tensor's last reference goes, or before throwing. A
   * READ_ONLY import is refused by every in-place writer.
   */
  public Tensor fromDlpack(long managed) {
    SessionHandle s = opSession();
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_tensor_from_dlpack(managed, out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return new Tensor(s, out[0]);
  }

  /** The same for the address of a legacy {@code DLManagedTensor}. */
  public Tensor fromDlpackLegacy(long managed) {
    SessionHandle s = opSession();
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_tensor_from_dlpack_legacy(managed, out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return new Tensor(s, out[0]);
  }

  // ---- tensors from the library ---------------------------------------------------------------

  public Tensor empty(DType dtype, TensorOptions options, long... shape) {
    return create(options, (s, o, out) -> OneflowC.of_tensor_empty(s, DType.ptr(dtype, "dtype"), dims(shape), o, out));
  }

  public Tensor empty(DType dtype, long... shape) {
    return empty(dtype, null, shape);
  }

  public Tensor zeros(DType dtype, TensorOptions options, long... shape) {
    return create(options, (s, o, out) -> OneflowC.of_tensor_zeros(s, DType.ptr(dtype, "dtype"), dims(shape), o, out));
  }

  public Tensor zeros(DType dtype, long... shape) {
    return zeros(dtype, null, shape);
  }

  public Tensor ones(DType dtype, TensorOptions options, long... shape) {
    return create(options, (s, o, out) -> OneflowC.of_tensor_ones(s, DType.ptr(dtype, "dtype"), dims(shape), o, out));
  }

  public Tensor ones(DType dtype, long... shape) {
    return ones(dtype, null, shape);
  }

  public Tensor full(DType dtype, double value, TensorOptions options, long... shape) {
    return create(options,
        (s, o, out) -> OneflowC.of_tensor_full(s, DType.ptr(dtype, "dtype"), dims(shape), value, o, out));
  }

  public Tensor full(DType dtype, double value, long... shape) {
    return full(dtype, value, null, shape);
  }

  /** Uniform in [0, 1) from the session's generator. */
  public Tensor rand(DType dtype, TensorOptions options, long... shape) {
    return create(options, (s, o, out) -> OneflowC.of_tensor_rand(s, DType.ptr(dtype, "dtype"), dims(shape), o, out));
  }

  public Tensor rand(DType dtype, long... shape) {
    return rand(dtype, null, shape);
  }

  /** Standard normal from the session's generator. */
  public Tensor randn(DType dtype, TensorOptions options, long... shape) {
    return create(options, (s, o, out) -> OneflowC.of_tensor_randn(s, DType.ptr(dtype, "dtype"), dims(shape), o, out));
  }

  public Tensor randn(DType dtype, long... shape) {
    return randn(dtype, null, shape);
  }

  /** start, start + step, ... up to but excluding end. */
  public Tensor arange(double start, double end, double step, DType dtype, TensorOptions options) {
    return create(options, (s, o, out) -> OneflowC.of_tensor_arange(s, start, end, step, DType.ptr(dtype, "dtype"), o, out));
  }

  public Tensor arange(double start, double end, double step, DType dtype) {
    return arange(start, end, step, dtype, null);
  }

  // ---- graphs and optimizers ----------------------------------------------------------------

  /** A new, empty lazy graph (name may be null). */
  public Graph graph(String name, GraphOptions options) {
    return new Graph(opSession(), name, options);
  }

  public Graph graph(String name) {
    return graph(name, null);
  }

  /** SGD over params (options null: the defaults). */
  public Optimizer sgd(Tensor[] params, SgdOptions options) {
    return Optimizer.sgd(opSession(), params, options);
  }

  /** Adam, or AdamW when options.decoupledWeightDecay(true). */
  public Optimizer adam(Tensor[] params, AdamOptions options) {
    return Optimizer.adam(opSession(), params, options);
  }

  /** AdamW: Adam with decoupled weight decay (options null: the Adam defaults, weight decay 0.01 as PyTorch's). */
  public Optimizer adamW(Tensor[] params, AdamOptions options) {
    AdamOptions o = options == null ? new AdamOptions().weightDecay(0.01) : options;
    return Optimizer.adam(opSession(), params, o.decoupledWeightDecay(true));
  }

  /** Reads every tensor of a safetensors file onto this session's device, in file order. */
  public java.util.LinkedHashMap<String, Tensor> loadSafetensors(String path) {
    return SafeTensors.load(this, path);
  }
}
