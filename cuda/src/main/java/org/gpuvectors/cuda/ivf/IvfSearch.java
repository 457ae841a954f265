package org.gpuvectors.cuda.ivf;

import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.pass.ResidentIndex;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.select.ChunkedSelection;
import org.gpuvectors.cuda.select.KSelect;
import org.gpuvectors.cuda.select.SelectParams;

/**
 * What the IVF index types ({@link GpuIvfFlatIndex}, {@link GpuIvfPqIndex}) share around their list scans: the
 * probe count, and the search of a batch of queries in blocks, each block
 * <ol>
 *   <li>coarse: the centroid index's exact search with k = probes gives each query's lists, best first;
 *   <li>scan: the index type's kernels write each (query, probed list) pair's k best (value, ordinal) pairs
 *       ({@link Scan});
 *   <li>merge: BlockSelect over each query's probes * k candidates ({@link KSelect#mergeCandidates}).
 * </ol>
 * Caller holds the device lock; temporaries return to the pool, reused in stream order.
 */
public final class IvfSearch {
  /**
   * Temporaries of one block of queries at most (scan candidates: value and ordinal, 8 bytes each, probes * k
   * per query, plus what the scan allocates per pair): bounds a large batch with a large nprobe * k.
   */
  static final long BLOCK_BUDGET_BYTES = 256L << 20;

  private IvfSearch() {}

  /** The lists of an IVF search's parameters: {@link SearchParams.Ivf}'s nprobe; another kind's are refused. */
  public static int nprobe(ResidentIndex index, SearchParams params) {
    if (params instanceof SearchParams.Ivf ivf) {
      return ivf.nprobe();
    }
    throw index.refused("Ivf", params);
  }

  /**
   * Lists a search with {@code nprobe} scans: nprobe capped at nlist. The coarse step selects that many
   * centroids, so it may not pass {@link KSelect#MAX_K}.
   */
  public static int probes(int nprobe, int nlist) {
    if (nprobe < 1) {
      throw new IllegalArgumentException("nprobe must be >= 1: " + nprobe);
    }
    int probes = Math.min(nprobe, nlist);
    if (probes > KSelect.MAX_K) {
      throw new IllegalArgumentException("nprobe must be at most " + KSelect.MAX_K + " (or nlist): " + nprobe);
    }
    return probes;
  }

  /**
   * One block of queries' scan: {@code nq} queries at device address {@code queries}, their lists at {@code
   * probeLists} ({@code nq x probes} ints, -1 = none), accept masks at {@code accept} (0 = all; {@code
   * acceptRowWords} words apart, 0 = shared); per query {@code slots} slots of k candidates at {@code candValues /
   * candIds + 4 * (q * slots * k + slot * k)} (a scan per (query, probe) pair: slots = probes, slot = probe).
   */
  record Block(long queries, int nq, int k, int probes, int slots, long probeLists, long accept, long acceptRowWords,
               long candValues, long candIds) {}

  @FunctionalInterface
  interface Scan {
    void enqueue(Block block);
  }

  /**
   * Enqueues the search of {@code nq} queries (arguments as {@link GpuIvfFlatIndex#enqueueSearch}) in blocks of
   * at most {@link #BLOCK_BUDGET_BYTES} / ({@code 8 * k * slots + queryBytes}) queries (at least one): the scan
   * writes {@code slots} slots of k candidates per query (8 bytes each), and {@code queryBytes} are the other
   * temporaries it allocates per query.
   */
  static void enqueue(GpuDevice device, GpuFlatIndex centroids, int dims, boolean largestFirst, long queries,
                      long queryNorms, int nq, int k, int probes, int slots, long queryBytes, long acceptAddress,
                      long acceptRowWords, DeviceBuffer outV, DeviceBuffer outI, long outElement, Scan scan) {
    if (slots < 1 || slots > probes) {
      throw new IllegalArgumentException("slots must be in [1, probes = " + probes + "]: " + slots);
    }
    int width = slots * k; // <= MAX_K * MAX_K
    int block = (int) Math.max(1, Math.min(nq, BLOCK_BUDGET_BYTES / (8L * width + queryBytes)));
    for (int q0 = 0; q0 < nq; q0 += block) {
      int count = Math.min(block, nq - q0);
      long accept = acceptAddress == 0 ? 0 : acceptAddress + 8L * q0 * acceptRowWords;
      long norms = queryNorms == 0 ? 0 : queryNorms + 4L * q0;
      long blockQueries = queries + 4L * q0 * dims;
      try (DeviceBuffer probeDistances = device.allocate(4L * count * probes);
           DeviceBuffer probeLists = device.allocate(4L * count * probes);
           ChunkedSelection lists = ChunkedSelection.allocate(device, count, slots, k)) {
        coarse(centroids, blockQueries, norms, count, probes, probeDistances, probeLists);
        scan.enqueue(new Block(blockQueries, count, k, probes, slots, probeLists.address(), accept, acceptRowWords,
            lists.keys().address(), lists.ids().address()));
        lists.merge(device,
            new SelectParams().k(k).largest(largestFirst).output(outV, outI, k, outElement + (long) q0 * k));
      }
    }
  }

