package org.gpuvectors.codec.graph;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.OptionalInt;
import java.util.Random;
import java.util.stream.IntStream;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.util.FixedBitSet;
import org.gpuvectors.codec.ivf.KMeans;
import org.gpuvectors.codec.index.Metric;

/**
 * Builds a segment field's {@code graph} index, the same way with or without a GPU: (1) the k-NN
 * graph with {@code build_degree} neighbours per vector ({@link KnnFinder}: the GPU's brute force, or
 * on the CPU brute force / NN-descent), (2) rank-based pruning to {@code degree} and (3) reverse links
 * ({@link GraphPruner}), (4) the entry points ({@link #seeds}): {@link #seedCount} vectors spread over
 * the data by farthest-first traversal, more where parts of the data are still far from all of them, plus one per
 * part of the graph they cannot reach. Step (2) runs where step (1) ran ({@link KnnFinder#prune}: the GPU's
 * {@code gv_graph_prune} gives the host's output), and so do step (3) ({@link KnnFinder#reverseLinks}: the GPU's
 * {@code gv_reverse_rows}, the host's output) and step (4)'s scale and traversal ({@link KnnFinder.Build}: the GPU's
 * {@code gv_neighbour_gaps} and {@code gv_farthest_step}, the same rule in the device's float rounding); the host's
 * steps run in parallel on the common fork-join pool, with the same result on any number of threads; {@link
 * GraphBuildPhases} times each step.
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
  /** Entry points at least / at most (about sqrt(n) in between) before the reachability top-up. */
  static final int MIN_SEEDS = 32;
  static final int MAX_SEEDS = 1024;
  /** Entry points at most after the reachability top-up (one per unreachable part of the graph). */
  static final int MAX_SEEDS_WITH_TOP_UP = 4096;
  /** Vectors the farthest-first traversal chooses the entry points from (a uniform sample). */
  static final int SEED_SAMPLE = 32_768;
  /** Sample vectors per parallel task of the farthest-first traversal (one task per slice and entry point). */
  static final int SEED_SLICE = 2048;
  /**
   * The traversal goes on past {@link #seedCount} while a sample vector lies farther than this many times its own
   * nearest-neighbour distance from every entry point ({@link #seeds}). Measured on the CPU: bench_es.py's data shape
   * (1,000 Gaussian clusters, 128 dimensions), segments of 45k and 80k vectors: 2 and 2.5 give every cluster an
   * entry point (1,000; recall of the segments' own top 10: 1.000), 3 leaves 79 and 33 clusters without one (0.990
   * for the 80k segment); Fashion-MNIST, 60k vectors: 870, 500 and 366 entry points at 2, 2.5 and 3 (245 = seedCount
   * before), each scored once per query. Uniform 20k x 128 keeps seedCount's 141 at 2.
   */
  static final float UNCOVERED_FACTOR = 2.5f;

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

  /** Entry points of a segment of {@code n} vectors: about sqrt(n), within [32, 1024], at most n. */
  public static int seedCount(int n) {
    return (int) Math.min(n, Math.max(MIN_SEEDS, Math.min(MAX_SEEDS, Math.round(Math.sqrt(n)))));
  }

  /** The most edges a build holds in one int array (its k-NN graph: n x build_degree ordinals). */
  static final long MAX_BUILD_EDGES = Integer.MAX_VALUE - 8;

  /**
   * Whether a graph of {@code n} vectors fits the build's arrays (n x {@code buildDegree} ordinals in one
   * int array): about 8.4 million vectors at build degree 256, 33 million at the default 64. Larger
   * segments stay flat (exact search).
   */
  public static boolean fits(int n, int buildDegree) {
    return (long) n * buildDegree <= MAX_BUILD_EDGES;
  }

  /**
   * The graph of {@code vectors} (ordinals = positions in {@code vectors}), at least one vector.
   *
   * @param metric how the build ranks vectors (cosine: by the cosine, whatever the vectors' lengths)
   */
  public static GraphLayout build(
      FloatVectorValues vectors, Metric metric, int degree, int buildDegree, int searchWidth, KnnFinder finder)
      throws IOException {
    return build(vectors, metric, degree, buildDegree, searchWidth, finder, new GraphBuildPhases());
  }

  /** {@link #build}, charging each phase's time to {@code phases}. */
  public static GraphLayout build(
      FloatVectorValues vectors, Metric metric, int degree, int buildDegree, int searchWidth, KnnFinder finder,
      GraphBuildPhases phases) throws IOException {
    return build(vectors, metric, degree, buildDegree, searchWidth, finder, null, phases);
  }

  /**
   * {@link #build} of a merge's graph: its k-NN step may start from the merged segments' graphs ({@code merge}, null:
   * none; {@link KnnFinder.Build#knn(int, GraphMerge)} says where it does).
   */
  public static GraphLayout build(
      FloatVectorValues vectors, Metric metric, int degree, int buildDegree, int searchWidth, KnnFinder finder,
      GraphMerge merge, GraphBuildPhases phases) throws IOException {
    int n = vectors.size();
    if (n < 1) {
      throw new IllegalArgumentException("a graph needs at least one vector");
    }
    if (degree < 1 || buildDegree < degree) {
      throw new IllegalArgumentException("need 1 <= degree <= build_degree: degree=" + degree + ", build_degree=" + buildDegree);
    }
    if (fits(n, buildDegree) == false) {
      throw new IllegalArgumentException("a graph of " + n + " vectors at build_degree " + buildDegree
          + " needs more than " + MAX_BUILD_EDGES + " edges in one array");
    }
    phases.restart();
    try (KnnFinder.Build steps = finder.hold(vectors, metric)) {
      int[] knn = steps.knn(buildDegree, merge);
      phases.end(GraphBuildPhases.Phase.KNN);
      int[] pruned = steps.prune(knn, n, buildDegree, degree);
      knn = null; // the largest array of the build: let it go before the next
      phases.end(GraphBuildPhases.Phase.PRUNE);
      int[] adjacency = steps.reverseLinks(pruned, n, degree);
      phases.end(GraphBuildPhases.Phase.REVERSE);
      return new GraphLayout(degree, buildDegree, searchWidth, SEED, adjacency,
          seeds(vectors, metric, adjacency, degree, phases, true, steps));
    }
  }

  /**
   * The entry points, ascending. A search starts from the best of them, so they must cover the data:
   * random ones miss whole clusters of clustered data, whose k-NN graph has no edges between clusters,
   * and queries there then find nothing. So: a farthest-first traversal (Gonzalez's k-center greedy, in
   * L2, or cosine for cosine fields) over a uniform sample of at most {@link #SEED_SAMPLE} vectors
   * picks {@link #seedCount} vectors, each the farthest from those before it (ties: the lower
   * ordinal), starting from the sample's first; then more (up to {@link #MAX_SEEDS} in all), each the sample vector
   * most uncovered, while one is: farther from every entry point than {@link #UNCOVERED_FACTOR} times its own
   * distance to its nearest neighbour (relative to the local density: an outlier far from everything is no gap in
   * the coverage); then every vector that no entry point reaches along the edges gets one (in ordinal order, up to {@link
   * #MAX_SEEDS_WITH_TOP_UP} entry points).
   *
   * <p>Why the traversal goes on: reachability is not enough. Clusters that hold fewer vectors than {@code
   * build_degree} (a small segment of many clusters: Elasticsearch's 1M x 128 benchmark, 1,000 clusters, left
   * segments of 60-110 vectors per cluster) must link to other clusters in the k-NN graph; such a one-way long edge
   * makes the cluster it points to reachable, so the top-up skips that cluster too, and with sqrt(n) entry points
   * many clusters have none: a query there starts in other clusters and must find the bridge, and rarely does. On
   * the CPU, that data's shape: a 60k-vector segment found 0.895 of its own top 10 at width 64 from 251 entry points,
   * an 80k one 0.70 from 684 (the 316 clusters without one: nothing), whatever k; 1.000 from 1,000 with this rule.
   */
  static int[] seeds(FloatVectorValues vectors, Metric metric, int[] adjacency, int degree, GraphBuildPhases phases)
      throws IOException {
    return seeds(vectors, metric, adjacency, degree, phases, true);
  }

  /** {@link #seeds} on the host, its scans on the common pool when {@code parallel} (else on this thread: tests). */
  static int[] seeds(
      FloatVectorValues vectors, Metric metric, int[] adjacency, int degree, GraphBuildPhases phases, boolean parallel)
      throws IOException {
    try (KnnFinder.Build host = KnnFinder.CPU.hold(vectors, metric)) {
      return seeds(vectors, metric, adjacency, degree, phases, parallel, host);
    }
  }

  /**
   * {@link #seeds} on the host with every distance of the traversal computed, none skipped by {@link #farthest}'s
   * pruning: the reference the pruned traversal must equal (tests).
   */
  static int[] unprunedSeeds(FloatVectorValues vectors, Metric metric, int[] adjacency, int degree)
      throws IOException {
    try (KnnFinder.Build host = KnnFinder.CPU.hold(vectors, metric)) {
      return seeds(vectors, metric, adjacency, degree, new GraphBuildPhases(), true, host, false);
    }
  }

  /**
   * {@link #seeds}, the scale and the traversal on the device of {@code steps} ({@link KnnFinder.Build#neighbourGaps},
   * {@link KnnFinder.Build#farthestFirst}) where it takes them, else here: their scans on the common pool when {@code
   * parallel} (else on this thread, for tests).
   */
  static int[] seeds(
      FloatVectorValues vectors, Metric metric, int[] adjacency, int degree, GraphBuildPhases phases, boolean parallel,
      KnnFinder.Build steps) throws IOException {
    return seeds(vectors, metric, adjacency, degree, phases, parallel, steps, true);
  }

  /** {@link #seeds}; the host's traversal skips the distances its pruning settles only when {@code prune}. */
  private static int[] seeds(
      FloatVectorValues vectors, Metric metric, int[] adjacency, int degree, GraphBuildPhases phases, boolean parallel,
      KnnFinder.Build steps, boolean prune) throws IOException {
    int n = vectors.size();
    Metric spread = metric == Metric.COSINE ? Metric.COSINE : Metric.L2;
    int[] sample = KMeans.sample(n, Math.min(n, SEED_SAMPLE), new Random(SEED));
    float[] gaps = steps.neighbourGaps(sample, adjacency, degree);
    VectorDistances[] readers = gaps == null ? readers(vectors, spread, sample.length, parallel) : null;
    float[] scale = floorScale(gaps != null ? gaps : nearestGaps(readers, spread, sample, adjacency, degree, parallel));
    int count = seedCount(n);
    int limit = Math.max(count, Math.min(sample.length, MAX_SEEDS));
    int[] seeds = new int[Math.min(n, MAX_SEEDS_WITH_TOP_UP)];
    int[] onDevice = steps.farthestFirst(sample, scale, count, limit, UNCOVERED);
    int chosen;
    if (onDevice != null) {
      chosen = onDevice.length;
      for (int t = 0; t < chosen; t++) {
        seeds[t] = sample[onDevice[t]];
      }
    } else {
      chosen = traverse(readers != null ? readers : readers(vectors, spread, sample.length, parallel), sample, spread,
          scale, count, limit, seeds, parallel, prune);
    }
    count = chosen;
    phases.end(GraphBuildPhases.Phase.SEEDS);
    // reachability: one more entry point per part of the graph the others do not reach
    FixedBitSet reached = new FixedBitSet(n);
    int[] queue = new int[n];
    for (int s = 0; s < count; s++) {
      reach(seeds[s], adjacency, degree, reached, queue);
    }
    for (int u = 0; u < n && count < seeds.length; u++) {
      if (reached.get(u) == false) {
        seeds[count++] = u;
        reach(u, adjacency, degree, reached, queue);
      }
    }
    int[] result = Arrays.copyOf(seeds, count);
    phases.end(GraphBuildPhases.Phase.REACH);
    Arrays.sort(result);
    for (int s = 1; s < result.length; s++) {
      if (result[s] == result[s - 1]) {
        throw new AssertionError("duplicate entry point " + result[s]); // the traversal never picks a seed twice
      }
    }
    return result;
  }

  /**
   * The host's readers for a sample of {@code samples} vectors: the sample in fixed slices ({@link #SEED_SLICE}; one
   * when not {@code parallel}), each scanned by one task with its own reader; the slices' farthest vectors are then
   * compared in slice order, so the choice is the serial scan's whatever the threads.
   */
  private static VectorDistances[] readers(FloatVectorValues vectors, Metric spread, int samples, boolean parallel)
      throws IOException {
    float[] norms = VectorDistances.norms(vectors, spread);
    VectorDistances[] readers = new VectorDistances[parallel ? (samples + SEED_SLICE - 1) / SEED_SLICE : 1];
    for (int c = 0; c < readers.length; c++) {
      readers[c] = VectorDistances.of(vectors, spread, norms);
    }
    return readers;
  }

  /**
   * The farthest-first traversal of {@link #seeds} on the host: fills {@code seeds} with the chosen vectors in order
   * and returns how many; each step's scan of the sample in {@code readers.length} slices, on the common pool when
   * {@code parallel}; skipping the distances the triangle inequality settles when {@code prune} ({@link #farthest}).
   */
  private static int traverse(
      VectorDistances[] readers, int[] sample, Metric spread, float[] scale, int count, int limit, int[] seeds,
      boolean parallel, boolean prune) throws IOException {
    int slices = readers.length;
    float[] nearestSeed = new float[sample.length];
    Arrays.fill(nearestSeed, Float.POSITIVE_INFINITY);
    int[] owner = new int[sample.length]; // the entry point (its index in seeds) that nearestSeed is the distance to
    int[] sliceFarthest = new int[slices];
    int chosen = 0;
    int next = 0;
    // seedCount entry points by distance, then more (up to MAX_SEEDS) while a sample vector is uncovered: farther
    // from every entry point than UNCOVERED_FACTOR times its nearest-neighbour distance (see the method's comment)
    float[] fromNew = new float[limit]; // metric distances from the newest entry point to the earlier ones
    while (next >= 0 && (chosen < count || (chosen < limit && key(nearestSeed, scale, next, spread) > UNCOVERED))) {
      int seed = sample[next];
      int seedIndex = chosen;
      seeds[chosen++] = seed;
      nearestSeed[next] = Float.NEGATIVE_INFINITY; // chosen: never again, even among duplicates
      float[] x = readers[0].vector(seed);
      for (int t = 0; t < seedIndex; t++) {
        fromNew[t] = metricDistance(readers[0].distanceTo(x, seed, seeds[t]), spread);
      }
      float[] by = chosen < count ? null : scale; // the next choice: past seedCount, the most uncovered
      IntStream scans = IntStream.range(0, slices);
      try {
        (parallel ? scans.parallel() : scans).forEach(c -> {
          int from = c * sample.length / slices;
          int to = (c + 1) * sample.length / slices;
          try {
            sliceFarthest[c] = farthest(readers[c], seed, seedIndex, sample, from, to, nearestSeed, owner, fromNew, by,
                spread, prune);
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        });
      } catch (UncheckedIOException e) {
        throw e.getCause();
      }
      int farthest = -1;
      for (int p : sliceFarthest) {
        if (p >= 0 && (farthest < 0 || key(nearestSeed, by, p, spread) > key(nearestSeed, by, farthest, spread))) {
          farthest = p;
        }
      }
      next = farthest;
    }
    return chosen;
  }

  /**
   * A distance as a gap that grows as the squared L2 distance: L2's own (squared), {@code 1 - cosine} for cosine
   * (half the squared distance of the normalised vectors), so that a factor on distances is its square on gaps.
   */
  private static float gap(float distance, Metric spread) {
    return spread == Metric.COSINE ? 1 + distance : distance;
  }

  /** The square of {@link #UNCOVERED_FACTOR}: the same bound on gaps ({@link #gap}). */
  private static final float UNCOVERED = UNCOVERED_FACTOR * UNCOVERED_FACTOR;

  /**
   * What the traversal maximises at sample position {@code p}: its distance to the nearest entry point, or with a
   * {@code scale} that gap ({@link #gap}) over the position's scale.
   */
  private static float key(float[] nearestSeed, float[] scale, int p, Metric spread) {
    return scale == null ? nearestSeed[p] : gap(nearestSeed[p], spread) / scale[p];
  }

  /**
   * Each sample vector's gap ({@link #gap}) to its nearest neighbour in the graph (the nearest of its row: pruning
   * keeps every vector's nearest neighbour); +infinity for a vector without edges (never uncovered). The scale is this
   * with {@link #floorScale}.
   */
  private static float[] nearestGaps(
      VectorDistances[] readers, Metric spread, int[] sample, int[] adjacency, int degree, boolean parallel)
      throws IOException {
    float[] scale = new float[sample.length];
    int slices = readers.length;
    IntStream scans = IntStream.range(0, slices);
    try {
      (parallel ? scans.parallel() : scans).forEach(c -> {
        try {
          for (int p = c * sample.length / slices, to = (c + 1) * sample.length / slices; p < to; p++) {
            int u = sample[p];
            float[] x = readers[c].vector(u);
            float best = Float.POSITIVE_INFINITY;
            for (int e = u * degree, end = e + degree; e < end && adjacency[e] >= 0; e++) {
              best = Math.min(best, gap(readers[c].distanceTo(x, u, adjacency[e]), spread));
            }
            scale[p] = best;
          }
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    return scale;
  }

  /**
   * The traversal's scale from each sample vector's nearest gap ({@link #nearestGaps}): at least a quarter of the
   * median gap (duplicates: 0, and an outlier among them would be the most uncovered of all); in place.
   */
  private static float[] floorScale(float[] scale) {
    float[] sorted = scale.clone();
    Arrays.sort(sorted);
    int finite = 0;
    while (finite < sorted.length && sorted[finite] != Float.POSITIVE_INFINITY) {
      finite++;
    }
    float floor = finite == 0 ? 0 : Math.max(Float.MIN_NORMAL, sorted[finite / 2] / 4);
    for (int p = 0; p < scale.length; p++) {
      scale[p] = Math.max(scale[p], floor);
    }
    return scale;
  }

  /**
   * The metric behind a traversal distance: the Euclidean distance (the square root of L2's squared one), or for
   * cosine the chord between the normalised vectors, sqrt(2 (1 - cosine)) (a zero vector, whose cosine is 0 to
   * everything, sits at sqrt(2) from every vector: still a metric). Both obey the triangle inequality, which
   * {@link #farthest} prunes with.
   */
  private static float metricDistance(float distance, Metric spread) {
    float g = spread == Metric.COSINE ? 2 * gap(distance, spread) : distance;
    return (float) Math.sqrt(Math.max(0f, g));
  }

  /**
   * A position whose nearest entry point t is at metric distance r is no nearer the new entry point s when
   * d(s, t) >= 2 r, since d(p, s) >= d(s, t) - r >= r (triangle inequality); with this factor's 0.1 % margin the
   * skipped distance is larger than r by far more than float rounding, so nearestSeed keeps exactly its value and
   * the traversal its choices.
   */
  private static final float PRUNE_FACTOR = 2 * 1.001f;

  /**
   * Lowers {@code nearestSeed} of the sample's positions {@code [from, to)} to their distance to the
   * new entry point {@code seed} (number {@code seedIndex}), skipping chosen ones; returns the position farthest
   * from every entry point (with a {@code scale}: the most uncovered, {@link #key}; ties: the lower position), -1
   * when all are chosen. Why the pruning: the traversal computed every sample vector's distance to every entry
   * point, up to 32,768 x 1,024 of them; a position whose nearest entry point ({@code owner}) lies at least twice
   * its distance from the new one ({@code fromNew}, by entry point) cannot come nearer (the bound of Elkan's
   * k-means), so its distance is not computed when {@code prune} (always in a build; on clustered data most
   * distances are skipped, with the same choices; tests compare it with the unpruned traversal, {@link
   * #unprunedSeeds}).
   */
  private static int farthest(
      VectorDistances distances, int seed, int seedIndex, int[] sample, int from, int to, float[] nearestSeed,
      int[] owner, float[] fromNew, float[] scale, Metric spread, boolean prune) throws IOException {
    float[] x = distances.vector(seed);
    int farthest = -1;
    for (int p = from; p < to; p++) {
      float r = nearestSeed[p];
      if (r == Float.NEGATIVE_INFINITY) {
        continue;
      }
      // r is +inf before the first entry point, NaN never skips: both fail the comparison
      if (!prune || !(fromNew[owner[p]] >= PRUNE_FACTOR * metricDistance(r, spread))) {
        float lowered = Math.min(r, distances.distanceTo(x, seed, sample[p]));
        if (Float.compare(lowered, r) != 0) {
          nearestSeed[p] = lowered;
          owner[p] = seedIndex;
        }
      }
      if (farthest < 0 || key(nearestSeed, scale, p, spread) > key(nearestSeed, scale, farthest, spread)) {
        farthest = p;
      }
    }
    return farthest;
  }

  /** Marks everything reachable from {@code start} (breadth first; {@code queue} is scratch space of n). */
  private static void reach(int start, int[] adjacency, int degree, FixedBitSet reached, int[] queue) {
    if (reached.getAndSet(start)) {
      return;
    }
    int head = 0;
    int tail = 0;
    queue[tail++] = start;
    while (head < tail) {
      int u = queue[head++];
      for (int p = u * degree, end = p + degree; p < end; p++) {
        int v = adjacency[p];
        if (v >= 0 && reached.getAndSet(v) == false) {
          queue[tail++] = v;
        }
      }
    }
  }
}
