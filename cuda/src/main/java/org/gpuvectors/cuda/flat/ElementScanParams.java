package org.gpuvectors.cuda.flat;

import org.gpuvectors.cuda.runtime.StructLayout;

/**
 * Parameters of the exact scan of byte, bit and bfloat16 rows ({@code gv_element_scan_{byte,bit,bf16}_kK},
 * element_scan.cu); mirrors {@code gv::ElementScanParams} in common.cuh (120 bytes, little-endian; declared once in
 * {@link #LAYOUT}, checked by ParamLayoutTest). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class ElementScanParams {
  /** The layout of {@code gv::ElementScanParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<ElementScanParams> LAYOUT =
      StructLayout.<ElementScanParams>struct("ElementScanParams")
          .i64("vectors", p -> p.vectors)
          .i64("queries", p -> p.queries)
          .i64("acceptBits", p -> p.acceptBits)
          .i64("outK", p -> p.outK)
          .i64("outIdx", p -> p.outIdx)
          .i64("n", p -> p.n)
          .i64("acceptRowWords", p -> p.acceptRowWords)
          .i64("outRowStride", p -> p.outRowStride)
          .i64("bestK", p -> p.bestK)
          .i64("bestIdx", p -> p.bestIdx)
          .i64("bestRowStride", p -> p.bestRowStride)
          .i32("dims", p -> p.dims)
          .i32("rowWords", p -> p.rowWords)
          .i32("numQueries", p -> p.numQueries)
          .i32("k", p -> p.k)
          .i32("chunks", p -> p.chunks)
          .i32("chunkLen", p -> p.chunkLen)
          .i32("metric", p -> p.metric)
          .pad32("pad")
          .build();
  public static final int BYTES = LAYOUT.bytes();

  /** The rows' device address: n rows of {@link #rowWords} 32-bit words. */
  long vectors;
  /** The queries' device address: numQueries x dims floats. */
  long queries;
  /** The accept masks' device address, or 0: all rows. */
  long acceptBits;
  long outK;
  long outIdx;
  long n;
  /** 64-bit words between the accept masks of consecutive queries (0: one mask for all). */
  long acceptRowWords;
  long outRowStride;
  /** The tie scan and the splice: the search's results (k distances a query, best first), or 0: a plain scan. */
  long bestK;
  /** Their ids. */
  long bestIdx;
  /** Elements between their rows. */
  long bestRowStride;
  /** Values a row, floats a query (bit: bytes a row). */
  int dims;
  int rowWords;
  int numQueries;
  int k;
  /** The rows are split into this many chunks (the grid's y). */
  int chunks;
  int chunkLen;
  /** 0 = squared L2 (bit: Hamming), 1 = inner product, 2 = cosine. */
  int metric;

  public byte[] encode() {
    return LAYOUT.encode(this);
  }
}
