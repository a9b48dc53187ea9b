package org.oneflow;

/** OF_STATUS_UNAVAILABLE (14). */
public class UnavailableException extends OneflowException {
  private static final long serialVersionUID = 1L;

  public UnavailableException(String message) {
    super(14, message);
  }
}
