package org.gpuvectors.cuda;

import org.gpuvectors.cuda.build.GpuAssignment;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link GpuAssignment} (points held from rows and from one row-major array) against a CPU oracle in double precision: each sub-vector's nearest codeword (several groups:
 * {@code gv_codebook_assign}: sub-vectors of 4 and 8 floats and of other lengths with the codebook in shared memory
 * and, when it does not fit, read from global memory), and
 * each point's nearest centroid (one group: the brute-force primitive) for L2 and inner product. The device's choice
 * must be the oracle's, except at a near tie (distances equal to 1e-5 relative), where it must be one of the tied;
 * duplicated codewords (exact ties) must resolve to the lower index, as the host's assigner does.
 */
class GpuAssignmentGpuTest extends GpuTestCase {

  @Test
  void codewordsMatchOracle() {
    Random r = new Random(11);
    List<String> failures = new ArrayList<>();
    int cases = 0;
    for (int subDims : new int[] {1, 3, 4, 8, 13, 96}) { // 4 and 8: kernels of their own
      for (int groups : new int[] {1, 2, 7}) {
        for (int k : new int[] {1, 5, 13, 256}) {
          for (int count : new int[] {1, 127, 1000}) {
            if (groups == 1) {
              continue; // one group takes the brute-force path, checked below
            }
            cases++;
            check(r, count, groups, subDims, k, failures);
          }
        }
      }
    }
    assertTrue(failures.isEmpty(), failures.size() + " of " + cases + " cases failed, first: " + failures.stream()
        .limit(5).toList());
  }

  /** Codebooks past the block's shared memory: the kernel reads them from global memory. */
  @Test
  void codebookTooLargeForSharedMemory() {
    int subDims = 256;
    int k = 256;
    assertTrue(4 * k * subDims > device.module().maxDynamicSharedBytes(GpuAssignment.SHARED_KERNEL),
        "the case must exceed the shared memory of a block");
    List<String> failures = new ArrayList<>();
    check(new Random(12), 300, 2, subDims, k, failures);
    assertTrue(failures.isEmpty(), failures.toString());
  }

  @ParameterizedTest
  @EnumSource(value = Metric.class, names = {"L2", "INNER_PRODUCT"})
  void oneGroupMatchesOracle(Metric metric) {
    Random r = new Random(13 + metric.ordinal());
    List<String> failures = new ArrayList<>();
    for (int dims : new int[] {5, 64, 784}) {
      for (int k : new int[] {1, 17, 245}) {
        int count = 3001;
        float[] points = gaussian(r, count * dims);
        float[] centroids = gaussian(r, k * dims);
        try (GpuAssignment held = GpuAssignment.hold(device, points, count, dims, 1, metric)) {
          int[] got = held.nearest(centroids, k);
          assertEquals(count, got.length);
          compare(points, centroids, count, 1, dims, k, metric, got, "dims " + dims + " k " + k, failures);
          // the points stay: a second set of centroids against the same held points
          float[] moved = gaussian(r, k * dims);
          compare(points, moved, count, 1, dims, k, metric, held.nearest(moved, k), "second call", failures);
        }
      }
    }
    assertTrue(failures.isEmpty(), failures.stream().limit(5).toList().toString());
  }

  /**
   * The update step on the device ({@link GpuAssignment#means}, and {@link GpuAssignment#step}) against the host's
   * sums in double: per (group, centroid) the same count, and a mean
   * within a float's rounding; twice the same bits (fixed-point sums: the order of the atomics does not matter);
   * centroids without points read 0.
   */
  @Test
  void meansMatchOracleAndRepeat() {
    Random r = new Random(21);
    List<String> failures = new ArrayList<>();
    for (int[] shape : new int[][] {{5000, 1, 784, 245}, {16384, 98, 8, 256}, {3001, 32, 4, 256}, {700, 3, 13, 40}}) {
      int count = shape[0];
      int groups = shape[1];
      int subDims = shape[2];
      int k = shape[3];
      int dims = groups * subDims;
      float[] points = gaussian(r, count * dims);
      for (int i = 0; i < points.length; i++) {
        points[i] *= 100; // magnitudes like Fashion-MNIST's pixels
      }
      float[] centroids = gaussian(r, groups * k * subDims);
      try (GpuAssignment held = GpuAssignment.hold(device, points, count, dims, groups, Metric.L2)) {
        int[] assignment = held.nearest(centroids, k);
        GpuAssignment.Means a = held.means();
        GpuAssignment.Means b = held.means();
        assertTrue(java.util.Arrays.equals(a.means(), b.means()) && java.util.Arrays.equals(a.counts(), b.counts()),
            "the same means twice");
        GpuAssignment.Means step = held.step(centroids, k); // nearest and means in one, the assignment left on the device
        assertTrue(java.util.Arrays.equals(a.means(), step.means()) && java.util.Arrays.equals(a.counts(), step.counts()),
            "a step is nearest + means");
        int[] counts = new int[groups * k];
        double[] sums = new double[groups * k * subDims];
        for (int i = 0; i < count; i++) {
          for (int g = 0; g < groups; g++) {
            int c = assignment[i * groups + g];
            counts[g * k + c]++;
            for (int d = 0; d < subDims; d++) {
              sums[(g * k + c) * subDims + d] += points[i * dims + g * subDims + d];
            }
          }
        }
        String what = "shape " + java.util.Arrays.toString(shape);
        if (!java.util.Arrays.equals(counts, a.counts())) {
          failures.add(what + ": counts differ");
        }
        for (int gc = 0; gc < groups * k; gc++) {
          for (int d = 0; d < subDims; d++) {
            int at = gc * subDims + d;
            double expected = counts[gc] == 0 ? 0 : sums[at] / counts[gc];
            if (Math.abs(a.means()[at] - expected) > 1e-6 * Math.max(1, Math.abs(expected))) {
              failures.add(what + ": centroid " + gc + " float " + d + " mean " + a.means()[at] + ", expected " + expected);
            }
          }
        }
      }
    }
    assertTrue(failures.isEmpty(), failures.size() + " failures, first: " + failures.stream().limit(5).toList());
  }

