package org.gpuvectors.codec.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.GpuTestSupport;
import org.gpuvectors.codec.graph.KnnFinder;
import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.cuda.Metric;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A graph build's k-NN step on a device ({@link GpuKnnGraph} through {@link GpuSearchService#knnFinder})
 * against the CPU's exact k-NN graph ({@link KnnFinder#CPU}, brute force at these sizes), for every
 * metric, in one chunk and in many (the device's candidates of every base chunk merged on the host):
 * on a {@link FakeBackend} here, on the real GPU on the GPU machine.
 */
class GpuKnnGraphTests {

  @AfterEach
  void restoreChunks() {
    GpuKnnGraph.chunkFloats = GpuKnnGraph.CHUNK_FLOATS;
  }

  @Test
  void fakeDeviceMatchesTheCpuInOneChunkAndInMany() throws IOException {
    FakeBackend device = new FakeBackend(1L << 30);
    try (GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.fromSystemProperties())) {
      checkAgainstCpu(service, 600, 12, 16);
      assertTrue(device.nearestKCalls.get() > 0);
    }
  }

  @Test
  void gpuMatchesTheCpuInOneChunkAndInMany() throws IOException {
    GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
    GpuSearchService service = GpuSearchServices.current();
    checkAgainstCpu(service, 3000, 64, 32);
  }

  private static void checkAgainstCpu(GpuSearchService service, int n, int dims, int k) throws IOException {
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
        GpuKnnGraph.chunkFloats = chunkRows * dims;
        long before = service.stats().gpuKnnGraphVectors();
        int[] device = service.knnFinder().knn(vectors, k, metric);
        assertEquals(before + n, service.stats().gpuKnnGraphVectors(), "on the device: " + service.stats());
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
