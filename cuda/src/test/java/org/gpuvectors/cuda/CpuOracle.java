package org.gpuvectors.cuda;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Pure-Java reference for k-selection and exact search (double accumulation), and the result check. */
public final class CpuOracle {
  private CpuOracle() {}

  /** Unit roundoff of float32 (half an ulp of 1). */
  public static final double U32 = 0x1p-24;

  public record Entry(int id, double value) {}

  /** k best of row[off, off+len) by value; NaN and the worst infinity excluded; ids are column numbers. */
  public static List<Entry> select(float[] data, long off, int len, int k, boolean largest) {
    List<Entry> all = new ArrayList<>();
    for (int i = 0; i < len; i++) {
      float v = data[(int) (off + i)];
      if (Float.isNaN(v) || v == (largest ? Float.NEGATIVE_INFINITY : Float.POSITIVE_INFINITY)) {
        continue;
      }
      all.add(new Entry(i, v));
    }
    Comparator<Entry> c = Comparator.comparingDouble(Entry::value);
    all.sort(largest ? c.reversed() : c);
    return all.subList(0, Math.min(k, all.size()));
  }

  public static double distance(float[] x, int xo, float[] q, int qo, int dims, Metric m) {
    double s = 0;
    if (m == Metric.L2) {
      for (int d = 0; d < dims; d++) {
        double t = (double) x[xo + d] - q[qo + d];
        s += t * t;
      }
      return s;
    }
    double nx = 0, nq = 0;
    for (int d = 0; d < dims; d++) {
      s += (double) x[xo + d] * q[qo + d];
      nx += (double) x[xo + d] * x[xo + d];
      nq += (double) q[qo + d] * q[qo + d];
    }
    if (m == Metric.COSINE) {
      return nx == 0 || nq == 0 ? 0 : s / Math.sqrt(nx * nq);
    }
    return s;
  }

  public static double squaredNorm(float[] x, int xo, int dims) {
    double s = 0;
    for (int d = 0; d < dims; d++) {
      s += (double) x[xo + d] * x[xo + d];
    }
    return s;
  }

  public static boolean accepted(long[] accept, int id) {
    return accept == null || ((accept[id >> 6] >>> (id & 63)) & 1L) != 0;
  }

