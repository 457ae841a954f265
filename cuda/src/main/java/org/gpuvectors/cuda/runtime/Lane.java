package org.gpuvectors.cuda.runtime;

import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

/**
 * One CUDA stream of a {@link GpuDevice}, with the event that orders other lanes after its work and the cuBLAS
 * handle bound to it (created on first use: a handle per stream, because a handle's workspace is not safe to share
 * between kernels running at once). Lane 0 is the device's stream, on which everything runs by default; the
 * others run the small groups of a pass at the same time ({@link GpuDevice.Lanes}).
 *
 * <p>Every lane's stream is a blocking stream (flag 0): the synchronous copies on the legacy default stream
 * (uploads, downloads) are ordered after the work of every lane, and every lane's later work after them.
 *
 * <p>Owned and closed by its device; used under the device's lock.
 */
public final class Lane implements AutoCloseable {
  private final CUstream stream = new CUstream();
  private final CUevent done = new CUevent();
  private Cublas.Handle cublas;
  private boolean closed;

  public Lane() {
    Driver.check("cuStreamCreate", JCudaDriver.cuStreamCreate(stream, 0));
    boolean ok = false;
    try {
      Driver.check("cuEventCreate", JCudaDriver.cuEventCreate(done, CUevent_flags.CU_EVENT_DISABLE_TIMING));
      ok = true;
    } finally {
      if (!ok) {
        JCudaDriver.cuStreamDestroy(stream);
      }
    }
  }

  public CUstream stream() {
    return stream;
  }

  public Cublas.Handle cublas() {
    if (cublas == null) {
      cublas = Cublas.get().new Handle(Driver.address(stream));
    }
    return cublas;
  }

  /** Makes this lane's later work wait for everything enqueued on {@code other} so far (asynchronous). */
  public void waitFor(Lane other) {
    Driver.check("cuEventRecord", JCudaDriver.cuEventRecord(other.done, other.stream));
    Driver.check("cuStreamWaitEvent", JCudaDriver.cuStreamWaitEvent(stream, other.done, 0));
  }

  public void synchronize() {
    Driver.check("cuStreamSynchronize", JCudaDriver.cuStreamSynchronize(stream));
  }

  /** Waits for the lane's work, then destroys its cuBLAS handle, event and stream. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    JCudaDriver.cuStreamSynchronize(stream);
    try {
      if (cublas != null) {
        cublas.close();
      }
    } finally {
      JCudaDriver.cuEventDestroy(done);
      JCudaDriver.cuStreamDestroy(stream);
    }
  }
}
