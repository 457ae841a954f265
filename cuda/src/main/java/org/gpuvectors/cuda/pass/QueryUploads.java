package org.gpuvectors.cuda.pass;

import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.device.HostRows;
import org.gpuvectors.cuda.device.PassSlot;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.Driver;
import org.gpuvectors.cuda.runtime.Lane;
import org.gpuvectors.cuda.runtime.PinnedHostBuffer;
import java.nio.FloatBuffer;
import java.util.function.Consumer;
import jcuda.driver.JCudaDriver;

/**
 * The queries of a pass's large groups ({@link BatchSearch}'s direct groups) on their way to the device: staged
 * into the pass slot's pinned buffer and copied on the slot's copy stream ({@link PassSlot#copies()}), each copy
 * ordered before the kernels that read it by an event, not by a wait of the host. A search that enqueues its
 * queries block by block ({@code GpuFlatIndex}'s GEMM path: {@code GpuFlatIndex#queryBlocks}; {@code GpuIvfPqIndex}:
 * {@code GpuIvfPqIndex#queryBlocks}) asks for each block just before it enqueues it ({@link Feed#await}), so that the
 * next block is staged and copied while the GPU searches this one; the other searches ask for all their queries at
 * once. A batch's queries copied in one synchronous copy before the first kernel would leave the GPU idle for the
 * whole copy (tens of MB for a batch of 10k queries).
 *
 * <p>One per pass, made and used under the device lock while the pass is enqueued.
 */
public final class QueryUploads {

  private final GpuDevice device;
  private final PassSlot slot;
  private long capacity; // bytes of the slot's pinned buffer this pass stages into (sized once, never grown)
  private long filled; // bytes staged since the copy stream was last waited for: the copies still reading them
  private boolean copied; // whether anything went on the copy stream

  /**
   * @param bytes the pass's direct queries, all groups together: the pinned buffer is sized to them (up to {@link
   *     PinnedHostBuffer#MAX_BYTES}) before the first copy, since growing it later would free memory that copies in
   *     flight still read
   */
  QueryUploads(GpuDevice device, PassSlot slot, long bytes) {
    this.device = device;
    this.slot = slot;
    if (bytes > 0) {
      capacity = Math.min(slot.queries().bytes(bytes).capacity(), device.config().pass().queryStagingBytes());
    }
  }

  /** The feed of one group whose queries go to {@code dst} at {@code dstByteOffset}, row-major. */
  Feed feed(SearchGroup group, DeviceBuffer dst, long dstByteOffset) {
    return new Feed(group, dst, dstByteOffset);
  }

  /** Orders the pass's first lane after every copy: before its downloads and the event that ends the pass. */
  void finish() {
    if (copied) {
      slot.firstLane().waitFor(slot.copies());
    }
  }

  /** One group's queries, copied up to the highest row a search asked for. */
  public final class Feed {
    private final SearchGroup group;
    private final DeviceBuffer dst;
    private final long dstByteOffset;
    private int uploaded; // rows copied (or enqueued on the copy stream) so far

    private Feed(SearchGroup group, DeviceBuffer dst, long dstByteOffset) {
      this.group = group;
      this.dst = dst;
      this.dstByteOffset = dstByteOffset;
    }

