package org.oneflow;

import org.oneflow.jni.OneflowC;

/**
 * An element type. There is exactly one DType object per dtype of the library, found by the library's
 * interned pointer, so that {@code t.dtype() == DType.FLOAT32} holds whichever way a dtype was reached
 * (constant, {@link #fromCode}, {@link #fromName}, {@link #fromDlpack}, {@link #promote}, a tensor's
 * dtype, a lazy tensor's dtype). Thread-safe.
 */
public final class DType {
  public static final DType BOOL = new DType(OneflowC.of_dtype_bool());
  public static final DType INT8 = new DType(OneflowC.of_dtype_int8());
  public static final DType UINT8 = new DType(OneflowC.of_dtype_uint8());
  public static final DType INT16 = new DType(OneflowC.of_dtype_int16());
  public static final DType INT32 = new DType(OneflowC.of_dtype_int32());
  public static final DType INT64 = new DType(OneflowC.of_dtype_int64());
  public static final DType FLOAT16 = new DType(OneflowC.of_dtype_float16());
  public static final DType BFLOAT16 = new DType(OneflowC.of_dtype_bfloat16());
  public static final DType FLOAT32 = new DType(OneflowC.of_dtype_float32());
  public static final DType FLOAT64 = new DType(OneflowC.of_dtype_float64());
  private static final DType[] ALL = {BOOL, INT8, UINT8, INT16, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64};

  private final long ptr;
  private final int code;
  private final String name;
  private final int size;

  private DType(long ptr) {
    this.ptr = ptr;
    this.code = OneflowC.of_dtype_code(ptr);
    this.name = OneflowC.of_dtype_name(ptr);
    this.size = (int) OneflowC.of_dtype_size(ptr);
  }

  /** Every dtype, in code order. */
  public static DType[] values() {
    return ALL.clone();
  }

  /** The canonical instance of a library dtype pointer. */
  static DType of(long ptr) {
    for (DType d : ALL) {
      if (d.ptr == ptr) return d;
    }
    throw new InternalException("oneflow: the library returned a dtype this binding does not know (code "
        + OneflowC.of_dtype_code(ptr) + ", \"" + OneflowC.of_dtype_name(ptr) + "\")");
  }

  static long ptr(DType d, String what) {
    if (d == null) throw new NullPointerException(what);
    return d.ptr;
  }

  /** The dtype of a stable code (OF_DTYPE_*); NotFoundException for a code that names none, 0 included. */
  public static DType fromCode(int code) {
    long[] out = new long[1];
    Status.check(OneflowC.of_dtype_from_code(code, out));
    return of(out[0]);
  }

  /** The dtype called name ("float32", or an alias: "float", "double", "half", "int", "long", "short"). */
  public static DType fromName(String name) {
    long[] out = new long[1];
    Status.check(OneflowC.of_dtype_from_name(name, out));
    return of(out[0]);
  }

  /** The dtype of DLPack's DLDataType {code, bits, lanes}; NotFoundException when none matches. */
  public static DType fromDlpack(int code, int bits, int lanes) {
    if (code < 0 || code > 255 || bits < 0 || bits > 255 || lanes < 0 || lanes > 65535) {
      throw new IllegalArgumentException("fromDlpack: code and bits are uint8, lanes uint16");
    }
    long[] out = new long[1];
    Status.check(OneflowC.of_dtype_from_dlpack((short) code, (short) bits, lanes, out));
    return of(out[0]);
  }

  /** This dtype's DLPack DLDataType as {code, bits, lanes}. */
  public int[] toDlpack() {
    int[] code = new int[1], bits = new int[1], lanes = new int[1];
    Status.check(OneflowC.of_dtype_to_dlpack(ptr, code, bits, lanes));
    return new int[] {code[0], bits[0], lanes[0]};
  }

  /** The result dtype of a binary op on a and b. */
  public static DType promote(DType a, DType b) {
    long[] out = new long[1];
    Status.check(OneflowC.of_dtype_promote(ptr(a, "promote: a"), ptr(b, "promote: b"), out));
    return of(out[0]);
  }

  /** The stable code (OF_DTYPE_*). */
  public int code() {
    return code;
  }

  /** "float32", ... */
  public String name() {
    return name;
  }

  /** Bytes per element. */
  public int size() {
    return size;
  }

  public boolean isFloatingPoint() {
    return OneflowC.of_dtype_is_floating_point(ptr);
  }

  public boolean isSigned() {
    return OneflowC.of_dtype_is_signed(ptr);
  }

  /** int8..int64 and uint8 (not bool). */
  public boolean isInteger() {
    return OneflowC.of_dtype_is_integer(ptr);
  }

  public boolean isComplex() {
    return OneflowC.of_dtype_is_complex(ptr);
  }

  @Override
  public String toString() {
    return name;
  }
}
