package org.gpuvectors.cuda.rerank;

import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.select.KSelect;

/**
 * A candidate pass in reduced precision followed by an exact FP32 re-rank: how many candidates it keeps, how far its
 * keys may be from the exact ones, and the per-query certificate that its candidates hold the exact k best (a
 * query without one is searched again on the FP32 path). Two passes use it, differing only in the dot product's
 * error c (the rest of the argument below is the same):
 * <ul>
 *   <li>{@link #tf32}: the GEMM path's TF32 candidates ({@code GpuFlatIndex.Precision#TF32_RERANK}), c = c_t below;
 *   <li>{@link #half}: the small batches' scan of the index's FP16 copy (flat_half_scan.cu), c = c_h below.
 * </ul>
 *
 * <p><b>Keys.</b> Every metric ranks by a key, smaller = better: the squared L2 distance, or -x.q (inner product,
 * cosine over the normalised vectors). "Exact key" is the key of the float vectors and query in real arithmetic.
 * u = 2^-24 (FP32 unit roundoff), gamma_m(v) = m v / (1 - m v).
 *
 * <p><b>TF32 error.</b> The pass computes x.q with cuBLAS on TF32 tensor cores: each input keeps 10 of its 23
 * mantissa bits. Rounding to nearest would err by at most 2^-11 relative per input, truncation by less than
 * 2^-10; cuBLAS does not document which its kernels do (a conversion instruction rounds; raw FP32 bits handed to a
 * TF32 mma lose their low 13 bits), so the bound takes truncation. Each product x_i q_i then errs by at most
 * (1 + 2^-10)^2 - 1 relative, and the FP32 sum of the d products, in any order, split-K or not, and even with
 * truncating adds (as tensor-core accumulators may do: unit 2^-23), by gamma_d(2^-23). So for every vector x
 * <pre>  |dot~ - x.q| &lt;= c_t sum|x_i q_i| &lt;= c_t ||x|| ||q||,  c_t = (1 + 2^-10)^2 (1 + gamma_d(2^-23)) - 1
 * (about 2^-9 + d 2^-23: 2.05e-3 at d = 784).</pre>
 * The L2 key ||x||^2 - 2 dot~ + ||q||^2 adds the FP32 norms (off by gamma_d(u) relative each, as the FP32 path's)
 * and the select epilogue's two roundings (2u(1+u) of the terms' magnitude; the scale by -2 is exact and the clamp
 * at 0 only moves a key toward its exact value, which is >= 0). With X >= the largest ||x|| of the index, one bound
 * E per query holds for every vector:
 * <pre>  L2:     E = 2 c_t X ||q|| + gamma_d (X^2 + ||q||^2)
 *               + 2u(1+u) (2 (1 + c_t) X ||q|| + (1 + gamma_d)(X^2 + ||q||^2))
 *   IP/cos: E = c_t X ||q||            (the select's scale by -1 is exact)</pre>
 * X^2 is the largest FP32-computed ||x||^2 of the index over (1 - gamma_d(u)) (computed once per index; a vector
 * of a much larger norm than the rest widens E for all queries, and so the fallback rate). Relative error bounds
 * hold for normal numbers only: subnormal inputs, underflowing products and sums (flushed to zero or not) err by
 * less than 2^-126 each: E (above) and K+ (below) include 4 * 2^-126 (sqrt(d) (X + ||q||) + 3d) more for them
 * (nothing, for data of ordinary magnitude).
 *
 * <p><b>FP16 error.</b> The half scan scales the vectors by one power of two s (from the index's largest |x_i|) and
 * each query by its own t, both so that the largest magnitude lies below 2^14 (no overflow: FP16's largest finite
 * is 65,504), rounds them to FP16 (to nearest: relative error 2^-11 for normal values, absolute 2^-25 below 2^-14)
 * and sums the FP16 products in FP32 on tensor cores (the products are exact in FP32; the sums, as for TF32, taken
 * as truncating: gamma_d(2^-23)). Unscaled, a component errs by at most 2^-11 |x_i| + 2^-25 / s with 1 / s
 * &lt;= 2^-13 max|x_i| &lt;= 2^-13 X, so ||x - x~|| &lt;= delta X and ||q - q~|| &lt;= delta ||q|| with delta =
 * 2^-11 + 2^-38 sqrt(d). Then
 * <pre>  |x~.q~ - x.q| &lt;= ||x - x~|| ||q~|| + ||x|| ||q - q~|| + gamma_d(2^-23) ||x~|| ||q~||
 *                &lt;= c_h X ||q||,  c_h = delta (2 + delta) + gamma_d(2^-23) (1 + delta)^2   (about 2^-10)</pre>
 * (a scale clamped at 2^114 for magnitudes below 2^-100 adds at most 2^-139 sqrt(d) per vector, inside the
 * underflow term below). The division by s t is exact (powers of two), and the keys' epilogue is the TF32 pass's.
 *
 * <p><b>Certificate.</b> Let T be the candidate key of the last (k'-th) candidate (when the pass's chunks each kept
 * fewer than k' before their merge, the least of that key and every chunk's last kept key: a vector its chunk did not
 * keep has a candidate key at least that chunk's last one) and K+ an upper bound of the true
 * keys of the k candidates the re-rank keeps: its k-th FP32 key K over (1 - u)^2 (1 - gamma_d(u)) for L2 (each (x_i -
 * q_i) rounded once, d terms summed with FMA), or K + gamma_d(u) X ||q|| for IP/cosine. A vector left out of the
 * candidates has candidate key &gt;= T, so an exact key &gt;= T - E. If K+ + E &lt; T, k candidates are strictly better
 * than every vector left out: the candidates hold the exact k best, and the re-rank's FP32 selection among them is the
 * FP32 path's answer (up to FP32 near-ties, as there; its L2 keys are even the more accurate sum of squares). When
 * fewer than k' vectors have a finite candidate key (T = +inf: few accepted vectors), every such vector is a candidate:
 * certified. Vectors whose key is not finite are never found, as on the FP32 path.
 *
 * <p><b>k'.</b> k' = min(2048, max(2k, k + 32)) only decides how often the certificate fails, never correctness. It
 * fails when more than k' - k vectors have exact keys within about 2E of the k-th best. E scales with the norms, not
 * the distances (~2^-8 X ||q|| for TF32, ~2^-9 for FP16): for TF32 on Fashion-MNIST (784 dims, pixels 0..255) it is a
 * median 9.9 / 6.9 / 4.9% of the k-th distance at k = 1 / 10 / 100. Neighbour counts grow about as r^m with the data's
 * intrinsic dimension m (~10-20 for image sets), so widening the k-th squared distance by 10-20% about doubles them:
 * k' = 2k; k + 32 keeps a floor for small k, where the count near the k-th neighbour fluctuates most. The bound evaluated
 * on the CPU (2000 Fashion-MNIST test queries over the 60k training images): fails for 0 / 0.05 / 0% of the queries at
 * k = 1 / 10 / 100 (k' = 33 / 42 / 200); with k' = 4 at k = 1 for 17%, k' = 128 at k = 100 for 70%. The re-rank reads
 * k' rows per query, so k is capped at 1024 (k' = 2k fits the largest select bucket, 2048; beyond, and for more than
 * {@link #MAX_DIMS} dims, GpuFlatIndex runs FP32).
 *
 * <p>Immutable; thread-safe.
 */
