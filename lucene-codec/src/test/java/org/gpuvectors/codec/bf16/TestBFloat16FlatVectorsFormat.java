package org.gpuvectors.codec.bf16;

import static org.apache.lucene.search.DocIdSetIterator.NO_MORE_DOCS;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.codecs.KnnVectorsReader;
import org.apache.lucene.codecs.hnsw.DefaultFlatVectorScorer;
import org.apache.lucene.codecs.hnsw.FlatVectorScorerUtil;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.codecs.perfield.PerFieldKnnVectorsFormat;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.KnnByteVectorField;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.CodecReader;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.tests.index.BaseKnnVectorsFormatTestCase;
import org.apache.lucene.tests.util.TestUtil;
import org.apache.lucene.util.Bits;

/**
 * Lucene's conformance suite for vector formats, run against {@link BFloat16FlatVectorsFormat} through the
 * test-only {@link BruteForceBFloat16VectorsFormat} (a flat format has no search of its own).
 *
 * <p>Four of Lucene's tests compare the floats read back with the floats indexed, exactly or to 1e-5; bfloat16
 * keeps 8 significant bits, so they are overridden here with the same scenarios checked against the indexed
 * floats rounded to bfloat16 ({@link BFloat16#round}), exactly: {@link #testRandom}, {@link
 * #testRandomWithUpdatesAndGraph}, {@link #testSparseVectors} and {@link #testVectorValuesReportCorrectDocs}.
 */
public class TestBFloat16FlatVectorsFormat extends BaseKnnVectorsFormatTestCase {

  private static final String FIELD = "field";

  @Override
  protected Codec getCodec() {
    return TestUtil.alwaysKnnVectorsFormat(new BruteForceBFloat16VectorsFormat());
  }

  @Override
  protected boolean supportsFloatVectorFallback() {
    return false;
  }

  @Override
  public void testReadQuantizedVectorWithEmptyRawVectors() {
    assertFalse("the bfloat16 vectors are the only copy: nothing to fall back from", supportsFloatVectorFallback());
  }

  @Override
  public void testScoresUnchangedWithEmptyRawVectors() {
    assertFalse("the bfloat16 vectors are the only copy: nothing to fall back from", supportsFloatVectorFallback());
  }

  @Override
  protected boolean mergeIsStable() {
    // flat files with exact search: a merge changes no value and no score
    return true;
  }

  private static float[] rounded(float[] vector) {
    if (vector == null) {
      return null;
    }
    float[] copy = vector.clone();
    BFloat16.roundInPlace(copy);
    return copy;
  }

  /** Adds or replaces the document {@code id}, with {@code vector} (none when null) and a random sort key. */
  private static void index(IndexWriter writer, String field, int id, float[] vector, VectorSimilarityFunction sim)
      throws IOException {
    Document doc = new Document();
    if (vector != null) {
      doc.add(new KnnFloatVectorField(field, vector, sim));
    }
    doc.add(new NumericDocValuesField("sortkey", random().nextInt(100)));
    doc.add(new StringField("id", Integer.toString(id), Field.Store.YES));
    writer.updateDocument(new Term("id", Integer.toString(id)), doc);
  }

  /**
   * Every live document's vector reads back as {@code expected[id]} exactly, and those are all the non-null
   * expectations; returns the number of live vectors per leaf.
   */
  private static List<Integer> assertReadsBack(IndexReader reader, String field, float[][] expected)
      throws IOException {
    List<Integer> livePerLeaf = new ArrayList<>();
    int found = 0;
    for (LeafReaderContext ctx : reader.leaves()) {
      FloatVectorValues values = ctx.reader().getFloatVectorValues(field);
      int live = 0;
      if (values != null) {
        Bits liveDocs = ctx.reader().getLiveDocs();
        StoredFields stored = ctx.reader().storedFields();
        KnnVectorValues.DocIndexIterator it = values.iterator();
        for (int doc = it.nextDoc(); doc != NO_MORE_DOCS; doc = it.nextDoc()) {
          assertEquals(doc, values.ordToDoc(it.index()));
          if (liveDocs != null && liveDocs.get(doc) == false) {
            continue;
          }
          int id = Integer.parseInt(stored.document(doc).get("id"));
          assertArrayEquals("id=" + id + " doc=" + doc + " leaf=" + ctx.ord, expected[id],
              values.vectorValue(it.index()), 0f);
          live++;
        }
      }
      livePerLeaf.add(live);
      found += live;
    }
    assertEquals(Arrays.stream(expected).filter(v -> v != null).count(), found);
    return livePerLeaf;
  }

