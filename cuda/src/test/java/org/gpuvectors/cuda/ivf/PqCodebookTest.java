package org.gpuvectors.cuda.ivf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** {@link PqCodebook}'s validation and derived sizes (no GPU). */
class PqCodebookTest {

  @Test
  void acceptsConsistentCodebooks() {
    PqCodebook pq = new PqCodebook(16, 8, 4, new float[16 * 256 * 4]);
    assertEquals(256, pq.ksub());
    assertEquals(64, pq.dims());
    assertEquals(16 * 256, pq.tableFloats());
    PqCodebook small = new PqCodebook(6, 4, 8, new float[6 * 16 * 8]);
    assertEquals(16, small.ksub());
    assertEquals(48, small.dims());
    assertEquals(1, new PqCodebook(1, 1, 1, new float[2]).dims());
  }

  @Test
  void rejectsInconsistentCodebooks() {
    assertThrows(NullPointerException.class, () -> new PqCodebook(8, 8, 8, null));
    assertThrows(IllegalArgumentException.class, () -> new PqCodebook(0, 8, 8, new float[0]));
    assertThrows(IllegalArgumentException.class, () -> new PqCodebook(-1, 8, 8, new float[0]));
    assertThrows(IllegalArgumentException.class, () -> new PqCodebook(8, 0, 8, new float[0]));
    assertThrows(IllegalArgumentException.class, () -> new PqCodebook(8, 9, 8, new float[8 * 512 * 8]));
    assertThrows(IllegalArgumentException.class, () -> new PqCodebook(8, 8, 0, new float[0]));
    assertThrows(IllegalArgumentException.class, () -> new PqCodebook(8, 8, 8, new float[8 * 256 * 8 - 1]));
    assertThrows(IllegalArgumentException.class, () -> new PqCodebook(8, 8, 8, new float[8 * 256 * 8 + 1]));
    assertThrows(IllegalArgumentException.class, () -> new PqCodebook(8, 4, 8, new float[8 * 256 * 8]));
  }
}
