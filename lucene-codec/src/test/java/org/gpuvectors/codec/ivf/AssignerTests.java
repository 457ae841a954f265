package org.gpuvectors.codec.ivf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;
import java.util.Random;
import org.gpuvectors.codec.index.Metric;
import org.junit.jupiter.api.Test;

/**
 * {@link Assigner#CPU} (blocks of points on the common pool) against a plain loop in double precision: every point's
 * (or sub-vector's) centroid is the nearest one, up to centroids whose distances lie within float rounding of each
 * other, over several blocks, a partial last block, points held past the count, sub-vector groups, both orderings.
 */
class AssignerTests {

  @Test
  void everyPointGetsItsNearestCentroidOverManyBlocks() throws IOException {
    Random r = new Random(17);
    int dims = 24;
    float[][] centroids = rows(r, 300, dims);
    int count = 5 * Assigner.CPU_BLOCK + 123;
    float[][] points = rows(r, count + 7, dims); // the last 7 are not asked for
    for (Metric metric : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
      int[] out;
      try (Assigner.Held held = Assigner.CPU.hold(points, count, 1, metric)) {
        out = held.nearest(flat(centroids), centroids.length);
      }
      assertEquals(count, out.length);
      for (int i = 0; i < count; i++) {
        double best = Double.MAX_VALUE;
        for (float[] c : centroids) {
          best = Math.min(best, key(points[i], c, metric));
        }
        double got = key(points[i], centroids[out[i]], metric);
        assertTrue(got <= best + 1e-4 * Math.max(1, Math.abs(best)),
            metric + " point " + i + ": centroid " + out[i] + " at " + got + ", the nearest at " + best);
      }
    }
  }

  /** Sub-vector groups (a product quantizer's sub-spaces): each group's nearest among its own centroids. */
  @Test
  void eachGroupGetsItsNearestCentroid() throws IOException {
    Random r = new Random(19);
    int groups = 5;
    int subDims = 3;
    int k = 40;
    int count = 2 * Assigner.CPU_BLOCK + 17;
    float[][] points = rows(r, count, groups * subDims);
    float[][] books = rows(r, groups * k, subDims);
    int[] out;
    try (Assigner.Held held = Assigner.CPU.hold(points, count, groups, Metric.L2)) {
      out = held.nearest(flat(books), k);
    }
    assertEquals(count * groups, out.length);
    for (int i = 0; i < count; i++) {
      for (int g = 0; g < groups; g++) {
        float[] sub = Arrays.copyOfRange(points[i], g * subDims, (g + 1) * subDims);
        double best = Double.MAX_VALUE;
        for (int c = 0; c < k; c++) {
          best = Math.min(best, key(sub, books[g * k + c], Metric.L2));
        }
        int chosen = out[i * groups + g];
        assertTrue(chosen >= 0 && chosen < k, "a centroid of the group: " + chosen);
        double got = key(sub, books[g * k + chosen], Metric.L2);
        assertTrue(got <= best + 1e-4 * Math.max(1, best), "point " + i + " group " + g + ": " + got + " vs " + best);
      }
    }
  }

  @Test
  void rejectsBadGroups() {
    float[][] points = rows(new Random(1), 4, 6);
    assertThrows(IllegalArgumentException.class, () -> Assigner.CPU.hold(points, 4, 4, Metric.L2));
    assertThrows(IllegalArgumentException.class, () -> Assigner.CPU.hold(points, 4, 2, Metric.INNER_PRODUCT));
    assertThrows(IllegalArgumentException.class, () -> Assigner.CPU.hold(points, 5, 1, Metric.L2));
  }

  static float[] flat(float[][] rows) {
    int dims = rows[0].length;
    float[] out = new float[rows.length * dims];
    for (int i = 0; i < rows.length; i++) {
      System.arraycopy(rows[i], 0, out, i * dims, dims);
    }
    return out;
  }

  private static double key(float[] p, float[] c, Metric metric) {
    double s = 0;
    for (int d = 0; d < p.length; d++) {
      s += metric == Metric.L2 ? ((double) p[d] - c[d]) * ((double) p[d] - c[d]) : -(double) p[d] * c[d];
    }
    return s;
  }

  private static float[][] rows(Random r, int n, int dims) {
    float[][] out = new float[n][dims];
    for (float[] row : out) {
      for (int d = 0; d < dims; d++) {
        row[d] = (float) r.nextGaussian();
      }
    }
    return out;
  }
}
