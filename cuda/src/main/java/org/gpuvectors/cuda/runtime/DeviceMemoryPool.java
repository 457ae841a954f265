package org.gpuvectors.cuda.runtime;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import jcuda.driver.CUresult;

/**
 * Device-memory pool of one {@link GpuDevice}: requests are rounded up to a size class (256 B
 * minimum, then quarter steps between powers of two, at most 25% waste) and freed blocks are kept
 * per size class for reuse. When cuMemAlloc runs out of memory, cached blocks are freed and the
 * allocation retried once. Blocks waiting in a sink ({@link #deferTo}) are not the pool's to free then:
 * only the device knows when nothing reads them any more ({@link #releaseHeld}).
 *
 * <p>Threading: called only under the owning device's lock.
 */
public final class DeviceMemoryPool implements AutoCloseable {
  private final DeviceHeap heap;
  private final Map<Long, ArrayDeque<Long>> free = new HashMap<>();
  private long bytesInUse;
  private long bytesCached;
  private long liveBlocks;
  private boolean closed;
  private ArrayDeque<long[]> returnedTo; // where returned blocks wait instead of the pool; null: straight back

  /** A pool of the current context's device memory. */
  public DeviceMemoryPool() {
    this(DeviceHeap.DRIVER);
  }

  /** A pool of the blocks of {@code heap}. */
  DeviceMemoryPool(DeviceHeap heap) {
    this.heap = heap;
  }

  public static long sizeClass(long bytes) {
    if (bytes <= 256) {
      return 256;
    }
    long high = Long.highestOneBit(bytes - 1) << 1; // next power of two >= bytes
    long step = Math.max(256, high / 8);             // quarter steps of the lower power of two
    return (bytes + step - 1) / step * step;
  }

  public DeviceBuffer allocate(long bytes) {
    if (closed) {
      throw new IllegalStateException("device memory pool closed");
    }
    if (bytes < 0) {
      throw new IllegalArgumentException("bytes < 0: " + bytes);
    }
    long cls = sizeClass(Math.max(1, bytes));
    ArrayDeque<Long> q = free.get(cls);
    long address;
    if (q != null && !q.isEmpty()) {
      address = q.pop();
      bytesCached -= cls;
    } else {
      address = cuMemAlloc(cls);
    }
    bytesInUse += cls;
    liveBlocks++;
    return new DeviceBuffer(this, address, cls, bytes);
  }

  private long cuMemAlloc(long cls) {
    long[] address = new long[1];
    int rc = heap.allocate(cls, address);
    if (rc == CUresult.CUDA_ERROR_OUT_OF_MEMORY && bytesCached > 0) {
      trim();
      rc = heap.allocate(cls, address);
    }
    Driver.check("cuMemAlloc(" + cls + " bytes)", rc);
    return address[0];
  }

  void release(long address, long cls) {
    if (returnedTo != null && !closed) {
      returnedTo.add(new long[] {address, cls}); // still lent out until released
      return;
    }
    bytesInUse -= cls;
    liveBlocks--;
    if (closed) {
      heap.free(address); // late close after the device: best effort
      return;
    }
    free.computeIfAbsent(cls, c -> new ArrayDeque<>()).push(address);
    bytesCached += cls;
  }

  /**
   * Blocks returned from now on wait in {@code sink} (null: they go straight back to the pool), until {@link
   * #releaseAll} of it: a pass in flight keeps them out of other passes' reach until the device is done with it.
   * Returns the sink before.
   */
  public ArrayDeque<long[]> deferTo(ArrayDeque<long[]> sink) {
    ArrayDeque<long[]> before = returnedTo;
    returnedTo = sink;
    return before;
  }

  /** Whether blocks returned now wait in {@code sink} ({@link #deferTo}). */
  public boolean returnsTo(ArrayDeque<long[]> sink) {
    return sink != null && returnedTo == sink;
  }

  /**
   * Returns the blocks waiting in {@code blocks} (address, size class) to the pool, or frees them once the pool is
   * closed. While a sink is set ({@link #deferTo}) they move into it instead: a sink's own blocks go back through
   * {@link #releaseHeld}.
   */
  public void releaseAll(ArrayDeque<long[]> blocks) {
    if (blocks == returnedTo && !closed) {
      throw new IllegalStateException("blocks released into their own sink: use releaseHeld");
    }
    while (!blocks.isEmpty()) {
      long[] block = blocks.poll();
      release(block[0], block[1]);
    }
  }

  /**
   * Returns the blocks waiting in {@code sink} to the pool now, past any sink, and leaves the sink as it is:
   * blocks returned later still wait in it, and a later {@link #releaseAll} of it finds none of these again. The
   * caller has made sure that nothing still reads them (the device waited for the streams that may); returns the
   * bytes returned.
   */
  public long releaseHeld(ArrayDeque<long[]> sink) {
    long bytes = 0;
    for (long[] block : sink) {
      bytes += block[1];
    }
    ArrayDeque<long[]> before = deferTo(null);
    try {
      releaseAll(sink);
    } finally {
      deferTo(before);
    }
    return bytes;
  }

  /** Frees every cached (unused) block. */
  void trim() {
    for (ArrayDeque<Long> q : free.values()) {
      for (Long a : q) {
        Driver.check("cuMemFree", heap.free(a));
      }
      q.clear();
    }
    bytesCached = 0;
  }

  public long bytesInUse() {
    return bytesInUse;
  }

  public long bytesCached() {
    return bytesCached;
  }

  long liveBlocks() {
    return liveBlocks;
  }

  /** Frees the cached blocks; blocks still lent out are freed when their buffers close. */
  @Override
  public void close() {
    if (!closed) {
      trim();
      closed = true;
    }
  }
}
