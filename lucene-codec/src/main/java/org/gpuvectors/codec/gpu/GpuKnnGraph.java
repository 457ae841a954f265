package org.gpuvectors.codec.gpu;

import java.io.IOException;
import java.util.Arrays;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.graph.GraphBuilder;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.index.VectorRows;
import org.gpuvectors.codec.ivf.Assigner;
import org.gpuvectors.cuda.SearchResult;

/**
 * A k-NN graph on the device, as {@link org.gpuvectors.codec.graph.KnnFinder#knn} specifies: each
 * vector's k nearest other vectors, nearest first, ties by the lower ordinal.
 *
 * <p>Two ways, chosen by size ({@link #EXACT_MAX_VECTORS}):
 * <ul>
 *   <li>exact brute force ({@link GpuBackend#nearestK}, {@link #exact}): the vectors go up in chunks
 *       of at most {@link #CHUNK_FLOATS} floats as the base and, per base chunk, in chunks as the
 *       queries; each vector's candidates from every base chunk are merged on the host. It costs n^2
 *       distances and, worse on the device, n^2 candidates through the k-selection: under a second for
 *       60k vectors, by n^2 minutes for 1M (an estimate);
 *   <li>approximate through IVF ({@link IvfKnnGraph}): every vector searched as a query in its
 *       nearest lists, with nprobe calibrated on a sample for the exact graph's edges (Faiss builds
 *       k-NN graphs at scale this way, section 6.5 of its paper; CAGRA's IVF-PQ build likewise).
 * </ul>
 */
final class GpuKnnGraph {

  /**
   * Floats of one chunk of vectors on the Java heap (512 MB): a k-NN graph whose vectors fit one chunk goes up once
   * and is its own queries on the device ({@link GpuBackend.HeldVectors#nearestKOwn}); a chunk smaller than a
   * mid-sized data set (Fashion-MNIST's 188 MB) made its build pay an upload and a search per chunk pair, most of the
   * graph build's time.
   */
  static final long CHUNK_FLOATS = 128L << 20;

  /**
   * Graphs of more vectors than this are built through IVF, smaller ones exactly. Why 100,000: exact brute force
   * grows with n^2 (the k-selection of n^2 candidates dominates, whatever the dimension: under a second at 60k
   * vectors, minutes at 1M), IVF with sqrt(n) lists grows with n^1.5 but pays a fixed price for k-means and the
   * calibration (about a second), which the brute force of a smaller graph does not reach.
   */
  static final int EXACT_MAX_VECTORS = 100_000;

  private GpuKnnGraph() {}

  /**
   * See {@link org.gpuvectors.codec.graph.KnnFinder#knn}: exact up to {@link #EXACT_MAX_VECTORS}, else
   * through IVF, whose k-means assigns with {@code assigner}.
   */
  static int[] knn(GpuBackend backend, FloatVectorValues vectors, int k, Metric metric, Assigner assigner)
      throws IOException {
    return knn(backend, vectors, k, metric, assigner, EXACT_MAX_VECTORS);
  }

  /** {@link #knn}, exact up to {@code exactMaxVectors} vectors (tests and benchmarks force either path). */
  static int[] knn(GpuBackend backend, FloatVectorValues vectors, int k, Metric metric, Assigner assigner,
                   int exactMaxVectors) throws IOException {
    if (vectors.size() <= exactMaxVectors) {
      KnnGraphProgress progress = new KnnGraphProgress("exact", vectors.size());
      int[] ids = exact(backend, vectors, null, k, metric, progress);
      progress.finish("exact brute force");
      return ids;
    }
    return IvfKnnGraph.knn(backend, vectors, k, metric, assigner).ids();
  }

