package org.gpuvectors.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnByteVectorField;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.LogDocMergePolicy;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnByteVectorQuery;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.apache.lucene.tests.util.TestUtil;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.cuda.GpuAvailability;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every element type under every index type it allows, through Lucene: clustered documents flushed in several
 * segments under an index sort (the flush's sortMap), searched, some deleted, force-merged (a merge's build), more
 * deleted, searched again. Against a brute-force oracle computed here from the vectors given (bfloat16: as read
 * back), with the score formulas written out by hand: {@code flat} returns the oracle's top k (the same scores rank by
 * rank, every hit scored exactly; ids may differ only among ties, which Hamming scores have many of); the approximate
 * types score every hit exactly and find at least 95 % of the oracle's top 10 at num_candidates 100, also under a
 * filter. The segments must hold the structure of their type: nothing may quietly stay flat. Where a GPU is usable
 * (the GPU machine requires one), every segment's search must be served there, with no CPU fallback.
 */
class ElementTypeIndexTests {

  private static final String FIELD = "v";
  private static final int DIMS = 64; // bit: 8 bytes
  private static final int DOCS = 3000;
  private static final int PER_SEGMENT = 1000;
  private static final int MIN_VECTORS = 500;
  private static final int CLUSTERS = 30;
  private static final int QUERIES = 20;
  private static final int CANDIDATES = 100;
  private static final int K = 10;

  static Stream<Arguments> cases() {
    List<Arguments> cases = new ArrayList<>();
    for (ElementType element : ElementType.values()) {
      for (IndexType index : List.of(IndexType.FLAT, IndexType.IVF_FLAT, IndexType.IVF_PQ, IndexType.GRAPH)) {
        if (element == ElementType.BIT && index == IndexType.IVF_PQ) {
          continue; // refused: testBitRefusesIvfPq
        }
        for (VectorSimilarityFunction sim : similarities(element)) {
          cases.add(Arguments.of(element, index, sim));
        }
      }
    }
    return cases.stream();
  }

  private static List<VectorSimilarityFunction> similarities(ElementType element) {
    return switch (element) {
      case FLOAT, BFLOAT16 -> List.of(VectorSimilarityFunction.COSINE);
      case BYTE -> List.of(VectorSimilarityFunction.values());
      case BIT -> List.of(VectorSimilarityFunction.EUCLIDEAN);
    };
  }

  @ParameterizedTest(name = "{0} {1} {2}")
  @MethodSource("cases")
  void searchesFlushedSortedMergedAndDeleted(ElementType element, IndexType index, VectorSimilarityFunction sim)
      throws IOException {
    Data data = new Data(element, sim, new Random(31L * element.ordinal() + index.code()));
    FieldType type = GpuVectorsFormat.markField(data.fieldType(), new IndexParams(index, Map.of()), element);
    Set<Integer> deleted = new HashSet<>();
    try (Directory dir = new ByteBuffersDirectory()) {
      IndexWriterConfig config = new IndexWriterConfig()
          .setCodec(GpuVectorsCodec.wrap(TestUtil.getDefaultCodec(), new GpuVectorsFormat(MIN_VECTORS)))
          .setMaxBufferedDocs(PER_SEGMENT)
          .setMergePolicy(mergeOnlyWhenForced())
          .setIndexSort(new Sort(new SortField("rank", SortField.Type.LONG)));
      try (IndexWriter writer = new IndexWriter(dir, config)) {
        Random order = new Random(7);
        for (int id = 0; id < DOCS; id++) {
          Document doc = new Document();
          doc.add(new StoredField("id", id));
          doc.add(new StringField("sid", Integer.toString(id), Field.Store.NO));
          doc.add(new StringField("parity", id % 2 == 0 ? "even" : "odd", Field.Store.NO));
          doc.add(new NumericDocValuesField("rank", order.nextLong())); // the sort renumbers every flush
          doc.add(data.field(id, type));
          writer.addDocument(doc);
        }
        writer.commit();
        check(dir, data, index, deleted, DOCS / PER_SEGMENT);

        for (int id = 3; id < DOCS; id += 10) {
          writer.deleteDocuments(new Term("sid", Integer.toString(id)));
          deleted.add(id);
        }
        writer.forceMerge(1);
        writer.commit();
        check(dir, data, index, deleted, 1);

        for (int id = 7; id < DOCS; id += 10) { // live docs of the merged segment
          writer.deleteDocuments(new Term("sid", Integer.toString(id)));
          deleted.add(id);
        }
        writer.commit();
        check(dir, data, index, deleted, 1);
      }
    }
  }