  /**
   * The coarse step of {@code nq} queries: the nearest centroids of each query are its lists (probe ids: centroid
   * ordinals, best first) at {@code probeLists}; one fused launch for a few queries over a few thousand centroids,
   * the GEMM path otherwise.
   */
  static void coarse(GpuFlatIndex centroids, long queries, long norms, int nq, int probes,
                             DeviceBuffer probeDistances, DeviceBuffer probeLists) {
    if (!centroids.enqueueSmall(queries, nq, probes, probeDistances, probeLists, 0)) {
      centroids.enqueueSearch(queries, norms, nq, probes, 0, 0, probeDistances, probeLists, 0);
    }
  }

  /**
   * The rows of the small-batch search ({@link #enqueueKeys}): per query of the {@code nq} at {@code queries}, its
   * lists at {@code probeLists} ({@code nq x probes}), its accept mask (as {@link Block}), and a row of {@code
   * rowWidth} keys (smaller is better) and ids at {@code keys} / {@code ids} to which the scan appends every
   * accepted vector of its lists, counting them at {@code rowLengths} (one int per query, zeroed).
   */
  record KeyRows(long queries, int nq, int probes, long probeLists, long accept, long acceptRowWords, long keys,
                 long ids, long rowWidth, long rowLengths) {
    /** The rows of {@link KeyBuffers} at {@code rows} for these queries and their probe lists. */
    static KeyRows at(RowsAt rows, long queries, int nq, int probes, long probeLists, long accept,
                      long acceptRowWords) {
      return new KeyRows(queries, nq, probes, probeLists, accept, acceptRowWords, rows.keys(), rows.ids(),
          rows.rowWidth(), rows.rowLengths());
    }
  }

  @FunctionalInterface
  interface KeyScan {
    void enqueue(KeyRows rows);
  }

  /**
   * Enqueues the small-batch search of {@code nq} queries (arguments as {@link #enqueue}): the coarse step, then
   * {@code scan} appends every accepted vector of a query's lists to the query's row of {@code rowWidth} (at least
   * the sum of its lists' sizes), and a radix selection ({@link KSelect#radixSelect}) keeps each row's k best:
   * the k best of the lists, as {@link #enqueue}'s per-list selection and merge give them (up to ties), without
   * their sorted queues of k per list (at k in the hundreds, most of a small batch's time). {@code
   * typicalRowLength}: the keys most rows hold ({@link KeyBuffers}).
   */
  static void enqueueKeys(GpuDevice device, GpuFlatIndex centroids, boolean largestFirst, long queries,
                          long queryNorms, int nq, int k, int probes, long rowWidth, long typicalRowLength,
                          long acceptAddress, long acceptRowWords, DeviceBuffer outV, DeviceBuffer outI,
                          long outElement, KeyScan scan) {
    checkRowWidth(rowWidth);
    if (nq == 0) {
      return; // no launch: a grid of no queries is not a valid launch
    }
    try (KeyBuffers rows = new KeyBuffers(device, nq, rowWidth, typicalRowLength);
         DeviceBuffer probeLists = enqueueProbes(device, centroids, queries, queryNorms, nq, probes)) {
      scan.enqueue(KeyRows.at(rows.at(0), queries, nq, probes, probeLists.address(), acceptAddress, acceptRowWords));
      rows.select(k, largestFirst, outV, outI, outElement);
    }
  }

  private static void checkRowWidth(long rowWidth) {
    if (rowWidth < 1 || rowWidth > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("row width must be in [1, 2^31 - 1]: " + rowWidth);
    }
  }

