package org.gpuvectors.cuda.rerank;

import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.StructLayout;
import jcuda.Pointer;

/**
 * Parameters of the TF32 candidate pass's exact re-rank ({@code gv_rerank_exact}, {@code gv_rerank_stats}); mirrors
 * {@code gv::RerankParams} in common.cuh (120 bytes, little-endian; declared once in {@link #LAYOUT}, checked by
 * ParamLayoutTest). Device addresses are longs. Keys: smaller = better (squared L2, or -x.q for inner product and
 * cosine).
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class RerankParams {
  /** The layout of {@code gv::RerankParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<RerankParams> LAYOUT =
      StructLayout.<RerankParams>struct("RerankParams")
          .i64("vectors", p -> p.vectors)
          .i64("queries", p -> p.queries)
          .i64("candIdx", p -> p.candIdx)
          .i64("candKeys", p -> p.candKeys)
          .i64("exactKeys", p -> p.exactKeys)
          .i64("stats", p -> p.stats)
          .i64("outK", p -> p.outK)
          .i64("outIdx", p -> p.outIdx)
          .i64("rowsDone", p -> p.rowsDone)
          .i64("chunkKeys", p -> p.chunkKeys)
          .i64("chunkRowStride", p -> p.chunkRowStride)
          .i32("dims", p -> p.dims)
          .i32("numQueries", p -> p.numQueries)
          .i32("candidates", p -> p.candidates)
          .i32("k", p -> p.k)
          .i32("metric", p -> p.metric)
          .f32("outScale", p -> p.outScale)
          .i32("chunkK", p -> p.chunkK)
          .i32("chunks", p -> p.chunks)
          .build();
  public static final int BYTES = LAYOUT.bytes();

  long vectors;
  long queries;
  long candIdx;
  long candKeys;
  long exactKeys;
  /**
   * Per query 4 floats: k-th exact key, last candidate's candidate key, ||q||^2 rounded up, and the least of the
   * chunks' last keys ({@link #chunkKeys}; +inf without).
   */
  long stats;
  /** The final k values per query: read by {@code gv_rerank_stats}; written by the re-rank when {@link #rowsDone}. */
  long outK;
  /** With {@link #rowsDone}: the final k ids per query. */
  long outIdx;
  /**
   * 0, or a zeroed int per query: the re-rank then selects each row's k best itself (the last of the row's blocks,
   * at most {@link #SELECT_MAX_CANDIDATES} candidates a row) into {@link #outK} / {@link #outIdx}.
   */
  long rowsDone;
  /**
   * 0, or the candidate pass's keys by chunk before their merge: row q at {@code chunkKeys + 4 q chunkRowStride},
   * {@link #chunkK} keys a chunk ({@code FlatHalfCopy}'s chunks that keep fewer than k' candidates each).
   */
  long chunkKeys;
  long chunkRowStride;
  int dims;
  int numQueries;
  int candidates;
  int k;
  /** 0 = squared L2, 1 = inner product (key -x.q). */
  int metric;
  /** outK holds outScale * key. */
  float outScale = 1f;
  /** With {@link #chunkKeys} (a re-rank of one index; a table's entries say their own): keys a chunk kept. */
  int chunkK;
  /** With {@link #chunkKeys}: chunks a row. */
  int chunks;

  /** The most candidates per row that the re-rank selects from itself (rerank_kernels.cu's kRerankSelectMax). */
  public static final int SELECT_MAX_CANDIDATES = 512;

  /** Threads of a {@code gv_rerank_exact} block (4 warps: one candidate per warp at a time). */
  static final int EXACT_THREADS = 128;
  /** Candidates a {@code gv_rerank_exact} block takes at least when a query's are split over several blocks. */
  static final int MIN_CANDIDATES_PER_BLOCK = 16;

  /**
   * Enqueues {@code gv_rerank_exact} for these parameters: grid (numQueries, parts), where a few queries' candidates
   * are split over several blocks so that about four blocks per multiprocessor run (one query's 400 candidates in
   * one block took ~90 us), each block at least {@link #MIN_CANDIDATES_PER_BLOCK} candidates; large
   * batches keep one block per query. Caller holds the device lock.
   */
  void enqueueExact(GpuDevice device) {
    launchExact(device, "gv_rerank_exact", Pointer.to(encode()));
  }

  /**
   * Enqueues {@code gv_rerank_exact_table}: as {@link #enqueueExact} over the rows of several indexes ({@code
   * numQueries} rows in all, each entry's raw vectors and queries from {@code table}; {@link #vectors} and {@link
   * #queries} are not read). Caller holds the device lock.
   */
  void enqueueExactTable(GpuDevice device, RerankTable table) {
    if (table.entries() < 1) {
      throw new IllegalArgumentException("an empty re-rank table");
    }
    launchExact(device, "gv_rerank_exact_table", Pointer.to(encode()), Pointer.to(table.encode()));
  }

  /** Launches {@code kernel} (one of the two above) on {@link #exactParts}' grid with the query in shared memory. */
  private void launchExact(GpuDevice device, String kernel, Pointer... args) {
    int shared = 4 * ((dims + 3) / 4 * 4); // the query
    device.module().allowDynamicShared(kernel, shared); // past 48 KB only for dims > 12,288
    device.module().launch(kernel, numQueries, exactParts(device.multiprocessorCount()), EXACT_THREADS, shared,
        device.stream(), args);
  }

  /** Blocks per query of {@link #enqueueExact} on a device of {@code sms} multiprocessors. */
  int exactParts(int sms) {
    long wanted = (4L * sms + numQueries - 1) / Math.max(1, numQueries);
    long most = Math.max(1, (candidates + MIN_CANDIDATES_PER_BLOCK - 1) / MIN_CANDIDATES_PER_BLOCK);
    return (int) Math.max(1, Math.min(Math.min(wanted, most), 65535));
  }

  public byte[] encode() {
    return LAYOUT.encode(this);
  }
}
