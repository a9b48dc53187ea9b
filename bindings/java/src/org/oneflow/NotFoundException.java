package org.oneflow;

/** OF_STATUS_NOT_FOUND (5). */
public class NotFoundException extends OneflowException {
  private static final long serialVersionUID = 1L;

  public NotFoundException(String message) {
    super(5, message);
  }
}
