package org.gpuvectors.cuda.pass;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.gpuvectors.cuda.FashionLike;
import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.GpuTestCase;
import org.gpuvectors.cuda.GraphReference;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.PassConfig;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.graph.GpuGraphIndex;
import org.gpuvectors.cuda.graph.GpuGraphIndexGpuTest;
import org.gpuvectors.cuda.ivf.GpuIvfFlatIndex;
import org.gpuvectors.cuda.ivf.GpuIvfFlatIndexGpuTest;
import org.gpuvectors.cuda.ivf.GpuIvfPqIndex;
import org.gpuvectors.cuda.ivf.GpuIvfPqIndexGpuTest;

/**
 * Search passes captured as CUDA graphs and launched again ({@link PassGraph}, {@link PassGraphs}): for every shape
 * of pass below, four passes with new queries (and new masks) each, as {@link BatchSearch} runs them with capture
 * on (the first remembered, the second captured, the last two launching the kept graph), give the same ids and
 * values, bit for bit, as the same passes with capture off; the device counts the captures and launches (a test
 * whose passes silently ran uncaptured fails), and what a pass counts (shared selections, lanes) is counted by its
 * graph's launches too. Closing an index closes the graphs that read it and returns their device memory.
 *
 * <p>The reference of each comparison is the same pass enqueued launch by launch ({@link BatchSearch#runUncaptured}).
 */
class PassGraphsGpuTest extends GpuTestCase {
  private static final int RUNS = 5;

  /**
   * Runs {@link #RUNS} passes of one shape ({@code pass} builds run i's groups, new queries and masks each run)
   * with capture off and on: equal ids and values; on, one capture and {@code RUNS - 2} launches of the kept graph.
   */
  private void capturedEqualsUncaptured(String name, IntFunction<List<SearchGroup>> pass) {
    PassGraphStats before = PassGraphs.stats(device);
    int sightings = 0;
    for (int run = 0; run < RUNS; run++) {
      List<SearchGroup> groups = pass.apply(run);
      sightings = PassGraphs.sightingsToCapture(groups.size());
      SearchResult[] expected = BatchSearch.runUncaptured(device, groups);
      SearchResult[] got = BatchSearch.run(device, groups);
      for (int g = 0; g < groups.size(); g++) {
        assertArrayEquals(GpuGraphIndexGpuTest.ids(expected[g]), GpuGraphIndexGpuTest.ids(got[g]),
            name + ", run " + run + ", group " + g + ": ids");
        assertArrayEquals(GpuIvfFlatIndexGpuTest.values(expected[g]), GpuIvfFlatIndexGpuTest.values(got[g]),
            name + ", run " + run + ", group " + g + ": values");
      }
    }
    PassGraphStats after = PassGraphs.stats(device);
    assertEquals(0, after.refusals() - before.refusals(), name + ": a pass that could not be captured");
    assertEquals(1, after.captures() - before.captures(), name + ": captured once, on pass " + sightings);
    assertEquals(RUNS - sightings, after.launches() - before.launches(), name + ": the later passes launched the graph");
    System.out.printf("[gpu-vectors] %s: %d passes captured / launched as a graph, equal to the uncaptured ones; "
        + "%d graphs kept, %d bytes%n", name, RUNS - sightings + 1, after.graphs(), after.bytes());
  }

  /** One query over an {@code ivf_pq} segment with the device re-rank, unfiltered and with a new filter each pass. */
  @Test
  void oneQueryOverAnIvfPqSegment() {
    Random r = new Random(5);
    int dims = 32;
    int n = 20_000;
    GpuIvfFlatIndexGpuTest.Data data = GpuIvfFlatIndexGpuTest.lists(GpuIvfFlatIndexGpuTest.clustered(n, dims, r), n,
        dims, Metric.L2, r);
    GpuIvfPqIndexGpuTest.Pq pq = GpuIvfPqIndexGpuTest.quantize(data, 8, 8, r);
    try (GpuIvfPqIndex index = GpuIvfPqIndexGpuTest.uploadWithRawVectors(pq, data, 4)) {
      capturedEqualsUncaptured("ivf_pq, 1 query", run -> List.of(
          new SearchGroup(index, GpuIvfFlatIndexGpuTest.queries(data, 1, r), 1, 10, new SearchParams.Ivf(8), null, null)));
      capturedEqualsUncaptured("ivf_pq, 1 query, a filter", run -> List.of(
          new SearchGroup(index, GpuIvfFlatIndexGpuTest.queries(data, 1, r), 1, 10, new SearchParams.Ivf(8),
              GraphReference.mask(n, 0.3, r), null)));
      capturedEqualsUncaptured("ivf_pq, 3 queries, k 100, per-query filters", run -> List.of(
          new SearchGroup(index, GpuIvfFlatIndexGpuTest.queries(data, 3, r), 3, 100, new SearchParams.Ivf(16), null,
              new long[][] {GraphReference.mask(n, 0.5, r), null, GraphReference.mask(n, 0.05, r)})));
    }
  }

