package org.gpuvectors.cuda.flat;

import org.gpuvectors.cuda.CpuOracle;
import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.FlatConfig;
import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.GpuTestCase;
import org.gpuvectors.cuda.MemoryPart;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.PassCounters;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.select.KSelect;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** Exact search (every strategy) on the GPU against the CPU oracle. Skips (visibly) without a GPU. */
public class GpuFlatIndexGpuTest extends GpuTestCase {
  public static float[] random(int count, Random r) {
    float[] x = new float[count];
    for (int i = 0; i < x.length; i++) {
      x[i] = (float) r.nextGaussian();
    }
    return x;
  }

  /** A device of {@code flat}'s configuration (the rest the defaults), for a test that needs a non-default knob. */
  static GpuDevice openFlat(FlatConfig flat) {
    return GpuDevice.open(0, GpuConfig.builder().flat(flat).build());
  }

  /**
   * Every strategy against the oracle. The device's GEMM tiles are of 1,024 vectors for the 50-query batches, so that
   * the tile merge is exercised, and hold every vector for the smaller batches (the tile budget is per device).
   */
  @Test
  void matchesOracle() {
    Random r = new Random(7);
    List<String> failures = new ArrayList<>();
    int cases = 0;
    try (GpuDevice tiles = openFlat(FlatConfig.defaults().withTileBudgetBytes(4L * 50 * 1024))) {
      for (int[] shape : new int[][] {{5000, 64}, {3001, 37}, {20, 16}}) {
        int n = shape[0], dims = shape[1];
        float[] vectors = random(n * dims, r);
        for (Metric m : Metric.values()) {
          try (GpuFlatIndex index = GpuFlatIndex.upload(tiles, vectors, n, dims, m)) {
            assertEquals(4L * n * dims + (m == Metric.L2 ? 4L * n : 0), index.deviceBytes());
            assertEquals(DeviceBytes.builder().add(MemoryPart.VECTORS, 4L * n * dims)
                .add(MemoryPart.NORMS, m == Metric.L2 ? 4L * n : 0).build(), index.deviceBytesByPart());
            for (int nq : new int[] {1, 7, 50}) {
              float[] queries = random(nq * dims, r);
              for (int k : new int[] {1, 10, 100, 1000}) {
                for (int filter = 0; filter < 3; filter++) {
                  long[] bits = filter == 0 ? null : bits(n, filter == 1 ? 0.3 : 5.0 / n, r);
                  for (GpuFlatIndex.Strategy st : GpuFlatIndex.Strategy.values()) {
                    if (st == GpuFlatIndex.Strategy.SCAN && k > FlatScanParams.MAX_K) {
                      continue; // the scan's k buckets end at 256 (scanRefusesWhatItCannotTake)
                    }
                    if (st == GpuFlatIndex.Strategy.HALF_SCAN) {
                      continue; // needs the FP16 copy: GpuFlatIndexHalfGpuTest
                    }
                    cases++;
                    SearchResult res = index.search(queries, nq, k, bits, st);
                    String f = compare(res, vectors, n, dims, m, queries, nq, k, bits);
                    if (f != null) {
                      failures.add(m + " " + st + " n=" + n + " dims=" + dims + " nq=" + nq + " k=" + k + " filter="
                          + filter + ": " + f);
                    }
                  }
                }
              }
            }
          }
        }
      }
      assertEquals(0, tiles.bytesInUse(), "all device buffers returned to the pool");
    }
    System.out.println("[gpu-vectors] exact search: " + cases + " cases, " + failures.size() + " failures");
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
  }

