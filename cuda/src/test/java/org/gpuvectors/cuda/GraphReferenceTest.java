package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.gpuvectors.cuda.graph.GpuGraphIndex;

/**
 * The graph index's host side without a GPU: the test graph construction and the reference beam search that
 * {@code GpuGraphIndexGpuTest} compares the kernel with (against brute force), the launch plan's invariants (the
 * kernel traps when they fail), and argument checks.
 */
class GraphReferenceTest {

  @Test
  void testGraphHasFixedDegreeNoSelfLoopsNoDuplicates() {
    for (int n : new int[] {5, 33, 500}) {
      int dims = 8;
      int degree = 16;
      float[] x = FashionLike.clustered(n, dims, 8, 3);
      int[] g = GraphReference.build(x, n, dims, Metric.L2, degree);
      for (int i = 0; i < n; i++) {
        Set<Integer> row = new HashSet<>();
        int filled = 0;
        for (int e = 0; e < degree; e++) {
          int j = g[i * degree + e];
          if (j == -1) {
            continue;
          }
          filled++;
          assertTrue(j >= 0 && j < n, "ordinal");
          assertTrue(j != i, "no self loop at " + i);
          assertTrue(row.add(j), "no duplicate at " + i);
          assertEquals(filled, e + 1, "-1 only as padding at the end of row " + i);
        }
        assertEquals(Math.min(degree, n - 1), filled, "row " + i + " full unless the graph is smaller");
      }
    }
  }

  @Test
  void referenceSearchFindsTheNearestOnClusteredData() {
    int n = 4000, dims = 32, degree = 32, nq = 200, k = 10;
    for (Metric m : Metric.values()) {
      float[] x = GraphReference.prepare(FashionLike.clustered(n, dims, 16, 5), n, dims, m);
      float[] q = GraphReference.prepare(FashionLike.clustered(nq, dims, 16, 6), nq, dims, m);
      int[] g = GraphReference.build(x, n, dims, m, degree);
      int[] seeds = GraphReference.seeds(n, 128);
      int[] truth = GraphReference.exact(x, n, dims, m, q, nq, k, null);
      for (int width : new int[] {16, 64}) {
        GpuGraphIndex.SearchPlan plan = GpuGraphIndex.SearchPlan.of(dims, degree, k, width);
        int[] found = GraphReference.search(x, n, dims, m, g, degree, seeds, q, nq, k, plan.width(), plan.parents(),
            plan.maxIterations(), null);
        double recall = GraphReference.recall(found, k, truth, k, nq, k);
        System.out.printf("[gpu-vectors] reference beam search %s width %d: recall@10 %.4f%n", m, width, recall);
        if (width == 64) {
          assertTrue(recall >= 0.97, m + " recall@10 at width 64: " + recall);
        }
      }
      // a filter: only accepted ids, recall over the accepted
      Random r = new Random(7);
      long[][] masks = new long[nq][];
      for (int i = 0; i < nq; i++) {
        masks[i] = GraphReference.mask(n, 0.1, r);
      }
      GpuGraphIndex.SearchPlan plan = GpuGraphIndex.SearchPlan.of(dims, degree, k, 64);
      int[] found = GraphReference.search(x, n, dims, m, g, degree, seeds, q, nq, k, plan.width(), plan.parents(),
          plan.maxIterations(), masks);
      int[] filteredTruth = GraphReference.exact(x, n, dims, m, q, nq, k, masks);
      for (int i = 0; i < nq * k; i++) {
        assertTrue(found[i] >= 0 && CpuOracle.accepted(masks[i / k], found[i]), "accepted ids only");
      }
      double recall = GraphReference.recall(found, k, filteredTruth, k, nq, k);
      System.out.printf("[gpu-vectors] reference beam search %s width 64, 10%% filter: recall@10 %.4f%n", m, recall);
      // inner product over unnormalised vectors is the hard case of a k-NN graph (hubs); 0.87 measured
      assertTrue(recall >= (m == Metric.INNER_PRODUCT ? 0.8 : 0.95), m + " filtered recall@10: " + recall);
    }
  }

