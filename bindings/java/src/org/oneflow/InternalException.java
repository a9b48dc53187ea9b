package org.oneflow;

/** OF_STATUS_INTERNAL (13). */
public class InternalException extends OneflowException {
  private static final long serialVersionUID = 1L;

  public InternalException(String message) {
    super(13, message);
  }
}
