package org.gpuvectors.codec.ivf;

import java.io.IOException;
import java.util.Arrays;
import java.util.OptionalInt;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.store.IndexOutput;
import org.apache.lucene.util.RamUsageEstimator;
import org.gpuvectors.codec.index.Metric;

/**
 * A product quantizer (Jégou et al., "Product quantization for nearest neighbor search"; the PQ of
 * Faiss's IVFADC): a vector of {@code dims} floats is cut into {@code m} sub-vectors of {@code dims /
 * m} floats, and each sub-vector is replaced by the index of its nearest codeword in that
 * sub-space's codebook of {@code 2^bits} codewords, one byte per sub-vector ({@code bits <= 8}).
 * IVF-PQ quantizes residuals (a vector minus its list's centroid), whose spread is much smaller than
 * the vectors', so the same codebooks serve every list.
 *
 * <p>Codebooks are trained by {@link KMeans} (squared L2 in every sub-space, whatever the field's
 * similarity: the codes approximate the residual itself); the nearest-codeword step of training and
 * of encoding goes through an {@link Assigner}, i.e. the GPU when the node has one.
 *
 * <p>Search compares a query with codes through lookup tables ({@link #l2Table}, {@link
 * #innerProductTable}): {@code m x 2^bits} partial distances, after which a code's distance is {@code
 * m} table reads ({@link #distance}: asymmetric distance computation, ADC).
 */
public final class ProductQuantizer {

  /** Bits per sub-quantizer code when the mapping gives no {@code pq_bits}: 256 codewords, one byte. */
  public static final int DEFAULT_BITS = 8;
  /** Dimensions per sub-vector the default {@code pq_m} aims at (Faiss's common choice for 8-bit codes). */
  static final int DEFAULT_SUB_DIMS = 8;
  /** Training residuals per codeword at most (Faiss's k-means warns below 39 per centroid). */
  static final int TRAINING_POINTS_PER_CODEWORD = 64;

  private final int dims;
  private final int m;
  private final int bits;
  /** Codeword {@code c} of sub-quantizer {@code j} at {@code [(j * ksub + c) * subDims, + subDims)}. */
  private final float[] codebooks;
  private final IvfBuilder.Training training;

  ProductQuantizer(int dims, int m, int bits, float[] codebooks, IvfBuilder.Training training) {
    if (m < 1 || dims % m != 0) {
      throw new IllegalArgumentException("pq_m must divide the dimension " + dims + ": " + m);
    }
    if (bits < 1 || bits > 8) {
      throw new IllegalArgumentException("pq_bits must be in [1, 8]: " + bits);
    }
    if (codebooks.length != (1 << bits) * dims) {
      throw new IllegalArgumentException("codebooks hold " + codebooks.length + " floats, not " + (1 << bits) * dims);
    }
    this.dims = dims;
    this.m = m;
    this.bits = bits;
    this.codebooks = codebooks;
    this.training = training;
  }

  /**
   * The sub-quantizers of a field without {@code pq_m} in its mapping:
   *
   * <ul>
   *   <li>up to {@value #FINE_CODES_MAX_DIMS} dimensions, {@code dims / 4} when 4 divides {@code dims}
   *       (sub-vectors of 4 dimensions: codes of {@code dims} bytes, 1/16 of the raw vector);
   *   <li>else {@code dims / 8} when 8 divides {@code dims} (sub-vectors of 8 dimensions, 1/32);
   *   <li>else the largest divisor of {@code dims} that is at most {@code dims / 4} (sub-vectors of at
   *       least 4 dimensions), and at least 1.
   * </ul>
   *
   * Why finer codes for short vectors: with sub-vectors of 8 dimensions, 1M x 128 clustered vectors
   * reached recall@10 0.93 through Elasticsearch at its defaults (num_candidates 100: 400 candidates
   * re-ranked), while codes of {@code dims / 4} bytes gave 0.9996 on 10M x 128 with the same 400. The device keeps the raw vectors for the exact re-rank anyway (4 x dims
   * bytes a vector), so the finer codes cost 3 % more device memory at 128 dimensions; long vectors
   * (Fashion-MNIST's 784: 98 bytes, recall 0.995 at nprobe 12, 8a) keep the coarser codes, whose scan
   * reads half the bytes.
   */
  public static int defaultM(int dims) {
    if (dims <= FINE_CODES_MAX_DIMS && dims % 4 == 0) {
      return dims / 4;
    }
    if (dims % DEFAULT_SUB_DIMS == 0) {
      return dims / DEFAULT_SUB_DIMS;
    }
    for (int m = dims / 4; m > 1; m--) {
      if (dims % m == 0) {
        return m;
      }
    }
    return 1;
  }

  /** Vectors of at most this many dimensions get codes of {@code dims / 4} bytes by default ({@link #defaultM}). */
  public static final int FINE_CODES_MAX_DIMS = 256;