  @Test
  void searchPlanKeepsTheKernelsInvariants() {
    for (int dims : new int[] {1, 3, 30, 128, 784, 4096}) {
      for (int degree : new int[] {1, 8, 32, 100, 128, 1024}) {
        for (int k : new int[] {1, 10, 100, 2048}) {
          for (int searchWidth : new int[] {1, 16, 64, 1000, 2048}) {
            for (int nq : new int[] {1, 500, 100_000}) {
              checkPlan(dims, degree, k, searchWidth, nq);
            }
          }
        }
      }
    }
  }

  /** What gv_graph_search assumes of its parameters (it traps on the shared memory and visited-set sizes). */
  private static void checkPlan(int dims, int degree, int k, int searchWidth, int nq) {
    GpuGraphIndex.SearchPlan p = GpuGraphIndex.SearchPlan.of(dims, degree, k, searchWidth, nq);
    String what = dims + "/" + degree + "/" + k + "/" + searchWidth + "/" + nq + ": " + p;
    assertTrue(p.threads() >= 64 && p.threads() <= 1024 && p.threads() % 32 == 0, what);
    assertEquals(Math.max(k, searchWidth), p.width(), what);
    assertTrue(p.k() <= p.width(), what);
    assertTrue(Integer.bitCount(p.batch()) == 1 && p.batch() >= 32 && p.batch() >= p.parents() * degree
        && p.batch() <= 2048, what);
    assertTrue(p.parents() >= 1 && p.parents() <= 32, what);
    assertTrue(Integer.bitCount(p.teamSize()) == 1 && p.teamSize() <= 32 && p.threads() % p.teamSize() == 0, what);
    // a cleared set takes both lists and a batch (hash: half full; Bloom: 2 * words ids)
    assertTrue(Integer.bitCount(p.hashWords()) == 1 && p.hashWords() / 2 >= p.width() + k + p.batch(), what);
    long fixed = (dims + 3) / 4 * 4 + 4L * p.width() + 2L * k + 4L * p.batch() + 32 + 4;
    assertEquals(4 * (fixed + p.hashWords()), p.sharedBytes(), what);
    long smallest = 4 * (fixed + GpuGraphIndex.pow2Ceil(2 * (p.width() + k + p.batch())));
    if (smallest <= 96 << 10) {
      assertTrue(p.sharedBytes() <= 96 << 10, "a block fits sm_86's 99 KB when it can: " + what);
    }
    assertTrue(p.maxIterations() >= p.width(), what);
  }

