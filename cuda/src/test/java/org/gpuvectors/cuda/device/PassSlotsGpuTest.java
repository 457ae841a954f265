package org.gpuvectors.cuda.device;

import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.GpuTestCase;
import org.gpuvectors.cuda.GraphReference;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.PassConfig;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.graph.GpuGraphIndexGpuTest;
import org.gpuvectors.cuda.ivf.GpuIvfFlatIndex;
import org.gpuvectors.cuda.ivf.GpuIvfFlatIndexGpuTest;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.PassCounters;
import org.gpuvectors.cuda.pass.PassGraphs;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.DeviceMemoryPool;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Search passes in flight at once ({@link GpuDevice#beginPass}; a device of three slots here): passes run from many threads give the results of the same passes run one at a time, they do overlap, and a
 * device block returned by a pass is lent again only once that pass has ended.
 */
class PassSlotsGpuTest extends GpuTestCase {

  @Test
  void blocksReturnedInAPassWaitForItsEnd() {
    long inUse;
    long address;
    DeviceBuffer second;
    PassSlot slot;
    try (GpuDevice.Scope s = device.lock()) {
      inUse = device.bytesInUse();
      slot = device.beginPass();
      DeviceBuffer first = device.allocate(1 << 20);
      address = first.address();
      first.close();
      assertEquals(inUse + DeviceMemoryPool.sizeClass(1 << 20), device.bytesInUse(), "still lent out in the pass");
      second = device.allocate(1 << 20);
      assertNotEquals(address, second.address(), "a block returned in the pass is not reused in it");
      device.endEnqueue(slot);
      try (DeviceBuffer other = device.allocate(1 << 20)) {
        assertNotEquals(address, other.address(), "nor by another pass before it ends");
      }
    }
    device.awaitPass(slot);
    device.endPass(slot);
    try (GpuDevice.Scope s = device.lock(); DeviceBuffer third = device.allocate(1 << 20)) {
      assertEquals(address, third.address(), "returned to the pool when the pass ended");
      second.close();
    }
    try (GpuDevice.Scope s = device.lock()) {
      assertEquals(inUse, device.bytesInUse());
    }
  }

  /**
   * Eight threads run 40 passes each, every pass a random choice of small groups over flat and IVF-Flat segments
   * (masks, k from 1 to 100): each pass's ids and values equal those of the same pass run alone beforehand, passes
   * overlapped, and every device block is back in the pool at the end.
   */
  @Test
  void concurrentPassesGiveTheResultsOfPassesRunAlone() throws Exception {
    Random r = new Random(23);
    int dims = 32;
    List<AutoCloseable> open = new ArrayList<>();
    ExecutorService threads = Executors.newFixedThreadPool(8);
    // more threads than slots: passes also wait for a free slot
    GpuDevice device = GpuDevice.open(0, GpuConfig.builder().pass(PassConfig.defaults().withPassesInFlight(3)).build());
    open.add(device);
    try {
      int[] sizes = {5_000, 30_000, 12_000};
      List<DeviceIndex> indexes = new ArrayList<>();
      for (int s = 0; s < sizes.length; s++) {
        float[] v = GpuIvfFlatIndexGpuTest.clustered(sizes[s], dims, r);
        GpuFlatIndex flat = GpuFlatIndex.upload(device, v, sizes[s], dims, s == 1 ? Metric.INNER_PRODUCT : Metric.L2);
        open.add(flat);
        indexes.add(flat);
      }
      float[] ivfVectors = GpuIvfFlatIndexGpuTest.clustered(40_000, dims, r);
      GpuIvfFlatIndexGpuTest.Data data = GpuIvfFlatIndexGpuTest.lists(ivfVectors, 40_000, dims, Metric.L2, r);
      GpuIvfFlatIndex ivf = GpuIvfFlatIndex.upload(device, data.lists(), dims, Metric.L2, data.rowsInListOrder());
      open.add(ivf);
      indexes.add(ivf);
      float[] queries = GpuIvfFlatIndexGpuTest.queries(data, 8, r);
      long[] mask = GraphReference.mask(30_000, 0.2, r);
      int[] ks = {1, 10, 100};

      int passes = 8 * 40;
      List<List<SearchGroup>> work = new ArrayList<>();
      for (int p = 0; p < passes; p++) {
        List<SearchGroup> groups = new ArrayList<>();
        for (int g = 0, n = 1 + r.nextInt(4); g < n; g++) {
          int i = r.nextInt(indexes.size());
          DeviceIndex index = indexes.get(i);
          int nq = 1 + r.nextInt(8);
          int k = ks[r.nextInt(ks.length)];
          groups.add(index instanceof GpuIvfFlatIndex
              ? new SearchGroup(index, queries, nq, k, new SearchParams.Ivf(1 + r.nextInt(16)), null, null)
              : new SearchGroup(index, queries, nq, k, i == 1 && r.nextBoolean() ? mask : null, null));
        }
        work.add(groups);
      }
      List<SearchResult[]> alone = new ArrayList<>();
      for (List<SearchGroup> groups : work) {
        alone.add(BatchSearch.run(device, groups));
      }
      // blocks the captured passes keep (their input, output and temporaries) are in use, not lost
      long inUse;
      try (GpuDevice.Scope s = device.lock()) {
        inUse = device.bytesInUse() - PassGraphs.stats(device).bytes();
      }
      long overlappedBefore = PassCounters.of(device).overlappedPasses();
      List<Future<SearchResult[]>> together = new ArrayList<>();
      for (List<SearchGroup> groups : work) {
        together.add(threads.submit(() -> BatchSearch.run(device, groups)));
      }
      for (int p = 0; p < passes; p++) {
        SearchResult[] got = together.get(p).get();
        for (int g = 0; g < got.length; g++) {
          assertArrayEquals(GpuGraphIndexGpuTest.ids(alone.get(p)[g]), GpuGraphIndexGpuTest.ids(got[g]),
              "pass " + p + " group " + g + ": ids");
          assertArrayEquals(GpuIvfFlatIndexGpuTest.values(alone.get(p)[g]), GpuIvfFlatIndexGpuTest.values(got[g]),
              "pass " + p + " group " + g + ": values");
        }
      }
      long overlapped = PassCounters.of(device).overlappedPasses() - overlappedBefore;
      assertTrue(overlapped > 0, "passes from 8 threads overlapped");
      try (GpuDevice.Scope s = device.lock()) {
        assertEquals(inUse, device.bytesInUse() - PassGraphs.stats(device).bytes(),
            "every block of every pass back in the pool, but for those the captured passes keep");
      }
      System.out.printf("[gpu-vectors] %d passes from 8 threads, %d begun while another was in flight (3 slots):"
          + " the results of the passes run alone%n", passes, overlapped);
    } finally {
      threads.shutdownNow();
      for (AutoCloseable c : open.reversed()) { // indexes before their device
        c.close();
      }
    }
  }
}
