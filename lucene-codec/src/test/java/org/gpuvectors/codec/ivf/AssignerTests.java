package org.gpuvectors.codec.ivf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;
import java.util.Random;
import org.gpuvectors.cuda.Metric;
import org.junit.jupiter.api.Test;

/**
 * {@link Assigner#CPU} (blocks of points on the common pool) against a plain loop in double precision: every point's
 * centroid is the nearest one, up to centroids whose distances lie within float rounding of each other, over
 * several blocks, an offset into the output, a partial last block, and both orderings.
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
      int offset = 11;
      int[] out = new int[offset + count + 3];
      Arrays.fill(out, -5);
      Assigner.CPU.assign(centroids, points, count, metric, out, offset);
      for (int i = 0; i < offset; i++) {
        assertEquals(-5, out[i], "before the offset: untouched");
      }
      for (int i = offset + count; i < out.length; i++) {
        assertEquals(-5, out[i], "past the points asked for: untouched");
      }
      for (int i = 0; i < count; i++) {
        double best = Double.MAX_VALUE;
        for (float[] c : centroids) {
          best = Math.min(best, key(points[i], c, metric));
        }
        double got = key(points[i], centroids[out[offset + i]], metric);
        assertTrue(got <= best + 1e-4 * Math.max(1, Math.abs(best)),
            metric + " point " + i + ": centroid " + out[offset + i] + " at " + got + ", the nearest at " + best);
      }
    }
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
