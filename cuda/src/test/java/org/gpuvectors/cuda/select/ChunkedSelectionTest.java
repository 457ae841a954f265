package org.gpuvectors.cuda.select;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link ChunkedSelection}'s sizes and its single-chunk path, which needs no temporaries (no GPU needed). */
class ChunkedSelectionTest {

  @Test
  void rowsHoldEveryChunksList() {
    assertEquals(16 * 100, ChunkedSelection.width(16, 100));
    assertEquals(4L * 32 * 16 * 100, ChunkedSelection.bytes(32, 16, 100), "4-byte keys (or ids), rows x width");
    assertEquals(1, ChunkedSelection.width(1, 1));
  }

  @Test
  void sizesAreLongs() {
    // 10,000 rows of 1,000 chunks of 2,048: past 2^31 elements, and bytes past 2^32
    assertEquals(2_048_000L, ChunkedSelection.width(1000, 2048));
    assertEquals(4L * 10_000 * 2_048_000L, ChunkedSelection.bytes(10_000, 1000, 2048));
    assertEquals((long) Integer.MAX_VALUE + 1, ChunkedSelection.width(1 << 16, 1 << 15));
  }

  /** One chunk writes straight into the merge's output (its addresses and row stride), and nothing is merged. */
  @Test
  void oneChunkWritesTheOutput() {
    SelectParams merge = new SelectParams().k(10).largest(true);
    merge.outK = 0x1000L + 4 * 50;
    merge.outIdx = 0x2000L + 4 * 50;
    merge.outRowStride = 10;
    List<long[]> launches = new ArrayList<>();
    ChunkedSelection.enqueue(null, 5, 1, 10, merge, (keys, ids, stride) -> launches.add(new long[] {keys, ids, stride}),
        (device, m) -> fail("one chunk is not merged"));
    assertEquals(1, launches.size(), "one launch");
    assertEquals(0x1000L + 200, launches.get(0)[0]);
    assertEquals(0x2000L + 200, launches.get(0)[1]);
    assertEquals(10, launches.get(0)[2]);
  }
}
