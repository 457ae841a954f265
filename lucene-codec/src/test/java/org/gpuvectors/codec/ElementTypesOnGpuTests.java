package org.gpuvectors.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.IntPredicate;
import java.util.stream.IntStream;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnByteVectorField;
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
import org.apache.lucene.search.KnnByteVectorQuery;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.codec.bf16.BFloat16;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.cuda.GpuAvailability;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Byte, bit and bfloat16 fields indexed through the format and searched with Lucene's own knn queries on a GPU: every
 * segment's search is counted on the device with no CPU fallback, and the hits are a brute force's over the same
 * vectors with the element type's own score (byte: Lucene's byte similarity; bit: {@code dense_vector}'s Hamming
 * score; bfloat16: the float similarity of the bf16-rounded vectors). Skipped without a GPU, failed on the GPU machine
 * when it has none.
 */
class ElementTypesOnGpuTests {

  private static final int DOCS = 1500;
  private static final int SEGMENT_DOCS = 500;

  @TempDir Path tempDir;

  @ParameterizedTest
  @CsvSource({
    "BYTE, EUCLIDEAN, 48", "BYTE, DOT_PRODUCT, 48", "BYTE, COSINE, 48", "BYTE, MAXIMUM_INNER_PRODUCT, 48",
    "BIT, EUCLIDEAN, 16", "BIT, EUCLIDEAN, 96",
    "BFLOAT16, EUCLIDEAN, 40", "BFLOAT16, DOT_PRODUCT, 40", "BFLOAT16, COSINE, 40"
  })
  void knnQueriesOfEachElementTypeRunOnTheGpu(ElementType element, VectorSimilarityFunction sim, int luceneDims)
      throws IOException {
    GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
    GpuSearchService service = GpuSearchServices.current();
    assertTrue(service.gpuActive(), () -> "GPU usable but the GPU path is not active: " + service.unusableReason());
    service.setEnabled(true);
    Random random = new Random(38 + element.ordinal() * 7 + sim.ordinal());
    try (Directory dir = FSDirectory.open(tempDir.resolve(element + "-" + sim + "-" + luceneDims))) {
      List<Object> vectors = index(dir, element, sim, luceneDims, random);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        int leaves = reader.leaves().size();
        Query filter = new TermQuery(new Term("tag", "a"));
        for (int k : new int[] {1, 10, 100}) {
          for (Query f : new Query[] {null, filter}) {
            IntPredicate accepted = f == null ? id -> true : id -> id % 3 == 0;
            for (int q = 0; q < 5; q++) {
              Object query = randomVector(element, sim, luceneDims, random);
              long gpuBefore = service.stats().gpuSearches();
              long fallbacksBefore = service.stats().cpuFallbacks();
              Query knn = element.encoding() == org.apache.lucene.index.VectorEncoding.BYTE
                  ? new KnnByteVectorQuery("vec", (byte[]) query, k, f)
                  : new KnnFloatVectorQuery("vec", (float[]) query, k, f);
              TopDocs hits = searcher.search(knn, k);
              // at least one a segment (Lucene may search a segment twice: ElementTypeIndexTests)
              assertTrue(service.stats().gpuSearches() - gpuBefore >= leaves,
                  () -> "a GPU search a segment at least: " + service.stats());
              assertEquals(fallbacksBefore, service.stats().cpuFallbacks(), () -> "no CPU fallback: " + service.stats());
              assertSameAsBruteForce(searcher, hits, vectors, query, element, sim, k, accepted);
            }
          }
        }
      }
    }
  }

  /**
   * Batches of bfloat16 queries through {@link KnnBatchSearcher}: every segment's share goes to the pass at the
   * field's own size, with the brute force's hits (within float summation error).
   */
  @ParameterizedTest
  @CsvSource({"EUCLIDEAN", "DOT_PRODUCT", "COSINE"})
  void bfloat16BatchesRunOnTheGpu(VectorSimilarityFunction sim) throws IOException {
    GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
    GpuSearchService service = GpuSearchServices.current();
    assertTrue(service.gpuActive(), () -> "GPU usable but the GPU path is not active: " + service.unusableReason());
    service.setEnabled(true);
    Random random = new Random(16 + sim.ordinal());
    try (Directory dir = FSDirectory.open(tempDir.resolve("batch-" + sim))) {
      List<Object> vectors = index(dir, ElementType.BFLOAT16, sim, 40, random);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        float[][] queries = new float[16][];
        for (int q = 0; q < queries.length; q++) {
          queries[q] = (float[]) randomVector(ElementType.BFLOAT16, sim, 40, random);
        }
        for (int k : new int[] {1, 10, 100}) {
          long gpuBefore = service.stats().gpuSearches();
          long fallbacksBefore = service.stats().cpuFallbacks();
          TopDocs[] hits = KnnBatchSearcher.search(searcher, "vec", queries, k, null);
          assertTrue(service.stats().gpuSearches() - gpuBefore >= reader.leaves().size(),
              () -> "a GPU search a segment at least: " + service.stats());
          assertEquals(fallbacksBefore, service.stats().cpuFallbacks(), () -> "no CPU fallback: " + service.stats());
          for (int q = 0; q < queries.length; q++) {
            assertSameAsBruteForce(searcher, hits[q], vectors, queries[q], ElementType.BFLOAT16, sim, k, id -> true);
          }
        }
      }
    }
  }

  /** DOCS documents in segments of SEGMENT_DOCS: id, tag (a for every third), the vector; returns the vectors. */
  private static List<Object> index(Directory dir, ElementType element, VectorSimilarityFunction sim, int luceneDims,
      Random random) throws IOException {
    List<Object> vectors = new ArrayList<>();
    IndexWriterConfig config =
        new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setMergePolicy(NoMergePolicy.INSTANCE);
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (int id = 0; id < DOCS; id++) {
        Object v = randomVector(element, sim, luceneDims, random);
        vectors.add(v);
        Document doc = new Document();
        doc.add(new StoredField("id", id));
        doc.add(new StringField("tag", id % 3 == 0 ? "a" : "b", Field.Store.NO));
        doc.add(vectorField(element, sim, luceneDims, v));
        writer.addDocument(doc);
        if (id % SEGMENT_DOCS == SEGMENT_DOCS - 1) {
          writer.commit();
        }
      }
    }
    return vectors;
  }

  private static Object randomVector(ElementType element, VectorSimilarityFunction sim, int dims, Random random) {
    if (element.encoding() == org.apache.lucene.index.VectorEncoding.BYTE) {
      byte[] b = new byte[dims];
      for (int i = 0; i < dims; i++) {
        b[i] = element == ElementType.BIT ? (byte) random.nextInt(256) : (byte) (random.nextInt(41) - 20);
      }
      if (element == ElementType.BYTE && sim == VectorSimilarityFunction.COSINE) {
        b[0] = (byte) (1 + random.nextInt(20)); // cosine needs a non-zero vector
      }
      return b;
    }
    float[] v = new float[dims];
    for (int i = 0; i < dims; i++) {
      v[i] = (float) random.nextGaussian();
    }
    if (sim != VectorSimilarityFunction.EUCLIDEAN) {
      VectorUtil.l2normalize(v);
    }
    return v;
  }

  private static Field vectorField(ElementType element, VectorSimilarityFunction sim, int dims, Object v) {
    IndexParams flat = new IndexParams(IndexType.FLAT, Map.of());
    if (v instanceof byte[] b) {
      FieldType type = GpuVectorsFormat.markField(KnnByteVectorField.createFieldType(dims, sim), flat, element);
      return new KnnByteVectorField("vec", b, type);
    }
    FieldType type = GpuVectorsFormat.markField(KnnFloatVectorField.createFieldType(dims, sim), flat, element);
    return new KnnFloatVectorField("vec", (float[]) v, type);
  }

  /** The element type's own score, computed here from its definition. */
  private static float score(ElementType element, VectorSimilarityFunction sim, Object doc, Object query) {
    return switch (element) {
      case BYTE -> sim.compare((byte[]) doc, (byte[]) query);
      case BIT -> {
        int bits = ((byte[]) doc).length * Byte.SIZE;
        yield (bits - VectorUtil.xorBitCount((byte[]) doc, (byte[]) query)) / (float) bits;
      }
      case BFLOAT16 -> {
        float[] stored = ((float[]) doc).clone();
        BFloat16.roundInPlace(stored);
        yield sim.compare(stored, (float[]) query);
      }
      case FLOAT -> sim.compare((float[]) doc, (float[]) query);
    };
  }

  /**
   * Byte and bit: the brute force's ids and scores exactly (ties by lowest id, as Lucene keeps them). bfloat16: the
   * same scores rank by rank within float summation error, and every hit scores at least the brute force's k-th.
   */
  private static void assertSameAsBruteForce(IndexSearcher searcher, TopDocs hits, List<Object> vectors, Object query,
      ElementType element, VectorSimilarityFunction sim, int k, IntPredicate accepted) throws IOException {
    float[] scores = new float[vectors.size()];
    for (int id = 0; id < scores.length; id++) {
      scores[id] = score(element, sim, vectors.get(id), query);
    }
    int[] expected = IntStream.range(0, vectors.size()).filter(accepted).boxed()
        .sorted(Comparator.<Integer>comparingDouble(id -> -scores[id]).thenComparingInt(id -> id))
        .limit(k).mapToInt(Integer::intValue).toArray();
    int[] got = new int[hits.scoreDocs.length];
    for (int i = 0; i < got.length; i++) {
      ScoreDoc sd = hits.scoreDocs[i];
      got[i] = searcher.storedFields().document(sd.doc).getField("id").numericValue().intValue();
      if (element == ElementType.BFLOAT16) {
        assertEquals(scores[got[i]], sd.score, 1e-5f, "the score of the hit at rank " + i);
        assertEquals(scores[expected[i]], sd.score, 1e-5f, "the score at rank " + i);
      } else {
        assertEquals(scores[got[i]], sd.score, 0f, "the exact score of the hit at rank " + i);
      }
    }
    assertEquals(expected.length, got.length, "hits");
    if (element != ElementType.BFLOAT16) {
      assertArrayEquals(expected, got, "the brute force's ids, ties by lowest id");
    }
  }
}
