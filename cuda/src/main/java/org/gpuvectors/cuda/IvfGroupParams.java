package org.gpuvectors.cuda;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Parameters of the grouped IVF-Flat scan's kernels ({@code gv_ivf_group_count}, {@code _offsets},
 * {@code _scatter}, {@code gv_ivf_grouped_scan_kK}; ivf_grouped.cu), passed next to the search's
 * {@link IvfScanParams}; mirrors {@code gv::IvfGroupParams} in common.cuh (48 bytes, little-endian;
 * member by member checked by ParamLayoutTest, as are the constants below).
 *
 * <p>The (query, probe) pairs of a search, pair id {@code query * nprobe + probe}, counting-sorted by
 * list: {@code counts} (nlist, zeroed by the host), {@code ranks} and {@code pairs} (numQueries *
 * nprobe each), {@code pairOffsets} and {@code tileOffsets} (nlist + 1 each). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
final class IvfGroupParams {
  static final int BYTES = 48;
  /** Pairs of one list per block of the grouped scan ({@code kIvfTileQueries}). */
  static final int TILE_QUERIES = 32;
  /** Threads per block of the grouped scan ({@code kIvfGroupedThreads}). */
  static final int THREADS = 512;
  /** Dynamic shared memory per block of the grouped scan ({@code kIvfGroupedSharedBytes}). */
  static final int SHARED_BYTES = 46080;

  long counts;
  long ranks;
  long pairs;
  long pairOffsets;
  long tileOffsets;
  int numQueries;
  int nlist;

  byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(counts).putLong(ranks).putLong(pairs).putLong(pairOffsets).putLong(tileOffsets);
    b.putInt(numQueries).putInt(nlist);
    return b.array();
  }
}