  /** Lucene's scenario (deletes, a reused input array, commits, sometimes index sorting), bfloat16 expectations. */
  @Override
  public void testRandom() throws Exception {
    IndexWriterConfig config = newIndexWriterConfig();
    if (random().nextBoolean()) {
      config.setIndexSort(new Sort(new SortField("sortkey", SortField.Type.INT)));
    }
    try (Directory dir = newDirectory();
        IndexWriter writer = new IndexWriter(dir, config)) {
      int numDocs = atLeast(100);
      int dims = atLeast(10);
      float[] reused = new float[dims];
      float[][] expected = new float[numDocs][];
      VectorSimilarityFunction sim = randomSimilarity();
      for (int id = 0; id < numDocs; id++) {
        float[] vector = random().nextInt(7) == 3 ? null : randomNormalizedVector(dims);
        expected[id] = rounded(vector);
        if (vector != null && random().nextBoolean()) {
          System.arraycopy(vector, 0, reused, 0, dims);
          index(writer, FIELD, id, reused, sim);
          Arrays.fill(reused, 0.5f); // the writer must have kept a copy
        } else {
          index(writer, FIELD, id, vector, sim);
        }
        if (random().nextInt(10) == 2) {
          int deleted = random().nextInt(id + 1);
          writer.deleteDocuments(new Term("id", Integer.toString(deleted)));
          expected[deleted] = null;
        }
        if (random().nextInt(10) == 3) {
          writer.commit();
        }
      }
      try (IndexReader reader = DirectoryReader.open(writer)) {
        assertReadsBack(reader, FIELD, expected);
      }
    }
  }

  /**
   * Lucene's scenario (documents replaced at random), bfloat16 expectations; and each leaf's exact search returns
   * the scores a brute force over the rounded vectors computes, best first.
   */
  @Override
  public void testRandomWithUpdatesAndGraph() throws Exception {
    try (Directory dir = newDirectory();
        IndexWriter writer = new IndexWriter(dir, newIndexWriterConfig())) {
      int numDocs = atLeast(100);
      int dims = atLeast(10);
      float[][] expected = new float[numDocs][];
      VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
      for (int i = 0; i < numDocs; i++) {
        int id = random().nextInt(numDocs);
        float[] vector = random().nextInt(7) == 3 ? null : randomNormalizedVector(dims);
        expected[id] = rounded(vector);
        index(writer, FIELD, id, vector, sim);
      }
      try (IndexReader reader = DirectoryReader.open(writer)) {
        List<Integer> livePerLeaf = assertReadsBack(reader, FIELD, expected);
        for (LeafReaderContext ctx : reader.leaves()) {
          int live = livePerLeaf.get(ctx.ord);
          if (live == 0) {
            continue;
          }
          float[] query = randomNormalizedVector(dims);
          int k = 1 + random().nextInt(Math.min(live, 10));
          LeafReader leaf = ctx.reader();
          TopDocs hits = leaf.searchNearestVectors(
              FIELD, query, k, AcceptDocs.fromLiveDocs(leaf.getLiveDocs(), leaf.maxDoc()), Integer.MAX_VALUE);
          float[] bruteForce = bruteForceScores(leaf, query, expected, sim);
          assertEquals(k, hits.scoreDocs.length);
          for (int i = 0; i < k; i++) {
            assertEquals("rank " + i, bruteForce[i], hits.scoreDocs[i].score, 0f);
          }
        }
      }
    }
  }

