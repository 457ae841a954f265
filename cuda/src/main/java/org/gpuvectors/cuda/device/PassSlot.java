package org.gpuvectors.cuda.device;

import org.gpuvectors.cuda.runtime.Driver;
import org.gpuvectors.cuda.runtime.Lane;
import org.gpuvectors.cuda.runtime.PinnedHostBuffer;
import java.util.ArrayDeque;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.JCudaDriver;

/**
 * What one search pass in flight owns, so that a second pass can be enqueued while the first runs on the device
 * ({@link GpuDevice#beginPass}): its lanes (its own streams and cuBLAS handles; the first carries the pass, the
 * others its small groups), the stream its large groups' queries are copied on ({@code QueryUploads}), pinned host
 * buffers for its asynchronous uploads and downloads, the event that marks
 * its end, and the device blocks returned while it was enqueued, which are not lent again before that end (another
 * pass's streams could otherwise overwrite them while this pass's kernels still read them).
 *
 * <p>Owned and closed by its device; used under the device's lock, except {@link GpuDevice#awaitPass}.
 */
public final class PassSlot implements AutoCloseable {
  private final Lane[] lanes; // [0] at once, the others on the first pass that spreads groups
  private final PinnedHostBuffer upload = new PinnedHostBuffer();
  private final PinnedHostBuffer download = new PinnedHostBuffer();
  private final PinnedHostBuffer queries = new PinnedHostBuffer(); // large groups' queries, staged for the copy stream
  private Lane copies; // created on the first pass with a large group
  private final ArrayDeque<long[]> returned = new ArrayDeque<>(); // (address, size class) of blocks returned in the pass
  private final CUevent finished = new CUevent();
  private boolean busy; // guarded by the device lock
  private boolean overlapped; // whether another pass was in flight when this one began; guarded by the device lock
  private Runnable atEnd; // what the pass gives back when it ends (a captured pass it launched); guarded by the device lock

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

  /** The slot's lanes: [0] carries the pass, the others its small groups (null until first spread over). */
  Lane[] lanes() {
    return lanes;
  }

  /** Pinned host memory of the pass's one input copy. */
  public PinnedHostBuffer upload() {
    return upload;
  }

  /** Pinned host memory of the pass's one result copy. */
  public PinnedHostBuffer download() {
    return download;
  }

  /** Pinned host memory of the large groups' queries on their way to the copy stream. */
  public PinnedHostBuffer queries() {
    return queries;
  }

  /** The lane that carries the pass. */
  public Lane firstLane() {
    return lanes[0];
  }

  /** Device blocks returned while the pass was enqueued: (address, size class). */
  ArrayDeque<long[]> returned() {
    return returned;
  }

  /** The event recorded after the pass's last work. */
  CUevent finished() {
    return finished;
  }

  /** Whether a pass holds the slot; under the device lock. */
  boolean busy() {
    return busy;
  }

  /** A pass takes the slot ({@code overlapped}: another pass was in flight); under the device lock. */
  void begin(boolean overlapped) {
    this.busy = true;
    this.overlapped = overlapped;
  }

  /** The pass gave the slot back; under the device lock. */
  void end() {
    busy = false;
  }

  /** Whether another pass was in flight when this slot's pass began; under the device lock. */
  public boolean overlapped() {
    return overlapped;
  }

  /**
   * Runs {@code release} when the pass ends ({@link GpuDevice#endPass}, under the device lock), ended or failed: a
   * captured pass it launched becomes idle again. Under the device lock.
   */
  public void atEnd(Runnable release) {
    atEnd = release;
  }

  /** Runs and forgets what {@link #atEnd} asked for; under the device lock. */
  void runAtEnd() {
    Runnable r = atEnd;
    atEnd = null;
    if (r != null) {
      r.run();
    }
  }

  /** The stream that large groups' queries are copied on ({@code QueryUploads}), created on first use. */
  public Lane copies() {
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
