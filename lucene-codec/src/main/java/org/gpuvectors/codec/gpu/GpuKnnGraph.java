package org.gpuvectors.codec.gpu;

import java.io.IOException;
import java.util.Arrays;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.ivf.KMeans;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchResult;

/**
 * A graph build's k-NN graph on the device ({@link GpuBackend#nearestK}, exact brute force): the
 * vectors go up in chunks of at most {@link #CHUNK_FLOATS} floats as the base and, per base chunk, in
 * chunks as the queries; each vector's candidates from every base chunk are merged on the host into
 * its k nearest (itself left out), nearest first, ties by the lower ordinal, as {@link
 * org.gpuvectors.codec.graph.KnnFinder#knn} specifies.
 */
final class GpuKnnGraph {

  /** Floats of one chunk of vectors on the Java heap (128 MB), as the IVF build's training sample. */
  static final long CHUNK_FLOATS = 32L << 20;
  /** The chunk size in use (package-private so tests can force many chunks). */
  static volatile long chunkFloats = CHUNK_FLOATS;

  private GpuKnnGraph() {}

  static int[] knn(GpuBackend backend, FloatVectorValues vectors, int k, Metric metric) throws IOException {
    int n = vectors.size();
    int dims = vectors.dimension();
    // cosine: normalised rows ranked by the inner product, as the IVF assignment does
    Metric rank = metric == Metric.COSINE ? Metric.INNER_PRODUCT : metric;
    int chunkRows = (int) Math.max(1, Math.min(n, chunkFloats / dims));
    int[] bestIds = new int[n * k];
    float[] bestDistances = new float[n * k]; // smaller is nearer (minus the inner product)
    Arrays.fill(bestIds, -1);
    Arrays.fill(bestDistances, Float.POSITIVE_INFINITY);
    int[] mergedIds = new int[k];
    float[] mergedDistances = new float[k];
    for (int baseStart = 0; baseStart < n; baseStart += chunkRows) {
      int baseCount = Math.min(chunkRows, n - baseStart);
      float[] base = rows(vectors, baseStart, baseCount, metric);
      int ask = Math.min(k + 1, baseCount); // + 1: a vector of this chunk finds itself
      for (int queryStart = 0; queryStart < n; queryStart += chunkRows) {
        int queryCount = Math.min(chunkRows, n - queryStart);
        float[] queries = queryStart == baseStart ? base : rows(vectors, queryStart, queryCount, metric);
        SearchResult result = backend.nearestK(base, baseCount, queries, queryCount, dims, rank, ask);
        for (int q = 0; q < queryCount; q++) {
          int self = queryStart + q;
          merge(result, q, baseStart, self, rank, bestIds, bestDistances, self * k, k, mergedIds, mergedDistances);
        }
      }
    }
    return bestIds;
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

  /** Vectors {@code [first, first + count)} packed row-major (normalised for cosine). */
  private static float[] rows(FloatVectorValues vectors, int first, int count, Metric metric) throws IOException {
    int dims = vectors.dimension();
    float[] packed = new float[count * dims];
    float[] row = new float[dims];
    for (int i = 0; i < count; i++) {
      System.arraycopy(vectors.vectorValue(first + i), 0, row, 0, dims);
      if (metric == Metric.COSINE) {
        KMeans.normalize(row);
      }
      System.arraycopy(row, 0, packed, i * dims, dims);
    }
    return packed;
  }
}