  /** Merges nothing until the test force-merges (so that the flushed segments are searched first). */
  private static LogDocMergePolicy mergeOnlyWhenForced() {
    LogDocMergePolicy policy = new LogDocMergePolicy();
    policy.setMergeFactor(1000);
    return policy;
  }

  private void check(Directory dir, Data data, IndexType index, Set<Integer> deleted, int segments)
      throws IOException {
    try (DirectoryReader reader = DirectoryReader.open(dir)) {
      assertEquals(segments, reader.leaves().size(), "segments");
      for (LeafReaderContext leaf : reader.leaves()) {
        assertStructure(leaf.reader(), index);
      }
      data.readBack(reader);
      IndexSearcher searcher = new IndexSearcher(reader);
      // where a GPU is usable (and on the GPU machine, where one is required) every segment is searched there
      GpuSearchService service = GpuSearchServices.current();
      boolean onGpu = GpuAvailability.get().available() || GpuTestSupport.gpuRequired();
      if (onGpu) {
        GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
        assertTrue(service.gpuActive(), () -> "GPU usable but the GPU path is not active: " + service.unusableReason());
        service.setEnabled(true);
      }
      Query even = new TermQuery(new Term("parity", "even"));
      double found = 0;
      double wanted = 0;
      for (int q = 0; q < QUERIES; q++) {
        Object query = data.query();
        for (boolean filtered : new boolean[] {false, true}) {
          List<Hit> oracle = data.oracle(query, deleted, filtered);
          long gpuBefore = service.stats().gpuSearches();
          long fallbacksBefore = service.stats().cpuFallbacks();
          List<Hit> got = data.search(searcher, query, filtered ? even : null);
          if (onGpu) {
            // at least one a segment: Lucene searches a segment again when its first, smaller per-segment k was
            // competitive (optimistic collection); a search the CPU ran instead would be missing or a fallback
            assertTrue(service.stats().gpuSearches() - gpuBefore >= segments,
                () -> "a GPU search a segment at least: " + service.stats());
            assertEquals(fallbacksBefore, service.stats().cpuFallbacks(), () -> "no CPU fallback: " + service.stats());
          }
          if (index == IndexType.FLAT) {
            assertEquals(Math.min(CANDIDATES, oracle.size()), got.size(), "hits");
          } else { // the lists probed or the beam may hold fewer than num_candidates accepted vectors
            assertTrue(got.size() >= K, "hits: " + got.size());
          }
          assertEquals(got.size(), got.stream().map(Hit::id).distinct().count(), "no id twice");
          for (Hit hit : got) {
            assertTrue(deleted.contains(hit.id()) == false, "deleted doc " + hit.id() + " returned");
            assertTrue(!filtered || hit.id() % 2 == 0, "filtered out doc " + hit.id() + " returned");
            assertEquals(data.score(query, hit.id()), hit.score(), data.tolerance(), "exact score of doc " + hit.id());
          }
          if (index == IndexType.FLAT) {
            for (int i = 0; i < got.size(); i++) {
              assertEquals(oracle.get(i).score(), got.get(i).score(), data.tolerance(), "score at rank " + i);
            }
          }
          float tenth = oracle.get(K - 1).score();
          for (Hit hit : got.subList(0, K)) {
            found += hit.score() >= tenth - data.tolerance() ? 1 : 0; // ties of the tenth count as found
          }
          wanted += K;
        }
      }
      double recall = found / wanted;
      assertTrue(recall >= (index == IndexType.FLAT ? 1.0 : 0.95), "recall@10 " + recall);
    }
  }

