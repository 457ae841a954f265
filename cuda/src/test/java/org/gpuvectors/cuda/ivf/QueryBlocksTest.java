package org.gpuvectors.cuda.ivf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.pass.QueryUploads;

/**
 * The plans of query blocks: the flat GEMM path's ({@link GpuFlatIndex#queryBlocks}) and {@code ivf_pq}'s ({@link
 * GpuIvfPqIndex#queryBlocks}), both {@link QueryUploads#blocks}; no GPU needed.
 */
class QueryBlocksTest {

  @Test
  void aShortFirstBlockThenEvenBlocksCoverEveryQueryOnce() {
    assertArrayEquals(new int[] {0}, GpuFlatIndex.queryBlocks(0));
    assertArrayEquals(new int[] {0, 1}, GpuFlatIndex.queryBlocks(1));
    assertArrayEquals(new int[] {0, 1024}, GpuFlatIndex.queryBlocks(1024));
    assertArrayEquals(new int[] {0, 1024, 1025}, GpuFlatIndex.queryBlocks(1025));
    // Fashion-MNIST's batch: 1,024, then 8,976 in three blocks of 2,992
    assertArrayEquals(new int[] {0, 1024, 4016, 7008, 10000}, GpuFlatIndex.queryBlocks(10_000));
    for (int nq = 1; nq < 40_000; nq += 37) {
      int[] starts = GpuFlatIndex.queryBlocks(nq);
      assertEquals(0, starts[0]);
      assertEquals(nq, starts[starts.length - 1]);
      assertTrue(starts[1] <= GpuFlatIndex.FIRST_QUERY_BLOCK, "nq=" + nq);
      int smallest = Integer.MAX_VALUE;
      int largest = 0;
      for (int b = 1; b < starts.length; b++) {
        int size = starts[b] - starts[b - 1];
        assertTrue(size >= 1 && size <= GpuFlatIndex.MAX_QUERY_BLOCK, "nq=" + nq + " block " + b + ": " + size);
        if (b >= 2) {
          smallest = Math.min(smallest, size);
          largest = Math.max(largest, size);
        }
      }
      assertTrue(starts.length < 3 || largest - smallest <= 1, "blocks after the first differ by one at most: nq=" + nq);
    }
  }

  @Test
  void ivfPqBlocksBoundTheRerankAndStartShortOnlyWhenQueriesArrive() {
    // 2M x 768 at num_candidates 50: 400 candidates a query, at most 10,485 queries a block (2^22 slots)
    assertArrayEquals(new int[] {0, 10_000}, GpuIvfPqIndex.queryBlocks(10_000, 400, true, false));
    assertArrayEquals(new int[] {0, 1024, 10_000}, GpuIvfPqIndex.queryBlocks(10_000, 400, true, true));
    // 800 candidates: 5,242 a block at most
    assertArrayEquals(new int[] {0, 5242, 10_000}, GpuIvfPqIndex.queryBlocks(10_000, 800, true, false)); // as before: full blocks
    assertArrayEquals(new int[] {0, 1024, 5512, 10_000}, GpuIvfPqIndex.queryBlocks(10_000, 800, true, true));
    // no device re-rank: one block, or the short first one and the rest
    assertArrayEquals(new int[] {0, 50_000}, GpuIvfPqIndex.queryBlocks(50_000, 2048, false, false));
    assertArrayEquals(new int[] {0, 1024, 50_000}, GpuIvfPqIndex.queryBlocks(50_000, 2048, false, true));
    assertArrayEquals(new int[] {0, 3}, GpuIvfPqIndex.queryBlocks(3, 400, true, true));
    assertArrayEquals(new int[] {0}, GpuIvfPqIndex.queryBlocks(0, 400, true, true));
    // candidates past 2^22 a query: blocks of one
    assertArrayEquals(new int[] {0, 1, 2}, QueryUploads.blocks(2, 1024, 1));
  }

  @Test
  void blocksOfNoQueryAreRefused() {
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> QueryUploads.blocks(5, 0, 4));
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> QueryUploads.blocks(5, 4, 0));
  }
}
