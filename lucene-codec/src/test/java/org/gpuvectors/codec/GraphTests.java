package org.gpuvectors.codec;

import static org.gpuvectors.codec.GpuVectorsFormatTests.Hit;
import static org.gpuvectors.codec.GpuVectorsFormatTests.oracleTopK;
import static org.gpuvectors.codec.IvfTestSupport.FIELD;
import static org.gpuvectors.codec.IvfTestSupport.config;
import static org.gpuvectors.codec.IvfTestSupport.ids;
import static org.gpuvectors.codec.IvfTestSupport.overlap;
import static org.gpuvectors.codec.IvfTestSupport.search;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntPredicate;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.CodecReader;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.SegmentReader;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.gpuvectors.codec.gpu.FakeBackend;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.graph.GraphBuilder;
import org.gpuvectors.codec.graph.GraphField;
import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.MemoryPart;
import org.gpuvectors.cuda.SearchParams;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code graph} fields through Lucene on the CPU (and with a {@link FakeBackend} for the build's k-NN
 * step): recall at the defaults against brute force (clustered data for every similarity, and
 * Fashion-MNIST), filters, the graph's invariants and determinism, index sorting, merges with
 * deletions, the size threshold, corruption, and the GPU k-NN step with its CPU fallback. Recall
 * floors sit below what was measured (printed by each test) with a margin.
 */
class GraphTests {

  private static final int DIMS = 32;

  @TempDir Path tempDir;
  private final IvfTestSupport data = new IvfTestSupport(DIMS, 13, 0.6f);

  @AfterEach
  void closeDefaultService() {
    GpuSearchServices.closeDefault();
  }

  private FieldType graphType(VectorSimilarityFunction sim, Map<String, Integer> params) {
    return data.fieldType(IndexType.GRAPH, sim, params);
  }

  private static GraphField graph(LeafReader leaf) {
    return IvfTestSupport.reader(leaf).graphField(FIELD);
  }

  /** A document with the id, the 1 %, 10 % and 50 % filter tags, a sort key, and the vector (when not null). */
  private static Document doc(int id, float[] vector, FieldType type) {
    Document doc = IvfTestSupport.doc(id, vector, type);
    doc.add(new StringField("f1", id % 100 == 0 ? "yes" : "no", Field.Store.NO));
    doc.add(new StringField("f10", id % 10 == 0 ? "yes" : "no", Field.Store.NO));
    doc.add(new StringField("f50", id % 2 == 0 ? "yes" : "no", Field.Store.NO));
    return doc;
  }

