package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** {@link SearchGroup}'s nprobe (no GPU needed: a host-only {@link DeviceIndex}). */
class SearchGroupTest {

  private static final DeviceIndex INDEX = new DeviceIndex() {
    public int size() {
      return 100;
    }

    public int dims() {
      return 4;
    }

    public Metric metric() {
      return Metric.L2;
    }

    public long deviceBytes() {
      return 0;
    }

    public void close() {}
  };

  @Test
  void nprobeDefaultsToOneAndMustBePositive() {
    float[] queries = new float[8];
    assertEquals(1, new SearchGroup(INDEX, queries, 2, 10, null, null).nprobe());
    assertEquals(7, new SearchGroup(INDEX, queries, 2, 10, 7, null, null).nprobe());
    assertThrows(IllegalArgumentException.class, () -> new SearchGroup(INDEX, queries, 2, 10, 0, null, null));
  }
}