  /**
   * Batches large enough for the GEMM path's WarpSelect tiles (KSelect.warpsFillGpu), which the
   * batches of {@link #matchesOracle} never reach: all metrics, with and without a filter, several
   * tiles, rows not 16-byte aligned (n = 3001).
   */
  @Test
  void largeBatchesMatchOracle() {
    Random r = new Random(11);
    int n = 3001, dims = 37;
    float[] vectors = random(n * dims, r);
    int nq = 8 * device.multiprocessorCount() + 3;
    List<String> failures = new ArrayList<>();
    // tiles of 1024 vectors: 3 tiles + a short one
    try (GpuDevice tiles = openFlat(FlatConfig.defaults().withTileBudgetBytes(4L * nq * 1024))) {
      for (Metric m : Metric.values()) {
        try (GpuFlatIndex index = GpuFlatIndex.upload(tiles, vectors, n, dims, m)) {
          float[] queries = random(nq * dims, r);
          for (int k : new int[] {1, 10, 100}) {
            assertTrue(KSelect.warpsFillGpu(tiles, nq, k), "the batch must take the WarpSelect tile path");
            for (int filter = 0; filter < 2; filter++) {
              long[] bits = filter == 0 ? null : bits(n, 0.3, r);
              SearchResult res = index.search(queries, nq, k, bits, GpuFlatIndex.Strategy.GEMM);
              String f = compare(res, vectors, n, dims, m, queries, nq, k, bits);
              if (f != null) {
                failures.add(m + " nq=" + nq + " k=" + k + " filter=" + filter + ": " + f);
              }
            }
          }
        }
      }
      assertEquals(0, tiles.bytesInUse(), "all device buffers returned to the pool");
    }
    assertNull(failures.isEmpty() ? null : failures.toString());
  }

