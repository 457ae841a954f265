package org.gpuvectors.codec;

import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchStats;
import org.gpuvectors.codec.index.VectorRows;
import org.gpuvectors.cuda.ivf.IvfLists;
import static org.gpuvectors.codec.GpuVectorsFormatTests.Hit;
import static org.gpuvectors.codec.GpuVectorsFormatTests.hits;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LogDocMergePolicy;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.tests.util.TestUtil;
import org.apache.lucene.util.VectorUtil;

/**
 * What the IVF tests ({@link IvfFlatTests}, {@link IvfPqTests}) share: clustered data, the documents
 * and writer they index with, searches through Lucene, recall counting, the lists' invariants, and
 * the checks that the GPU machine trained (and searched) on its GPU.
 */
final class IvfTestSupport {

  static final String FIELD = "v";
  private static final int CLUSTERS = 40;

  final int dims;
  final Random random;
  private final float noise;
  private final float[][] centers;

  /** Points around 40 random centers in [-1, 1)^dims, with Gaussian noise of this deviation per dimension. */
  IvfTestSupport(int dims, long seed, float noise) {
    this.dims = dims;
    this.noise = noise;
    this.random = new Random(seed);
    this.centers = new float[CLUSTERS][dims];
    for (float[] c : centers) {
      for (int d = 0; d < dims; d++) {
        c[d] = random.nextFloat() * 2 - 1;
      }
    }
  }

  /** A point near a random cluster center (unit length for dot_product). */
  float[] point(VectorSimilarityFunction sim) {
    float[] c = centers[random.nextInt(CLUSTERS)];
    float[] v = new float[dims];
    for (int d = 0; d < dims; d++) {
      v[d] = c[d] + (float) random.nextGaussian() * noise;
    }
    if (sim == VectorSimilarityFunction.DOT_PRODUCT) {
      VectorRows.normalize(v);
    }
    return v;
  }

