package org.gpuvectors.codec.graph;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.stream.IntStream;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.cuda.Metric;

/** The exact k-NN graph by brute force ({@code n^2} distances), rows computed in parallel. */
final class ExactKnn {

  /** Rows per parallel task (each task reads through its own vector copies). */
  private static final int BLOCK = 256;

  private ExactKnn() {}

  /** See {@link KnnFinder#knn}. */
  static int[] knn(FloatVectorValues vectors, int k, Metric metric) throws IOException {
    int n = vectors.size();
    int[] out = new int[n * k];
    float[] norms = VectorDistances.norms(vectors, metric);
    int blocks = (n + BLOCK - 1) / BLOCK;
    try {
      IntStream.range(0, blocks).parallel().forEach(b -> {
        try {
          VectorDistances distances = VectorDistances.of(vectors, metric, norms);
          NeighborList list = new NeighborList(k);
          for (int i = b * BLOCK, end = Math.min(n, i + BLOCK); i < end; i++) {
            row(distances, n, i, list);
            list.copyIds(out, i * k, k);
          }
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    return out;
  }

  /** Fills {@code list} (emptied first) with the nearest of every other vector to vector {@code i}. */
  private static void row(VectorDistances distances, int n, int i, NeighborList list) throws IOException {
    list.clear();
    float[] x = distances.vector(i);
    for (int j = 0; j < n; j++) {
      if (j != i) {
        float d = distances.distanceTo(x, i, j);
        if (list.accepts(d, j)) {
          list.insert(d, j);
        }
      }
    }
  }
}
