package org.gpuvectors.cuda.rerank;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.gpuvectors.cuda.FashionLike;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.flat.HalfScanParams;
import org.gpuvectors.cuda.select.KSelect;

/**
 * {@link CandidateBound} on the CPU: the TF32 candidate pass and the FP16 scan emulated in Java (inputs cut to TF32, products summed in
 * FP32 in several orders and rounding modes, the GEMM path's FP32 norms and epilogue) against keys computed in
 * double from the same floats. Checks that the bound holds, that it is nearly tight where TF32 loses the most
 * (inputs whose cut mantissa bits are all ones), and that a certified query's candidates hold its exact k best.
 */
class CandidateBoundTest {

  /** FP32 -> TF32 by truncation (the mma instruction ignoring the low 13 mantissa bits). */
  static float tf32Truncate(float x) {
    return Float.intBitsToFloat(Float.floatToRawIntBits(x) & 0xFFFFE000);
  }

  /** FP32 -> TF32 rounded to nearest, ties to even. */
  static float tf32Round(float x) {
    int b = Float.floatToRawIntBits(x);
    return Float.intBitsToFloat((b + 0xFFF + ((b >>> 13) & 1)) & 0xFFFFE000);
  }

  /** v rounded toward zero to float (a truncating accumulator). */
  static float towardZero(double v) {
    float f = (float) v;
    return Math.abs(f) > Math.abs(v) ? Math.nextAfter(f, 0.0) : f;
  }

  enum Order { SEQUENTIAL, TRUNCATING, PAIRWISE }

  /** The TF32 dot product: inputs converted, exact products (11-bit mantissas), FP32 sums in the given order. */
  static float tf32Dot(float[] x, int xo, float[] q, int qo, int d, boolean truncate, Order order) {
    float[] p = new float[d];
    for (int i = 0; i < d; i++) {
      float a = truncate ? tf32Truncate(x[xo + i]) : tf32Round(x[xo + i]);
      float b = truncate ? tf32Truncate(q[qo + i]) : tf32Round(q[qo + i]);
      p[i] = a * b; // exact: 11 x 11 significant bits
    }
    return sum(p, order);
  }

  /** The products summed in FP32 in the given order (as a tensor core's accumulator might). */
  static float sum(float[] p, Order order) {
    return switch (order) {
      case SEQUENTIAL -> {
        float s = 0;
        for (float v : p) {
          s += v;
        }
        yield s;
      }
      case TRUNCATING -> {
        float s = 0;
        for (float v : p) {
          s = towardZero((double) s + v);
        }
        yield s;
      }
      case PAIRWISE -> pairwise(p, 0, p.length);
    };
  }

  static float pairwise(float[] p, int from, int to) {
    if (to - from == 1) {
      return p[from];
    }
    int mid = (from + to) >>> 1;
    return pairwise(p, from, mid) + pairwise(p, mid, to);
  }

  /** ||x||^2 as the norm kernels compute it (FP32, FMA). */
  static float norm2(float[] x, int o, int d) {
    float s = 0;
    for (int i = 0; i < d; i++) {
      s = Math.fma(x[o + i], x[o + i], s);
    }
    return s;
  }

  /** The candidate pass's key of one vector: the select epilogue over the TF32 GEMM output. */
  static float tf32Key(Metric m, float[] x, int xo, float[] q, int qo, int d, boolean truncate, Order order) {
    float dot = tf32Dot(x, xo, q, qo, d, truncate, order);
    if (m != Metric.L2) {
      return -dot;
    }
    float v = Math.fma(-2f, dot, norm2(x, xo, d)) + norm2(q, qo, d);
    return Math.max(v, 0f);
  }

  /** The re-rank kernel's FP32 key: (x_i - q_i) rounded, squares summed with FMA (or -x.q). */
  static float rerankKey(Metric m, float[] x, int xo, float[] q, int qo, int d) {
    float s = 0;
    for (int i = 0; i < d; i++) {
      if (m == Metric.L2) {
        float t = x[xo + i] - q[qo + i];
        s = Math.fma(t, t, s);
      } else {
        s = Math.fma(x[xo + i], q[qo + i], s);
      }
    }
    return m == Metric.L2 ? s : -s;
  }

