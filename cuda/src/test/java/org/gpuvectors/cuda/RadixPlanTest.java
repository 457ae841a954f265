package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** How {@link KSelect#radixBlocksPerRow} splits rows over blocks (no GPU needed). */
class RadixPlanTest {

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
}
