package org.gpuvectors.codec.gpu;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.Random;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.ivf.Assigner;
import org.gpuvectors.codec.ivf.IvfBuilder;
import org.gpuvectors.codec.ivf.IvfLayout;
import org.gpuvectors.codec.ivf.KMeans;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.ivf.IvfLists;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.select.KSelect;

/**
 * An approximate k-NN graph on the device through IVF, for graphs too large for exact brute force
 * (see {@link GpuKnnGraph}): how Faiss (section 6.5 of its paper) and CAGRA build k-NN graphs at scale.
 *
 * <ol>
 *   <li>lists: k-means over a sample with {@code round(sqrt(n))} lists and the assignment of every
 *       vector ({@link IvfBuilder}, on the device through {@code assigner}), uploaded as an IVF-Flat
 *       index ({@link GpuBackend#upload} with a {@link GpuIvf}) for the length of the build;
 *   <li>calibration: the exact neighbours of a sample of {@link #CALIBRATION_QUERIES} vectors (brute
 *       force, {@link GpuKnnGraph#exact}), then the sample searched with growing nprobe until it finds
 *       {@link #TARGET_RECALL} of their exact edges. The margin over 0.95 covers the sample's error
 *       (500 rows of k >= 10 edges: a standard error below 0.004);
 *   <li>search: every vector as a query, {@link #QUERY_BLOCK} at a time, with k + 1 (its own match
 *       left out); a row the probed lists cannot fill (lists shorter than k + 1 in all) is computed
 *       exactly.
 * </ol>
 * Deterministic for a given device: the sample and k-means take the fixed {@link IvfBuilder#SEED}.
 * The index's device memory is not counted by the residency budget (as {@link GpuBackend#nearestK}'s
 * chunks are not): it lives for one build, like the brute force's base chunk.
 */
final class IvfKnnGraph {

  /** Vectors of the calibration sample. */
  static final int CALIBRATION_QUERIES = 500;
  /** Share of the sample's exact edges the chosen nprobe must find. */
  static final double TARGET_RECALL = 0.96;
  /** Queries per device pass of the search (as {@code nearestK}'s blocks). */
  static final int QUERY_BLOCK = 8192;
  /** k-means iterations of the lists (a k-NN graph needs good-enough lists, not the index's best). */
  static final int ITERATIONS = 10;

  private IvfKnnGraph() {}

  /** The graph ({@link org.gpuvectors.codec.graph.KnnFinder#knn}'s layout) and how it was found. */
  record Result(int[] ids, int nlist, int nprobe, double sampleRecall, int exactRows) {}

  static Result knn(GpuBackend backend, FloatVectorValues vectors, int k, Metric metric, Assigner assigner)
      throws IOException {
    int n = vectors.size();
    int dims = vectors.dimension();
    KnnGraphProgress progress = new KnnGraphProgress("IVF", n);
    int nlist = IvfBuilder.nlist(OptionalInt.empty(), n);
    progress.report("k-means of " + nlist + " lists", 0);
    IvfLayout layout = IvfBuilder.build(vectors, nlist, metric, ITERATIONS, IvfBuilder.SEED, assigner);
    IvfLists lists = lists(layout, dims);
    int ask = Math.min(k + 1, n); // + 1: each vector finds itself
    int maxProbes = Math.min(nlist, KSelect.MAX_K);
    try (DeviceIndex index = backend.upload(vectors, metric, new GpuIvf(nlist, () -> lists))) {
      // calibration: the smallest nprobe of the ladder that finds the target share of the sample's exact edges
      int[] sample = KMeans.sample(n, Math.min(n, CALIBRATION_QUERIES), new Random(IvfBuilder.SEED));
      int[] truth = GpuKnnGraph.exact(backend, vectors, sample, k, metric, progress);
      float[] sampleRows = GpuKnnGraph.rows(vectors, sample, 0, sample.length, metric);
      int nprobe = 0;
      double recall = 0;
      for (int probes = 1; nprobe == 0; probes = Math.min(maxProbes, probes + Math.max(1, probes / 2))) {
        progress.report("calibrating nprobe " + probes, 0);
        int[] found = new int[sample.length * k];
        search(backend, index, sampleRows, sample.length, ask, probes, sample, 0, k, metric, found);
        recall = recall(truth, found, sample.length, k);
        if (recall >= TARGET_RECALL || probes == maxProbes) {
          nprobe = probes;
        }
      }

      int[] ids = new int[n * k];
      for (int start = 0; start < n; start += QUERY_BLOCK) {
        int count = Math.min(QUERY_BLOCK, n - start);
        float[] queries = GpuKnnGraph.rows(vectors, start, count, metric);
        search(backend, index, queries, count, ask, nprobe, null, start, k, metric, ids);
        progress.report("search with nprobe " + nprobe, start + count);
      }
      int exactRows = fillShortRows(backend, vectors, k, metric, ids, progress);
      Result result = new Result(ids, nlist, nprobe, recall, exactRows);
      progress.finish(describe(result));
      System.getLogger(GpuKnnGraph.class.getName())
          .log(System.Logger.Level.INFO, "gpu-vectors: k-NN graph of {0} vectors (k = {1}) through IVF: {2}", n, k,
              describe(result));
      return result;
    }
  }