  static double exactKey(Metric m, float[] x, int xo, float[] q, int qo, int d) {
    double s = 0;
    for (int i = 0; i < d; i++) {
      if (m == Metric.L2) {
        double t = (double) x[xo + i] - q[qo + i];
        s += t * t;
      } else {
        s += (double) x[xo + i] * q[qo + i];
      }
    }
    return m == Metric.L2 ? s : -s;
  }

  static float maxNorm2(float[] x, int n, int d) {
    float max = 0;
    for (int i = 0; i < n; i++) {
      max = Math.max(max, norm2(x, i * d, d));
    }
    return max;
  }

  static float qNorm2Up(float[] q, int qo, int d) {
    double s = 0;
    for (int i = 0; i < d; i++) {
      s += (double) q[qo + i] * q[qo + i];
    }
    float f = (float) s;
    return f < s ? Math.nextUp(f) : f;
  }

  /** Largest |TF32 key - exact key| / E over all pairs, all conversion and summation modes; fails if above 1. */
  static double worstRatio(Metric m, float[] x, int n, float[] q, int nq, int d) {
    CandidateBound b = CandidateBound.tf32(m, d, maxNorm2(x, n, d));
    double worst = 0;
    for (int qi = 0; qi < nq; qi++) {
      double e = b.candidateError(qNorm2Up(q, qi * d, d));
      for (int i = 0; i < n; i++) {
        double exact = exactKey(m, x, i * d, q, qi * d, d);
        for (boolean truncate : new boolean[] {true, false}) {
          for (Order order : Order.values()) {
            double err = Math.abs(tf32Key(m, x, i * d, q, qi * d, d, truncate, order) - exact);
            assertTrue(err <= e, m + " d=" + d + " query " + qi + " vector " + i + " " + order + " truncate=" + truncate
                + ": error " + err + " > bound " + e);
            worst = Math.max(worst, err / e);
          }
        }
      }
    }
    return worst;
  }

  static float maxAbs(float[] x, int from, int count) {
    float m = 0;
    for (int i = from; i < from + count; i++) {
      m = Math.max(m, Math.abs(x[i]));
    }
    return m;
  }

  /** A value scaled and rounded to FP16 (to nearest), back in float. */
  static float toHalf(float v, float scale) {
    return Float.float16ToFloat(Float.floatToFloat16(v * scale));
  }

  /**
   * The half scan's key of one vector: the index's scale s ({@code indexMax}: its largest |x_i|) and the query's
   * own t, FP16 inputs, exact products summed in FP32 in the given order, the sum divided by s t, then the keys'
   * epilogue (FP32 norms).
   */
  static float halfKey(Metric m, float[] x, int xo, float indexMax, float[] q, int qo, int d, Order order) {
    float s = HalfScanParams.halfScale(indexMax); // the kernel's scales (ParamLayoutTest checks the rule)
    float t = HalfScanParams.halfScale(maxAbs(q, qo, d));
    float[] p = new float[d];
    for (int i = 0; i < d; i++) {
      p[i] = toHalf(x[xo + i], s) * toHalf(q[qo + i], t); // exact: 11 x 11 significant bits
    }
    float dot = sum(p, order) * (1f / s / t); // powers of two: exact
    if (m != Metric.L2) {
      return -dot;
    }
    return Math.max(0f, Math.fma(-2f, dot, norm2(x, xo, d)) + norm2(q, qo, d));
  }

  /** Largest |FP16 key - exact key| / E over all pairs and summation orders; fails if above 1. */
  static double worstHalfRatio(Metric m, float[] x, int n, float[] q, int nq, int d) {
    CandidateBound b = CandidateBound.half(m, d, maxNorm2(x, n, d));
    float indexMax = maxAbs(x, 0, n * d);
    double worst = 0;
    for (int qi = 0; qi < nq; qi++) {
      double e = b.candidateError(qNorm2Up(q, qi * d, d));
      for (int i = 0; i < n; i++) {
        double exact = exactKey(m, x, i * d, q, qi * d, d);
        for (Order order : Order.values()) {
          double err = Math.abs(halfKey(m, x, i * d, indexMax, q, qi * d, d, order) - exact);
          assertTrue(err <= e, m + " d=" + d + " query " + qi + " vector " + i + " " + order + ": FP16 error " + err
              + " > bound " + e);
          worst = Math.max(worst, err / e);
        }
      }
    }
    return worst;
  }

  static float[] gaussian(int count, Random r, double scale, double offset) {
    float[] x = new float[count];
    for (int i = 0; i < count; i++) {
      x[i] = (float) (offset + scale * r.nextGaussian());
    }
    return x;
  }

