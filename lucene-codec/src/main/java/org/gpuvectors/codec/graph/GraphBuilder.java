package org.gpuvectors.codec.graph;

import java.io.IOException;
import java.util.OptionalInt;
import java.util.Random;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.ivf.KMeans;
import org.gpuvectors.cuda.Metric;

/**
 * Builds a segment field's {@code graph} index, the same way with or without a GPU: (1) the k-NN
 * graph with {@code build_degree} neighbours per vector ({@link KnnFinder}: the GPU's brute force, or
 * on the CPU brute force / NN-descent), (2) rank-based pruning to {@code degree} and (3) reverse links
 * ({@link GraphPruner}), (4) the entry points: {@link #seedCount} ordinals drawn with {@link #SEED}.
 */
public final class GraphBuilder {

  /** Out-degree without {@code degree} in the mapping (CAGRA's default graph degree is 64; 32 halves the memory at a small recall cost). */
  public static final int DEFAULT_DEGREE = 32;
  /** Search beam width without {@code search_width} in the mapping. */
  public static final int DEFAULT_SEARCH_WIDTH = 64;
  /** Bounds of {@code degree}. */
  public static final int MIN_DEGREE = 8;
  public static final int MAX_DEGREE = 128;
  /** Largest {@code build_degree} (the k of the k-NN graph). */
  public static final int MAX_BUILD_DEGREE = 256;
  /** Bounds of {@code search_width}. */
  public static final int MIN_SEARCH_WIDTH = 8;
  public static final int MAX_SEARCH_WIDTH = 1024;
  /** Seed of everything random in a build (NN-descent's start and samples, the entry points). */
  public static final long SEED = 42;
  /** Entry points at least / at most (about sqrt(n) in between). */
  static final int MIN_SEEDS = 32;
  static final int MAX_SEEDS = 256;

  private GraphBuilder() {}

  /** The mapping's {@code degree}, else {@link #DEFAULT_DEGREE}. */
  public static int degree(OptionalInt requested) {
    return requested.orElse(DEFAULT_DEGREE);
  }

  /** The mapping's {@code build_degree}, else twice the degree (at most {@link #MAX_BUILD_DEGREE}). */
  public static int buildDegree(OptionalInt requested, int degree) {
    return requested.orElse(Math.min(MAX_BUILD_DEGREE, 2 * degree));
  }

  /** The mapping's {@code search_width}, else {@link #DEFAULT_SEARCH_WIDTH}. */
  public static int searchWidth(OptionalInt requested) {
    return requested.orElse(DEFAULT_SEARCH_WIDTH);
  }

  /** Entry points of a segment of {@code n} vectors: about sqrt(n), within [32, 256], at most n. */
  public static int seedCount(int n) {
    return (int) Math.min(n, Math.max(MIN_SEEDS, Math.min(MAX_SEEDS, Math.round(Math.sqrt(n)))));
  }

  /**
   * The graph of {@code vectors} (ordinals = positions in {@code vectors}), at least one vector.
   *
   * @param metric how the build ranks vectors (cosine: by the cosine, whatever the vectors' lengths)
   */
  public static GraphLayout build(
      FloatVectorValues vectors, Metric metric, int degree, int buildDegree, int searchWidth, KnnFinder finder)
      throws IOException {
    int n = vectors.size();
    if (n < 1) {
      throw new IllegalArgumentException("a graph needs at least one vector");
    }
    if (degree < 1 || buildDegree < degree) {
      throw new IllegalArgumentException("need 1 <= degree <= build_degree: degree=" + degree + ", build_degree=" + buildDegree);
    }
    int[] knn = finder.knn(vectors, buildDegree, metric);
    int[] adjacency = GraphPruner.addReverseLinks(GraphPruner.prune(knn, n, buildDegree, degree), n, degree);
    return new GraphLayout(degree, buildDegree, searchWidth, SEED, adjacency, seeds(n));
  }

  /** {@link #seedCount} distinct ordinals drawn uniformly with {@link #SEED}, ascending. */
  static int[] seeds(int n) {
    return KMeans.sample(n, seedCount(n), new Random(SEED));
  }
}
