package org.gpuvectors.codec;

import static org.gpuvectors.codec.GpuVectorsFormatTests.Hit;
import static org.gpuvectors.codec.GpuVectorsFormatTests.hits;
import static org.gpuvectors.codec.GpuVectorsFormatTests.oracleScore;
import static org.gpuvectors.codec.GpuVectorsFormatTests.oracleTopK;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.function.IntPredicate;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.cuda.GpuAvailability;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The search path that picks the GPU or the CPU, and the batch API, against a brute-force oracle.
 * Without a GPU they check the CPU path and that the fallback is counted; with a GPU they also check
 * that GPU results equal CPU results (same documents, scores within float tolerance) and that a
 * segment's GPU memory is freed when the segment closes.
 */
class GpuSearchPathTests {

  private static final int DIMS = 24;
  private static final int DOCS = 900;
  private static final float TOLERANCE = 2e-4f;

  @TempDir Path tempDir;
  private final Random random = new Random(0x5eed);

  @BeforeAll
  static void sayWhichPath() {
    GpuAvailability availability = GpuAvailability.get();
    System.out.println(
        availability.available()
            ? "[gpu-vectors] codec GPU tests run on " + availability.devices()
            : "[gpu-vectors] codec GPU tests skipped: " + availability.reason());
  }

  @AfterEach
  void gpuBackOn() {
    GpuFlatSearchService.get().setEnabled(true);
  }