  @Test
  void candidatesAndLimits() {
    assertEquals(33, CandidateBound.candidates(1));
    assertEquals(42, CandidateBound.candidates(10));
    assertEquals(64, CandidateBound.candidates(32));
    assertEquals(200, CandidateBound.candidates(100));
    assertEquals(2048, CandidateBound.candidates(1024));
    assertTrue(CandidateBound.applies(1024, 784));
    assertFalse(CandidateBound.applies(1025, 784), "k' = 2k would pass the largest select bucket");
    assertFalse(CandidateBound.applies(10, CandidateBound.MAX_DIMS + 1), "the query must fit the re-rank's shared memory");
    for (int k = 1; k <= CandidateBound.MAX_K; k++) {
      int kc = CandidateBound.candidates(k);
      assertTrue(kc >= 2 * k && kc >= k + 32 && kc <= KSelect.MAX_K, "k=" + k + " k'=" + kc);
    }
  }

  @Test
  void dotErrorConstantIsTruncationOfBothInputsPlusFp32Sums() {
    CandidateBound b = CandidateBound.tf32(Metric.L2, 784, 1f);
    // (1 + 2^-10)^2 (1 + gamma_784(2^-23)) - 1: about 2^-9 + 784 * 2^-23
    assertEquals(1, b.dotError / (0x1p-9 + 784 * 0x1p-23), 1e-3);
    assertTrue(b.dotError > 0x1p-9 + 784 * 0x1p-23, "never below its first-order terms");
  }

  @Test
  void boundHoldsOnGaussianAndPixelData() {
    Random r = new Random(5);
    int d = 64, n = 60, nq = 6;
    float[] x = gaussian(n * d, r, 1, 0);
    float[] q = gaussian(nq * d, r, 1, 0);
    for (Metric m : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
      worstRatio(m, x, n, q, nq, d);
    }
    d = 784;
    float[] px = FashionLike.vectors(40, 1);
    float[] pq = FashionLike.vectors(3, 2);
    for (Metric m : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
      worstRatio(m, px, 40, pq, 3, d);
    }
    // large offsets: the norms dwarf the distances, as in the near-tie cases that fall back
    float[] ox = gaussian(20 * 32, r, 0.01, 100);
    float[] oq = gaussian(4 * 32, r, 0.01, 100);
    for (Metric m : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
      worstRatio(m, ox, 20, oq, 4, 32);
    }
    // tiny values: products and norms in the subnormal range, where only the bound's absolute term holds
    float[] sx = gaussian(20 * 32, r, 1e-20, 0);
    float[] sq = gaussian(4 * 32, r, 1e-20, 0);
    for (Metric m : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
      worstRatio(m, sx, 20, sq, 4, 32);
    }
  }

  @Test
  void halfBoundIsAboutHalfOfTf32s() {
    CandidateBound h = CandidateBound.half(Metric.L2, 784, 1f);
    CandidateBound t = CandidateBound.tf32(Metric.L2, 784, 1f);
    // 2 x 2^-11 + 784 x 2^-23 to first order
    assertEquals(1, h.dotError / (0x1p-10 + 784 * 0x1p-23), 1e-3);
    assertTrue(h.dotError < 0.6 * t.dotError, h.dotError + " against TF32's " + t.dotError);
  }

  /**
   * The FP16 scan emulated (scales, rounding, FP32 sums in three orders, the epilogue) against double keys: the bound
   * holds on Gaussian, pixel, offset data, values spread over many magnitudes (some in FP16's subnormal range after
   * scaling), and tiny values whose scale is clamped.
   */
  @Test
  void halfBoundHoldsOnVariedData() {
    Random r = new Random(11);
    int d = 64;
    float[] x = gaussian(60 * d, r, 1, 0);
    float[] q = gaussian(6 * d, r, 1, 0);
    float[] px = FashionLike.vectors(40, 1);
    float[] pq = FashionLike.vectors(3, 2);
    float[] ox = gaussian(20 * 32, r, 0.01, 100);
    float[] oq = gaussian(4 * 32, r, 0.01, 100);
    float[] wx = new float[20 * 48]; // magnitudes from 2^-30 to 2^10: the small ones below FP16's normal range
    float[] wq = new float[4 * 48];
    for (float[] a : new float[][] {wx, wq}) {
      for (int i = 0; i < a.length; i++) {
        a[i] = (float) (r.nextGaussian() * Math.scalb(1.0, r.nextInt(41) - 30));
      }
    }
    float[] sx = gaussian(20 * 32, r, 1e-33, 0); // scales clamped at 2^114
    float[] sq = gaussian(4 * 32, r, 1e-33, 0);
    for (Metric m : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
      worstHalfRatio(m, x, 60, q, 6, d);
      worstHalfRatio(m, px, 40, pq, 3, 784);
      worstHalfRatio(m, ox, 20, oq, 4, 32);
      worstHalfRatio(m, wx, 20, wq, 4, 48);
      worstHalfRatio(m, sx, 20, sq, 4, 32);
    }
  }