  /**
   * Exact brute force: for each vector of {@code queries} (ordinals; null: every vector, the k-NN
   * graph) its {@code k} nearest other vectors, nearest first (ties: lower ordinal), rows ending in -1
   * when there are at most k vectors.
   */
  static int[] exact(
      GpuBackend backend, FloatVectorValues vectors, int[] queries, int k, Metric metric, KnnGraphProgress progress)
      throws IOException {
    return exact(backend, vectors, queries, k, metric, progress, CHUNK_FLOATS);
  }

  /** {@link #exact} in chunks of at most {@code chunkFloats} floats (tests force many chunks). */
  static int[] exact(
      GpuBackend backend, FloatVectorValues vectors, int[] queries, int k, Metric metric, KnnGraphProgress progress,
      long chunkFloats) throws IOException {
    int n = vectors.size();
    int dims = vectors.dimension();
    int m = queries == null ? n : queries.length;
    // cosine: normalised rows ranked by the inner product, as the IVF assignment does
    Metric rank = metric == Metric.COSINE ? Metric.INNER_PRODUCT : metric;
    int chunkRows = (int) Math.max(1, Math.min(n, chunkFloats / dims));
    if (queries == null && chunkRows == n) {
      try (GpuBackend.HeldVectors held = hold(backend, vectors, metric)) {
        int[] ids = own(held, n, k);
        progress.report("exact brute force", n);
        return ids;
      }
    }
    int[] bestIds = new int[m * k];
    float[] bestDistances = new float[m * k]; // smaller is nearer (minus the inner product)
    Arrays.fill(bestIds, -1);
    Arrays.fill(bestDistances, Float.POSITIVE_INFINITY);
    int[] mergedIds = new int[k];
    float[] mergedDistances = new float[k];
    long baseChunks = (n + chunkRows - 1) / chunkRows;
    long queryChunks = (m + chunkRows - 1) / chunkRows;
    long passes = 0;
    for (int baseStart = 0; baseStart < n; baseStart += chunkRows) {
      int baseCount = Math.min(chunkRows, n - baseStart);
      float[] base = rows(vectors, baseStart, baseCount, metric);
      int ask = Math.min(k + 1, baseCount); // + 1: a vector of this chunk finds itself
      for (int queryStart = 0; queryStart < m; queryStart += chunkRows) {
        int queryCount = Math.min(chunkRows, m - queryStart);
        float[] queryRows;
        if (queries != null) {
          queryRows = rows(vectors, queries, queryStart, queryCount, metric);
        } else {
          queryRows = queryStart == baseStart ? base : rows(vectors, queryStart, queryCount, metric);
        }
        SearchResult result = backend.nearestK(base, baseCount, queryRows, queryCount, dims, rank, ask);
        for (int q = 0; q < queryCount; q++) {
          int self = queries == null ? queryStart + q : queries[queryStart + q];
          int row = queryStart + q;
          merge(result, q, baseStart, self, rank, bestIds, bestDistances, row * k, k, mergedIds, mergedDistances);
        }
        passes++;
        progress.report("exact brute force", m * passes / (baseChunks * queryChunks));
      }
    }
    return bestIds;
  }

  /**
   * Whether a graph build holds all its vectors on the device ({@link #hold}) for its exact k-NN step: the vectors
   * the exact brute force takes, that fit one chunk, and whose own search's results ({@link #own}: k + 1 a vector, at
   * most {@link GraphBuilder#MAX_BUILD_DEGREE} + 1) fit one int array.
   */
  static boolean holdsWhole(int n, int dims) {
    return n <= EXACT_MAX_VECTORS && (long) n * dims <= CHUNK_FLOATS
        && (long) n * (GraphBuilder.MAX_BUILD_DEGREE + 1) <= Integer.MAX_VALUE - 8;
  }

  /**
   * The vectors copied side by side and uploaded once, as the k-NN step ranks them (cosine: normalised, by the inner
   * product), for {@link #own} and the entry points' steps.
   */
  static GpuBackend.HeldVectors hold(GpuBackend backend, FloatVectorValues vectors, Metric metric) throws IOException {
    int n = vectors.size();
    float[][] rows = VectorRows.copies(vectors, n, i -> i, metric);
    return backend.holdVectors(rows, n, vectors.dimension(), metric == Metric.COSINE ? Metric.INNER_PRODUCT : metric);
  }