  List<float[]> points(int n, VectorSimilarityFunction sim) {
    List<float[]> list = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      list.add(point(sim));
    }
    return list;
  }

  FieldType fieldType(IndexType type, VectorSimilarityFunction sim, Map<String, Integer> params) {
    return GpuVectorsFormat.markField(KnnFloatVectorField.createFieldType(dims, sim), new IndexParams(type, params));
  }

  /** Our codec, one segment per {@code segmentDocs} documents, no compound files (our files stay visible). */
  static IndexWriterConfig config(int ivfMinVectors, int segmentDocs) {
    LogDocMergePolicy mergePolicy = new LogDocMergePolicy();
    mergePolicy.setNoCFSRatio(0);
    Codec codec = TestUtil.alwaysKnnVectorsFormat(new GpuVectorsFormat(ivfMinVectors));
    return new IndexWriterConfig()
        .setCodec(codec)
        .setUseCompoundFile(false)
        .setMergePolicy(mergePolicy)
        .setMaxBufferedDocs(segmentDocs);
  }

  /** A document: stored and indexed id, a 2 % "rare" tag, a sort key, and the vector (when not null). */
  static Document doc(int id, float[] vector, FieldType type) {
    Document doc = new Document();
    doc.add(new StoredField("id", id));
    doc.add(new StringField("sid", Integer.toString(id), Field.Store.NO));
    doc.add(new StringField("rare", id % 50 == 0 ? "yes" : "no", Field.Store.NO));
    doc.add(new NumericDocValuesField("sortkey", (id * 7919L) % 1000));
    if (vector != null) {
      doc.add(new KnnFloatVectorField(FIELD, vector, type));
    }
    return doc;
  }

  static void index(Directory dir, IndexWriterConfig config, List<float[]> vectors, FieldType type) throws IOException {
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (int id = 0; id < vectors.size(); id++) {
        writer.addDocument(doc(id, vectors.get(id), type));
      }
      writer.commit();
    }
  }

  /** The segment's reader of our format. */
  static GpuVectorsReader reader(LeafReader leaf) {
    GpuVectorsReader reader = KnnBatchSearcher.gpuVectorsReader(leaf, FIELD);
    assertNotNull(reader, "segment read by GpuVectorsReader");
    return reader;
  }

  /** Lucene's kNN query for k hits (k is the per-segment k: Elasticsearch's num_candidates). */
  static List<Hit> search(IndexSearcher searcher, float[] query, int k, Query filter) throws IOException {
    TopDocs td = searcher.search(new KnnFloatVectorQuery(FIELD, query, k, filter), k);
    return hits(searcher, td);
  }

  static Set<Integer> ids(List<Hit> hits) {
    Set<Integer> ids = new HashSet<>();
    hits.forEach(h -> ids.add(h.id()));
    return ids;
  }

  static int overlap(Set<Integer> truth, List<Hit> hits) {
    int n = 0;
    for (Hit h : hits) {
      n += truth.contains(h.id()) ? 1 : 0;
    }
    return n;
  }

  /**
   * Every ordinal sits in exactly one list, ascending within it, and in the list of its nearest
   * centroid: wrong ordinal remapping (index sorting, merges) breaks the last one.
   */
  static void assertListInvariants(IvfLists lists, FloatVectorValues vectors, VectorSimilarityFunction sim)
      throws IOException {
    int dims = vectors.dimension();
    boolean l2 = sim == VectorSimilarityFunction.EUCLIDEAN;
    Set<Integer> seen = new HashSet<>();
    for (int l = 0; l < lists.nlist(); l++) {
      for (int p = lists.offsets()[l]; p < lists.offsets()[l + 1]; p++) {
        int ord = lists.ords()[p];
        assertTrue(seen.add(ord), "ordinal " + ord + " in one list only");
        if (p > lists.offsets()[l]) {
          assertTrue(lists.ords()[p - 1] < ord, "ascending within a list");
        }
        float[] v = vectors.vectorValue(ord).clone();
        if (sim == VectorSimilarityFunction.COSINE) {
          VectorRows.normalize(v);
        }
        int nearest = nearestCentroid(lists, dims, v, l2);
        float own = distance(lists, dims, l, v, l2);
        float best = distance(lists, dims, nearest, v, l2);
        assertEquals(best, own, 1e-4f * Math.max(1, Math.abs(best)), "ordinal " + ord + " in list " + l + ", nearest is " + nearest);
      }
    }
    assertEquals(vectors.size(), seen.size(), "every ordinal in a list");
  }

  /** List {@code list}'s centroid, as the lists hold it (packed). */
  static float[] centroid(IvfLists lists, int dims, int list) {
    return Arrays.copyOfRange(lists.centroids(), list * dims, (list + 1) * dims);
  }

  /** How lists rank a vector: squared L2, or minus the inner product. */
  static float distance(IvfLists lists, int dims, int list, float[] v, boolean l2) {
    float[] c = centroid(lists, dims, list);
    return l2 ? VectorUtil.squareDistance(c, v) : -VectorUtil.dotProduct(c, v);
  }

  private static int nearestCentroid(IvfLists lists, int dims, float[] v, boolean l2) {
    int best = 0;
    for (int l = 1; l < lists.nlist(); l++) {
      if (distance(lists, dims, l, v, l2) < distance(lists, dims, best, v, l2)) {
        best = l;
      }
    }
    return best;
  }

  /**
   * On the GPU machine: k-means ran on the GPU (and none of it on the CPU), and no search fell back
   * for a GPU failure.
   */
  static void assertTrainedOnTheGpu(GpuSearchStats stats) {
    assertTrue(stats.gpuAssignedVectors() > 0 && stats.cpuAssignedVectors() == 0, () -> "k-means on the GPU: " + stats);
    for (FallbackReason reason : new FallbackReason[] {FallbackReason.NO_GPU, FallbackReason.GPU_FAILED,
        FallbackReason.CUDA_ERROR, FallbackReason.DEVICE_OUT_OF_MEMORY, FallbackReason.BUDGET_IN_USE,
        FallbackReason.NOT_ADMITTED}) {
      assertEquals(0, stats.cpuFallbacks(reason), () -> reason + ": " + stats);
    }
  }
}
