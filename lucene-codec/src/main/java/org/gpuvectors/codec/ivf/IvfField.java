package org.gpuvectors.codec.ivf;

import org.gpuvectors.codec.index.VectorRows;
import java.io.IOException;
import java.util.Arrays;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.KnnCollector;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.NumericUtils;
import org.apache.lucene.util.RamUsageEstimator;
import org.apache.lucene.util.VectorUtil;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.gpuvectors.codec.index.Metric;

/**
 * One segment field's IVF lists as read from the {@code .gvd} file, and their CPU search: rank the
 * centroids, scan the best lists' vectors exactly. Centroids and list offsets live on the heap
 * ({@code nlist x dims} floats); the ordinals stay in the file.
 *
 * <p>The GPU runs the same algorithm on the same lists ({@code GpuIvfFlatIndex}): the same lists are
 * probed and the same candidates scored, so both paths return the same hits up to ties.
 */
public final class IvfField implements IvfIndex {

  private final Metric metric;
  private final float[][] centroids;
  private final int[] offsets;
  private final int defaultProbes;
  private final IvfBuilder.Training training;
  /** The ordinals by position; cloned for each read (an IndexInput is not safe to share across threads). */
  private final IndexInput ords;
  private final int size;

  private IvfField(
      Metric metric, float[][] centroids, int[] offsets, int defaultProbes, IvfBuilder.Training training,
      IndexInput ords, int size) {
    this.metric = metric;
    this.centroids = centroids;
    this.offsets = offsets;
    this.defaultProbes = defaultProbes;
    this.training = training;
    this.ords = ords;
    this.size = size;
  }

  /**
   * Reads the lists written by {@link IvfLayout#writeTo} at {@code [offset, offset + length)} of
   * {@code data} (an {@code ivf_flat} field's data: the lists and nothing else), checking their
   * structure against the field's vector count.
   */
  public static IvfField read(IndexInput data, long offset, long length, int dims, int size, Metric metric)
      throws IOException {
    IndexInput in = data.slice("ivf", offset, length);
    IvfField lists = readLists(in, dims, size, metric);
    if (in.getFilePointer() != length) {
      throw new CorruptIndexException("IVF data length " + length + " != " + in.getFilePointer(), in);
    }
    return lists;
  }

  /**
   * Reads lists written by {@link IvfLayout#writeTo} from {@code in}'s position, checking their
   * structure against the field's vector count, and leaves {@code in} after them (where an index type
   * that extends the lists, such as {@code ivf_pq}, continues). The ordinals stay in the file.
   */
  static IvfField readLists(IndexInput in, int dims, int size, Metric metric) throws IOException {
    int nlist = in.readVInt();
    int probes = in.readVInt();
    IvfBuilder.Training training = new IvfBuilder.Training(in.readVInt(), in.readVInt(), in.readLong());
    if (nlist < 1 || nlist > Math.max(1, size) || probes < 1 || probes > nlist) {
      throw new CorruptIndexException("invalid IVF lists: nlist=" + nlist + " nprobe=" + probes + " size=" + size, in);
    }
    if (in.length() - in.getFilePointer() < 4L * nlist * dims + 4L * (nlist + 1) + 4L * size) {
      throw new CorruptIndexException("IVF data too short for " + nlist + " lists of " + size + " vectors", in);
    }
    float[][] centroids = new float[nlist][dims];
    for (float[] c : centroids) {
      in.readFloats(c, 0, dims);
    }
    int[] offsets = new int[nlist + 1];
    in.readInts(offsets, 0, nlist + 1);
    if (offsets[0] != 0 || offsets[nlist] != size) {
      throw new CorruptIndexException("invalid IVF list offsets: " + offsets[0] + ".." + offsets[nlist] + " for " + size, in);
    }
    for (int l = 0; l < nlist; l++) {
      if (offsets[l + 1] < offsets[l]) {
        throw new CorruptIndexException("IVF list offsets decrease at list " + l, in);
      }
    }
    long ordsStart = in.getFilePointer();
    IndexInput ords = in.slice("ivf ordinals", ordsStart, 4L * size);
    in.seek(ordsStart + 4L * size);
    return new IvfField(metric, centroids, offsets, probes, training, ords, size);
  }

  @Override
  public int nlist() {
    return centroids.length;
  }

  @Override
  public long ramBytesUsed() {
    long centroidBytes = centroids.length == 0 ? 0 : (long) centroids.length * RamUsageEstimator.sizeOf(centroids[0]);
    return RamUsageEstimator.shallowSizeOfInstance(IvfField.class)
        + RamUsageEstimator.shallowSizeOf(centroids)
        + centroidBytes
        + RamUsageEstimator.sizeOf(offsets);
  }

  /** Lists scanned per query at num_candidates up to {@link IvfProbes#BASE_CANDIDATES}, unfiltered. */
  public int defaultProbes() {
    return defaultProbes;
  }