  /**
   * The scan as AUTO runs it, through a pass ({@link BatchSearch}): 100k x 128 in many chunks, batches of 1 to
   * {@link FlatConfig#scanMaxQueries} queries with a mask per query (all, 1 % or half accepted), every metric, k 1
   * to 256; those batches must take the scan (its counter), the next batch size the GEMM path. (Several blocks of
   * queries in one scan: matchesOracle's 50 queries.)
   */
  @Test
  void scanAnswersSmallPassesAsTheOracle() {
    Random r = new Random(23);
    int n = 100_000, dims = 128;
    float[] vectors = random(n * dims, r);
    int scanMaxQueries = device.config().flat().scanMaxQueries();
    List<String> failures = new ArrayList<>();
    int cases = 0;
    for (Metric m : Metric.values()) {
      try (GpuFlatIndex index = GpuFlatIndex.upload(device, vectors, n, dims, m)) {
        for (int nq : new int[] {1, 3, 7, scanMaxQueries}) {
          float[] queries = random(nq * dims, r);
          long[][] masks = new long[nq][];
          List<List<CpuOracle.Entry>> expected = new ArrayList<>();
          List<CpuOracle.Truth> truths = new ArrayList<>();
          for (int q = 0; q < nq; q++) {
            masks[q] = q % 3 == 0 ? null : bits(n, q % 3 == 1 ? 0.01 : 0.5, r);
            expected.add(CpuOracle.search(vectors, n, dims, m, queries, q, FlatScanParams.MAX_K, masks[q]));
            truths.add(CpuOracle.searchTruth(vectors, n, dims, m, queries, q, masks[q]));
          }
          for (int k : new int[] {1, 10, FlatScanParams.MAX_K}) {
            long before = index.scanQueries();
            SearchResult res = BatchSearch.run(device, List.of(
                new SearchGroup(index, queries, nq, k, SearchParams.FLAT, null, masks, null)))[0];
            assertEquals(before + nq, index.scanQueries(), "a batch of " + nq + " must take the scan");
            cases++;
            int[] ids = new int[k];
            float[] values = new float[k];
            for (int q = 0; q < nq; q++) {
              for (int i = 0; i < k; i++) {
                ids[i] = res.id(q, i);
                values[i] = res.distance(q, i);
              }
              List<CpuOracle.Entry> exp = expected.get(q).subList(0, Math.min(k, expected.get(q).size()));
              String f = CpuOracle.compare(exp, ids, values, 0, k, truths.get(q));
              if (f == null && res.count(q) != exp.size()) {
                f = "count " + res.count(q) + ", expected " + exp.size();
              }
              if (f != null) {
                failures.add(m + " nq=" + nq + " k=" + k + " query " + q + ": " + f);
              }
            }
          }
        }
        int over = scanMaxQueries + 1;
        long before = index.scanQueries();
        index.search(random(over * dims, r), over, 10, null);
        assertEquals(before, index.scanQueries(), "a batch of " + over + " takes the GEMM path");
      }
    }
    System.out.println("[gpu-vectors] flat scan through passes: " + cases + " cases, " + failures.size() + " failures");
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /**
   * A pass over several flat segments, as a query or a few over a field's segments: the small groups share one scan
   * table launch and one merge ({@link FlatScanTable}; the device's counter) whatever their k (Lucene asks each
   * segment for its own share of k: 3 to 100 here, the first member's k in a smaller bucket than the last's, which
   * needs a quarter of a small segment's chunk lists: rows strided by the largest k), a group of more queries than the
   * scan takes alone in it too (three blocks of queries), a group past the table's size searches alone in the same
   * pass; every group's results as the oracle's. Segments from 30,000 vectors down to 2 (fewer rows than chunks),
   * aligned and unaligned rows, every metric, masks per query.
   */
  @Test
  void scanTableAnswersPassesOverSegmentsAsTheOracle() {
    assertScanTablePassesMatchOracle(false);
  }

  /**
   * The passes of {@link #scanTableAnswersPassesOverSegmentsAsTheOracle} for dims 64 and 37 and every metric; with
   * {@code half}, over segments with FP16 copies (the half scan table), each segment's member queries counted by its
   * half scan. Prints the count of results checked; fails on the first few failures.
   */
  static void assertScanTablePassesMatchOracle(boolean half) {
    Random r = new Random(half ? 41 : 31);
    int[] sizes = {30_000, 7_000, 1_000, 300, 2};
    List<String> failures = new ArrayList<>();
    int checked = 0;
    for (int dims : new int[] {64, 37}) {
      for (Metric m : Metric.values()) {
        float[][] vectors = new float[sizes.length][];
        List<GpuFlatIndex> indexes = new ArrayList<>();
        try {
          for (int s = 0; s < sizes.length; s++) {
            vectors[s] = random(sizes[s] * dims, r);
            indexes.add(GpuFlatIndex.upload(device, vectors[s], sizes[s], dims, m));
            if (half) {
              indexes.get(s).addHalfCopy();
              assertTrue(indexes.get(s).hasHalfCopy(), "the FP16 copy is made");
            }
          }
          int nq = 5;
          float[] queries = random(nq * dims, r);
          int over = FlatScanTable.MAX_GROUP_QUERIES + 1;
          float[] many = random(over * dims, r);
          int member = 2 * FlatScanParams.QUERIES_PER_BLOCK + 3;
          float[] more = random(member * dims, r);
          List<SearchGroup> groups = new ArrayList<>();
          List<long[][]> masks = new ArrayList<>();
          for (int s = 0; s < sizes.length; s++) {
            long[][] rowMasks = new long[nq][];
            for (int q = 0; q < nq; q++) {
              rowMasks[q] = q % 2 == 0 ? null : bits(sizes[s], 0.3, r);
            }
            masks.add(rowMasks);
            groups.add(new SearchGroup(indexes.get(s), queries, nq, new int[] {10, 12, 7, 3, 25}[s], SearchParams.FLAT, null, rowMasks,
                null));
          }
          groups.add(new SearchGroup(indexes.get(1), queries, nq, 40, SearchParams.FLAT, null, null, null));
          groups.add(new SearchGroup(indexes.get(2), queries, nq, 100, SearchParams.FLAT, null, null, null)); // the largest k
          groups.add(new SearchGroup(indexes.get(2), more, member, 10, SearchParams.FLAT, null, null, null)); // a member still
          groups.add(new SearchGroup(indexes.get(0), many, over, 10, SearchParams.FLAT, null, null, null)); // the GEMM path: alone
          long[] memberQueries = {nq, 2 * nq, 2 * nq + member, nq, nq};
          long[] halfBefore = new long[sizes.length];
          for (int s = 0; s < sizes.length; s++) {
            halfBefore[s] = indexes.get(s).halfStats().queries();
          }
          long tables = PassCounters.of(device).flatScanTables();
          SearchResult[] results = BatchSearch.run(device, groups);
          assertEquals(tables + 1, PassCounters.of(device).flatScanTables(), "the segments' small groups shared one scan launch");
          for (int s = 0; half && s < sizes.length; s++) {
            assertEquals(memberQueries[s], indexes.get(s).halfStats().queries() - halfBefore[s],
                "segment " + s + ": its members' queries took the half scan table");
          }
          for (int g = 0; g < groups.size(); g++) {
            SearchGroup group = groups.get(g);
            int extra = g - sizes.length; // the groups after the segments' own: 40, 100, more queries, many queries
            int s = extra < 0 ? g : new int[] {1, 2, 2, 0}[extra];
            float[] qs = extra == 2 ? more : extra == 3 ? many : queries;
            for (int q = 0; q < group.numQueries(); q++) {
              long[] mask = g < sizes.length ? masks.get(g)[q] : null;
              String f = compareOne(results[g], vectors[s], sizes[s], dims, m, qs, q, group.k(), mask);
              checked++;
              if (f != null) {
                failures.add(m + " dims=" + dims + " group " + g + " query " + q + ": " + f);
              }
            }
          }
        } finally {
          for (GpuFlatIndex index : indexes) {
            index.close();
          }
        }
      }
    }
    System.out.println("[gpu-vectors] " + (half ? "half" : "flat") + " scan table: " + checked + " query results, "
        + failures.size() + " failures");
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /**
   * One query's results in {@code res} against the oracle: exact id sets up to float32 near-ties, values within the
   * derived float32 error bound (CpuOracle.searchTruth), every id accepted by the mask, and the count.
   */
  public static String compareOne(SearchResult res, float[] vectors, int n, int dims, Metric m, float[] queries, int q, int k,
                           long[] mask) {
    int[] ids = new int[k];
    float[] values = new float[k];
    for (int i = 0; i < k; i++) {
      ids[i] = res.id(q, i);
      values[i] = res.distance(q, i);
    }
    List<CpuOracle.Entry> exp = CpuOracle.search(vectors, n, dims, m, queries, q, k, mask);
    String f = CpuOracle.compare(exp, ids, values, 0, k, CpuOracle.searchTruth(vectors, n, dims, m, queries, q, mask));
    return f != null ? f : res.count(q) != exp.size() ? "count " + res.count(q) + ", expected " + exp.size() : null;
  }

  /** The scan refuses k past its buckets by name (AUTO then takes the GEMM path: matchesOracle's k = 1000). */
  @Test
  void scanRefusesWhatItCannotTake() {
    float[] vectors = random(100 * 8, new Random(5));
    try (GpuFlatIndex index = GpuFlatIndex.upload(device, vectors, 100, 8, Metric.L2)) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> index.search(vectors, 1, FlatScanParams.MAX_K + 1, null, GpuFlatIndex.Strategy.SCAN));
      assertTrue(e.getMessage().contains("k <= 256"), e.getMessage());
    }
  }

