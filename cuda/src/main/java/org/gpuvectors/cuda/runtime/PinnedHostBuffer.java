package org.gpuvectors.cuda.runtime;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import jcuda.Pointer;
import jcuda.driver.JCudaDriver;

/**
 * A page-locked (pinned) host buffer that staging copies go through: the driver copies pinned memory
 * to the device by DMA at full bus speed, whereas an upload from a Java array (pageable) is copied
 * through the driver's own staging buffers first, at a fraction of it (~4 ms for the 31 MB of a
 * 10k x 784 batch). Allocating pinned memory is slow (it locks pages), so the buffer
 * is kept and reused, grown to the largest copy up to {@link #MAX_BYTES} (larger copies go in
 * chunks).
 *
 * <p>Owned by its {@link GpuDevice} or a {@link PassSlot}, used and freed under the device lock with its context
 * current (a slot's buffers also by the thread that waits for its pass).
 */
public final class PinnedHostBuffer implements AutoCloseable {

  /** The largest buffer kept: 32 MB, a batch of 10k 784-dimensional queries in one copy. */
  public static final long MAX_BYTES = 32L << 20;

  private Pointer host; // null until the first copy, and after close
  private long capacity;
  private ByteBuffer buffer;
  private FloatBuffer floats;

  /** The buffer as floats, at least {@code min(bytes, MAX_BYTES)} bytes of it (grown if needed). */
  public FloatBuffer floats(long bytes) {
    bytes(bytes);
    return floats;
  }

  /**
   * The buffer as bytes in native order (absolute gets and puts; views made of it share its memory), at least
   * {@code min(bytes, MAX_BYTES)} of them (grown if needed: the old contents are lost).
   */
  public ByteBuffer bytes(long bytes) {
    long wanted = Math.min(bytes, MAX_BYTES);
    if (host == null || capacity < wanted) {
      free();
      long size = Math.max(wanted, 1L << 20);
      Pointer p = new Pointer();
      Driver.check("cuMemAllocHost", JCudaDriver.cuMemAllocHost(p, size));
      host = p;
      capacity = size;
      buffer = p.getByteBuffer(0, size).order(ByteOrder.nativeOrder());
      floats = buffer.asFloatBuffer();
    }
    return buffer;
  }

  /** The buffer's address for the driver's copies. */
  public Pointer pointer() {
    return host;
  }

  /** Bytes held. */
  long capacity() {
    return capacity;
  }

  private void free() {
    if (host != null) {
      Pointer p = host;
      host = null;
      floats = null;
      buffer = null;
      capacity = 0;
      Driver.check("cuMemFreeHost", JCudaDriver.cuMemFreeHost(p));
    }
  }

  @Override
  public void close() {
    free();
  }
}
