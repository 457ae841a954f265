package org.gpuvectors.cuda.device;

import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.GpuTestCase;
import org.gpuvectors.cuda.GraphReference;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.PassConfig;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.flat.GpuFlatIndexGpuTest;
import org.gpuvectors.cuda.graph.GpuGraphIndexGpuTest;
import org.gpuvectors.cuda.ivf.GpuIvfFlatIndex;
import org.gpuvectors.cuda.ivf.GpuIvfFlatIndexGpuTest;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.PassCounters;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.DeviceMemoryPool;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The small groups of a pass spread over the device's lanes ({@link BatchSearch#laneGroups}, {@link
 * GpuDevice.Lanes}): the same results as the pass on one stream, the flat groups as the CPU oracle finds them, and
 * no device block reused by one lane while another may still read it.
 */
class LanesGpuTest extends GpuTestCase {

  /**
   * Ten small groups over seven segments (flat and IVF-Flat, L2 and inner product, k 1 to 100, shared and
   * per-query masks, 1 to 40 queries): more groups than lanes, so lanes are reused within the pass. Ids and
   * values equal to the same pass on one stream (the same kernels on the same data); the flat groups checked
   * against the oracle too.
   */
  @Test
  void smallGroupsOnLanesEqualThePassOnOneStream() throws Exception {
    Random r = new Random(17);
    int dims = 40;
    List<AutoCloseable> open = new ArrayList<>();
    try {
      int[] sizes = {3_000, 12_000, 7_500, 20_000, 1_000};
      float[][] vectors = new float[sizes.length][];
      Metric[] metrics = new Metric[sizes.length];
      for (int s = 0; s < sizes.length; s++) {
        vectors[s] = GpuIvfFlatIndexGpuTest.clustered(sizes[s], dims, r);
        metrics[s] = s % 2 == 0 ? Metric.L2 : Metric.INNER_PRODUCT;
      }
      float[] ivfVectors = GpuIvfFlatIndexGpuTest.clustered(20_000, dims, r);
      GpuIvfFlatIndexGpuTest.Data l2 = GpuIvfFlatIndexGpuTest.lists(ivfVectors, 20_000, dims, Metric.L2, r);
      GpuIvfFlatIndexGpuTest.Data ip = GpuIvfFlatIndexGpuTest.lists(ivfVectors, 20_000, dims, Metric.INNER_PRODUCT, r);
      float[] queries = GpuIvfFlatIndexGpuTest.queries(l2, 40, r);
      long[] half = GraphReference.mask(sizes[1], 0.5, r);
      long[][] perQuery = new long[7][];
      for (int q = 0; q < perQuery.length; q++) {
        perQuery[q] = GraphReference.mask(sizes[3], 0.1, r);
      }
      long[] ivfMask = GraphReference.mask(20_000, 0.3, r);
      // the same indexes on a device of one lane (the reference) and on the test's device (the default lanes)
      GpuDevice oneLane = GpuDevice.open(0, GpuConfig.builder().pass(PassConfig.defaults().withLanes(1)).build());
      open.add(oneLane);
      List<List<SearchGroup>> passes = new ArrayList<>();
      for (GpuDevice d : List.of(oneLane, device)) {
        GpuFlatIndex[] flats = new GpuFlatIndex[sizes.length];
        for (int s = 0; s < sizes.length; s++) {
          flats[s] = GpuFlatIndex.upload(d, vectors[s], sizes[s], dims, metrics[s]);
          open.add(flats[s]);
        }
        GpuIvfFlatIndex ivfL2 = GpuIvfFlatIndex.upload(d, l2.lists(), dims, Metric.L2, l2.rowsInListOrder());
        open.add(ivfL2);
        GpuIvfFlatIndex ivfIp = GpuIvfFlatIndex.upload(d, ip.lists(), dims, Metric.INNER_PRODUCT,
            ip.rowsInListOrder());
        open.add(ivfIp);
        passes.add(List.of(
            new SearchGroup(flats[0], queries, 1, 10, null, null),
            new SearchGroup(flats[1], queries, 12, 100, half, null),
            new SearchGroup(flats[2], queries, 40, 1, null, null),
            new SearchGroup(flats[3], queries, 7, 20, null, perQuery),
            new SearchGroup(flats[4], queries, 3, 10, null, null),
            new SearchGroup(ivfL2, queries, 30, 10, new SearchParams.Ivf(8), null, null),
            new SearchGroup(ivfIp, queries, 16, 50, new SearchParams.Ivf(4), ivfMask, null),
            new SearchGroup(flats[0], queries, 5, 100, null, null),
            new SearchGroup(ivfL2, queries, 2, 100, new SearchParams.Ivf(64), ivfMask, null),
            new SearchGroup(flats[3], queries, 40, 10, null, null)));
      }
      List<SearchGroup> groups = passes.get(1);
      assertEquals(groups.size(), BatchSearch.laneGroups(groups, null), "every group is small");
      int lanes = device.config().pass().lanes();
      assertTrue(lanes > 1, "the default configuration spreads passes over lanes: " + lanes);

      SearchResult[] oneStream = BatchSearch.run(oneLane, passes.get(0));
      assertEquals(0, PassCounters.of(oneLane).lanePasses(), "one stream: no lanes");
      long before = PassCounters.of(device).lanePasses();
      SearchResult[] onLanes = BatchSearch.run(device, groups);
      assertEquals(before + 1, PassCounters.of(device).lanePasses(), "the pass ran on lanes");

      for (int g = 0; g < groups.size(); g++) {
        assertArrayEquals(GpuGraphIndexGpuTest.ids(oneStream[g]), GpuGraphIndexGpuTest.ids(onLanes[g]),
            "group " + g + ": ids");
        assertArrayEquals(GpuIvfFlatIndexGpuTest.values(oneStream[g]), GpuIvfFlatIndexGpuTest.values(onLanes[g]),
            "group " + g + ": values");
      }
      for (int g : new int[] {0, 1, 2, 4, 7, 9}) {
        SearchGroup group = groups.get(g);
        int s = g == 7 ? 0 : g == 9 ? 3 : g;
        assertNull(GpuFlatIndexGpuTest.compare(onLanes[g], vectors[s], sizes[s], dims, group.index().metric(),
            queries, group.numQueries(), group.k(), group.sharedMask()), "flat group " + g + " against the oracle");
      }
      System.out.printf("[gpu-vectors] %d small groups on %d lanes: the same ids and values as on one stream%n",
          groups.size(), lanes);
    } finally {
      for (AutoCloseable c : open.reversed()) { // indexes before the device they live on
        try {
          c.close();
        } catch (Exception e) {
          throw new AssertionError(e);
        }
      }
    }
  }

  /**
   * A block returned during a lanes pass is not lent again until the pass closes (another lane may still read
   * it), then it is: the pool's accounting stays exact.
   */
  @Test
  void blocksReturnedDuringALanesPassWaitForItsEnd() {
    try (GpuDevice.Scope s = device.lock()) {
      long inUse = device.bytesInUse();
      DeviceBuffer first = device.allocate(1 << 20);
      long address = first.address();
      DeviceBuffer second;
      try (GpuDevice.Lanes lanes = device.lanes(2)) {
        lanes.use(1);
        first.close();
        assertEquals(inUse + DeviceMemoryPool.sizeClass(1 << 20), device.bytesInUse(), "still lent out in the pass");
        second = device.allocate(1 << 20);
        assertNotEquals(address, second.address(), "a block returned in the pass is not reused in it");
      }
      try (DeviceBuffer third = device.allocate(1 << 20)) {
        assertEquals(address, third.address(), "returned to the pool when the pass closed");
      }
      second.close();
      assertEquals(inUse, device.bytesInUse());
    }
  }
}