  private static void index(Directory dir, IndexWriterConfig config, List<float[]> vectors, FieldType type) throws IOException {
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (int id = 0; id < vectors.size(); id++) {
        writer.addDocument(doc(id, vectors.get(id), type));
      }
      writer.commit();
    }
  }

  /** Mean recall@10 of Lucene's kNN query at {@code k} (num_candidates) over {@code queries}, the top 10 of its hits. */
  private static double recall(
      IndexSearcher searcher, List<float[]> vectors, List<float[]> queries, VectorSimilarityFunction sim, int k,
      TermQuery filter, IntPredicate accepted) throws IOException {
    double sum = 0;
    for (float[] query : queries) {
      Set<Integer> truth = ids(oracleTopK(vectors, query, sim, 10, accepted));
      List<Hit> hits = search(searcher, query, k, filter);
      for (Hit hit : hits) {
        assertTrue(accepted.test(hit.id()), "only accepted documents are returned: " + hit.id());
      }
      sum += overlap(truth, hits.subList(0, Math.min(10, hits.size()))) / (double) truth.size();
    }
    return sum / queries.size();
  }

  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void recallAtTheDefaultsForEverySimilarity(VectorSimilarityFunction sim) throws IOException {
    List<float[]> vectors = data.points(6000, sim);
    List<float[]> queries = data.points(100, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 10_000), vectors, graphType(sim, Map.of()));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(1, reader.leaves().size());
        GraphField graph = graph(reader.leaves().get(0).reader());
        assertNotNull(graph, "graph built");
        assertEquals(GraphBuilder.DEFAULT_DEGREE, graph.degree());
        assertEquals(2 * GraphBuilder.DEFAULT_DEGREE, graph.buildDegree());
        assertEquals(GraphBuilder.DEFAULT_SEARCH_WIDTH, graph.searchWidth());
        IndexSearcher searcher = new IndexSearcher(reader);
        double atTen = recall(searcher, vectors, queries, sim, 10, null, id -> true);
        double atHundred = recall(searcher, vectors, queries, sim, 100, null, id -> true);
        System.out.printf("[graph] %s 6000 x %d clustered: recall@10 %.4f at num_candidates 10, %.4f at 100%n", sim, DIMS, atTen, atHundred);
        assertTrue(atTen >= 0.95, "recall@10 at the defaults: " + atTen);
        assertTrue(atHundred >= atTen && atHundred >= 0.98, "recall@10 at num_candidates 100: " + atHundred);
      }
    }
  }

  /**
   * The real Fashion-MNIST images (784 dimensions), from {@code $FMNIST_DIR} or Debian's
   * dataset-fashion-mnist. Without them the test is skipped, except where a GPU run forbids skips
   * (run-gpu.sh): there it says so and passes, the CPU machines having run it.
   */
  @Test
  void recallOnFashionMnist() throws IOException {
    String dirName = System.getenv().getOrDefault("FMNIST_DIR", "/usr/share/datasets/fashion-mnist");
    Path train = Path.of(dirName, "train-images-idx3-ubyte.gz");
    Path test = Path.of(dirName, "t10k-images-idx3-ubyte.gz");
    if ((Files.exists(train) && Files.exists(test)) == false && GpuTestSupport.gpuRequired()) {
      System.out.println("[graph] Fashion-MNIST not found in " + dirName + ": recall test not run here");
      return;
    }
    assumeTrue(Files.exists(train) && Files.exists(test), "Fashion-MNIST not installed");
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = Arrays.asList(Arrays.copyOf(FashionMnistBenchmark.readImages(train), 5000));
    List<float[]> queries = Arrays.asList(Arrays.copyOf(FashionMnistBenchmark.readImages(test), 100));
    FieldType type = GpuVectorsFormat.markField(
        KnnFloatVectorField.createFieldType(784, sim), new IndexParams(IndexType.GRAPH, Map.of()));
    try (Directory dir = FSDirectory.open(tempDir)) {
      long start = System.nanoTime();
      index(dir, config(0, 10_000), vectors, type);
      double buildSeconds = (System.nanoTime() - start) / 1e9;
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertNotNull(graph(reader.leaves().get(0).reader()), "graph built");
        IndexSearcher searcher = new IndexSearcher(reader);
        double atTen = recall(searcher, vectors, queries, sim, 10, null, id -> true);
        double atHundred = recall(searcher, vectors, queries, sim, 100, null, id -> true);
        System.out.printf("[graph] fashion-mnist 5000 x 784: build %.1f s, recall@10 %.4f at num_candidates 10, %.4f at 100%n",
            buildSeconds, atTen, atHundred);
        assertTrue(atTen >= 0.95, "recall@10 at the defaults: " + atTen);
        assertTrue(atHundred >= 0.99, "recall@10 at num_candidates 100: " + atHundred);
      }
    }
  }

  /** Filters that accept 1 %, 10 % and 50 % of the documents: only accepted documents, and most of the true top 10. */
  @Test
  void filteredSearchesKeepTheirRecall() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(8000, sim);
    List<float[]> queries = data.points(50, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 10_000), vectors, graphType(sim, Map.of()));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        int[] percents = {1, 10, 50};
        for (int percent : percents) {
          int modulus = 100 / percent;
          double recall = recall(searcher, vectors, queries, sim, 10, new TermQuery(new Term("f" + percent, "yes")),
              id -> id % modulus == 0);
          System.out.printf("[graph] filter %d%%: recall@10 %.4f%n", percent, recall);
          assertTrue(recall >= 0.9, "recall@10 with a " + percent + " % filter: " + recall);
        }
      }
    }
  }

  /**
   * The field's search itself under filters (no visit limit, so Lucene never switches to its exact
   * search): at this segment's size (8,000 vectors, search width 64) every one of 1 %, 10 % and 50 %
   * accepts no more vectors than a widened walk may score, so the search is exact over them (each
   * scored once; the walk itself under filters: BeamSearchTests). Only accepted vectors come back.
   */
  @Test
  void graphSearchUnderFiltersCollectsOnlyAcceptedVectors() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(8000, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 10_000), vectors, graphType(sim, Map.of()));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        LeafReader leaf = reader.leaves().get(0).reader();
        GpuVectorsReader ours = IvfTestSupport.reader(leaf);
        for (int percent : new int[] {1, 10, 50}) {
          int modulus = 100 / percent;
          org.apache.lucene.util.FixedBitSet accepted = new org.apache.lucene.util.FixedBitSet(leaf.maxDoc());
          for (int doc = 0; doc < leaf.maxDoc(); doc += modulus) {
            accepted.set(doc); // one segment, every document with a vector, no deletions: doc = id = ordinal
          }
          double recall = 0;
          int queries = 30;
          for (int q = 0; q < queries; q++) {
            float[] query = data.point(sim);
            var collector = new org.apache.lucene.search.TopKnnCollector(10, Integer.MAX_VALUE);
            ours.search(FIELD, query, collector, org.apache.lucene.search.AcceptDocs.fromIteratorSupplier(
                () -> new org.apache.lucene.util.BitSetIterator(accepted, accepted.cardinality()), null, leaf.maxDoc()));
            var hits = collector.topDocs().scoreDocs;
            assertTrue(graph(leaf).exact(10, accepted.cardinality()), percent + " %: the exact search");
            assertEquals(accepted.cardinality(), collector.visitedCount(), "every accepted vector scored once");
            Set<Integer> truth = ids(oracleTopK(vectors, query, sim, 10, id -> id % modulus == 0));
            int found = 0;
            for (var hit : hits) {
              assertTrue(accepted.get(hit.doc), "only accepted vectors: " + hit.doc);
              found += truth.contains(hit.doc) ? 1 : 0;
            }
            recall += found / 10.0;
          }
          recall /= queries;
          System.out.printf("[graph] graph search with a %d%% filter: recall@10 %.4f%n", percent, recall);
          assertTrue(recall >= 0.999, "recall@10 of the exact search with a " + percent + " % filter: " + recall);
        }
      }
    }
  }

  @Test
  void graphInvariantsHoldAndBuildsAreDeterministic() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.COSINE;
    List<float[]> vectors = data.points(3000, sim);
    int[][] adjacency = new int[2][];
    int[][] seeds = new int[2][];
    for (int run = 0; run < 2; run++) {
      try (Directory dir = FSDirectory.open(tempDir.resolve("run" + run))) {
        index(dir, config(0, 5000), vectors, graphType(sim, Map.of(IndexParams.DEGREE, 16)));
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          GraphField graph = graph(reader.leaves().get(0).reader());
          assertEquals(16, graph.degree());
          assertEquals(32, graph.buildDegree(), "build_degree defaults to twice the degree");
          adjacency[run] = graph.toAdjacency();
          seeds[run] = graph.seeds();
        }
      }
    }
    assertArrayEquals(adjacency[0], adjacency[1], "same input, same adjacency");
    assertArrayEquals(seeds[0], seeds[1], "same input, same entry points");
    double reciprocal = assertGraphInvariants(adjacency[0], seeds[0], 3000, 16);
    System.out.printf("[graph] 3000 x %d cosine, degree 16: %.3f of the edges have their reverse edge%n", DIMS, reciprocal);
    assertTrue(reciprocal >= 0.3, "reverse edges: " + reciprocal);
  }

  /**
   * Degree, no self loops, no duplicates, no padding (the segment is larger than the degree), seeds
   * distinct and in range; returns the fraction of edges i -> j whose reverse j -> i is in the graph.
   */
  static double assertGraphInvariants(int[] adjacency, int[] seeds, int n, int degree) {
    assertEquals((long) n * degree, adjacency.length);
    Set<Long> edges = new HashSet<>();
    for (int i = 0; i < n; i++) {
      Set<Integer> row = new HashSet<>();
      for (int p = 0; p < degree; p++) {
        int j = adjacency[i * degree + p];
        assertTrue(j >= 0 && j < n, "row " + i + ": neighbour " + j + " in range");
        assertTrue(j != i, "row " + i + ": no self loop");
        assertTrue(row.add(j), "row " + i + ": no duplicate " + j);
        edges.add((long) i * n + j);
      }
    }
    assertTrue(seeds.length >= GraphBuilder.seedCount(n), "entry points: " + seeds.length);
    for (int s = 0; s < seeds.length; s++) {
      assertTrue(seeds[s] >= 0 && seeds[s] < n && (s == 0 || seeds[s] > seeds[s - 1]), "seeds distinct, ascending, in range");
    }
    long reciprocal = 0;
    for (long e : edges) {
      long i = e / n;
      long j = e % n;
      reciprocal += edges.contains(j * n + i) ? 1 : 0;
    }
    return reciprocal / (double) edges.size();
  }

  /** The graph's edges as (id -> id) pairs of the stored ids, whatever the ordinals. */
  private static Set<List<Integer>> edgesById(LeafReader leaf) throws IOException {
    GraphField graph = graph(leaf);
    FloatVectorValues values = leaf.getFloatVectorValues(FIELD);
    var stored = leaf.storedFields();
    int[] idOfOrd = new int[values.size()];
    for (int ord = 0; ord < idOfOrd.length; ord++) {
      idOfOrd[ord] = stored.document(values.ordToDoc(ord)).getField("id").numericValue().intValue();
    }
    int[] adjacency = graph.toAdjacency();
    Set<List<Integer>> edges = new HashSet<>();
    for (int i = 0; i < adjacency.length; i++) {
      edges.add(List.of(idOfOrd[i / graph.degree()], idOfOrd[adjacency[i]]));
    }
    return edges;
  }

  /**
   * Under index sorting the flush builds on the buffered order and renames the ordinals: the graph
   * links the same documents as the graph of the same documents without sorting.
   */
  @Test
  void indexSortingRenumbersTheGraph() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(2500, sim);
    for (int i = 0; i < vectors.size(); i += 7) {
      vectors.set(i, null); // documents without a vector: ordinals differ from doc ids
    }
    FieldType type = graphType(sim, Map.of(IndexParams.DEGREE, 12));
    IndexWriterConfig sorted = config(0, 5000).setIndexSort(new Sort(new SortField("sortkey", SortField.Type.LONG, true)));
    try (Directory sortedDir = FSDirectory.open(tempDir.resolve("sorted"));
         Directory plainDir = FSDirectory.open(tempDir.resolve("plain"))) {
      index(sortedDir, sorted, vectors, type);
      index(plainDir, config(0, 5000), vectors, type);
      try (DirectoryReader sortedReader = DirectoryReader.open(sortedDir);
           DirectoryReader plainReader = DirectoryReader.open(plainDir)) {
        LeafReader leaf = sortedReader.leaves().get(0).reader();
        GraphField graph = graph(leaf);
        assertGraphInvariants(graph.toAdjacency(), graph.seeds(), graph.size(), 12);
        assertEquals(edgesById(plainReader.leaves().get(0).reader()), edgesById(leaf));
        IndexSearcher searcher = new IndexSearcher(sortedReader);
        double recall = recall(searcher, vectors, data.points(30, sim), sim, 10, null, id -> true);
        assertTrue(recall >= 0.95, "recall@10 of the sorted segment: " + recall);
      }
    }
  }

  @Test
  void mergesRebuildTheGraphWithoutDeletedDocuments() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT;
    List<float[]> vectors = data.points(4000, sim);
    FieldType type = graphType(sim, Map.of(IndexParams.DEGREE, 16, IndexParams.BUILD_DEGREE, 24));
    try (Directory dir = FSDirectory.open(tempDir)) {
      try (IndexWriter writer = new IndexWriter(dir, config(0, 1000))) {
        for (int id = 0; id < vectors.size(); id++) {
          writer.addDocument(doc(id, vectors.get(id), type));
        }
        writer.commit();
        for (int id = 0; id < vectors.size(); id += 3) {
          writer.deleteDocuments(new Term("sid", Integer.toString(id)));
        }
        writer.forceMerge(1);
        writer.commit();
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(1, reader.leaves().size());
        LeafReader leaf = reader.leaves().get(0).reader();
        int live = vectors.size() - (vectors.size() + 2) / 3;
        GraphField graph = graph(leaf);
        assertEquals(live, graph.size(), "the merged graph holds the live vectors only");
        assertEquals(24, graph.buildDegree());
        assertGraphInvariants(graph.toAdjacency(), graph.seeds(), live, 16);
        IndexSearcher searcher = new IndexSearcher(reader);
        double recall = recall(searcher, vectors, data.points(30, sim), sim, 10, null, id -> id % 3 != 0);
        System.out.printf("[graph] merged segment (max inner product): recall@10 %.4f%n", recall);
        assertTrue(recall >= 0.9, "recall@10 after the merge: " + recall);
      }
    }
  }

  /**
   * A segment with 99 % of its documents deleted, searched on the CPU: the walk's effort comes from
   * the accepted vectors counted as the GPU counts them (the live-docs mask), not from {@code
   * AcceptDocs.cost()} (the segment's document count for live docs), so the search is the exact one
   * the GPU path runs (a width-64 walk through deleted vectors found 12 % of the neighbours).
   */
  @Test
  void aSegmentOfMostlyDeletedDocumentsIsSearchedAsTheGpuWouldOnTheCpu() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(6000, sim);
    FieldType type = graphType(sim, Map.of(IndexParams.DEGREE, 16));
    GpuSearchServices.current().setEnabled(false); // the CPU path, also on the GPU machine
    try (Directory dir = FSDirectory.open(tempDir)) {
      try (IndexWriter writer = new IndexWriter(dir, config(0, 10_000))) {
        for (int id = 0; id < vectors.size(); id++) {
          writer.addDocument(doc(id, vectors.get(id), type));
        }
        writer.commit();
        for (int id = 0; id < vectors.size(); id++) {
          if (id % 100 != 0) {
            writer.deleteDocuments(new Term("sid", Integer.toString(id)));
          }
        }
        writer.commit();
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(1, reader.leaves().size());
        assertEquals(60, reader.numDocs());
        IndexSearcher searcher = new IndexSearcher(reader);
        double recall = recall(searcher, vectors, data.points(30, sim), sim, 10, null, id -> id % 100 == 0);
        assertEquals(1.0, recall, 1e-9, "exact over the 60 live vectors");
      }
    } finally {
      GpuSearchServices.current().setEnabled(true);
    }
  }

  /**
   * A force-merge of one flushed compound-file segment rewrites it (a lone segment is too large a
   * share of the index for a compound file): the merge takes over the segment's graph, without a k-NN
   * step, and the merged graph is the flushed one. After a deletion the next merge builds again.
   */
  @Test
  void aMergeOfOneSegmentTakesOverItsGraphUnlessDocumentsWereDeleted() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(3000, sim);
    FieldType type = graphType(sim, Map.of(IndexParams.DEGREE, 16));
    GpuSearchService service = GpuSearchServices.current();
    try (Directory dir = FSDirectory.open(tempDir);
         IndexWriter writer = new IndexWriter(dir, config(0, 5000).setUseCompoundFile(true))) {
      for (int id = 0; id < vectors.size(); id++) {
        writer.addDocument(doc(id, vectors.get(id), type));
      }
      writer.commit();
      int[] flushedAdjacency;
      int[] flushedSeeds;
      String flushedSegment;
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        SegmentReader leaf = (SegmentReader) reader.leaves().get(0).reader();
        assertTrue(leaf.getSegmentInfo().info.getUseCompoundFile(), "the flushed segment is a compound file");
        flushedSegment = leaf.getSegmentName();
        flushedAdjacency = graph(leaf).toAdjacency();
        flushedSeeds = graph(leaf).seeds();
      }
      long knnVectors = service.stats().cpuKnnGraphVectors() + service.stats().gpuKnnGraphVectors();

      writer.forceMerge(1);
      writer.commit();
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(1, reader.leaves().size());
        SegmentReader leaf = (SegmentReader) reader.leaves().get(0).reader();
        assertFalse(leaf.getSegmentName().equals(flushedSegment), "the force-merge rewrote the segment");
        assertArrayEquals(flushedAdjacency, graph(leaf).toAdjacency(), "the flushed graph, taken over");
        assertArrayEquals(flushedSeeds, graph(leaf).seeds());
      }
      assertEquals(knnVectors, service.stats().cpuKnnGraphVectors() + service.stats().gpuKnnGraphVectors(),
          "no k-NN graph built for the merge");

      writer.deleteDocuments(new Term("sid", "0"));
      writer.forceMerge(1);
      writer.commit();
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        GraphField graph = graph(reader.leaves().get(0).reader());
        assertEquals(vectors.size() - 1, graph.size());
        assertGraphInvariants(graph.toAdjacency(), graph.seeds(), vectors.size() - 1, 16);
      }
      assertEquals(knnVectors + vectors.size() - 1, service.stats().cpuKnnGraphVectors() + service.stats().gpuKnnGraphVectors(),
          "with a deleted document the merge builds the graph of the live vectors");
    }
  }

  @Test
  void segmentsBelowTheThresholdStayFlat() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(600, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(500, 400), vectors, graphType(sim, Map.of()));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(2, reader.leaves().size());
        for (var leaf : reader.leaves()) {
          assertNull(graph(leaf.reader()), "a segment of " + leaf.reader().maxDoc() + " docs stays flat");
        }
        IndexSearcher searcher = new IndexSearcher(reader);
        float[] query = data.point(sim);
        GpuVectorsFormatTests.assertSameHits(oracleTopK(vectors, query, sim, 10, id -> true), search(searcher, query, 10, null));
      }
    }
  }

  /** Swaps two neighbours in the last row: a valid structure, so only the checksum can tell. */
  @Test
  void corruptGraphFailsIntegrityChecks() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 5000), data.points(1500, sim), graphType(sim, Map.of(IndexParams.DEGREE, 8)));
    }
    Path gvd;
    try (var files = Files.list(tempDir)) {
      gvd = files.filter(p -> p.toString().endsWith(".gvd")).findFirst().orElseThrow();
    }
    try (RandomAccessFile raf = new RandomAccessFile(gvd.toFile(), "rw")) {
      long lastRow = raf.length() - 16 - 4 * 8; // the codec footer is 16 bytes
      byte[] a = new byte[4];
      byte[] b = new byte[4];
      raf.seek(lastRow);
      raf.readFully(a);
      raf.readFully(b);
      assertFalse(Arrays.equals(a, b));
      raf.seek(lastRow);
      raf.write(b);
      raf.write(a);
    }
    try (Directory dir = FSDirectory.open(tempDir);
         DirectoryReader reader = DirectoryReader.open(dir)) {
      LeafReader leaf = reader.leaves().get(0).reader();
      assertNotNull(graph(leaf), "the structure is still valid");
      assertThrows(CorruptIndexException.class, () -> ((CodecReader) leaf).checkIntegrity());
    }
  }

  /**
   * With a device, the k-NN step runs there (exact brute force, so the same graph as the CPU's exact
   * k-NN, up to near-ties); a failing device leaves the build to the CPU, counted. Searches of graph
   * segments go to the device with the graph (its adjacency uploaded).
   */
  /**
   * On the device: a filter so selective that a walk could score as many vectors as it accepts runs
   * the exact search there (the group's parameters are SearchParams.EXACT; counted as graph_exact), with
   * the brute force's hits; an unfiltered search walks (the field's width); a 50 % filter under a
   * search width of 16 walks its widened width. No CPU fallback for the visit limit.
   */
  @Test
  void selectiveFiltersRunTheExactSearchOnTheDevice() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(8000, sim);
    FakeBackend device = new FakeBackend(1L << 30);
    GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.defaults());
    GpuSearchServices.install(service);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 10_000), vectors, graphType(sim, Map.of(IndexParams.SEARCH_WIDTH, 16)));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        float[] query = data.point(sim);
        device.groupParams.clear();
        List<Hit> hits = search(searcher, query, 10, new TermQuery(new Term("f1", "yes")));
        assertEquals(List.of(SearchParams.EXACT), List.copyOf(device.groupParams), "1 %: the exact search");
        assertEquals(1, service.stats().graphExactSearches());
        assertEquals(ids(oracleTopK(vectors, query, sim, 10, id -> id % 100 == 0)), ids(hits), "the accepted top 10");
        device.groupParams.clear();
        search(searcher, query, 10, new TermQuery(new Term("f50", "yes")));
        assertEquals(List.of(new SearchParams.Graph(32)), List.copyOf(device.groupParams), "50 %: a walk of twice the width");
        device.groupParams.clear();
        search(searcher, query, 10, null);
        assertEquals(List.of(new SearchParams.Graph(16)), List.copyOf(device.groupParams), "no filter: the field's width");
        assertEquals(1, service.stats().graphExactSearches(), "walks are not counted");
        assertEquals(3, service.stats().gpuSearches());
        assertEquals(0, service.stats().cpuFallbacks(FallbackReason.VISIT_LIMIT), "nothing left to the CPU");
        DeviceBytes parts = service.residentBytesByPart(); // the stats' parts: the vectors and the adjacency
        assertEquals(service.residentBytes(), parts.total(), "the parts add up to the resident bytes");
        assertTrue(parts.get(MemoryPart.VECTORS) > 0 && parts.get(MemoryPart.GRAPH) > 0, parts::toString);
        assertEquals(0, parts.get(MemoryPart.PQ_CODES) + parts.get(MemoryPart.LISTS), parts::toString);
        // a failing pass: the CPU answers the same hits, and the device's exact search is not counted
        device.passFault = FakeBackend::launchFailure;
        List<Hit> onCpu = search(searcher, query, 10, new TermQuery(new Term("f1", "yes")));
        device.passFault = null;
        assertEquals(ids(hits), ids(onCpu), "the CPU's exact search of the accepted vectors");
        assertEquals(1, service.stats().graphExactSearches(), "a search the GPU did not serve is not its graph_exact");
        assertEquals(3, service.stats().gpuSearches());
      }
    } finally {
      GpuSearchServices.uninstall(service);
      service.close();
    }
  }

  @Test
  void knnGraphOnTheDeviceFallsBackToTheCpuAndSearchesRunOnTheDevice() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(1500, sim);
    FieldType type = graphType(sim, Map.of(IndexParams.DEGREE, 16));
    int[] cpu;
    GpuSearchServices.current().setEnabled(false); // the baseline on the CPU, also on the GPU machine
    try (Directory dir = FSDirectory.open(tempDir.resolve("cpu"))) {
      index(dir, config(0, 5000), vectors, type);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        cpu = graph(reader.leaves().get(0).reader()).toAdjacency();
      }
    } finally {
      GpuSearchServices.current().setEnabled(true);
    }
    FakeBackend device = new FakeBackend(1L << 30);
    GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.defaults());
    GpuSearchServices.install(service);
    try {
      try (Directory dir = FSDirectory.open(tempDir.resolve("device"))) {
        index(dir, config(0, 5000), vectors, type);
        assertTrue(device.nearestKCalls.get() > 0, "k-NN graph on the device");
        assertEquals(vectors.size(), service.stats().gpuKnnGraphVectors());
        assertEquals(0, service.stats().cpuKnnGraphVectors());
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          int[] onDevice = graph(reader.leaves().get(0).reader()).toAdjacency();
          int differentRows = 0;
          for (int i = 0; i < vectors.size(); i++) {
            if (Arrays.equals(cpu, i * 16, (i + 1) * 16, onDevice, i * 16, (i + 1) * 16) == false) {
              differentRows++;
            }
          }
          assertTrue(differentRows <= vectors.size() / 100, "rows differing from the CPU build (near-ties only): " + differentRows);
          IndexSearcher searcher = new IndexSearcher(reader);
          float[] query = data.point(sim);
          List<Hit> hits = search(searcher, query, 10, null);
          assertEquals(1, service.stats().gpuSearches());
          assertEquals(1, device.graphUploads.get(), "the graph went to the device");
          assertEquals(10, hits.size());
        }
      }
      device.nearestKFault = FakeBackend::launchFailure;
      try (Directory dir = FSDirectory.open(tempDir.resolve("failing"))) {
        index(dir, config(0, 5000), vectors, type);
        assertEquals(vectors.size(), service.stats().cpuKnnGraphVectors(), "the CPU took over");
        assertTrue(service.stats().cpuFallbacks(FallbackReason.CUDA_ERROR) > 0, "the failure is counted: " + service.stats());
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          assertArrayEquals(cpu, graph(reader.leaves().get(0).reader()).toAdjacency(), "the CPU's graph");
        }
      }
    } finally {
      GpuSearchServices.uninstall(service);
      service.close();
    }
  }

  @Test
  void parametersAreValidated() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new IndexParams(IndexType.GRAPH, Map.of(IndexParams.DEGREE, 64, IndexParams.BUILD_DEGREE, 32)));
    assertEquals("[build_degree] must be >= [degree] (64) but was [32]", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new IndexParams(IndexType.GRAPH, Map.of(IndexParams.BUILD_DEGREE, 16)));
    assertEquals("[build_degree] must be >= [degree] (32, the default) but was [16]", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new IndexParams(IndexType.GRAPH, Map.of(IndexParams.DEGREE, 4)));
    assertEquals("[degree] must be in [8, 128] but was [4]", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new IndexParams(IndexType.GRAPH, Map.of(IndexParams.BUILD_DEGREE, 300)));
    assertEquals("[build_degree] must be in [8, 256] but was [300]", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new IndexParams(IndexType.GRAPH, Map.of(IndexParams.SEARCH_WIDTH, 2000)));
    assertEquals("[search_width] must be in [8, 1024] but was [2000]", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new IndexParams(IndexType.GRAPH, Map.of(IndexParams.NLIST, 4)));
    assertEquals("unknown parameter [nlist] for index type [graph]; valid parameters are [build_degree, degree, search_width]", e.getMessage());
    // a degree of 128 defaults build_degree to 256, the largest
    assertEquals(256, GraphBuilder.buildDegree(java.util.OptionalInt.empty(), 128));
    assertTrue(IndexType.GRAPH.isImplemented());
  }
}
