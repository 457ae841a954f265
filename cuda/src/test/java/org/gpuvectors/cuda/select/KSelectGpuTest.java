package org.gpuvectors.cuda.select;

import org.gpuvectors.cuda.CpuOracle;
import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.GpuTestCase;
import org.gpuvectors.cuda.SelectConfig;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** WarpSelect / BlockSelect / Tang and the radix selection on the GPU against the CPU oracle. Skips (visibly) without a GPU. */
class KSelectGpuTest extends GpuTestCase {
  /**
   * CLUSTERED: distances around 1 (a radix selection's first digit leaves few values in play); OUTLIER: values a few
   * ulps apart and one huge (its first digits leave every value in play).
   */
  enum Shape { RANDOM, TIES, ALL_EQUAL, SORTED, REVERSE, NANS, INFS, CLUSTERED, OUTLIER }

  static float[] data(Shape s, int rows, int len, Random r) {
    float[] d = new float[rows * len];
    for (int i = 0; i < d.length; i++) {
      int c = i % Math.max(1, len);
      d[i] = switch (s) {
        case RANDOM -> r.nextFloat() * 2 - 1;
        case TIES -> r.nextInt(7);
        case ALL_EQUAL -> 0.5f;
        case SORTED -> c * 0.25f - 3;
        case REVERSE -> -c * 0.25f + 3;
        case NANS -> r.nextInt(3) == 0 ? Float.NaN : r.nextFloat();
        case INFS -> r.nextInt(5) == 0 ? (r.nextBoolean() ? Float.POSITIVE_INFINITY : Float.NEGATIVE_INFINITY)
            : r.nextInt(4) == 0 ? Float.NaN : r.nextFloat();
        case CLUSTERED -> (float) (1 + 0.1 * r.nextGaussian());
        case OUTLIER -> c == len / 2 ? 1e30f : 1 + r.nextFloat() * 1e-4f;
      };
    }
    return d;
  }

  @ParameterizedTest
  @EnumSource(KSelect.Algorithm.class)
  void matchesOracle(KSelect.Algorithm alg) {
    Random r = new Random(42 + alg.ordinal());
    int[][] shapes = {{1, 10}, {5, 100}, {37, 5000}, {300, 3000}, {1, 200_000}, {3, 70_000}, {1000, 64}};
    int[] ks = {1, 10, 32, 100, 1000, 2048};
    List<String> failures = new ArrayList<>();
    int cases = 0;
    for (int[] sh : shapes) {
      for (int k : ks) {
        for (Shape s : Shape.values()) {
          if (sh[0] * (long) sh[1] > 1_000_000 && s != Shape.RANDOM && s != Shape.TIES && s != Shape.NANS) {
            continue;
          }
          for (boolean largest : new boolean[] {false, true}) {
            cases++;
            String f = check(alg, s, sh[0], sh[1], k, largest, r);
            if (f != null) {
              failures.add(f);
            }
          }
        }
      }
    }
    // k == n and k > n
    for (int n : new int[] {1, 31, 32, 33, 100, 2048}) {
      cases++;
      String f = check(alg, Shape.RANDOM, 3, n, Math.min(2048, n), false, r);
      if (f != null) {
        failures.add(f);
      }
      cases++;
      f = check(alg, Shape.TIES, 2, n, 2048, true, r);
      if (f != null) {
        failures.add(f);
      }
    }
    System.out.println("[gpu-vectors] " + alg + ": " + cases + " cases, " + failures.size() + " failures");
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
  }

  /**
   * The radix selection's paths ({@link KSelect#radixSelect}): one block a row with the row in shared memory (the
   * default device, whose longer rows take the passes); the same with at most {@link #OVERFLOW_HELD} keys held there
   * and the rest of a row read from global memory (as a row of a typical length, {@link SelectParams#typicalLen}, far
   * below its capacity may); the passes alone ({@link SelectConfig#radixBlockMaxLen} 0): in one cooperative launch
   * where the grid fits the device at once, else (the 700 rows) one launch a pass, the fallback.
   */
  enum RadixPath { BLOCK, BLOCK_OVERFLOW, PASSES }

  /** Keys the one-block kernel holds in shared memory on the BLOCK_OVERFLOW path: most shapes read past them. */
  private static final int OVERFLOW_HELD = 3000;

