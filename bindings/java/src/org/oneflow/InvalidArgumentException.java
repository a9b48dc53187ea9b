package org.oneflow;

/** OF_STATUS_INVALID_ARGUMENT (3). */
public class InvalidArgumentException extends OneflowException {
  private static final long serialVersionUID = 1L;

  public InvalidArgumentException(String message) {
    super(3, message);
  }
}
