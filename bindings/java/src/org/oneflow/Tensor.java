package org.oneflow;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.oneflow.jni.OneflowC;

/**
 * A tensor: one reference to a C tensor (of_tensor_t*) and one to its session's native state, which
 * stays valid for as long as the tensor is open, even after {@link Session#close()}.
 *
 * <p>{@link #close()} releases the reference (idempotent); a tensor left unclosed is released by a
 * Cleaner once unreachable. Any use after close is an IllegalStateException. Op methods
 * ({@code x.add(y)}, {@code x.matmul(w)}, {@code x.relu()}, {@code x.sum(dims, keepdim)}, ...) come
 * from {@link TensorOps}, generated from the header, and return new tensors to close.
 *
 * <p>Threads: a tensor may be read (queried, copied out, used as an op input) from several threads at
 * once. Its autograd state (requires grad, grad, backward) and in-place writes (initialisers) must not
 * be used from two threads at once, and close() must not race with other uses of the same Tensor.
 */
public final class Tensor extends TensorOps implements AutoCloseable {
  private static final int SHOW_VALUES = 16; // toString shows the values of eager tensors this small

  private final NativeRef ref;

  /** Takes over a new C reference (ptr) made in session s. */
  Tensor(SessionHandle s, long ptr) {
    this.ref = new NativeRef(this, ptr, s, p -> OneflowC.of_tensor_release(p), "tensor");
  }

  /** The C handle; IllegalStateException once closed. */
  long ptr() {
    return ref.ptr();
  }

  static long ptr(Tensor t, String what) {
    if (t == null) throw new NullPointerException(what + " is null");
    return t.ptr();
  }

  static long ptrOrZero(Tensor t) {
    return t == null ? 0 : t.ptr();
  }

  static long[] ptrs(Tensor[] ts, String what) {
    if (ts == null) throw new NullPointerException(what + " is null");
    long[] p = new long[ts.length];
    for (int i = 0; i < ts.length; ++i) p[i] = ptr(ts[i], what + "[" + i + "]");
    return p;
  }

  @Override
  long opPtr() {
    return ptr();
  }

  @Override
  SessionHandle opSession() {
    ptr();
    return ref.session();
  }

  /** Releases the tensor's reference. A second call does nothing. */
  @Override
  public void close() {
    ref.close();
  }

  /** True once closed. */
  public boolean isClosed() {
    return ref.isClosed();
  }

