package org.gpuvectors.codec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.KnnByteVectorField;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TotalHits;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.tests.util.TestUtil;
import org.gpuvectors.codec.gpu.FakeBackend;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.index.ElementType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link KnnBatchSearcher}'s results, exactly, against a brute-force oracle over all documents: the
 * same doc ids in the same order with the same scores (and for flat fields the same total hits), on
 * the GPU path (a CPU double of the device) and on the CPU path. Vectors have small integer
 * coordinates, so every distance is exact in float on every path and equal scores are frequent:
 * documents in the second half repeat the vectors of the first (ties across segments, broken by
 * doc id as Lucene breaks them). Several segments, some documents without a vector, deletions, a
 * filter, and k above a segment's size.
 */
class KnnBatchSearcherTests {

  private static final int DIMS = 8;
  private static final int DOCS = 230;
  private static final int SEGMENT_DOCS = 40;

  @TempDir Path tempDir;
  private final Random random = new Random(0x6a7c4);

  /** Doc ids are positions (no merges); null where a document has no vector. */
  private float[][] index(Directory dir, IndexType type, VectorSimilarityFunction sim) throws IOException {
    return index(dir, type, sim, ElementType.FLOAT);
  }

  /** As {@link #index(Directory, IndexType, VectorSimilarityFunction)}, the field of the given element type. */
  private float[][] index(Directory dir, IndexType type, VectorSimilarityFunction sim, ElementType element)
      throws IOException {
    var fieldType = GpuVectorsFormat.markField(
        KnnFloatVectorField.createFieldType(DIMS, sim), new IndexParams(type, params(type)), element);
    float[][] vectors = new float[DOCS][];
    write(dir, id -> {
      float[] v = new float[DIMS];
      if (id >= DOCS / 2 && vectors[id - DOCS / 2] != null) {
        v = vectors[id - DOCS / 2].clone();
      } else {
        for (int d = 0; d < DIMS; d++) {
          v[d] = random.nextInt(3);
        }
      }
      vectors[id] = v;
      return new KnnFloatVectorField("vec", v, fieldType);
    });
    return vectors;
  }

  /** The mapping of each index type: lists in every segment, every list probed (exact). */
  private static Map<String, Integer> params(IndexType type) {
    return switch (type) {
      case FLAT -> Map.of();
      case IVF_FLAT -> Map.of(IndexParams.NLIST, 4, IndexParams.NPROBE, 4); // every list: exact
      case IVF_PQ -> Map.of(IndexParams.NLIST, 4, IndexParams.NPROBE, 4, IndexParams.PQ_M, 2);
      default -> throw new IllegalArgumentException(type.toString());
    };
  }

