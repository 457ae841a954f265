package org.gpuvectors.cuda.flat;

import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.StructLayout;
import org.gpuvectors.cuda.select.KSelect;
import jcuda.Pointer;

/**
 * Parameters of the small-batch exact scan ({@code gv_flat_scan_*}, flat_scan.cu); mirrors {@code gv::FlatScanParams}
 * in common.cuh (96 bytes, little-endian; declared once in {@link #LAYOUT}, checked by ParamLayoutTest), and plans its
 * grid: blocks of {@link #QUERIES_PER_BLOCK} queries by chunks of rows, about {@link #BLOCKS_PER_SM} blocks per
 * multiprocessor. Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class FlatScanParams {
  /** The layout of {@code gv::FlatScanParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<FlatScanParams> LAYOUT =
      StructLayout.<FlatScanParams>struct("FlatScanParams")
          .i64("vectors", p -> p.vectors)
          .i64("norms", p -> p.norms)
          .i64("queries", p -> p.queries)
          .i64("acceptBits", p -> p.acceptBits)
          .i64("outK", p -> p.outK)
          .i64("outIdx", p -> p.outIdx)
          .i64("n", p -> p.n)
          .i64("acceptRowWords", p -> p.acceptRowWords)
          .i64("outRowStride", p -> p.outRowStride)
          .i32("dims", p -> p.dims)
          .i32("numQueries", p -> p.numQueries)
          .i32("k", p -> p.k)
          .i32("chunks", p -> p.chunks)
          .i32("chunkLen", p -> p.chunkLen)
          .i32("metric", p -> p.metric)
          .build();
  public static final int BYTES = LAYOUT.bytes();
  /** Queries a block scores (one warp queue each): flat_scan.cu's kFlatScanQueries. */
  public static final int QUERIES_PER_BLOCK = 8;
  /** Threads of a block: flat_scan.cu's kFlatScanThreads. */
  public static final int THREADS = 256;
  /** Rows a thread scores: kFlatScanRowsPerThread. */
  public static final int ROWS_PER_THREAD = 1;
  /** Rows of a staged tile: kFlatScanRows. */
  public static final int ROWS = 256;
  /** Floats of each row staged at once: kFlatScanSlab. */
  public static final int SLAB = 32;
  /** Floats between staged rows: kFlatScanPitch. */
  public static final int PITCH = 36;
  /** The largest k (the kernels' k buckets: 32 to 256). */
  static final int MAX_K = 256;
  /** The most dimensions: the queries' 64 KB of shared memory next to the staged tiles and keys (152 KB in all). */
  public static final int MAX_DIMS = 2048;
  /** Chunks of rows are at least this long (a block's queue start-up and output against its rows). */
  static final int MIN_CHUNK_ROWS = 4 * ROWS;
  /**
   * Blocks per multiprocessor the grid aims at: the two that are resident (launch bounds, shared memory), in one wave
   * (four, in two waves, gave the merge twice as many chunk lists and made a one-query pass slower).
   */
  static final int BLOCKS_PER_SM = 2;

  long vectors;
  /** ||x||^2 per row (L2), else 0. */
  long norms;
  long queries;
  long acceptBits;
  long outK;
  long outIdx;
  long n;
  long acceptRowWords;
  long outRowStride;
  public int dims;
  int numQueries;
  int k;
  int chunks;
  int chunkLen;
  /** 0 = squared L2, 1 = inner product (selected largest). */
  int metric;

  /** Whether the scan takes {@code k} results of {@code dims}-dimensional vectors. */
  static boolean supports(int k, int dims) {
    return k >= 1 && k <= MAX_K && dims >= 1 && dims <= MAX_DIMS;
  }

  /**
   * Sets {@link #chunks} and {@link #chunkLen} for {@link #numQueries} queries over {@link #n} rows on a device of
   * {@code sms} multiprocessors: about {@link #BLOCKS_PER_SM} blocks per multiprocessor over the blocks of queries,
   * chunks of at least {@link #MIN_CHUNK_ROWS} rows (a whole number of tiles), one chunk for a small index.
   */
  FlatScanParams planChunks(int sms) {
    long groups = (numQueries + QUERIES_PER_BLOCK - 1) / QUERIES_PER_BLOCK;
    long wanted = Math.max(1, ((long) BLOCKS_PER_SM * sms + groups - 1) / groups);
    long len = Math.max(MIN_CHUNK_ROWS, (n + wanted - 1) / wanted);
    len = (len + ROWS - 1) / ROWS * ROWS;
    chunks = (int) Math.max(1, Math.min(65535, (n + len - 1) / len));
    chunkLen = (int) Math.min(Integer.MAX_VALUE / 2, Math.max(len, (n + chunks - 1) / chunks));
    return this;
  }

  /**
   * Dynamic shared memory of a block: two staged tiles, two buffers of keys (a key per query and thread) and the
   * queries (padded to whole slabs): 92 KB at 128 dimensions, 112 KB at 768, so that two blocks share a
   * multiprocessor up to 800 dimensions.
   */
  public int sharedBytes() {
    int dimsPad = (dims + SLAB - 1) / SLAB * SLAB;
    return 4 * (2 * ROWS * PITCH + 2 * QUERIES_PER_BLOCK * THREADS + QUERIES_PER_BLOCK * dimsPad);
  }

  /** The kernel for these parameters: k bucket, and 16-byte or 4-byte copies by the rows' alignment. */
  String kernel() {
    return kernel("gv_flat_scan_", k);
  }

  /**
   * The kernel of the family {@code prefix} (the single launch, or FlatScanTable's table launch) whose queues hold
   * {@code maxK} (a table launch takes the bucket of its members' largest k, each member selecting its own).
   */
  String kernel(String prefix, int maxK) {
    return prefix + ((dims & 3) == 0 ? "a" : "u") + "_k" + KSelect.bucket(maxK);
  }

  /** Enqueues the scan on the device's stream: grid (query blocks, chunks). Caller holds the device lock. */
  void enqueue(GpuDevice device) {
    if (!supports(k, dims)) {
      throw new IllegalArgumentException("the flat scan takes k <= " + MAX_K + " and dims <= " + MAX_DIMS + ": k=" + k
          + " dims=" + dims);
    }
    String kernel = kernel();
    int shared = sharedBytes();
    device.module().allowDynamicShared(kernel, shared);
    device.module().launch(kernel, (numQueries + QUERIES_PER_BLOCK - 1) / QUERIES_PER_BLOCK, chunks, THREADS, shared,
        device.stream(), Pointer.to(encode()));
  }

  public byte[] encode() {
    return LAYOUT.encode(this);
  }
}
