package org.gpuvectors.codec;

import static org.gpuvectors.codec.GpuVectorsFormatTests.oracleTopK;
import static org.gpuvectors.codec.IvfTestSupport.config;
import static org.gpuvectors.codec.IvfTestSupport.ids;
import static org.gpuvectors.codec.IvfTestSupport.index;
import static org.gpuvectors.codec.IvfTestSupport.overlap;
import static org.gpuvectors.codec.IvfTestSupport.search;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Recall@10 of each approximate type at its default parameters and Elasticsearch's default num_candidates (100),
 * on embedding-like data ({@link EmbeddingLikeData}: overlapping clusters, a common mean direction, cosine) and on
 * clustered gaussians ({@link IvfTestSupport}), at 128
 * and 768 dimensions, in segments of 10,000-20,000 vectors: the floor users get without tuning, on data like theirs rather than on well-separated
 * clusters. Exact search by brute force is the truth; the installed service searches (the CPU in CI, the GPU on
 * the GPU machine: the same candidates, as the GPU tests hold).
 */
class DefaultRecallTests {
  private static final int K = 10;
  private static final int NUM_CANDIDATES = 100;
  private static final int QUERIES = 100;
  private static final double FLOOR = 0.97;

  @TempDir Path tempDir;

  @ParameterizedTest(name = "{0} at {1} dims, {3}")
  @CsvSource({"IVF_FLAT, 128, 20000, embedding", "IVF_PQ, 128, 20000, embedding", "GRAPH, 128, 20000, embedding",
      "IVF_FLAT, 768, 10000, embedding", "IVF_PQ, 768, 10000, embedding", "GRAPH, 768, 10000, embedding",
      "IVF_FLAT, 128, 20000, clustered", "IVF_PQ, 128, 20000, clustered", "GRAPH, 128, 20000, clustered"})
  void defaultsReachTheFloor(IndexType type, int dims, int n, String dataset) throws IOException {
    boolean embedding = dataset.equals("embedding");
    VectorSimilarityFunction sim = embedding ? VectorSimilarityFunction.COSINE : VectorSimilarityFunction.EUCLIDEAN;
    // a slice of a 500k-vector set (500 overlapping clusters), as one segment of a large index holds: harder for IVF
    // than a set of n vectors alone (n / 1,000 clusters)
    EmbeddingLikeData embeddings = new EmbeddingLikeData(500_000, dims, 38);
    IvfTestSupport support = new IvfTestSupport(dims, 7, 0.6f); // 40 clusters that touch at 0.6
    java.util.function.Supplier<float[]> data = embedding ? embeddings::next : () -> support.point(sim);
    List<float[]> vectors = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      vectors.add(data.get());
    }
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, n + 1), vectors, support.fieldType(type, sim, Map.of()));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        double recall = 0;
        for (int q = 0; q < QUERIES; q++) {
          float[] query = data.get();
          recall += overlap(ids(oracleTopK(vectors, query, sim, K, id -> true)),
              search(searcher, query, NUM_CANDIDATES, null).subList(0, K)) / (double) K;
        }
        recall /= QUERIES;
        System.out.printf(Locale.ROOT, "[defaults] %s %d x %d %s: recall@10 %.3f%n", type, n, dims, dataset, recall);
        assertTrue(recall >= FLOOR, type + " recall@10 at the defaults: " + recall);
      }
    }
  }
}