  static String describe(Result r) {
    return String.format(
        Locale.ROOT, "nlist %d, nprobe %d, sample recall %.4f, %d rows exact", r.nlist(), r.nprobe(), r.sampleRecall(),
        r.exactRows());
  }

  /**
   * Searches {@code count} query rows (ordinals {@code ords[i]}, or {@code first + i} when ords is
   * null) and writes each one's k nearest others to row {@code i} (ords) or {@code first + i} of
   * {@code out}: the device's order (nearest first), ties by the lower ordinal, -1 past the hits.
   */
  private static void search(
      GpuBackend backend, DeviceIndex index, float[] queries, int count, int ask, int nprobe, int[] ords, int first,
      int k, Metric metric, int[] out) {
    SearchResult result =
        backend.search(
            List.of(new SearchGroup(index, queries, count, ask, new SearchParams.Ivf(nprobe), null, null)),
            new long[2])[0];
    boolean largestFirst = metric != Metric.L2;
    int[] rowIds = new int[k];
    float[] rowDistances = new float[k];
    for (int q = 0; q < count; q++) {
      int self = ords == null ? first + q : ords[q];
      int taken = 0;
      for (int i = 0; i < result.count(q) && taken < k; i++) {
        int id = result.id(q, i);
        if (id >= 0 && id != self) {
          // insertion by (distance, ordinal): the device orders equal distances arbitrarily
          float d = largestFirst ? -result.distance(q, i) : result.distance(q, i);
          int at = taken++;
          while (at > 0 && (rowDistances[at - 1] > d || (rowDistances[at - 1] == d && rowIds[at - 1] > id))) {
            rowIds[at] = rowIds[at - 1];
            rowDistances[at] = rowDistances[at - 1];
            at--;
          }
          rowIds[at] = id;
          rowDistances[at] = d;
        }
      }
      int row = (ords == null ? first + q : q) * k;
      System.arraycopy(rowIds, 0, out, row, taken);
      Arrays.fill(out, row + taken, row + k, -1);
    }
  }

  /** Share of the exact rows' edges (ignoring -1) that {@code found} has. */
  static double recall(int[] exact, int[] found, int rows, int k) {
    long edges = 0;
    long hits = 0;
    for (int r = 0; r < rows; r++) {
      for (int i = 0; i < k; i++) {
        int id = exact[r * k + i];
        if (id < 0) {
          continue;
        }
        edges++;
        for (int j = 0; j < k; j++) {
          if (found[r * k + j] == id) {
            hits++;
            break;
          }
        }
      }
    }
    return edges == 0 ? 1 : hits / (double) edges;
  }

  /** Rows the probed lists left short of k (n > k): computed exactly. Returns how many. */
  static int fillShortRows(
      GpuBackend backend, FloatVectorValues vectors, int k, Metric metric, int[] ids, KnnGraphProgress progress)
      throws IOException {
    int n = vectors.size();
    if (n <= k) {
      return 0; // every row ends in -1 anyway
    }
    List<Integer> shortRows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      if (ids[i * k + k - 1] < 0) {
        shortRows.add(i);
      }
    }
    if (shortRows.isEmpty()) {
      return 0;
    }
    int[] rows = shortRows.stream().mapToInt(Integer::intValue).toArray();
    int[] exact = GpuKnnGraph.exact(backend, vectors, rows, k, metric, progress);
    for (int r = 0; r < rows.length; r++) {
      System.arraycopy(exact, r * k, ids, rows[r] * k, k);
    }
    return rows.length;
  }

  /** The layout's lists as the device takes them. */
  private static IvfLists lists(IvfLayout layout, int dims) {
    int nlist = layout.nlist();
    float[] packed = new float[nlist * dims];
    for (int l = 0; l < nlist; l++) {
      System.arraycopy(layout.centroids()[l], 0, packed, l * dims, dims);
    }
    return new IvfLists(nlist, packed, layout.offsets(), layout.ords());
  }
}
