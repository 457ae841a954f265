package org.gpuvectors.cuda;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** Pure-Java reference for k-selection and exact search (double accumulation). */
final class CpuOracle {
  private CpuOracle() {}

  record Entry(int id, double value) {}

  /** k best of row[off, off+len) by value; NaN and the worst infinity excluded; ids are column numbers. */
  static List<Entry> select(float[] data, long off, int len, int k, boolean largest) {
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

  static double distance(float[] x, int xo, float[] q, int qo, int dims, Metric m) {
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

  /** Exact k-NN of one query; accept null = all. */
  static List<Entry> search(float[] vectors, int n, int dims, Metric m, float[] queries, int q, int k, long[] accept) {
    List<Entry> all = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      if (accept != null && ((accept[i >> 6] >>> (i & 63)) & 1L) == 0) {
        continue;
      }
      all.add(new Entry(i, distance(vectors, i * dims, queries, q * dims, dims, m)));
    }
    Comparator<Entry> c = Comparator.comparingDouble(Entry::value);
    all.sort(m.largestFirst() ? c.reversed() : c);
    return all.subList(0, Math.min(k, all.size()));
  }

  /**
   * Checks one row of a GPU result against the oracle: same count; values equal position by position
   * (relative tolerance on the scale of the row); every id distinct and its own true value equal to
   * the reported one (ties may pick different ids). Returns null when fine, else a description.
   */
  static String compare(List<Entry> expected, int[] ids, float[] values, int base, int k, double tol,
                        java.util.function.IntToDoubleFunction trueValue) {
    int count = 0;
    while (count < k && ids[base + count] >= 0) {
      count++;
    }
    for (int i = count; i < k; i++) {
      if (ids[base + i] >= 0) {
        return "id after an empty slot at " + i;
      }
    }
    if (count != expected.size()) {
      return "count " + count + " != expected " + expected.size();
    }
    double scale = 1e-6;
    for (Entry e : expected) {
      scale = Math.max(scale, Math.abs(e.value()));
    }
    java.util.Set<Integer> seen = new java.util.HashSet<>();
    for (int i = 0; i < count; i++) {
      int id = ids[base + i];
      double v = values[base + i];
      if (!seen.add(id)) {
        return "duplicate id " + id + " at " + i;
      }
      if (Math.abs(v - expected.get(i).value()) > tol * scale) {
        return "value at " + i + ": " + v + " != expected " + expected.get(i).value() + " (id " + id + " vs "
            + expected.get(i).id() + ")";
      }
      double tv = trueValue.applyAsDouble(id);
      if (Math.abs(v - tv) > tol * scale) {
        return "id " + id + " at " + i + " reported " + v + " but its value is " + tv;
      }
    }
    return null;
  }
}
