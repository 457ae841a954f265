package org.gpuvectors.cuda.flat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
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
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.rerank.CandidateBound;
import org.gpuvectors.cuda.rerank.RerankStats;

/**
 * {@link GpuFlatIndex.Precision#TF32_RERANK} on the GPU against the CPU oracle (exact id sets up to FP32 near-ties,
 * {@link CpuOracle#compare}): Fashion-like 784-d pixel data and 128-d clusters, k = 1 / 10 / 100, no mask, a shared
 * mask and per-query masks (through {@link BatchSearch}), several tiles; near-tie queries that must fall back to FP32
 * (counted) and still match. Skips (visibly) without a GPU.
 */
class GpuFlatIndexTf32GpuTest extends GpuTestCase {
  private static final int[] KS = {1, 10, 100};

  /**
   * Searches {@code nq} queries with TF32_RERANK under every mask kind and k, compares each with the oracle (its
   * k = 100 lists cut for the smaller k) and returns the failures; {@code fallbacks[0]} gets the fallback count.
   */
  private static List<String> searchAndCompare(GpuFlatIndex index, float[] vectors, int n, int dims, Metric m,
                                               float[] queries, int nq, long[] fallbacks, Random r) {
    List<String> failures = new ArrayList<>();
    long[] shared = GpuFlatIndexGpuTest.bits(n, 0.3, r);
    long[][] perQuery = new long[nq][];
    for (int q = 0; q < nq; q++) {
      perQuery[q] = q % 3 == 0 ? null : GpuFlatIndexGpuTest.bits(n, q % 3 == 1 ? 0.5 : 0.05, r);
    }
    index.setPrecision(GpuFlatIndex.Precision.TF32_RERANK);
    for (int mask = 0; mask < 3; mask++) {
      List<List<CpuOracle.Entry>> expected = new ArrayList<>();
      for (int q = 0; q < nq; q++) {
        long[] bits = mask == 0 ? null : mask == 1 ? shared : perQuery[q];
        expected.add(CpuOracle.search(vectors, n, dims, m, queries, q, KS[KS.length - 1], bits));
      }
      for (int k : KS) {
        long before = index.rerankStats().fallbacks();
        SearchResult res = mask == 2
            ? BatchSearch.run(index.device(), List.of(new SearchGroup(index, queries, nq, k, null, perQuery)))[0]
            : index.search(queries, nq, k, mask == 0 ? null : shared, GpuFlatIndex.Strategy.GEMM);
        fallbacks[0] += index.rerankStats().fallbacks() - before;
        for (int q = 0; q < nq; q++) {
          long[] bits = mask == 0 ? null : mask == 1 ? shared : perQuery[q];
          String f = check(res, q, k, expected.get(q), vectors, n, dims, m, queries, bits);
          if (f != null) {
            failures.add(m + " mask=" + mask + " k=" + k + " query " + q + ": " + f);
          }
        }
      }
    }
    return failures;
  }

  /** Query q's first k results against the oracle's (a list of at least k, cut to k) and its count. */
  static String check(SearchResult res, int q, int k, List<CpuOracle.Entry> expected100, float[] vectors,
                              int n, int dims, Metric m, float[] queries, long[] bits) {
    int[] ids = new int[k];
    float[] vals = new float[k];
    for (int i = 0; i < k; i++) {
      ids[i] = res.id(q, i);
      vals[i] = res.distance(q, i);
    }
    List<CpuOracle.Entry> exp = expected100.subList(0, Math.min(k, expected100.size()));
    String f = CpuOracle.compare(exp, ids, vals, 0, k, CpuOracle.searchTruth(vectors, n, dims, m, queries, q, bits));
    if (f == null && res.count(q) != exp.size()) {
      f = "count " + res.count(q) + " != " + exp.size();
    }
    return f;
  }

