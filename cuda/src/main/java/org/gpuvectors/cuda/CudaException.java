package org.gpuvectors.cuda;

/** A CUDA driver, kernel or cuBLAS call failed; the message names the call and its error. */
public final class CudaException extends RuntimeException {
  private final int code;

  public CudaException(String call, int code, String error) {
    super(call + " failed: " + error + " (" + code + ")");
    this.code = code;
  }

  public CudaException(String message, Throwable cause) {
    super(message, cause);
    this.code = -1;
  }

  /** The CUDA / cuBLAS status code, or -1 when the failure had none. */
  public int code() {
    return code;
  }
}