  /**
   * The radix selection ({@link KSelect#radixSelect}) against the oracle: the shapes of {@link #matchesOracle}
   * (ties, NaN and infinities), smallest and largest, k from 1 to 2048 and past the row's length, and rows whose
   * given length ({@code rowLens}) is shorter than the matrix's; short rows by one block each with the row in shared
   * memory, and (on a device where that path is off) by the passes. The block path must have run every shape of at
   * most {@link SelectConfig#radixBlockMaxLen} values (BLOCK_OVERFLOW: every shape, each told that its rows are
   * typically short), the cooperative launch every other shape whose grid fits the device (all but the 700 rows,
   * which take the per-pass launches).
   */
  @ParameterizedTest
  @EnumSource(RadixPath.class)
  void radixMatchesOracle(RadixPath path) {
    boolean overflow = path == RadixPath.BLOCK_OVERFLOW;
    SelectConfig select = switch (path) {
      case BLOCK -> SelectConfig.defaults();
      case BLOCK_OVERFLOW -> SelectConfig.defaults().withRadixBlockMaxSharedKeys(OVERFLOW_HELD);
      case PASSES -> SelectConfig.defaults().withRadixBlockMaxLen(0);
    };
    GpuDevice d = path == RadixPath.BLOCK ? device : GpuDevice.open(0, GpuConfig.builder().select(select).build());
    try {
      long[] before = radixCounts(d);
      int[] expected = radixCases(d, new Random(99), overflow);
      long[] after = radixCounts(d);
      boolean byBlock = path != RadixPath.PASSES;
      assertTrue(!byBlock || expected[0] > 0, "the block path took no case");
      assertEquals(byBlock ? expected[0] : 0, after[0] - before[0], "radix selections by one block a row");
      assertTrue(d.cooperativeLaunch(), "the device takes cooperative launches");
      assertTrue(path != RadixPath.PASSES || expected[1] > 0, "no case was meant for the cooperative launch");
      assertEquals(expected[1], after[1] - before[1], "radix selections in one cooperative launch");
    } finally {
      if (d != device) {
        d.close();
      }
    }
  }

  /** The device's radix selections so far: by one block a row, in one cooperative launch, merges by one block. */
  private static long[] radixCounts(GpuDevice d) {
    try (GpuDevice.Scope scope = d.lock()) {
      KSelect.Counts c = KSelect.counts(d);
      return new long[] {c.radixBlock, c.fusedRadix, c.radixMerges};
    }
  }

  /**
   * Runs and checks radixMatchesOracle's cases on device {@code d}; returns how many the block path takes (rows of
   * at most {@link SelectConfig#radixBlockMaxLen} values; with {@code typicallyShort}, every row, its typical length
   * given as 1) and how many of the others have a grid that one cooperative launch holds.
   */
  private static int[] radixCases(GpuDevice d, Random r, boolean typicallyShort) {
    int[][] shapes = {{1, 10}, {5, 100}, {37, 5000}, {1, 200_000}, {3, 70_000}, {2, 40_000}, {40, 64}, {700, 300}};
    int capacity;
    try (GpuDevice.Scope scope = d.lock()) {
      capacity = d.module().maxBlocksPerSm(KSelect.RADIX_FUSED_KERNEL, KSelect.RADIX_THREADS)
          * d.multiprocessorCount();
    }
    assertTrue(700 > capacity, "the 700-row case must not fit one cooperative launch (" + capacity + " blocks)");
    int maxLen = d.config().select().radixBlockMaxLen();
    int block = 0;
    int fitting = 0;
    int overflowing = 0; // cases whose rows are longer than the keys the block holds
    int[] ks = {1, 10, 100, 400, 1000, 2048};
    List<String> failures = new ArrayList<>();
    int cases = 0;
    for (int[] sh : shapes) {
      for (int k : ks) {
        for (Shape s : Shape.values()) {
          for (boolean largest : new boolean[] {false, true}) {
            for (boolean shortRows : new boolean[] {false, true}) {
              cases++;
              int[] lens = null;
              if (shortRows) {
                lens = new int[sh[0]];
                for (int i = 0; i < lens.length; i++) {
                  lens[i] = r.nextInt(sh[1] + 1);
                }
              }
              String f = checkRadix(d, s, sh[0], sh[1], lens, typicallyShort ? 1 : 0, k, largest, r);
              if (f != null) {
                failures.add(f);
              }
              long grid = (long) sh[0] * KSelect.radixBlocksPerRow(sh[0], sh[1], d.multiprocessorCount());
              boolean byBlock = typicallyShort || sh[1] <= maxLen;
              overflowing += typicallyShort && sh[1] > OVERFLOW_HELD ? 1 : 0;
              block += byBlock ? 1 : 0;
              fitting += !byBlock && grid <= capacity ? 1 : 0;
            }
          }
        }
      }
    }
    System.out.println("[gpu-vectors] radix select" + (typicallyShort ? " (every row by one block holding "
        + OVERFLOW_HELD + " keys)" : maxLen > 0 ? " (short rows by one block)" : " (the passes alone)") + ": " + cases
        + " cases, " + block + " by block" + (typicallyShort ? " (" + overflowing + " reading past the held keys)" : "")
        + ", " + fitting + " in one cooperative launch, " + failures.size() + " failures");
    assertTrue(!typicallyShort || 2 * overflowing >= cases, "half the cases read past the held keys: " + overflowing);
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
    assertEquals(0, d.bytesInUse(), "all device buffers returned to the pool");
    return new int[] {block, fitting};
  }

