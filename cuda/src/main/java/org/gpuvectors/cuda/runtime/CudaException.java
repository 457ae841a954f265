package org.gpuvectors.cuda.runtime;

import java.util.Set;

/** A CUDA driver, kernel or cuBLAS call failed; the message names the call and its error. */
public final class CudaException extends RuntimeException {
  /**
   * Driver errors after which the context is unusable ("sticky": every later call fails too, until
   * the process ends): illegal address (700), launch timeout (702), hardware stack error (714),
   * illegal instruction (715), misaligned address (716), invalid address space (717), invalid PC
   * (718), launch failed (719), an uncorrectable ECC error (214), a device-side assert (710) and an
   * unknown error (999). Out of memory (2) and bad launch parameters are not sticky.
   */
  private static final Set<Integer> STICKY_DRIVER_ERRORS = Set.of(700, 702, 714, 715, 716, 717, 718, 719, 214, 710, 999);

  private final int code;
  private final boolean sticky;

  private CudaException(String call, int code, String error, boolean sticky) {
    super(call + " failed: " + error + " (" + code + ")");
    this.code = code;
    this.sticky = sticky;
  }

  public CudaException(String message, Throwable cause) {
    super(message, cause);
    this.code = -1;
    this.sticky = false;
  }

  /** A failed CUDA driver call (the result code is a {@code CUresult}). */
  public static CudaException driver(String call, int result, String error) {
    return new CudaException(call, result, error, STICKY_DRIVER_ERRORS.contains(result));
  }

  /** A failed cuBLAS call (the status is a {@code cublasStatus_t}; never sticky by itself). */
  public static CudaException cublas(String call, int status, String error) {
    return new CudaException(call, status, error, false);
  }

  /** The CUDA / cuBLAS status code, or -1 when the failure had none. */
  public int code() {
    return code;
  }

  /** Whether the error poisoned the CUDA context: no later call on this device can succeed. */
  public boolean sticky() {
    return sticky;
  }
}
