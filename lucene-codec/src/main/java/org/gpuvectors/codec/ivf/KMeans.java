package org.gpuvectors.codec.ivf;

import org.gpuvectors.codec.index.VectorRows;
import java.io.IOException;
import java.util.Arrays;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;
import org.gpuvectors.codec.index.Metric;

/**
 * Lloyd's k-means for the coarse quantizer of the IVF index types and, a group per sub-space, the codebooks of a
 * product quantizer.
 *
 * <p>Deterministic for a given seed and input: the initial centroids are distinct training points
 * drawn with {@link Random}, each iteration assigns every point to its nearest centroid and moves
 * each centroid to the mean of its points, both in one {@link Assigner.Held#update} (on the GPU when
 * there is one: the points held there for the whole training, the means exact fixed-point sums). For {@link Metric#COSINE} the points must be normalised
 * and the centroids are normalised after each update (spherical k-means), so that ranking lists by
 * inner product ranks them by cosine. A centroid left without points takes half of the largest
 * cluster (its centroid, nudged apart in opposite directions), as Faiss does, so no list stays empty
 * while others are crowded.
 */
public final class KMeans {

  /** Lloyd iterations when the caller does not say (Faiss trains IVF quantizers with 10-25). */
  public static final int DEFAULT_ITERATIONS = 15;

  /** Relative nudge that separates a split centroid from the one it was copied from. */
  private static final float SPLIT_EPSILON = 1f / 1024;

  private KMeans() {}

  /**
   * Trains {@code k} centroids on {@code points} (all rows of the same dimension).
   *
   * @return {@code k} centroids (rows); fewer points than {@code k} is an error
   */
  public static float[][] train(
      float[][] points, int k, Metric metric, int iterations, long seed, Assigner assigner) throws IOException {
    return rows(train(points, 1, k, metric, iterations, seed, assigner), k);
  }

  /** {@code k} centroids of the flat layout ({@link #train(float[][], int, int, Metric, int, long, Assigner)}) as rows. */
  static float[][] rows(float[] flat, int k) {
    int dims = flat.length / k;
    float[][] rows = new float[k][];
    for (int c = 0; c < k; c++) {
      rows[c] = Arrays.copyOfRange(flat, c * dims, (c + 1) * dims);
    }
    return rows;
  }

  /**
   * Trains {@code groups} independent k-means side by side, one per sub-space: the points are cut into {@code groups}
   * sub-vectors of {@code dims / groups} floats and group {@code g} trains {@code k} centroids on its sub-vectors,
   * from initial centroids drawn with seed {@code seed + g} (the sub-quantizers of a product quantizer; {@code
   * groups = 1}: plain k-means). Every Lloyd iteration assigns all groups in one {@link Assigner} step on points that
   * it holds for the whole training (on the GPU: uploaded once).
   *
   * @return the centroids, group by group: centroid {@code c} of group {@code g} at {@code [(g * k + c) * subDims,
   *     + subDims)}
   */
  public static float[] train(
      float[][] points, int groups, int k, Metric metric, int iterations, long seed, Assigner assigner)
      throws IOException {
    int n = points.length;
    if (k < 1 || k > n) {
      throw new IllegalArgumentException("k-means needs 1 <= k <= points: k=" + k + ", points=" + n);
    }
    if (iterations < 0) {
      throw new IllegalArgumentException("iterations must be >= 0: " + iterations);
    }
    int dims = points[0].length;
    if (groups < 1 || dims % groups != 0) {
      throw new IllegalArgumentException("groups must divide the dimension " + dims + ": " + groups);
    }
    int subDims = dims / groups;
    float[] centroids = new float[groups * k * subDims];
    forEachGroup(groups, g -> { // each group its own seed and its own range of the centroids
      int[] chosen = sample(n, k, new Random(seed + g));
      for (int c = 0; c < k; c++) {
        System.arraycopy(points[chosen[c]], g * subDims, centroids, (g * k + c) * subDims, subDims);
      }
    });
    if (iterations == 0) {
      return centroids;
    }
    try (Assigner.Held held = assigner.hold(points, n, groups, metric)) {
      for (int it = 0; it < iterations; it++) {
        int[] counts = held.update(centroids, k);
        forEachGroup(groups, g -> splitIntoEmpty(centroids, counts, g * k, k, subDims));
        if (metric == Metric.COSINE && groups == 1) {
          for (int c = 0; c < k; c++) {
            VectorRows.normalize(centroids, c * dims, dims);
          }
        }
      }
    }
    return centroids;
  }

  /** Runs {@code task} for every group, side by side when there are several (groups touch only their own ranges). */
  private static void forEachGroup(int groups, java.util.function.IntConsumer task) {
    IntStream all = IntStream.range(0, groups);
    (groups > 1 ? all.parallel() : all).forEach(task);
  }