  /** A second Tensor object holding its own reference to the same C tensor (of_tensor_retain). */
  public Tensor share() {
    long p = ptr();
    try {
      OneflowC.of_tensor_retain(p);
      return new Tensor(ref.session(), p);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  // ---- queries ------------------------------------------------------------------------------

  /** The canonical DType (so {@code t.dtype() == DType.FLOAT32} works). */
  public DType dtype() {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_tensor_dtype(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return DType.of(out[0]);
  }

  public int ndim() {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_tensor_ndim(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return (int) out[0];
  }

  /** The sizes; a lazy tensor's may hold Dim.UNKNOWN or symbols. */
  public long[] shape() {
    long[] ndim = new long[1];
    try {
      Status.check(OneflowC.of_tensor_ndim(ptr(), ndim));
      long[] dims = new long[(int) ndim[0]];
      Status.check(OneflowC.of_tensor_dims(ptr(), dims));
      return dims;
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The number of elements (InvalidArgumentException for a lazy tensor of unknown size). */
  public long numel() {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_tensor_numel(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0];
  }

  public long nbytes() {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_tensor_nbytes(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0];
  }

  /** True for a lazy tensor (a value of a graph being built, without data). */
  public boolean isLazy() {
    boolean[] out = new boolean[1];
    try {
      Status.check(OneflowC.of_tensor_is_lazy(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0];
  }

  /** {device type (OF_DEVICE_*: 1 CPU, 2 CUDA), device index}. */
  public int[] device() {
    int[] type = new int[1], index = new int[1];
    try {
      Status.check(OneflowC.of_tensor_device(ptr(), type, index));
    } finally {
      Reference.reachabilityFence(this);
    }
    return new int[] {type[0], index[0]};
  }

  /**
   * A new contiguous tensor on the device (Library.DEVICE_CPU or DEVICE_CUDA, index) with this tensor's
   * dtype, dims and values: a copy even on the same device, without autograd history.
   */
  public Tensor copyToDevice(int deviceType, int deviceIndex) {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_tensor_copy_to_device(ptr(), deviceType, deviceIndex, out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return new Tensor(ref.session(), out[0]);
  }

  // ---- data out -----------------------------------------------------------------------------

  static boolean fits(DType d, Object array) {
    if (array instanceof float[]) return d == DType.FLOAT32;
    if (array instanceof double[]) return d == DType.FLOAT64;
    if (array instanceof int[]) return d == DType.INT32;
    if (array instanceof long[]) return d == DType.INT64;
    if (array instanceof byte[]) return d == DType.INT8 || d == DType.UINT8;
    if (array instanceof short[]) return d == DType.INT16 || d == DType.FLOAT16 || d == DType.BFLOAT16;
    if (array instanceof boolean[]) return d == DType.BOOL;
    return false;
  }

  static String arrayName(Object array) {
    return array == null ? "null" : array.getClass().getComponentType() + "[]";
  }

  private Object copyOut(Object array, String method) {
    DType d = dtype();
    if (!fits(d, array)) {
      throw new InvalidArgumentException(method + ": the tensor's dtype is " + d + ", which " + arrayName(array)
          + " cannot hold (cast it first, e.g. x.cast(DType.FLOAT32))");
    }
    long n = numel();
    if (n != java.lang.reflect.Array.getLength(array)) {
      throw new InvalidArgumentException(method + ": the tensor has " + n + " elements, the array "
          + java.lang.reflect.Array.getLength(array));
    }
    try {
      Status.check(OneflowC.of_tensor_copy_to_host(ptr(), array));
    } finally {
      Reference.reachabilityFence(this);
    }
    return array;
  }

  private int length() {
    if (isLazy()) {
      // The library's own error (FAILED_PRECONDITION naming the tensor): a lazy tensor has no data.
      try {
        Status.check(OneflowC.of_tensor_copy_to_host(ptr(), new byte[0]));
      } finally {
        Reference.reachabilityFence(this);
      }
      throw new FailedPreconditionException("copy out: the tensor is lazy (a value of a graph being built) and has no data");
    }
    long n = numel();
    if (n > Integer.MAX_VALUE - 8) throw new OutOfRangeException("the tensor has " + n + " elements, too many for a Java array");
    return (int) n;
  }

  /** The elements of a float32 tensor, row-major (InvalidArgumentException for another dtype). */
  public float[] toFloatArray() {
    return (float[]) copyOut(new float[length()], "toFloatArray");
  }

  /** The elements of a float64 tensor. */
  public double[] toDoubleArray() {
    return (double[]) copyOut(new double[length()], "toDoubleArray");
  }

  /** The elements of an int32 tensor. */
  public int[] toIntArray() {
    return (int[]) copyOut(new int[length()], "toIntArray");
  }

  /** The elements of an int64 tensor. */
  public long[] toLongArray() {
    return (long[]) copyOut(new long[length()], "toLongArray");
  }

  /** The elements of an int8 or uint8 tensor (uint8 as the same bits). */
  public byte[] toByteArray() {
    return (byte[]) copyOut(new byte[length()], "toByteArray");
  }

  /** The elements of an int16 tensor, or the raw bits of a float16 or bfloat16 one. */
  public short[] toShortArray() {
    return (short[]) copyOut(new short[length()], "toShortArray");
  }

  /** The elements of a bool tensor. */
  public boolean[] toBooleanArray() {
    return (boolean[]) copyOut(new boolean[length()], "toBooleanArray");
  }

  /** Copies the elements' bytes into a direct buffer of exactly nbytes() bytes (from its position). */
  public void copyTo(ByteBuffer direct) {
    if (direct == null || !direct.isDirect()) throw new IllegalArgumentException("copyTo: needs a direct ByteBuffer");
    try {
      Status.check(OneflowC.of_tensor_copy_to_host(ptr(), direct.slice()));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(direct);
    }
  }

  /** The value of a one-element tensor of any dtype, as a double. */
  public double item() {
    if (numel() != 1) throw new InvalidArgumentException("item: the tensor has " + numel() + " elements, not 1");
    if (dtype() == DType.FLOAT64) return toDoubleArray()[0];
    try (Tensor d = cast(DType.FLOAT64)) {
      return d.toDoubleArray()[0];
    }
  }

  // ---- autograd -----------------------------------------------------------------------------

  /** Marks a leaf as needing gradients; returns this. */
  public Tensor setRequiresGrad(boolean requiresGrad) {
    try {
      Status.check(OneflowC.of_tensor_set_requires_grad(ptr(), requiresGrad));
    } finally {
      Reference.reachabilityFence(this);
    }
    return this;
  }

  public boolean requiresGrad() {
    boolean[] out = new boolean[1];
    try {
      Status.check(OneflowC.of_tensor_requires_grad(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0];
  }

  public boolean isLeaf() {
    boolean[] out = new boolean[1];
    try {
      Status.check(OneflowC.of_tensor_is_leaf(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0];
  }

  /** The accumulated gradient (a new tensor to close), or null when there is none yet. */
  public Tensor grad() {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_tensor_grad(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0] == 0 ? null : new Tensor(ref.session(), out[0]);
  }

  /** Replaces the gradient by grad's data, or clears it for null. */
  public void setGrad(Tensor grad) {
    try {
      Status.check(OneflowC.of_tensor_set_grad(ptr(), ptrOrZero(grad)));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(grad);
    }
  }

  /** A new leaf sharing this tensor's data, outside every backward graph. */
  public Tensor detach() {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_tensor_detach(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return new Tensor(ref.session(), out[0]);
  }

  // ---- DLPack --------------------------------------------------------------------------------

  /**
   * Exports the tensor as a DLPack 1.x managed tensor ({@code DLManagedTensorVersioned*}, as an
   * address for native code) sharing its memory without a copy; the memory stays alive until the
   * consumer calls the struct's deleter, exactly once, from any thread (this tensor may be closed
   * before). Hand the address to a consumer, or back to {@link Session#fromDlpack}.
   */
  public long toDlpack() {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_tensor_to_dlpack(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0];
  }

  private static native ByteBuffer dlpackBuffer(long managed);

  private static native void dlpackDelete(long managed);

  /**
   * A direct ByteBuffer over the elements of this contiguous CPU tensor, in the platform's byte order,
   * without a copy: writes through it change the tensor (not while an op reads it). The buffer keeps
   * the memory alive (through a DLPack export released by the Cleaner once the buffer, and every
   * slice of it, is unreachable), even after this tensor is closed. An empty tensor gives an empty
   * buffer; a strided view is an IllegalStateException (call {@code contiguous()} first).
   */
  public ByteBuffer asByteBuffer() {
    if (numel() == 0) return ByteBuffer.allocateDirect(0).order(ByteOrder.nativeOrder());
    final long managed = toDlpack();
    ByteBuffer buffer;
    try {
      buffer = dlpackBuffer(managed);
    } catch (RuntimeException | Error e) {
      dlpackDelete(managed);
      throw e;
    }
    if (buffer == null) {
      dlpackDelete(managed);
      throw new IllegalStateException("asByteBuffer: the tensor is not a contiguous CPU tensor (" + this
          + "); call contiguous() first");
    }
    Resources.CLEANER.register(buffer, () -> dlpackDelete(managed));
    return buffer.order(ByteOrder.nativeOrder());
  }

  /** The same as a legacy {@code DLManagedTensor*}; refused for a read-only tensor, which it cannot mark. */
  public long toDlpackLegacy() {
    long[] out = new long[1];
    try {
      Status.check(OneflowC.of_tensor_to_dlpack_legacy(ptr(), out));
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0];
  }

  /** Backward from a one-element tensor (gradient 1), freeing the graph's saved tensors. */
  public void backward() {
    backward(null, false);
  }

  /** Backward with the given gradient of this tensor (null: 1) and retainGraph. */
  public void backward(Tensor grad, boolean retainGraph) {
    try {
      Status.check(OneflowC.of_tensor_backward(ref.session().ptr(), ptr(), ptrOrZero(grad), retainGraph));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(grad);
    }
  }

  // ---- initialisers (in place, drawing from this tensor's session) ----------------------------

  /** Uniform in [a, b), in place; returns this. */
  public Tensor initUniform(double a, double b) {
    try {
      Status.check(OneflowC.of_init_uniform(opSession().ptr(), ptr(), a, b));
    } finally {
      Reference.reachabilityFence(this);
    }
    return this;
  }

  public Tensor initNormal(double mean, double std) {
    try {
      Status.check(OneflowC.of_init_normal(opSession().ptr(), ptr(), mean, std));
    } finally {
      Reference.reachabilityFence(this);
    }
    return this;
  }

  public Tensor initConstant(double value) {
    try {
      Status.check(OneflowC.of_init_constant(opSession().ptr(), ptr(), value));
    } finally {
      Reference.reachabilityFence(this);
    }
    return this;
  }

  /** Kaiming uniform (options null: PyTorch's defaults). */
  public Tensor initKaimingUniform(KaimingOptions options) {
    org.oneflow.jni.of_kaiming_options_t o = options == null ? null : options.toNative();
    try {
      Status.check(OneflowC.of_init_kaiming_uniform(opSession().ptr(), ptr(), o));
    } finally {
      if (o != null) o.delete();
      Reference.reachabilityFence(this);
    }
    return this;
  }

  public Tensor initKaimingNormal(KaimingOptions options) {
    org.oneflow.jni.of_kaiming_options_t o = options == null ? null : options.toNative();
    try {
      Status.check(OneflowC.of_init_kaiming_normal(opSession().ptr(), ptr(), o));
    } finally {
      if (o != null) o.delete();
      Reference.reachabilityFence(this);
    }
    return this;
  }

  public Tensor initXavierUniform(double gain) {
    try {
      Status.check(OneflowC.of_init_xavier_uniform(opSession().ptr(), ptr(), gain));
    } finally {
      Reference.reachabilityFence(this);
    }
    return this;
  }

  public Tensor initXavierNormal(double gain) {
    try {
      Status.check(OneflowC.of_init_xavier_normal(opSession().ptr(), ptr(), gain));
    } finally {
      Reference.reachabilityFence(this);
    }
    return this;
  }

  // ---- conveniences -------------------------------------------------------------------------

  /** The sum over every dim (0-d). */
  public Tensor sum() {
    return sum(null, false);
  }

  /** The mean over every dim (0-d). */
  public Tensor mean() {
    return mean(null, false);
  }

  /** dtype, shape (? and symbol names) and, for a small eager tensor, its values. */
  @Override
  public String toString() {
    if (isClosed()) return "Tensor(closed)";
    DType d = dtype();
    long[] shape = shape();
    StringBuilder b = new StringBuilder("Tensor(").append(d).append(", ").append(Dim.toString(shape));
    if (isLazy()) return b.append(", lazy)").toString();
    long n = numel();
    if (n <= SHOW_VALUES && n > 0) {
      b.append(", ");
      Object values;
      if (d == DType.FLOAT16 || d == DType.BFLOAT16) {
        try (Tensor f = cast(DType.FLOAT32)) {
          values = f.toFloatArray();
        }
      } else if (d == DType.FLOAT32) values = toFloatArray();
      else if (d == DType.FLOAT64) values = toDoubleArray();
      else if (d == DType.INT32) values = toIntArray();
      else if (d == DType.INT64) values = toLongArray();
      else if (d == DType.BOOL) values = toBooleanArray();
      else if (d == DType.UINT8) {
        byte[] raw = toByteArray();
        int[] u = new int[raw.length];
        for (int i = 0; i < raw.length; ++i) u[i] = raw[i] & 0xff;
        values = u;
      } else if (d == DType.INT8) values = toByteArray();
      else values = toShortArray();
      String s = java.util.Arrays.deepToString(new Object[] {values});
      b.append(s, 1, s.length() - 1);
    }
    return b.append(")").toString();
  }
}
