package org.gpuvectors.codec;

import java.io.IOException;
import java.util.Arrays;
import java.util.Locale;
import java.util.Random;
import java.util.stream.IntStream;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.ivf.Assigner;
import org.gpuvectors.codec.ivf.CoarseCoverage;
import org.gpuvectors.codec.ivf.KMeans;

/**
 * Whether the coarse quantizer's training sample limits recall: {@code N} embedding-like vectors ({@link
 * EmbeddingLikeData}, cosine) and {@code NLIST} lists, the coarse quantizer trained ({@link KMeans#train}, the CPU
 * {@link Assigner}, {@link KMeans#DEFAULT_ITERATIONS}) on samples of several sizes per list, and for each the
 * <b>coarse coverage</b>: over {@code QUERIES} queries (other draws of the same data), the share of each query's true
 * 10 nearest neighbours (brute force) whose list (nearest centroid, as the build assigns it) is among the query's
 * {@code nprobe} nearest centroids. Only the coarse step: whatever a list scan or a re-rank does afterwards, a
 * neighbour in a list that is not probed is lost. Not a test: a program whose table goes into the notes.
 *
 * <pre>
 * java ... org.gpuvectors.codec.CoarseCoverageBenchmark N DIMS QUERIES NLIST SEEDS PER_LIST...
 * </pre>
 *
 * Each sample size is trained with {@code SEEDS} seeds (sample and initial centroids; 42, 43, ...) and the coverage
 * averaged over them, so that a difference between sizes can be told from a difference between seeds (the spread
 * is printed).
 */
public final class CoarseCoverageBenchmark {

  private static final int K = 10;
  /** nprobe as shares of nlist (the task's 1% .. 5%, and 0.5%: a production setting was 32 of 10,000). */
  private static final double[] PROBE_SHARES = {0.005, 0.01, 0.02, 0.03, 0.05};

  private CoarseCoverageBenchmark() {}