  /**
   * The exact k-NN graph of the {@code n} held vectors: each searched for its k + 1 nearest (itself among them) on
   * the device, itself dropped here; rows end with -1 when there are at most k vectors.
   */
  static int[] own(GpuBackend.HeldVectors held, int n, int k) {
    int ask = Math.min(k + 1, n);
    int[] found = held.nearestKOwn(ask);
    int[] ids = new int[n * k];
    for (int i = 0; i < n; i++) {
      int out = i * k;
      for (int r = i * ask, end = r + ask; r < end && out < (i + 1) * k; r++) {
        if (found[r] != i && found[r] >= 0) {
          ids[out++] = found[r];
        }
      }
      Arrays.fill(ids, out, (i + 1) * k, -1);
    }
    return ids;
  }

  /**
   * Merges query q's device results (chunk-relative ids, best first) into the row at {@code offset}
   * (ascending by distance, ties by id), leaving out {@code self}.
   */
  private static void merge(
      SearchResult result, int q, int baseStart, int self, Metric rank, int[] ids, float[] distances, int offset, int k,
      int[] mergedIds, float[] mergedDistances) {
    int a = 0; // position in the row
    int b = 0; // position in the result
    int count = result.count(q);
    for (int out = 0; out < k; out++) {
      while (b < count && result.id(q, b) + baseStart == self) {
        b++;
      }
      boolean haveA = a < k && ids[offset + a] >= 0;
      boolean haveB = b < count;
      if (haveA == false && haveB == false) {
        mergedIds[out] = -1;
        mergedDistances[out] = Float.POSITIVE_INFINITY;
        continue;
      }
      float dB = haveB ? (rank == Metric.L2 ? result.distance(q, b) : -result.distance(q, b)) : 0;
      int idB = haveB ? result.id(q, b) + baseStart : -1;
      boolean takeA = haveA && (haveB == false || before(distances[offset + a], ids[offset + a], dB, idB));
      if (takeA) {
        mergedIds[out] = ids[offset + a];
        mergedDistances[out] = distances[offset + a];
        a++;
      } else {
        mergedIds[out] = idB;
        mergedDistances[out] = dB;
        b++;
      }
    }
    System.arraycopy(mergedIds, 0, ids, offset, k);
    System.arraycopy(mergedDistances, 0, distances, offset, k);
  }

  private static boolean before(float d1, int id1, float d2, int id2) {
    int c = Float.compare(d1, d2);
    return c < 0 || (c == 0 && id1 < id2);
  }

  /** Vectors {@code ords[from .. from + count)} packed row-major (normalised for cosine). */
  static float[] rows(FloatVectorValues vectors, int[] ords, int from, int count, Metric metric) throws IOException {
    int dims = vectors.dimension();
    float[] packed = new float[count * dims];
    float[] row = new float[dims];
    for (int i = 0; i < count; i++) {
      System.arraycopy(vectors.vectorValue(ords[from + i]), 0, row, 0, dims);
      if (metric == Metric.COSINE) {
        VectorRows.normalize(row);
      }
      System.arraycopy(row, 0, packed, i * dims, dims);
    }
    return packed;
  }

  /** Vectors {@code [first, first + count)} packed row-major (normalised for cosine). */
  static float[] rows(FloatVectorValues vectors, int first, int count, Metric metric) throws IOException {
    int dims = vectors.dimension();
    float[] packed = new float[count * dims];
    float[] row = new float[dims];
    for (int i = 0; i < count; i++) {
      System.arraycopy(vectors.vectorValue(first + i), 0, row, 0, dims);
      if (metric == Metric.COSINE) {
        VectorRows.normalize(row);
      }
      System.arraycopy(row, 0, packed, i * dims, dims);
    }
    return packed;
  }
}
