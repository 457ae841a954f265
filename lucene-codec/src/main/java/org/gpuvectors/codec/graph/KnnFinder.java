package org.gpuvectors.codec.graph;

import java.io.Closeable;
import java.io.IOException;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;

/**
 * Step (1) of a graph build: every vector's {@code k} nearest other vectors, the k-NN graph that
 * {@link GraphPruner} then prunes. On the GPU ({@code GpuBuildAcceleration#knnFinder}) it is the
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
   * Step (3), on the same device as step (1): {@code pruned} with reverse links ({@link GraphPruner#addReverseLinks},
   * which the CPU runs; the GPU's finder runs the same rule there).
   */
  default int[] reverseLinks(int[] pruned, int n, int degree) {
    return GraphPruner.addReverseLinks(pruned, n, degree);
  }

  /**
   * One graph build's steps on this finder's device, the vectors held there for all of them (the GPU's: uploaded once
   * for the exact k-NN step and the entry points). By default {@link #knn}, {@link #prune} and {@link #reverseLinks},
   * and the entry points left to the host.
   */
  default Build hold(FloatVectorValues vectors, Metric metric) throws IOException {
    KnnFinder finder = this;
    return new Build() {
      @Override
      public int[] knn(int k) throws IOException {
        return finder.knn(vectors, k, metric);
      }

      @Override
      public int[] knn(int k, GraphMerge merge) throws IOException {
        return merge == null ? knn(k) : merge.knn(vectors, k, metric);
      }

      @Override
      public int[] prune(int[] knn, int n, int k, int degree) {
        return finder.prune(knn, n, k, degree);
      }

      @Override
      public int[] reverseLinks(int[] pruned, int n, int degree) {
        return finder.reverseLinks(pruned, n, degree);
      }
    };
  }

  /** The steps of one graph build ({@link #hold}); {@link #close} releases what the device holds for it. */
  interface Build extends Closeable {

    /** Step (1), as {@link KnnFinder#knn} on the held vectors. */
    int[] knn(int k) throws IOException;

    /**
     * Step (1) of a merge: from the merged segments' graphs ({@link GraphMerge}; null: none, as {@link #knn(int)})
     * where this device finds the k-NN graph faster so, else from scratch. The CPU's finder starts from the graphs;
     * the GPU's rebuilds (its brute force beats the CPU's walks of the graphs many times over).
     */
    int[] knn(int k, GraphMerge merge) throws IOException;

    /** Step (2), as {@link KnnFinder#prune}. */
    int[] prune(int[] knn, int n, int k, int degree);

    /** Step (3), as {@link KnnFinder#reverseLinks}. */
    int[] reverseLinks(int[] pruned, int n, int degree);

    /**
     * Step (4)'s scale on the device: each vector of {@code sample}'s smallest gap to a vector of its row of {@code
     * adjacency} ({@link GraphBuilder#seeds}), or null where the host computes it.
     */
    default float[] neighbourGaps(int[] sample, int[] adjacency, int degree) throws IOException {
      return null;
    }

    /**
     * Step (4)'s farthest-first traversal on the device ({@link GraphBuilder#seeds} has the rule): over the vectors of
     * {@code sample}, each position's {@code scale} as the traversal keys it past {@code seedCount} choices, up to
     * {@code limit} choices while the best key exceeds {@code uncovered}; the chosen positions in order, or null where
     * the host runs it.
     */
    default int[] farthestFirst(int[] sample, float[] scale, int seedCount, int limit, float uncovered)
        throws IOException {
      return null;
    }

    @Override
    default void close() {}
  }

  /** The CPU: exact up to {@link #EXACT_MAX_VECTORS} vectors, NN-descent above; on the common pool. */
  KnnFinder CPU =
      (vectors, k, metric) ->
          vectors.size() <= EXACT_MAX_VECTORS
              ? ExactKnn.knn(vectors, k, metric)
              : NnDescent.knn(vectors, k, metric, GraphBuilder.SEED);
}
