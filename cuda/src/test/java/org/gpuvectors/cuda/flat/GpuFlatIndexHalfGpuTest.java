package org.gpuvectors.cuda.flat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.gpuvectors.cuda.CpuOracle;
import org.gpuvectors.cuda.FashionLike;
import org.gpuvectors.cuda.FlatConfig;
import org.gpuvectors.cuda.GpuTestCase;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.NearTies;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.PassCounters;
import org.gpuvectors.cuda.pass.PassGraphs;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.rerank.CandidateBound;
import org.gpuvectors.cuda.rerank.RerankStats;

/**
 * The small batches' FP16 candidate scan ({@link GpuFlatIndex.Strategy#HALF_SCAN}, flat_half_scan.cu) on the GPU
 * against the CPU oracle (exact id sets up to FP32 near-ties, {@link CpuOracle#compare}): every metric, k = 1 / 10 /
 * 100, 1 to 16 queries (one and two blocks of queries), no mask, a shared mask and per-query masks, one chunk and
 * many, dims that are not a multiple of the scan's 32; near-tie queries that the certificate must reject (counted)
 * and the FP32 scan then answers; passes replayed as CUDA graphs; passes over several segments as one half scan
 * table ({@link FlatScanTable#half}). Every search is checked to have taken the half scan ({@link
 * GpuFlatIndex#halfStats}). Skips (visibly) without a GPU.
 */
class GpuFlatIndexHalfGpuTest extends GpuTestCase {
  private static final int[] KS = {1, 10, 100};
  private static final int[] BATCHES = {1, 3, 8, 16};

  private static GpuFlatIndex halfIndex(float[] vectors, int n, int dims, Metric m) {
    GpuFlatIndex index = GpuFlatIndex.upload(device, vectors, n, dims, m);
    index.addHalfCopy();
    assertTrue(index.hasHalfCopy(), "the FP16 copy is made");
    return index;
  }

  /** Searches the batches of {@link #BATCHES} under every mask kind and k; returns the failures. */
  private static List<String> searchAndCompare(GpuFlatIndex index, float[] vectors, int n, int dims, Metric m,
                                               float[] queries, Random r) {
    List<String> failures = new ArrayList<>();
    long[] shared = GpuFlatIndexGpuTest.bits(n, 0.3, r);
    for (int nq : BATCHES) {
      long[][] perQuery = new long[nq][];
      for (int q = 0; q < nq; q++) {
        perQuery[q] = q % 3 == 0 ? null : GpuFlatIndexGpuTest.bits(n, q % 3 == 1 ? 0.5 : 0.02, r);
      }
      for (int mask = 0; mask < 3; mask++) {
        List<List<CpuOracle.Entry>> expected = new ArrayList<>();
        for (int q = 0; q < nq; q++) {
          long[] bits = mask == 0 ? null : mask == 1 ? shared : perQuery[q];
          expected.add(CpuOracle.search(vectors, n, dims, m, queries, q, KS[KS.length - 1], bits));
        }
        for (int k : KS) {
          long before = index.halfStats().queries();
          SearchResult res = BatchSearch.run(device, List.of(new SearchGroup(index, queries, nq, k,
              mask == 1 ? shared : null, mask == 2 ? perQuery : null)))[0];
          if (index.halfStats().queries() - before != nq) {
            failures.add(m + " nq=" + nq + " mask=" + mask + " k=" + k + ": the half scan answered "
                + (index.halfStats().queries() - before) + " queries");
          }
          for (int q = 0; q < nq; q++) {
            long[] bits = mask == 0 ? null : mask == 1 ? shared : perQuery[q];
            String f = GpuFlatIndexTf32GpuTest.check(res, q, k, expected.get(q), vectors, n, dims, m, queries, bits);
            if (f != null) {
              failures.add(m + " nq=" + nq + " mask=" + mask + " k=" + k + " query " + q + ": " + f);
            }
          }
        }
      }
    }
    return failures;
  }

  private static void assertNoFailures(List<String> failures) {
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
  }