  /** Where each list starts among the positions, and the end ({@code nlist + 1} entries; a copy). */
  public int[] listOffsets() {
    return offsets.clone();
  }

  public IvfBuilder.Training training() {
    return training;
  }

  @Override
  public int probes(int k, long accepted) {
    return IvfProbes.probes(defaultProbes, nlist(), k, accepted, size);
  }

  /** Every vector's ordinal in list order (list l at {@link #listOffsets} l): read from the file. */
  public int[] ordinalsInListOrder() throws IOException {
    int[] all = new int[size];
    IndexInput in = ords.clone();
    in.seek(0);
    in.readInts(all, 0, size);
    return all;
  }

  /** The centroids, one row of dims floats per list, row-major. */
  public float[] packedCentroids() {
    int dims = centroids[0].length;
    float[] packed = new float[nlist() * dims];
    for (int l = 0; l < nlist(); l++) {
      System.arraycopy(centroids[l], 0, packed, l * dims, dims);
    }
    return packed;
  }

  /** The {@code probes} lists nearest to {@code query}, nearest first (ties: lower list first). */
  int[] nearestLists(float[] query, int probes) {
    float[] q = query;
    if (metric == Metric.COSINE) {
      q = query.clone();
      VectorRows.normalize(q);
    }
    long[] keyed = new long[nlist()];
    for (int l = 0; l < keyed.length; l++) {
      float d = metric == Metric.L2 ? VectorUtil.squareDistance(q, centroids[l]) : -VectorUtil.dotProduct(q, centroids[l]);
      keyed[l] = ((long) NumericUtils.floatToSortableInt(d) << 32) | l;
    }
    Arrays.sort(keyed);
    int[] lists = new int[Math.min(probes, keyed.length)];
    for (int i = 0; i < lists.length; i++) {
      lists[i] = (int) keyed[i];
    }
    return lists;
  }

  /** List {@code l}'s centroid (normalised for cosine); not a copy. */
  float[] centroid(int l) {
    return centroids[l];
  }

  /** The first position of list {@code l}; the list ends where list {@code l + 1} starts. */
  int listStart(int l) {
    return offsets[l];
  }

  /** A reader of the ordinals for one search (one thread). */
  IndexInput ordsReader() {
    return ords.clone();
  }

  /**
   * Reads list {@code l}'s ordinals (positions {@code listStart(l) ..}) with {@code reader} into
   * {@code buffer}, grown when too small; returns the buffer.
   */
  int[] readList(IndexInput reader, int l, int[] buffer) throws IOException {
    int count = offsets[l + 1] - offsets[l];
    int[] out = buffer.length >= count ? buffer : new int[count];
    reader.seek(4L * offsets[l]);
    reader.readInts(out, 0, count);
    return out;
  }

  Metric metric() {
    return metric;
  }

  /**
   * What a CPU search needs before it scans (shared by {@code ivf_flat} and {@code ivf_pq}): the
   * query's exact scorer, the accepted ordinals (null: all) and how many, and the lists to probe,
   * nearest first.
   */
  record Scan(RandomVectorScorer scorer, Bits acceptOrds, long accepted, int[] lists) {}

  Scan scan(
      FlatVectorsScorer scorers, VectorSimilarityFunction similarity, FloatVectorValues vectors, float[] query,
      int k, AcceptDocs accept, long accepted) throws IOException {
    RandomVectorScorer scorer = scorers.getRandomVectorScorer(similarity, vectors.copy(), query);
    Bits acceptDocs = accept == null ? null : accept.bits();
    return new Scan(scorer, scorer.getAcceptOrds(acceptDocs), accepted, nearestLists(query, probes(k, accepted)));
  }

  /**
   * Scores the vectors of the nearest lists (how many: {@link #probes}) with the field's
   * similarity, exactly as flat search would score them.
   */
  @Override
  public void search(
      FlatVectorsScorer scorers, VectorSimilarityFunction similarity, FloatVectorValues vectors, float[] query,
      KnnCollector collector, AcceptDocs accept, long accepted) throws IOException {
    Scan scan = scan(scorers, similarity, vectors, query, collector.k(), accept, accepted);
    IndexInput reader = ordsReader();
    int[] ordinals = new int[0];
    for (int list : scan.lists()) {
      ordinals = readList(reader, list, ordinals);
      for (int i = 0, count = offsets[list + 1] - offsets[list]; i < count; i++) {
        if (collector.earlyTerminated()) {
          return;
        }
        int ord = ordinals[i];
        if (scan.acceptOrds() != null && scan.acceptOrds().get(ord) == false) {
          continue;
        }
        collector.incVisitedCount(1);
        collector.collect(scan.scorer().ordToDoc(ord), scan.scorer().score(ord));
      }
    }
  }
}
