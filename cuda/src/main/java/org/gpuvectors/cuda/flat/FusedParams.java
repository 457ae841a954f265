package org.gpuvectors.cuda.flat;

import org.gpuvectors.cuda.runtime.StructLayout;

/**
 * Parameters of the fused exact search ({@code gv_fused_search_kK} and its table launch, exact_kernels.cu); mirrors
 * {@code gv::FusedParams} in common.cuh (80 bytes, little-endian; declared once in {@link #LAYOUT}, checked by
 * ParamLayoutTest). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class FusedParams {
  /** The layout of {@code gv::FusedParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<FusedParams> LAYOUT =
      StructLayout.<FusedParams>struct("FusedParams")
          .i64("vectors", p -> p.vectors)
          .i64("queries", p -> p.queries)
          .i64("acceptBits", p -> p.acceptBits)
          .i64("outK", p -> p.outK)
          .i64("outIdx", p -> p.outIdx)
          .i64("n", p -> p.n)
          .i64("outRowStride", p -> p.outRowStride)
          .i32("dims", p -> p.dims)
          .i32("numQueries", p -> p.numQueries)
          .i32("k", p -> p.k)
          .i32("chunks", p -> p.chunks)
          .i32("chunkLen", p -> p.chunkLen)
          .i32("metric", p -> p.metric)
          .build();
  public static final int BYTES = LAYOUT.bytes();

  long vectors;
  long queries;
  /** The accept mask's device address, or 0: all rows. */
  long acceptBits;
  long outK;
  long outIdx;
  long n;
  long outRowStride;
  int dims;
  int numQueries;
  int k;
  /** The rows are split into this many chunks (the grid's y). */
  int chunks;
  int chunkLen;
  /** 0 = squared L2, 1 = inner product (selected largest). */
  int metric;

  public byte[] encode() {
    return LAYOUT.encode(this);
  }
}