public final class CandidateBound {
  /** FP32 unit roundoff. */
  static final double U = 0x1p-24;
  /** Relative error of one FP32 -> TF32 conversion, taken as truncation (rounding would halve it). */
  static final double TF32_INPUT = 0x1p-10;
  /** Relative error of one FP32 -> FP16 conversion of a normal value (rounded to nearest). */
  static final double HALF_INPUT = 0x1p-11;
  /** 2^-25 / s &lt;= 2^-38 X: FP16's absolute rounding error below 2^-14, unscaled (see the class comment). */
  static final double HALF_ABSOLUTE = 0x1p-38;
  /** Largest k with candidates: k' = 2k must fit the largest select bucket. */
  public static final int MAX_K = KSelect.MAX_K / 2;
  /** Largest dims of the re-rank kernel: the query in 48 KB of shared memory. */
  static final int MAX_DIMS = 12 * 1024;
  /** ||q||^2 arrives rounded up to float from a double sum of d exact products (relative error d 2^-53). */
  private static final double QNORM_SLACK = 1 + 0x1p-30;
  /** Bound of one subnormal conversion, flushed product or underflowing sum (absolute). */
  private static final double TINY = 0x1p-126;
  /** Covers the double arithmetic of the bound itself (a few roundings of 2^-53 each). */
  private static final double ARITH_SLACK = 0x1p-40;

