package org.gpuvectors.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.function.IntPredicate;
import java.util.stream.Stream;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.codecs.KnnVectorsReader;
import org.apache.lucene.codecs.lucene104.Lucene104Codec;
import org.apache.lucene.codecs.perfield.PerFieldKnnVectorsFormat;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnByteVectorField;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.CodecReader;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.LogDocMergePolicy;
import org.apache.lucene.index.SegmentReader;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnByteVectorQuery;
import org.apache.lucene.search.KnnCollector;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopKnnCollector;
import org.apache.lucene.search.TotalHits;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Searches through {@link GpuVectorsCodec} checked against a brute-force oracle that computes the
 * score formulas by hand (not through {@link VectorSimilarityFunction}), plus routing, corruption
 * and index-type validation.
 */
class GpuVectorsFormatTests {

  private static final int DIMS = 16;
  private static final String GPU_FIELD = "gpu";
  private static final String HNSW_FIELD = "hnsw";

  @TempDir Path tempDir;

  private final Random random = new Random(42);

  // ---- oracle ---------------------------------------------------------------------------------

  /** Elasticsearch's / Lucene's score formulas, written out by hand. */
  static float oracleScore(VectorSimilarityFunction sim, float[] a, float[] b) {
    double dot = 0, l2 = 0, na = 0, nb = 0;
    for (int i = 0; i < a.length; i++) {
      dot += (double) a[i] * b[i];
      double d = (double) a[i] - b[i];
      l2 += d * d;
      na += (double) a[i] * a[i];
      nb += (double) b[i] * b[i];
    }
    return (float)
        switch (sim) {
          case EUCLIDEAN -> 1 / (1 + l2);
          case DOT_PRODUCT -> Math.max((1 + dot) / 2, 0);
          case COSINE -> Math.max((1 + dot / Math.sqrt(na * nb)) / 2, 0);
          case MAXIMUM_INNER_PRODUCT -> dot < 0 ? 1 / (1 - dot) : dot + 1;
        };
  }

  static float oracleScore(VectorSimilarityFunction sim, byte[] a, byte[] b) {
    long dot = 0, l2 = 0;
    for (int i = 0; i < a.length; i++) {
      dot += a[i] * b[i];
      long d = a[i] - b[i];
      l2 += d * d;
    }
    return (float)
        switch (sim) {
          case EUCLIDEAN -> 1 / (1 + (double) l2);
          // bytes are not unit vectors: Lucene scales the dot product by the largest possible one
          case DOT_PRODUCT -> 0.5 + dot / (double) (a.length * (1 << 15));
          default -> throw new AssertionError("not used by these tests: " + sim);
        };
  }

  record Hit(int id, float score) {}

  /** Exact top k over the accepted ids, best first, ties by id. */
  static List<Hit> oracleTopK(
      List<float[]> vectors, float[] query, VectorSimilarityFunction sim, int k, IntPredicate ok) {
    List<Hit> hits = new ArrayList<>();
    for (int id = 0; id < vectors.size(); id++) {
      if (vectors.get(id) != null && ok.test(id)) {
        hits.add(new Hit(id, oracleScore(sim, vectors.get(id), query)));
      }
    }
    hits.sort(Comparator.comparingDouble((Hit h) -> -h.score()).thenComparingInt(Hit::id));
    return hits.subList(0, Math.min(k, hits.size()));
  }

  static void assertSameHits(List<Hit> expected, List<Hit> actual) {
    assertEquals(
        expected.stream().map(Hit::id).toList(),
        actual.stream().map(Hit::id).toList(),
        () -> "expected " + expected + "\nactual   " + actual);
    for (int i = 0; i < expected.size(); i++) {
      assertEquals(expected.get(i).score(), actual.get(i).score(), 1e-5f, "score of hit " + i);
    }
  }

  static List<Hit> hits(IndexSearcher searcher, TopDocs topDocs) throws IOException {
    StoredFields stored = searcher.storedFields();
    List<Hit> hits = new ArrayList<>();
    for (ScoreDoc sd : topDocs.scoreDocs) {
      int id = stored.document(sd.doc).getField("id").numericValue().intValue();
      hits.add(new Hit(id, sd.score));
    }
    return hits;
  }

