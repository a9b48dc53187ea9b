package org.oneflow;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.oneflow.jni.OneflowC;
import org.oneflow.jni.OneflowCConstants;

/** The library: versions, build features, the op registry, and counters of adopted buffers. */
public final class Library {
  private Library() {}

  /** {major, minor, patch} of the loaded library. */
  public static int[] version() {
    int[] major = new int[1], minor = new int[1], patch = new int[1];
    OneflowC.of_version(major, minor, patch);
    return new int[] {major[0], minor[0], patch[0]};
  }

  /** "MAJOR.MINOR.PATCH" of the loaded library. */
  public static String versionString() {
    return OneflowC.of_version_string();
  }

  /** The loaded library's ABI version. */
  public static int abiVersion() {
    return OneflowC.of_abi_version();
  }

  /** The ABI version of the header this binding was generated from. */
  public static int headerAbiVersion() {
    return OneflowCConstants.OF_ABI_VERSION;
  }

  /** Whether the library includes the CUDA backend. */
  public static boolean cudaIsBuilt() {
    return OneflowC.of_cuda_is_built();
  }

  /** The registered ops' names, in name order (backward helpers included). */
  public static List<String> opNames() {
    long[] count = new long[1];
    Status.check(OneflowC.of_op_count(count));
    List<String> names = new ArrayList<>();
    for (long i = 0; i < count[0]; ++i) {
      byte[][] name = new byte[1][];
      Status.check(OneflowC.of_op_name(i, name));
      names.add(new String(name[0], StandardCharsets.UTF_8));
    }
    return names;
  }

  /** Direct buffers adopted by Session.fromBuffer so far. */
  public static long adoptedBufferCount() {
    return OneflowC.ofj_adopted_buffer_count();
  }

  /** Adopted direct buffers the library has released (its deleter ran) so far. */
  public static long releasedBufferCount() {
    return OneflowC.ofj_released_buffer_count();
  }
}