  /** The segment holds its field's structure of {@code index} (a segment above the threshold is never flat). */
  private static void assertStructure(LeafReader leaf, IndexType index) {
    GpuVectorsReader reader = KnnBatchSearcher.gpuVectorsReader(leaf, FIELD);
    assertNotNull(reader, "read by GpuVectorsReader");
    switch (index) {
      case FLAT -> {
        assertNull(reader.ivfField(FIELD));
        assertNull(reader.graphField(FIELD));
        assertNull(reader.ivfPqField(FIELD));
      }
      case IVF_FLAT -> assertNotNull(reader.ivfField(FIELD), "ivf_flat lists");
      case IVF_PQ -> assertNotNull(reader.ivfPqField(FIELD), "ivf_pq lists");
      case GRAPH -> assertNotNull(reader.graphField(FIELD), "graph");
      default -> throw new AssertionError(index);
    }
  }

  record Hit(int id, float score) {}

  /** One case's clustered vectors, queries and oracle. */
  private static final class Data {
    final ElementType element;
    final VectorSimilarityFunction sim;
    final Random random;
    final Object[] centers = new Object[CLUSTERS];
    final Object[] vectors = new Object[DOCS];
    /** bfloat16: the vectors as the index holds them (read back), the oracle's input. */
    final float[][] stored = new float[DOCS][];

    Data(ElementType element, VectorSimilarityFunction sim, Random random) {
      this.element = element;
      this.sim = sim;
      this.random = random;
      for (int c = 0; c < CLUSTERS; c++) {
        centers[c] = center();
      }
      for (int id = 0; id < DOCS; id++) {
        vectors[id] = point();
      }
    }

    FieldType fieldType() {
      return switch (element) {
        case FLOAT, BFLOAT16 -> KnnFloatVectorField.createFieldType(DIMS, sim);
        case BYTE -> KnnByteVectorField.createFieldType(DIMS, sim);
        case BIT -> KnnByteVectorField.createFieldType(DIMS / 8, sim);
      };
    }

    Field field(int id, FieldType type) {
      return vectors[id] instanceof float[] f
          ? new KnnFloatVectorField(FIELD, f, type)
          : new KnnByteVectorField(FIELD, (byte[]) vectors[id], type);
    }

    private Object center() {
      return switch (element) {
        case FLOAT, BFLOAT16 -> {
          float[] c = new float[DIMS];
          for (int d = 0; d < DIMS; d++) {
            c[d] = random.nextFloat() * 2 - 1;
          }
          yield c;
        }
        case BYTE -> {
          byte[] c = new byte[DIMS];
          for (int d = 0; d < DIMS; d++) {
            c[d] = (byte) (random.nextInt(200) - 100);
          }
          yield c;
        }
        case BIT -> {
          byte[] c = new byte[DIMS / 8];
          random.nextBytes(c);
          yield c;
        }
      };
    }

    /** A point near a random center: Gaussian noise (float, byte), a bit flipped with probability 1/10 (bit). */
    Object point() {
      Object center = centers[random.nextInt(CLUSTERS)];
      return switch (element) {
        case FLOAT, BFLOAT16 -> {
          float[] c = (float[]) center;
          float[] v = new float[DIMS];
          for (int d = 0; d < DIMS; d++) {
            v[d] = c[d] + (float) random.nextGaussian() * 0.15f;
          }
          yield v;
        }
        case BYTE -> {
          byte[] c = (byte[]) center;
          byte[] v = new byte[DIMS];
          for (int d = 0; d < DIMS; d++) {
            v[d] = (byte) Math.max(-128, Math.min(127, c[d] + Math.round(random.nextGaussian() * 12)));
          }
          yield v;
        }
        case BIT -> {
          byte[] v = ((byte[]) center).clone();
          for (int bit = 0; bit < DIMS; bit++) {
            if (random.nextInt(10) == 0) {
              v[bit / 8] ^= (byte) (1 << (bit % 8));
            }
          }
          yield v;
        }
      };
    }

    Object query() {
      return point();
    }

    /**
     * bfloat16: reads the vectors back as the index holds them; each within bfloat16's precision of the vector given
     * (8 significant bits: a relative error of at most 2^-8).
     */
    void readBack(DirectoryReader reader) throws IOException {
      if (element != ElementType.BFLOAT16) {
        return;
      }
      for (LeafReaderContext leaf : reader.leaves()) {
        FloatVectorValues values = leaf.reader().getFloatVectorValues(FIELD);
        StoredFields fields = leaf.reader().storedFields();
        KnnVectorValues.DocIndexIterator it = values.iterator();
        for (int doc = it.nextDoc(); doc != KnnVectorValues.DocIndexIterator.NO_MORE_DOCS; doc = it.nextDoc()) {
          int id = fields.document(doc).getField("id").numericValue().intValue();
          float[] value = values.vectorValue(it.index()).clone();
          float[] given = (float[]) vectors[id];
          for (int d = 0; d < DIMS; d++) {
            assertEquals(given[d], value[d], Math.abs(given[d]) / 256 + 1e-30f, "dimension " + d + " of doc " + id);
          }
          stored[id] = value;
        }
      }
    }