  /**
   * One query over four {@code ivf_pq} segments and a flat one: the shared selection over lanes. Its launches count
   * a shared selection each, as the uncaptured passes do.
   */
  @Test
  void oneQueryOverSegments() {
    Random r = new Random(6);
    int dims = 32;
    int[] sizes = {20_000, 10_000, 4_000, 6_000};
    List<AutoCloseable> open = new ArrayList<>();
    try {
      GpuIvfFlatIndexGpuTest.Data[] data = new GpuIvfFlatIndexGpuTest.Data[sizes.length];
      GpuIvfPqIndex[] index = new GpuIvfPqIndex[sizes.length];
      for (int s = 0; s < sizes.length; s++) {
        data[s] = GpuIvfFlatIndexGpuTest.lists(GpuIvfFlatIndexGpuTest.clustered(sizes[s], dims, r), sizes[s], dims,
            Metric.L2, r);
        index[s] = GpuIvfPqIndexGpuTest.uploadWithRawVectors(GpuIvfPqIndexGpuTest.quantize(data[s], 8, 8, r),
            data[s], 4);
        open.add(index[s]);
      }
      GpuFlatIndex flat = GpuFlatIndex.upload(device, GpuIvfFlatIndexGpuTest.clustered(5_000, dims, r), 5_000, dims,
          Metric.L2);
      open.add(flat);
      long selections = PassCounters.of(device).sharedSelections();
      capturedEqualsUncaptured("4 ivf_pq segments + 1 flat, 1 query", run -> {
        float[] q = GpuIvfFlatIndexGpuTest.queries(data[0], 1, r);
        List<SearchGroup> groups = new ArrayList<>();
        for (int s = 0; s < sizes.length; s++) {
          long[] mask = s == 1 ? GraphReference.mask(sizes[s], 0.2, r) : null;
          groups.add(new SearchGroup(index[s], q, 1, 10, new SearchParams.Ivf(8), mask, null));
        }
        groups.add(new SearchGroup(flat, q, 1, 10, null, null));
        return groups;
      });
      assertEquals(selections + 2 * RUNS, PassCounters.of(device).sharedSelections(), "a shared selection per pass, launched or not");
    } finally {
      closeAll(open);
    }
  }

  /** Flat and IVF-Flat groups of 1 to 4 queries with shared and per-query masks: the scan table and lanes. */
  @Test
  void smallFlatAndIvfFlatGroups() throws Exception {
    Random r = new Random(7);
    int dims = 40;
    List<AutoCloseable> open = new ArrayList<>();
    try {
      int[] sizes = {3_000, 12_000, 7_500};
      GpuFlatIndex[] flats = new GpuFlatIndex[sizes.length];
      for (int s = 0; s < sizes.length; s++) {
        flats[s] = GpuFlatIndex.upload(device, GpuIvfFlatIndexGpuTest.clustered(sizes[s], dims, r), sizes[s], dims,
            s % 2 == 0 ? Metric.L2 : Metric.INNER_PRODUCT);
        open.add(flats[s]);
      }
      GpuIvfFlatIndexGpuTest.Data l2 = GpuIvfFlatIndexGpuTest.lists(GpuIvfFlatIndexGpuTest.clustered(20_000, dims, r),
          20_000, dims, Metric.L2, r);
      GpuIvfFlatIndex ivf = GpuIvfFlatIndex.upload(device, l2.lists(), dims, Metric.L2, l2.rowsInListOrder());
      open.add(ivf);
      capturedEqualsUncaptured("flat x 3 + ivf_flat, 1-4 queries", run -> {
        float[] q = GpuIvfFlatIndexGpuTest.queries(l2, 4, r);
        long[][] perQuery = new long[3][];
        for (int i = 0; i < perQuery.length; i++) {
          perQuery[i] = GraphReference.mask(sizes[2], 0.1, r);
        }
        return List.of(
            new SearchGroup(flats[0], q, 1, 10, null, null),
            new SearchGroup(flats[1], q, 4, 100, GraphReference.mask(sizes[1], 0.5, r), null),
            new SearchGroup(flats[2], q, 3, 20, null, perQuery),
            new SearchGroup(ivf, q, 4, 10, new SearchParams.Ivf(8), null, null),
            new SearchGroup(flats[0], q, 2, 100, null, null));
      });
    } finally {
      closeAll(open);
    }
  }