  /** Indexes DOCS random vectors (id = position) in several segments; returns them by id. */
  private List<float[]> index(Directory dir, VectorSimilarityFunction sim) throws IOException {
    List<float[]> vectors = new ArrayList<>();
    IndexWriterConfig config =
        new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setMergePolicy(NoMergePolicy.INSTANCE);
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (int id = 0; id < DOCS; id++) {
        float[] v = randomVector(sim != VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT);
        vectors.add(v);
        Document doc = new Document();
        doc.add(new StoredField("id", id));
        doc.add(new StringField("tag", id % 3 == 0 ? "a" : "b", Field.Store.NO));
        doc.add(
            new KnnFloatVectorField(
                "vec",
                v,
                GpuVectorsFormat.markField(KnnFloatVectorField.createFieldType(DIMS, sim), IndexType.FLAT)));
        writer.addDocument(doc);
        if (id % 300 == 299) {
          writer.commit(); // several segments
        }
      }
    }
    return vectors;
  }

  private float[] randomVector(boolean unit) {
    float[] v = new float[DIMS];
    for (int i = 0; i < DIMS; i++) {
      v[i] = random.nextFloat() * 2 - 1;
    }
    if (unit) {
      VectorUtil.l2normalize(v);
    }
    return v;
  }

  private float[][] queries(int n, VectorSimilarityFunction sim) {
    float[][] q = new float[n][];
    for (int i = 0; i < n; i++) {
      q[i] = randomVector(sim != VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT);
    }
    return q;
  }

  /**
   * Same scores rank by rank (within tolerance), no duplicates, and every returned document really
   * has the returned score: robust to near-ties ordered differently by float rounding.
   */
  private static void assertEquivalent(
      List<Hit> expected, List<Hit> actual, List<float[]> vectors, float[] query, VectorSimilarityFunction sim) {
    assertEquals(expected.size(), actual.size(), () -> "expected " + expected + "\nactual " + actual);
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < expected.size(); i++) {
      Hit hit = actual.get(i);
      assertTrue(seen.add(hit.id()), "duplicate id " + hit.id());
      assertEquals(expected.get(i).score(), hit.score(), TOLERANCE, "score of rank " + i);
      assertEquals(oracleScore(sim, vectors.get(hit.id()), query), hit.score(), TOLERANCE, "score of id " + hit.id());
    }
  }

  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void batchSearchMatchesOracle(VectorSimilarityFunction sim) throws IOException {
    try (Directory dir = FSDirectory.open(tempDir.resolve(sim.name()))) {
      List<float[]> vectors = index(dir, sim);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertTrue(reader.leaves().size() >= 3, "several segments");
        IndexSearcher searcher = new IndexSearcher(reader);
        float[][] queries = queries(40, sim);
        for (int k : new int[] {1, 10, 100}) {
          TopDocs[] all = KnnBatchSearcher.search(searcher, "vec", queries, k, null);
          TopDocs[] filtered = KnnBatchSearcher.search(searcher, "vec", queries, k, new TermQuery(new Term("tag", "a")));
          for (int q = 0; q < queries.length; q++) {
            assertEquivalent(oracleTopK(vectors, queries[q], sim, k, id -> true), hits(searcher, all[q]), vectors, queries[q], sim);
            IntPredicate tagA = id -> id % 3 == 0;
            assertEquivalent(oracleTopK(vectors, queries[q], sim, k, tagA), hits(searcher, filtered[q]), vectors, queries[q], sim);
          }
        }
      }
    }
  }

  @Test
  void batchSearchSkipsDeletedDocuments() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    try (Directory dir = FSDirectory.open(tempDir.resolve("deletes"))) {
      List<float[]> vectors = index(dir, sim);
      IndexWriterConfig config = new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setMergePolicy(NoMergePolicy.INSTANCE);
      try (IndexWriter writer = new IndexWriter(dir, config)) {
        writer.deleteDocuments(new Term("tag", "a")); // a third of the documents, in every segment
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        float[][] queries = queries(8, sim);
        TopDocs[] results = KnnBatchSearcher.search(searcher, "vec", queries, 25, null);
        for (int q = 0; q < queries.length; q++) {
          assertEquivalent(oracleTopK(vectors, queries[q], sim, 25, id -> id % 3 != 0), hits(searcher, results[q]), vectors, queries[q], sim);
        }
      }
    }
  }

  @Test
  void scoresFromKernelDistancesAreLucenesScores() {
    for (VectorSimilarityFunction sim : VectorSimilarityFunction.values()) {
      for (int i = 0; i < 200; i++) {
        boolean unit = sim != VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT;
        float[] a = randomVector(unit);
        float[] b = randomVector(unit);
        double dot = 0, l2 = 0;
        for (int d = 0; d < DIMS; d++) {
          dot += (double) a[d] * b[d];
          l2 += ((double) a[d] - b[d]) * ((double) a[d] - b[d]);
        }
        float raw = (float) (sim == VectorSimilarityFunction.EUCLIDEAN ? l2 : dot);
        assertEquals(sim.compare(a, b), GpuExactSearcher.score(sim, raw), 1e-5f, sim + " pair " + i);
      }
    }
  }

  @Test
  void withoutGpuSearchesFallBackToCpuAndAreCounted() throws IOException {
    GpuAvailability availability = GpuAvailability.get();
    assumeFalse(availability.available(), "a GPU is usable here; gpuResultsEqualCpuResults covers the GPU path");
    GpuSearchStats stats = GpuFlatSearchService.get().stats();
    long before = stats.cpuFallbacks();
    VectorSimilarityFunction sim = VectorSimilarityFunction.COSINE;
    try (Directory dir = FSDirectory.open(tempDir.resolve("fallback"))) {
      List<float[]> vectors = index(dir, sim);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        float[] query = randomVector(true);
        TopDocs td = searcher.search(new KnnFloatVectorQuery("vec", query, 10), 10);
        assertEquivalent(oracleTopK(vectors, query, sim, 10, id -> true), hits(searcher, td), vectors, query, sim);
      }
    }
    assertTrue(stats.cpuFallbacks() > before, "fallbacks counted: " + stats);
    assertTrue(
        stats.cpuFallbacksByReason().keySet().stream().anyMatch(r -> r.contains(availability.reason())),
        () -> "reason names why there is no GPU (" + availability.reason() + "): " + stats);
  }

  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void gpuResultsEqualCpuResults(VectorSimilarityFunction sim) throws IOException {
    GpuAvailability availability = GpuAvailability.get();
    assumeTrue(availability.available(), () -> "no GPU: " + availability.reason());
    GpuFlatSearchService service = GpuFlatSearchService.get();
    assumeTrue(service.gpuActive(), () -> "GPU path not active: " + service.unusableReason());
    try (Directory dir = FSDirectory.open(tempDir.resolve("gpu-" + sim.name()))) {
      List<float[]> vectors = index(dir, sim);
      long gpuSearchesBefore = service.stats().gpuSearches();
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        float[][] queries = queries(64, sim);
        Query filter = new TermQuery(new Term("tag", "a"));
        for (int k : new int[] {1, 10, 100, 1000}) {
          for (Query f : new Query[] {null, filter}) {
            service.setEnabled(true);
            TopDocs[] gpu = KnnBatchSearcher.search(searcher, "vec", queries, k, f);
            TopDocs single = searcher.search(new KnnFloatVectorQuery("vec", queries[0], k, f), k);
            service.setEnabled(false);
            TopDocs[] cpu = KnnBatchSearcher.search(searcher, "vec", queries, k, f);
            for (int q = 0; q < queries.length; q++) {
              assertEquivalent(hits(searcher, cpu[q]), hits(searcher, gpu[q]), vectors, queries[q], sim);
            }
            assertEquivalent(hits(searcher, cpu[0]), hits(searcher, single), vectors, queries[0], sim);
          }
        }
        assertTrue(service.stats().gpuSearches() > gpuSearchesBefore, "searches ran on the GPU: " + service.stats());
        assertTrue(service.residentCount() >= reader.leaves().size(), "segments resident");
      }
      assertEquals(0, service.residentCount(), "GPU memory freed when the segments closed");
      assertEquals(0, service.residentBytes());
    }
  }

  @Test
  void segmentOverTheGpuMemoryBudgetIsSearchedOnTheCpu() throws IOException {
    GpuAvailability availability = GpuAvailability.get();
    assumeTrue(availability.available(), () -> "no GPU: " + availability.reason());
    // a budget of a few hundred bytes: no segment fits, every search must fall back without an error
    GpuFlatSearchService.configure(new GpuFlatSearchService.Settings("auto", 0, 1e-8));
    try {
      GpuFlatSearchService service = GpuFlatSearchService.get();
      VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
      try (Directory dir = FSDirectory.open(tempDir.resolve("budget"))) {
        List<float[]> vectors = index(dir, sim);
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader);
          float[][] queries = queries(4, sim);
          TopDocs[] results = KnnBatchSearcher.search(searcher, "vec", queries, 10, null);
          for (int q = 0; q < queries.length; q++) {
            assertEquivalent(oracleTopK(vectors, queries[q], sim, 10, id -> true), hits(searcher, results[q]), vectors, queries[q], sim);
          }
        }
      }
      assertEquals(0, service.stats().gpuSearches(), () -> "nothing ran on the GPU: " + service.stats());
      assertTrue(
          service.stats().cpuFallbacksByReason().containsKey("segment larger than the GPU memory budget"),
          () -> "fallback counted with its reason: " + service.stats());
    } finally {
      GpuFlatSearchService.configure(GpuFlatSearchService.Settings.fromSystemProperties());
    }
  }
}