    /** The score of doc {@code id} for {@code query}, by the formula of the element type and similarity. */
    float score(Object query, int id) {
      return switch (element) {
        case FLOAT -> floatScore((float[]) query, (float[]) vectors[id]);
        case BFLOAT16 -> floatScore((float[]) query, stored[id]);
        case BYTE -> byteScore((byte[]) query, (byte[]) vectors[id]);
        case BIT -> hammingScore((byte[]) query, (byte[]) vectors[id]);
      };
    }

    float tolerance() {
      return element == ElementType.FLOAT || element == ElementType.BFLOAT16 ? 1e-5f : 1e-6f;
    }

    private float floatScore(float[] a, float[] b) {
      return GpuVectorsFormatTests.oracleScore(sim, a, b);
    }

    /**
     * Lucene's byte scores: 1 / (1 + squared L2); dot product scaled by the largest possible one, 0.5 + dot / (dims
     * 2^15); (1 + cosine) / 2; for maximum inner product, dot + 1 (or 1 / (1 - dot) below 0).
     */
    private float byteScore(byte[] a, byte[] b) {
      long dot = 0;
      long l2 = 0;
      long na = 0;
      long nb = 0;
      for (int i = 0; i < a.length; i++) {
        dot += a[i] * b[i];
        long d = a[i] - b[i];
        l2 += d * d;
        na += a[i] * a[i];
        nb += b[i] * b[i];
      }
      return switch (sim) {
        case EUCLIDEAN -> 1 / (1 + (float) l2);
        case DOT_PRODUCT -> 0.5f + dot / (float) (a.length * (1 << 15));
        case COSINE -> (1 + (float) (dot / Math.sqrt((double) na * nb))) / 2;
        case MAXIMUM_INNER_PRODUCT -> dot < 0 ? 1 / (1 + -1 * (float) dot) : dot + 1;
      };
    }

    List<Hit> oracle(Object query, Set<Integer> deleted, boolean evenOnly) {
      List<Hit> hits = new ArrayList<>();
      for (int id = 0; id < DOCS; id++) {
        if (deleted.contains(id) == false && (evenOnly == false || id % 2 == 0)) {
          hits.add(new Hit(id, score(query, id)));
        }
      }
      hits.sort(Comparator.comparingDouble((Hit h) -> -h.score()).thenComparingInt(Hit::id));
      return hits.subList(0, Math.min(CANDIDATES, hits.size()));
    }

    List<Hit> search(IndexSearcher searcher, Object query, Query filter) throws IOException {
      Query knn = query instanceof float[] f
          ? new KnnFloatVectorQuery(FIELD, f, CANDIDATES, filter)
          : new KnnByteVectorQuery(FIELD, (byte[]) query, CANDIDATES, filter);
      TopDocs td = searcher.search(knn, CANDIDATES);
      StoredFields fields = searcher.storedFields();
      List<Hit> hits = new ArrayList<>();
      for (ScoreDoc sd : td.scoreDocs) {
        hits.add(new Hit(fields.document(sd.doc).getField("id").numericValue().intValue(), sd.score));
      }
      return hits;
    }
  }

