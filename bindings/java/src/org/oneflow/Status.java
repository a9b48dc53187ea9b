package org.oneflow;

import java.nio.charset.StandardCharsets;
import org.oneflow.jni.OneflowC;

/** Turns a returned of_status_t* into an exception, freeing it (every failing status is freed here). */
final class Status {
  private Status() {}

  /** Nothing for 0 (success); otherwise reads the code and message, frees the status and throws. */
  static void check(long status) {
    if (status == 0) return;
    int code;
    String message;
    try {
      code = OneflowC.of_status_code(status);
      message = new String(OneflowC.of_status_message(status), StandardCharsets.UTF_8);
    } finally {
      OneflowC.of_status_destroy(status);
    }
    throw OneflowException.of(code, message);
  }
}
