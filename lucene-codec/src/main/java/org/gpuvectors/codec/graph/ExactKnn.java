package org.gpuvectors.codec.graph;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.stream.IntStream;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;

/**
 * The exact k-NN graph by brute force ({@code n^2} distances), blocks of rows computed in parallel.
 * Within a block, the other vectors are visited in tiles that stay in the CPU cache while every row
 * of the block is compared with them: a row at a time would stream all n vectors from memory per row
 * (on Fashion-MNIST, 20k x 784, memory bandwidth made that 5 times slower).
 */
final class ExactKnn {

  /** Rows per parallel task (each task reads through its own vector copies). */
  private static final int ROWS = 64;
  /** Floats of one tile of vectors compared with a block's rows (256 kB: an L2 cache's share). */
  private static final int TILE_FLOATS = 64 * 1024;

  private ExactKnn() {}

  /** See {@link KnnFinder#knn}. */
  static int[] knn(FloatVectorValues vectors, int k, Metric metric) throws IOException {
    int n = vectors.size();
    int[] out = new int[n * k];
    float[] norms = VectorDistances.norms(vectors, metric);
    int tile = Math.max(1, TILE_FLOATS / Math.max(1, vectors.dimension()));
    int blocks = (n + ROWS - 1) / ROWS;
    try {
      IntStream.range(0, blocks).parallel().forEach(b -> {
        try {
          block(VectorDistances.of(vectors, metric, norms), n, k, b * ROWS, Math.min(n, (b + 1) * ROWS), tile, out);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    return out;
  }

  /** Rows {@code [first, end)}: every other vector offered to each row's list, a tile at a time. */
  private static void block(VectorDistances distances, int n, int k, int first, int end, int tile, int[] out)
      throws IOException {
    NeighborList[] lists = new NeighborList[end - first];
    for (int r = 0; r < lists.length; r++) {
      lists[r] = new NeighborList(k);
    }
    for (int tileStart = 0; tileStart < n; tileStart += tile) {
      int tileEnd = Math.min(n, tileStart + tile);
      for (int i = first; i < end; i++) {
        NeighborList list = lists[i - first];
        float[] x = distances.vector(i);
        for (int j = tileStart; j < tileEnd; j++) {
          if (j != i) {
            float d = distances.distanceTo(x, i, j);
            if (list.accepts(d, j)) {
              list.insert(d, j);
            }
          }
        }
      }
    }
    for (int i = first; i < end; i++) {
      lists[i - first].copyIds(out, i * k, k);
    }
  }
}
