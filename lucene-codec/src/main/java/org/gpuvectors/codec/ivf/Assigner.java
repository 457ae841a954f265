package org.gpuvectors.codec.ivf;

import java.io.IOException;
import java.util.stream.IntStream;
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

  /** Points per task of {@link #CPU}. */
  int CPU_BLOCK = 1024;

  /**
   * The CPU computation (Lucene's SIMD {@link VectorUtil} distances), blocks of {@link #CPU_BLOCK} points side by
   * side on the common pool (each point's answer is its own: the same whatever the threads).
   */
  Assigner CPU =
      (centroids, points, count, metric, out, outOffset) -> {
        boolean l2 = metric == Metric.L2;
        IntStream blocks = IntStream.range(0, (count + CPU_BLOCK - 1) / CPU_BLOCK);
        (count > CPU_BLOCK ? blocks.parallel() : blocks).forEach(b -> {
          for (int i = b * CPU_BLOCK, end = Math.min(count, i + CPU_BLOCK); i < end; i++) {
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
        });
      };
}