  /**
   * The rows of keys of a small-batch search, for one group of queries or for several groups of a pass at once
   * (BatchSearch's shared selection): {@code rows} rows of {@code rowWidth} keys and ids, and the row lengths,
   * zeroed here. {@code rowWidth} is the most keys a row may hold (the probed lists' largest sum), {@code
   * typicalRowLength} the keys most rows hold (0: rowWidth): the selection's path is chosen by the latter ({@link
   * SelectParams#typicalLen}). Device buffers from the pool, returned by {@link #close} (reuse ordered on the stream).
   */
  static final class KeyBuffers implements AutoCloseable {
    private final GpuDevice device;
    private final DeviceBuffer keys;
    private final DeviceBuffer ids;
    private final DeviceBuffer state; // the radix selection's rows, then the rows' lengths: zeroed in one memset
    private final DeviceBuffer lengths;
    private final int rows;
    private final long rowWidth;
    private final long typicalRowLength;

    KeyBuffers(GpuDevice device, int rows, long rowWidth, long typicalRowLength) {
      checkRowWidth(rowWidth);
      this.device = device;
      this.rows = rows;
      this.rowWidth = rowWidth;
      this.typicalRowLength = typicalRowLength;
      DeviceBuffer k = device.allocate(4L * rows * rowWidth);
      DeviceBuffer i = null;
      DeviceBuffer st = null;
      boolean ok = false;
      try {
        i = device.allocate(4L * rows * rowWidth);
        st = device.allocate(KSelect.radixStateBytes(rows) + 4L * rows);
        device.clear(st);
        ok = true;
      } finally {
        if (!ok) {
          release(k, i, st);
        }
      }
      keys = k;
      ids = i;
      state = st;
      lengths = st.slice(KSelect.radixStateBytes(rows), 4L * rows);
    }

    /** Where the scan of the queries from row {@code firstRow} on appends its keys. */
    RowsAt at(int firstRow) {
      return new RowsAt(keys.address() + 4L * firstRow * rowWidth, ids.address() + 4L * firstRow * rowWidth, rowWidth,
          lengths.address() + 4L * firstRow);
    }

    /**
     * Enqueues the radix selection of every row's k best (largest first: values back to scores) into {@code outV} /
     * {@code outI} from element {@code outElement}, k per row.
     */
    void select(int k, boolean largestFirst, DeviceBuffer outV, DeviceBuffer outI, long outElement) {
      KSelect.radixSelect(device, new SelectParams().input(keys, rows, (int) rowWidth, rowWidth).inputIds(ids)
          .rowLengths(lengths).typicalRowLength(typicalRowLength).k(k).scales(1f, largestFirst ? -1f : 1f)
          .output(outV, outI, k, outElement),
          state.slice(0, KSelect.radixStateBytes(rows)));
    }

    @Override
    public void close() {
      release(keys, ids, state);
    }

    private static void release(DeviceBuffer... buffers) {
      for (DeviceBuffer b : buffers) {
        if (b != null) {
          b.close();
        }
      }
    }
  }

  /** Device addresses of a group's rows in {@link KeyBuffers}: keys, ids, the row stride, the row lengths. */
  record RowsAt(long keys, long ids, long rowWidth, long rowLengths) {}

  /**
   * The coarse step of a small-batch search of {@code nq} queries: their {@code probes} lists, best first, in a new
   * buffer of {@code nq x probes} ints that the caller owns. Caller holds the lock.
   */
  static DeviceBuffer enqueueProbes(GpuDevice device, GpuFlatIndex centroids, long queries, long queryNorms, int nq,
                                    int probes) {
    DeviceBuffer probeLists = device.allocate(4L * nq * probes);
    try (DeviceBuffer probeDistances = device.allocate(4L * nq * probes)) {
      coarse(centroids, queries, queryNorms, nq, probes, probeDistances, probeLists);
      return probeLists;
    } catch (RuntimeException | Error e) {
      probeLists.close();
      throw e;
    }
  }

  /** Allocates and fills a device buffer with {@code values} (at least one int: empty lists hold no ordinal). Caller holds the lock. */
  public static DeviceBuffer uploadInts(GpuDevice device, int[] values) {
    DeviceBuffer buffer = device.allocate(4L * Math.max(1, values.length));
    if (values.length > 0) {
      device.upload(values, buffer);
    }
    return buffer;
  }
}
