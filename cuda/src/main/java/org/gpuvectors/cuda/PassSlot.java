package org.gpuvectors.cuda;

import org.gpuvectors.cuda.runtime.Driver;
import org.gpuvectors.cuda.runtime.PinnedHostBuffer;
import org.gpuvectors.cuda.runtime.Lane;
import java.util.ArrayDeque;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.JCudaDriver;

/**
 * What one search pass in flight owns, so that a second pass can be enqueued while the first runs on the device
 * ({@link GpuDevice#beginPass}): its lanes (its own streams and cuBLAS handles; the first carries the pass, the
 * others its small groups), the stream its large groups' queries are copied on ({@link QueryUploads}), pinned host
 * buffers for its asynchronous uploads and downloads, the event that marks
 * its end, and the device blocks returned while it was enqueued, which are not lent again before that end (another
 * pass's streams could otherwise overwrite them while this pass's kernels still read them).
 *
 * <p>Owned and closed by its device; used under the device's lock, except {@link GpuDevice#awaitPass}.
 */
final class PassSlot implements AutoCloseable {
  final Lane[] lanes; // [0] at once, the others on the first pass that spreads groups
  final PinnedHostBuffer upload = new PinnedHostBuffer();
  final PinnedHostBuffer download = new PinnedHostBuffer();
  final PinnedHostBuffer queries = new PinnedHostBuffer(); // large groups' queries, staged for the copy stream
  private Lane copies; // created on the first pass with a large group
  final ArrayDeque<long[]> returned = new ArrayDeque<>(); // (address, size class) of blocks returned in the pass
  final CUevent finished = new CUevent();
  boolean busy; // guarded by the device lock
  PassGraph graph; // the captured pass this slot's pass launched, released when it ends; guarded by the device lock

  PassSlot(int laneCount) {
    lanes = new Lane[laneCount];
    lanes[0] = new Lane();
    boolean ok = false;
    try {
      Driver.check("cuEventCreate", JCudaDriver.cuEventCreate(finished, CUevent_flags.CU_EVENT_DISABLE_TIMING));
      ok = true;
    } finally {
      if (!ok) {
        lanes[0].close();
      }
    }
  }

  /** The stream that large groups' queries are copied on ({@link QueryUploads}), created on first use. */
  Lane copies() {
    if (copies == null) {
      copies = new Lane();
    }
    return copies;
  }

  /** The copy stream if it was made, else null (to wait for it). */
  Lane copiesIfMade() {
    return copies;
  }

  /** Waits for the slot's streams, then frees its lanes, event and pinned buffers. */
  @Override
  public void close() {
    try {
      if (copies != null) {
        copies.close();
      }
      for (int i = lanes.length - 1; i >= 0; i--) { // each waits for its own work first
        if (lanes[i] != null) {
          lanes[i].close();
        }
      }
    } finally {
      JCudaDriver.cuEventDestroy(finished);
      try {
        upload.close();
      } finally {
        try {
          download.close();
        } finally {
          queries.close();
        }
      }
    }
  }
}