  /**
   * Writes {@link #DOCS} documents in segments of {@link #SEGMENT_DOCS}, doc id = position: each with an id and a
   * tag, all but every seventh with the vector field {@code vectorField} makes for it (called in id order); then
   * deletes every eleventh from id 3.
   */
  private static void write(Directory dir, IntFunction<Field> vectorField) throws IOException {
    IndexWriterConfig config = new IndexWriterConfig()
        .setCodec(TestUtil.alwaysKnnVectorsFormat(new GpuVectorsFormat(0))) // lists in every segment
        .setMergePolicy(NoMergePolicy.INSTANCE)
        .setMaxBufferedDocs(SEGMENT_DOCS);
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (int id = 0; id < DOCS; id++) {
        Document doc = new Document();
        doc.add(new StringField("id", Integer.toString(id), Field.Store.NO));
        doc.add(new StringField("tag", id % 3 == 1 ? "b" : "a", Field.Store.NO));
        if (id % 7 != 5) {
          doc.add(vectorField.apply(id));
        }
        writer.addDocument(doc);
      }
      for (int id = 3; id < DOCS; id += 11) {
        writer.deleteDocuments(new Term("id", Integer.toString(id)));
      }
    }
  }

  private static boolean live(int id) {
    return id % 11 != 3;
  }

  private record Hit(int doc, float score) {}

  /** The top k of the accepted documents with a vector: by score, equal scores by the lower doc id. */
  private static List<Hit> oracle(float[][] vectors, float[] query, VectorSimilarityFunction sim, int k, IntPredicate accepted) {
    List<Hit> all = new ArrayList<>();
    for (int doc = 0; doc < vectors.length; doc++) {
      if (vectors[doc] != null && accepted.test(doc)) {
        all.add(new Hit(doc, sim.compare(query, vectors[doc])));
      }
    }
    all.sort(Comparator.comparingDouble((Hit h) -> -h.score()).thenComparingInt(Hit::doc));
    return all.subList(0, Math.min(k, all.size()));
  }

  private static long acceptedCount(float[][] vectors, IntPredicate accepted) {
    long n = 0;
    for (int doc = 0; doc < vectors.length; doc++) {
      if (vectors[doc] != null && accepted.test(doc)) {
        n++;
      }
    }
    return n;
  }

  private float[][] queries(int n) {
    float[][] queries = new float[n][DIMS];
    for (float[] q : queries) {
      for (int d = 0; d < DIMS; d++) {
        q[d] = random.nextInt(3);
      }
    }
    return queries;
  }

  @Test
  void flatMatchesTheOracleExactly() throws IOException {
    check(IndexType.FLAT, VectorSimilarityFunction.EUCLIDEAN, true);
    check(IndexType.FLAT, VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT, true);
  }

  @Test
  void ivfFlatProbingEveryListMatchesTheOracleExactly() throws IOException {
    check(IndexType.IVF_FLAT, VectorSimilarityFunction.EUCLIDEAN, true);
    check(IndexType.IVF_FLAT, VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT, true);
  }

  /**
   * ivf_pq re-ranks the device's candidates by their raw vectors: with every list probed the double
   * device's candidates are the exact nearest, so the batch's hits are exact. (The CPU path ranks its
   * candidates by PQ distance first, so it is approximate: IvfPqTests cover its recall.)
   */
  @Test
  void ivfPqRerankedOnTheGpuPathMatchesTheOracleExactly() throws IOException {
    check(IndexType.IVF_PQ, VectorSimilarityFunction.EUCLIDEAN, false);
  }

  /**
   * A flat bfloat16 field's batches go through the pass at the field's own size (the element upload the single
   * searches use), with the oracle's hits: the small integer coordinates are exact in bfloat16.
   */
  @Test
  void flatBfloat16BatchesRunInThePassAtTheirOwnSize() throws IOException {
    FakeBackend backend = new FakeBackend(1L << 30);
    try (GpuSearchService service = GpuSearchService.withBackend(
        backend, new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 1.0, 1024))) {
      GpuSearchServices.install(service);
      try (Directory dir = FSDirectory.open(tempDir.resolve("bf16"))) {
        float[][] vectors = index(dir, IndexType.FLAT, VectorSimilarityFunction.EUCLIDEAN, ElementType.BFLOAT16);
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader);
          check(searcher, vectors, IndexType.FLAT, VectorSimilarityFunction.EUCLIDEAN, true, queries(9), service);
          assertEquals(reader.leaves().size(), backend.elementUploads.get(), "each segment uploaded at its own size");
          assertEquals(backend.elementUploads.get(), backend.uploads.get(), "and none as float");
        }
      } finally {
        GpuSearchServices.uninstall(service);
      }
    }
  }

  private void check(IndexType type, VectorSimilarityFunction sim, boolean cpuIsExact) throws IOException {
    FakeBackend backend = new FakeBackend(1L << 30);
    try (GpuSearchService service = GpuSearchService.withBackend(
        backend, new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 1.0, 1024))) {
      GpuSearchServices.install(service);
      try (Directory dir = FSDirectory.open(tempDir.resolve(type + "-" + sim))) {
        float[][] vectors = index(dir, type, sim);
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          assertTrue(reader.leaves().size() >= 5, "several segments");
          IndexSearcher searcher = new IndexSearcher(reader);
          // batches of every size class: one by one; the re-rank on the pool; conversion and merge on the
          // pool (these segments are too small for the ordinal-order re-rank: OrdinalOrderRerankTests)
          int large = Math.max(KnnBatchSearcher.PARALLEL_MERGE_QUERIES, GpuSegmentSearcher.PARALLEL_CONVERT_QUERIES) + 3;
          for (int numQueries : new int[] {5, GpuSegmentSearcher.PARALLEL_RERANK_QUERIES + 1, large}) {
            check(searcher, vectors, type, sim, cpuIsExact, queries(numQueries), service);
          }
        }
      } finally {
        GpuSearchServices.uninstall(service);
      }
    }
  }

  private void check(IndexSearcher searcher, float[][] vectors, IndexType type, VectorSimilarityFunction sim,
                     boolean cpuIsExact, float[][] queries, GpuSearchService service) throws IOException {
    Query tagA = new TermQuery(new Term("tag", "a"));
    for (int k : new int[] {1, 7, 50}) { // 50: above any segment's size
      for (Query filter : new Query[] {null, tagA}) {
        IntPredicate accepted = filter == null ? KnnBatchSearcherTests::live : id -> live(id) && id % 3 != 1;
        long fallbacks = service.stats().cpuFallbacks();
        TopDocs[] gpu = KnnBatchSearcher.search(searcher, "vec", queries, k, filter);
        assertEquals(fallbacks, service.stats().cpuFallbacks(), () -> "all on the device: " + service.stats());
        service.setEnabled(false);
        TopDocs[] cpu = KnnBatchSearcher.search(searcher, "vec", queries, k, filter);
        service.setEnabled(true);
        for (int q = 0; q < queries.length; q++) {
          List<Hit> expected = oracle(vectors, queries[q], sim, k, accepted);
          String where = type + " " + sim + " k=" + k + " filter=" + filter + " query " + q + " of " + queries.length;
          assertHits(expected, gpu[q], "GPU path, " + where);
          if (cpuIsExact) {
            assertHits(expected, cpu[q], "CPU path, " + where);
          }
          if (type == IndexType.FLAT) { // flat search visits every accepted vector
            TotalHits total = new TotalHits(acceptedCount(vectors, accepted), TotalHits.Relation.EQUAL_TO);
            assertEquals(total, gpu[q].totalHits, where);
            assertEquals(total, cpu[q].totalHits, where);
          }
        }
      }
    }
  }

  /**
   * With num_candidates above k every segment is searched for num_candidates and each query keeps the best k of
   * all: the first k hits of the search for num_candidates, with its total hits, on the GPU path and the CPU path
   * alike; and on the GPU path, where these index types are exact, the oracle's top k.
   */
  @Test
  void numCandidatesSearchesDeeperAndKeepsTheBestK() throws IOException {
    for (IndexType type : new IndexType[] {IndexType.FLAT, IndexType.IVF_FLAT, IndexType.IVF_PQ}) {
      VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
      try (GpuSearchService service = GpuSearchService.withBackend(
          new FakeBackend(1L << 30), new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 1.0, 1024));
           Directory dir = FSDirectory.open(tempDir.resolve("candidates-" + type))) {
        GpuSearchServices.install(service);
        try {
          float[][] vectors = index(dir, type, sim);
          try (DirectoryReader reader = DirectoryReader.open(dir)) {
            IndexSearcher searcher = new IndexSearcher(reader);
            float[][] queries = queries(KnnBatchSearcher.PARALLEL_MERGE_QUERIES + 5); // merged on the pool too
            for (boolean gpu : new boolean[] {true, false}) {
              service.setEnabled(gpu);
              for (int k : new int[] {1, 7}) {
                TopDocs[] deep = KnnBatchSearcher.search(searcher, "vec", queries, k, 30, null);
                TopDocs[] wide = KnnBatchSearcher.search(searcher, "vec", queries, 30, null);
                for (int q = 0; q < queries.length; q++) {
                  String where = type + (gpu ? " GPU" : " CPU") + " k=" + k + " query " + q;
                  assertEquals(wide[q].totalHits, deep[q].totalHits, where);
                  List<Hit> expected = new ArrayList<>();
                  for (int i = 0; i < Math.min(k, wide[q].scoreDocs.length); i++) {
                    expected.add(new Hit(wide[q].scoreDocs[i].doc, wide[q].scoreDocs[i].score));
                  }
                  assertHits(expected, deep[q], where);
                  if (gpu) {
                    assertHits(oracle(vectors, queries[q], sim, k, KnnBatchSearcherTests::live), deep[q], where);
                  }
                }
              }
            }
            service.setEnabled(true);
          }
        } finally {
          GpuSearchServices.uninstall(service);
        }
      }
    }
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> KnnBatchSearcher.search(null, "vec", queries(1), 10, 9, null));
    assertTrue(e.getMessage().contains("numCandidates must be at least k [10] but was [9]"), e.getMessage());
  }

  private static void assertHits(List<Hit> expected, TopDocs actual, String where) {
    List<Hit> hits = new ArrayList<>();
    for (var scoreDoc : actual.scoreDocs) {
      hits.add(new Hit(scoreDoc.doc, scoreDoc.score));
    }
    assertEquals(expected, hits, where);
  }

  /**
   * A byte field's batches: segments with lists (every list probed) answer in the pass, in the float view they were
   * built in and scored as bytes score, with the oracle's hits; flat segments answer query by query, with the same
   * hits (here on the CPU: the device double holds float vectors only; the GPU machine's ElementTypesOnGpuTests
   * cover flat byte searches on the device). Several segments, deletions, documents without a vector, a filter, k
   * above a segment's size.
   */
  @Test
  void byteBatchesMatchTheOracleExactly() throws IOException {
    for (IndexType type : new IndexType[] {IndexType.FLAT, IndexType.IVF_FLAT, IndexType.IVF_PQ}) {
      for (VectorSimilarityFunction sim : new VectorSimilarityFunction[] {
          VectorSimilarityFunction.EUCLIDEAN, VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT}) {
        FakeBackend backend = new FakeBackend(1L << 30);
        try (GpuSearchService service = GpuSearchService.withBackend(
            backend, new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 1.0, 1024))) {
          GpuSearchServices.install(service);
          try (Directory dir = FSDirectory.open(tempDir.resolve("byte-" + type + "-" + sim))) {
            byte[][] vectors = indexBytes(dir, type, sim);
            try (DirectoryReader reader = DirectoryReader.open(dir)) {
              assertTrue(reader.leaves().size() >= 5, "several segments");
              IndexSearcher searcher = new IndexSearcher(reader);
              service.setEnabled(type != IndexType.FLAT);
              byte[][] queries = byteQueries(GpuSegmentSearcher.PARALLEL_RERANK_QUERIES + 1);
              Query tagA = new TermQuery(new Term("tag", "a"));
              for (int k : new int[] {1, 7, 50}) {
                for (Query filter : new Query[] {null, tagA}) {
                  IntPredicate accepted = filter == null ? KnnBatchSearcherTests::live : id -> live(id) && id % 3 != 1;
                  long passes = service.stats().batches();
                  long fallbacks = service.stats().cpuFallbacks();
                  TopDocs[] hits = KnnBatchSearcher.search(searcher, "vec", queries, k, k, filter);
                  if (type != IndexType.FLAT) {
                    assertEquals(fallbacks, service.stats().cpuFallbacks(), () -> "none on the CPU: " + service.stats());
                    assertEquals(passes + 1, service.stats().batches(), "one pass for the whole batch");
                  }
                  for (int q = 0; q < queries.length; q++) {
                    assertHits(byteOracle(vectors, queries[q], sim, k, accepted), hits[q],
                        type + " " + sim + " k=" + k + " filter=" + filter + " query " + q);
                  }
                }
              }
            }
          } finally {
            GpuSearchServices.uninstall(service);
          }
        }
      }
    }
  }

  /** As {@link #index(Directory, IndexType, VectorSimilarityFunction)} for a byte field (a bytes row per doc). */
  private byte[][] indexBytes(Directory dir, IndexType type, VectorSimilarityFunction sim) throws IOException {
    var fieldType = GpuVectorsFormat.markField(
        KnnByteVectorField.createFieldType(DIMS, sim), new IndexParams(type, params(type)), ElementType.BYTE);
    byte[][] vectors = new byte[DOCS][];
    write(dir, id -> {
      byte[] v = id >= DOCS / 2 && vectors[id - DOCS / 2] != null ? vectors[id - DOCS / 2].clone() : byteRow();
      vectors[id] = v;
      return new KnnByteVectorField("vec", v, fieldType);
    });
    return vectors;
  }

  private byte[] byteRow() {
    byte[] v = new byte[DIMS];
    for (int d = 0; d < DIMS; d++) {
      v[d] = (byte) (random.nextInt(5) - 2);
    }
    return v;
  }

  private byte[][] byteQueries(int n) {
    byte[][] queries = new byte[n][];
    for (int q = 0; q < n; q++) {
      queries[q] = byteRow();
    }
    return queries;
  }

  /** The byte field's top k: as {@link #oracle}, scored as Lucene scores byte vectors. */
  private static List<Hit> byteOracle(byte[][] vectors, byte[] query, VectorSimilarityFunction sim, int k,
                                      IntPredicate accepted) {
    List<Hit> all = new ArrayList<>();
    for (int doc = 0; doc < vectors.length; doc++) {
      if (vectors[doc] != null && accepted.test(doc)) {
        all.add(new Hit(doc, sim.compare(query, vectors[doc])));
      }
    }
    all.sort(Comparator.comparingDouble((Hit h) -> -h.score()).thenComparingInt(Hit::doc));
    return all.subList(0, Math.min(k, all.size()));
  }

  @Test
  void aByteQueryOfTheWrongDimensionIsRefused() throws IOException {
    try (GpuSearchService service = GpuSearchService.withBackend(
        new FakeBackend(1L << 30), new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 1.0, 1024))) {
      GpuSearchServices.install(service);
      try (Directory dir = FSDirectory.open(tempDir.resolve("byte-dims"))) {
        indexBytes(dir, IndexType.IVF_FLAT, VectorSimilarityFunction.EUCLIDEAN);
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          byte[][] queries = {new byte[DIMS], new byte[DIMS + 1]};
          IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
              () -> KnnBatchSearcher.search(new IndexSearcher(reader), "vec", queries, 3, 3, null));
          assertTrue(e.getMessage().contains("dimension"), e.getMessage());
        }
      } finally {
        GpuSearchServices.uninstall(service);
      }
    }
  }

  @Test
  void aQueryOfTheWrongDimensionIsRefused() throws IOException {
    try (GpuSearchService service = GpuSearchService.withBackend(
        new FakeBackend(1L << 30), new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 1.0, 1024))) {
      GpuSearchServices.install(service);
      try (Directory dir = FSDirectory.open(tempDir.resolve("dims"))) {
        index(dir, IndexType.FLAT, VectorSimilarityFunction.EUCLIDEAN);
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          float[][] queries = {new float[DIMS], new float[DIMS + 1]};
          IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
              () -> KnnBatchSearcher.search(new IndexSearcher(reader), "vec", queries, 3, null));
          assertTrue(e.getMessage().contains("dimension"), e.getMessage());
        }
      } finally {
        GpuSearchServices.uninstall(service);
      }
    }
  }
}
