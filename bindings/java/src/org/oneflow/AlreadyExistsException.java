package org.oneflow;

/** OF_STATUS_ALREADY_EXISTS (6). */
public class AlreadyExistsException extends OneflowException {
  private static final long serialVersionUID = 1L;

  public AlreadyExistsException(String message) {
    super(6, message);
  }
}