  /** The mapping's {@code pq_m} (that it divides {@code dims} is checked with the mapping), else {@link #defaultM}. */
  public static int m(OptionalInt requested, int dims) {
    return requested.orElse(defaultM(dims));
  }

  /** The mapping's {@code pq_bits}, else {@link #DEFAULT_BITS}. */
  public static int bits(OptionalInt requested) {
    return requested.orElse(DEFAULT_BITS);
  }

  /**
   * Trains {@code m} codebooks of {@code 2^bits} codewords on residual rows. A sub-space with fewer
   * training rows than codewords (a small segment) gets one codeword per row and the rest copies of
   * codeword 0: encoding prefers the lower index on ties, so the copies are never used and every
   * sub-vector seen in training is encoded exactly.
   *
   * <p>The {@code m} sub-quantizers are {@code m} independent k-means ({@link KMeans#train(float[][], int, int,
   * Metric, int, long, Assigner)} with a group per sub-space), which assign all their sub-vectors in one step an
   * iteration: on the GPU the residuals go up once and each iteration is one launch. One brute-force search per
   * sub-quantizer and iteration made Fashion-MNIST's 98 sub-quantizers 1,470 GPU calls, 1.4-1.7 s of a 2.5 s
   * build.
   *
   * @param seed k-means of sub-quantizer {@code j} starts from {@code seed + j}
   */
  public static ProductQuantizer train(
      float[][] residuals, int m, int bits, int iterations, long seed, Assigner assigner) throws IOException {
    if (residuals.length == 0) {
      throw new IllegalArgumentException("no training residuals");
    }
    int dims = residuals[0].length;
    if (m < 1 || dims % m != 0) {
      throw new IllegalArgumentException("pq_m must divide the dimension " + dims + ": " + m);
    }
    int ksub = 1 << bits;
    int subDims = dims / m;
    int k = Math.min(ksub, residuals.length);
    float[] trained = KMeans.train(residuals, m, k, Metric.L2, iterations, seed, assigner);
    float[] codebooks = new float[ksub * dims];
    for (int j = 0; j < m; j++) {
      for (int c = 0; c < ksub; c++) {
        System.arraycopy(trained, (j * k + (c < k ? c : 0)) * subDims, codebooks, (j * ksub + c) * subDims, subDims);
      }
    }
    return new ProductQuantizer(dims, m, bits, codebooks, new IvfBuilder.Training(residuals.length, iterations, seed));
  }

  public int dims() {
    return dims;
  }

  /** Sub-quantizers: bytes per code. */
  public int m() {
    return m;
  }

  public int bits() {
    return bits;
  }

  /** Codewords per sub-quantizer ({@code 2^bits}). */
  public int ksub() {
    return 1 << bits;
  }

  public int subDims() {
    return dims / m;
  }

  /**
   * Candidates re-ranked exactly per result ({@link IvfPqField#rerankDepth}), from how coarse the codes are:
   * 4 at 2 code bits per dimension (the default codes up to {@value #FINE_CODES_MAX_DIMS} dimensions: recall@10
   * 0.998 through Elasticsearch on 1M x 128 at num_candidates 100), doubled for each
   * halving of the bits per dimension, within [{@value #MIN_RERANK_FACTOR}, {@value #MAX_RERANK_FACTOR}]. Why:
   * at 1 bit per dimension (768-d, 96-byte codes) 4 x k candidates gave recall@10 0.920 on 1M x 768 and
   * 0.959-0.963 on 2M x 768, where 8 x k gave 0.993: the codes' ranking, not the lists probed, lost the
   * neighbours, and the exact re-rank of a few hundred more rows is a small share of a search.
   */
  public int rerankFactor() {
    return Math.max(MIN_RERANK_FACTOR, Math.min(MAX_RERANK_FACTOR, 8 * subDims() / bits));
  }

  /** See {@link #rerankFactor}. */
  static final int MIN_RERANK_FACTOR = 4;
  /** See {@link #rerankFactor}. */
  static final int MAX_RERANK_FACTOR = 16;

  /** Heap held by the codebooks. */
  public long ramBytesUsed() {
    return RamUsageEstimator.shallowSizeOfInstance(ProductQuantizer.class) + RamUsageEstimator.sizeOf(codebooks);
  }

  public IvfBuilder.Training training() {
    return training;
  }

  /** A copy of the codebooks: codeword c of sub-quantizer j at {@code (j * ksub + c) * subDims}. */
  public float[] codebooks() {
    return codebooks.clone();
  }

  /** A copy of codeword {@code c} of sub-quantizer {@code j}. */
  public float[] codeword(int j, int c) {
    int start = (j * ksub() + c) * subDims();
    return Arrays.copyOfRange(codebooks, start, start + subDims());
  }

