package org.oneflow;

import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.oneflow.jni.OneflowC;

/** Named tensors in the safetensors format (PyTorch, JAX and Hugging Face read and write it). */
public final class SafeTensors {
  private SafeTensors() {}

  /** Writes the tensors under their names, in the map's order (atomically: a temporary file renamed). */
  public static void save(String path, Map<String, Tensor> tensors) {
    String[] names = new String[tensors.size()];
    Tensor[] values = new Tensor[tensors.size()];
    int i = 0;
    for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
      names[i] = e.getKey();
      values[i++] = e.getValue();
    }
    long[] ptrs = Tensor.ptrs(values, "tensors");
    try {
      Status.check(OneflowC.of_safetensors_save(path, names, ptrs));
    } finally {
      Reference.reachabilityFence(values);
    }
  }

  /** Reads every tensor of the file onto session's default device, in file order (close them). */
  public static LinkedHashMap<String, Tensor> load(Session session, String path) {
    SessionHandle s = session.opSession();
    long[] list = new long[1];
    Status.check(OneflowC.of_safetensors_load(s.ptr(), path, list));
    LinkedHashMap<String, Tensor> result = new LinkedHashMap<>();
    try {
      long n = OneflowC.of_tensor_list_count(list[0]);
      for (long i = 0; i < n; ++i) {
        byte[][] name = new byte[1][];
        long[] t = new long[1];
        Status.check(OneflowC.of_tensor_list_name(list[0], i, name));
        Status.check(OneflowC.of_tensor_list_get(list[0], i, t));
        result.put(new String(name[0], StandardCharsets.UTF_8), new Tensor(s, t[0]));
      }
    } catch (RuntimeException e) {
      for (Tensor t : result.values()) t.close();
      throw e;
    } finally {
      OneflowC.of_tensor_list_destroy(list[0]);
      Reference.reachabilityFence(session);
    }
    return result;
  }

  /**
   * Copies the file's tensors into existing tensors by name, in place (e.g. a model's parameters).
   * strict: every name must be in the file and every tensor of the file named. A failure modifies nothing.
   */
  public static void loadInto(String path, Map<String, Tensor> tensors, boolean strict) {
    String[] names = new String[tensors.size()];
    Tensor[] values = new Tensor[tensors.size()];
    int i = 0;
    for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
      names[i] = e.getKey();
      values[i++] = e.getValue();
    }
    long[] ptrs = Tensor.ptrs(values, "tensors");
    try {
      Status.check(OneflowC.of_safetensors_load_into(path, names, ptrs, strict));
    } finally {
      Reference.reachabilityFence(values);
    }
  }
}