  /** Two graph walks in one table launch. */
  @Test
  void graphWalks() {
    Random r = new Random(8);
    int n = 3_000;
    int dims = 24;
    GpuGraphIndexGpuTest.Data d = GpuGraphIndexGpuTest.data(FashionLike.clustered(n, dims, 16, 3), n, dims,
        Metric.L2, FashionLike.clustered(64, dims, 16, 4), 64, 16, 8);
    try (GpuGraphIndex graph = GpuGraphIndexGpuTest.upload(d)) {
      capturedEqualsUncaptured("graph x 2, 2 and 1 queries", run -> {
        float[] q = new float[3 * dims];
        int at = r.nextInt(60);
        System.arraycopy(d.rawQueries(), at * dims, q, 0, q.length);
        return List.of(new SearchGroup(graph, q, 2, 10, new SearchParams.Graph(32), null, null),
            new SearchGroup(graph, q, 1, 10, new SearchParams.Graph(64), GraphReference.mask(n, 0.5, r), null));
      });
    }
  }

  /**
   * Eight threads, four passes in flight at once, three shapes over a flat and an IVF-Flat index with their own
   * queries each pass: every result equals the uncaptured pass of its queries run alone (each graph serves one pass
   * at a time; busy ones get company up to {@link PassGraphs#PER_KEY}). Flat and IVF-Flat only: their results do not
   * depend on the order in which blocks run, whereas the {@code ivf_pq} keys scan appends codes of equal distance in
   * the order its blocks ran, so passes run at once may keep different ones of equal distance, captured or not.
   */
  @Test
  void concurrentPassesOfRepeatedShapes() throws Exception {
    Random r = new Random(9);
    int dims = 32;
    int n = 20_000;
    GpuIvfFlatIndexGpuTest.Data data = GpuIvfFlatIndexGpuTest.lists(GpuIvfFlatIndexGpuTest.clustered(n, dims, r), n,
        dims, Metric.L2, r);
    // four passes in flight on a device of its own
    try (GpuDevice device = GpuDevice.open(0, GpuConfig.builder().pass(PassConfig.defaults().withPassesInFlight(4))
             .build());
         GpuFlatIndex flat = GpuFlatIndex.upload(device, data.vectors(), n, dims, Metric.INNER_PRODUCT);
         GpuIvfFlatIndex ivf = GpuIvfFlatIndex.upload(device, data.lists(), dims, Metric.L2, data.rowsInListOrder())) {
      int threads = 8;
      int perThread = 30;
      List<List<SearchGroup>> work = new ArrayList<>();
      List<SearchResult[]> expected = new ArrayList<>();
      for (int p = 0; p < threads * perThread; p++) {
        float[] q = GpuIvfFlatIndexGpuTest.queries(data, 3, r);
        List<SearchGroup> groups = switch (p % 3) {
          case 0 -> List.of(new SearchGroup(flat, q, 1, 10, null, null));
          case 1 -> List.of(new SearchGroup(ivf, q, 2, 10, new SearchParams.Ivf(8), null, null));
          default -> List.of(new SearchGroup(flat, q, 3, 100, GraphReference.mask(n, 0.3, r), null),
              new SearchGroup(ivf, q, 1, 20, new SearchParams.Ivf(16), null, null));
        };
        work.add(groups);
        expected.add(BatchSearch.runUncaptured(device, groups));
      }
      PassGraphStats before = PassGraphs.stats(device);
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        List<Future<SearchResult[]>> together = new ArrayList<>();
        for (List<SearchGroup> groups : work) {
          together.add(pool.submit(() -> BatchSearch.run(device, groups)));
        }
        for (int p = 0; p < work.size(); p++) {
          SearchResult[] got = together.get(p).get();
          for (int g = 0; g < got.length; g++) {
            assertArrayEquals(GpuGraphIndexGpuTest.ids(expected.get(p)[g]), GpuGraphIndexGpuTest.ids(got[g]),
                "pass " + p + " group " + g + ": ids");
            assertArrayEquals(GpuIvfFlatIndexGpuTest.values(expected.get(p)[g]),
                GpuIvfFlatIndexGpuTest.values(got[g]), "pass " + p + " group " + g + ": values");
          }
        }
      } finally {
        pool.shutdownNow();
      }
      PassGraphStats after = PassGraphs.stats(device);
      assertTrue(after.launches() - before.launches() >= work.size() / 2,
          "most passes launched a kept graph: " + before + " -> " + after);
      assertTrue(after.captures() - before.captures() <= 3 * PassGraphs.PER_KEY, "at most " + PassGraphs.PER_KEY
          + " graphs of each shape: " + before + " -> " + after);
      System.out.printf("[gpu-vectors] %d passes of 3 shapes from %d threads, 4 in flight: %d captured, %d launched a"
          + " kept graph; the results of the passes run alone%n", work.size(), threads,
          after.captures() - before.captures(), after.launches() - before.launches());
    }
  }

  /**
   * A pass with a group of more than {@link PassGraphs#GROUP_QUERIES} queries among others, or a lone group of more
   * than {@link PassGraphs#LONE_GROUP_QUERIES}, runs uncaptured, however often; a lone group of that many is captured.
   */
  @Test
  void largerGroupsAreNotCaptured() {
    Random r = new Random(11);
    int dims = 16;
    try (GpuFlatIndex flat = GpuFlatIndex.upload(device, GpuIvfFlatIndexGpuTest.clustered(2_000, dims, r), 2_000,
        dims, Metric.L2);
         GpuFlatIndex other = GpuFlatIndex.upload(device, GpuIvfFlatIndexGpuTest.clustered(1_000, dims, r), 1_000,
        dims, Metric.L2)) {
      int lone = PassGraphs.LONE_GROUP_QUERIES;
      float[] q = GpuIvfFlatIndexGpuTest.clustered(lone + 1, dims, r);
      PassGraphStats before = PassGraphs.stats(device);
      for (int i = 0; i < 4; i++) {
        BatchSearch.run(device, List.of(new SearchGroup(flat, q, lone + 1, 10, null, null)));
        BatchSearch.run(device, List.of(new SearchGroup(flat, q, PassGraphs.GROUP_QUERIES + 1, 10, null, null),
            new SearchGroup(other, q, 1, 10, null, null)));
      }
      assertEquals(before, PassGraphs.stats(device), "no capture, no launch");
      for (int i = 0; i < 3; i++) {
        BatchSearch.run(device, List.of(new SearchGroup(flat, q, lone, 10, null, null)));
      }
      PassGraphStats after = PassGraphs.stats(device);
      assertEquals(1, after.captures() - before.captures(), "a lone group of " + lone + " captured on its second pass");
      assertEquals(1, after.launches() - before.launches(), "and launched on its third");
    }
  }

  /** Closing an index closes the graphs that read it: the device memory they held goes back to the pool. */
  @Test
  void closingAnIndexClosesItsGraphs() {
    Random r = new Random(10);
    int dims = 16;
    long inUse = device.bytesInUse();
    GpuFlatIndex keep = GpuFlatIndex.upload(device, GpuIvfFlatIndexGpuTest.clustered(2_000, dims, r), 2_000, dims,
        Metric.L2);
    GpuFlatIndex closing = GpuFlatIndex.upload(device, GpuIvfFlatIndexGpuTest.clustered(3_000, dims, r), 3_000, dims,
        Metric.L2);
    try {
      float[] q = GpuIvfFlatIndexGpuTest.clustered(1, dims, r);
      for (int i = 0; i < 3; i++) {
        BatchSearch.run(device, List.of(new SearchGroup(keep, q, 1, 10, null, null)));
        BatchSearch.run(device, List.of(new SearchGroup(keep, q, 1, 10, null, null),
            new SearchGroup(closing, q, 1, 10, null, null)));
      }
      PassGraphStats held = PassGraphs.stats(device);
      assertEquals(2, held.graphs(), "a graph of each shape: " + held);
      closing.close();
      PassGraphStats left = PassGraphs.stats(device);
      assertEquals(1, left.graphs(), "the graph that read the closed index is gone: " + left);
      keep.close();
      assertEquals(0, PassGraphs.stats(device).graphs());
      assertEquals(0, PassGraphs.stats(device).bytes());
      assertEquals(inUse, device.bytesInUse(), "every block of the graphs back in the pool");
    } finally {
      keep.close();
      closing.close();
    }
  }

  private static void closeAll(List<AutoCloseable> open) {
    for (AutoCloseable c : open) {
      try {
        c.close();
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    }
  }
}
