package org.gpuvectors.codec.ivf;

import org.gpuvectors.codec.index.VectorRows;
import java.io.IOException;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.KnnCollector;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.util.RamUsageEstimator;
import org.apache.lucene.util.VectorUtil;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.apache.lucene.util.hnsw.NeighborQueue;
import org.gpuvectors.codec.index.Metric;

/**
 * One segment field's {@code ivf_pq} index as read from the {@code .gvd} file, and its CPU search
 * (IVFADC): the lists probed are {@code ivf_flat}'s for the same query and k; in each, the codes are
 * compared with the query through a lookup table (asymmetric distances, {@link ProductQuantizer}),
 * the best {@link #rerankDepth} candidates are kept, and those are re-ranked with the raw vectors
 * through Lucene's flat scorer, so the scores a search returns are exact. What the codes trade for
 * speed is that a true neighbour whose approximate distance misses the re-ranked candidates is
 * missed (besides the lists not probed, as for {@code ivf_flat}).
 *
 * <p>The centroids and codebooks live on the heap; the ordinals and codes stay in the file. On the GPU
 * ({@code GpuIvfPqIndex}) the same lists and tables give the candidates, which the segment re-ranks the
 * same way ({@link #rerankDepth}).
 */
public final class IvfPqField implements IvfIndex {

  private final IvfField lists;
  private final ProductQuantizer pq;
  /** The codes by position; cloned for each read (an IndexInput is not safe to share across threads). */
  private final IndexInput codes;

  private IvfPqField(IvfField lists, ProductQuantizer pq, IndexInput codes) {
    this.lists = lists;
    this.pq = pq;
    this.codes = codes;
  }

  /**
   * Reads what {@link IvfPqLayout#writeTo} wrote at {@code [offset, offset + length)} of {@code data},
   * checking its structure against the field's dimension and vector count.
   */
  public static IvfPqField read(IndexInput data, long offset, long length, int dims, int size, Metric metric)
      throws IOException {
    IndexInput in = data.slice("ivf_pq", offset, length);
    IvfField lists = IvfField.readLists(in, dims, size, metric);
    int version = in.readVInt();
    if (version != IvfPqLayout.VERSION) {
      throw new CorruptIndexException("unsupported ivf_pq layout version " + version + " (this reader: " + IvfPqLayout.VERSION + ")", in);
    }
    ProductQuantizer pq = ProductQuantizer.read(in, dims);
    long codesStart = in.getFilePointer();
    long codesLength = (long) size * pq.m();
    if (codesStart + codesLength != length) {
      throw new CorruptIndexException(
          "ivf_pq data length " + length + " != " + (codesStart + codesLength) + " (codes of " + size + " vectors x " + pq.m() + " bytes)", in);
    }
    return new IvfPqField(lists, pq, in.slice("ivf_pq codes", codesStart, codesLength));
  }

  /** The coarse lists (the ordinals by position; their vectors are not read by this type's search). */
  public IvfField lists() {
    return lists;
  }

  public ProductQuantizer pq() {
    return pq;
  }

  /** Every code, by position in the lists (n x {@code pq().m()} bytes): what the GPU index uploads. */
  public byte[] codesInListOrder() throws IOException {
    long length = codes.length();
    if (length > Integer.MAX_VALUE - 8) {
      throw new IllegalStateException("codes too large for one upload: " + length + " bytes");
    }
    byte[] all = new byte[(int) length];
    IndexInput in = codes.clone();
    in.seek(0);
    in.readBytes(all, 0, all.length);
    return all;
  }

  /** The code of the vector at a position of the lists ({@code pq().m()} bytes). */
  public byte[] code(int position) throws IOException {
    byte[] code = new byte[pq.m()];
    IndexInput in = codes.clone();
    in.seek((long) position * pq.m());
    in.readBytes(code, 0, code.length);
    return code;
  }

  @Override
  public int nlist() {
    return lists.nlist();
  }

  @Override
  public long ramBytesUsed() {
    return RamUsageEstimator.shallowSizeOfInstance(IvfPqField.class) + lists.ramBytesUsed() + pq.ramBytesUsed();
  }

  @Override
  public int probes(int k, long accepted) {
    return lists.probes(k, accepted);
  }

  /**
   * Candidates re-ranked exactly per result the collector asks for ({@link ProductQuantizer#rerankFactor}: 4
   * for the default codes up to 256 dimensions, more for coarser codes). The collector's k is Lucene's
   * per-segment k, i.e. Elasticsearch's {@code num_candidates}, so raising {@code num_candidates} deepens the
   * re-ranking as it widens the probed lists.
   */
  public int rerankFactor() {
    return pq.rerankFactor();
  }

  /** {@link #rerankDepth(int, int, long)} at this field's {@link #rerankFactor}. */
  public int rerankDepth(int k, long accepted) {
    return rerankDepth(rerankFactor(), k, accepted);
  }

  /**
   * The most candidates a search re-ranks: what the device's selection keeps (a test in the codec holds the two
   * equal), so that the GPU and the CPU re-rank the same candidates.
   */
  public static final int MAX_RERANK_CANDIDATES = 2048;

  /**
   * Candidates re-ranked for a search of k results at {@code factor} candidates per result, before the filter:
   * factor x k, at most {@link #MAX_RERANK_CANDIDATES} but at least k. The device re-rank takes as many (the GPU
   * index is built with the same factor), so that both re-rank the same candidates (up to ties).
   */
  public static int rerankCandidates(int factor, int k) {
    return (int) Math.max(k, Math.min(MAX_RERANK_CANDIDATES, (long) factor * k));
  }

