package org.gpuvectors.cuda.flat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The flat scan's grid plan and kernel choice (no GPU). */
class FlatScanParamsTest {

  private static FlatScanParams plan(long n, int nq, int sms) {
    FlatScanParams p = new FlatScanParams();
    p.n = n;
    p.numQueries = nq;
    return p.planChunks(sms);
  }

  @Test
  void chunksCoverEveryRowOnce() {
    for (long n : new long[] {1, 255, 1024, 1025, 100_000, 1_000_000, 10_000_000, 400_000_000L}) {
      for (int nq : new int[] {1, 8, 9, 64, 1000}) {
        FlatScanParams p = plan(n, nq, 132);
        assertTrue((long) p.chunks * p.chunkLen >= n, "n=" + n + " nq=" + nq + ": the chunks cover the rows");
        assertTrue((long) (p.chunks - 1) * p.chunkLen < n, "n=" + n + " nq=" + nq + ": no empty chunk");
        assertTrue(p.chunks >= 1 && p.chunks <= 65535, "grid.y within the limit");
        assertTrue(p.chunkLen >= Math.min(n, FlatScanParams.MIN_CHUNK_ROWS), "chunks of at least two tiles");
      }
    }
  }

  @Test
  void aimsAtTwoBlocksPerMultiprocessor() {
    FlatScanParams one = plan(1_000_000, 1, 132);
    assertEquals(3840, one.chunkLen, "1M rows for one query: 264 blocks wanted, 3,788 rows each, whole tiles");
    assertEquals(261, one.chunks);
    FlatScanParams wide = plan(1_000_000, 64, 132); // 8 blocks of queries: 33 chunks of them
    assertEquals(33, wide.chunks);
    assertEquals(0, wide.chunkLen % FlatScanParams.ROWS, "whole tiles");
    assertEquals(1, plan(1000, 1, 132).chunks, "a small index is one chunk");
    FlatScanParams p = new FlatScanParams();
    p.dims = 128;
    assertEquals(92 << 10, p.sharedBytes(), "two blocks a multiprocessor at 128 dimensions");
  }

  @Test
  void tableChunksAreAboutOneLength() {
    // segments of 1M rows in all, a query each: 264 blocks of ~3,788 rows, whole tiles: 3,840
    long rows = FlatScanTable.chunkRows(132, new long[] {350_000, 30_000, 620_000}, new int[] {1, 1, 1});
    assertEquals(3840, rows);
    assertEquals(92, FlatScanTable.chunks(350_000, rows), "a large segment: many chunks");
    assertEquals(8, FlatScanTable.chunks(30_000, rows), "a small one: few");
    assertEquals(1, FlatScanTable.chunks(2, rows), "at least one");
    assertEquals(FlatScanParams.ROWS, FlatScanTable.chunkRows(132, new long[] {5000}, new int[] {1}), "a tile at least");
  }

  /**
   * Members that each round their chunks up must not overflow the wave of 2 blocks per multiprocessor: 7 segments of
   * ~143k rows took 38 chunks of 3,840 rows each, 266 blocks for 264 slots, and the 2 blocks past them ran as a
   * second wave. The chunks lengthen by whole tiles until the blocks fit, and no further.
   */
  @Test
  void tableBlocksFitOneWave() {
    int sms = 132;
    long slots = (long) FlatScanParams.BLOCKS_PER_SM * sms;
    long[][] layouts = {
        {142_858, 142_857, 142_857, 142_857, 142_857, 142_857, 142_857}, // a bulk load's 7 segments
        {472_000, 75_500, 75_500, 75_500, 75_500, 75_500, 75_500, 75_000}, // one large and 7 small
        {300, 20_000, 999_999, 4096, 4097}, // uneven
    };
    for (long[] rows : layouts) {
      for (int q : new int[] {1, 2, 4}) {
        int[] blocksOfQueries = new int[rows.length];
        java.util.Arrays.fill(blocksOfQueries, q);
        long chunkRows = FlatScanTable.chunkRows(sms, rows, blocksOfQueries);
        String what = java.util.Arrays.toString(rows) + " x " + q + " query blocks: chunks of " + chunkRows;
        assertEquals(0, chunkRows % FlatScanParams.ROWS, what + ": whole tiles");
        assertTrue(FlatScanTable.blocks(rows, blocksOfQueries, chunkRows) <= slots, what + ": one wave");
        if (chunkRows > FlatScanParams.ROWS) {
          long shorter = chunkRows - FlatScanParams.ROWS;
          long work = 0;
          for (long r : rows) {
            work += r * q;
          }
          assertTrue(FlatScanTable.blocks(rows, blocksOfQueries, shorter) > slots || shorter * slots < work,
              what + ": a tile shorter would fit too");
        }
      }
    }
    // the bulk load's 7 segments: 3,840 rows a chunk gave 7 x 38 = 266 blocks; 4,096 gives 7 x 35 = 245
    long[] seven = layouts[0];
    int[] one = {1, 1, 1, 1, 1, 1, 1};
    assertEquals(266, FlatScanTable.blocks(seven, one, 3840));
    assertEquals(4096, FlatScanTable.chunkRows(sms, seven, one));
    // more blocks of queries than slots (4 on 2 multiprocessors): no length fits one wave, so one chunk a member
    long[] three = {10_000, 5_000, 3_000};
    int[] two = {2, 2, 2};
    long fallback = FlatScanTable.chunkRows(2, three, two);
    assertEquals(40 * FlatScanParams.ROWS, fallback, "the longest member in whole tiles");
    assertEquals(6, FlatScanTable.blocks(three, two, fallback), "the fewest blocks there are");
  }

  @Test
  void kernelBySizeAndAlignment() {
    FlatScanParams p = new FlatScanParams();
    p.k = 10;
    p.dims = 128;
    assertEquals("gv_flat_scan_a_k32", p.kernel());
    p.k = 200;
    p.dims = 37;
    assertEquals("gv_flat_scan_u_k256", p.kernel());
    assertEquals("gv_flat_scan_table_u_k256", p.kernel("gv_flat_scan_table_", p.k));
    p.k = 10;
    assertEquals("gv_flat_scan_table_u_k128", p.kernel("gv_flat_scan_table_", 100), "the bucket of the largest k");
    assertTrue(FlatScanParams.supports(256, 2048));
    assertFalse(FlatScanParams.supports(257, 128));
    assertFalse(FlatScanParams.supports(10, 2049));
  }
}