  @Test
  void clusteredMatchOracleForEveryMetric() {
    int n = 20_000, dims = 128; // many chunks of rows
    float[] vectors = FashionLike.clustered(n, dims, 200, 31);
    float[] queries = FashionLike.clustered(16, dims, 200, 32);
    List<String> failures = new ArrayList<>();
    long rejected = 0;
    for (Metric m : Metric.values()) {
      try (GpuFlatIndex index = halfIndex(vectors, n, dims, m)) {
        failures.addAll(searchAndCompare(index, vectors, n, dims, m, queries, new Random(5)));
        rejected += index.halfStats().fallbacks();
        System.out.println("[gpu-vectors] half scan, clustered 128-d " + m + ": " + index.halfStats());
      }
    }
    assertNoFailures(failures);
    assertTrue(rejected <= 28L * 3 * 3, "the FP16 candidates answer most queries: " + rejected + " rejected");
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  @Test
  void fashionLikePixelsAndOddDimsMatchOracle() {
    List<String> failures = new ArrayList<>();
    float[] pixels = FashionLike.vectors(6000, 41);
    float[] pixelQueries = FashionLike.vectors(16, 42);
    try (GpuFlatIndex index = halfIndex(pixels, 6000, FashionLike.DIMS, Metric.L2)) {
      failures.addAll(searchAndCompare(index, pixels, 6000, FashionLike.DIMS, Metric.L2, pixelQueries, new Random(6)));
      System.out.println("[gpu-vectors] half scan, Fashion-like 784-d: " + index.halfStats());
    }
    Random r = new Random(7);
    for (int dims : new int[] {3, 37, 100}) { // rows padded to 32 dims, one chunk (300 rows) and several
      for (int n : new int[] {300, 5000}) {
        float[] vectors = GpuFlatIndexGpuTest.random(n * dims, r);
        float[] queries = GpuFlatIndexGpuTest.random(16 * dims, r);
        try (GpuFlatIndex index = halfIndex(vectors, n, dims, Metric.INNER_PRODUCT)) {
          failures.addAll(searchAndCompare(index, vectors, n, dims, Metric.INNER_PRODUCT, queries, r));
        }
      }
    }
    assertNoFailures(failures);
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /**
   * Near ties the FP16 bound cannot separate ({@link NearTies}: 256 vectors at squared distance exactly 9 from each
   * "tie" query, more than k' = 200 even at k = 100): every tie query must be rejected, counted, and answered exactly
   * by the FP32 scan, its results written to its own row (tie and other queries interleaved, with per-query masks).
   */
  @Test
  void nearTiesAreRejectedAndStayExact() {
    int ties = 4;
    NearTies data = NearTies.make(ties, 4, 2000, new Random(17));
    int n = data.n(), dims = data.dims(), nq = data.numQueries();
    float[] vectors = data.vectors();
    float[] queries = data.queries();
    boolean[] tie = data.tie();
    long[][] masks = data.masks();
    List<String> failures = new ArrayList<>();
    try (GpuFlatIndex index = halfIndex(vectors, n, dims, Metric.L2)) {
      for (int k : KS) {
        for (int way = 0; way < 3; way++) { // a pass, a pass with masks, the direct HALF_SCAN search
          RerankStats before = index.halfStats();
          SearchResult res = switch (way) {
            case 0 -> BatchSearch.run(device, List.of(new SearchGroup(index, queries, nq, k, null, null)))[0];
            case 1 -> BatchSearch.run(device, List.of(new SearchGroup(index, queries, nq, k, null, masks)))[0];
            default -> index.search(queries, nq, k, null, GpuFlatIndex.Strategy.HALF_SCAN);
          };
          long fell = index.halfStats().fallbacks() - before.fallbacks();
          assertEquals(nq, index.halfStats().queries() - before.queries(), "every query took the half scan");
          assertTrue(fell >= ties && fell <= nq, "k=" + k + " way " + way + ": " + fell
              + " rejected, every one of the " + ties + " tie queries must be one");
          for (int q = 0; q < nq; q++) {
            long[] bits = way == 1 ? masks[q] : null;
            List<CpuOracle.Entry> exp = CpuOracle.search(vectors, n, dims, Metric.L2, queries, q, k, bits);
            String f = GpuFlatIndexTf32GpuTest.check(res, q, k, exp, vectors, n, dims, Metric.L2, queries, bits);
            if (f == null && tie[q] && res.distance(q, k - 1) != 9f) {
              f = "tie query's k-th distance " + res.distance(q, k - 1) + " != 9";
            }
            if (f != null) {
              failures.add("k=" + k + " way " + way + " query " + q + (tie[q] ? " (tie)" : "") + ": " + f);
            }
          }
        }
      }
      System.out.println("[gpu-vectors] half scan near ties: " + index.halfStats());
    }
    assertNoFailures(failures);
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /**
   * Passes of one shape captured and replayed as CUDA graphs keep the certificate's inputs and stay exact: one
   * segment (a lone half scan) of 2 queries and of 16 (a lone group's most, PassGraphs.LONE_GROUP_QUERIES), and two
   * segments (a half scan table); chunks that keep fewer than k' ({@link HalfScanParams#chunkCandidates}).
   */
  @Test
  void capturedPassesStayExact() {
    int n = 40_000, dims = 64;
    Random r = new Random(29);
    float[] vectors = GpuFlatIndexGpuTest.random(n * dims, r);
    float[] second = GpuFlatIndexGpuTest.random(3000 * dims, r);
    assertTrue(HalfScanParams.chunkCandidates(CandidateBound.candidates(10), n, 40, 1024) < CandidateBound.candidates(10),
        "the lone scans' chunks keep fewer than k'");
    List<String> failures = new ArrayList<>();
    try (GpuFlatIndex index = halfIndex(vectors, n, dims, Metric.L2);
         GpuFlatIndex other = halfIndex(second, 3000, dims, Metric.L2)) {
      for (int variant = 0; variant < 3; variant++) { // 1 segment 2 queries, 2 segments, 1 segment 16 queries k 100
        int segments = variant == 1 ? 2 : 1;
        int nq = variant == 2 ? PassGraphs.LONE_GROUP_QUERIES : 2;
        long launchesBefore = graphLaunches();
        long tablesBefore = PassCounters.of(device).flatScanTables();
        for (int round = 0; round < 6; round++) {
          float[] queries = GpuFlatIndexGpuTest.random(nq * dims, r);
          List<SearchGroup> groups = new ArrayList<>(List.of(
              new SearchGroup(index, queries, nq, variant == 2 ? 100 : 10, null, null)));
          if (segments == 2) {
            groups.add(new SearchGroup(other, queries, nq, 7, null, null));
          }
          SearchResult[] res = BatchSearch.run(device, groups);
          for (int g = 0; g < segments; g++) {
            float[] v = g == 0 ? vectors : second;
            int size = g == 0 ? n : 3000, k = groups.get(g).k();
            for (int q = 0; q < nq; q++) {
              List<CpuOracle.Entry> exp = CpuOracle.search(v, size, dims, Metric.L2, queries, q, k, null);
              String f = GpuFlatIndexTf32GpuTest.check(res[g], q, k, exp, v, size, dims, Metric.L2, queries, null);
              if (f != null) {
                failures.add("variant " + variant + ", round " + round + " group " + g + " query " + q + ": " + f);
              }
            }
          }
        }
        assertTrue(graphLaunches() > launchesBefore, "variant " + variant + ": later passes replayed a captured graph");
        if (segments == 2) {
          assertEquals(6, PassCounters.of(device).flatScanTables() - tablesBefore, "every two-segment pass a half scan table");
        }
      }
      assertEquals(6 * (2 + 2 + PassGraphs.LONE_GROUP_QUERIES), index.halfStats().queries());
      assertEquals(12, other.halfStats().queries());
      assertEquals(0, index.halfStats().fallbacks(), "random data: every query certified from chunks keeping fewer");
    }
    assertNoFailures(failures);
  }

  /**
   * A pass over several segments with FP16 copies takes one half scan table launch ({@link FlatScanTable#half}):
   * segments of 2 to 30,000 rows (one chunk and many, so member rows with fewer chunks leave gaps), members' k from 3
   * to 100 (k' of the largest for all), masks per query, a member of 19 queries, a 33-query group alone on the GEMM
   * path in the same pass; every metric, dims 64 and 37. Each result against the oracle; each member's queries counted
   * by its index's half scan.
   */
  @Test
  void halfScanTableAnswersPassesOverSegmentsAsTheOracle() {
    GpuFlatIndexGpuTest.assertScanTablePassesMatchOracle(true);
  }

  /**
   * Near ties in a half scan table: two segments of {@link NearTies} data (and a third of pixels) in one pass, with
   * and without masks; every tie query of every segment is rejected, counted, searched again in FP32 and written to
   * its own row of its member (rows the largest k apart). A member without an FP16 copy makes the table FP32, which
   * stays exact.
   */
  @Test
  void halfScanTableRejectsNearTiesPerMember() {
    int ties = 4;
    NearTies a = NearTies.make(ties, 4, 1500, new Random(43));
    NearTies b = NearTies.make(ties, 4, 900, new Random(44));
    float[] pixels = FashionLike.vectors(3000, 45);
    int dims = a.dims(), nq = a.numQueries();
    List<String> failures = new ArrayList<>();
    try (GpuFlatIndex ia = halfIndex(a.vectors(), a.n(), dims, Metric.L2);
         GpuFlatIndex ib = halfIndex(b.vectors(), b.n(), dims, Metric.L2);
         GpuFlatIndex plain = GpuFlatIndex.upload(device, a.vectors(), a.n(), dims, Metric.L2)) {
      for (int k : KS) {
        for (int way = 0; way < 3; way++) { // half table, with masks, a member without a copy
          boolean masked = way == 1;
          GpuFlatIndex first = way == 2 ? plain : ia;
          RerankStats beforeA = ia.halfStats();
          RerankStats beforeB = ib.halfStats();
          long tables = PassCounters.of(device).flatScanTables();
          SearchResult[] res = BatchSearch.run(device, List.of(
              new SearchGroup(first, a.queries(), nq, k, null, masked ? a.masks() : null),
              new SearchGroup(ib, b.queries(), nq, Math.max(1, k / 2), null, masked ? b.masks() : null)));
          assertEquals(tables + 1, PassCounters.of(device).flatScanTables(), "k=" + k + " way " + way + ": one table launch");
          long fellA = ia.halfStats().fallbacks() - beforeA.fallbacks();
          long fellB = ib.halfStats().fallbacks() - beforeB.fallbacks();
          if (way <= 1) {
            assertEquals(2L * nq, ia.halfStats().queries() - beforeA.queries() + ib.halfStats().queries()
                - beforeB.queries(), "both members took the half table");
            assertTrue(fellA >= ties && fellA <= nq && fellB >= ties && fellB <= nq, "k=" + k + " way " + way
                + ": " + fellA + " / " + fellB + " rejected, every tie query of each member must be one");
          } else {
            assertEquals(0, ib.halfStats().queries() - beforeB.queries(), "way " + way + ": an FP32 table");
          }
          NearTies[] data = {a, b};
          int[] ks = {k, Math.max(1, k / 2)};
          for (int g = 0; g < 2; g++) {
            NearTies d = data[g];
            for (int q = 0; q < nq; q++) {
              long[] bits = masked ? d.masks()[q] : null;
              List<CpuOracle.Entry> exp = CpuOracle.search(d.vectors(), d.n(), dims, Metric.L2, d.queries(), q, ks[g],
                  bits);
              String f = GpuFlatIndexTf32GpuTest.check(res[g], q, ks[g], exp, d.vectors(), d.n(), dims, Metric.L2,
                  d.queries(), bits);
              if (f != null) {
                failures.add("k=" + k + " way " + way + " member " + g + " query " + q + (d.tie()[q] ? " (tie)" : "")
                    + ": " + f);
              }
            }
          }
        }
      }
      try (GpuFlatIndex ip = halfIndex(pixels, 3000, FashionLike.DIMS, Metric.L2)) {
        assertTrue(ip.hasHalfCopy()); // a third segment of other dims: not a member, searched alone by its half scan
        long before = ip.halfStats().queries();
        float[] pq = FashionLike.vectors(2, 46);
        SearchResult[] res = BatchSearch.run(device, List.of(new SearchGroup(ia, a.queries(), nq, 10, null, null),
            new SearchGroup(ip, pq, 2, 10, null, null), new SearchGroup(ib, b.queries(), nq, 10, null, null)));
        assertEquals(2, ip.halfStats().queries() - before, "the other dims' group alone took the half scan");
        for (int q = 0; q < 2; q++) {
          List<CpuOracle.Entry> exp = CpuOracle.search(pixels, 3000, FashionLike.DIMS, Metric.L2, pq, q, 10, null);
          String f = GpuFlatIndexTf32GpuTest.check(res[1], q, 10, exp, pixels, 3000, FashionLike.DIMS, Metric.L2, pq,
              null);
          if (f != null) {
            failures.add("alone query " + q + ": " + f);
          }
        }
      }
    }
    assertNoFailures(failures);
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /**
   * Chunks that keep fewer than k' candidates ({@link HalfScanParams#chunkCandidates}) and rows in an order that
   * gathers a query's neighbours: 300 rows close to query 0 lie one after another, so the chunk that holds most of
   * them keeps 41 of its 224. Alone and as a member of a half scan table, the query's first search must be rejected
   * (counted) for that chunk's sake and answered exactly in FP32; the copy then keeps k' a chunk, and the same
   * search is certified (no rejection) and exact. Other queries are certified from the start.
   */
  @Test
  void chunksThatKeptTooFewAreRejectedThenWidened() {
    int n = 40_000, dims = 32, k = 100, near = 300, at = 10_000;
    Random r = new Random(53);
    float[] vectors = GpuFlatIndexGpuTest.random(n * dims, r);
    float[] queries = GpuFlatIndexGpuTest.random(3 * dims, r);
    for (int i = 0; i < near; i++) { // row at + i: query 0 moved by a distinct small offset along dimension i % dims
      System.arraycopy(queries, 0, vectors, (at + i) * dims, dims);
      vectors[(at + i) * dims + i % dims] += 0.01f * (1 + i);
    }
    float[] other = GpuFlatIndexGpuTest.random(5000 * dims, r);
    assertTrue(HalfScanParams.chunkCandidates(200, n, 40, 1024) < 200, "this index's chunks keep fewer than k'");
    List<String> failures = new ArrayList<>();
    for (boolean table : new boolean[] {false, true}) {
      try (GpuFlatIndex index = halfIndex(vectors, n, dims, Metric.L2);
           GpuFlatIndex second = halfIndex(other, 5000, dims, Metric.L2)) {
        long[] rejectedPerRound = new long[2];
        for (int round = 0; round < 2; round++) {
          long before = index.halfStats().fallbacks();
          long beforeAll = index.halfStats().queries();
          List<SearchGroup> groups = table
              ? List.of(new SearchGroup(index, queries, 3, k, null, null), new SearchGroup(second, queries, 3, k, null, null))
              : List.of(new SearchGroup(index, queries, 3, k, null, null));
          SearchResult res = BatchSearch.run(device, groups)[0];
          assertEquals(3, index.halfStats().queries() - beforeAll, "table " + table + ": the half scan answered");
          rejectedPerRound[round] = index.halfStats().fallbacks() - before;
          for (int q = 0; q < 3; q++) {
            List<CpuOracle.Entry> exp = CpuOracle.search(vectors, n, dims, Metric.L2, queries, q, k, null);
            String f = GpuFlatIndexTf32GpuTest.check(res, q, k, exp, vectors, n, dims, Metric.L2, queries, null);
            if (f != null) {
              failures.add("table " + table + " round " + round + " query " + q + ": " + f);
            }
          }
        }
        assertEquals(1, rejectedPerRound[0], "table " + table + ": query 0 rejected for its chunk's sake, alone");
        assertEquals(0, rejectedPerRound[1], "table " + table + ": k' a chunk from then on certifies it");
      }
    }
    assertNoFailures(failures);
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  private static long graphLaunches() {
    try (GpuDevice.Scope s = device.lock()) {
      return PassGraphs.stats(device).launches();
    }
  }

  @Test
  void copyIsCountedOptionalAndChecked() {
    int n = 1000, dims = 40;
    Random r = new Random(37);
    float[] vectors = GpuFlatIndexGpuTest.random(n * dims, r);
    float[] queries = GpuFlatIndexGpuTest.random(4 * dims, r);
    try (GpuFlatIndex index = GpuFlatIndex.upload(device, vectors, n, dims, Metric.L2)) {
      long plain = index.deviceBytes();
      assertThrows(IllegalArgumentException.class, () -> index.search(queries, 4, 10, null,
          GpuFlatIndex.Strategy.HALF_SCAN), "no FP16 copy yet");
      index.search(queries, 4, 10, null);
      assertEquals(0, index.halfStats().queries(), "without the copy small batches take the FP32 scan");
      index.addHalfCopy();
      assertEquals(plain + GpuFlatIndex.halfCopyBytes(device, n, dims), index.deviceBytes(), "the copy is counted");
      assertEquals(GpuFlatIndex.halfCopyBytes(device, n, dims),
          index.deviceBytesByPart().get(org.gpuvectors.cuda.MemoryPart.COMPACT_VECTORS), "counted as compact vectors");
      assertEquals(2L * n * 64, GpuFlatIndex.halfCopyBytes(device, n, dims), "rows padded to 64 halves");
      assertThrows(IllegalArgumentException.class, () -> index.search(queries, 4, GpuFlatIndex.HALF_MAX_K + 1, null,
          GpuFlatIndex.Strategy.HALF_SCAN));
      index.search(queries, 4, GpuFlatIndex.HALF_MAX_K + 1, null);
      assertEquals(0, index.halfStats().queries(), "k above HALF_MAX_K takes the FP32 scan");
      long deviceBefore = PassCounters.of(device).halfScanStats().queries();
      index.search(queries, 4, 10, null);
      assertEquals(4, index.halfStats().queries());
      assertEquals(4, PassCounters.of(device).halfScanStats().queries() - deviceBefore, "the device's counters sum the indexes'");
    }
    try (GpuDevice noCopies = GpuFlatIndexGpuTest.openFlat(FlatConfig.defaults().withHalfCopy(false))) {
      try (GpuFlatIndex index = GpuFlatIndex.upload(noCopies, vectors, n, dims, Metric.L2)) {
        long plain = index.deviceBytes();
        index.addHalfCopy();
        assertFalse(index.hasHalfCopy(), "turned off by FlatConfig.halfCopy");
        assertEquals(plain, index.deviceBytes(), "no copy, no bytes");
        assertEquals(0, GpuFlatIndex.halfCopyBytes(noCopies, n, dims));
        long scanned = index.scanQueries();
        index.search(queries, 4, 10, null);
        assertEquals(0, index.halfStats().queries(), "no half scan without the copy");
        assertEquals(scanned + 4, index.scanQueries(), "small batches take the FP32 scan");
      }
      assertEquals(0, noCopies.bytesInUse(), "all device buffers returned to the pool");
    }
    float[] infinite = vectors.clone();
    infinite[5] = Float.POSITIVE_INFINITY;
    try (GpuFlatIndex index = GpuFlatIndex.upload(device, infinite, n, dims, Metric.INNER_PRODUCT)) {
      index.addHalfCopy();
      assertFalse(index.hasHalfCopy(), "an infinite component leaves the index FP32 only");
    }
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }
}