  public static long[] bits(int n, double p, Random r) {
    long[] b = new long[(n + 63) / 64];
    for (int i = 0; i < n; i++) {
      if (r.nextDouble() < p) {
        b[i >> 6] |= 1L << (i & 63);
      }
    }
    return b;
  }

  public static String compare(SearchResult res, float[] vectors, int n, int dims, Metric m, float[] queries, int nq, int k,
                        long[] bits) {
    for (int q = 0; q < nq; q++) {
      String f = compareOne(res, vectors, n, dims, m, queries, q, k, bits);
      if (f != null) {
        return "query " + q + ": " + f;
      }
    }
    return null;
  }

  /**
   * The small-index search of a few queries (an IVF coarse step, {@link GpuFlatIndex#enqueueSmall}) against the
   * oracle: at most {@link GpuFlatIndex#SCORED_QUERIES} queries over a few thousand vectors as every vector's key and
   * a radix selection (counted by {@link GpuFlatIndex#smallScoredSearches}); more queries, and any over more vectors
   * than one block's radix selection holds (50,000), split over chunks and merged ({@link GpuFlatIndex#smallChunks};
   * the unsplit launch: the IVF tests' few-hundred-centroid quantizers).
   */
  @Test
  void smallIndexSearchMatchesOracle() {
    Random r = new Random(17);
    List<String> failures = new ArrayList<>();
    int split = 0;
    for (int[] shape : new int[][] {{3000, 32}, {50_000, 16}}) {
      int n = shape[0], dims = shape[1];
      boolean few = n == 3000; // few enough vectors for the radix selection of a row in one block
      float[] vectors = random(n * dims, r);
      for (Metric m : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
        try (GpuFlatIndex index = GpuFlatIndex.upload(device, vectors, n, dims, m)) {
          int scoredExpected = 0;
          for (int nq : new int[] {1, 3, 5, 32}) {
            float[] queries = random(nq * dims, r);
            for (int k : new int[] {1, 10, 63, 200}) {
              int[] ids = new int[nq * k];
              float[] values = new float[nq * k];
              try (GpuDevice.Scope s = device.lock();
                   DeviceBuffer q = device.allocate(4L * nq * dims);
                   DeviceBuffer outV = device.allocate(4L * nq * k);
                   DeviceBuffer outI = device.allocate(4L * nq * k)) {
                device.upload(queries, 0, nq * dims, q, 0);
                boolean byScores = few && nq <= GpuFlatIndex.SCORED_QUERIES;
                scoredExpected += byScores ? 1 : 0;
                split += !byScores && index.smallChunks(nq, k) > 1 ? 1 : 0;
                assertTrue(index.enqueueSmall(q.address(), nq, k, outV, outI, 0), "small index, few queries");
                device.download(outV, 0, values, 0, values.length);
                device.download(outI, 0, ids, 0, ids.length);
              }
              String f = compare(new SearchResult(nq, k, ids, values), vectors, n, dims, m, queries, nq, k, null);
              if (f != null) {
                failures.add(m + " n=" + n + " nq=" + nq + " k=" + k + " chunks=" + index.smallChunks(nq, k) + ": "
                    + f);
              }
            }
          }
          assertEquals(scoredExpected, index.smallScoredSearches(), m + " n=" + n + ": searches by every vector's key");
        }
      }
    }
    assertTrue(split >= 12, "searches split over chunks: " + split);
    assertNull(failures.isEmpty() ? null : failures.toString());
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  @Test
  void concurrentSearchesAreSerialisedAndCorrect() throws Exception {
    Random r = new Random(3);
    int n = 20_000, dims = 96;
    float[] vectors = random(n * dims, r);
    float[] queries = random(64 * dims, r);
    try (GpuFlatIndex index = GpuFlatIndex.upload(device, vectors, n, dims, Metric.L2)) {
      SearchResult ref = index.search(queries, 64, 10, null);
      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        List<Future<SearchResult>> fs = new ArrayList<>();
        for (int t = 0; t < 16; t++) {
          fs.add(pool.submit(() -> index.search(queries, 64, 10, null)));
        }
        for (Future<SearchResult> f : fs) {
          SearchResult s = f.get();
          for (int q = 0; q < 64; q++) {
            for (int i = 0; i < 10; i++) {
              assertEquals(ref.distance(q, i), s.distance(q, i));
            }
          }
        }
      } finally {
        pool.shutdown();
      }
    }
  }

  @Test
  void closedIndexAndBadArgumentsAreRefused() {
    float[] v = random(100 * 8, new Random(1));
    GpuFlatIndex index = GpuFlatIndex.upload(device, v, 100, 8, Metric.INNER_PRODUCT);
    assertThrows(IllegalArgumentException.class, () -> index.search(v, 1, 0, null));
    assertThrows(IllegalArgumentException.class, () -> index.search(v, 1, 2049, null));
    assertThrows(IllegalArgumentException.class, () -> index.search(v, 1, 5, new long[0]));
    index.close();
    index.close();
    assertThrows(IllegalStateException.class, () -> index.search(v, 1, 5, null));
    assertTrue(device.bytesInUse() >= 0);
  }
}