  /** Exact k-NN of one query; accept null = all. */
  public static List<Entry> search(float[] vectors, int n, int dims, Metric m, float[] queries, int q, int k, long[] accept) {
    List<Entry> all = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      if (!accepted(accept, i)) {
        continue;
      }
      all.add(new Entry(i, distance(vectors, i * dims, queries, q * dims, dims, m)));
    }
    Comparator<Entry> c = Comparator.comparingDouble(Entry::value);
    all.sort(m.largestFirst() ? c.reversed() : c);
    return all.subList(0, Math.min(k, all.size()));
  }

  /** What the oracle knows about every candidate of one row / query, for {@link #compare}. */
  public interface Truth {
    boolean largestFirst();

    /** False for an id out of range, filtered out, or not selectable (NaN, the worst infinity). */
    boolean selectable(int id);

    /** The id's exact value (computed in double from the inputs). */
    double value(int id);

    /** How far a value the GPU reports for this id may honestly be from {@link #value}. */
    double tolerance(int id);
  }

  /** k-selection of row[off, off+len): the GPU copies values, so they must be exact (tolerance 0). */
  public static Truth rowTruth(float[] data, long off, int len, boolean largest) {
    return new Truth() {
      public boolean largestFirst() {
        return largest;
      }

      public boolean selectable(int id) {
        if (id < 0 || id >= len) {
          return false;
        }
        float v = data[(int) (off + id)];
        return !Float.isNaN(v) && v != (largest ? Float.NEGATIVE_INFINITY : Float.POSITIVE_INFINITY);
      }

      public double value(int id) {
        return data[(int) (off + id)];
      }

      public double tolerance(int id) {
        return 0;
      }
    };
  }

  /**
   * Exact search of query {@code q} over {@code n} vectors; accept null = all.
   *
   * <p>Tolerance. The GPU computes in float32 (unit roundoff u = 2^-24), the oracle in double from the
   * same float inputs, so the difference is the GPU's rounding error. A float32 dot product of length
   * d, in any summation order, with or without FMA (cuBLAS SGEMM, no TF32: Cublas sets DEFAULT_MATH),
   * errs by at most gamma_d * sum|x_i q_i| <= d u ||x|| ||q|| (gamma_d = d u / (1 - d u)). Hence:
   * <ul>
   *   <li>L2 from GEMM, ||x||^2 - 2 x.q + ||q||^2: the three terms err by gamma_d ||x||^2,
   *       2 gamma_d ||x|| ||q|| <= gamma_d (||x||^2 + ||q||^2) and gamma_d ||q||^2, and the epilogue's
   *       scale, two adds and the clamp add a few u (||x||^2 + ||q||^2): together about
   *       (2d + 4) u (||x||^2 + ||q||^2). This error is relative to ||x||^2 + ||q||^2, not to the
   *       distance: for a near neighbour the distance is much smaller than the norms (cancellation), so a
   *       tolerance relative to the distance (or "a few ulps" of it) would be wrong, and one relative to
   *       the largest value in the row (the old check, 1e-3 x max) let a missed neighbour through.
   *       The fused kernel's sum of (x_i - q_i)^2 errs by (d + 2) u ||x - q||^2
   *       <= 2 (d + 2) u (||x||^2 + ||q||^2), inside the same bound.
   *   <li>Inner product: d u ||x|| ||q|| (+ the final rounding).
   *   <li>Cosine: vectors and queries are normalised on the host in float (each component off by at
   *       most 2u relative), then an inner product of unit vectors: (d + 4) u.
   * </ul>
   * Each tolerance gets 4 u |value| more for the final rounding to float, and the factor is
   * (2d + 8) for every metric, a small safety margin over the bounds above. For the tests' Gaussian data
   * (d = 64) it is about 1e-3 on L2 distances of about 128: ten to a hundred times below the gap
   * between neighbouring distances around the k-th, so it only excuses genuine near-ties.
   */
  public static Truth searchTruth(float[] vectors, int n, int dims, Metric m, float[] queries, int q, long[] accept) {
    double qNorm2 = squaredNorm(queries, q * dims, dims);
    double factor = (2.0 * dims + 8) * U32;
    return new Truth() {
      public boolean largestFirst() {
        return m.largestFirst();
      }

      public boolean selectable(int id) {
        return id >= 0 && id < n && accepted(accept, id);
      }

      public double value(int id) {
        return distance(vectors, id * dims, queries, q * dims, dims, m);
      }

      public double tolerance(int id) {
        double xNorm2 = squaredNorm(vectors, id * dims, dims);
        double magnitude = switch (m) {
          case L2 -> xNorm2 + qNorm2;
          case INNER_PRODUCT -> Math.sqrt(xNorm2 * qNorm2);
          case COSINE -> 1;
        };
        return factor * magnitude + 4 * U32 * Math.abs(value(id));
      }
    };
  }

  private static boolean within(double a, double b, double tol) {
    return a == b || Math.abs(a - b) <= tol;  // a == b first: infinities
  }

  /**
   * Checks one row of a GPU result ({@code ids}/{@code values} at {@code [base, base + k)}, empty slots
   * id -1 at the end) against the oracle's {@code expected} k best (exact, best first, ties by id):
   * <ul>
   *   <li>as many results as the oracle has (min(k, selectable candidates)), no id after an empty slot;
   *   <li>every id valid and selectable (inside the row, accepted by the filter, not NaN), no duplicate;
   *   <li>every reported value equals the oracle's value of that id within {@link Truth#tolerance};
   *   <li>values best first (within the two values' tolerances);
   *   <li>the id set equals the oracle's, except for ties: an id may be missing or extra only when its
   *       exact value is within tolerance(id) + tolerance(k-th id) of the k-th value, i.e. when float32
   *       rounding could honestly have ranked it either side of the k-th.
   * </ul>
   * Returns null when fine, else a description.
   */
  public static String compare(List<Entry> expected, int[] ids, float[] values, int base, int k, Truth truth) {
    int count = 0;
    while (count < k && ids[base + count] >= 0) {
      count++;
    }
    for (int i = count; i < k; i++) {
      if (ids[base + i] >= 0) {
        return "id " + ids[base + i] + " after an empty slot at " + i;
      }
    }
    if (count != expected.size()) {
      return "count " + count + " != expected " + expected.size();
    }
    Set<Integer> returned = new HashSet<>();
    for (int i = 0; i < count; i++) {
      int id = ids[base + i];
      double v = values[base + i];
      if (!truth.selectable(id)) {
        return "id " + id + " at " + i + " is out of range, filtered out or not selectable";
      }
      if (!returned.add(id)) {
        return "duplicate id " + id + " at " + i;
      }
      double tv = truth.value(id);
      if (!within(v, tv, truth.tolerance(id))) {
        return "id " + id + " at " + i + " reported " + v + " but its value is " + tv + " (tolerance "
            + truth.tolerance(id) + ")";
      }
      if (i > 0) {
        double prev = values[base + i - 1];
        double slack = truth.tolerance(id) + truth.tolerance(ids[base + i - 1]);
        boolean better = truth.largestFirst() ? v > prev + slack : v < prev - slack;
        if (better) {
          return "not best first at " + i + ": " + v + " after " + prev;
        }
      }
    }
    if (count == 0) {
      return null;
    }
    Entry kth = expected.get(count - 1);
    double kthTol = truth.tolerance(kth.id());
    Map<Integer, Entry> oracle = new HashMap<>();
    for (Entry e : expected) {
      oracle.put(e.id(), e);
    }
    for (Entry e : expected) {
      if (!returned.contains(e.id()) && !within(e.value(), kth.value(), truth.tolerance(e.id()) + kthTol)) {
        return "missed true neighbour id " + e.id() + " (value " + e.value() + ", k-th value " + kth.value() + ")";
      }
    }
    for (int id : returned) {
      if (!oracle.containsKey(id)) {
        double tv = truth.value(id);
        if (!within(tv, kth.value(), truth.tolerance(id) + kthTol)) {
          return "id " + id + " (value " + tv + ") is not among the oracle's k best (k-th value " + kth.value() + ")";
        }
      }
    }
    return null;
  }
}
