package org.gpuvectors.codec.ivf;

import java.util.stream.IntStream;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.codec.index.Metric;

/**
 * {@link Assigner#CPU}: nearest centroids by Lucene's SIMD {@link VectorUtil} distances, blocks of {@link #BLOCK}
 * points side by side on the common pool. Several groups: the points' sub-vectors are copied into rows of their own
 * once, when held ({@code VectorUtil} compares whole arrays).
 */
final class CpuAssigner implements Assigner {

  /** Points per task. */
  static final int BLOCK = 1024;

  @Override
  public Held hold(float[][] points, int count, int groups, Metric metric) {
    if (count < 0 || count > points.length) {
      throw new IllegalArgumentException("count must be in [0, " + points.length + "]: " + count);
    }
    int dims = count == 0 ? groups : points[0].length;
    if (groups < 1 || dims % groups != 0) {
      throw new IllegalArgumentException("groups must divide the dimension " + dims + ": " + groups);
    }
    if (groups > 1 && metric != Metric.L2) {
      throw new IllegalArgumentException("sub-vector groups are assigned by squared L2 only, not " + metric);
    }
    float[][][] rows = new float[groups][][]; // rows[g][i]: sub-vector g of point i
    if (groups == 1) {
      rows[0] = points;
    } else {
      int subDims = dims / groups;
      for (int g = 0; g < groups; g++) {
        rows[g] = new float[count][];
        for (int i = 0; i < count; i++) {
          rows[g][i] = java.util.Arrays.copyOfRange(points[i], g * subDims, (g + 1) * subDims);
        }
      }
    }
    boolean l2 = metric == Metric.L2;
    return new Held() {
      @Override
      public int[] nearest(float[] centroids, int k) {
        int subDims = dims / groups;
        if (k < 1 || (long) groups * k * subDims != centroids.length) {
          throw new IllegalArgumentException("need groups * k * subDims centroid floats: groups=" + groups + " k=" + k
              + " subDims=" + subDims + " length=" + centroids.length);
        }
        int[] out = new int[count * groups];
        float[][][] books = new float[groups][k][];
        for (int g = 0; g < groups; g++) {
          for (int c = 0; c < k; c++) {
            books[g][c] = java.util.Arrays.copyOfRange(centroids, (g * k + c) * subDims, (g * k + c + 1) * subDims);
          }
        }
        // tasks: (group, block of points); each writes its own entries of out
        int blocks = (count + BLOCK - 1) / BLOCK;
        IntStream tasks = IntStream.range(0, groups * blocks);
        (groups * blocks > 1 ? tasks.parallel() : tasks).forEach(t -> {
          int g = t / blocks;
          float[][] sub = rows[g];
          float[][] book = books[g];
          for (int i = (t % blocks) * BLOCK, end = Math.min(count, i + BLOCK); i < end; i++) {
            float[] p = sub[i];
            int best = 0;
            float bestValue = Float.NaN;
            for (int c = 0; c < k; c++) {
              float v = l2 ? VectorUtil.squareDistance(p, book[c]) : -VectorUtil.dotProduct(p, book[c]);
              if (c == 0 || v < bestValue) { // ties: the lower centroid index
                best = c;
                bestValue = v;
              }
            }
            out[i * groups + g] = best;
          }
        });
        return out;
      }

      @Override
      public int[] update(float[] centroids, int k) {
        return KMeans.hostMeans(points, count, nearest(centroids, k), groups, k, centroids);
      }

      @Override
      public void close() {}
    };
  }
}
