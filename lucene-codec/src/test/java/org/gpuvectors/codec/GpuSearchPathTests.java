package org.gpuvectors.codec;

import static org.gpuvectors.codec.GpuVectorsFormatTests.Hit;
import static org.gpuvectors.codec.GpuVectorsFormatTests.hits;
import static org.gpuvectors.codec.GpuVectorsFormatTests.oracleScore;
import static org.gpuvectors.codec.GpuVectorsFormatTests.oracleTopK;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import org.gpuvectors.codec.gpu.FakeBackend;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
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
  /**
   * Scores are in (0, 1]; the GPU's come from FP32 GEMM distances (L2 as ||x||^2 - 2 x.q + ||q||^2 over
   * 24 dims of magnitude <= 1: absolute error of a few 1e-7 per term), so 1e-5 is ~10x the worst
   * rounding seen and far below any real score gap.
   */
  private static final float TOLERANCE = 1e-5f;

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
    GpuSearchServices.current().setEnabled(true);
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
        doc.add(new StringField("id_mod5", Integer.toString(id % 5), Field.Store.NO));
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
   * The exact top k: the same ids as the oracle, except that ids whose oracle score ties the k-th
   * score (within {@link #TOLERANCE}) may be swapped for one another; no duplicates; every returned
   * id has its own oracle score (so it passes the filter the oracle applied, or it would not be in the
   * oracle's candidates) and ranks are in score order.
   */
  private static void assertEquivalent(
      List<Hit> expected, List<Hit> actual, List<float[]> vectors, float[] query, VectorSimilarityFunction sim) {
    assertEquals(expected.size(), actual.size(), () -> "expected " + expected + "\nactual " + actual);
    if (expected.isEmpty()) {
      return;
    }
    float kth = expected.get(expected.size() - 1).score();
    Set<Integer> expectedIds = new HashSet<>();
    for (Hit hit : expected) {
      expectedIds.add(hit.id());
    }
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < actual.size(); i++) {
      Hit hit = actual.get(i);
      assertTrue(seen.add(hit.id()), "duplicate id " + hit.id());
      float own = oracleScore(sim, vectors.get(hit.id()), query);
      assertEquals(own, hit.score(), TOLERANCE, "score of id " + hit.id());
      assertEquals(expected.get(i).score(), hit.score(), TOLERANCE, "score of rank " + i);
      if (expectedIds.contains(hit.id()) == false) {
        // only a tie with the k-th oracle score may take the place of an oracle id
        assertEquals(kth, own, TOLERANCE, () -> "id " + hit.id() + " is not in the exact top k: expected "
            + expected + "\nactual " + actual);
      }
    }
    for (Hit hit : expected) {
      if (seen.contains(hit.id()) == false) {
        assertEquals(kth, hit.score(), TOLERANCE, () -> "true neighbour " + hit + " missing: actual " + actual);
      }
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
        assertEquals(sim.compare(a, b), GpuSegmentSearcher.score(sim, raw), 1e-5f, sim + " pair " + i);
      }
    }
  }

  @Test
  void withoutGpuSearchesFallBackToCpuAndAreCounted() throws IOException {
    GpuAvailability availability = GpuAvailability.get();
    if (availability.available() == false) {
      String reason = GpuSearchServices.current().unusableReason();
      assertTrue(reason.contains(availability.reason()), () -> "the service says why there is no GPU: " + reason);
    }
    // with or without a GPU here: a service in mode false has none, and says so
    try (GpuSearchService service =
        GpuSearchService.create(new GpuSearchService.Settings(GpuSearchService.Mode.FALSE, 0, 0.5, 64))) {
      GpuSearchServices.install(service);
      try {
        VectorSimilarityFunction sim = VectorSimilarityFunction.COSINE;
        try (Directory dir = FSDirectory.open(tempDir.resolve("fallback"))) {
          List<float[]> vectors = index(dir, sim);
          try (DirectoryReader reader = DirectoryReader.open(dir)) {
            IndexSearcher searcher = new IndexSearcher(reader);
            float[] query = randomVector(true);
            TopDocs td = searcher.search(new KnnFloatVectorQuery("vec", query, 10), 10);
            assertEquivalent(oracleTopK(vectors, query, sim, 10, id -> true), hits(searcher, td), vectors, query, sim);
            assertEquals(reader.leaves().size(), service.stats().cpuFallbacks(FallbackReason.NO_GPU), service.stats()::toString);
          }
        }
        assertEquals(0, service.stats().gpuSearches());
        assertTrue(service.unusableReason().contains("mode=false"), service.unusableReason());
      } finally {
        GpuSearchServices.uninstall(service);
      }
    }
  }

  /**
   * The whole GPU path through Lucene (masks from filters and deletions, batching, residency, scores
   * from kernel distances, ordinals to docs) on a CPU double of the device, so CI covers it too.
   */
  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void theGpuPathThroughLuceneMatchesTheOracle(VectorSimilarityFunction sim) throws IOException {
    FakeBackend backend = new FakeBackend(1L << 30);
    try (GpuSearchService service = GpuSearchService.withBackend(
        backend, new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 1.0, 1024))) {
      GpuSearchServices.install(service);
      try (Directory dir = FSDirectory.open(tempDir.resolve("fake-" + sim.name()))) {
        List<float[]> vectors = index(dir, sim);
        IndexWriterConfig config = new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setMergePolicy(NoMergePolicy.INSTANCE);
        try (IndexWriter writer = new IndexWriter(dir, config)) {
          writer.deleteDocuments(new Term("id_mod5", "0")); // deletions in every segment
        }
        IntPredicate live = id -> id % 5 != 0;
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader);
          int leaves = reader.leaves().size();
          float[][] queries = queries(16, sim);
          Query filter = new TermQuery(new Term("tag", "a"));
          for (int k : new int[] {1, 10, 50}) {
            long before = service.stats().gpuSearches();
            int passesBefore = backend.passes.get();
            TopDocs[] all = KnnBatchSearcher.search(searcher, "vec", queries, k, null);
            TopDocs[] filtered = KnnBatchSearcher.search(searcher, "vec", queries, k, filter);
            assertEquals(before + 2L * leaves, service.stats().gpuSearches(), () -> "on the device: " + service.stats());
            assertEquals(passesBefore + 2, backend.passes.get(), "one pass per batch call, all segments in it");
            for (int q = 0; q < queries.length; q++) {
              assertEquivalent(oracleTopK(vectors, queries[q], sim, k, live), hits(searcher, all[q]), vectors, queries[q], sim);
              IntPredicate tagA = id -> live.test(id) && id % 3 == 0;
              assertEquivalent(oracleTopK(vectors, queries[q], sim, k, tagA), hits(searcher, filtered[q]), vectors, queries[q], sim);
              TopDocs single = searcher.search(new KnnFloatVectorQuery("vec", queries[q], k, filter), k);
              assertEquivalent(oracleTopK(vectors, queries[q], sim, k, tagA), hits(searcher, single), vectors, queries[q], sim);
            }
          }
          assertEquals(0, service.stats().cpuFallbacks(), () -> "no fallback: " + service.stats());
          assertEquals(leaves, service.residentCount());
        }
        assertEquals(0, service.residentCount(), "freed when the segments closed");
        assertEquals(0, backend.liveBytes.get());
      } finally {
        GpuSearchServices.uninstall(service);
      }
    }
  }

  /**
   * One unfiltered query, many segments: the first segment's search covers the index's other
   * resident segments in the same pass, and they take those results (exactly their own: same
   * deletions instance, their own k) instead of searching again; after new deletions the parked
   * results no longer match and segments search for themselves, still exactly.
   */
  @Test
  void oneQueryOverManySegmentsRunsAsOnePass() throws IOException {
    FakeBackend backend = new FakeBackend(1L << 30);
    try (GpuSearchService service = GpuSearchService.withBackend(
        backend, new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 1.0, 1024))) {
      GpuSearchServices.install(service);
      VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
      try (Directory dir = FSDirectory.open(tempDir.resolve("speculation"))) {
        List<float[]> vectors = index(dir, sim);
        IndexWriterConfig config = new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setMergePolicy(NoMergePolicy.INSTANCE);
        try (IndexWriter writer = new IndexWriter(dir, config)) {
          writer.deleteDocuments(new Term("id_mod5", "1"));
        }
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader);
          int leaves = reader.leaves().size();
          assertTrue(leaves >= 3, "several segments");
          long hitsBefore = 0;
          java.util.Map<?, Long> missesBefore = java.util.Map.of();
          for (int round = 0; round < 2; round++) { // the first query uploads and learns each segment's live docs
            hitsBefore = service.stats().speculativeHits();
            missesBefore = service.stats().speculativeMissesByReason(); // round 0: segments not resident yet
            for (int q = 0; q < 10; q++) {
              float[] query = randomVector(true);
              int k = 5 + q;
              int passesBefore = backend.passes.get();
              TopDocs td = searcher.search(new KnnFloatVectorQuery("vec", query, k), k);
              assertEquivalent(oracleTopK(vectors, query, sim, k, id -> id % 5 != 1), hits(searcher, td), vectors, query, sim);
              if (round == 1) {
                assertEquals(passesBefore + 1, backend.passes.get(), "one pass for all " + leaves + " segments");
              }
            }
          }
          long hits = service.stats().speculativeHits() - hitsBefore;
          assertEquals(10L * (leaves - 1), hits, () -> "the other segments took parked results: " + service.stats());
          assertEquals(missesBefore, service.stats().speculativeMissesByReason(), () -> "no misses: " + service.stats());
        }
        // one array reused for other vectors: never answered with the previous vector's results
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader);
          float[] reused = randomVector(true);
          for (int q = 0; q < 5; q++) {
            float[] next = randomVector(true);
            System.arraycopy(next, 0, reused, 0, next.length);
            TopDocs td = searcher.search(new KnnFloatVectorQuery("vec", reused, 10), 10);
            assertEquivalent(oracleTopK(vectors, next, sim, 10, id -> id % 5 != 1), hits(searcher, td), vectors, next, sim);
          }
        }
        IndexWriterConfig again = new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setMergePolicy(NoMergePolicy.INSTANCE);
        try (IndexWriter writer = new IndexWriter(dir, again)) {
          writer.deleteDocuments(new Term("id_mod5", "2")); // new live docs in every segment
        }
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader);
          for (int q = 0; q < 5; q++) {
            float[] query = randomVector(true);
            TopDocs td = searcher.search(new KnnFloatVectorQuery("vec", query, 10), 10);
            assertEquivalent(oracleTopK(vectors, query, sim, 10, id -> id % 5 != 1 && id % 5 != 2), hits(searcher, td), vectors, query, sim);
          }
        }
        assertEquals(0, service.stats().cpuFallbacks(), () -> "" + service.stats());
      } finally {
        GpuSearchServices.uninstall(service);
      }
    }
  }

  /**
   * An uneven index whose small segment asks first: Lucene asks its large segment for more than the query's k (its
   * optimistic per-segment k is not capped at k), and the pass must have parked that much for it, or the large
   * segment misses on every query and searches again in a second pass. Exact results, one pass a query.
   */
  @Test
  void anUnevenIndexIsOnePassPerQueryWhicheverSegmentAsksFirst() throws IOException {
    FakeBackend backend = new FakeBackend(1L << 30);
    try (GpuSearchService service = GpuSearchService.withBackend(
        backend, new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 1.0, 1024))) {
      GpuSearchServices.install(service);
      VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
      try (Directory dir = FSDirectory.open(tempDir.resolve("uneven"))) {
        List<float[]> vectors = new ArrayList<>();
        IndexWriterConfig config =
            new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setMergePolicy(NoMergePolicy.INSTANCE);
        try (IndexWriter writer = new IndexWriter(dir, config)) {
          for (int size : new int[] {40, 150, 2000, 100}) { // the first segment is the first leaf: a small one
            for (int i = 0; i < size; i++) {
              float[] v = randomVector(true);
              Document doc = new Document();
              doc.add(new StoredField("id", vectors.size()));
              doc.add(new KnnFloatVectorField(
                  "vec", v, GpuVectorsFormat.markField(KnnFloatVectorField.createFieldType(DIMS, sim), IndexType.FLAT)));
              writer.addDocument(doc);
              vectors.add(v);
            }
            writer.commit();
          }
        }
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          assertEquals(4, reader.leaves().size());
          assertTrue(reader.leaves().get(0).reader().maxDoc() < reader.leaves().get(2).reader().maxDoc());
          IndexSearcher searcher = new IndexSearcher(reader);
          searcher.search(new KnnFloatVectorQuery("vec", randomVector(true), 100), 100); // uploads the segments
          long hitsBefore = service.stats().speculativeHits();
          int passesBefore = backend.passes.get();
          for (int q = 0; q < 10; q++) {
            float[] query = randomVector(true);
            TopDocs td = searcher.search(new KnnFloatVectorQuery("vec", query, 100), 100);
            assertEquivalent(oracleTopK(vectors, query, sim, 100, id -> true), hits(searcher, td), vectors, query, sim);
          }
          assertEquals(passesBefore + 10, backend.passes.get(), () -> "one pass a query: " + service.stats());
          assertEquals(30, service.stats().speculativeHits() - hitsBefore, () -> "3 segments took parked results");
          assertEquals(java.util.Map.of(org.gpuvectors.codec.gpu.SpeculationMiss.NOT_IN_PASS, 3L), service.stats().speculativeMissesByReason(),
              () -> "only the first query's segments, before they were resident: " + service.stats());
        }
      } finally {
        GpuSearchServices.uninstall(service);
      }
    }
  }

  @Test
  void searchesAreAnsweredByTheCpuWhenTheDeviceFails() throws IOException {
    FakeBackend backend = new FakeBackend(1L << 30);
    try (GpuSearchService service = GpuSearchService.withBackend(
        backend, new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 1.0, 1024))) {
      GpuSearchServices.install(service);
      VectorSimilarityFunction sim = VectorSimilarityFunction.DOT_PRODUCT;
      try (Directory dir = FSDirectory.open(tempDir.resolve("faults"))) {
        List<float[]> vectors = index(dir, sim);
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader);
          int leaves = reader.leaves().size();
          float[] query = randomVector(true);
          List<Hit> expected = oracleTopK(vectors, query, sim, 10, id -> true);
          backend.uploadFault = FakeBackend::outOfMemory;
          assertEquivalent(expected, hits(searcher, searcher.search(new KnnFloatVectorQuery("vec", query, 10), 10)), vectors, query, sim);
          assertEquals(leaves, service.stats().cpuFallbacks(FallbackReason.DEVICE_OUT_OF_MEMORY));
          backend.uploadFault = null;
          backend.passFault = FakeBackend::launchFailure;
          assertEquivalent(expected, hits(searcher, searcher.search(new KnnFloatVectorQuery("vec", query, 10), 10)), vectors, query, sim);
          assertEquals(leaves, service.stats().cpuFallbacks(FallbackReason.CUDA_ERROR));
          backend.passFault = FakeBackend::sticky;
          assertEquivalent(expected, hits(searcher, searcher.search(new KnnFloatVectorQuery("vec", query, 10), 10)), vectors, query, sim);
          assertEquivalent(expected, hits(searcher, searcher.search(new KnnFloatVectorQuery("vec", query, 10), 10)), vectors, query, sim);
          assertEquals(2L * leaves, service.stats().cpuFallbacks(FallbackReason.GPU_FAILED));
          assertEquals(0, service.stats().gpuSearches());
        }
      } finally {
        GpuSearchServices.uninstall(service);
      }
    }
  }

  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void gpuResultsEqualCpuResults(VectorSimilarityFunction sim) throws IOException {
    GpuAvailability availability = GpuAvailability.get();
    GpuTestSupport.assumeGpuOrFail(availability);
    GpuSearchService service = GpuSearchServices.current();
    assertTrue(service.gpuActive(), () -> "GPU usable but the GPU path is not active: " + service.unusableReason());
    try (Directory dir = FSDirectory.open(tempDir.resolve("gpu-" + sim.name()))) {
      List<float[]> vectors = index(dir, sim);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        int leaves = reader.leaves().size();
        float[][] queries = queries(64, sim);
        Query filter = new TermQuery(new Term("tag", "a"));
        for (int k : new int[] {1, 10, 100, 1000}) {
          for (Query f : new Query[] {null, filter}) {
            service.setEnabled(true);
            long gpuBefore = service.stats().gpuSearches();
            long fallbacksBefore = service.stats().cpuFallbacks();
            TopDocs[] gpu = KnnBatchSearcher.search(searcher, "vec", queries, k, f);
            // every leaf answered on the GPU, one search per leaf: nothing fell back quietly
            assertEquals(gpuBefore + leaves, service.stats().gpuSearches(), () -> "GPU searches: " + service.stats());
            TopDocs single = searcher.search(new KnnFloatVectorQuery("vec", queries[0], k, f), k);
            assertEquals(fallbacksBefore, service.stats().cpuFallbacks(), () -> "no CPU fallback: " + service.stats());
            service.setEnabled(false);
            TopDocs[] cpu = KnnBatchSearcher.search(searcher, "vec", queries, k, f);
            for (int q = 0; q < queries.length; q++) {
              IntPredicate accepted = f == null ? id -> true : id -> id % 3 == 0;
              assertEquivalent(oracleTopK(vectors, queries[q], sim, k, accepted), hits(searcher, gpu[q]), vectors, queries[q], sim);
              assertEquivalent(oracleTopK(vectors, queries[q], sim, k, accepted), hits(searcher, cpu[q]), vectors, queries[q], sim);
            }
            assertEquivalent(hits(searcher, cpu[0]), hits(searcher, single), vectors, queries[0], sim);
          }
        }
        assertTrue(service.residentCount() >= leaves, "segments resident");
      }
      assertEquals(0, service.residentCount(), "GPU memory freed when the segments closed");
      assertEquals(0, service.residentBytes());
    }
  }

  @Test
  void segmentOverTheGpuMemoryBudgetIsSearchedOnTheCpu() throws IOException {
    GpuAvailability availability = GpuAvailability.get();
    GpuTestSupport.assumeGpuOrFail(availability);
    // a budget of a few hundred bytes: no segment fits, every search must fall back without an error
    try (GpuSearchService service =
        GpuSearchService.create(new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 1e-8, 64))) {
      GpuSearchServices.install(service);
      try {
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
            service.stats().cpuFallbacks(FallbackReason.SEGMENT_OVER_BUDGET) > 0,
            () -> "fallback counted with its reason: " + service.stats());
      } finally {
        GpuSearchServices.uninstall(service);
      }
    }
  }
}
