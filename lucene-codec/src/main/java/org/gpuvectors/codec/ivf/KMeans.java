package org.gpuvectors.codec.ivf;

import java.io.IOException;
import java.util.Arrays;
import java.util.Random;
import org.gpuvectors.cuda.Metric;

/**
 * Lloyd's k-means for the coarse quantizer of the IVF index types (and, later, PQ codebooks).
 *
 * <p>Deterministic for a given seed and input: the initial centroids are distinct training points
 * drawn with {@link Random}, each iteration assigns every point to its nearest centroid (the costly
 * step, done by an {@link Assigner}: the GPU's brute-force primitive when there is one) and moves
 * each centroid to the mean of its points. For {@link Metric#COSINE} the points must be normalised
 * and the centroids are normalised after each update (spherical k-means), so that ranking lists by
 * inner product ranks them by cosine. A centroid left without points takes half of the largest
 * cluster (its centroid, nudged apart in opposite directions), as Faiss does, so no list stays empty
 * while others are crowded.
 */
public final class KMeans {

  /** Lloyd iterations when the caller does not say (Faiss trains IVF quantizers with 10-25). */
  public static final int DEFAULT_ITERATIONS = 15;

  /** Relative nudge that separates a split centroid from the one it was copied from. */
  private static final float SPLIT_EPSILON = 1f / 1024;

  private KMeans() {}

  /**
   * Trains {@code k} centroids on {@code points} (all rows of the same dimension).
   *
   * @return {@code k} centroids (rows); fewer points than {@code k} is an error
   */
  public static float[][] train(
      float[][] points, int k, Metric metric, int iterations, long seed, Assigner assigner) throws IOException {
    int n = points.length;
    if (k < 1 || k > n) {
      throw new IllegalArgumentException("k-means needs 1 <= k <= points: k=" + k + ", points=" + n);
    }
    if (iterations < 0) {
      throw new IllegalArgumentException("iterations must be >= 0: " + iterations);
    }
    int dims = points[0].length;
    Random random = new Random(seed);
    float[][] centroids = new float[k][];
    int[] chosen = sample(n, k, random);
    for (int c = 0; c < k; c++) {
      centroids[c] = points[chosen[c]].clone();
    }
    int[] assignment = new int[n];
    double[][] sums = new double[k][dims];
    int[] counts = new int[k];
    for (int it = 0; it < iterations; it++) {
      assigner.assign(centroids, points, n, metric, assignment, 0);
      for (double[] s : sums) {
        Arrays.fill(s, 0);
      }
      Arrays.fill(counts, 0);
      for (int i = 0; i < n; i++) {
        int c = assignment[i];
        counts[c]++;
        double[] s = sums[c];
        float[] p = points[i];
        for (int d = 0; d < dims; d++) {
          s[d] += p[d];
        }
      }
      for (int c = 0; c < k; c++) {
        if (counts[c] > 0) {
          for (int d = 0; d < dims; d++) {
            centroids[c][d] = (float) (sums[c][d] / counts[c]);
          }
        }
      }
      splitIntoEmpty(centroids, counts);
      if (metric == Metric.COSINE) {
        for (float[] c : centroids) {
          normalize(c);
        }
      }
    }
    return centroids;
  }

  /** Gives every empty cluster half of the largest one (a copy of its centroid, nudged apart). */
  private static void splitIntoEmpty(float[][] centroids, int[] counts) {
    for (int empty = 0; empty < counts.length; empty++) {
      if (counts[empty] > 0) {
        continue;
      }
      int largest = 0;
      for (int c = 1; c < counts.length; c++) {
        if (counts[c] > counts[largest]) {
          largest = c;
        }
      }
      if (counts[largest] < 2) {
        return; // nothing left to split (fewer distinct points than centroids)
      }
      float[] from = centroids[largest];
      float[] to = centroids[empty];
      for (int d = 0; d < from.length; d++) {
        float delta = (d % 2 == 0 ? SPLIT_EPSILON : -SPLIT_EPSILON) * (Math.abs(from[d]) + SPLIT_EPSILON);
        to[d] = from[d] + delta;
        from[d] -= delta;
      }
      counts[empty] = counts[largest] / 2;
      counts[largest] -= counts[empty];
    }
  }

  /**
   * {@code count} distinct indexes of {@code [0, n)} drawn uniformly (a partial Fisher-Yates
   * shuffle), in ascending order so that reading them walks the vectors forward.
   */
  public static int[] sample(int n, int count, Random random) {
    if (count >= n) {
      int[] all = new int[n];
      Arrays.setAll(all, i -> i);
      return all;
    }
    int[] perm = new int[n];
    Arrays.setAll(perm, i -> i);
    for (int i = 0; i < count; i++) {
      int j = i + random.nextInt(n - i);
      int t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    int[] chosen = Arrays.copyOf(perm, count);
    Arrays.sort(chosen);
    return chosen;
  }

  /** Scales a vector to unit length in place (a zero vector stays zero). */
  public static void normalize(float[] v) {
    double s = 0;
    for (float x : v) {
      s += (double) x * x;
    }
    if (s > 0) {
      float inv = (float) (1 / Math.sqrt(s));
      for (int d = 0; d < v.length; d++) {
        v[d] *= inv;
      }
    }
  }
}
