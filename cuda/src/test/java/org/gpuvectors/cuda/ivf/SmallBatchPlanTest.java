package org.gpuvectors.cuda.ivf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.gpuvectors.cuda.select.KSelect;

/**
 * How a small batch's ivf_pq pass spreads over the GPU (no GPU needed): the lists of the keys scan over blocks
 * ({@link GpuIvfPqIndex#keysPartsPerList}), the radix selection's rows over blocks ({@link KSelect#radixBlocksPerRow}).
 */
class SmallBatchPlanTest {

  @Test
  void oneLongRowSpreadsOverTheDevice() {
    assertEquals(16, KSelect.radixBlocksPerRow(1, 63_000, 132), "a 63k-key row: a block per 4,096 keys");
    assertEquals(153, KSelect.radixBlocksPerRow(1, 625_000, 132), "a 10M-vector query's row: 153 blocks");
    assertEquals(264, KSelect.radixBlocksPerRow(1, 2_000_000, 132), "at most two blocks per multiprocessor");
    assertEquals(1, KSelect.radixBlocksPerRow(1, 100, 132), "a short row: one block");
  }

  @Test
  void batchesShareTheDevice() {
    assertEquals(8, KSelect.radixBlocksPerRow(32, 63_000, 132), "32 rows: 264 / 32 blocks each");
    assertEquals(1, KSelect.radixBlocksPerRow(1_000, 63_000, 132), "more rows than blocks: one block a row");
  }

  @Test
  void largeListsOfFewQueriesSplitOverBlocks() {
    assertEquals(20, GpuIvfPqIndex.keysPartsPerList(1, 16, 20_000, 132), "one query, 16 lists: 20,000 / 1,024 parts");
    assertEquals(33, GpuIvfPqIndex.keysPartsPerList(1, 16, 100_000, 132), "at most 528 / 16 parts");
    assertEquals(3, GpuIvfPqIndex.keysPartsPerList(1, 63, 3_000, 132), "parts of at least 1,024 codes");
    assertEquals(1, GpuIvfPqIndex.keysPartsPerList(1, 63, 800, 132), "lists shorter than a part: one block each");
    assertEquals(1, GpuIvfPqIndex.keysPartsPerList(32, 63, 20_000, 132), "a batch's lists fill the GPU already");
    assertEquals(1, GpuIvfPqIndex.keysPartsPerList(1, 60_000, 1_000_000, 100_000), "the grid's y stays <= 65,535");
  }
}