  /**
   * Latency-bound batches (fewer queries than multiprocessors) get wide blocks and several parents per iteration;
   * larger ones the throughput plan; a configuration ({@link GraphConfig}) overrides both and is validated.
   */
  @Test
  void planByBatchSizeAndItsOverrides() {
    GpuGraphIndex.SearchPlan one = GpuGraphIndex.SearchPlan.of(784, 32, 10, 32, 1);
    assertEquals(1024, one.threads());
    assertEquals(4, one.parents());
    assertEquals(128, one.batch(), "4 parents x degree 32");
    assertEquals(8, GpuGraphIndex.SearchPlan.of(784, 32, 10, 64, 1).parents(), "width / 8");
    assertEquals(12, GpuGraphIndex.SearchPlan.of(128, 32, 100, 100, 1).parents(), "width / 8 (num_candidates 100)");
    assertEquals(16, GpuGraphIndex.SearchPlan.of(128, 32, 10, 256, 1).parents(), "at most 16");
    GpuGraphIndex.SearchPlan tiny = GpuGraphIndex.SearchPlan.of(784, 1024, 10, 32, GpuGraphIndex.LATENCY_BATCH - 1);
    assertEquals(2, tiny.parents(), "at most 2048 candidates per iteration");
    GpuGraphIndex.SearchPlan small = GpuGraphIndex.SearchPlan.of(784, 32, 10, 32, GpuGraphIndex.LATENCY_BATCH);
    assertEquals(256, small.threads());
    assertEquals(1, small.parents());
    GpuGraphIndex.SearchPlan large = GpuGraphIndex.SearchPlan.of(784, 32, 10, 32, GpuGraphIndex.SMALL_BATCH);
    assertEquals(128, large.threads());
    assertEquals(1, large.parents());
    GraphConfig fixed = GraphConfig.defaults().withParents(2).withThreads(512);
    GpuGraphIndex.SearchPlan set = GpuGraphIndex.SearchPlan.of(fixed, 784, 32, 10, 32, 1);
    assertEquals(2, set.parents());
    assertEquals(512, set.threads());
    assertEquals(2, GpuGraphIndex.SearchPlan.of(fixed, 784, 32, 10, 32, 100_000).parents(), "for every batch size");
    assertEquals(512, GpuGraphIndex.SearchPlan.of(fixed, 784, 32, 10, 32, 100_000).threads(), "for every batch size");
    assertEquals(one, GpuGraphIndex.SearchPlan.of(GraphConfig.defaults(), 784, 32, 10, 32, 1), "0: by batch size");
    assertThrows(IllegalArgumentException.class, () -> GraphConfig.defaults().withParents(33));
    assertThrows(IllegalArgumentException.class, () -> GraphConfig.defaults().withParents(-1));
    assertThrows(IllegalArgumentException.class, () -> GraphConfig.defaults().withThreads(2048));
    assertThrows(IllegalArgumentException.class, () -> GraphConfig.defaults().withThreads(100));
    assertThrows(IllegalArgumentException.class, () -> GraphConfig.defaults().withThreads(32));
    assertEquals(GraphConfig.MAX_PARENTS, GraphConfig.defaults().withParents(GraphConfig.MAX_PARENTS).parents());
  }

  @Test
  void badGraphsAndWidthsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> GpuGraphIndex.validateGraph(3, new int[6], 0, new int[] {0}));
    assertThrows(IllegalArgumentException.class, () -> GpuGraphIndex.validateGraph(3, new int[5], 2, new int[] {0}));
    assertThrows(IllegalArgumentException.class,
        () -> GpuGraphIndex.validateGraph(3, new int[] {1, 2, 0, 3, 0, 1}, 2, new int[] {0}));
    assertThrows(IllegalArgumentException.class,
        () -> GpuGraphIndex.validateGraph(3, new int[] {1, 2, 0, -2, 0, 1}, 2, new int[] {0}));
    assertThrows(IllegalArgumentException.class, () -> GpuGraphIndex.validateGraph(3, new int[6], 2, new int[0]));
    assertThrows(IllegalArgumentException.class, () -> GpuGraphIndex.validateGraph(3, new int[6], 2, new int[] {3}));
    GpuGraphIndex.validateGraph(3, new int[] {1, 2, 0, -1, 0, 1}, 2, new int[] {0, 2});
    GpuGraphIndex.validateGraph(0, new int[0], 2, new int[0]);
    assertThrows(IllegalArgumentException.class, () -> GpuGraphIndex.width(0, 10));
    assertThrows(IllegalArgumentException.class, () -> GpuGraphIndex.width(10, GpuGraphIndex.MAX_WIDTH + 1));
    assertEquals(100, GpuGraphIndex.width(64, 100));
    assertEquals(64, GpuGraphIndex.width(64, 10));
    GpuGraphIndex.checkParams(SearchParams.EXACT, 10); // the exact search: no walk, no width limit
    GpuGraphIndex.checkParams(new SearchParams.Graph(GpuGraphIndex.MAX_WIDTH), 10);
    assertThrows(IllegalArgumentException.class,
        () -> GpuGraphIndex.checkParams(new SearchParams.Graph(GpuGraphIndex.MAX_WIDTH + 1), 10));
    assertThrows(IllegalArgumentException.class, () -> new SearchParams.Graph(0));
    assertThrows(IllegalArgumentException.class, () -> GpuGraphIndex.checkParams(new SearchParams.Ivf(8), 10));
  }
}