  // ---- indexing helpers -----------------------------------------------------------------------

  float[] randomVector(boolean unit) {
    float[] v = new float[DIMS];
    double norm = 0;
    for (int i = 0; i < DIMS; i++) {
      v[i] = random.nextFloat() * 2 - 1;
      norm += v[i] * v[i];
    }
    if (unit) {
      for (int i = 0; i < DIMS; i++) {
        v[i] /= (float) Math.sqrt(norm);
      }
    }
    return v;
  }

  List<float[]> randomVectors(int n, boolean unit) {
    List<float[]> vectors = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      vectors.add(randomVector(unit));
    }
    return vectors;
  }

  static FieldType gpuFieldType(VectorSimilarityFunction sim) {
    return GpuVectorsFormat.markField(KnnFloatVectorField.createFieldType(DIMS, sim), IndexType.FLAT);
  }

  static IndexWriterConfig config(Codec codec, int maxBufferedDocs) {
    LogDocMergePolicy mergePolicy = new LogDocMergePolicy();
    mergePolicy.setNoCFSRatio(0); // keep our files visible in the directory
    return new IndexWriterConfig()
        .setCodec(codec)
        .setUseCompoundFile(false)
        .setMergePolicy(mergePolicy)
        .setMaxBufferedDocs(maxBufferedDocs);
  }

  static Document doc(int id, FieldType gpuType, float[] gpuVector, float[] hnswVector) {
    Document doc = new Document();
    doc.add(new StoredField("id", id));
    doc.add(new StringField("sid", Integer.toString(id), Field.Store.NO));
    doc.add(new StringField("parity", id % 2 == 0 ? "even" : "odd", Field.Store.NO));
    if (gpuVector != null) {
      doc.add(new KnnFloatVectorField(GPU_FIELD, gpuVector, gpuType));
    }
    if (hnswVector != null) {
      doc.add(new KnnFloatVectorField(HNSW_FIELD, hnswVector, VectorSimilarityFunction.EUCLIDEAN));
    }
    return doc;
  }

  /** Indexes the vectors in segments of {@code segmentSize} docs (null = no vector). */
  void index(Directory dir, Codec codec, VectorSimilarityFunction sim, List<float[]> vectors, int segmentSize)
      throws IOException {
    FieldType type = gpuFieldType(sim);
    try (IndexWriter writer = new IndexWriter(dir, config(codec, segmentSize))) {
      for (int id = 0; id < vectors.size(); id++) {
        writer.addDocument(doc(id, type, vectors.get(id), vectors.get(id)));
      }
      writer.commit();
    }
  }

  // ---- search tests ---------------------------------------------------------------------------

  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void allSimilaritiesMatchOracle(VectorSimilarityFunction sim) throws IOException {
    boolean unit = sim == VectorSimilarityFunction.DOT_PRODUCT;
    List<float[]> vectors = randomVectors(300, unit);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, new GpuVectorsCodec(), sim, vectors, 100);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertTrue(reader.leaves().size() > 1, "several segments");
        IndexSearcher searcher = new IndexSearcher(reader);
        for (int q = 0; q < 5; q++) {
          float[] query = randomVector(unit);
          int k = 1 + random.nextInt(20);
          TopDocs td = searcher.search(new KnnFloatVectorQuery(GPU_FIELD, query, k), k);
          assertSameHits(oracleTopK(vectors, query, sim, k, id -> true), hits(searcher, td));
        }
      }
    }
  }

  @Test
  void byteVectorsMatchOracle() throws IOException {
    for (VectorSimilarityFunction sim :
        List.of(VectorSimilarityFunction.EUCLIDEAN, VectorSimilarityFunction.DOT_PRODUCT)) {
      List<byte[]> vectors = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        byte[] v = new byte[DIMS];
        random.nextBytes(v);
        vectors.add(v);
      }
      FieldType type =
          GpuVectorsFormat.markField(KnnByteVectorField.createFieldType(DIMS, sim), IndexType.FLAT);
      Path path = tempDir.resolve(sim.name());
      try (Directory dir = FSDirectory.open(path)) {
        try (IndexWriter writer = new IndexWriter(dir, config(new GpuVectorsCodec(), 70))) {
          for (int id = 0; id < vectors.size(); id++) {
            Document doc = new Document();
            doc.add(new StoredField("id", id));
            doc.add(new KnnByteVectorField(GPU_FIELD, vectors.get(id), type));
            writer.addDocument(doc);
          }
        }
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader);
          byte[] query = new byte[DIMS];
          random.nextBytes(query);
          int k = 10;
          TopDocs td = searcher.search(new KnnByteVectorQuery(GPU_FIELD, query, k), k);
          List<Hit> expected = new ArrayList<>();
          for (int id = 0; id < vectors.size(); id++) {
            expected.add(new Hit(id, oracleScore(sim, vectors.get(id), query)));
          }
          expected.sort(Comparator.comparingDouble((Hit h) -> -h.score()).thenComparingInt(Hit::id));
          List<Hit> actual = hits(searcher, td);
          // byte scores tie easily: compare scores, and ids where the score is unique
          for (int i = 0; i < k; i++) {
            assertEquals(expected.get(i).score(), actual.get(i).score(), 1e-6f, sim + " hit " + i);
          }
        }
      }
    }
  }

  @Test
  void filterAndDeletionsAndForceMerge() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = randomVectors(400, false);
    for (int i = 7; i < vectors.size(); i += 13) {
      vectors.set(i, null); // some documents without a vector
    }
    Set<Integer> deleted = new HashSet<>();
    try (Directory dir = FSDirectory.open(tempDir)) {
      FieldType type = gpuFieldType(sim);
      try (IndexWriter writer = new IndexWriter(dir, config(new GpuVectorsCodec(), 90))) {
        for (int id = 0; id < vectors.size(); id++) {
          writer.addDocument(doc(id, type, vectors.get(id), null));
        }
        writer.commit();
        for (int id = 3; id < vectors.size(); id += 5) {
          writer.deleteDocuments(new Term("sid", Integer.toString(id)));
          deleted.add(id);
        }
        writer.commit();
        try (DirectoryReader reader = DirectoryReader.open(writer)) {
          assertTrue(reader.leaves().size() > 1);
          assertTrue(reader.hasDeletions());
          checkFilteredSearches(reader, vectors, deleted, sim);
        }
        writer.forceMerge(1);
        try (DirectoryReader reader = DirectoryReader.open(writer)) {
          assertEquals(1, reader.leaves().size());
          LeafReader leaf = reader.leaves().get(0).reader();
          long expectedCount =
              java.util.stream.IntStream.range(0, vectors.size())
                  .filter(id -> vectors.get(id) != null && deleted.contains(id) == false)
                  .count();
          assertEquals(expectedCount, leaf.getFloatVectorValues(GPU_FIELD).size());
          checkFilteredSearches(reader, vectors, deleted, sim);
        }
      }
    }
  }

  private void checkFilteredSearches(
      DirectoryReader reader, List<float[]> vectors, Set<Integer> deleted, VectorSimilarityFunction sim)
      throws IOException {
    IndexSearcher searcher = new IndexSearcher(reader);
    for (int q = 0; q < 5; q++) {
      float[] query = randomVector(false);
      int k = 5 + random.nextInt(10);
      TopDocs td = searcher.search(new KnnFloatVectorQuery(GPU_FIELD, query, k), k);
      assertSameHits(
          oracleTopK(vectors, query, sim, k, id -> deleted.contains(id) == false),
          hits(searcher, td));

      // a filter matching many more docs than k, so that the codec's search runs
      Query filter = new TermQuery(new Term("parity", "even"));
      td = searcher.search(new KnnFloatVectorQuery(GPU_FIELD, query, k, filter), k);
      assertSameHits(
          oracleTopK(vectors, query, sim, k, id -> id % 2 == 0 && deleted.contains(id) == false),
          hits(searcher, td));
    }
  }

  @Test
  void kLargerThanNumberOfDocs() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.COSINE;
    List<float[]> vectors = randomVectors(20, false);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, new GpuVectorsCodec(), sim, vectors, 100);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        float[] query = randomVector(false);
        TopDocs td = searcher.search(new KnnFloatVectorQuery(GPU_FIELD, query, 100), 100);
        assertEquals(20, td.scoreDocs.length);
        assertSameHits(oracleTopK(vectors, query, sim, 100, id -> true), hits(searcher, td));

        // and straight through the reader, with and without accept docs
        LeafReader leaf = reader.leaves().get(0).reader();
        TopDocs direct =
            leaf.searchNearestVectors(GPU_FIELD, query, 100, null, Integer.MAX_VALUE);
        assertEquals(20, direct.scoreDocs.length);
        direct =
            leaf.searchNearestVectors(
                GPU_FIELD, query, 100, AcceptDocs.fromLiveDocs(null, leaf.maxDoc()), Integer.MAX_VALUE);
        assertEquals(20, direct.scoreDocs.length);
        assertEquals(TotalHits.Relation.EQUAL_TO, direct.totalHits.relation());
      }
    }
  }

  @Test
  void visitLimitTerminatesEarly() throws IOException {
    List<float[]> vectors = randomVectors(200, false);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, new GpuVectorsCodec(), VectorSimilarityFunction.EUCLIDEAN, vectors, 1000);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        CodecReader leaf = (CodecReader) reader.leaves().get(0).reader();
        KnnVectorsReader vectorsReader = leaf.getVectorReader();
        float[] query = randomVector(false);
        AcceptDocs all = AcceptDocs.fromLiveDocs(null, leaf.maxDoc());

        TopKnnCollector limited = new TopKnnCollector(10, 25);
        vectorsReader.search(GPU_FIELD, query, limited, all);
        assertTrue(limited.earlyTerminated());
        assertEquals(25, limited.visitedCount());
        assertEquals(TotalHits.Relation.GREATER_THAN_OR_EQUAL_TO, limited.topDocs().totalHits.relation());

        TopKnnCollector unlimited = new TopKnnCollector(10, Integer.MAX_VALUE);
        vectorsReader.search(GPU_FIELD, query, unlimited, all);
        assertFalse(unlimited.earlyTerminated());
        assertEquals(200, unlimited.visitedCount());
        assertEquals(10, unlimited.topDocs().scoreDocs.length);
      }
    }
  }

  @Test
  void batchSearchEqualsSingleSearches() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT;
    List<float[]> vectors = randomVectors(150, false);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, new GpuVectorsCodec(), sim, vectors, 1000);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        LeafReader leaf = reader.leaves().get(0).reader();
        FloatVectorValues values = leaf.getFloatVectorValues(GPU_FIELD);
        FlatExactSearcher searcher =
            new FlatExactSearcher(
                org.apache.lucene.codecs.hnsw.FlatVectorScorerUtil.getLucene99FlatVectorsScorer(), sim);
        float[][] queries = {randomVector(false), randomVector(false), randomVector(false)};
        KnnCollector[] batch = new KnnCollector[queries.length];
        for (int q = 0; q < queries.length; q++) {
          batch[q] = new TopKnnCollector(q == 1 ? 7 : 5, q == 2 ? 40 : Integer.MAX_VALUE);
        }
        searcher.search(values, queries, batch, null);
        int[][] batchDocs = new int[queries.length][];
        for (int q = 0; q < queries.length; q++) {
          KnnCollector single = new TopKnnCollector(batch[q].k(), (int) batch[q].visitLimit());
          searcher.search(values, queries[q], single, null);
          batchDocs[q] = docs(batch[q].topDocs()); // topDocs() empties the collector
          assertArrayEquals(docs(single.topDocs()), batchDocs[q]);
          assertEquals(single.visitedCount(), batch[q].visitedCount());
        }
        assertEquals(40, batch[2].visitedCount());
        // the unlimited ones are exact
        List<Hit> expected = oracleTopK(vectors, queries[1], sim, 7, id -> true);
        int[] expectedDocs = expected.stream().mapToInt(Hit::id).toArray(); // single segment, doc == id
        assertArrayEquals(expectedDocs, batchDocs[1]);
      }
    }
  }

  private static int[] docs(TopDocs td) {
    return Arrays.stream(td.scoreDocs).mapToInt(sd -> sd.doc).toArray();
  }

  // ---- routing ----------------------------------------------------------------------------------

  private static String formatOf(LeafReader leaf, String field) {
    FieldInfo info = leaf.getFieldInfos().fieldInfo(field);
    return info.getAttribute(PerFieldKnnVectorsFormat.PER_FIELD_FORMAT_KEY);
  }

  private List<String> files(String extension) throws IOException {
    try (Stream<Path> files = Files.list(tempDir)) {
      return files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith("." + extension)).toList();
    }
  }

  @Test
  void routingByAttributeOnFlushAndMerge() throws IOException {
    List<float[]> vectors = randomVectors(250, false);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, new GpuVectorsCodec(), VectorSimilarityFunction.EUCLIDEAN, vectors, 60);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertTrue(reader.leaves().size() > 1);
        for (LeafReaderContext ctx : reader.leaves()) {
          assertEquals(GpuVectorsFormat.NAME, formatOf(ctx.reader(), GPU_FIELD));
          assertEquals("flat", ctx.reader().getFieldInfos().fieldInfo(GPU_FIELD).getAttribute(GpuVectorsFormat.INDEX_TYPE_ATTRIBUTE));
          assertEquals("Lucene99HnswVectorsFormat", formatOf(ctx.reader(), HNSW_FIELD));
          assertEquals(GpuVectorsCodec.NAME, ((SegmentReader) ctx.reader()).getSegmentInfo().info.getCodec().getName());
        }
      }
      assertEquals(files("gvm").size(), files("gvd").size());
      assertTrue(files("gvm").size() > 1, "one meta file per segment: " + files("gvm"));
      assertTrue(files("gvm").stream().allMatch(n -> n.contains("_" + GpuVectorsFormat.NAME + "_")));
      assertFalse(files("vex").isEmpty(), "HNSW graph files for the untagged field");

      try (IndexWriter writer = new IndexWriter(dir, config(new GpuVectorsCodec(), 60))) {
        writer.forceMerge(1);
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(1, reader.leaves().size());
        LeafReader leaf = reader.leaves().get(0).reader();
        assertEquals(GpuVectorsFormat.NAME, formatOf(leaf, GPU_FIELD));
        assertEquals("Lucene99HnswVectorsFormat", formatOf(leaf, HNSW_FIELD));
        assertEquals(1, files("gvm").size());
        IndexSearcher searcher = new IndexSearcher(reader);
        float[] query = randomVector(false);
        TopDocs td = searcher.search(new KnnFloatVectorQuery(GPU_FIELD, query, 10), 10);
        assertSameHits(
            oracleTopK(vectors, query, VectorSimilarityFunction.EUCLIDEAN, 10, id -> true),
            hits(searcher, td));
        assertEquals(10, searcher.search(new KnnFloatVectorQuery(HNSW_FIELD, query, 10), 10).scoreDocs.length);
      }
    }
  }

  @Test
  void wrappedCodecKeepsDelegateName() throws IOException {
    Codec delegate = new Lucene104Codec();
    Codec wrapped = GpuVectorsCodec.wrap(delegate);
    assertEquals(delegate.getName(), wrapped.getName());
    assertSame(wrapped, GpuVectorsCodec.wrap(wrapped));
    List<float[]> vectors = randomVectors(120, false);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, wrapped, VectorSimilarityFunction.DOT_PRODUCT, normalize(vectors), 50);
      // read back with no knowledge of our codec: Lucene104 by name, our format by SPI
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        for (LeafReaderContext ctx : reader.leaves()) {
          assertEquals("Lucene104", ((SegmentReader) ctx.reader()).getSegmentInfo().info.getCodec().getName());
          assertEquals(GpuVectorsFormat.NAME, formatOf(ctx.reader(), GPU_FIELD));
          assertEquals("Lucene99HnswVectorsFormat", formatOf(ctx.reader(), HNSW_FIELD));
        }
        IndexSearcher searcher = new IndexSearcher(reader);
        float[] query = normalize(List.of(randomVector(false))).get(0);
        TopDocs td = searcher.search(new KnnFloatVectorQuery(GPU_FIELD, query, 10), 10);
        assertSameHits(
            oracleTopK(normalize(vectors), query, VectorSimilarityFunction.DOT_PRODUCT, 10, id -> true),
            hits(searcher, td));
      }
      // merging with the wrapped codec keeps the routing
      try (IndexWriter writer = new IndexWriter(dir, config(wrapped, 50))) {
        writer.forceMerge(1);
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        LeafReader leaf = reader.leaves().get(0).reader();
        assertEquals(GpuVectorsFormat.NAME, formatOf(leaf, GPU_FIELD));
        assertEquals("Lucene99HnswVectorsFormat", formatOf(leaf, HNSW_FIELD));
      }
    }
  }

  private static List<float[]> normalize(List<float[]> vectors) {
    List<float[]> out = new ArrayList<>();
    for (float[] v : vectors) {
      float[] n = v.clone();
      double norm = 0;
      for (float x : n) {
        norm += x * x;
      }
      for (int i = 0; i < n.length; i++) {
        n[i] /= (float) Math.sqrt(norm);
      }
      out.add(n);
    }
    return out;
  }

  @Test
  void routingFormatUnwrapsPerFieldDelegate() {
    Codec lucene = new Lucene104Codec();
    GpuVectorsRoutingFormat routing = GpuVectorsRoutingFormat.routing(lucene.knnVectorsFormat());
    // no field info in context: the delegate's choice, never a nested per-field format
    assertEquals("Lucene99HnswVectorsFormat", routing.getKnnVectorsFormatForField("x").getName());
    GpuVectorsRoutingFormat nested = new GpuVectorsRoutingFormat(f -> lucene.knnVectorsFormat());
    assertThrows(IllegalStateException.class, () -> nested.getKnnVectorsFormatForField("x"));
  }

  // ---- index types ------------------------------------------------------------------------------

  @Test
  void indexTypeNamesAndCodes() {
    for (IndexType type : IndexType.values()) {
      assertSame(type, IndexType.fromName(type.typeName()));
      assertSame(type, IndexType.fromCode(type.code()));
    }
    assertEquals(0, IndexType.FLAT.code());
    assertEquals(1, IndexType.IVF_FLAT.code());
    assertEquals(2, IndexType.IVF_PQ.code());
    assertEquals(3, IndexType.PQT.code());
    assertEquals(4, IndexType.GRAPH.code());
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> IndexType.fromName("hnsw"));
    assertEquals(
        "unknown index type [hnsw]; valid types are [flat], [ivf_flat], [ivf_pq], [pqt], [graph]",
        e.getMessage());
    FieldType marked = gpuFieldType(VectorSimilarityFunction.EUCLIDEAN);
    assertEquals("flat", marked.getAttributes().get(GpuVectorsFormat.INDEX_TYPE_ATTRIBUTE));
    assertTrue(marked.isFrozen());
  }

  @Test
  void unsupportedIndexTypeIsRejected() throws IOException {
    FieldType pqt =
        GpuVectorsFormat.markField(
            KnnFloatVectorField.createFieldType(DIMS, VectorSimilarityFunction.EUCLIDEAN), IndexType.PQT);
    assertRejected(pqt, "index type [pqt] is not implemented yet; available types are [flat], [ivf_flat], [ivf_pq], [graph]");

    // parameters arrive as attributes and are checked again here (a mapping layer may not be there)
    FieldType badNlist = new FieldType(KnnFloatVectorField.createFieldType(DIMS, VectorSimilarityFunction.EUCLIDEAN));
    badNlist.putAttribute(GpuVectorsFormat.INDEX_TYPE_ATTRIBUTE, "ivf_flat");
    badNlist.putAttribute(IndexParams.ATTRIBUTE_PREFIX + IndexParams.NLIST, "0");
    assertRejected(badNlist, "[nlist] must be in [1, 65536] but was [0]");
    FieldType notANumber = new FieldType(KnnFloatVectorField.createFieldType(DIMS, VectorSimilarityFunction.EUCLIDEAN));
    notANumber.putAttribute(GpuVectorsFormat.INDEX_TYPE_ATTRIBUTE, "ivf_flat");
    notANumber.putAttribute(IndexParams.ATTRIBUTE_PREFIX + IndexParams.NPROBE, "many");
    assertRejected(notANumber, "[nprobe] must be an integer but was [many]");

    FieldType unknown = new FieldType(KnnFloatVectorField.createFieldType(DIMS, VectorSimilarityFunction.EUCLIDEAN));
    unknown.putAttribute(GpuVectorsFormat.INDEX_TYPE_ATTRIBUTE, "hnsw");
    assertRejected(unknown, "unknown index type [hnsw]; valid types are [flat], [ivf_flat]");
  }

  private int rejections;

  private void assertRejected(FieldType type, String expectedMessage) throws IOException {
    try (Directory dir = FSDirectory.open(tempDir.resolve("rejected-" + rejections++));
        IndexWriter writer = new IndexWriter(dir, config(new GpuVectorsCodec(), 10))) {
      Document doc = new Document();
      doc.add(new KnnFloatVectorField(GPU_FIELD, randomVector(false), type));
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> writer.addDocument(doc));
      assertTrue(
          e.getMessage().contains(expectedMessage), () -> "message was: " + e.getMessage());
      assertTrue(e.getMessage().contains("[" + GPU_FIELD + "]"), () -> "message was: " + e.getMessage());
      // a rejected field is a document failure, not a tragedy for the writer
      assertNull(writer.getTragicException());
      Document other = new Document();
      other.add(new StoredField("id", 1));
      writer.addDocument(other);
      assertThrows(IllegalArgumentException.class, () -> writer.addDocument(doc));
      writer.commit();
      writer.forceMerge(1);
      try (DirectoryReader reader = DirectoryReader.open(writer)) {
        assertEquals(1, reader.numDocs());
        FloatVectorValues values = reader.leaves().get(0).reader().getFloatVectorValues(GPU_FIELD);
        assertTrue(values == null || values.size() == 0);
      }
    }
  }

  // ---- corruption -------------------------------------------------------------------------------

  private Path onlyFile(String extension) throws IOException {
    List<String> names = files(extension);
    assertEquals(1, names.size(), () -> "files: " + names);
    return tempDir.resolve(names.get(0));
  }

  private static void flipByte(Path file, long position) throws IOException {
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      long pos = position < 0 ? raf.length() + position : position;
      raf.seek(pos);
      int b = raf.read();
      raf.seek(pos);
      raf.write(b ^ 0x5A);
    }
  }

  private void indexOneSegment() throws IOException {
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, new GpuVectorsCodec(), VectorSimilarityFunction.EUCLIDEAN, randomVectors(50, false), 1000);
    }
  }

  @Test
  void corruptMetaFileFailsOnOpen() throws IOException {
    indexOneSegment();
    Path meta = onlyFile("gvm");
    flipByte(meta, Files.size(meta) / 2);
    try (Directory dir = FSDirectory.open(tempDir)) {
      assertThrows(CorruptIndexException.class, () -> DirectoryReader.open(dir).close());
    }
  }

  @Test
  void corruptDataHeaderFailsOnOpen() throws IOException {
    indexOneSegment();
    flipByte(onlyFile("gvd"), 8); // inside the codec name of the header
    try (Directory dir = FSDirectory.open(tempDir)) {
      assertThrows(CorruptIndexException.class, () -> DirectoryReader.open(dir).close());
    }
  }

  @Test
  void corruptDataChecksumFailsIntegrityCheck() throws IOException {
    indexOneSegment();
    flipByte(onlyFile("gvd"), -1); // lowest byte of the stored CRC
    try (Directory dir = FSDirectory.open(tempDir);
        DirectoryReader reader = DirectoryReader.open(dir)) {
      CodecReader leaf = (CodecReader) reader.leaves().get(0).reader();
      // searching still works; the checksum is only verified on demand
      assertNotNull(leaf.getFloatVectorValues(GPU_FIELD));
      CorruptIndexException e =
          assertThrows(CorruptIndexException.class, () -> leaf.getVectorReader().checkIntegrity());
      assertTrue(e.getMessage().contains("checksum failed"), e.getMessage());
    }
  }

  @Test
  void missingFieldReturnsNothing() throws IOException {
    indexOneSegment();
    try (Directory dir = FSDirectory.open(tempDir);
        DirectoryReader reader = DirectoryReader.open(dir)) {
      LeafReader leaf = reader.leaves().get(0).reader();
      assertNull(leaf.getFloatVectorValues("nope"));
    }
  }
}
