package org.oneflow;

import java.lang.ref.Cleaner;

/** The one Cleaner of the binding: the backstop that releases native objects left unclosed. */
final class Resources {
  static final Cleaner CLEANER = Cleaner.create(r -> {
    Thread t = new Thread(r, "oneflow-cleaner");
    t.setDaemon(true);
    return t;
  });

  private Resources() {}
}
