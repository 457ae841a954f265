package org.gpuvectors.codec;

import static org.gpuvectors.codec.GpuVectorsFormatTests.assertSameHits;
import static org.gpuvectors.codec.GpuVectorsFormatTests.hits;
import static org.gpuvectors.codec.GpuVectorsFormatTests.oracleTopK;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.FieldExistsQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.tests.util.TestUtil;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.gpu.MemoryBudget;
import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.cuda.MemoryPart;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The smaller resident forms on a real GPU, where the fake device of {@link CompactCopyTests} and {@link
 * ResidencyBudgetSweepTests} cannot tell whether the kernels and the host re-rank agree: a flat index under a byte
 * budget that holds its compact copies but not its whole fields answers the exact top k (a brute force's), its
 * searches counted as compact-copy queries on the GPU; an ivf_pq index re-ranked on the host (codes alone on the
 * device) gives the same ids and scores as re-ranked on the device (raw vectors resident). Skipped without a GPU,
 * failed on the GPU machine when it has none.
 */
class ResidentFormsOnGpuTests {
  private static final int DIMS = 64;
  private static final int SEGMENTS = 4;
  private static final int SEGMENT_DOCS = 750;
  private static final int K = 10;
  private static final int QUERIES = 12;

  @TempDir Path tempDir;

  @ParameterizedTest
  @EnumSource(value = VectorSimilarityFunction.class, names = {"EUCLIDEAN", "DOT_PRODUCT", "COSINE"})
  void flatCompactCopiesOnTheGpuGiveTheExactTopK(VectorSimilarityFunction sim) throws IOException {
    GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
    Random random = new Random(40 + sim.ordinal());
    try (Directory dir = FSDirectory.open(tempDir.resolve("flat-" + sim))) {
      List<float[]> vectors = index(dir, sim, IndexType.FLAT, Map.of(), random);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        long whole = 0;
        try (GpuSearchService probe = GpuSearchService.create(GpuSearchService.Settings.defaults())) {
          for (LeafReaderContext leaf : reader.leaves()) {
            whole += probe.flatWholeBytes(leaf.reader().getFloatVectorValues("vec"), sim);
          }
        }
        // half of the whole index: two segments whole at most, all four as copies (a third of whole at 64 dims)
        long budget = whole / 2;
        try (GpuSearchService service = GpuSearchService.create(
            GpuSearchService.Settings.builder().memoryBudget(MemoryBudget.ofBytes(budget)).build())) {
          GpuSearchServices.install(service);
          try {
            IndexSearcher searcher = new IndexSearcher(reader);
            float[][] queries = queries(random, sim);
            search(searcher, queries); // the first round settles the forms: whole while they fit, then copies
            long copyQueries = service.stats().compactCopyQueries();
            long fallbacks = service.stats().cpuFallbacks();
            long uncertified = service.stats().cpuFallbacks(FallbackReason.UNCERTIFIED_CANDIDATES);
            List<List<GpuVectorsFormatTests.Hit>> found = search(searcher, queries);
            TopDocs[] batched = KnnBatchSearcher.search(searcher, "vec", queries, K, null);
            for (int q = 0; q < QUERIES; q++) {
              List<GpuVectorsFormatTests.Hit> exact = oracleTopK(vectors, queries[q], sim, K, id -> true);
              assertSameIds(exact, found.get(q));
              assertSameIds(exact, hits(searcher, batched[q]));
            }
            assertEquals(SEGMENTS, service.residentCount(), () -> "every segment resident: " + service.stats());
            DeviceBytes parts = service.residentBytesByPart();
            assertEquals(service.residentBytes(), parts.total(), parts::toString);
            assertTrue(service.residentBytes() <= budget, () -> service.residentBytes() + " of " + budget);
            assertEquals(0, parts.get(MemoryPart.VECTORS), () -> "no whole field left: " + parts);
            assertTrue(parts.get(MemoryPart.COMPACT_VECTORS) > 0, parts::toString);
            assertTrue(service.stats().compactCopyQueries() - copyQueries >= (long) QUERIES * SEGMENTS,
                () -> "every segment search of the second round on a copy: " + service.stats());
            long moreUncertified = service.stats().cpuFallbacks(FallbackReason.UNCERTIFIED_CANDIDATES) - uncertified;
            assertEquals(moreUncertified, service.stats().cpuFallbacks() - fallbacks,
                () -> "no fallback but unproven candidates: " + service.stats());
            assertTrue(service.stats().cpuFallbacksByReason().keySet().stream()
                    .allMatch(r -> r == FallbackReason.UNCERTIFIED_CANDIDATES || r.outOfBudget()),
                () -> "only the budget and unproven candidates sent searches to the CPU: " + service.stats());
          } finally {
            GpuSearchServices.uninstall(service);
          }
        }
      }
    }
  }

  /**
   * The same ivf_pq segments searched with their raw vectors on the device (device re-rank) and as their codes alone
   * (host re-rank). A filtered search (the filter accepts every document) searches each segment alone: the same hits
   * and scores in both forms. Unfiltered searches (one query at a time through the cross-segment pass, and batches)
   * re-rank on the host only the best candidates over all segments ({@code RerankCut}) where the device re-ranks
   * each segment's own: where the cut dropped candidates, the host's hits have exact scores and are nearly the
   * device's; where it dropped none, they are the same.
   */
  @ParameterizedTest
  @EnumSource(value = VectorSimilarityFunction.class, names = {"EUCLIDEAN", "DOT_PRODUCT", "COSINE"})
  void ivfPqHostAndDeviceRerankGiveTheSameHits(VectorSimilarityFunction sim) throws IOException {
    GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
    Random random = new Random(80 + sim.ordinal());
    try (Directory dir = FSDirectory.open(tempDir.resolve("pq-" + sim))) {
      List<float[]> vectors =
          index(dir, sim, IndexType.IVF_PQ, Map.of(IndexParams.NLIST, 16, IndexParams.PQ_M, 16), random);
      float[][] queries = queries(random, sim);
      // per form (device, host): single searches, batches, filtered single searches
      List<List<List<List<GpuVectorsFormatTests.Hit>>>> byForm = new ArrayList<>();
      long cut = 0;
      for (boolean onDevice : new boolean[] {true, false}) {
        try (DirectoryReader reader = DirectoryReader.open(dir);
            GpuSearchService service = GpuSearchService.create(
                GpuSearchService.Settings.builder().ivfPqRerankOnGpu(onDevice).build())) {
          GpuSearchServices.install(service);
          try {
            for (var leaf : reader.leaves()) {
              assertNotNull(KnnBatchSearcher.gpuVectorsReader(leaf.reader(), "vec").ivfPqField("vec"),
                  "every segment has its ivf_pq structure");
            }
            IndexSearcher searcher = new IndexSearcher(reader);
            List<List<GpuVectorsFormatTests.Hit>> single = search(searcher, queries, null);
            TopDocs[] batched = KnnBatchSearcher.search(searcher, "vec", queries, K, null);
            List<List<GpuVectorsFormatTests.Hit>> batch = new ArrayList<>();
            for (TopDocs topDocs : batched) {
              batch.add(hits(searcher, topDocs));
            }
            List<List<GpuVectorsFormatTests.Hit>> filtered = search(searcher, queries, new FieldExistsQuery("vec"));
            byForm.add(List.of(single, batch, filtered));
            String mode = onDevice ? "device re-rank" : "host re-rank";
            assertEquals(0, service.stats().cpuFallbacks(), () -> mode + ": every search on the GPU: " + service.stats());
            assertTrue((onDevice ? service.stats().deviceRerankQueries() : service.stats().hostRerankQueries()) > 0,
                () -> mode + ": " + service.stats());
            assertEquals(0, onDevice ? service.stats().hostRerankQueries() : service.stats().deviceRerankQueries(),
                () -> mode + ": " + service.stats());
            DeviceBytes parts = service.residentBytesByPart();
            assertEquals(service.residentBytes(), parts.total(), parts::toString);
            assertEquals(onDevice, parts.get(MemoryPart.VECTORS) > 0, () -> mode + ": raw vectors in " + parts);
            cut = service.stats().rerankCutCandidates();
          } finally {
            GpuSearchServices.uninstall(service);
          }
        }
      }
      List<List<List<GpuVectorsFormatTests.Hit>>> device = byForm.get(0);
      List<List<List<GpuVectorsFormatTests.Hit>>> host = byForm.get(1);
      for (int q = 0; q < QUERIES; q++) {
        assertSameHits(device.get(2).get(q), host.get(2).get(q)); // filtered: ids in order, scores within 1e-5
      }
      for (int path = 0; path < 2; path++) {
        if (cut == 0) {
          for (int q = 0; q < QUERIES; q++) {
            assertSameHits(device.get(path).get(q), host.get(path).get(q));
          }
          continue;
        }
        long same = 0;
        for (int q = 0; q < QUERIES; q++) {
          List<Integer> deviceIds = device.get(path).get(q).stream().map(GpuVectorsFormatTests.Hit::id).toList();
          for (GpuVectorsFormatTests.Hit hit : host.get(path).get(q)) {
            assertEquals(sim.compare(queries[q], vectors.get(hit.id())), hit.score(), 1e-5f, "exact score of " + hit);
            same += deviceIds.contains(hit.id()) ? 1 : 0;
          }
        }
        double overlap = same / (double) (QUERIES * K);
        assertTrue(overlap >= 0.9, (path == 0 ? "single" : "batch") + ": host hits among the device's: " + overlap);
      }
    }
  }

  /** Exact search: the brute force's ids (the scores of both are checked within FP32 summation error). */
  private static void assertSameIds(List<GpuVectorsFormatTests.Hit> exact, List<GpuVectorsFormatTests.Hit> found) {
    assertEquals(exact.stream().map(GpuVectorsFormatTests.Hit::id).sorted().toList(),
        found.stream().map(GpuVectorsFormatTests.Hit::id).sorted().toList(), () -> exact + "\n" + found);
    for (int i = 0; i < exact.size(); i++) {
      assertEquals(exact.get(i).score(), found.get(i).score(), 1e-5f, "score of rank " + i);
    }
  }

  private static List<List<GpuVectorsFormatTests.Hit>> search(IndexSearcher searcher, float[][] queries)
      throws IOException {
    return search(searcher, queries, null);
  }

  private static List<List<GpuVectorsFormatTests.Hit>> search(IndexSearcher searcher, float[][] queries, Query filter)
      throws IOException {
    List<List<GpuVectorsFormatTests.Hit>> found = new ArrayList<>();
    for (float[] query : queries) {
      // a fresh array a search, as Elasticsearch makes one a request
      found.add(hits(searcher, searcher.search(new KnnFloatVectorQuery("vec", query.clone(), K, filter), K)));
    }
    return found;
  }

  /** SEGMENTS segments of SEGMENT_DOCS random vectors (id = position), never merged; returns them by id. */
  private static List<float[]> index(Directory dir, VectorSimilarityFunction sim, IndexType type,
      Map<String, Integer> params, Random random) throws IOException {
    List<float[]> vectors = new ArrayList<>();
    // structures in segments of any size: the default threshold would keep these small segments flat
    IndexWriterConfig config = new IndexWriterConfig()
        .setCodec(TestUtil.alwaysKnnVectorsFormat(new GpuVectorsFormat(0))).setMergePolicy(NoMergePolicy.INSTANCE);
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (int id = 0; id < SEGMENTS * SEGMENT_DOCS; id++) {
        float[] v = vector(random, sim);
        vectors.add(v);
        Document doc = new Document();
        doc.add(new StoredField("id", id));
        doc.add(new KnnFloatVectorField("vec", v,
            GpuVectorsFormat.markField(KnnFloatVectorField.createFieldType(DIMS, sim), new IndexParams(type, params))));
        writer.addDocument(doc);
        if (id % SEGMENT_DOCS == SEGMENT_DOCS - 1) {
          writer.commit();
        }
      }
    }
    return vectors;
  }

  private static float[][] queries(Random random, VectorSimilarityFunction sim) {
    float[][] queries = new float[QUERIES][];
    for (int q = 0; q < QUERIES; q++) {
      queries[q] = vector(random, sim);
    }
    return queries;
  }

  private static float[] vector(Random random, VectorSimilarityFunction sim) {
    float[] v = new float[DIMS];
    for (int d = 0; d < DIMS; d++) {
      v[d] = random.nextFloat() * 2 - 1;
    }
    if (sim != VectorSimilarityFunction.EUCLIDEAN) {
      VectorUtil.l2normalize(v);
    }
    return v;
  }
}
