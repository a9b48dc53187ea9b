package org.oneflow;

/** OF_STATUS_UNIMPLEMENTED (12). */
public class UnimplementedException extends OneflowException {
  private static final long serialVersionUID = 1L;

  public UnimplementedException(String message) {
    super(12, message);
  }
}