  /** Inputs that FP16 rounds by almost half a unit: the observed error reaches most of the bound. */
  @Test
  void halfBoundIsNearlyTightForWorstCaseMantissas() {
    int d = 64;
    // 1 + 2^-11 - 2^-20, scaled by 2^13 (largest 1.0005 < 2: s = 2^13), rounds to 1 in FP16: error ~2^-11
    float worst = 1f + 0x1p-11f - 0x1p-20f;
    float[] x = new float[d];
    Arrays.fill(x, worst);
    double ratio = worstHalfRatio(Metric.INNER_PRODUCT, x, 1, x, 1, d);
    assertTrue(ratio > 0.9, "the bound is " + (1 / ratio) + "x the worst observed error");
  }

  /**
   * Inputs whose 13 cut mantissa bits are all ones (1 + 2^-10 - 2^-23) lose the most to truncation: the
   * observed error must stay below the bound yet reach most of it, or the bound would be loose for nothing.
   */
  @Test
  void boundIsNearlyTightForWorstCaseMantissas() {
    int d = 64;
    float worst = 1f + 0x1p-10f - 0x1p-23f;
    float[] x = new float[d];
    Arrays.fill(x, worst);
    for (Metric m : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
      double ratio = worstRatio(m, x, 1, x, 1, d);
      assertTrue(ratio > 0.9, m + ": the bound is " + (1 / ratio) + "x the worst observed error");
    }
  }

  @Test
  void certificateEdgeCases() {
    CandidateBound b = CandidateBound.tf32(Metric.L2, 16, 100f);
    float q2 = 100f;
    double e = b.candidateError(q2);
    assertTrue(b.certified(1f, Float.POSITIVE_INFINITY, q2), "fewer than k' finite keys: every one is a candidate");
    assertTrue(b.certified(Float.POSITIVE_INFINITY, Float.POSITIVE_INFINITY, q2));
    assertFalse(b.certified(Float.POSITIVE_INFINITY, 5f, q2), "fewer than k exact keys, yet k' TF32 keys");
    assertFalse(b.certified(Float.NaN, 5f, q2));
    assertFalse(b.certified(1f, Float.NaN, q2));
    assertFalse(b.certified(1f, 5f, Float.NaN));
    float kth = 10f;
    float above = (float) (kth + 1.01 * e);
    float below = (float) (kth + 0.99 * e);
    assertTrue(b.certified(kth, above, q2));
    assertFalse(b.certified(kth, below, q2));
    assertFalse(b.certified(kth, kth, q2), "a tie at the k-th key is never certified");
    assertFalse(CandidateBound.tf32(Metric.L2, 16, Float.POSITIVE_INFINITY).certified(kth, 1e30f, q2),
        "an unbounded norm certifies nothing");
    CandidateBound ip = CandidateBound.tf32(Metric.INNER_PRODUCT, 16, 1f);
    assertTrue(ip.certified(-0.9f, -0.5f, 1f));
    assertFalse(ip.certified(-0.9f, -0.899f, 1f));
    float inf = Float.POSITIVE_INFINITY;
    float[] stats = {kth, above, q2, inf, kth, below, q2, inf, kth, inf, q2, inf};
    assertEquals(List.of(1), Arrays.stream(b.uncertified(stats, 3)).boxed().toList());
    // the least of the chunks' last keys bounds T too: a chunk that kept fewer than it held
    float[] chunked = {kth, above, q2, below, kth, above, q2, above, kth, inf, q2, below, kth, below, q2, above};
    assertEquals(List.of(0, 2, 3), Arrays.stream(b.uncertified(chunked, 4)).boxed().toList());
    assertTrue(b.chunkLimited(chunked, 0), "certified by the merged k' alone: rejected for a chunk's sake");
    assertTrue(b.chunkLimited(chunked, 2), "fewer than k' merged (all of them candidates): only the chunk failed it");
    assertFalse(b.chunkLimited(chunked, 3), "the merged k'-th key itself fails");
    assertEquals(below, CandidateBound.threshold(chunked, 0));
    assertTrue(Float.isNaN(CandidateBound.threshold(new float[] {kth, Float.NaN, q2, 1f}, 0)), "NaN stays NaN");
  }

