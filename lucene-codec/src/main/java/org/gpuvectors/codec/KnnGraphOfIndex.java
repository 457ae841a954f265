package org.gpuvectors.codec;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.Objects;
import java.util.stream.IntStream;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.VectorEncoding;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TotalHits;
import org.gpuvectors.codec.gpu.GpuBuildAcceleration;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.graph.KnnFinder;
import org.gpuvectors.codec.index.Metric;

/**
 * The k-NN graph of a whole index: for every live document with a vector in a field, its {@code k}
 * nearest other live documents, best first, with Lucene's scores (the field's {@link
 * VectorSimilarityFunction}, as {@link KnnBatchSearcher} returns them), across all segments (of any
 * vectors format). Deleted documents and documents without a vector have no neighbours and are
 * nobody's neighbour.
 *
 * <p>Computed on the GPU of {@link GpuSearchServices#current()} ({@link GpuBuildAcceleration#knnFinder}:
 * exact brute force for up to 100k vectors, IVF with a recall of about 0.96 of the exact edges above),
 * else on the CPU (exact up to {@link KnnFinder#EXACT_MAX_VECTORS} vectors, NN-descent above). Either
 * way the scores are computed here from the vectors, and rows are ordered by them (ties: lower doc).
 *
 * <pre>{@code
 * KnnGraphOfIndex graph = KnnGraphOfIndex.compute(reader, "embedding", 10);
 * int[] near = graph.neighbors(doc);   // global doc ids, best first
 * float[] scores = graph.scores(doc);
 * }</pre>
 */
public final class KnnGraphOfIndex {

  private final int maxDoc;
  private final int k;
  private final int[] docs; // maxDoc x k: row d the neighbours of doc d, -1 past the last
  private final float[] scores; // their scores

  private KnnGraphOfIndex(int maxDoc, int k, int[] docs, float[] scores) {
    this.maxDoc = maxDoc;
    this.k = k;
    this.docs = docs;
    this.scores = scores;
  }

  /**
   * The k-NN graph of {@code field}'s float vectors in {@code reader}.
   *
   * @throws IllegalArgumentException if k < 1, the field does not exist, holds no vectors or byte
   *     vectors, or maxDoc * k entries do not fit in an array
   */
  public static KnnGraphOfIndex compute(IndexReader reader, String field, int k) throws IOException {
    Objects.requireNonNull(reader, "reader");
    Objects.requireNonNull(field, "field");
    if (k < 1) {
      throw new IllegalArgumentException("k must be at least 1 but was [" + k + "]");
    }
    FieldInfo info = vectorField(reader, field);
    int maxDoc = reader.maxDoc();
    if ((long) maxDoc * k > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException(
          "maxDoc * k must fit in an array: maxDoc [" + maxDoc + "] * k [" + k + "] is too large");
    }
    VectorSimilarityFunction similarity = info.getVectorSimilarityFunction();
    LiveVectors vectors = LiveVectors.of(reader, field, info.getVectorDimension());
    int n = vectors.size();
    int[] ords = n == 0 ? new int[0]
        : GpuSearchServices.current().buildAcceleration().knnFinder()
            .knn(vectors, k, Metric.of(similarity));
    int[] docs = new int[maxDoc * k];
    float[] scores = new float[maxDoc * k];
    Arrays.fill(docs, -1);
    Arrays.fill(scores, Float.NaN);
    int blocks = (n + ROWS - 1) / ROWS;
    try {
      IntStream.range(0, blocks).parallel().forEach(b -> {
        try {
          scoreRows(vectors.copy(), vectors.copy(), similarity, ords, k, b * ROWS, Math.min(n, (b + 1) * ROWS), docs,
              scores);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    return new KnnGraphOfIndex(maxDoc, k, docs, scores);
  }

  /** Rows scored per parallel task (each task reads through its own vector copies). */
  private static final int ROWS = 1024;

  /** Scores rows {@code [first, end)} of the ordinal graph and writes them, best first, by doc id. */
  private static void scoreRows(
      LiveVectors a, LiveVectors b, VectorSimilarityFunction similarity, int[] ords, int k, int first, int end,
      int[] docs, float[] scores) throws IOException {
    Integer[] order = new Integer[k];
    int[] rowDocs = new int[k];
    float[] rowScores = new float[k];
    for (int i = first; i < end; i++) {
      float[] x = a.vectorValue(i);
      int count = 0;
      while (count < k && ords[i * k + count] >= 0) {
        int j = ords[i * k + count];
        rowDocs[count] = a.doc(j);
        rowScores[count] = similarity.compare(x, b.vectorValue(j));
        order[count] = count;
        count++;
      }
      // best first by the score computed here (the device ranked by its own rounding), ties: lower doc
      Arrays.sort(order, 0, count, (p, q) -> rowScores[p] != rowScores[q]
          ? Float.compare(rowScores[q], rowScores[p]) : Integer.compare(rowDocs[p], rowDocs[q]));
      int row = a.doc(i) * k;
      for (int r = 0; r < count; r++) {
        docs[row + r] = rowDocs[order[r]];
        scores[row + r] = rowScores[order[r]];
      }
    }
  }

  /** The field's info, checked to be a float vector field of this index. */
  private static FieldInfo vectorField(IndexReader reader, String field) {
    FieldInfo found = null;
    for (LeafReaderContext leaf : reader.leaves()) {
      FieldInfo info = leaf.reader().getFieldInfos().fieldInfo(field);
      if (info != null && (found == null || info.getVectorDimension() > 0)) {
        found = info;
      }
    }
    if (found == null) {
      throw new IllegalArgumentException("field [" + field + "] does not exist in this index");
    }
    if (found.getVectorDimension() == 0) {
      throw new IllegalArgumentException("field [" + field + "] has no vectors");
    }
    if (found.getVectorEncoding() != VectorEncoding.FLOAT32) {
      throw new IllegalArgumentException(
          "field [" + field + "] holds " + found.getVectorEncoding() + " vectors; the k-NN graph takes FLOAT32 vectors");
    }
    return found;
  }

  /** Documents of the index (rows of the graph, including those without neighbours). */
  public int maxDoc() {
    return maxDoc;
  }

  /** The k asked for (the most neighbours a document has). */
  public int k() {
    return k;
  }

  /** How many neighbours {@code doc} has: k, fewer when the field has at most k live vectors, 0 without one. */
  public int count(int doc) {
    Objects.checkIndex(doc, maxDoc);
    int c = 0;
    while (c < k && docs[doc * k + c] >= 0) {
      c++;
    }
    return c;
  }

  /** The nearest other documents of {@code doc} (global doc ids), best first. */
  public int[] neighbors(int doc) {
    return Arrays.copyOfRange(docs, doc * k, doc * k + count(doc));
  }

  /** Their scores, in the same order. */
  public float[] scores(int doc) {
    return Arrays.copyOfRange(scores, doc * k, doc * k + count(doc));
  }

  /** The neighbours of {@code doc} as Lucene hits (doc ids global, as {@link KnnBatchSearcher}'s). */
  public TopDocs topDocs(int doc) {
    int count = count(doc);
    ScoreDoc[] hits = new ScoreDoc[count];
    for (int i = 0; i < count; i++) {
      hits[i] = new ScoreDoc(docs[doc * k + i], scores[doc * k + i]);
    }
    return new TopDocs(new TotalHits(count, TotalHits.Relation.EQUAL_TO), hits);
  }
}
