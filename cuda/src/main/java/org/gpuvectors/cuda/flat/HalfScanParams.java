package org.gpuvectors.cuda.flat;

import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.StructLayout;
import org.gpuvectors.cuda.select.KSelect;
import jcuda.Pointer;

/**
 * Parameters of the half-precision candidate scan ({@code gv_half_scan_k*}, flat_half_scan.cu); mirrors {@code
 * gv::HalfScanParams} in common.cuh (104 bytes, little-endian; declared once in {@link #LAYOUT}, checked by
 * ParamLayoutTest), and plans its grid as {@link FlatScanParams} does: blocks of {@link #QUERIES_PER_BLOCK} queries by
 * chunks of whole tiles of rows. Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class HalfScanParams {
  /** The layout of {@code gv::HalfScanParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<HalfScanParams> LAYOUT =
      StructLayout.<HalfScanParams>struct("HalfScanParams")
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
          .i32("dimsPad", p -> p.dimsPad)
          .i32("numQueries", p -> p.numQueries)
          .i32("k", p -> p.k)
          .i32("chunks", p -> p.chunks)
          .i32("chunkLen", p -> p.chunkLen)
          .i32("metric", p -> p.metric)
          .f32("vectorUnscale", p -> p.vectorUnscale)
          .build();
  public static final int BYTES = LAYOUT.bytes();
  /** Queries a block scores (the n of an m16n8k16 mma; one warp queue each): kHalfScanQueries. */
  public static final int QUERIES_PER_BLOCK = 8;
  /** Threads of a block: kHalfScanThreads. */
  public static final int THREADS = 256;
  /** Rows of a tile (32 a warp): kHalfScanRows. */
  public static final int ROWS = 256;
  /** Dimensions of one step (a row's FP16 copy is padded to a multiple): kHalfScanDimStep. */
  public static final int DIM_STEP = 32;
  /** Values are scaled below 2^TOP before rounding to FP16: kHalfScanTop. */
  public static final int TOP = 14;
  /** A scale is at most 2^(TOP + MIN_EXP): kHalfScanMinExp. */
  public static final int MIN_EXP = 100;
  /** The smallest and largest candidates k' (k' > 32 always). */
  static final int MIN_K = 33;
  public static final int MAX_K = 256;
  /**
   * The fewest candidates a chunk keeps ({@link #chunkCandidates}; the kernels' k buckets are 32 to 256: a chunk
   * keeps {@link #k} of them).
   */
  public static final int MIN_CHUNK_K = 32;
  /** How many times its expected share of the k' best a chunk keeps ({@link #chunkCandidates}). */
  static final int CHUNK_HEADROOM = 8;
  /**
   * Rows of at most this many padded dims take the short-row kernels ({@code gv_half_scan_s_kK}: the keys' inputs
   * loaded with the rows, the next tile prefetched): kHalfScanPrefetchDims.
   */
  public static final int SHORT_ROW_DIMS = 128;
  /** The most dimensions (as the FP32 scan's). */
  public static final int MAX_DIMS = FlatScanParams.MAX_DIMS;

  long vectors;
  /** ||x||^2 per row of the FP32 vectors (L2), else 0. */
  long norms;
  long queries;
  long acceptBits;
  long outK;
  long outIdx;
  long n;
  long acceptRowWords;
  long outRowStride;
  int dims;
  public int dimsPad;
  int numQueries;
  public int k;
  int chunks;
  int chunkLen;
  /** 0 = squared L2, 1 = inner product (key -x.q). */
  int metric;
  float vectorUnscale;

  /**
   * flat_half_scan.cu's halfScale: the power of two that brings a largest magnitude m below 2^{@link #TOP}, at most
   * 2^(TOP + MIN_EXP); 1 for 0, infinities and NaN.
   */
  public static float halfScale(float m) {
    if (!(m > 0) || !Float.isFinite(m)) {
      return 1f;
    }
    int e = Math.getExponent(m) + 1; // m < 2^e for normal m; subnormals (exponent -127 here) are clamped either way
    return Math.scalb(1f, TOP - Math.max(e, -MIN_EXP));
  }

  /** Dimensions of a row of the FP16 copy: dims rounded up to {@link #DIM_STEP}. */
  public static int paddedDims(int dims) {
    return (dims + DIM_STEP - 1) / DIM_STEP * DIM_STEP;
  }

  /**
   * Candidates each chunk keeps so that their merge still yields k' = {@code candidates}, for {@code chunks} chunks
   * of {@code chunkLen} rows out of {@code n}: k' for one chunk (no merge); else {@link #CHUNK_HEADROOM} times a
   * chunk's expected share of the k' best when rows come in no particular order (k' chunkLen / n), at least {@link
   * #MIN_CHUNK_K} and enough for k' in all (chunks x kept &gt;= k'), at most k'. A chunk's queue and the merge then
   * cost less: 1M rows, k = 100 (k' = 200), one query: 261 chunks of 32 keys, a merge of 8,352 keys in one launch,
   * against 52,200 keys in two. Exactness does not depend on it: a chunk that holds more of the k' best than it kept
   * (rows in an order that gathers neighbours) lowers the certificate's T to its last kept key (CandidateBound), its
   * queries are searched again in FP32, and the copy then keeps k' a chunk ({@link FlatHalfCopy#chunkLimited}).
   */
  static int chunkCandidates(int candidates, long n, int chunks, long chunkLen) {
    if (chunks <= 1) {
      return candidates;
    }
    long share = (long) Math.ceil((double) CHUNK_HEADROOM * candidates * chunkLen / Math.max(1, n));
    long enough = (candidates + chunks - 1) / chunks;
    return (int) Math.min(candidates, Math.max(MIN_CHUNK_K, Math.max(share, enough)));
  }

  /** Whether the scan takes k' = {@code candidates} of {@code dims}-dimensional vectors. */
  static boolean supports(int candidates, int dims) {
    return candidates >= MIN_K && candidates <= MAX_K && dims >= 1 && dims <= MAX_DIMS;
  }

  /** Sets {@link #chunks} and {@link #chunkLen} as {@link FlatScanParams#planChunks} does (the same tile of rows). */
  HalfScanParams planChunks(int sms) {
    FlatScanParams f = new FlatScanParams();
    f.numQueries = numQueries;
    f.n = n;
    f.planChunks(sms);
    chunks = f.chunks;
    chunkLen = (int) Math.min(Integer.MAX_VALUE / 2, (f.chunkLen + ROWS - 1L) / ROWS * ROWS);
    chunks = (int) Math.max(1, (n + chunkLen - 1) / chunkLen);
    return this;
  }

  /** Query pitch in halves: flat_half_scan.cu's halfQueryPitch. */
  public static int queryPitch(int dimsPad) {
    return (dimsPad & 63) == 32 ? dimsPad : dimsPad + 32;
  }

  /** Dynamic shared memory of a block: the queries in FP16, two buffers of a tile's keys. */
  public int sharedBytes() {
    return 2 * QUERIES_PER_BLOCK * queryPitch(dimsPad) + 4 * 2 * QUERIES_PER_BLOCK * ROWS;
  }

  /** Whether rows of {@code dimsPad} padded dims take the short-row kernels ({@link #SHORT_ROW_DIMS}). */
  static boolean shortRows(int dimsPad) {
    return dimsPad <= SHORT_ROW_DIMS;
  }

  /** The kernel of {@link #k}'s bucket for rows of {@link #dimsPad}. */
  public String kernel() {
    return kernel("gv_half_scan_", k);
  }

  /**
   * The kernel of the family {@code prefix} (the single launch, or FlatScanTable's table launch, whose members share
   * dims) for rows of {@link #dimsPad}, whose queues hold {@code maxK}: as {@link FlatScanParams#kernel(String, int)}.
   */
  public String kernel(String prefix, int maxK) {
    return prefix + (shortRows(dimsPad) ? "s_" : "") + "k" + KSelect.bucket(maxK);
  }

  /**
   * Throws unless the scan takes these parameters: the candidates a chunk keeps, dims, rows padded, chunks of whole
   * tiles.
   */
  void check() {
    if (k < MIN_CHUNK_K || k > MAX_K || dims < 1 || dims > MAX_DIMS || dimsPad != paddedDims(dims)
        || chunkLen % ROWS != 0) {
      throw new IllegalArgumentException("the half scan takes " + MIN_CHUNK_K + " <= k <= " + MAX_K
          + " a chunk, dims <= " + MAX_DIMS + ", rows padded to " + DIM_STEP + " and chunks of whole tiles: k=" + k
          + " dims=" + dims + " dimsPad=" + dimsPad + " chunkLen=" + chunkLen);
    }
  }

  /** Enqueues the scan on the device's stream: grid (query blocks, chunks). Caller holds the device lock. */
  void enqueue(GpuDevice device) {
    check();
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
