package org.oneflow.jni;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads the JNI library of the binding (liboneflow_java.so, which links liboneflow_c): first through
 * {@code java.library.path} (System.loadLibrary), then from the folder of the jar that holds this
 * class. A failure is an UnsatisfiedLinkError naming the library and every path tried; nothing here
 * exits the process. Also the string conversions of the SWIG typemaps (NUL-terminated UTF-8).
 */
public final class NativeLibrary {
  /** The JNI library's name, as System.loadLibrary takes it. */
  public static final String NAME = "oneflow_java";
  private static volatile boolean loaded;

  private NativeLibrary() {}

  /** Loads the library once; later calls return at once. */
  public static synchronized void load() {
    if (loaded) return;
    List<String> tried = new ArrayList<>();
    String file = System.mapLibraryName(NAME);
    String override = System.getProperty("oneflow.java.library");
    if (override != null) {
      tried.add(override);
      System.load(override);
      loaded = true;
      return;
    }
    try {
      System.loadLibrary(NAME);
      loaded = true;
      return;
    } catch (UnsatisfiedLinkError e) {
      for (String dir : System.getProperty("java.library.path", "").split(File.pathSeparator)) {
        if (!dir.isEmpty()) tried.add(new File(dir, file).getPath());
      }
      tried.add("(System.loadLibrary: " + e.getMessage() + ")");
    }
    File next = besideJar(file);
    if (next != null) {
      tried.add(next.getPath());
      if (next.isFile()) {
        try {
          System.load(next.getAbsolutePath());
          loaded = true;
          return;
        } catch (UnsatisfiedLinkError e) {
          tried.add("(" + e.getMessage() + ")");
        }
      }
    }
    throw new UnsatisfiedLinkError("oneflow: cannot load the JNI library " + file + " (which needs liboneflow_c); tried "
        + String.join(", ", tried) + ". Set -Djava.library.path to its folder or put it next to the jar.");
  }

  private static File besideJar(String file) {
    try {
      java.security.CodeSource src = NativeLibrary.class.getProtectionDomain().getCodeSource();
      if (src == null || src.getLocation() == null) return null;
      File where = new File(src.getLocation().toURI());
      File dir = where.isDirectory() ? where : where.getParentFile();
      return dir == null ? null : new File(dir, file);
    } catch (Exception e) {
      return null;
    }
  }

  /** NUL-terminated UTF-8 of s (null stays null). A string holding NUL cannot be passed to C. */
  public static byte[] cString(String s) {
    if (s == null) return null;
    if (s.indexOf('\0') >= 0) throw new IllegalArgumentException("a string passed to oneflow_c holds a NUL character");
    byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
    byte[] z = new byte[utf8.length + 1];
    System.arraycopy(utf8, 0, z, 0, utf8.length);
    return z;
  }

  /** UTF-8 of each string (the typemap adds the NULs). */
  public static byte[][] cStrings(String[] s) {
    if (s == null) return null;
    byte[][] out = new byte[s.length][];
    for (int i = 0; i < s.length; ++i) {
      if (s[i] == null) throw new NullPointerException("name " + i);
      if (s[i].indexOf('\0') >= 0) throw new IllegalArgumentException("name " + i + " holds a NUL character");
      out[i] = s[i].getBytes(StandardCharsets.UTF_8);
    }
    return out;
  }
}
