package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The GEMM path's plan of query blocks ({@link GpuFlatIndex#queryBlocks}); no GPU needed. */
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
}
