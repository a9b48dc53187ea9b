package org.oneflow;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.oneflow.jni.OneflowC;
import org.oneflow.jni.OneflowCConstants;

/** The library: versions, build features, devices and their memory, the op registry, and counters of adopted buffers. */
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

  /** Device type of the CPU (OF_DEVICE_CPU), for {@link #deviceMemoryStats} and {@link Tensor#copyToDevice}. */
  public static final int DEVICE_CPU = 1;
  /** Device type of CUDA GPUs (OF_DEVICE_CUDA). */
  public static final int DEVICE_CUDA = 2;

  /**
   * The counters of a device's memory allocator (per process: every session's tensors on it count).
   * Throws UnavailableException for a device this build or machine does not have.
   */
  public static DeviceMemoryStats deviceMemoryStats(int deviceType, int deviceIndex) {
    org.oneflow.jni.of_device_memory_stats_t s = new org.oneflow.jni.of_device_memory_stats_t();
    try {
      Status.check(OneflowC.of_device_memory_stats(deviceType, deviceIndex, s));
      return new DeviceMemoryStats(s.getBytes_in_use(), s.getPeak_bytes_in_use(), s.getBytes_reserved(),
          s.getPeak_bytes_reserved(), s.getBytes_cached(), s.getAllocations(), s.getDevice_allocations(),
          s.getDevice_frees(), s.getOut_of_memory());
    } finally {
      s.delete();
    }
  }

  /** Gives the device's cached memory that no tensor uses back to the device; tensors are unaffected. */
  public static void emptyDeviceCache(int deviceType, int deviceIndex) {
    Status.check(OneflowC.of_device_empty_cache(deviceType, deviceIndex));
  }

  /** of_device_memory_stats_t as values (bytes and counts since the process started). */
  public static final class DeviceMemoryStats {
    public final long bytesInUse, peakBytesInUse, bytesReserved, peakBytesReserved, bytesCached, allocations,
        deviceAllocations, deviceFrees, outOfMemory;

    DeviceMemoryStats(long bytesInUse, long peakBytesInUse, long bytesReserved, long peakBytesReserved,
        long bytesCached, long allocations, long deviceAllocations, long deviceFrees, long outOfMemory) {
      this.bytesInUse = bytesInUse;
      this.peakBytesInUse = peakBytesInUse;
      this.bytesReserved = bytesReserved;
      this.peakBytesReserved = peakBytesReserved;
      this.bytesCached = bytesCached;
      this.allocations = allocations;
      this.deviceAllocations = deviceAllocations;
      this.deviceFrees = deviceFrees;
      this.outOfMemory = outOfMemory;
    }

    @Override
    public String toString() {
      return "DeviceMemoryStats{inUse=" + bytesInUse + ", peakInUse=" + peakBytesInUse + ", reserved=" + bytesReserved
          + ", peakReserved=" + peakBytesReserved + ", cached=" + bytesCached + ", allocations=" + allocations
          + ", deviceAllocations=" + deviceAllocations + ", deviceFrees=" + deviceFrees + ", outOfMemory="
          + outOfMemory + "}";
    }
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