  /** The scores of the leaf's live documents with a vector, from their expected vectors, best first. */
  private static float[] bruteForceScores(LeafReader leaf, float[] query, float[][] expected,
      VectorSimilarityFunction sim) throws IOException {
    Bits liveDocs = leaf.getLiveDocs();
    StoredFields stored = leaf.storedFields();
    List<Float> scores = new ArrayList<>();
    for (int doc = 0; doc < leaf.maxDoc(); doc++) {
      if (liveDocs == null || liveDocs.get(doc)) {
        float[] vector = expected[Integer.parseInt(stored.document(doc).get("id"))];
        if (vector != null) {
          scores.add(sim.compare(query, vector));
        }
      }
    }
    scores.sort((a, b) -> Float.compare(b, a));
    float[] sorted = new float[scores.size()];
    for (int i = 0; i < sorted.length; i++) {
      sorted[i] = scores.get(i);
    }
    return sorted;
  }

  /** Lucene's scenario (several fields, each in about 1% of documents), checked vector by vector. */
  @Override
  public void testSparseVectors() throws Exception {
    int numDocs = atLeast(1000);
    int numFields = TestUtil.nextInt(random(), 1, 10);
    int[] dims = new int[numFields];
    VectorSimilarityFunction[] sims = new VectorSimilarityFunction[numFields];
    float[][][] expected = new float[numFields][numDocs][];
    for (int f = 0; f < numFields; f++) {
      dims[f] = 1 + random().nextInt(20);
      sims[f] = randomSimilarity();
    }
    try (Directory dir = newDirectory();
        IndexWriter writer = new IndexWriter(dir, newIndexWriterConfig())) {
      for (int id = 0; id < numDocs; id++) {
        Document doc = new Document();
        doc.add(new StringField("id", Integer.toString(id), Field.Store.YES));
        for (int f = 0; f < numFields; f++) {
          if (random().nextInt(100) == 17) {
            float[] vector = randomNormalizedVector(dims[f]);
            doc.add(new KnnFloatVectorField("f" + f, vector, sims[f]));
            expected[f][id] = rounded(vector);
          }
        }
        writer.addDocument(doc);
      }
      try (IndexReader reader = DirectoryReader.open(writer)) {
        for (int f = 0; f < numFields; f++) {
          assertReadsBack(reader, "f" + f, expected[f]);
        }
      }
    }
  }

  /**
   * Lucene's scenario (a quarter of the documents with a vector, sometimes merged into one segment): iteration and
   * {@code ordToDoc} agree, each vector is its document's, rounded; the off-heap size is two bytes a dimension.
   */
  @Override
  public void testVectorValuesReportCorrectDocs() throws Exception {
    int numDocs = atLeast(1000);
    int dims = 1 + random().nextInt(64);
    VectorSimilarityFunction sim = randomSimilarity();
    float[][] expected = new float[numDocs][];
    try (Directory dir = newDirectory();
        IndexWriter writer = new IndexWriter(dir, newIndexWriterConfig())) {
      for (int id = 0; id < numDocs; id++) {
        Document doc = new Document();
        doc.add(new StringField("id", Integer.toString(id), Field.Store.YES));
        if (random().nextInt(4) == 3) {
          float[] vector = randomNormalizedVector(dims);
          doc.add(new KnnFloatVectorField(FIELD, vector, sim));
          expected[id] = rounded(vector);
        }
        writer.addDocument(doc);
      }
      if (random().nextBoolean()) {
        writer.forceMerge(1);
      }
      try (IndexReader reader = DirectoryReader.open(writer)) {
        assertReadsBack(reader, FIELD, expected);
        for (LeafReaderContext ctx : reader.leaves()) {
          FloatVectorValues values = ctx.reader().getFloatVectorValues(FIELD);
          if (values != null) {
            assertOffHeapByteSize(ctx.reader(), FIELD);
            // two bytes a dimension
            KnnVectorsReader vectors = ((PerFieldKnnVectorsFormat.FieldsReader)
                ((CodecReader) ctx.reader()).getVectorReader()).getFieldReader(FIELD);
            FieldInfo info = ctx.reader().getFieldInfos().fieldInfo(FIELD);
            assertEquals(Map.of("vec", (long) values.size() * dims * BFloat16.BYTES), vectors.getOffHeapByteSize(info));
          }
        }
      }
    }
  }

