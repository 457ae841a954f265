package org.gpuvectors.cuda.ivf;

import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.GpuTestCase;
import org.gpuvectors.cuda.IvfConfig;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.rerank.RerankParams;
import org.gpuvectors.cuda.rerank.RerankTable;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The re-rank that selects its rows' k best itself ({@link GpuIvfPqIndex#enqueueRerank}, a few rows of at most {@link
 * RerankParams#SELECT_MAX_CANDIDATES} candidates, the kernel's capacity, above the default cap {@link
 * IvfConfig#fusedSelectMaxCandidates}: on a device configured up to it) against the same rows re-ranked with more rows
 * than {@link GpuIvfPqIndex#FUSED_SELECT_MAX_ROWS}, which take the selection launch after the re-rank, its fallback
 * (itself checked against the oracle in KSelectGpuTest): equal values, equal id sets up to ties; and against a CPU
 * oracle of the exact keys: each row's k best candidates by squared L2 or -x.q, empty slots (-1) and NaN vectors
 * never selected. The candidates include duplicate vectors (equal keys), empty slots and a vector with a NaN.
 */
class RerankSelectGpuTest extends GpuTestCase {

  @ParameterizedTest
  @EnumSource(value = Metric.class, names = {"L2", "INNER_PRODUCT"})
  void fusedSelectionMatchesBlockSelectAndOracle(Metric metric) {
    Random r = new Random(7 + metric.ordinal());
    List<String> failures = new ArrayList<>();
    int cases = 0;
    try (GpuDevice d = GpuDevice.open(0, GpuConfig.builder()
        .ivf(IvfConfig.defaults().withFusedSelectMaxCandidates(RerankParams.SELECT_MAX_CANDIDATES)).build())) {
      for (int dims : new int[] {24, 13}) {
        int n = 3000;
        float[] x = new float[n * dims];
        for (int i = 0; i < x.length; i++) {
          x[i] = (float) r.nextGaussian();
        }
        for (int v = 100; v < 200; v++) { // vectors 100..199 copy vectors 0..99: equal keys
          System.arraycopy(x, (v - 100) * dims, x, v * dims, dims);
        }
        x[2999 * dims + 3] = Float.NaN;
        for (int rows : new int[] {1, 5, 64}) {
          for (int kc : new int[] {1, 37, 160, 512}) {
            for (int k : new int[] {1, 10, 100}) {
              if (k > kc) {
                continue;
              }
              cases++;
              String f = check(d, metric, x, n, dims, rows, kc, k, r);
              if (f != null) {
                failures.add(f);
              }
            }
          }
        }
      }
      assertEquals(0, d.bytesInUse(), "all device buffers returned to the pool");
    }
    System.out.println("[gpu-vectors] re-rank selection (" + metric + "): " + cases + " cases, " + failures.size()
        + " failures");
    assertEquals(List.of(), failures.subList(0, Math.min(5, failures.size())));
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /**
   * One case on device {@code device}: {@code rows} rows re-ranked with the selection in the re-rank (values and ids
   * [1]), and the same rows among {@link GpuIvfPqIndex#FUSED_SELECT_MAX_ROWS} + 1 (the rest empty), which take the
   * selection launch ([0]).
   */
  private static String check(GpuDevice device, Metric metric, float[] x, int n, int dims, int rows, int kc, int k,
                              Random r) {
    int padded = GpuIvfPqIndex.FUSED_SELECT_MAX_ROWS + 1; // rows past the fused selection's: the selection launch
    float[] queries = new float[padded * dims];
    for (int i = 0; i < rows * dims; i++) {
      queries[i] = (float) r.nextGaussian();
    }
    int[] cand = new int[padded * kc];
    java.util.Arrays.fill(cand, -1); // rows past `rows`: empty
    float[] candKeys = new float[padded * kc];
    for (int row = 0; row < rows; row++) {
      Set<Integer> used = new HashSet<>();
      for (int c = 0; c < kc; c++) {
        int prev = c > 0 ? cand[row * kc + c - 1] : -1;
        int id;
        if (prev >= 0 && prev < 100 && c % 2 == 1) {
          id = prev + 100; // the twin of the previous candidate: an equal key
        } else if (r.nextInt(10) == 0) {
          id = -1; // an empty slot
        } else {
          id = r.nextInt(4) == 0 ? r.nextInt(100) : r.nextInt(n);
        }
        if (id >= 0 && !used.add(id)) {
          id = -1; // a candidate list names each vector once
        }
        cand[row * kc + c] = id;
        candKeys[row * kc + c] = c; // approximate keys: unused by the selection
      }
      if (kc > 2 && used.add(2999)) {
        cand[row * kc + kc - 1] = 2999; // the NaN vector: never selected
      }
    }
    float[][] values = new float[2][rows * k];
    int[][] ids = new int[2][rows * k];
    try (GpuDevice.Scope s = device.lock();
         DeviceBuffer dx = device.allocate(4L * x.length);
         DeviceBuffer dq = device.allocate(4L * queries.length);
         DeviceBuffer dc = device.allocate(4L * cand.length);
         DeviceBuffer dk = device.allocate(4L * candKeys.length);
         DeviceBuffer outV = device.allocate(4L * padded * k);
         DeviceBuffer outI = device.allocate(4L * padded * k)) {
      device.upload(x, 0, x.length, dx, 0);
      device.upload(queries, 0, queries.length, dq, 0);
      device.upload(cand, dc);
      device.upload(candKeys, 0, candKeys.length, dk, 0);
      for (int fused = 0; fused < 2; fused++) {
        RerankTable table = new RerankTable();
        table.add(0, dx.address(), dq.address());
        GpuIvfPqIndex.enqueueRerank(device, table, fused == 1 ? rows : padded, k, kc, dims, metric, dk.address(),
            dc.address(), outV, outI, 0);
        device.download(outV, 0, values[fused], 0, rows * k);
        device.download(outI, 0, ids[fused], 0, rows * k);
      }
    }
    String where = metric + " dims=" + dims + " rows=" + rows + " kc=" + kc + " k=" + k;
    for (int row = 0; row < rows; row++) {
      // the oracle: the row's candidates by exact key in double (NaN and empty slots never), the k-th key
      List<double[]> keyed = new ArrayList<>();
      for (int c = 0; c < kc; c++) {
        int id = cand[row * kc + c];
        if (id < 0) {
          continue;
        }
        double key = 0;
        for (int d = 0; d < dims; d++) {
          double a = x[id * dims + d];
          double b = queries[row * dims + d];
          key += metric == Metric.L2 ? (a - b) * (a - b) : -a * b;
        }
        if (!Double.isNaN(key)) {
          keyed.add(new double[] {key, id});
        }
      }
      keyed.sort((a, b) -> Double.compare(a[0], b[0]));
      int expected = Math.min(k, keyed.size());
      double kth = expected > 0 ? keyed.get(expected - 1)[0] : 0;
      for (int e = 0; e < k; e++) {
        int i = row * k + e;
        float fusedV = values[1][i];
        if (Float.floatToIntBits(fusedV) != Float.floatToIntBits(values[0][i])) {
          return where + " row " + row + " slot " + e + ": value " + fusedV + " != BlockSelect's " + values[0][i];
        }
        int id = ids[1][i];
        if (e >= expected) {
          if (id != -1) {
            return where + " row " + row + " slot " + e + ": id " + id + " past the row's " + expected + " candidates";
          }
          continue;
        }
        double key = metric == Metric.L2 ? fusedV : -fusedV;
        if (id < 0 || Math.abs(key - kth) > 1e-4 * Math.max(1, Math.abs(kth)) && key > kth) {
          return where + " row " + row + " slot " + e + ": id " + id + " key " + key + " past the k-th " + kth;
        }
        boolean candidate = false;
        for (int c = 0; c < kc; c++) {
          candidate |= cand[row * kc + c] == id;
        }
        if (!candidate) {
          return where + " row " + row + " slot " + e + ": id " + id + " is not a candidate";
        }
      }
      // the same ids as BlockSelect's, but for keys equal to the k-th (either may keep one of several)
      Set<Integer> mine = new HashSet<>();
      Set<Integer> theirs = new HashSet<>();
      for (int e = 0; e < expected; e++) {
        if (values[1][row * k + e] != values[1][row * k + expected - 1]) {
          mine.add(ids[1][row * k + e]);
          theirs.add(ids[0][row * k + e]);
        }
      }
      if (!mine.equals(theirs)) {
        return where + " row " + row + ": ids " + mine + " != BlockSelect's " + theirs;
      }
      for (int e = 1; e < expected; e++) {
        boolean ascending = metric == Metric.L2 ? values[1][row * k + e - 1] <= values[1][row * k + e]
            : values[1][row * k + e - 1] >= values[1][row * k + e];
        assertTrue(ascending, where + ": sorted best first");
      }
    }
    return null;
  }
}
