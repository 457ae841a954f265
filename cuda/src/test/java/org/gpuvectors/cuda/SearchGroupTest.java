package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** {@link SearchGroup}'s nprobe and query forms (no GPU needed: a host-only {@link DeviceIndex}). */
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

  @Test
  void queryRowsReadAsTheRowMajorQueriesTheyStandFor() {
    float[][] rows = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}};
    float[] rowMajor = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    SearchGroup byRows = SearchGroup.ofRows(INDEX, rows, 3, 10, 1, null, null);
    SearchGroup packed = new SearchGroup(INDEX, rowMajor, 3, 10, null, null);
    for (SearchGroup group : new SearchGroup[] {byRows, packed}) {
      float[] out = new float[14];
      group.copyQueries(1, 2, out, 2);
      assertArrayEquals(new float[] {0, 0, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 0, 0}, out);
      assertArrayEquals(new float[] {9, 10, 11, 12}, group.query(2));
    }
    assertNotSame(rows[0], byRows.query(0), "a copy: callers may normalise it");
    // only the first numQueries rows are read
    assertEquals(2, SearchGroup.ofRows(INDEX, new float[][] {rows[0], rows[1], new float[1]}, 2, 10, 1, null, null).numQueries());
  }

  @Test
  void badQueryFormsAreRefused() {
    float[][] rows = {{1, 2, 3, 4}, {5, 6, 7}};
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> SearchGroup.ofRows(INDEX, rows, 2, 10, 1, null, null));
    assertEquals("query 1 has 3 dimensions, the index 4", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> SearchGroup.ofRows(INDEX, rows, 3, 10, 1, null, null));
    assertThrows(IllegalArgumentException.class,
        () -> new SearchGroup(INDEX, new float[4], 1, 10, 1, null, null, new float[][] {{1, 2, 3, 4}}));
    assertThrows(IllegalArgumentException.class, () -> new SearchGroup(INDEX, null, 1, 10, 1, null, null, null));
  }
}