  /**
   * Scores through the default scorer and through Lucene's vectorized one are those of the similarity over the
   * rounded floats: the vectorized scorer must not read the bfloat16 bytes as float32.
   */
  public void testScorersSeeTheDecodedFloats() throws Exception {
    int dims = 2 + random().nextInt(100);
    VectorSimilarityFunction sim = randomSimilarity();
    int numDocs = atLeast(50);
    float[][] expected = new float[numDocs][];
    try (Directory dir = newDirectory();
        IndexWriter writer = new IndexWriter(dir, newIndexWriterConfig())) {
      for (int id = 0; id < numDocs; id++) {
        float[] vector = randomNormalizedVector(dims);
        expected[id] = rounded(vector);
        index(writer, FIELD, id, vector, sim);
      }
      writer.forceMerge(1);
      float[] query = randomNormalizedVector(dims);
      try (IndexReader reader = DirectoryReader.open(writer)) {
        LeafReader leaf = getOnlyLeafReader(reader);
        StoredFields stored = leaf.storedFields();
        FloatVectorValues values = leaf.getFloatVectorValues(FIELD);
        for (FlatVectorsScorer scorer :
            List.of(DefaultFlatVectorScorer.INSTANCE, FlatVectorScorerUtil.getLucene99FlatVectorsScorer())) {
          var randomScorer = scorer.getRandomVectorScorer(sim, values.copy(), query);
          for (int ord = 0; ord < values.size(); ord++) {
            int id = Integer.parseInt(stored.document(values.ordToDoc(ord)).get("id"));
            assertEquals(scorer + " ord " + ord, sim.compare(query, expected[id]), randomScorer.score(ord), 0f);
          }
        }
      }
    }
  }

  /** Bad input is refused with errors naming the problem. */
  public void testLimits() throws Exception {
    expectThrows(NullPointerException.class, () -> new BFloat16FlatVectorsFormat(null));
    try (Directory dir = newDirectory();
        IndexWriter writer = new IndexWriter(dir, newIndexWriterConfig())) {
      Document tooLarge = new Document();
      tooLarge.add(new KnnFloatVectorField("f", new float[] {1f, Float.MAX_VALUE}));
      IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> writer.addDocument(tooLarge));
      assertEquals("vector value " + Float.MAX_VALUE
          + " at dimension 1 of field [f] is too large for bfloat16 (it would round to infinity)", e.getMessage());
      // only that document is refused: the writer goes on
      Document fine = new Document();
      fine.add(new KnnFloatVectorField("f", new float[] {1f, 2f}));
      writer.addDocument(fine);
      try (IndexReader reader = DirectoryReader.open(writer)) {
        assertEquals(1, reader.numDocs());
      }
    }
    // byte fields are not this format's (the GPU vectors format routes them elsewhere): adding one is a
    // programming error, which Lucene treats as tragic for the writer
    Codec codec = TestUtil.alwaysKnnVectorsFormat(new BFloat16FlatVectorsFormat());
    try (Directory dir = newDirectory();
        IndexWriter writer = new IndexWriter(dir, newIndexWriterConfig().setCodec(codec))) {
      Document bytes = new Document();
      bytes.add(new KnnByteVectorField("b", new byte[] {1, 2}));
      IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> writer.addDocument(bytes));
      assertEquals("field [b] has BYTE vectors, but BFloat16FlatVectorsFormat stores FLOAT32 vectors only",
          e.getMessage());
    }
  }

  public void testToString() {
    assertEquals("BFloat16FlatVectorsFormat(vectorsScorer=" + DefaultFlatVectorScorer.INSTANCE + ")",
        new BFloat16FlatVectorsFormat().toString());
  }
}
