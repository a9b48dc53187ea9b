package org.oneflow;

/** OF_STATUS_PERMISSION_DENIED (7). */
public class PermissionDeniedException extends OneflowException {
  private static final long serialVersionUID = 1L;

  public PermissionDeniedException(String message) {
    super(7, message);
  }
}