  final Metric metric;
  final int dims;
  /** X^2: an upper bound of every ||x||^2 of the index. */
  final double maxNorm2;
  /** c: how far the pass's dot product may be from x.q, relative to X ||q|| (c_t or c_h). */
  final double dotError;
  /** gamma_d(u). */
  final double gammaD;

  /**
   * The TF32 pass's bound.
   *
   * @param maxComputedNorm2 the largest ||x||^2 of the index as FP32 computes it (gv_row_norms: d products summed
   *     with FMA), +inf when unknown (then nothing is certified)
   */
  public static CandidateBound tf32(Metric metric, int dims, float maxComputedNorm2) {
    checkDims(dims);
    double c = (1 + TF32_INPUT) * (1 + TF32_INPUT) * (1 + gamma(dims, 2 * U)) - 1;
    return new CandidateBound(metric, dims, maxComputedNorm2, c);
  }

  /** The FP16 scan's bound (arguments as {@link #tf32}). */
  public static CandidateBound half(Metric metric, int dims, float maxComputedNorm2) {
    checkDims(dims);
    double delta = HALF_INPUT + HALF_ABSOLUTE * Math.sqrt(dims);
    double c = delta * (2 + delta) + gamma(dims, 2 * U) * (1 + delta) * (1 + delta);
    return new CandidateBound(metric, dims, maxComputedNorm2, c);
  }

  private static void checkDims(int dims) {
    if (dims < 1) {
      throw new IllegalArgumentException("dims " + dims);
    }
  }

  private CandidateBound(Metric metric, int dims, float maxComputedNorm2, double dotError) {
    this.metric = metric;
    this.dims = dims;
    this.gammaD = gamma(dims, U);
    this.dotError = dotError;
    double m = Float.isNaN(maxComputedNorm2) ? Double.POSITIVE_INFINITY : Math.max(0, maxComputedNorm2);
    this.maxNorm2 = m / (1 - gammaD) * (1 + ARITH_SLACK);
  }

  /** gamma_m(unit) = m unit / (1 - m unit): the relative error bound of m rounded operations. */
  static double gamma(int m, double unit) {
    double mu = m * unit;
    if (mu >= 1) {
      throw new IllegalArgumentException("gamma undefined for m = " + m);
    }
    return mu / (1 - mu);
  }

  /** k': candidates a candidate pass keeps for k results. */
  public static int candidates(int k) {
    return Math.min(KSelect.MAX_K, Math.max(2 * k, k + 32));
  }

  /** Whether a search of k results over dims-dimensional vectors can take the TF32 pass (the half scan: k' <= 256). */
  public static boolean applies(int k, int dims) {
    return k >= 1 && k <= MAX_K && dims <= MAX_DIMS;
  }

  /** An upper bound of X ||q|| (largest ||x|| times ||q||) for ||q||^2 = qNorm2. */
  private double normProduct(double qNorm2) {
    return Math.sqrt(maxNorm2 * qNorm2) * (1 + ARITH_SLACK);
  }

