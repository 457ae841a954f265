package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.gpuvectors.cuda.device.HostRows;

/**
 * The GPU tests' result check ({@link CpuOracle#compare}) on hand-made results: it must fail on a
 * missed neighbour, a duplicate, a filtered-out or invalid id and a wrong value, and pass on tie swaps
 * and on float32 results computed the way the GPU does. Runs everywhere (no GPU).
 */
class CpuOracleTest {
  static final int N = 500, DIMS = 64, K = 10;

  static float[] gaussian(int count, Random r, float offset) {
    float[] x = new float[count];
    for (int i = 0; i < count; i++) {
      x[i] = offset + (float) r.nextGaussian();
    }
    return x;
  }

  /** A GPU-like result row from (id, value) entries, padded with empty slots (-1) to k. */
  static String check(List<CpuOracle.Entry> expected, List<CpuOracle.Entry> got, int k, CpuOracle.Truth truth) {
    int[] ids = new int[k];
    float[] vals = new float[k];
    Arrays.fill(ids, -1);
    for (int i = 0; i < got.size(); i++) {
      ids[i] = got.get(i).id();
      vals[i] = (float) got.get(i).value();
    }
    return CpuOracle.compare(expected, ids, vals, 0, k, truth);
  }

  final Random r = new Random(1);
  final float[] vectors = gaussian(N * DIMS, r, 0);
  final float[] query = gaussian(DIMS, r, 0);

  @Test
  void exactResultPasses() {
    for (Metric m : Metric.values()) {
      List<CpuOracle.Entry> exp = CpuOracle.search(vectors, N, DIMS, m, query, 0, K, null);
      assertNull(check(exp, exp, K, CpuOracle.searchTruth(vectors, N, DIMS, m, query, 0, null)), m.toString());
    }
  }

  @Test
  void missedTrueNeighbourFails() {
    for (Metric m : Metric.values()) {
      CpuOracle.Truth truth = CpuOracle.searchTruth(vectors, N, DIMS, m, query, 0, null);
      List<CpuOracle.Entry> top = CpuOracle.search(vectors, N, DIMS, m, query, 0, K + 1, null);
      List<CpuOracle.Entry> exp = top.subList(0, K);
      CpuOracle.Entry next = top.get(K);
      // the (k+1)-th must be clearly worse than the k-th, else replacing the k-th is a legitimate tie
      assertTrue(Math.abs(next.value() - exp.get(K - 1).value())
          > truth.tolerance(next.id()) + truth.tolerance(exp.get(K - 1).id()), m + ": data has a near-tie");

      // the k-th replaced by the (k+1)-th: right count, right values for the ids, sorted; still wrong
      List<CpuOracle.Entry> lastMissed = new ArrayList<>(exp.subList(0, K - 1));
      lastMissed.add(next);
      String f = check(exp, lastMissed, K, truth);
      assertNotNull(f, m + ": a result missing the k-th neighbour passed");
      // (the k-th is trivially within tolerance of itself, so it is the (k+1)-th that is flagged)
      assertTrue(f.contains("id " + next.id() + " (value") && f.contains("not among the oracle's k best"), f);

      // the best one missed
      List<CpuOracle.Entry> bestMissed = new ArrayList<>(exp.subList(1, K));
      bestMissed.add(next);
      f = check(exp, bestMissed, K, truth);
      assertNotNull(f, m + ": a result missing the nearest neighbour passed");
      assertTrue(f.contains("missed true neighbour id " + exp.get(0).id()), f);

      // one short
      assertNotNull(check(exp, exp.subList(0, K - 1), K, truth), m.toString());
    }
  }

  @Test
  void duplicateIdFails() {
    CpuOracle.Truth truth = CpuOracle.searchTruth(vectors, N, DIMS, Metric.L2, query, 0, null);
    List<CpuOracle.Entry> exp = CpuOracle.search(vectors, N, DIMS, Metric.L2, query, 0, K, null);
    List<CpuOracle.Entry> dup = new ArrayList<>(exp);
    dup.set(1, exp.get(0));
    String f = check(exp, dup, K, truth);
    assertNotNull(f);
    assertTrue(f.startsWith("duplicate id " + exp.get(0).id()), f);
  }

  @Test
  void filteredOutOrInvalidIdFails() {
    List<CpuOracle.Entry> all = CpuOracle.search(vectors, N, DIMS, Metric.L2, query, 0, K, null);
    int best = all.get(0).id();
    long[] accept = new long[(N + 63) / 64];
    for (int i = 0; i < N; i++) {
      if (i != best && i % 2 == 0) {
        accept[i >> 6] |= 1L << (i & 63);
      }
    }
    CpuOracle.Truth truth = CpuOracle.searchTruth(vectors, N, DIMS, Metric.L2, query, 0, accept);
    List<CpuOracle.Entry> exp = CpuOracle.search(vectors, N, DIMS, Metric.L2, query, 0, K, accept);
    assertNull(check(exp, exp, K, truth));
    // the unfiltered best (rejected by the filter) in front, the filtered k-th dropped
    List<CpuOracle.Entry> leak = new ArrayList<>();
    leak.add(all.get(0));
    leak.addAll(exp.subList(0, K - 1));
    String f = check(exp, leak, K, truth);
    assertNotNull(f);
    assertTrue(f.contains("filtered out"), f);

    for (int bad : new int[] {-2, N, N + 7}) {
      List<CpuOracle.Entry> invalid = new ArrayList<>(exp.subList(0, K - 1));
      invalid.add(new CpuOracle.Entry(bad, exp.get(K - 1).value()));
      assertNotNull(check(exp, invalid, K, truth), "id " + bad);
    }
  }