  /**
   * Elasticsearch's score of bit vectors, by hand: the share of equal bits, {@code (bits - differing) / bits},
   * counting the differing bits one by one.
   */
  static float hammingScore(byte[] a, byte[] b) {
    int bits = a.length * 8;
    int differing = 0;
    for (int i = 0; i < a.length; i++) {
      for (int j = 0; j < 8; j++) {
        if (((a[i] >> j) & 1) != ((b[i] >> j) & 1)) {
          differing++;
        }
      }
    }
    return (bits - differing) / (float) bits;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("bitRefusals")
  void bitRefusesIvfPq(String how) throws IOException {
    FieldType bits = KnnByteVectorField.createFieldType(4, VectorSimilarityFunction.EUCLIDEAN);
    if (how.equals("markField")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> GpuVectorsFormat.markField(bits, new IndexParams(IndexType.IVF_PQ, Map.of()), ElementType.BIT));
      assertTrue(e.getMessage().contains("[ivf_pq] is not supported for element type [bit]"), e.getMessage());
      return;
    }
    // a field type tagged by hand, past markField: the writer refuses it too, failing only the document
    FieldType tagged = new FieldType(bits);
    new IndexParams(IndexType.IVF_PQ, Map.of()).putAttributes(tagged);
    tagged.putAttribute(GpuVectorsFormat.ELEMENT_TYPE_ATTRIBUTE, ElementType.BIT.attributeValue());
    tagged.freeze();
    try (Directory dir = new ByteBuffersDirectory();
        IndexWriter writer = new IndexWriter(dir, new IndexWriterConfig()
            .setCodec(GpuVectorsCodec.wrap(TestUtil.getDefaultCodec(), new GpuVectorsFormat(0))))) {
      Document doc = new Document();
      doc.add(new KnnByteVectorField(FIELD, new byte[] {1, 2, 3, 4}, tagged));
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> writer.addDocument(doc));
      assertTrue(e.getMessage().contains("[ivf_pq] is not supported for element type [bit]"), e.getMessage());
      assertTrue(e.getMessage().contains("field [" + FIELD + "]"), e.getMessage());
      Document ok = new Document();
      ok.add(new StringField("sid", "1", Field.Store.NO));
      writer.addDocument(ok); // the writer lives on
      writer.commit();
    }
  }

  /** A field whose element type attribute names no element type fails its documents, not the segment. */
  @org.junit.jupiter.api.Test
  void unknownElementTypeFailsTheDocumentOnly() throws IOException {
    FieldType tagged = new FieldType(KnnByteVectorField.createFieldType(4, VectorSimilarityFunction.EUCLIDEAN));
    new IndexParams(IndexType.GRAPH, Map.of()).putAttributes(tagged);
    tagged.putAttribute(GpuVectorsFormat.ELEMENT_TYPE_ATTRIBUTE, "int4");
    tagged.freeze();
    try (Directory dir = new ByteBuffersDirectory()) {
      try (IndexWriter writer = new IndexWriter(dir, new IndexWriterConfig()
          .setCodec(GpuVectorsCodec.wrap(TestUtil.getDefaultCodec(), new GpuVectorsFormat(0))))) {
        Document doc = new Document();
        doc.add(new KnnByteVectorField(FIELD, new byte[] {1, 2, 3, 4}, tagged));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> writer.addDocument(doc));
        assertTrue(e.getMessage().contains("unknown element type [int4]"), e.getMessage());
        Document ok = new Document();
        ok.add(new StringField("sid", "1", Field.Store.NO));
        writer.addDocument(ok);
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(1, reader.numDocs());
      }
    }
  }

  static Stream<String> bitRefusals() {
    return Stream.of("markField", "writer");
  }

  /**
   * Lucene searches a filter that accepts fewer documents than k exactly itself, scoring through the flat format's
   * {@code vectorValues.scorer(...)}, not through the reader's search: bit fields score by Hamming there too.
   */
  @org.junit.jupiter.api.Test
  void bitScoresAreHammingInLucenesOwnExactSearch() throws IOException {
    Data data = new Data(ElementType.BIT, VectorSimilarityFunction.EUCLIDEAN, new Random(3));
    FieldType type = GpuVectorsFormat.markField(data.fieldType(), new IndexParams(IndexType.GRAPH, Map.of()),
        ElementType.BIT);
    try (Directory dir = new ByteBuffersDirectory()) {
      try (IndexWriter writer = new IndexWriter(dir, new IndexWriterConfig()
          .setCodec(GpuVectorsCodec.wrap(TestUtil.getDefaultCodec(), new GpuVectorsFormat(0))))) {
        for (int id = 0; id < 200; id++) {
          Document doc = new Document();
          doc.add(new StoredField("id", id));
          doc.add(new StringField("few", id % 50 == 0 ? "yes" : "no", Field.Store.NO));
          doc.add(data.field(id, type));
          writer.addDocument(doc);
        }
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        byte[] query = (byte[]) data.query();
        List<Hit> got = data.search(new IndexSearcher(reader), query, new TermQuery(new Term("few", "yes")));
        assertEquals(4, got.size());
        for (Hit hit : got) {
          assertEquals(hammingScore(query, (byte[]) data.vectors[hit.id()]), hit.score(), "doc " + hit.id());
        }
        LeafReader leaf = reader.leaves().get(0).reader();
        var scorer = leaf.getByteVectorValues(FIELD).scorer(query);
        var it = scorer.iterator();
        StoredFields fields = leaf.storedFields();
        for (int doc = it.nextDoc(); doc != KnnVectorValues.DocIndexIterator.NO_MORE_DOCS; doc = it.nextDoc()) {
          int id = fields.document(doc).getField("id").numericValue().intValue();
          assertEquals(hammingScore(query, (byte[]) data.vectors[id]), scorer.score(), "doc " + id);
        }
      }
    }
  }

  /** The bit and bfloat16 flat files are written only for segments with fields of those types. */
  @org.junit.jupiter.api.Test
  void flatFilesOfAnElementTypeOnlyWhereItIsUsed() throws IOException {
    try (Directory dir = new ByteBuffersDirectory()) {
      IndexWriterConfig config = new IndexWriterConfig()
          .setUseCompoundFile(false)
          .setCodec(GpuVectorsCodec.wrap(TestUtil.getDefaultCodec(), new GpuVectorsFormat(0)));
      try (IndexWriter writer = new IndexWriter(dir, config)) {
        FieldType floats = GpuVectorsFormat.markField(
            KnnFloatVectorField.createFieldType(4, VectorSimilarityFunction.EUCLIDEAN), IndexType.FLAT);
        Document doc = new Document();
        doc.add(new KnnFloatVectorField("f", new float[] {1, 2, 3, 4}, floats));
        writer.addDocument(doc);
        writer.commit();
        assertTrue(Arrays.stream(dir.listAll()).noneMatch(f -> f.contains("_bit.") || f.contains("_bf16.")),
            Arrays.toString(dir.listAll()));
        FieldType bits = GpuVectorsFormat.markField(
            KnnByteVectorField.createFieldType(1, VectorSimilarityFunction.EUCLIDEAN),
            new IndexParams(IndexType.FLAT, Map.of()), ElementType.BIT);
        doc = new Document();
        doc.add(new KnnByteVectorField("b", new byte[] {5}, bits));
        writer.addDocument(doc);
        writer.commit();
        assertTrue(Arrays.stream(dir.listAll()).anyMatch(f -> f.endsWith("_bit.vec")), Arrays.toString(dir.listAll()));
        assertTrue(Arrays.stream(dir.listAll()).noneMatch(f -> f.contains("_bf16.")), Arrays.toString(dir.listAll()));
        FieldType bfloat16 = GpuVectorsFormat.markField(
            KnnFloatVectorField.createFieldType(4, VectorSimilarityFunction.EUCLIDEAN),
            new IndexParams(IndexType.FLAT, Map.of()), ElementType.BFLOAT16);
        doc = new Document();
        doc.add(new KnnFloatVectorField("h", new float[] {1, 2, 3, 1.00390625f}, bfloat16));
        writer.addDocument(doc);
        writer.commit();
        assertTrue(Arrays.stream(dir.listAll()).anyMatch(f -> f.endsWith("_bf16.vecbf")), Arrays.toString(dir.listAll()));
        writer.forceMerge(1);
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(3, reader.numDocs());
        LeafReader leaf = reader.leaves().get(0).reader();
        assertEquals(1, leaf.getByteVectorValues("b").size());
        FloatVectorValues halves = leaf.getFloatVectorValues("h");
        // 1 + 2^-8 is halfway between two bfloat16 values: rounded to the even one, 1
        assertArrayEquals(new float[] {1, 2, 3, 1}, halves.vectorValue(0));
        GpuVectorsReader ours = KnnBatchSearcher.gpuVectorsReader(leaf, "h");
        assertEquals(Map.of("vec", 8L), ours.getOffHeapByteSize(leaf.getFieldInfos().fieldInfo("h")),
            "two bytes a dimension");
      }
    }
  }
}
