package org.gpuvectors.codec.ivf;

import org.gpuvectors.codec.index.VectorRows;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.gpuvectors.codec.index.Metric;
import org.junit.jupiter.api.Test;

class KMeansTests {

  private static float[][] blobs(float[][] centers, int perCenter, float noise, Random random) {
    int dims = centers[0].length;
    float[][] points = new float[centers.length * perCenter][dims];
    for (int i = 0; i < points.length; i++) {
      float[] c = centers[i % centers.length];
      for (int d = 0; d < dims; d++) {
        points[i][d] = c[d] + (float) random.nextGaussian() * noise;
      }
    }
    return points;
  }

  @Test
  void findsSeparatedClusters() throws IOException {
    float[][] centers = {{10, 0, 0}, {0, 10, 0}, {0, 0, 10}, {-10, -10, -10}};
    float[][] points = blobs(centers, 200, 0.5f, new Random(1));
    float[][] trained = KMeans.train(points, 4, Metric.L2, KMeans.DEFAULT_ITERATIONS, 3, Assigner.CPU);
    for (float[] c : centers) {
      double best = Double.MAX_VALUE;
      for (float[] t : trained) {
        double d = 0;
        for (int i = 0; i < 3; i++) {
          d += (c[i] - t[i]) * (c[i] - t[i]);
        }
        best = Math.min(best, d);
      }
      assertTrue(best < 0.1, "a centroid within 0.3 of " + Arrays.toString(c) + ": " + Math.sqrt(best));
    }
  }

  @Test
  void sameSeedSameCentroids() throws IOException {
    float[][] points = blobs(new float[][] {{1, 2}, {3, 4}, {5, 0}}, 100, 1f, new Random(2));
    float[][] a = KMeans.train(points, 8, Metric.L2, 10, 99, Assigner.CPU);
    float[][] b = KMeans.train(points, 8, Metric.L2, 10, 99, Assigner.CPU);
    for (int c = 0; c < 8; c++) {
      assertArrayEquals(a[c], b[c]);
    }
  }

  @Test
  void cosineCentroidsAreUnitVectors() throws IOException {
    float[][] points = blobs(new float[][] {{1, 0, 0}, {0, 1, 0}}, 100, 0.2f, new Random(3));
    for (float[] p : points) {
      VectorRows.normalize(p);
    }
    for (float[] c : KMeans.train(points, 5, Metric.COSINE, 5, 1, Assigner.CPU)) {
      double norm = 0;
      for (float x : c) {
        norm += x * x;
      }
      assertEquals(1, norm, 1e-5);
    }
  }

  @Test
  void emptyClustersTakeHalfOfTheLargest() throws IOException {
    // 3 distinct points, 6 centroids: the initial duplicates would stay empty without splitting
    float[][] points = new float[90][];
    for (int i = 0; i < points.length; i++) {
      points[i] = new float[] {i % 3, 0};
    }
    float[][] trained = KMeans.train(points, 6, Metric.L2, 5, 4, Assigner.CPU);
    int[] assignment;
    try (Assigner.Held held = Assigner.CPU.hold(points, points.length, 1, Metric.L2)) {
      assignment = held.nearest(AssignerTests.flat(trained), trained.length);
    }
    Set<Integer> used = new HashSet<>();
    for (int a : assignment) {
      used.add(a);
    }
    assertEquals(3, used.size(), "every distinct point has its own centroid");
  }

  @Test
  void rejectsMoreCentroidsThanPoints() {
    float[][] points = {{1}, {2}};
    assertThrows(IllegalArgumentException.class, () -> KMeans.train(points, 3, Metric.L2, 1, 0, Assigner.CPU));
  }

  @Test
  void samplesAreDistinctAndAscending() {
    int[] s = KMeans.sample(1000, 100, new Random(5));
    assertEquals(100, s.length);
    for (int i = 1; i < s.length; i++) {
      assertTrue(s[i] > s[i - 1]);
    }
    assertEquals(1000, KMeans.sample(1000, 5000, new Random(5)).length);
  }
}
