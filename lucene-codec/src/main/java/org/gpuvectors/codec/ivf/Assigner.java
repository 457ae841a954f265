package org.gpuvectors.codec.ivf;

import java.io.Closeable;
import java.io.IOException;
import org.gpuvectors.codec.index.Metric;

/**
 * Finds each point's nearest centroid: the step of k-means and of IVF list assignment that costs {@code points x
 * centroids x dims}, and the encoding step of a product quantizer. On the GPU the points go up once and stay for
 * every step against new centroids ({@code org.gpuvectors.cuda.build.GpuAssignment}: the brute-force primitive for whole
 * vectors, one launch for all the sub-vectors of a product quantizer; see {@code GpuBuildAcceleration#assigner}); {@link
 * #CPU} is the same computation on the CPU.
 *
 * <p>A point may be cut into {@code groups} sub-vectors of {@code dims / groups} floats, each with its own centroids
 * (the sub-quantizers of a product quantizer; squared L2 only). "Nearest" follows the metric as IVF search ranks
 * lists: smallest squared L2, or largest inner product (cosine: the caller passes normalised points and centroids);
 * ties go to the lower centroid index.
 */
public interface Assigner {

  /**
   * Holds the first {@code count} rows of {@code points} (all of one dimension, which {@code groups} divides) for
   * nearest-centroid steps; the caller must not change them while held. Close the result.
   */
  Held hold(float[][] points, int count, int groups, Metric metric) throws IOException;

  /** Points held by an {@link Assigner}. */
  interface Held extends Closeable {

    /**
     * For each held point {@code i} and group {@code g}, at {@code [i * groups + g]}: the nearest of the {@code k}
     * centroids of group {@code g}, which sit in {@code centroids} at {@code [(g * k + c) * subDims, + subDims)}
     * ({@code subDims = dims / groups}).
     */
    int[] nearest(float[] centroids, int k) throws IOException;

    /**
     * One Lloyd iteration of k-means: assigns every sub-vector to its nearest centroid as {@link #nearest} does, then
     * moves each centroid that got any to their mean, in place in {@code centroids} (the others keep their values);
     * returns how many each got ({@code [g * k + c]}). Deterministic: the same means whatever the threads (on the
     * GPU: exact fixed-point sums, and the assignment never leaves the device).
     */
    int[] update(float[] centroids, int k) throws IOException;

    /** Releases the points (on the device, its memory). */
    @Override
    void close();
  }

  /** Points per task of {@link #CPU}. */
  int CPU_BLOCK = CpuAssigner.BLOCK;

  /**
   * The CPU computation (Lucene's SIMD {@code VectorUtil} distances), blocks of {@link #CPU_BLOCK} points side by side
   * on the common pool (each point's answer is its own: the same whatever the threads).
   */
  Assigner CPU = new CpuAssigner();
}
