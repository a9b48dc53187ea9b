package org.oneflow;

/** OF_STATUS_FAILED_PRECONDITION (9). */
public class FailedPreconditionException extends OneflowException {
  private static final long serialVersionUID = 1L;

  public FailedPreconditionException(String message) {
    super(9, message);
  }
}
