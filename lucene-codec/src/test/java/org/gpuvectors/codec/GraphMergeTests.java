package org.gpuvectors.codec;

import static org.gpuvectors.codec.GpuVectorsFormatTests.oracleTopK;
import static org.gpuvectors.codec.IvfTestSupport.FIELD;
import static org.gpuvectors.codec.IvfTestSupport.config;
import static org.gpuvectors.codec.IvfTestSupport.ids;
import static org.gpuvectors.codec.IvfTestSupport.overlap;
import static org.gpuvectors.codec.IvfTestSupport.search;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntPredicate;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.gpuvectors.codec.gpu.FakeBackend;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.graph.GraphField;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A merge's graph from the merged segments' graphs ({@code GraphMerge}): on the CPU it starts from them, with
 * documents without vectors, deletions and index sorting renumbering the ordinals; its recall against brute force;
 * it is deterministic; a lone segment's merge after deletions starts from its graph; with a device serving, the merge
 * rebuilds there; and merges whose inputs are mostly flat rebuild.
 */
class GraphMergeTests {

  private static final int DIMS = 32;
  private static final int DEGREE = 16;

  @TempDir Path tempDir;
  private final IvfTestSupport data = new IvfTestSupport(DIMS, 13, 0.6f);

  @AfterEach
  void closeDefaultService() {
    GpuSearchServices.closeDefault();
  }

  private FieldType graphType(VectorSimilarityFunction sim) {
    return data.fieldType(IndexType.GRAPH, sim, Map.of(IndexParams.DEGREE, DEGREE));
  }

