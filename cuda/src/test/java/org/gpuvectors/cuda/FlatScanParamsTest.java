package org.gpuvectors.cuda;

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
    // 7 segments of 1M rows in all, a query each: 264 blocks of ~3,788 rows
    long rows = FlatScanTable.chunkRows(132, 1_000_000);
    assertEquals(3788, rows);
    assertEquals(93, FlatScanTable.chunks(350_000, rows), "a large segment: many chunks");
    assertEquals(8, FlatScanTable.chunks(30_000, rows), "a small one: few");
    assertEquals(1, FlatScanTable.chunks(2, rows), "at least one");
    assertEquals(FlatScanParams.ROWS, FlatScanTable.chunkRows(132, 5000), "a tile at least");
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
