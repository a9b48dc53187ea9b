package org.oneflow;

/** OF_STATUS_DATA_LOSS (15). */
public class DataLossException extends OneflowException {
  private static final long serialVersionUID = 1L;

  public DataLossException(String message) {
    super(15, message);
  }
}