  /** E: how far the candidate pass's key of any vector of the index may be from its exact key, for this query. */
  double candidateError(double qNorm2) {
    double xq = normProduct(qNorm2);
    if (metric != Metric.L2) {
      return dotError * xq + underflow(qNorm2);
    }
    double norms = maxNorm2 + qNorm2;
    double epilogue = 2 * U * (1 + U) * (2 * (1 + dotError) * xq + (1 + gammaD) * norms);
    return 2 * dotError * xq + gammaD * norms + epilogue + underflow(qNorm2);
  }

  /** K+: an upper bound of the exact key of a candidate whose FP32 re-rank key is {@code key}. */
  double rerankUpper(double key, double qNorm2) {
    if (metric != Metric.L2) {
      return key + gammaD * normProduct(qNorm2) + underflow(qNorm2);
    }
    return key / ((1 - U) * (1 - U) * (1 - gammaD)) + underflow(qNorm2);
  }

  /** What subnormal inputs and underflowing products and sums may add to a key's error (absolute). */
  private double underflow(double qNorm2) {
    return 4 * TINY * (Math.sqrt(dims) * (Math.sqrt(maxNorm2) + Math.sqrt(qNorm2)) + 3.0 * dims);
  }

  /**
   * Whether the k' candidates of one query certainly hold its exact k best (see the class comment).
   *
   * @param kthKey the re-rank's k-th FP32 key (+inf: fewer than k candidates have a finite key)
   * @param lastCandidateKey the candidate key of the k'-th candidate (+inf: fewer than k' vectors have a finite key)
   * @param qNorm2 ||q||^2, rounded up
   */
  boolean certified(float kthKey, float lastCandidateKey, float qNorm2) {
    if (lastCandidateKey == Float.POSITIVE_INFINITY) {
      return true;
    }
    if (!Float.isFinite(kthKey) || !Float.isFinite(qNorm2) || Float.isNaN(lastCandidateKey)) {
      return false;
    }
    double q2 = qNorm2 * QNORM_SLACK;
    double upper = rerankUpper(kthKey, q2);
    double e = candidateError(q2);
    double lhs = upper + e + ARITH_SLACK * (Math.abs(upper) + e);
    return lhs < lastCandidateKey;
  }

  /**
   * The queries (ascending) whose candidates are not certified, from the stats gv_rerank_exact / gv_rerank_stats
   * wrote: per query 4 floats (k-th exact key, last candidate's candidate key, ||q||^2 rounded up, the least last key
   * of the candidate pass's chunks). T is the smaller of the two last keys: a vector left out of the merged k' has a
   * candidate key of at least the k'-th's, and one that its chunk did not keep at least that chunk's last key (its
   * chunk kept fewer than k' when FlatHalfCopy asked so; +inf otherwise, and from the TF32 pass).
   */
  public int[] uncertified(float[] stats, int numQueries) {
    int[] out = new int[numQueries];
    int count = 0;
    for (int q = 0; q < numQueries; q++) {
      if (!certified(stats[4 * q], threshold(stats, q), stats[4 * q + 2])) {
        out[count++] = q;
      }
    }
    return java.util.Arrays.copyOf(out, count);
  }

  /** Query q's T of the certificate, from its stats ({@link #uncertified}): the smaller of its two last keys. */
  static float threshold(float[] stats, int q) {
    return Math.min(stats[4 * q + 1], stats[4 * q + 3]); // a NaN either side stays NaN: not certified
  }

  /**
   * Whether query q was rejected ({@link #uncertified}) only because a chunk kept too few candidates: certified by
   * the merged k' candidates' last key alone.
   */
  public boolean chunkLimited(float[] stats, int q) {
    return stats[4 * q + 3] < stats[4 * q + 1] && certified(stats[4 * q], stats[4 * q + 1], stats[4 * q + 2]);
  }
}