  @Test
  void wrongValueFails() {
    CpuOracle.Truth truth = CpuOracle.searchTruth(vectors, N, DIMS, Metric.L2, query, 0, null);
    List<CpuOracle.Entry> exp = CpuOracle.search(vectors, N, DIMS, Metric.L2, query, 0, K, null);
    List<CpuOracle.Entry> off = new ArrayList<>(exp);
    CpuOracle.Entry e = exp.get(3);
    off.set(3, new CpuOracle.Entry(e.id(), e.value() * (1 + 1e-4)));
    String f = check(exp, off, K, truth);
    assertNotNull(f);
    assertTrue(f.contains("reported"), f);
  }

  @Test
  void exactTieSwapsPass() {
    // vectors 0..5 at distances 1, 2, 3, 3, 3, 4 from the query (squared L2): k = 3 cuts through the tie
    float[] v = {1, 0, 2, 0, 3, 0, 0, 3, -3, 0, 4, 0};
    for (int i = 0; i < v.length; i += 2) {
      v[i] = (float) Math.sqrt(Math.abs(v[i])) * Math.signum(v[i]);
      v[i + 1] = (float) Math.sqrt(Math.abs(v[i + 1])) * Math.signum(v[i + 1]);
    }
    float[] q = {0, 0};
    CpuOracle.Truth truth = CpuOracle.searchTruth(v, 6, 2, Metric.L2, q, 0, null);
    List<CpuOracle.Entry> exp = CpuOracle.search(v, 6, 2, Metric.L2, q, 0, 3, null);
    assertEquals(List.of(0, 1, 2), exp.stream().map(CpuOracle.Entry::id).toList());
    for (int tied : new int[] {3, 4}) {
      List<CpuOracle.Entry> swap = List.of(exp.get(0), exp.get(1), new CpuOracle.Entry(tied, truth.value(tied)));
      assertNull(check(exp, swap, 3, truth), "tie swap with " + tied);
    }
    // but not the one after the tie
    assertNotNull(check(exp, List.of(exp.get(0), exp.get(1), new CpuOracle.Entry(5, truth.value(5))), 3, truth));

    // k-selection: exact ties at the k-th value may be any of the tied ids
    float[] row = {5, 1, 3, 3, 3, 0, Float.NaN};
    List<CpuOracle.Entry> sel = CpuOracle.select(row, 0, row.length, 3, false);
    CpuOracle.Truth rt = CpuOracle.rowTruth(row, 0, row.length, false);
    assertNull(check(sel, List.of(new CpuOracle.Entry(5, 0), new CpuOracle.Entry(1, 1), new CpuOracle.Entry(4, 3)), 3, rt));
    assertNotNull(check(sel, List.of(new CpuOracle.Entry(5, 0), new CpuOracle.Entry(1, 1), new CpuOracle.Entry(6, Float.NaN)),
        3, rt), "a NaN entry is not selectable");
    assertNotNull(check(sel, List.of(new CpuOracle.Entry(5, 0), new CpuOracle.Entry(2, 3), new CpuOracle.Entry(4, 3)), 3, rt),
        "missing the 1");
  }

  /**
   * Results computed as the GPU does in float32 (GEMM L2 expansion ||x||^2 - 2 x.q + ||q||^2, clamped
   * at 0; inner products; cosine over float-normalised vectors), ranked by their own float values,
   * pass: the tolerance is not too tight. Includes data far from the origin, where the expansion
   * cancels badly (norms ~ 100^2 * dims, distances ~ dims): near-ties there are real.
   */
  @Test
  void float32GemmLikeResultsPass() {
    Random rr = new Random(5);
    for (float offset : new float[] {0, 100}) {
      float[] x = gaussian(N * DIMS, rr, offset);
      for (Metric m : Metric.values()) {
        for (int t = 0; t < 5; t++) {
          float[] q = gaussian(DIMS, rr, offset);
          List<CpuOracle.Entry> gpu = new ArrayList<>();
          for (int i = 0; i < N; i++) {
            gpu.add(new CpuOracle.Entry(i, gemmLike(x, i, q, m)));
          }
          gpu.sort((a, b) -> m.largestFirst() ? Double.compare(b.value(), a.value()) : Double.compare(a.value(), b.value()));
          for (int k : new int[] {1, 10, 100}) {
            List<CpuOracle.Entry> exp = CpuOracle.search(x, N, DIMS, m, q, 0, k, null);
            String f = check(exp, gpu.subList(0, k), k, CpuOracle.searchTruth(x, N, DIMS, m, q, 0, null));
            assertNull(f, m + " offset " + offset + " k " + k);
          }
        }
      }
    }
  }

  static float dot(float[] a, int ao, float[] b, int bo) {
    float s = 0;
    for (int d = 0; d < DIMS; d++) {
      s += a[ao + d] * b[bo + d];
    }
    return s;
  }

  static float gemmLike(float[] x, int i, float[] q, Metric m) {
    if (m == Metric.COSINE) {
      float[] xn = Arrays.copyOfRange(x, i * DIMS, (i + 1) * DIMS);
      float[] qn = q.clone();
      HostRows.normalize(xn, 0, 1, DIMS);
      HostRows.normalize(qn, 0, 1, DIMS);
      return dot(xn, 0, qn, 0);
    }
    float ip = dot(x, i * DIMS, q, 0);
    if (m == Metric.INNER_PRODUCT) {
      return ip;
    }
    return Math.max(0f, dot(x, i * DIMS, x, i * DIMS) + -2f * ip + dot(q, 0, q, 0));
  }
}
