package org.gpuvectors.codec.ivf;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.OptionalInt;
import java.util.Random;
import java.util.function.IntUnaryOperator;
import java.util.stream.IntStream;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.cuda.Metric;

/**
 * Builds a segment field's inverted lists: trains the coarse quantizer with {@link KMeans} on a
 * sample of the vectors, then assigns every vector to its nearest centroid, streaming the vectors in
 * blocks (a segment's vectors never sit whole on the heap; the sample is bounded by {@link
 * #MAX_TRAINING_FLOATS}).
 */
public final class IvfBuilder {

  /** Training points per list at most (Faiss: 256; it warns below 39). */
  static final int TRAINING_POINTS_PER_LIST = 64;
  /** Heap the training sample may take, in floats (128 MB). */
  static final long MAX_TRAINING_FLOATS = 32L << 20;
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
    long maxByHeap = Math.max(nlist, MAX_TRAINING_FLOATS / dims);
    int samples = (int) Math.min(n, Math.min((long) nlist * TRAINING_POINTS_PER_LIST, maxByHeap));
    int[] chosen = KMeans.sample(n, samples, new Random(seed));
    float[][] training = new float[samples][];
    fillRows(vectors, samples, i -> chosen[i], training, (values, ord) -> row(values, ord, metric));
    float[] flat = KMeans.train(training, 1, nlist, metric, iterations, seed, assigner); // the assigner's layout
    training = null; // the sample can go before the assignment pass
    phases.end(IvfBuildPhases.Phase.COARSE_KMEANS);

    int[] list = new int[n];
    float[][] block = new float[Math.min(ASSIGN_BLOCK, n)][];
    for (int start = 0; start < n; start += ASSIGN_BLOCK) {
      int count = Math.min(ASSIGN_BLOCK, n - start);
      int first = start;
      fillRows(vectors, count, i -> first + i, block, (values, ord) -> row(values, ord, metric));
      try (Assigner.Held held = assigner.hold(block, count, 1, metric)) {
        System.arraycopy(held.nearest(flat, nlist), 0, list, start, count);
      }
    }
    IvfLayout layout = IvfLayout.fromAssignment(KMeans.rows(flat, nlist), list, new Training(samples, iterations, seed));
    phases.end(IvfBuildPhases.Phase.ASSIGN);
    return layout;
  }

  /** Reads one row of a build from the vectors (a copy of its own: a {@link FloatVectorValues} reuses its arrays). */
  interface RowReader {
    float[] read(FloatVectorValues values, int ord) throws IOException;
  }

  /** Rows per task of {@link #fillRows}. */
  static final int FILL_CHUNK = 2048;

  /**
   * {@code out[i] = reader.read(values, ordinal(i))} for {@code i < count}: chunks of {@link #FILL_CHUNK} rows side by
   * side on the common pool, each reading through its own {@link FloatVectorValues#copy} (made here, one thread, before
   * the chunks start). Copying rows out of the vectors was a third to a half of a GPU build's list assignment and
   * encoding (Fashion-MNIST: 60k rows of 784 floats a pass). Vectors that cannot be copied are read on this thread.
   */
  static void fillRows(FloatVectorValues vectors, int count, IntUnaryOperator ordinal, float[][] out, RowReader reader)
      throws IOException {
    int chunks = (count + FILL_CHUNK - 1) / FILL_CHUNK;
    FloatVectorValues[] copies = new FloatVectorValues[chunks];
    try {
      for (int c = 0; c < chunks && chunks > 1; c++) {
        copies[c] = vectors.copy();
      }
    } catch (UnsupportedOperationException e) {
      chunks = 1; // a view without copies: one reader
    }
    if (chunks <= 1) {
      for (int i = 0; i < count; i++) {
        out[i] = reader.read(vectors, ordinal.applyAsInt(i));
      }
      return;
    }
    try {
      IntStream.range(0, chunks).parallel().forEach(c -> {
        try {
          for (int i = c * FILL_CHUNK, end = Math.min(count, i + FILL_CHUNK); i < end; i++) {
            out[i] = reader.read(copies[c], ordinal.applyAsInt(i));
          }
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  /** A copy of vector {@code ord} (normalised for cosine). */
  static float[] row(FloatVectorValues vectors, int ord, Metric metric) throws IOException {
    float[] v = vectors.vectorValue(ord).clone();
    if (metric == Metric.COSINE) {
      KMeans.normalize(v);
    }
    return v;
  }
}
