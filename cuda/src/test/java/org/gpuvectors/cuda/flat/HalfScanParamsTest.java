package org.gpuvectors.cuda.flat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** How many candidates the half scan's chunks keep ({@link HalfScanParams#chunkCandidates}) and what it checks. */
class HalfScanParamsTest {

  @Test
  void chunksKeepTheirShareOfTheCandidatesWithHeadroom() {
    // 1M rows, one query, k = 100 (k' = 200): 261 chunks of 3,840 rows each expect 0.77 of the 200 best
    assertEquals(HalfScanParams.MIN_CHUNK_K, HalfScanParams.chunkCandidates(200, 1_000_000, 261, 3840));
    // 40,000 rows in 40 chunks of 1,024: 8 x 5.12 = 41
    assertEquals(41, HalfScanParams.chunkCandidates(200, 40_000, 40, 1024));
    // one chunk: no merge, it keeps k'
    assertEquals(200, HalfScanParams.chunkCandidates(200, 1000, 1, 1024));
    // a few long chunks: the share passes k', capped at k'
    assertEquals(200, HalfScanParams.chunkCandidates(200, 4096, 4, 1024));
    // always enough for k' in all, whatever the rows
    for (int chunks = 2; chunks <= 300; chunks++) {
      int kept = HalfScanParams.chunkCandidates(256, 1_000_000, chunks, 256);
      assertTrue((long) kept * chunks >= 256 && kept >= HalfScanParams.MIN_CHUNK_K && kept <= 256, chunks + ": " + kept);
    }
  }

  /** Rows of up to 128 padded dims take the short-row kernels (keys' inputs loaded with the rows); wider, the others. */
  @Test
  void shortRowsTakeTheirOwnKernels() {
    HalfScanParams p = new HalfScanParams();
    p.k = 42;
    p.dimsPad = HalfScanParams.paddedDims(128);
    assertEquals("gv_half_scan_s_k64", p.kernel());
    assertEquals("gv_half_scan_table_s_k64", p.kernel("gv_half_scan_table_", 42));
    p.dimsPad = HalfScanParams.paddedDims(129);
    assertEquals("gv_half_scan_k64", p.kernel());
    assertEquals("gv_half_scan_table_k256", p.kernel("gv_half_scan_table_", 200));
    p.dimsPad = HalfScanParams.paddedDims(3);
    assertEquals("gv_half_scan_s_k64", p.kernel());
  }

  @Test
  void checkNamesWhatTheScanDoesNotTake() {
    HalfScanParams p = new HalfScanParams();
    p.dims = 128;
    p.dimsPad = 128;
    p.chunkLen = HalfScanParams.ROWS;
    p.k = HalfScanParams.MIN_CHUNK_K;
    p.check();
    p.k = HalfScanParams.MIN_CHUNK_K - 1;
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, p::check);
    assertTrue(e.getMessage().contains("k=31"), e.getMessage());
    p.k = HalfScanParams.MAX_K;
    p.chunkLen = HalfScanParams.ROWS + 1;
    assertThrows(IllegalArgumentException.class, p::check);
  }
}
