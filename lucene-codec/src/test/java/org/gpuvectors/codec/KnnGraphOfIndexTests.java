package org.gpuvectors.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.KnnByteVectorField;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.codec.gpu.FakeBackend;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.cuda.GpuAvailability;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link KnnGraphOfIndex} against a brute-force oracle over the test's own vectors (by an id doc
 * value): several segments of two vectors formats, deletions, documents without vectors, a segment
 * smaller than k, and k larger than the index; on the CPU, on a {@link FakeBackend} "device", and on
 * the real GPU on the GPU machine. Bad arguments are refused with a message naming the problem.
 */
class KnnGraphOfIndexTests {

  private static final int DIMS = 8;

  @TempDir Path tempDir;
  private final Random random = new Random(0x9a4f);
  private GpuSearchService installed;

  @AfterEach
  void uninstall() {
    if (installed != null) {
      GpuSearchServices.uninstall(installed);
      installed.close();
    }
  }

  private void install(GpuSearchService service) {
    installed = service;
    GpuSearchServices.install(service);
  }

  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void cpuMatchesTheOracle(VectorSimilarityFunction similarity) throws IOException {
    install(GpuSearchService.create(new GpuSearchService.Settings(GpuSearchService.Mode.FALSE, 0, 0.5, 64)));
    try (Directory dir = FSDirectory.open(tempDir)) {
      Map<Integer, float[]> vectors = index(dir, similarity);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertTrue(reader.leaves().size() >= 4, "several segments: " + reader.leaves().size());
        for (int k : new int[] {1, 5, 10, 500}) {
          check(reader, vectors, similarity, k, 0);
        }
      }
    }
  }

  @Test
  void deviceMatchesTheOracle() throws IOException {
    FakeBackend device = new FakeBackend(1L << 30);
    install(GpuSearchService.withBackend(device, new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 1.0, 1024)));
    try (Directory dir = FSDirectory.open(tempDir)) {
      Map<Integer, float[]> vectors = index(dir, VectorSimilarityFunction.EUCLIDEAN);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        check(reader, vectors, VectorSimilarityFunction.EUCLIDEAN, 5, 0);
        assertTrue(device.nearestKCalls.get() > 0, "brute force on the device");
        assertTrue(installed.stats().gpuKnnGraphVectors() > 0, installed.stats().toString());
        assertEquals(0, installed.stats().cpuKnnGraphVectors(), installed.stats().toString());
        // k + 1 past the device's k-selection: the CPU computes it, counted as such
        check(reader, vectors, VectorSimilarityFunction.EUCLIDEAN, GpuSearchService.MAX_GPU_K, 0);
        assertTrue(installed.stats().cpuKnnGraphVectors() > 0, installed.stats().toString());
      }
    }
  }

  @Test
  void gpuMatchesTheOracle() throws IOException {
    GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
    GpuSearchService gpu = GpuSearchServices.current();
    try (Directory dir = FSDirectory.open(tempDir)) {
      Map<Integer, float[]> vectors = index(dir, VectorSimilarityFunction.COSINE);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        long before = gpu.stats().gpuKnnGraphVectors();
        // the device rounds differently: a near-tie at the k-th place may pick the other document
        check(reader, vectors, VectorSimilarityFunction.COSINE, 10, 2);
        assertTrue(gpu.stats().gpuKnnGraphVectors() > before, "on the GPU: " + gpu.stats());
      }
    }
  }

  @Test
  void badArgumentsAreRefused() throws IOException {
    install(GpuSearchService.create(new GpuSearchService.Settings(GpuSearchService.Mode.FALSE, 0, 0.5, 64)));
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, VectorSimilarityFunction.EUCLIDEAN);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        refused("k must be at least 1 but was [0]", () -> KnnGraphOfIndex.compute(reader, "vec", 0));
        refused("field [nope] does not exist in this index", () -> KnnGraphOfIndex.compute(reader, "nope", 3));
        refused("field [id] has no vectors", () -> KnnGraphOfIndex.compute(reader, "id", 3));
        refused(
            "field [bytes] holds BYTE vectors; the k-NN graph takes FLOAT32 vectors",
            () -> KnnGraphOfIndex.compute(reader, "bytes", 3));
        refused("maxDoc * k must fit in an array", () -> KnnGraphOfIndex.compute(reader, "vec", Integer.MAX_VALUE / 2));
      }
    }
  }

  private interface Call {
    void run() throws IOException;
  }

  private static void refused(String message, Call call) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
    assertTrue(e.getMessage().startsWith(message), "message [" + e.getMessage() + "] should start with [" + message + "]");
  }

  /**
   * Indexes 4 segments: 60 documents (GPU format), 3 (GPU format, smaller than k), 40 of which every
   * 4th has no vector (GPU format), 30 (Lucene's default format, with a byte vector field); deletes
   * some of each. Returns the vectors by id.
   */
  private Map<Integer, float[]> index(Directory dir, VectorSimilarityFunction similarity) throws IOException {
    Map<Integer, float[]> vectors = new HashMap<>();
    int id = 0;
    IndexWriterConfig ours = new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setMergePolicy(NoMergePolicy.INSTANCE);
    try (IndexWriter writer = new IndexWriter(dir, ours)) {
      for (int size : new int[] {60, 3, 40}) {
        for (int i = 0; i < size; i++, id++) {
          boolean withVector = size != 40 || i % 4 != 0;
          float[] v = withVector ? randomVector(similarity) : null;
          writer.addDocument(doc(id, v, similarity, true));
          if (v != null) {
            vectors.put(id, v);
          }
        }
        writer.commit();
      }
      writer.deleteDocuments(new Term("id_term", "5"), new Term("id_term", "61"), new Term("id_term", "70"));
      writer.commit();
    }
    IndexWriterConfig lucene = new IndexWriterConfig().setCodec(Codec.getDefault()).setMergePolicy(NoMergePolicy.INSTANCE);
    try (IndexWriter writer = new IndexWriter(dir, lucene)) {
      for (int i = 0; i < 30; i++, id++) {
        float[] v = randomVector(similarity);
        Document doc = doc(id, v, similarity, false);
        doc.add(new KnnByteVectorField("bytes", new byte[] {1, 2, 3}, similarity));
        writer.addDocument(doc);
        vectors.put(id, v);
      }
      writer.deleteDocuments(new Term("id_term", "110"));
      writer.commit();
    }
    return vectors;
  }

  private static Document doc(int id, float[] v, VectorSimilarityFunction similarity, boolean gpuFormat) {
    Document doc = new Document();
    doc.add(new NumericDocValuesField("id", id));
    doc.add(new StringField("id_term", Integer.toString(id), Field.Store.NO));
    if (v != null) {
      var type = KnnFloatVectorField.createFieldType(DIMS, similarity);
      doc.add(new KnnFloatVectorField("vec", v, gpuFormat ? GpuVectorsFormat.markField(type, IndexType.FLAT) : type));
    }
    return doc;
  }

  private float[] randomVector(VectorSimilarityFunction similarity) {
    float[] v = new float[DIMS];
    for (int d = 0; d < DIMS; d++) {
      v[d] = random.nextFloat() * 2 - 1;
    }
    return similarity == VectorSimilarityFunction.DOT_PRODUCT ? VectorUtil.l2normalize(v) : v;
  }

  /**
   * Computes the graph and checks every document's row against brute force over the live documents
   * with vectors: the same documents in the same order with the same scores, except in up to
   * {@code nearTies} rows, whose documents may differ where the scores are within 1e-5 of each other.
   */
  private static void check(
      DirectoryReader reader, Map<Integer, float[]> byId, VectorSimilarityFunction similarity, int k, int nearTies)
      throws IOException {
    KnnGraphOfIndex graph = KnnGraphOfIndex.compute(reader, "vec", k);
    assertEquals(reader.maxDoc(), graph.maxDoc());
    assertEquals(k, graph.k());
    float[][] byDoc = liveVectors(reader, byId);
    int live = (int) Arrays.stream(byDoc).filter(v -> v != null).count();
    int differing = 0;
    for (int doc = 0; doc < reader.maxDoc(); doc++) {
      List<ScoreDoc> top = oracle(byDoc, doc, similarity, k);
      int[] expectedDocs = top.stream().mapToInt(s -> s.doc).toArray();
      float[] expectedScores = new float[top.size()];
      for (int i = 0; i < top.size(); i++) {
        expectedScores[i] = top.get(i).score;
      }
      assertEquals(byDoc[doc] == null ? 0 : Math.min(k, live - 1), expectedDocs.length);
      assertEquals(expectedDocs.length, graph.count(doc), "doc " + doc + ": neighbours");
      if (Arrays.equals(expectedDocs, graph.neighbors(doc)) == false) {
        differing++;
        assertTrue(differing <= nearTies, "doc " + doc + ": " + Arrays.toString(graph.neighbors(doc)) + " != "
            + Arrays.toString(expectedDocs) + ", scores " + Arrays.toString(graph.scores(doc)) + " vs "
            + Arrays.toString(expectedScores));
        float[] scores = graph.scores(doc);
        for (int i = 0; i < scores.length; i++) {
          assertEquals(expectedScores[i], scores[i], 1e-5f, "doc " + doc + " near-tie scores");
        }
        continue;
      }
      assertArrayEquals(expectedScores, graph.scores(doc), "doc " + doc + ": scores");
      TopDocs hits = graph.topDocs(doc);
      assertEquals(expectedDocs.length, hits.scoreDocs.length);
      for (int i = 0; i < expectedDocs.length; i++) {
        assertEquals(expectedDocs[i], hits.scoreDocs[i].doc);
        assertEquals(expectedScores[i], hits.scoreDocs[i].score);
      }
    }
  }

  /** Per global doc id its vector, for the live documents that have one (null for the others). */
  private static float[][] liveVectors(DirectoryReader reader, Map<Integer, float[]> byId) throws IOException {
    float[][] byDoc = new float[reader.maxDoc()][];
    for (LeafReaderContext leaf : reader.leaves()) {
      Bits liveDocs = leaf.reader().getLiveDocs();
      NumericDocValues ids = leaf.reader().getNumericDocValues("id");
      for (int doc = ids.nextDoc(); doc != NumericDocValues.NO_MORE_DOCS; doc = ids.nextDoc()) {
        float[] v = byId.get((int) ids.longValue());
        if (v != null && (liveDocs == null || liveDocs.get(doc))) {
          byDoc[leaf.docBase + doc] = v;
        }
      }
    }
    return byDoc;
  }

  /** Brute force: the k best other live documents of {@code doc}, best first (ties: lower doc); none without a vector. */
  private static List<ScoreDoc> oracle(float[][] byDoc, int doc, VectorSimilarityFunction similarity, int k) {
    List<ScoreDoc> all = new ArrayList<>();
    if (byDoc[doc] == null) {
      return all;
    }
    for (int other = 0; other < byDoc.length; other++) {
      if (other != doc && byDoc[other] != null) {
        all.add(new ScoreDoc(other, similarity.compare(byDoc[doc], byDoc[other])));
      }
    }
    all.sort(Comparator.comparingDouble((ScoreDoc s) -> -s.score).thenComparingInt(s -> s.doc));
    return new ArrayList<>(all.subList(0, Math.min(k, all.size())));
  }
}