  /** One radix case against the oracle; {@code typicalLen}: the rows' typical length given to the selection (0: none). */
  static String checkRadix(GpuDevice device, Shape s, int rows, int len, int[] lens, int typicalLen, int k,
                           boolean largest, Random r) {
    float[] d = data(s, rows, len, r);
    float[] values = new float[rows * k];
    int[] ids = new int[rows * k];
    try (GpuDevice.Scope scope = device.lock();
         DeviceBuffer in = device.allocate(4L * rows * len);
         DeviceBuffer rowLens = device.allocate(4L * rows);
         DeviceBuffer outV = device.allocate(4L * rows * k);
         DeviceBuffer outI = device.allocate(4L * rows * k)) {
      device.upload(d, 0, rows * len, in, 0);
      if (lens != null) {
        device.upload(lens, rowLens);
      }
      KSelect.radixSelect(device, new SelectParams().input(in, rows, len, len).rowLengths(lens == null ? null : rowLens)
          .typicalRowLength(typicalLen).k(k).largest(largest).output(outV, outI, k));
      device.download(outV, 0, values, 0, values.length);
      device.download(outI, 0, ids, 0, ids.length);
    }
    for (int row = 0; row < rows; row++) {
      int rowLen = lens == null ? len : lens[row];
      List<CpuOracle.Entry> exp = CpuOracle.select(d, (long) row * len, rowLen, k, largest);
      String f = CpuOracle.compare(exp, ids, values, row * k, k, CpuOracle.rowTruth(d, (long) row * len, rowLen,
          largest));
      if (f != null) {
        return "radix " + s + " rows=" + rows + " len=" + len + (lens == null ? "" : " (row length " + rowLen + ")")
            + " k=" + k + (largest ? " largest" : " smallest") + " row " + row + ": " + f;
      }
    }
    return null;
  }