  @Test
  void fashionLikePixelsMatchOracle() {
    int n = 8000, nq = 40, dims = FashionLike.DIMS;
    float[] vectors = FashionLike.vectors(n, 11);
    float[] queries = FashionLike.vectors(nq, 12);
    long[] fallbacks = new long[1];
    List<String> failures;
    // 3 tiles (2944 + 2944 + 2112 vectors)
    try (GpuDevice tiles = GpuFlatIndexGpuTest.openFlat(FlatConfig.defaults().withTileBudgetBytes(4L * nq * 3000))) {
      try (GpuFlatIndex index = GpuFlatIndex.upload(tiles, vectors, n, dims, Metric.L2)) {
        failures = searchAndCompare(index, vectors, n, dims, Metric.L2, queries, nq, fallbacks, new Random(3));
        assertEquals(9L * nq, index.rerankStats().queries(), "every search took the TF32 path");
      }
      assertEquals(0, tiles.bytesInUse(), "all device buffers returned to the pool");
    }
    System.out.println("[gpu-vectors] TF32 re-rank, Fashion-like 784-d: " + fallbacks[0] + " of " + 9 * nq
        + " queries fell back to FP32");
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
    assertTrue(fallbacks[0] <= nq, "the TF32 candidates answer most queries: " + fallbacks[0] + " fallbacks");
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  @Test
  void clusteredMatchOracleForEveryMetric() {
    int n = 10_000, nq = 40, dims = 128;
    float[] vectors = FashionLike.clustered(n, dims, 200, 21);
    float[] queries = FashionLike.clustered(nq, dims, 200, 22);
    List<String> failures = new ArrayList<>();
    long[] fallbacks = new long[1];
    for (Metric m : Metric.values()) {
      try (GpuFlatIndex index = GpuFlatIndex.upload(device, vectors, n, dims, m)) {
        failures.addAll(searchAndCompare(index, vectors, n, dims, m, queries, nq, fallbacks, new Random(4)));
      }
    }
    System.out.println("[gpu-vectors] TF32 re-rank, clustered 128-d: " + fallbacks[0] + " of " + 27 * nq
        + " queries fell back to FP32");
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
    assertTrue(fallbacks[0] <= 3 * nq, "the TF32 candidates answer most queries: " + fallbacks[0] + " fallbacks");
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /**
   * A batch large enough for WarpSelect tiles (8 * SMs + 3 queries), several tiles, and rows not 16-byte aligned
   * (dims 37: the re-rank kernel's scalar loads).
   */
  @Test
  void largeBatchUnalignedRowsMatchOracle() {
    Random r = new Random(13);
    int n = 3001, dims = 37;
    float[] vectors = GpuFlatIndexGpuTest.random(n * dims, r);
    int nq = 8 * device.multiprocessorCount() + 3;
    float[] queries = GpuFlatIndexGpuTest.random(nq * dims, r);
    List<String> failures = new ArrayList<>();
    try (GpuDevice tiles = GpuFlatIndexGpuTest.openFlat(FlatConfig.defaults().withTileBudgetBytes(4L * nq * 1024))) {
      for (Metric m : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
        try (GpuFlatIndex index = GpuFlatIndex.upload(tiles, vectors, n, dims, m)) {
          index.setPrecision(GpuFlatIndex.Precision.TF32_RERANK);
          SearchResult res = index.search(queries, nq, 10, null, GpuFlatIndex.Strategy.GEMM);
          for (int q = 0; q < nq; q++) {
            List<CpuOracle.Entry> exp = CpuOracle.search(vectors, n, dims, m, queries, q, 10, null);
            String f = check(res, q, 10, exp, vectors, n, dims, m, queries, null);
            if (f != null) {
              failures.add(m + " query " + q + ": " + f);
            }
          }
          System.out.println("[gpu-vectors] TF32 re-rank, " + m + " " + n + " x " + dims + ", " + nq + " queries: "
              + index.rerankStats());
        }
      }
      assertEquals(0, tiles.bytesInUse(), "all device buffers returned to the pool");
    }
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
  }

  /**
   * Near ties the TF32 bound cannot separate: each "tie" query is an integer point c with 256 vectors at exactly
   * squared distance 9 (c +- 3 e_i, 128 dims), more than k' = 200 even at k = 100, so the k-th and the k'-th keys
   * tie and no certificate can hold: every tie query must fall back to FP32 and be counted. Integers below 2^11 are
   * exact in TF32 and every sum below 2^24 exact in FP32, so the FP32 path sees the ties exactly too. The other
   * queries (random pixels) and interleaved per-query masks check that the fallback's gathered rows and scattered
   * results land on the right queries.
   */
  @Test
  void nearTiesFallBackToFp32AndStayExact() {
    int ties = 8;
    NearTies data = NearTies.make(ties, 8, 2000, new Random(17));
    int n = data.n(), dims = data.dims(), nq = data.numQueries();
    float[] vectors = data.vectors();
    float[] queries = data.queries();
    boolean[] tie = data.tie();
    long[][] masks = data.masks();
    List<String> failures = new ArrayList<>();
    try (GpuFlatIndex index = GpuFlatIndex.upload(device, vectors, n, dims, Metric.L2)) {
      index.setPrecision(GpuFlatIndex.Precision.TF32_RERANK);
      for (int k : KS) {
        for (boolean masked : new boolean[] {false, true}) {
          RerankStats before = index.rerankStats();
          SearchResult res = masked
              ? BatchSearch.run(device, List.of(new SearchGroup(index, queries, nq, k, null, masks)))[0]
              : index.search(queries, nq, k, null, GpuFlatIndex.Strategy.GEMM);
          long fell = index.rerankStats().fallbacks() - before.fallbacks();
          assertEquals(nq, index.rerankStats().queries() - before.queries());
          assertTrue(fell >= ties && fell <= nq, "k=" + k + " masked=" + masked + ": " + fell
              + " fallbacks, every one of the " + ties + " tie queries must be one");
          for (int q = 0; q < nq; q++) {
            long[] bits = masked ? masks[q] : null;
            List<CpuOracle.Entry> exp = CpuOracle.search(vectors, n, dims, Metric.L2, queries, q, k, bits);
            String f = check(res, q, k, exp, vectors, n, dims, Metric.L2, queries, bits);
            if (f == null && tie[q] && res.distance(q, k - 1) != 9f) {
              f = "tie query's k-th distance " + res.distance(q, k - 1) + " != 9";
            }
            if (f != null) {
              failures.add("k=" + k + " masked=" + masked + " query " + q + (tie[q] ? " (tie)" : "") + ": " + f);
            }
          }
        }
      }
      System.out.println("[gpu-vectors] TF32 re-rank near ties: " + index.rerankStats());
    }
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  @Test
  void precisionIsPerIndexAndFp32ByDefault() {
    Random r = new Random(19);
    int n = 2000, dims = 32;
    float[] vectors = GpuFlatIndexGpuTest.random(n * dims, r);
    float[] queries = GpuFlatIndexGpuTest.random(20 * dims, r);
    try (GpuFlatIndex index = GpuFlatIndex.upload(device, vectors, n, dims, Metric.L2)) {
      assertEquals(GpuFlatIndex.Precision.FP32, index.precision());
      SearchResult fp32 = index.search(queries, 20, 10, null);
      assertEquals(new RerankStats(0, 0), index.rerankStats());
      index.setPrecision(GpuFlatIndex.Precision.TF32_RERANK);
      SearchResult tf32 = index.search(queries, 20, 10, null);
      assertEquals(20, index.rerankStats().queries());
      for (int q = 0; q < 20; q++) {
        List<CpuOracle.Entry> exp = CpuOracle.search(vectors, n, dims, Metric.L2, queries, q, 10, null);
        assertNull(check(fp32, q, 10, exp, vectors, n, dims, Metric.L2, queries, null), "FP32 query " + q);
        assertNull(check(tf32, q, 10, exp, vectors, n, dims, Metric.L2, queries, null), "TF32 query " + q);
      }
      index.search(queries, 20, CandidateBound.MAX_K + 1, null);
      assertEquals(20, index.rerankStats().queries(), "k above CandidateBound.MAX_K runs FP32");
    }
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /** AUTO takes the TF32 pass for large batches over many vectors only, with the oracle's results either way. */
  @Test
  void autoPrecisionChoosesByBatchAndSize() {
    Random r = new Random(23);
    int n = 4000, dims = 32;
    float[] vectors = GpuFlatIndexGpuTest.random(n * dims, r);
    int nq = GpuFlatIndex.TF32_AUTO_MIN_QUERIES;
    float[] queries = GpuFlatIndexGpuTest.random(nq * dims, r);
    try (GpuFlatIndex index = GpuFlatIndex.upload(device, vectors, n, dims, Metric.L2)) {
      index.setPrecision(GpuFlatIndex.Precision.AUTO);
      assertFalse(index.usesTf32(nq - 1, 10), "a batch below the threshold");
      assertFalse(index.usesTf32(nq, 100), "200 candidates are more than 1/50 of 4,000 vectors");
      assertTrue(index.usesTf32(nq, 10));
      SearchResult small = index.search(queries, 16, 10, null);
      assertEquals(0, index.rerankStats().queries(), "16 queries run FP32");
      SearchResult large = index.search(queries, nq, 10, null);
      assertEquals(nq, index.rerankStats().queries(), "a batch of " + nq + " runs TF32 + re-rank");
      for (int q = 0; q < nq; q += 37) {
        List<CpuOracle.Entry> exp = CpuOracle.search(vectors, n, dims, Metric.L2, queries, q, 10, null);
        assertNull(check(large, q, 10, exp, vectors, n, dims, Metric.L2, queries, null), "AUTO query " + q);
        if (q < 16) {
          assertNull(check(small, q, 10, exp, vectors, n, dims, Metric.L2, queries, null), "AUTO small query " + q);
        }
      }
    }
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }
  /**
   * {@link GpuFlatIndex#searchOwnVectors}, the brute force of a k-NN graph: an index uploaded from rows searched with
   * its own vectors as the queries, all of them (AUTO takes the TF32 pass: a batch of 6,000 over 6,000 vectors) and a
   * range in the middle (its offsets into the vectors and their norms), against the oracle's id sets; each vector
   * finds itself.
   */
  @Test
  void ownVectorsAsQueriesMatchOracle() {
    Random r = new Random(29);
    int n = 6000, dims = 48, k = 33;
    float[] vectors = GpuFlatIndexGpuTest.random(n * dims, r);
    float[][] rows = new float[n][];
    for (int i = 0; i < n; i++) {
      rows[i] = java.util.Arrays.copyOfRange(vectors, i * dims, (i + 1) * dims);
    }
    for (Metric m : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
      try (GpuFlatIndex index = GpuFlatIndex.upload(device, rows, n, dims, m)) {
        index.setPrecision(GpuFlatIndex.Precision.AUTO);
        int[] all = index.searchOwnVectors(0, n, k);
        assertEquals(n, index.rerankStats().queries(), m + ": every vector took the TF32 pass");
        int first = 1000, count = 1500;
        int[] range = index.searchOwnVectors(first, count, k);
        for (int i = 0; i < n; i += 7) {
          assertNull(checkOwn(all, i, i, k, vectors, n, dims, m), m + " vector " + i);
          int self = i;
          if (m == Metric.L2) {
            assertTrue(java.util.Arrays.stream(all, i * k, (i + 1) * k).anyMatch(id -> id == self),
                "vector " + i + " finds itself");
          }
        }
        for (int i = 0; i < count; i += 5) {
          assertNull(checkOwn(range, i, first + i, k, vectors, n, dims, m), m + " range vector " + (first + i));
        }
      }
    }
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /** Row {@code row} of {@code ids} (k per row), the k nearest of vector {@code self}, against the oracle. */
  private static String checkOwn(int[] ids, int row, int self, int k, float[] vectors, int n, int dims, Metric m) {
    float[] values = new float[ids.length];
    for (int j = row * k; j < (row + 1) * k; j++) {
      values[j] = ids[j] < 0 ? 0 : (float) CpuOracle.distance(vectors, ids[j] * dims, vectors, self * dims, dims, m);
    }
    return CpuOracle.compare(CpuOracle.search(vectors, n, dims, m, vectors, self, k, null), ids, values, row * k, k,
        CpuOracle.searchTruth(vectors, n, dims, m, vectors, self, null));
  }
}