  public static void main(String[] args) throws IOException {
    int n = Integer.parseInt(args[0]);
    int dims = Integer.parseInt(args[1]);
    int queryCount = Integer.parseInt(args[2]);
    int nlist = Integer.parseInt(args[3]);
    int seeds = Integer.parseInt(args[4]);
    int[] perList = Arrays.stream(args, 5, args.length).mapToInt(Integer::parseInt).toArray();
    long start = System.nanoTime();

    EmbeddingLikeData data = new EmbeddingLikeData(n, dims, 42);
    float[][] base = new float[n][];
    for (int i = 0; i < n; i++) {
      base[i] = data.next();
    }
    float[][] queries = new float[queryCount][];
    for (int q = 0; q < queryCount; q++) {
      queries[q] = data.next();
    }
    log(start, "data: %d x %d, %d queries, nlist %d (%d vectors a list)", n, dims, queryCount, nlist, n / nlist);

    int[][] truth = new int[queryCount][];
    IntStream.range(0, queryCount).parallel().forEach(q -> truth[q] = exactTop(base, queries[q]));
    log(start, "exact top %d of every query", K);

    int[] nprobes = Arrays.stream(PROBE_SHARES).mapToInt(s -> Math.max(1, (int) Math.round(s * nlist))).toArray();
    StringBuilder header = new StringBuilder(String.format(Locale.ROOT, "%8s %8s %8s", "per_list", "samples", "train_s"));
    for (int p = 0; p < nprobes.length; p++) {
      header.append(String.format(Locale.ROOT, " %14s", "np=" + nprobes[p] + " (" + PROBE_SHARES[p] * 100 + "%)"));
    }
    StringBuilder table = new StringBuilder(header).append('\n');
    for (int points : perList) {
      int samples = (int) Math.min(n, (long) points * nlist);
      double[][] coverage = new double[seeds][];
      double seconds = 0;
      for (int s = 0; s < seeds; s++) {
        long seed = 42 + s;
        int[] chosen = KMeans.sample(n, samples, new Random(seed));
        float[][] training = new float[samples][];
        for (int i = 0; i < samples; i++) {
          training[i] = base[chosen[i]];
        }
        long t = System.nanoTime();
        float[][] centroids = KMeans.train(training, nlist, Metric.COSINE, KMeans.DEFAULT_ITERATIONS, seed, Assigner.CPU);
        seconds += (System.nanoTime() - t) / 1e9;
        coverage[s] = coverage(base, queries, truth, centroids, nprobes);
        log(start, "%d a list, seed %d: %s", points, seed, Arrays.toString(coverage[s]));
      }
      StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "%8d %8d %8.1f", points, samples, seconds / seeds));
      for (int p = 0; p < nprobes.length; p++) {
        double sum = 0;
        double min = 1;
        double max = 0;
        for (double[] c : coverage) {
          sum += c[p];
          min = Math.min(min, c[p]);
          max = Math.max(max, c[p]);
        }
        row.append(String.format(Locale.ROOT, " %7.4f ±%5.4f", sum / seeds, (max - min) / 2));
      }
      table.append(row).append('\n');
    }
    log(start, "coarse coverage of the true top %d (mean over %d seeds, ± half the spread):%n%s", K, seeds, table);
  }

  /** The ordinals of the {@link #K} vectors of {@code base} nearest to {@code query} by inner product (cosine). */
  private static int[] exactTop(float[][] base, float[] query) {
    int[] top = new int[K];
    float[] scores = new float[K];
    Arrays.fill(scores, Float.NEGATIVE_INFINITY);
    for (int i = 0; i < base.length; i++) {
      float s = VectorUtil.dotProduct(query, base[i]);
      if (s > scores[K - 1]) {
        int at = K - 1;
        for (; at > 0 && scores[at - 1] < s; at--) {
          scores[at] = scores[at - 1];
          top[at] = top[at - 1];
        }
        scores[at] = s;
        top[at] = i;
      }
    }
    return top;
  }

  /**
   * For each {@code nprobes[p]}: the share of all (query, true neighbour) pairs where the neighbour's list is among
   * the query's {@code nprobes[p]} nearest centroids.
   */
  private static double[] coverage(float[][] base, float[][] queries, int[][] truth, float[][] centroids, int[] nprobes) {
    int[][] ranks = new int[queries.length][];
    IntStream.range(0, queries.length).parallel().forEach(q -> {
      float[] toQuery = scores(queries[q], centroids);
      int[] rank = new int[K];
      for (int j = 0; j < K; j++) {
        int list = argMax(scores(base[truth[q][j]], centroids));
        // rank of that list among the query's centroids: how many score higher (ties: the lower index first)
        int r = 0;
        for (int c = 0; c < centroids.length; c++) {
          if (toQuery[c] > toQuery[list] || (toQuery[c] == toQuery[list] && c < list)) {
            r++;
          }
        }
        rank[j] = r;
      }
      ranks[q] = rank;
    });
    int[] wanted = new int[queries.length];
    Arrays.fill(wanted, K);
    CoarseCoverage coverage = CoarseCoverage.ofListRanks(ranks, wanted);
    double[] share = new double[nprobes.length];
    for (int p = 0; p < nprobes.length; p++) {
      share[p] = coverage.at(nprobes[p]);
    }
    return share;
  }

  private static float[] scores(float[] v, float[][] centroids) {
    float[] s = new float[centroids.length];
    for (int c = 0; c < centroids.length; c++) {
      s[c] = VectorUtil.dotProduct(v, centroids[c]);
    }
    return s;
  }

  /** The index of the largest (ties: the lower index, as the build's assignment breaks them). */
  private static int argMax(float[] s) {
    int best = 0;
    for (int c = 1; c < s.length; c++) {
      if (s[c] > s[best]) {
        best = c;
      }
    }
    return best;
  }

  private static void log(long start, String format, Object... args) {
    System.out.printf(Locale.ROOT, "[%6.1fs] " + format + "%n", prepend((System.nanoTime() - start) / 1e9, args));
  }

  private static Object[] prepend(double first, Object[] rest) {
    Object[] all = new Object[rest.length + 1];
    all[0] = first;
    System.arraycopy(rest, 0, all, 1, rest.length);
    return all;
  }
}
