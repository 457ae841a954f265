package org.gpuvectors.codec.ivf;

import java.io.IOException;
import java.util.OptionalInt;
import java.util.Random;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.VectorRows;
import org.gpuvectors.codec.index.Metric;

/**
 * Builds a segment field's inverted lists: trains the coarse quantizer with {@link KMeans} on a
 * sample of the vectors, then assigns every vector to its nearest centroid, streaming the vectors in
 * blocks (a segment's vectors never sit whole on the heap; the sample's size is {@link
 * TrainingSampleSize#forLists}, bounded by a share of the heap).
 */
public final class IvfBuilder {

  /** Seed of the training sample and the initial centroids (a fixed one: builds are reproducible). */
  public static final long SEED = 42;
  /** Lists per segment without an {@code nlist} in the mapping: about sqrt(vectors), at most this. */
  static final int MAX_DEFAULT_NLIST = 1 << 16;

  /** Vectors assigned per {@link Assigner} call. */
  static final int ASSIGN_BLOCK = 8192;

  private IvfBuilder() {}

  /**
   * The lists of a segment with {@code size} vectors: the mapping's {@code nlist} (at most one list per
   * vector), else {@code round(sqrt(size))} (Faiss's rule of thumb is 1 to 16 times sqrt(n); the low end
   * keeps lists long enough for the GPU to scan efficiently).
   */
  public static int nlist(OptionalInt requested, int size) {
    int n = Math.max(1, size);
    if (requested.isPresent()) {
      return Math.min(requested.getAsInt(), n);
    }
    return (int) Math.max(1, Math.min(Math.min(MAX_DEFAULT_NLIST, n), Math.round(Math.sqrt(n))));
  }

  /** What a build used: kept in the index for the record (and for re-training with the same choices). */
  public record Training(int samples, int iterations, long seed) {}

  /**
   * The lists of {@code vectors} (ordinals = positions in {@code vectors}).
   *
   * @param metric how lists rank vectors (cosine: vectors are normalised here, centroids too)
   */
  public static IvfLayout build(
      FloatVectorValues vectors, int nlist, Metric metric, int iterations, long seed, Assigner assigner)
      throws IOException {
    return build(vectors, nlist, metric, iterations, seed, assigner, new IvfBuildPhases());
  }

  /**
   * As {@link #build(FloatVectorValues, int, Metric, int, long, Assigner)}, ending the phases {@link
   * IvfBuildPhases.Phase#COARSE_KMEANS} (sample and k-means) and {@link IvfBuildPhases.Phase#ASSIGN} in {@code phases}.
   */
  public static IvfLayout build(
      FloatVectorValues vectors, int nlist, Metric metric, int iterations, long seed, Assigner assigner,
      IvfBuildPhases phases) throws IOException {
    int n = vectors.size();
    int dims = vectors.dimension();
    if (nlist < 1 || nlist > n) {
      throw new IllegalArgumentException("nlist must be in [1, " + n + "]: " + nlist);
    }
    int samples = TrainingSampleSize.forLists(n, nlist, dims, iterations, Runtime.getRuntime().maxMemory());
    int[] chosen = KMeans.sample(n, samples, new Random(seed));
    float[][] training = new float[samples][];
    VectorRows.fill(vectors, samples, i -> chosen[i], training, (values, ord) -> VectorRows.copy(values, ord, metric));
    float[] flat = KMeans.train(training, 1, nlist, metric, iterations, seed, assigner); // the assigner's layout
    training = null; // the sample can go before the assignment pass
    phases.end(IvfBuildPhases.Phase.COARSE_KMEANS);

    int[] list = new int[n];
    float[][] block = new float[Math.min(ASSIGN_BLOCK, n)][];
    for (int start = 0; start < n; start += ASSIGN_BLOCK) {
      int count = Math.min(ASSIGN_BLOCK, n - start);
      int first = start;
      VectorRows.fill(vectors, count, i -> first + i, block, (values, ord) -> VectorRows.copy(values, ord, metric));
      try (Assigner.Held held = assigner.hold(block, count, 1, metric)) {
        System.arraycopy(held.nearest(flat, nlist), 0, list, start, count);
      }
    }
    IvfLayout layout = IvfLayout.fromAssignment(KMeans.rows(flat, nlist), list, new Training(samples, iterations, seed));
    phases.end(IvfBuildPhases.Phase.ASSIGN);
    return layout;
  }
}