    /**
     * Makes the work enqueued from now on, on the current stream, start only after queries [0, upTo) are on the
     * device, enqueuing the copies of those not yet sent. Asynchronous, except when the pinned buffer is full: then
     * the host waits for the copies that still read it (never for a kernel).
     */
    void await(int upTo) {
      device.checkLocked();
      int rows = Math.min(upTo, group.numQueries());
      if (rows <= uploaded) {
        if (uploaded > 0) {
          device.currentLane().waitFor(slot.copies()); // another lane may ask for rows sent before
        }
        return;
      }
      Lane copies = slot.copies();
      if (!copied) {
        copies.waitFor(slot.firstLane()); // the destination may be a block that work before the pass still reads
        copied = true;
      }
      int dims = group.index().dims();
      long rowBytes = 4L * dims;
      int rowsPerCopy = (int) Math.max(1, capacity / rowBytes);
      while (uploaded < rows) {
        int count = Math.min(rowsPerCopy, rows - uploaded);
        long bytes = count * rowBytes;
        if (filled + bytes > capacity) {
          copies.synchronize(); // the copies before read the buffer: wait for them (the GPU runs meanwhile)
          filled = 0;
        }
        stage(group, uploaded, count, slot.queries().floats(capacity), (int) (filled / 4));
        Driver.check("cuMemcpyHtoDAsync", JCudaDriver.cuMemcpyHtoDAsync(
            Driver.deviceptr(dst.address() + dstByteOffset + uploaded * rowBytes), slot.queries().pointer().withByteOffset(filled), bytes,
            copies.stream()));
        filled += bytes;
        uploaded += count;
      }
      device.currentLane().waitFor(copies);
    }

    /** {@link #await} of all the group's queries. */
    public void awaitAll() {
      await(group.numQueries());
    }
  }

  /**
   * Where the blocks of a search of {@code nq} arriving queries start, and nq at the end: a first block of at most
   * {@code first}, then blocks of about equal size, at most {@code max} (both at least 1). The first block is short
   * because its queries' copy to the device is the one no search runs beside; the copies of the others run while
   * the blocks before them are searched.
   */
  public static int[] blocks(int nq, int first, int max) {
    if (first < 1 || max < 1) {
      throw new IllegalArgumentException("blocks must hold at least one query: first " + first + ", max " + max);
    }
    if (nq == 0) {
      return new int[] {0};
    }
    int head = Math.min(nq, Math.min(first, max));
    int rest = nq - head;
    int count = (int) ((rest + (long) max - 1) / max);
    int[] starts = new int[count + 2];
    starts[1] = head;
    for (int b = 1; b <= count; b++) {
      starts[b + 1] = head + (int) ((long) rest * b / count);
    }
    return starts;
  }

  /**
   * One block of a search's queries ({@link #blocks}): its first query, its size, and the device addresses of its
   * queries, their norms (0: none) and their accept masks (0: none).
   */
  public record Block(int first, int count, long queries, long norms, long accept) {}

  /**
   * Hands the blocks that {@code starts} ({@link #blocks}) marks out of queries of {@code dims} floats to {@code
   * enqueue} in order, each after its queries are on the device when they are still {@code arriving} (null: all are
   * there), so that the next block is copied while this one is searched. Addresses as the search's: queries
   * row-major, norms one float a query (0: none), accept masks {@code acceptRowWords} words a query (0 words: one
   * mask shared by all; address 0: none).
   */
  public static void forEachBlock(int[] starts, int dims, long queries, long queryNorms, long acceptAddress,
                           long acceptRowWords, Feed arriving, Consumer<Block> enqueue) {
    for (int b = 0; b + 1 < starts.length; b++) {
      int q0 = starts[b];
      int count = starts[b + 1] - q0;
      if (arriving != null) {
        arriving.await(q0 + count);
      }
      enqueue.accept(new Block(q0, count, queries + 4L * q0 * dims, queryNorms == 0 ? 0 : queryNorms + 4L * q0,
          acceptAddress == 0 ? 0 : acceptAddress + 8L * q0 * acceptRowWords));
    }
  }

  /**
   * Copies queries [from, from + rows) of the group row-major into {@code dst} from float {@code at} on, on the
   * common pool from {@link HostRows#PARALLEL_STAGING_ROWS} rows on (blocks of 256 rows; absolute puts: no shared position).
   */
  static void stage(SearchGroup group, int from, int rows, FloatBuffer dst, int at) {
    HostRows.stage(group.queries(), group.queryRows(), group.index().dims(), from, rows, dst, at);
  }
}
