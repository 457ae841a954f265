package org.gpuvectors.cuda.select;

import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.DeviceBuffer;

/**
 * "Chunks, then merge": a launch that splits each row's search over chunks writes every chunk's best candidates
 * (keys and ids) side by side into a row of temporaries, and one selection merges each row's lists into its k best.
 * This class owns those temporaries - {@code rows} x ({@code chunks} x {@code perChunk}) keys and as many ids, from
 * the device's pool, allocated together and returned together on {@link #close} - and the merge's input; the
 * caller's kernel writes the chunk lists ({@link #keys}, {@link #ids}, rows {@link #width} apart), and {@link
 * #merge} selects from them. {@link #enqueue} is the whole pattern for one launch, with one chunk writing straight
 * into the output (no temporaries, no merge).
 *
 * <p>Not thread-safe; enqueues under the device lock. The temporaries go back to the pool when closed, reuse being
 * ordered on the stream.
 */
public final class ChunkedSelection implements AutoCloseable {
  private final DeviceBuffer keys;
  private final DeviceBuffer ids;
  private final int rows;
  private final long width;

  private ChunkedSelection(DeviceBuffer keys, DeviceBuffer ids, int rows, long width) {
    this.keys = keys;
    this.ids = ids;
    this.rows = rows;
    this.width = width;
  }

  /** Where a chunked launch writes its chunks' lists: device addresses of row 0's keys and ids, rows apart. */
  @FunctionalInterface
  public interface Chunks {
    public void enqueue(long keys, long ids, long rowStride);
  }

  /** The selection that merges the lists ({@link KSelect#mergeCandidates}, or one algorithm on purpose). */
  @FunctionalInterface
  public interface Merge {
    public void enqueue(GpuDevice device, SelectParams merge);
  }

  /** Keys (and ids) a row of the lists holds: {@code chunks} lists of {@code perChunk}. */
  public static long width(int chunks, int perChunk) {
    return (long) chunks * perChunk;
  }

  /** Bytes of each of the two temporaries: {@code rows} rows of {@link #width} 4-byte keys (or ids). */
  static long bytes(int rows, int chunks, int perChunk) {
    return 4L * rows * width(chunks, perChunk);
  }

  /** The temporaries for {@code rows} rows of {@code chunks} lists of {@code perChunk} candidates (keys first). */
  public static ChunkedSelection allocate(GpuDevice device, int rows, int chunks, int perChunk) {
    return allocate(device, rows, width(chunks, perChunk));
  }

  /**
   * The temporaries for {@code rows} rows of {@code width} candidates (keys first): lists of several lengths side by
   * side (a table's members, each its own chunks and count a chunk), the widest setting the width.
   */
  public static ChunkedSelection allocate(GpuDevice device, int rows, long width) {
    long bytes = 4L * rows * width;
    DeviceBuffer keys = device.allocate(bytes);
    boolean ok = false;
    try {
      DeviceBuffer ids = device.allocate(bytes);
      ok = true;
      return new ChunkedSelection(keys, ids, rows, width);
    } finally {
      if (!ok) {
        keys.close();
      }
    }
  }

  /**
   * Enqueues {@code chunks} (a launch writing {@code chunks} lists of {@code perChunk} candidates a row for {@code
   * rows} rows) and the merge ({@code merge}: its k, order and output; the input is set here) by {@link
   * KSelect#mergeCandidates}. With one chunk the launch writes straight into the merge's output, rows its row stride
   * apart, and nothing is merged.
   */
  public static void enqueue(GpuDevice device, int rows, int chunks, int perChunk, SelectParams merge, Chunks scan) {
    enqueue(device, rows, chunks, perChunk, merge, scan, KSelect::mergeCandidates);
  }

  /** As {@link #enqueue(GpuDevice, int, int, int, SelectParams, Chunks)}, merged by {@code by}. */
  public static void enqueue(GpuDevice device, int rows, int chunks, int perChunk, SelectParams merge, Chunks scan,
                      Merge by) {
    if (chunks == 1) {
      scan.enqueue(merge.outK, merge.outIdx, merge.outRowStride);
      return;
    }
    try (ChunkedSelection lists = allocate(device, rows, chunks, perChunk)) {
      scan.enqueue(lists.keys.address(), lists.ids.address(), lists.width);
      lists.merge(device, merge, by);
    }
  }

  /** The lists' keys: row r at {@code 4 r width} bytes, chunk c's at {@code c perChunk} within it. */
  public DeviceBuffer keys() {
    return keys;
  }

  /** The lists' ids, laid out as {@link #keys}. */
  public DeviceBuffer ids() {
    return ids;
  }

  /** Keys a row (the rows' stride in elements). */
  public long width() {
    return width;
  }

  /** {@code merge} reading these lists: all rows, the whole width, with their ids. */
  SelectParams input(SelectParams merge) {
    return merge.input(keys, rows, (int) width, width).inputIds(ids);
  }

  /** Enqueues the merge of the lists ({@link KSelect#mergeCandidates}) as {@code merge} says (k, order, output). */
  public void merge(GpuDevice device, SelectParams merge) {
    merge(device, merge, KSelect::mergeCandidates);
  }

  /** Enqueues the merge of the lists by {@code by} as {@code merge} says (k, order, output). */
  public void merge(GpuDevice device, SelectParams merge, Merge by) {
    by.enqueue(device, input(merge));
  }

  /** Returns the temporaries to the pool (ids, then keys). */
  @Override
  public void close() {
    try {
      ids.close();
    } finally {
      keys.close();
    }
  }
}
