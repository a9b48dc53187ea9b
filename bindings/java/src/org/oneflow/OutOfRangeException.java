package org.oneflow;

/** OF_STATUS_OUT_OF_RANGE (11). */
public class OutOfRangeException extends OneflowException {
  private static final long serialVersionUID = 1L;

  public OutOfRangeException(String message) {
    super(11, message);
  }
}