  /**
   * Encodes {@code count} residual rows: the code of row {@code i} goes to {@code codes[offset + i * m ..]}, byte
   * {@code j} the nearest codeword (squared L2) of sub-vector {@code j}. One {@link Assigner} step for the whole
   * block, all sub-quantizers at once (on the GPU one launch; 10M x 128 made 39k GPU calls when each sub-quantizer was
   * its own, 18 s of its build one after another).
   */
  public void encode(float[][] residuals, int count, byte[] codes, int offset, Assigner assigner) throws IOException {
    if (count == 0) {
      return;
    }
    int[] nearest;
    try (Assigner.Held held = assigner.hold(residuals, count, m, Metric.L2)) {
      nearest = held.nearest(codebooks, ksub());
    }
    for (int i = 0; i < count * m; i++) {
      codes[offset + i] = (byte) nearest[i];
    }
  }

  /**
   * Fills {@code table[j * ksub + c]} with the squared L2 distance between sub-vector {@code j} of
   * {@code residual} and codeword {@code c}: the distance of a code to the residual is then the sum of
   * its {@code m} entries ({@link #distance}).
   */
  public void l2Table(float[] residual, float[] table) {
    int subDims = subDims();
    int ksub = ksub();
    for (int j = 0; j < m; j++) {
      int q = j * subDims;
      for (int c = 0; c < ksub; c++) {
        int w = (j * ksub + c) * subDims;
        float s = 0;
        for (int d = 0; d < subDims; d++) {
          float diff = residual[q + d] - codebooks[w + d];
          s += diff * diff;
        }
        table[j * ksub + c] = s;
      }
    }
  }

  /**
   * Fills {@code table[j * ksub + c]} with the inner product of sub-vector {@code j} of {@code query}
   * and codeword {@code c}. Inner products add up across sub-spaces and across centroid and residual,
   * so the table does not depend on the list: {@code <q, x> ~ <q, centroid> + distance(table, code)}.
   */
  public void innerProductTable(float[] query, float[] table) {
    int subDims = subDims();
    int ksub = ksub();
    for (int j = 0; j < m; j++) {
      int q = j * subDims;
      for (int c = 0; c < ksub; c++) {
        int w = (j * ksub + c) * subDims;
        float s = 0;
        for (int d = 0; d < subDims; d++) {
          s += query[q + d] * codebooks[w + d];
        }
        table[j * ksub + c] = s;
      }
    }
  }

  /** The sum of the table entries a code selects ({@code codes[offset .. offset + m)}). */
  public float distance(float[] table, byte[] codes, int offset) {
    int ksub = ksub();
    float s = 0;
    for (int j = 0, t = 0; j < m; j++, t += ksub) {
      s += table[t + (codes[offset + j] & 0xFF)];
    }
    return s;
  }

  /** The vector a code stands for (the codewords it names, concatenated). */
  public float[] decode(byte[] codes, int offset) {
    float[] v = new float[dims];
    int subDims = subDims();
    for (int j = 0; j < m; j++) {
      int c = codes[offset + j] & 0xFF;
      System.arraycopy(codebooks, (j * ksub() + c) * subDims, v, j * subDims, subDims);
    }
    return v;
  }

  /** Writes {@code m}, {@code bits}, the training record and the codebooks (see {@code GpuVectorsFormat}). */
  void writeTo(IndexOutput out) throws IOException {
    out.writeVInt(m);
    out.writeVInt(bits);
    out.writeVInt(training.samples());
    out.writeVInt(training.iterations());
    out.writeLong(training.seed());
    IvfLayout.writeFloats(out, codebooks);
  }

  /** Reads what {@link #writeTo} wrote, checking it against the field's dimension. */
  static ProductQuantizer read(IndexInput in, int dims) throws IOException {
    int m = in.readVInt();
    int bits = in.readVInt();
    IvfBuilder.Training training = new IvfBuilder.Training(in.readVInt(), in.readVInt(), in.readLong());
    if (m < 1 || m > dims || dims % m != 0) {
      throw new CorruptIndexException("invalid ivf_pq pq_m " + m + " for dimension " + dims, in);
    }
    if (bits < 1 || bits > 8) {
      throw new CorruptIndexException("invalid ivf_pq pq_bits " + bits + " (1 to 8)", in);
    }
    long codebookBytes = 4L * (1 << bits) * dims;
    if (in.length() - in.getFilePointer() < codebookBytes) {
      throw new CorruptIndexException("ivf_pq data too short for the codebooks (" + codebookBytes + " bytes)", in);
    }
    float[] codebooks = new float[(1 << bits) * dims];
    in.readFloats(codebooks, 0, codebooks.length);
    return new ProductQuantizer(dims, m, bits, codebooks, training);
  }
}
