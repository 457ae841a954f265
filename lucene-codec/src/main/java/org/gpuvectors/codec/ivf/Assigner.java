package org.gpuvectors.codec.ivf;

import java.io.IOException;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.cuda.Metric;

/**
 * Finds each point's nearest centroid: the step of k-means and of IVF list assignment that costs
 * {@code points x centroids x dims}. On the GPU it is the brute-force primitive (GEMM + k-select with
 * k = 1, see {@code GpuSearchService#assigner}); {@link #CPU} is the same computation on the CPU.
 *
 * <p>"Nearest" follows the metric as IVF search ranks lists: smallest squared L2, or largest inner
 * product (cosine: the caller passes normalised points and centroids).
 */
public interface Assigner {

  /**
   * Writes to {@code out[outOffset + i]} the index of the centroid nearest to {@code points[i]}, for
   * {@code i < count}.
   */
  void assign(float[][] centroids, float[][] points, int count, Metric metric, int[] out, int outOffset)
      throws IOException;

  /** The CPU computation (Lucene's SIMD {@link VectorUtil} distances), one thread. */
  Assigner CPU =
      (centroids, points, count, metric, out, outOffset) -> {
        boolean l2 = metric == Metric.L2;
        for (int i = 0; i < count; i++) {
          float[] p = points[i];
          int best = 0;
          float bestValue = Float.NaN;
          for (int c = 0; c < centroids.length; c++) {
            float v = l2 ? VectorUtil.squareDistance(p, centroids[c]) : -VectorUtil.dotProduct(p, centroids[c]);
            if (c == 0 || v < bestValue) { // ties: the lower centroid index
              best = c;
              bestValue = v;
            }
          }
          out[outOffset + i] = best;
        }
      };
}