  /**
   * Candidate lists merged ({@link KSelect#mergeCandidates}: values with their own ids, as a scan's chunks leave them)
   * against the oracle, by the one-block radix selection (rows of at least {@link KSelect#RADIX_MERGE_MIN_LEN} values,
   * no more rows than multiprocessors) and by BlockSelect (shorter rows, or more rows: where radix does not apply): the
   * shapes of {@link #matchesOracle}, padded lists (+inf, id -1, as a chunk with fewer candidates leaves its slots), k
   * from 1 to past the row's values. Each path must have taken exactly the cases meant for it.
   */
  @Test
  void mergesMatchOracle() {
    long launches = radixCounts(device)[2];
    Random r = new Random(7);
    int sms = device.multiprocessorCount();
    int[][] shapes = {{1, 300}, {3, 1023}, {1, 1024}, {4, 8352}, {2, 16_384}, {1, 20_000}, {sms + 1, 2048}};
    int[] ks = {1, 10, 42, 200, 256, 1000};
    List<String> failures = new ArrayList<>();
    int cases = 0;
    int byRadix = 0;
    for (int[] sh : shapes) {
      for (int k : ks) {
        for (Shape s : new Shape[] {Shape.RANDOM, Shape.TIES, Shape.CLUSTERED, Shape.INFS, Shape.ALL_EQUAL}) {
          for (boolean padded : new boolean[] {false, true}) {
            cases++;
            byRadix += sh[1] >= KSelect.RADIX_MERGE_MIN_LEN && sh[0] <= sms ? 1 : 0;
            String f = checkMerge(s, sh[0], sh[1], k, padded, r);
            if (f != null) {
              failures.add(f);
            }
          }
        }
      }
    }
    System.out.println("[gpu-vectors] merges: " + cases + " cases, " + byRadix + " by the radix block, "
        + (cases - byRadix) + " by BlockSelect, " + failures.size() + " failures");
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
    assertTrue(byRadix > 0 && byRadix < cases, "cases meant for each path: " + byRadix + " of " + cases);
    assertEquals(byRadix, radixCounts(device)[2] - launches, "merges by the radix block");
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /**
   * One merge case: rows of {@code len} values, each with its own id (a permutation of 0 .. len - 1 per row; with
   * {@code padded}, a quarter of the slots +inf with id -1), merged to k, against the oracle over the values by id.
   */
  private static String checkMerge(Shape s, int rows, int len, int k, boolean padded, Random r) {
    float[] d = data(s, rows, len, r);
    int[] inIds = new int[rows * len];
    float[] byId = new float[rows * len]; // row by row, the value of each id (+inf for ids no slot holds)
    Arrays.fill(byId, Float.POSITIVE_INFINITY);
    for (int row = 0; row < rows; row++) {
      int[] perm = r.ints(0, len).distinct().limit(len).toArray();
      for (int c = 0; c < len; c++) {
        int i = row * len + c;
        if (padded && r.nextInt(4) == 0) {
          d[i] = Float.POSITIVE_INFINITY;
          inIds[i] = -1;
        } else {
          inIds[i] = perm[c];
          byId[row * len + perm[c]] = d[i];
        }
      }
    }
    float[] values = new float[rows * k];
    int[] ids = new int[rows * k];
    try (GpuDevice.Scope scope = device.lock();
         DeviceBuffer in = device.allocate(4L * rows * len);
         DeviceBuffer idBuf = device.allocate(4L * rows * len);
         DeviceBuffer outV = device.allocate(4L * rows * k);
         DeviceBuffer outI = device.allocate(4L * rows * k)) {
      device.upload(d, 0, rows * len, in, 0);
      device.upload(inIds, idBuf);
      KSelect.mergeCandidates(device, new SelectParams().input(in, rows, len, len).inputIds(idBuf).k(k)
          .output(outV, outI, k));
      device.download(outV, 0, values, 0, values.length);
      device.download(outI, 0, ids, 0, ids.length);
    }
    for (int row = 0; row < rows; row++) {
      List<CpuOracle.Entry> exp = CpuOracle.select(byId, (long) row * len, len, k, false);
      String f = CpuOracle.compare(exp, ids, values, row * k, k, CpuOracle.rowTruth(byId, (long) row * len, len,
          false));
      if (f != null) {
        return "merge " + s + (padded ? " padded" : "") + " rows=" + rows + " len=" + len + " k=" + k + " row " + row
            + ": " + f;
      }
    }
    return null;
  }

  static String check(KSelect.Algorithm alg, Shape s, int rows, int len, int k, boolean largest, Random r) {
    float[] d = data(s, rows, len, r);
    KSelect.Result res = KSelect.select(device, alg, d, rows, len, k, largest);
    for (int row = 0; row < rows; row++) {
      List<CpuOracle.Entry> exp = CpuOracle.select(d, (long) row * len, len, k, largest);
      String f = CpuOracle.compare(exp, res.ids(), res.values(), row * k, k,
          CpuOracle.rowTruth(d, (long) row * len, len, largest));
      if (f != null) {
        return alg + " " + s + " rows=" + rows + " len=" + len + " k=" + k + (largest ? " largest" : " smallest")
            + " row " + row + ": " + f;
      }
    }
    return null;
  }
}
