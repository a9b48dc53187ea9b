package org.oneflow;

import java.nio.charset.StandardCharsets;
import org.oneflow.jni.OneflowC;
import org.oneflow.jni.OneflowCConstants;

/**
 * Dimension sizes are longs: a concrete size (>= 0), {@link #UNKNOWN} (printed "?") or a named symbol
 * of a session ({@link Session#dimSymbol}, printed by its name).
 */
public final class Dim {
  /** An unknown size (OF_DIM_UNKNOWN). */
  public static final long UNKNOWN = OneflowCConstants.OF_DIM_UNKNOWN;

  private Dim() {}

  /** A concrete size (>= 0). */
  public static boolean isKnown(long dim) {
    return OneflowC.of_dim_is_known(dim);
  }

  /** A named symbol made by Session.dimSymbol. */
  public static boolean isSymbol(long dim) {
    return OneflowC.of_dim_is_symbol(dim);
  }

  /** The name of a symbol; InvalidArgumentException if dim is not one. */
  public static String symbolName(long dim) {
    byte[][] name = new byte[1][];
    long[] length = new long[1];
    Status.check(OneflowC.of_dim_symbol_name(dim, name, length));
    return new String(name[0], StandardCharsets.UTF_8);
  }

  /** The size as printed: the number, "?" for an unknown one, the name of a symbol. */
  public static String toString(long dim) {
    if (isKnown(dim)) return Long.toString(dim);
    if (isSymbol(dim)) return symbolName(dim);
    return "?";
  }

  /** A shape as printed: "(2, ?, N)". */
  public static String toString(long[] dims) {
    StringBuilder b = new StringBuilder("(");
    for (int i = 0; i < dims.length; ++i) {
      if (i > 0) b.append(", ");
      b.append(toString(dims[i]));
    }
    return b.append(")").toString();
  }
}
