package org.gpuvectors.codec.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.GpuTestSupport;
import org.gpuvectors.codec.graph.GraphPruner;
import org.gpuvectors.codec.graph.KnnFinder;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.cuda.device.GpuDevice;
import org.junit.jupiter.api.Test;

/**
 * A graph build's k-NN step on a device ({@link GpuKnnGraph} through {@link GpuBuildAcceleration#knnFinder})
 * against the CPU's exact k-NN graph ({@link KnnFinder#CPU}, brute force at these sizes), for every
 * metric, in one chunk and in many (the device's candidates of every base chunk merged on the host):
 * on a {@link FakeBackend} here, on the real GPU on the GPU machine.
 */
class GpuKnnGraphTests {

  @Test
  void fakeDeviceMatchesTheCpuInOneChunkAndInMany() throws IOException {
    FakeBackend device = new FakeBackend(1L << 30);
    try (GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.defaults())) {
      checkAgainstCpu(service, device, 600, 12, 16);
      assertTrue(device.nearestKCalls.get() > 0);
    }
  }

  @Test
  void gpuMatchesTheCpuInOneChunkAndInMany() throws IOException {
    GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
    GpuSearchService service = GpuSearchServices.current();
    // many chunks: the brute force called on a backend of its own (the service's finder takes the default chunks)
    try (GpuBackend backend = new CudaBackend(GpuDevice.open(0))) {
      checkAgainstCpu(service, backend, 3000, 64, 32);
    }
  }

  /**
   * The finder's pruning goes to the device (here the fake one, which runs the host's rule), counted by vectors;
   * when the device call fails it runs on the CPU, counted there, with the same output.
   */
  @Test
  void fakeDevicePrunesAndTheCpuTakesOverOnAFailure() throws IOException {
    FakeBackend device = new FakeBackend(1L << 30);
    try (GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.defaults())) {
      int[] knn = knnOf(400, 8, 24, 3);
      int[] host = GraphPruner.prune(knn, 400, 24, 12);
      assertArrayEquals(host, service.buildAcceleration().knnFinder().prune(knn, 400, 24, 12));
      assertEquals(1, device.pruneCalls.get());
      assertEquals(400, service.stats().gpuPrunedVectors());
      assertEquals(0, service.stats().cpuPrunedVectors());
      device.nearestKFault = FakeBackend::launchFailure;
      assertArrayEquals(host, service.buildAcceleration().knnFinder().prune(knn, 400, 24, 12));
      assertEquals(1, device.pruneCalls.get(), "the failing call is not counted as the device's");
      assertEquals(400, service.stats().gpuPrunedVectors());
      assertEquals(400, service.stats().cpuPrunedVectors());
    }
  }

  /**
   * The finder's reverse links go to the device (here the fake one, which runs the host's rule), counted by vectors;
   * when the device call fails they are added on the CPU, counted there, with the same output.
   */
  @Test
  void fakeDeviceLinksAndTheCpuTakesOverOnAFailure() throws IOException {
    FakeBackend device = new FakeBackend(1L << 30);
    try (GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.defaults())) {
      int[] pruned = GraphPruner.prune(knnOf(400, 8, 24, 3), 400, 24, 12);
      int[] host = GraphPruner.addReverseLinks(pruned, 400, 12);
      assertArrayEquals(host, service.buildAcceleration().knnFinder().reverseLinks(pruned, 400, 12));
      assertEquals(1, device.reverseLinksCalls.get());
      assertEquals(400, service.stats().gpuReverseLinkedVectors());
      device.nearestKFault = FakeBackend::launchFailure;
      assertArrayEquals(host, service.buildAcceleration().knnFinder().reverseLinks(pruned, 400, 12));
      assertEquals(1, device.reverseLinksCalls.get(), "the failing call is not counted as the device's");
      assertEquals(400, service.stats().gpuReverseLinkedVectors());
      assertEquals(400, service.stats().cpuReverseLinkedVectors());
    }
  }

  /**
   * The GPU's reverse links ({@code gv_reverse_rows}) give the host's output exactly: pruned graphs of clustered
   * vectors at the default degree (32) and the largest (128), random rows with -1 padding, hubs that a third of the
   * vectors point to (reverse lists far longer than the degree: only the smallest keys count), a segment of fewer
   * vectors than the degree, and an odd degree; no CPU fallback.
   */
  @Test
  void gpuAddsTheHostsReverseLinks() throws IOException {
    GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
    GpuSearchService service = GpuSearchServices.current();
    long fallbacks = service.stats().cpuFallbacks();
    long linked = service.stats().gpuReverseLinkedVectors();
    checkReverse(service, GraphPruner.prune(knnOf(5000, 32, 64, 5), 5000, 64, 32), 5000, 32);
    checkReverse(service, GraphPruner.prune(knnOf(3000, 16, 256, 6), 3000, 256, 128), 3000, 128);
    checkReverse(service, GraphPruner.prune(knnOf(20, 8, 19, 7), 20, 19, 19), 20, 19); // fewer vectors than 32
    Random r = new Random(11);
    int n = 4000;
    for (int degree : new int[] {8, 33}) {
      int[] random = new int[n * degree];
      for (int i = 0; i < n; i++) {
        int size = r.nextInt(4) == 0 ? r.nextInt(degree + 1) : degree; // a quarter of the rows end early
        int filled = 0;
        while (filled < size) {
          // a third of the edges point to one of 5 hubs: their reverse lists hold hundreds of keys
          int j = r.nextInt(3) == 0 ? r.nextInt(5) : r.nextInt(n);
          boolean there = j == i;
          for (int e = 0; e < filled && !there; e++) {
            there = random[i * degree + e] == j;
          }
          if (!there) {
            random[i * degree + filled++] = j;
          }
        }
        Arrays.fill(random, i * degree + size, (i + 1) * degree, -1);
      }
      checkReverse(service, random, n, degree);
    }
    assertEquals(fallbacks, service.stats().cpuFallbacks(), "linked on the GPU: " + service.stats());
    assertEquals(linked + 5000 + 3000 + 20 + 2 * n, service.stats().gpuReverseLinkedVectors(),
        "every call counted on the GPU");
  }

  private static void checkReverse(GpuSearchService service, int[] pruned, int n, int degree) {
    int[] host = GraphPruner.addReverseLinks(pruned, n, degree);
    int[] device = service.buildAcceleration().knnFinder().reverseLinks(pruned, n, degree);
    for (int i = 0; i < n; i++) {
      int row = i;
      assertArrayEquals(Arrays.copyOfRange(host, i * degree, (i + 1) * degree),
          Arrays.copyOfRange(device, i * degree, (i + 1) * degree), () -> "n " + n + ", degree " + degree + ": row " + row);
    }
  }

  /**
   * A graph build held on a device whose backend has no entry-point steps (the fake one): the k-NN step runs on the
   * held vectors (the fake's brute force, the CPU's graph), the scale and the traversal are left to the host (null),
   * and the traversal is counted on the CPU.
   */
  @Test
  void aDeviceWithoutEntryPointStepsLeavesThemToTheHost() throws IOException {
    FakeBackend device = new FakeBackend(1L << 30);
    try (GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.defaults())) {
      Random random = new Random(4);
      List<float[]> rows = new ArrayList<>();
      for (int i = 0; i < 50; i++) {
        rows.add(new float[] {random.nextFloat(), random.nextFloat()});
      }
      FloatVectorValues vectors = FloatVectorValues.fromFloats(rows, 2);
      try (KnnFinder.Build steps = service.buildAcceleration().knnFinder().hold(vectors, Metric.L2)) {
        assertArrayEquals(KnnFinder.CPU.knn(vectors, 6, Metric.L2), steps.knn(6));
        assertEquals(1, device.nearestKCalls.get(), "one brute force over the held vectors");
        int[] sample = {3, 7, 11, 40};
        assertNull(steps.neighbourGaps(sample, new int[50 * 2], 2));
        assertNull(steps.farthestFirst(sample, new float[] {1, 1, 1, 1}, 2, 4, 6.25f));
      }
      assertEquals(50, service.stats().gpuKnnGraphVectors());
      assertEquals(0, service.stats().gpuEntryPointTraversals());
      assertEquals(1, service.stats().cpuEntryPointTraversals());
    }
  }

  /**
   * The GPU's pruning ({@code gv_graph_prune}) gives the host's output exactly: k-NN graphs of clustered and
   * random vectors at the default degrees (64 -> 32), the largest k-NN degree (256 -> 64), rows with -1 padding
   * (segments of at most k vectors), a degree equal to k, and random rows (vias whose rows end early); no CPU
   * fallback.
   */
  @Test
  void gpuPrunesAsTheHost() throws IOException {
    GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
    GpuSearchService service = GpuSearchServices.current();
    long fallbacks = service.stats().cpuFallbacks();
    long pruned = service.stats().gpuPrunedVectors();
    checkPrune(service, knnOf(5000, 32, 64, 5), 5000, 64, 32);
    checkPrune(service, knnOf(2000, 16, 256, 6), 2000, 256, 64);
    checkPrune(service, knnOf(40, 8, 64, 7), 40, 64, 32); // 39 neighbours a row, then -1
    checkPrune(service, knnOf(300, 8, 16, 8), 300, 16, 16);
    Random r = new Random(9);
    int n = 3000;
    int k = 48;
    int[] random = new int[n * k];
    for (int i = 0; i < n; i++) {
      int size = r.nextInt(4) == 0 ? r.nextInt(k + 1) : k; // a quarter of the rows end early
      List<Integer> pool = new ArrayList<>();
      for (int j = 0; j < n; j++) {
        if (j != i) {
          pool.add(j);
        }
      }
      java.util.Collections.shuffle(pool, r);
      for (int e = 0; e < k; e++) {
        random[i * k + e] = e < size ? pool.get(e) : -1;
      }
    }
    checkPrune(service, random, n, k, 24);
    assertEquals(fallbacks, service.stats().cpuFallbacks(), "pruned on the GPU: " + service.stats());
    assertEquals(pruned + 5000 + 2000 + 40 + 300 + n, service.stats().gpuPrunedVectors(), "every prune counted on the GPU");
  }

  private static void checkPrune(GpuSearchService service, int[] knn, int n, int k, int degree) {
    int[] host = GraphPruner.prune(knn, n, k, degree);
    int[] device = service.buildAcceleration().knnFinder().prune(knn, n, k, degree);
    for (int i = 0; i < n; i++) {
      int row = i;
      assertArrayEquals(Arrays.copyOfRange(host, i * degree, (i + 1) * degree),
          Arrays.copyOfRange(device, i * degree, (i + 1) * degree), () -> "n " + n + ", k " + k + " -> " + degree
              + ": row " + row);
    }
  }

  /** The exact k-NN graph (CPU) of n clustered vectors of dims dimensions. */
  private static int[] knnOf(int n, int dims, int k, long seed) throws IOException {
    Random random = new Random(seed);
    float[][] centres = new float[10][dims];
    for (float[] c : centres) {
      for (int d = 0; d < dims; d++) {
        c[d] = random.nextFloat() * 10;
      }
    }
    List<float[]> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      float[] c = centres[random.nextInt(centres.length)];
      float[] v = new float[dims];
      for (int d = 0; d < dims; d++) {
        v[d] = c[d] + (float) random.nextGaussian();
      }
      rows.add(v);
    }
    return KnnFinder.CPU.knn(FloatVectorValues.fromFloats(rows, dims), k, Metric.L2);
  }

  /**
   * The k-NN graph of n random vectors against the CPU's exact one: in one chunk through the service's finder
   * (counted on the device), in six through {@link GpuKnnGraph#exact} on {@code backend} (the same device).
   */
  private static void checkAgainstCpu(GpuSearchService service, GpuBackend backend, int n, int dims, int k)
      throws IOException {
    Random random = new Random(17);
    List<float[]> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      float[] v = new float[dims];
      for (int d = 0; d < dims; d++) {
        v[d] = random.nextFloat() * 2 - 1;
      }
      rows.add(v);
    }
    FloatVectorValues vectors = FloatVectorValues.fromFloats(rows, dims);
    for (Metric metric : Metric.values()) {
      int[] cpu = KnnFinder.CPU.knn(vectors, k, metric);
      for (long chunkRows : new long[] {n, n / 5 + 3}) { // one chunk; six chunks, the last one short
        int[] device;
        if (chunkRows == n) {
          long before = service.stats().gpuKnnGraphVectors();
          device = service.buildAcceleration().knnFinder().knn(vectors, k, metric);
          assertEquals(before + n, service.stats().gpuKnnGraphVectors(), "on the device: " + service.stats());
        } else {
          device = GpuKnnGraph.exact(backend, vectors, null, k, metric, new KnnGraphProgress("test", n), chunkRows * dims);
        }
        int differing = 0;
        for (int i = 0; i < n; i++) {
          int[] a = Arrays.copyOfRange(cpu, i * k, (i + 1) * k);
          int[] b = Arrays.copyOfRange(device, i * k, (i + 1) * k);
          for (int j : b) {
            assertTrue(j >= 0 && j < n && j != i, metric + " row " + i + ": valid neighbour " + j);
          }
          assertEquals(k, Arrays.stream(b).distinct().count(), metric + " row " + i + ": no duplicates");
          Arrays.sort(a);
          Arrays.sort(b);
          // the same sets but where the k-th distance is a near-tie (device and SIMD round differently)
          differing += Arrays.equals(a, b) ? 0 : 1;
        }
        assertTrue(differing <= n / 100, metric + ", chunks of " + chunkRows + ": rows differing from the CPU: " + differing);
      }
    }
  }
}