  /**
   * Indexes {@code vectors} (null: a document without one) in segments of {@code segmentDocs} documents, deletes every
   * id that {@code deleted} accepts, force-merges into one segment.
   */
  private static void indexAndMerge(Directory dir, IndexWriterConfig config, List<float[]> vectors, FieldType type,
                                    IntPredicate deleted) throws IOException {
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (int id = 0; id < vectors.size(); id++) {
        writer.addDocument(IvfTestSupport.doc(id, vectors.get(id), type));
      }
      writer.commit();
      for (int id = 0; id < vectors.size(); id++) {
        if (deleted.test(id)) {
          writer.deleteDocuments(new Term("sid", Integer.toString(id)));
        }
      }
      writer.forceMerge(1);
      writer.commit();
    }
  }

  private static GraphField graph(DirectoryReader reader) {
    assertEquals(1, reader.leaves().size());
    return IvfTestSupport.reader(reader.leaves().get(0).reader()).graphField(FIELD);
  }

  /** Mean recall@10 (10 candidates) over {@code queries} against the oracle of the accepted ids. */
  private static double recall(DirectoryReader reader, List<float[]> vectors, List<float[]> queries,
                               VectorSimilarityFunction sim, IntPredicate accepted) throws IOException {
    IndexSearcher searcher = new IndexSearcher(reader);
    double sum = 0;
    for (float[] query : queries) {
      Set<Integer> truth = ids(oracleTopK(vectors, query, sim, 10, accepted));
      List<GpuVectorsFormatTests.Hit> hits = search(searcher, query, 10, null);
      for (GpuVectorsFormatTests.Hit hit : hits) {
        assertTrue(accepted.test(hit.id()), "only live documents with a vector are returned: " + hit.id());
      }
      sum += overlap(truth, hits) / (double) truth.size();
    }
    return sum / queries.size();
  }

  /** Graph invariants: in-range ordinals, no self loops or duplicates in a row, entry points distinct and in range. */
  private static void assertGraph(GraphField graph, int size) throws IOException {
    assertEquals(size, graph.size());
    int[] adjacency = graph.toAdjacency();
    for (int i = 0; i < size; i++) {
      Set<Integer> row = new HashSet<>();
      for (int p = 0; p < DEGREE; p++) {
        int j = adjacency[i * DEGREE + p];
        assertTrue(j >= 0 && j < size && j != i, "row " + i + " holds " + j);
        assertTrue(row.add(j), "row " + i + " holds " + j + " twice");
      }
    }
    Set<Integer> seeds = new HashSet<>();
    for (int s : graph.seeds()) {
      assertTrue(s >= 0 && s < size && seeds.add(s), "entry point " + s);
    }
  }

  /**
   * Three segments; every ninth document has no vector (ordinals differ from doc ids), every fourth is deleted before
   * the merge; with and without an index sort that renumbers the merged documents. On the CPU the merge starts from
   * the three graphs (counted); the merged graph holds the live vectors, keeps its invariants, and finds the true
   * neighbours (brute force; a wrong ordinal mapping would collapse its recall); a second merge of the same segments
   * gives the same graph.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aMergeOnTheCpuStartsFromTheSegmentsGraphs(boolean sorted) throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(4500, sim);
    for (int id = 0; id < vectors.size(); id += 9) {
      vectors.set(id, null);
    }
    IntPredicate deleted = id -> id % 4 == 1;
    IntPredicate accepted = id -> vectors.get(id) != null && deleted.test(id) == false;
    int live = (int) java.util.stream.IntStream.range(0, vectors.size()).filter(accepted).count();
    FieldType type = graphType(sim);
    GpuSearchService service = GpuSearchServices.current();
    service.setEnabled(false); // the CPU path, also on the GPU machine
    List<float[]> queries = data.points(40, sim);
    int[][] adjacency = new int[2][];
    double[] recall = new double[2];
    for (int arm = 0; arm < 2; arm++) { // the same merge twice
      long merged = service.stats().cpuMergedKnnGraphVectors();
      IndexWriterConfig config = config(0, 1500);
      if (sorted) {
        config.setIndexSort(new Sort(new SortField("sortkey", SortField.Type.LONG, true)));
      }
      try (Directory dir = FSDirectory.open(tempDir.resolve("arm" + arm))) {
        indexAndMerge(dir, config, vectors, type, deleted);
        assertEquals(merged + live, service.stats().cpuMergedKnnGraphVectors(),
            "the merge started from the segments' graphs");
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          GraphField graph = graph(reader);
          assertGraph(graph, live);
          adjacency[arm] = graph.toAdjacency();
          recall[arm] = recall(reader, vectors, queries, sim, accepted);
        }
      }
    }
    System.out.printf("[graph merge] %s: recall@10 from graphs %.4f%n", sorted ? "sorted" : "unsorted", recall[0]);
    assertArrayEquals(adjacency[0], adjacency[1], "the same segments merge into the same graph");
    assertTrue(recall[0] >= 0.95, "recall@10 of the graph merged from graphs: " + recall[0]);
  }

  /** Every similarity: the walks of the other segments' graphs rank by the field's own scores. */
  @ParameterizedTest
  @org.junit.jupiter.params.provider.EnumSource(VectorSimilarityFunction.class)
  void everySimilarityMergesFromGraphs(VectorSimilarityFunction sim) throws IOException {
    List<float[]> vectors = data.points(3000, sim);
    GpuSearchService service = GpuSearchServices.current();
    service.setEnabled(false);
    try (Directory dir = FSDirectory.open(tempDir)) {
      indexAndMerge(dir, config(0, 1000), vectors, graphType(sim), id -> false);
      assertEquals(vectors.size(), service.stats().cpuMergedKnnGraphVectors());
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertGraph(graph(reader), vectors.size());
        double recall = recall(reader, vectors, data.points(30, sim), sim, id -> true);
        System.out.printf("[graph merge] %s: recall@10 %.4f%n", sim, recall);
        assertTrue(recall >= 0.95, sim + ": recall@10 " + recall);
      }
    }
  }

  /**
   * Segments that stayed flat (below the build threshold) have no graph: when the graphs hold less than half of the
   * merged vectors the merge rebuilds; when they hold most, it starts from them and links the flat segments' vectors
   * in.
   */
  @Test
  void mostlyFlatInputsRebuildAndMostlyGraphInputsStartFromTheGraphs() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    GpuSearchService service = GpuSearchServices.current();
    service.setEnabled(false);
    // one graph segment of 1,000 vectors and two flat ones of 600 (threshold 800): graphs hold 1,000 of 2,200
    List<float[]> vectors = data.points(2200, sim);
    assertEquals(0, mergeSegmentsOf(vectors, new int[] {1000, 600, 600}, sim, "mostly-flat"));
    // one flat segment of 600 and two graph segments of 1,000: graphs hold 2,000 of 2,600
    vectors = data.points(2600, sim);
    assertEquals(vectors.size(), mergeSegmentsOf(vectors, new int[] {1000, 600, 1000}, sim, "mostly-graph"));
  }

  /** Indexes segments of the given sizes (threshold 800), force-merges; the vectors counted as merged from graphs. */
  private long mergeSegmentsOf(List<float[]> vectors, int[] sizes, VectorSimilarityFunction sim, String name)
      throws IOException {
    GpuSearchService service = GpuSearchServices.current();
    long before = service.stats().cpuMergedKnnGraphVectors();
    FieldType type = graphType(sim);
    try (Directory dir = FSDirectory.open(tempDir.resolve(name))) {
      try (IndexWriter writer = new IndexWriter(dir, config(800, 100_000))) {
        int id = 0;
        for (int size : sizes) {
          for (int i = 0; i < size; i++, id++) {
            writer.addDocument(IvfTestSupport.doc(id, vectors.get(id), type));
          }
          writer.flush();
        }
        writer.commit();
        try (DirectoryReader reader = DirectoryReader.open(writer)) {
          assertEquals(sizes.length, reader.leaves().size());
        }
        writer.forceMerge(1);
        writer.commit();
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertGraph(graph(reader), vectors.size());
        double recall = recall(reader, vectors, data.points(30, sim), sim, id -> true);
        assertTrue(recall >= 0.95, name + ": recall@10 " + recall);
      }
    }
    return service.stats().cpuMergedKnnGraphVectors() - before;
  }

  /**
   * One segment with a third of its documents deleted: the merge that drops them starts from the segment's own graph
   * (its rows without the deleted vectors, refined), not from scratch.
   */
  @Test
  void aMergeOfOneSegmentWithDeletionsStartsFromItsGraph() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(3000, sim);
    GpuSearchService service = GpuSearchServices.current();
    service.setEnabled(false);
    IntPredicate deleted = id -> id % 3 == 0;
    try (Directory dir = FSDirectory.open(tempDir)) {
      indexAndMerge(dir, config(0, 10_000), vectors, graphType(sim), deleted);
      assertEquals(2000, service.stats().cpuMergedKnnGraphVectors(), "the merge started from the segment's graph");
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertGraph(graph(reader), 2000);
        double recall = recall(reader, vectors, data.points(30, sim), sim, deleted.negate());
        assertTrue(recall >= 0.95, "recall@10 after the merge: " + recall);
      }
    }
  }

  /** With a device serving, a merge's k-NN graph is rebuilt there (its brute force beats the CPU's walks). */
  @Test
  void withADeviceTheMergeRebuildsThere() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(3000, sim);
    FakeBackend device = new FakeBackend(1L << 30);
    GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.defaults());
    GpuSearchServices.install(service);
    try (Directory dir = FSDirectory.open(tempDir)) {
      indexAndMerge(dir, config(0, 1000), vectors, graphType(sim), id -> false);
      assertEquals(0, service.stats().cpuMergedKnnGraphVectors(), "not merged from graphs on the CPU");
      assertEquals(0, service.stats().cpuKnnGraphVectors());
      assertEquals(2 * vectors.size(), service.stats().gpuKnnGraphVectors(), "three flushes and the merge");
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertGraph(graph(reader), vectors.size());
      }
    } finally {
      GpuSearchServices.uninstall(service);
      service.close();
    }
  }
}
