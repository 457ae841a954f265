package org.gpuvectors.cuda.ivf;

import org.gpuvectors.cuda.runtime.StructLayout;

/**
 * Parameters of the grouped IVF-Flat scan's kernels ({@code gv_ivf_group_count}, {@code _offsets},
 * {@code _scatter}, {@code gv_ivf_grouped_scan_kK}; ivf_grouped.cu), passed next to the search's
 * {@link IvfScanParams}; mirrors {@code gv::IvfGroupParams} in common.cuh (48 bytes, little-endian;
 * declared once in {@link #LAYOUT}, checked by ParamLayoutTest, as are the constants below).
 *
 * <p>The (query, probe) pairs of a search, pair id {@code query * nprobe + probe}, counting-sorted by
 * list: {@code counts} (nlist, zeroed by the host), {@code ranks} and {@code pairs} (numQueries *
 * nprobe each), {@code pairOffsets} and {@code tileOffsets} (nlist + 1 each). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class IvfGroupParams {
  /** The layout of {@code gv::IvfGroupParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<IvfGroupParams> LAYOUT =
      StructLayout.<IvfGroupParams>struct("IvfGroupParams")
          .i64("counts", p -> p.counts)
          .i64("ranks", p -> p.ranks)
          .i64("pairs", p -> p.pairs)
          .i64("pairOffsets", p -> p.pairOffsets)
          .i64("tileOffsets", p -> p.tileOffsets)
          .i32("numQueries", p -> p.numQueries)
          .i32("nlist", p -> p.nlist)
          .build();
  public static final int BYTES = LAYOUT.bytes();
  /** Pairs of one list per block of the grouped scan ({@code kIvfTileQueries}). */
  public static final int TILE_QUERIES = 32;
  /** Threads per block of the grouped scan ({@code kIvfGroupedThreads}). */
  public static final int THREADS = 512;
  /** Dynamic shared memory per block of the grouped scan ({@code kIvfGroupedSharedBytes}). */
  public static final int SHARED_BYTES = 46080;

  long counts;
  long ranks;
  long pairs;
  long pairOffsets;
  long tileOffsets;
  int numQueries;
  int nlist;

  public byte[] encode() {
    return LAYOUT.encode(this);
  }
}
