package org.gpuvectors.codec.graph;

import java.io.IOException;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.cuda.Metric;

/**
 * Step (1) of a graph build: every vector's {@code k} nearest other vectors, the k-NN graph that
 * {@link GraphPruner} then prunes. On the GPU ({@code GpuSearchService#knnFinder}) it is the
 * brute-force primitive, batched, up to 100k vectors and IVF above ({@code GpuKnnGraph}); {@link #CPU}
 * is exact brute force for segments of at most {@link #EXACT_MAX_VECTORS} vectors and NN-descent
 * above. The whole-index k-NN graph ({@code KnnGraphOfIndex}) takes the same step. Step (2), the pruning
 * ({@link #prune}), runs on the same device.
 */
public interface KnnFinder {

  /**
   * Segments up to this many vectors get the exact k-NN graph on the CPU (n<sup>2</sup> distances),
   * larger ones NN-descent, whose cost grows about linearly with n. Measured on 2 cores, Fashion-MNIST
   * (784 dimensions), whole graph builds at k = 64: exact 22 s for 20k vectors (so about 60 s at this
   * threshold), NN-descent 35 s for 40k; NN-descent finds about 98 % of the exact graph's edges
   * ({@code GraphBuildTests}).
   */
  int EXACT_MAX_VECTORS = 32_768;

  /**
   * The k-NN graph of {@code vectors} (ordinals = positions): {@code n * k} ordinals, row {@code i}
   * the {@code k} vectors nearest to vector {@code i} by {@code metric}, nearest first (ties: lower
   * ordinal), never {@code i} itself; rows end with -1 when the segment has at most {@code k} vectors.
   */
  int[] knn(FloatVectorValues vectors, int k, Metric metric) throws IOException;

  /**
   * Step (2), on the same device as step (1): keeps {@code degree} of each row's {@code k} edges of {@code knn},
   * fewest detours first ({@link GraphPruner#prune}, which the CPU runs; the GPU's finder runs the same rule there).
   */
  default int[] prune(int[] knn, int n, int k, int degree) {
    return GraphPruner.prune(knn, n, k, degree);
  }

  /**
   * Step (4)'s farthest-first traversal ({@link GraphBuilder#seeds}) on the device of step (1): over the vectors
   * {@code sample[0 .. )} (positions into it), by {@code spread} (L2 or cosine), each position's {@code scale} as the
   * traversal keys it past {@code seedCount} choices, up to {@code limit} choices while the best key exceeds {@code
   * uncovered}; returns the chosen positions in order, or null where the host runs the traversal (the CPU's finder,
   * or a device that cannot).
   */
  default int[] farthestFirst(FloatVectorValues vectors, int[] sample, Metric spread, float[] scale, int seedCount,
                              int limit, float uncovered) throws IOException {
    return null;
  }

  /** The CPU: exact up to {@link #EXACT_MAX_VECTORS} vectors, NN-descent above; on the common pool. */
  KnnFinder CPU =
      (vectors, k, metric) ->
          vectors.size() <= EXACT_MAX_VECTORS
              ? ExactKnn.knn(vectors, k, metric)
              : NnDescent.knn(vectors, k, metric, GraphBuilder.SEED);
}
