package org.oneflow;

/** OF_STATUS_CANCELLED (1). */
public class CancelledException extends OneflowException {
  private static final long serialVersionUID = 1L;

  public CancelledException(String message) {
    super(1, message);
  }
}