  @Test
  void scaleKeepsSumsWithin62Bits() {
    assertEquals(0, GpuAssignment.scaleLog2(0f, 100));
    int s = GpuAssignment.scaleLog2(255f, 16384); // 255 < 2^8, 16384 < 2^15
    assertEquals(62 - 8 - 15, s);
    assertTrue(Math.scalb(255.0, s) * 16384 < Math.scalb(1.0, 62));
  }

  @Test
  void rejectsBadArguments() {
    float[] points = new float[12];
    assertThrows(IllegalArgumentException.class, () -> GpuAssignment.hold(device, points, 3, 4, 3, Metric.L2));
    assertThrows(IllegalArgumentException.class,
        () -> GpuAssignment.hold(device, points, 3, 4, 2, Metric.INNER_PRODUCT));
    assertThrows(IllegalArgumentException.class, () -> GpuAssignment.hold(device, points, 4, 4, 1, Metric.L2));
    try (GpuAssignment held = GpuAssignment.hold(device, points, 3, 4, 2, Metric.L2)) {
      assertThrows(IllegalStateException.class, held::means, "means before any nearest");
      assertThrows(IllegalArgumentException.class, () -> held.nearest(new float[7], 2));
      held.close();
      assertThrows(IllegalStateException.class, () -> held.nearest(new float[8], 2));
    }
  }

  private static void check(Random r, int count, int groups, int subDims, int k, List<String> failures) {
    int dims = groups * subDims;
    float[] points = gaussian(r, count * dims);
    float[] books = gaussian(r, groups * k * subDims);
    if (k > 3) { // codeword 3 of every group repeats codeword 1: an exact tie, which the lower index must win
      for (int g = 0; g < groups; g++) {
        System.arraycopy(books, (g * k + 1) * subDims, books, (g * k + 3) * subDims, subDims);
      }
      // point 0 sits on codeword 1 of each group: its nearest is the tie itself
      for (int g = 0; g < groups; g++) {
        System.arraycopy(books, (g * k + 1) * subDims, points, g * subDims, subDims);
      }
    }
    float[][] rows = new float[count + 1][]; // as rows (GpuDevice.uploadRows), one more than held
    for (int i = 0; i <= count; i++) {
      rows[i] = i < count ? java.util.Arrays.copyOfRange(points, i * dims, (i + 1) * dims) : new float[dims];
    }
    try (GpuAssignment held = GpuAssignment.hold(device, rows, count, dims, groups, Metric.L2)) {
      int[] got = held.nearest(books, k);
      assertEquals(count * groups, got.length);
      String what = "count " + count + " groups " + groups + " subDims " + subDims + " k " + k;
      compare(points, books, count, groups, subDims, k, Metric.L2, got, what, failures);
      if (k > 3) {
        for (int g = 0; g < groups; g++) {
          if (got[g] != 1) {
            failures.add(what + ": point 0 on codeword 1 (= codeword 3) of group " + g + " assigned " + got[g]);
          }
        }
      }
    }
  }

  /** Checks every (point, group) choice against the oracle's distances in double precision. */
  private static void compare(float[] points, float[] centroids, int count, int groups, int subDims, int k,
                              Metric metric, int[] got, String what, List<String> failures) {
    int dims = groups * subDims;
    for (int i = 0; i < count; i++) {
      for (int g = 0; g < groups; g++) {
        double best = Double.POSITIVE_INFINITY;
        int bestIdx = -1;
        double[] cost = new double[k];
        for (int c = 0; c < k; c++) {
          double s = 0;
          for (int d = 0; d < subDims; d++) {
            double x = points[i * dims + g * subDims + d];
            double y = centroids[(g * k + c) * subDims + d];
            s += metric == Metric.L2 ? (x - y) * (x - y) : -x * y;
          }
          cost[c] = s;
          if (s < best) {
            best = s;
            bestIdx = c;
          }
        }
        int chosen = got[i * groups + g];
        if (chosen < 0 || chosen >= k) {
          failures.add(what + ": point " + i + " group " + g + " got " + chosen);
        } else if (chosen != bestIdx && cost[chosen] - best > 1e-5 * Math.max(1, Math.abs(best))) {
          failures.add(what + ": point " + i + " group " + g + " got " + chosen + " (" + cost[chosen] + "), nearest "
              + bestIdx + " (" + best + ")");
        }
      }
    }
  }

  private static float[] gaussian(Random r, int n) {
    float[] x = new float[n];
    for (int i = 0; i < n; i++) {
      x[i] = (float) r.nextGaussian();
    }
    return x;
  }
}
