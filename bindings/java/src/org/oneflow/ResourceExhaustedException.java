package org.oneflow;

/** OF_STATUS_RESOURCE_EXHAUSTED (8). */
public class ResourceExhaustedException extends OneflowException {
  private static final long serialVersionUID = 1L;

  public ResourceExhaustedException(String message) {
    super(8, message);
  }
}