  /** Tasks of {@link #hostMeans} per core of the common pool (the row's floats cut into that many ranges at most). */
  private static final int UPDATE_TASKS_PER_CORE = 2;

  /**
   * The means of {@link Assigner.Held#update} on the host: the first {@code count} of {@code points}, each cut into {@code groups}
   * sub-vectors of {@code subDims} floats, averaged by {@code assignment} into {@code centroids} (only where a centroid
   * has sub-vectors); returns the counts. The sums run side by side over tasks that each own a range of the rows'
   * floats (so each sum belongs to one task and adds its points in order, in double: the result does not depend on
   * the threads) and read each row once, a contiguous range of it.
   */
  public static int[] hostMeans(float[][] points, int count, int[] assignment, int groups, int k, float[] centroids) {
    int n = count;
    int dims = points[0].length;
    int subDims = dims / groups;
    int[] counts = new int[groups * k];
    for (int i = 0; i < n; i++) {
      for (int g = 0; g < groups; g++) {
        counts[g * k + assignment[i * groups + g]]++;
      }
    }
    double[] sums = new double[groups * k * subDims];
    boolean parallel = (long) n * dims > 1 << 16;
    int tasks = parallel ? Math.min(dims, UPDATE_TASKS_PER_CORE * ForkJoinPool.getCommonPoolParallelism()) : 1;
    IntStream range = IntStream.range(0, tasks);
    (parallel ? range.parallel() : range).forEach(t -> {
      int from = (int) ((long) t * dims / tasks);
      int to = (int) ((long) (t + 1) * dims / tasks);
      for (int i = 0; i < n; i++) {
        float[] p = points[i];
        for (int f = from; f < to; ) {
          int g = f / subDims;
          int groupEnd = Math.min(to, (g + 1) * subDims);
          // sum of float f = g * subDims + d of this point's centroid c in group g: (g * k + c) * subDims + d
          int shift = (g * k + assignment[i * groups + g]) * subDims - g * subDims;
          for (; f < groupEnd; f++) {
            sums[shift + f] += p[f];
          }
        }
      }
    });
    for (int gc = 0; gc < groups * k; gc++) {
      if (counts[gc] > 0) {
        for (int d = 0, at = gc * subDims; d < subDims; d++, at++) {
          centroids[at] = (float) (sums[at] / counts[gc]);
        }
      }
    }
    return counts;
  }

  /**
   * Gives every empty cluster of one group (centroids {@code first .. first + k} of the flat layout) half of the
   * group's largest one (a copy of its centroid, nudged apart), empty clusters in order, the largest by count (ties:
   * the lower index). A heap keeps the largest at hand: a sub-space that is constant over the data (Fashion-MNIST's
   * blank borders) leaves k - 1 codewords empty on every iteration, and a scan per empty cluster was k<sup>2</sup>.
   */
  private static void splitIntoEmpty(float[] centroids, int[] counts, int first, int k, int subDims) {
    PriorityQueue<Integer> largest = null;
    for (int empty = first; empty < first + k; empty++) {
      if (counts[empty] > 0) {
        continue;
      }
      if (largest == null) {
        largest = new PriorityQueue<>(k, (a, b) -> counts[a] != counts[b] ? Integer.compare(counts[b], counts[a])
            : Integer.compare(a, b));
        for (int c = first; c < first + k; c++) {
          if (counts[c] > 0) {
            largest.add(c);
          }
        }
      }
      if (largest.isEmpty() || counts[largest.peek()] < 2) {
        return; // nothing left to split (fewer distinct points than centroids)
      }
      int from = largest.poll();
      for (int d = 0; d < subDims; d++) {
        int at = from * subDims + d;
        float delta = (d % 2 == 0 ? SPLIT_EPSILON : -SPLIT_EPSILON) * (Math.abs(centroids[at]) + SPLIT_EPSILON);
        centroids[empty * subDims + d] = centroids[at] + delta;
        centroids[at] -= delta;
      }
      counts[empty] = counts[from] / 2;
      counts[from] -= counts[empty];
      largest.add(from);
      largest.add(empty);
    }
  }

  /**
   * {@code count} distinct indexes of {@code [0, n)} drawn uniformly (a partial Fisher-Yates
   * shuffle), in ascending order so that reading them walks the vectors forward.
   */
  public static int[] sample(int n, int count, Random random) {
    if (count >= n) {
      int[] all = new int[n];
      Arrays.setAll(all, i -> i);
      return all;
    }
    int[] perm = new int[n];
    Arrays.setAll(perm, i -> i);
    for (int i = 0; i < count; i++) {
      int j = i + random.nextInt(n - i);
      int t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    int[] chosen = Arrays.copyOf(perm, count);
    Arrays.sort(chosen);
    return chosen;
  }
}