  /**
   * Candidates re-ranked for a search of k results over {@code accepted} vectors: {@link #rerankCandidates}, at
   * most the accepted vectors (then the re-ranking is exact over the probed lists), at least 1.
   */
  public static int rerankDepth(int factor, int k, long accepted) {
    return (int) Math.max(1, Math.min(rerankCandidates(factor, k), accepted));
  }

  /**
   * One query's approximate candidates in one segment, best first, with their approximate distances as the device
   * ranks them (squared L2, smaller first; for inner product and cosine the score, the list's centroid included,
   * larger first): what a search re-ranks, and what the cross-segment re-rank cut compares across segments.
   */
  public record Candidates(int[] ords, float[] distances) {}

  /**
   * Scans the codes of the nearest lists (as many as {@code ivf_flat} probes), keeps the {@link
   * #rerankDepth} best by approximate distance and hands the collector their exact scores. Every
   * accepted vector scanned counts as visited.
   */
  @Override
  public void search(
      FlatVectorsScorer scorers, VectorSimilarityFunction similarity, FloatVectorValues vectors, float[] query,
      KnnCollector collector, AcceptDocs accept, long accepted) throws IOException {
    IvfField.Scan scan = lists.scan(scorers, similarity, vectors, query, collector.k(), accept, accepted);
    Candidates candidates = scanCodes(scan, query, collector);
    if (candidates != null) {
      rerank(scan.scorer(), candidates.ords(), collector);
    }
  }

  /**
   * The first step of {@link #search} alone: the {@link #rerankDepth} best candidates by approximate distance of the
   * lists a search for {@code collector.k()} probes, every accepted vector scanned counted as visited; null when the
   * collector terminated the scan early (a search then collects nothing).
   */
  public Candidates candidates(
      FlatVectorsScorer scorers, VectorSimilarityFunction similarity, FloatVectorValues vectors, float[] query,
      KnnCollector collector, AcceptDocs accept, long accepted) throws IOException {
    return scanCodes(lists.scan(scorers, similarity, vectors, query, collector.k(), accept, accepted), query, collector);
  }

  /**
   * The second step of {@link #search} alone: hands the collector the exact scores of the ordinals {@code ords} (a
   * search's candidates, or what a cut across segments kept of them).
   */
  public void rerank(
      FlatVectorsScorer scorers, VectorSimilarityFunction similarity, FloatVectorValues vectors, float[] query,
      int[] ords, KnnCollector collector) throws IOException {
    rerank(scorers.getRandomVectorScorer(similarity, vectors.copy(), query), ords, collector);
  }

  private Candidates scanCodes(IvfField.Scan scan, float[] query, KnnCollector collector) throws IOException {
    boolean l2 = lists.metric() == Metric.L2;
    float[] q = query;
    if (lists.metric() == Metric.COSINE) {
      q = query.clone(); // residuals were taken of normalised vectors
      VectorRows.normalize(q);
    }
    int m = pq.m();
    float[] table = new float[m * pq.ksub()];
    float[] residual = l2 ? new float[q.length] : null;
    if (l2 == false) {
      pq.innerProductTable(q, table); // inner products: one table for every list
    }
    // a min-heap on the approximate score (higher is nearer): its top is the candidate to drop next
    NeighborQueue candidates = new NeighborQueue(rerankDepth(collector.k(), scan.accepted()), false);
    byte[] listCodes = new byte[0];
    IndexInput codeReader = codes.clone();
    IndexInput ordsReader = lists.ordsReader();
    int[] ordinals = new int[0];
    for (int list : scan.lists()) {
      float[] centroid = lists.centroid(list);
      float base;
      if (l2) {
        for (int d = 0; d < q.length; d++) {
          residual[d] = q[d] - centroid[d];
        }
        pq.l2Table(residual, table);
        base = 0;
      } else {
        base = VectorUtil.dotProduct(q, centroid);
      }
      int start = lists.listStart(list);
      int end = lists.listStart(list + 1);
      if (listCodes.length < (end - start) * m) {
        listCodes = new byte[(end - start) * m];
      }
      codeReader.seek((long) start * m);
      codeReader.readBytes(listCodes, 0, (end - start) * m);
      ordinals = lists.readList(ordsReader, list, ordinals);
      for (int p = start; p < end; p++) {
        if (collector.earlyTerminated()) {
          return null;
        }
        int ord = ordinals[p - start];
        if (scan.acceptOrds() != null && scan.acceptOrds().get(ord) == false) {
          continue;
        }
        collector.incVisitedCount(1);
        float adc = pq.distance(table, listCodes, (p - start) * m);
        candidates.insertWithOverflow(ord, l2 ? -adc : base + adc);
      }
    }
    // the heap pops the worst first: fill from the end for best first
    int[] ords = new int[candidates.size()];
    float[] distances = new float[ords.length];
    for (int i = ords.length - 1; i >= 0; i--) {
      float score = candidates.topScore();
      distances[i] = l2 ? -score : score;
      ords[i] = candidates.pop();
    }
    return new Candidates(ords, distances);
  }

  /** One bulk score of the candidates, as the GPU path's host re-rank scores them (the same FP32 scores). */
  private static void rerank(RandomVectorScorer scorer, int[] ords, KnnCollector collector) throws IOException {
    float[] scores = new float[ords.length];
    scorer.bulkScore(ords, scores, ords.length);
    for (int i = 0; i < ords.length; i++) {
      collector.collect(scorer.ordToDoc(ords[i]), scores[i]);
    }
  }
}
