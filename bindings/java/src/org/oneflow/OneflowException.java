package org.oneflow;

/**
 * A failing oneflow_c status: {@link #code()} is the status code (OF_STATUS_*, kept as a number when
 * this binding does not know it) and the message is the library's whole message. Subclasses, one per
 * code a caller may want to catch, extend it; the other codes come as OneflowException itself.
 */
public class OneflowException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int code;

  public OneflowException(int code, String message) {
    super(message);
    this.code = code;
  }

  /** The status code (OF_STATUS_*). */
  public int code() {
    return code;
  }

  /** The code's name ("INVALID_ARGUMENT"; "UNRECOGNIZED" for a code the library does not know). */
  public String codeName() {
    return org.oneflow.jni.OneflowC.of_status_code_name(code);
  }

  @Override
  public String toString() {
    return getClass().getName() + " [" + codeName() + " (" + code + ")]: " + getMessage();
  }

  /** The exception of a status code, of the subclass for that code. */
  public static OneflowException of(int code, String message) {
    switch (code) {
      case 1: return new CancelledException(message);
      case 3: return new InvalidArgumentException(message);
      case 5: return new NotFoundException(message);
      case 6: return new AlreadyExistsException(message);
      case 7: return new PermissionDeniedException(message);
      case 8: return new ResourceExhaustedException(message);
      case 9: return new FailedPreconditionException(message);
      case 11: return new OutOfRangeException(message);
      case 12: return new UnimplementedException(message);
      case 13: return new InternalException(message);
      case 14: return new UnavailableException(message);
      case 15: return new DataLossException(message);
      default: return new OneflowException(code, message);
    }
  }
}