  /**
   * As {@link #certifiedCandidatesHoldTheExactKBest}, with the candidates taken chunk by chunk the way the half scan
   * takes them when each chunk keeps fewer than k' ({@link HalfScanParams#chunkCandidates}): every chunk's best few
   * by candidate key, the k' best of those merged, T the least of the merged k'-th key and every chunk's last kept
   * key ({@link CandidateBound#threshold}). Some queries' neighbours lie one after another in one chunk, so that
   * chunks keep too few and T comes from a chunk. Whenever the certificate holds, k candidates are strictly better
   * (exact keys) than every vector left out; rejections for a chunk's sake are seen.
   */
  @Test
  void chunkedCandidatesCertifiedHoldTheExactKBest() {
    Random r = new Random(19);
    int d = 24, n = 480, chunkLen = 40, chunks = n / chunkLen, kept = 6;
    int[] outcomes = new int[3]; // rejected, certified, rejected for a chunk's sake
    for (Metric m : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
      float[] q = gaussian(12 * d, r, 1, 0);
      float[] x = gaussian(n * d, r, 1, 0);
      for (int qi = 0; qi < 12; qi += 3) { // every third query's 30 near neighbours lie in rows 100 .. 129
        for (int j = 0; j < 30; j++) {
          for (int t = 0; t < d; t++) {
            x[(100 + j) * d + t] = q[qi * d + t] * (m == Metric.L2 ? 1f : 3f) + 0.02f * (j + 1) * (t == j % d ? 1 : 0);
          }
        }
      }
      CandidateBound b = CandidateBound.tf32(m, d, maxNorm2(x, n, d)); // the keys below are TF32's
      for (int k : new int[] {1, 5, 10}) {
        int kc = CandidateBound.candidates(k);
        for (int qi = 0; qi < 12; qi++) {
          int qo = qi * d;
          float[] tk = tf32Keys(m, x, q, qo, d, n);
          List<Integer> union = new ArrayList<>();
          float chunkLast = Float.POSITIVE_INFINITY;
          for (int c = 0; c < chunks; c++) {
            Integer[] byKey = IntStream.range(c * chunkLen, (c + 1) * chunkLen).boxed()
                .sorted(Comparator.comparingDouble(i -> tk[i])).toArray(Integer[]::new);
            union.addAll(Arrays.asList(byKey).subList(0, kept));
            chunkLast = Math.min(chunkLast, tk[byKey[kept - 1]]);
          }
          union.sort(Comparator.comparingDouble(i -> tk[i]));
          List<Integer> cand = new ArrayList<>(union.subList(0, kc));
          float[] rk = rerankSorted(m, x, q, qo, d, cand, n);
          float[] stats = {rk[cand.get(k - 1)], tk[union.get(kc - 1)], qNorm2Up(q, qo, d), chunkLast};
          boolean ok = b.uncertified(stats, 1).length == 0;
          outcomes[ok ? 1 : b.chunkLimited(stats, 0) ? 2 : 0]++;
          if (ok) {
            assertCandidatesBeatTheRest(m, x, q, qo, d, cand, k, n, m + " k=" + k + " query " + qi);
          }
        }
      }
    }
    assertTrue(outcomes[1] > 0 && outcomes[2] > 0, "certified and chunk-limited both seen: " + Arrays.toString(outcomes));
  }

  /** The TF32 candidate keys (truncated inputs, truncating sums) of the n vectors against query row qo. */
  private static float[] tf32Keys(Metric m, float[] x, float[] q, int qo, int d, int n) {
    float[] tk = new float[n];
    for (int i = 0; i < n; i++) {
      tk[i] = tf32Key(m, x, i * d, q, qo, d, true, Order.TRUNCATING);
    }
    return tk;
  }

  /** The candidates' FP32 re-rank keys (indexed by vector), the candidates sorted by them. */
  private static float[] rerankSorted(Metric m, float[] x, float[] q, int qo, int d, List<Integer> cand, int n) {
    float[] rk = new float[n];
    for (int i : cand) {
      rk[i] = rerankKey(m, x, i * d, q, qo, d);
    }
    cand.sort(Comparator.comparingDouble(i -> rk[i]));
    return rk;
  }

