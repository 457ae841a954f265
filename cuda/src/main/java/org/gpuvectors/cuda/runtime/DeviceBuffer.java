package org.gpuvectors.cuda.runtime;

/**
 * A block of device memory taken from a {@link GpuDevice}'s pool. Closing returns it to the pool
 * (it is reused for a later request of the same size class); the pool frees it on device close.
 *
 * <p>Not thread-safe; one owner. Use only while holding the device's lock ({@link GpuDevice#lock()}).
 */
public final class DeviceBuffer implements AutoCloseable {
  private final DeviceMemoryPool pool;
  private final long address;
  private final long capacity;
  private final long bytes;
  private boolean closed;

  DeviceBuffer(DeviceMemoryPool pool, long address, long capacity, long bytes) {
    this.pool = pool;
    this.address = address;
    this.capacity = capacity;
    this.bytes = bytes;
  }

  /**
   * Bytes {@code [offset, offset + bytes)} of this block as a buffer that owns nothing: closing it returns nothing to
   * the pool, and it must not be used after this block is closed. One pass's inputs (queries, masks) and outputs
   * (distances, ids) each lie in one block so that each crosses the bus in one copy ({@link BatchSearch}).
   */
  public DeviceBuffer slice(long offset, long bytes) {
    ensureOpen();
    if (offset < 0 || bytes < 0 || offset + bytes > this.bytes) {
      throw new IndexOutOfBoundsException("slice [" + offset + ", " + (offset + bytes) + ") of " + this.bytes + " bytes");
    }
    return new DeviceBuffer(null, address + offset, bytes, bytes);
  }

  /** The raw device address. */
  public long address() {
    ensureOpen();
    return address;
  }

  /** The bytes asked for. */
  public long bytes() {
    return bytes;
  }

  /** The bytes reserved (the size class). */
  public long capacity() {
    return capacity;
  }

  void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("device buffer already closed");
    }
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      if (pool != null) { // a slice owns nothing
        pool.release(address, capacity);
      }
    }
  }
}