  /** Asserts that k candidates are strictly better (exact keys) than every vector of the n left out of them. */
  private static void assertCandidatesBeatTheRest(Metric m, float[] x, float[] q, int qo, int d, List<Integer> cand,
                                                  int k, int n, String what) {
    double[] exact = new double[cand.size()];
    for (int c = 0; c < exact.length; c++) {
      exact[c] = exactKey(m, x, cand.get(c) * d, q, qo, d);
    }
    Arrays.sort(exact);
    java.util.Set<Integer> in = new java.util.HashSet<>(cand);
    for (int j = 0; j < n; j++) {
      if (!in.contains(j)) {
        double left = exactKey(m, x, j * d, q, qo, d);
        assertTrue(exact[k - 1] < left, what + ": vector " + j + " left out at exact key " + left
            + ", k-th candidate " + exact[k - 1]);
      }
    }
  }

  /**
   * The whole candidate path emulated per query (TF32 keys, k' smallest, FP32 re-rank, k-th re-rank key): whenever
   * the certificate holds, k candidates are strictly better (exact keys) than every vector left out. Data mixes
   * well-separated queries with near-tie ones so that both outcomes occur.
   */
  @Test
  void certifiedCandidatesHoldTheExactKBest() {
    Random r = new Random(9);
    int d = 24, n = 400;
    int[] certified = new int[2];
    for (Metric m : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
      for (double offset : new double[] {0, 3, 30}) {
        float[] x = gaussian(n * d, r, 1, offset);
        float[] q = gaussian(12 * d, r, 1, offset);
        CandidateBound b = CandidateBound.tf32(m, d, maxNorm2(x, n, d));
        for (int k : new int[] {1, 5, 20}) {
          int kc = CandidateBound.candidates(k);
          for (int qi = 0; qi < 12; qi++) {
            int qo = qi * d;
            float[] tk = tf32Keys(m, x, q, qo, d, n);
            Integer[] byTf32 = IntStream.range(0, n).boxed().sorted(Comparator.comparingDouble(i -> tk[i]))
                .toArray(Integer[]::new);
            List<Integer> cand = new ArrayList<>(Arrays.asList(byTf32).subList(0, kc));
            float[] rk = rerankSorted(m, x, q, qo, d, cand, n);
            boolean ok = b.certified(rk[cand.get(k - 1)], tk[byTf32[kc - 1]], qNorm2Up(q, qo, d));
            certified[ok ? 1 : 0]++;
            if (ok) {
              assertCandidatesBeatTheRest(m, x, q, qo, d, cand, k, n,
                  m + " offset " + offset + " k=" + k + " query " + qi);
            }
          }
        }
      }
    }
    assertTrue(certified[0] > 0 && certified[1] > 0, "both outcomes exercised: " + Arrays.toString(certified));
  }
  /** Precision.AUTO's choice: large batches, few candidates against n, and an index whose certificate mostly holds. */
  @Test
  void autoLeavesTf32WhereTheCertificateMostlyFails() {
    long n = 2_000_000;
    assertTrue(GpuFlatIndex.autoTakesTf32(10_000, 10, n, 0, 0), "a large batch, nothing checked yet");
    assertFalse(GpuFlatIndex.autoTakesTf32(1023, 10, n, 0, 0), "a small batch");
    assertFalse(GpuFlatIndex.autoTakesTf32(10_000, 10, 1000, 0, 0), "candidates past 1/50 of the vectors");
    assertTrue(GpuFlatIndex.autoTakesTf32(10_000, 10, n, 80_000, 28_800), "36 % rejected (10M x 128): TF32 still wins");
    assertFalse(GpuFlatIndex.autoTakesTf32(10_000, 10, n, 80_000, 79_400), "99 % rejected (2M x 768): FP32");
    assertTrue(GpuFlatIndex.autoTakesTf32(10_000, 10, n, 1000, 1000), "too few checked to judge");
    assertFalse(GpuFlatIndex.autoTakesTf32(10_000, 10, n, 1024, 513), "past half of at least 1,024 checked");
    assertTrue(GpuFlatIndex.autoTakesTf32(10_000, 10, n, 1024, 512), "half exactly: TF32 kept");
  }
}
