package org.gpuvectors.codec.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
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
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.ivf.Assigner;
import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.cuda.device.GpuDevice;
import org.junit.jupiter.api.Test;

/**
 * The k-NN graph's IVF path ({@link IvfKnnGraph}) against the CPU's exact k-NN graph ({@link
 * KnnFinder#CPU}, brute force at these sizes) on clustered data: the share of exact edges found
 * (recall), that every row is k distinct other vectors, and that builds repeat; on a {@link
 * FakeBackend} here (IVF searched as the GPU index probes lists), on the real GPU on the GPU machine.
 */
class IvfKnnGraphTests {

  /** {@code n} points around {@code clusters} random centres (spread 0.15 per dimension around [-1, 1]^dims). */
  static FloatVectorValues clustered(int n, int dims, int clusters, long seed) {
    Random random = new Random(seed);
    float[][] centres = new float[clusters][dims];
    for (float[] c : centres) {
      for (int d = 0; d < dims; d++) {
        c[d] = random.nextFloat() * 2 - 1;
      }
    }
    List<float[]> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      float[] c = centres[random.nextInt(clusters)];
      float[] v = new float[dims];
      for (int d = 0; d < dims; d++) {
        v[d] = c[d] + (float) random.nextGaussian() * 0.15f;
      }
      rows.add(v);
    }
    return FloatVectorValues.fromFloats(rows, dims);
  }

  @Test
  void fakeDeviceFindsTheExactEdgesWithTheDefaults() throws IOException {
    FloatVectorValues vectors = clustered(5000, 16, 30, 7);
    int k = 10;
    try (FakeBackend device = new FakeBackend(1L << 30)) {
      for (Metric metric : Metric.values()) {
        int[] exact = KnnFinder.CPU.knn(vectors, k, metric);
        IvfKnnGraph.Result result = IvfKnnGraph.knn(device, vectors, k, metric, Assigner.CPU);
        checkRows(result.ids(), vectors.size(), k, metric.toString());
        double recall = IvfKnnGraph.recall(exact, result.ids(), vectors.size(), k);
        assertTrue(recall >= 0.95, metric + ": recall " + recall + " (" + IvfKnnGraph.describe(result) + ")");
        assertTrue(result.nprobe() < result.nlist(), metric + ": IVF probed every list: " + IvfKnnGraph.describe(result));
        if (metric == Metric.L2) {
          // the same build again: the same lists, nprobe and rows (fixed seed)
          assertArrayEquals(result.ids(), IvfKnnGraph.knn(device, vectors, k, metric, Assigner.CPU).ids());
        }
      }
      assertEquals(0, device.liveBytes.get(), "the build's IVF index is freed");
    }
  }

  @Test
  void rowsTheProbedListsCannotFillAreComputedExactly() throws IOException {
    FloatVectorValues vectors = clustered(400, 8, 10, 3);
    int k = 12;
    try (FakeBackend device = new FakeBackend(1L << 30)) {
      int[] exact = GpuKnnGraph.exact(device, vectors, null, k, Metric.L2, new KnnGraphProgress("test", 400));
      // as the IVF search leaves rows whose probed lists hold fewer than k + 1 vectors: cut short, or empty
      int[] ids = exact.clone();
      int[] shortRows = {0, 17, 18, 250, 399};
      for (int r = 0; r < shortRows.length; r++) {
        Arrays.fill(ids, shortRows[r] * k + (r % 2 == 0 ? 0 : k / 2), (shortRows[r] + 1) * k, -1);
      }
      int calls = device.nearestKCalls.get();
      assertEquals(shortRows.length, IvfKnnGraph.fillShortRows(device, vectors, k, Metric.L2, ids, new KnnGraphProgress("test", 400)));
      assertTrue(device.nearestKCalls.get() > calls, "the short rows were searched exactly");
      assertArrayEquals(exact, ids, "the short rows are the exact ones, the others untouched");
    }
  }

  /**
   * Above its bound of exact vectors the k-NN graph goes through IVF (a bound of 1,000 here, the service's finder
   * keeps the default, {@link GpuKnnGraph#EXACT_MAX_VECTORS}, and takes the same 3,000 vectors exactly).
   */
  @Test
  void knnTakesTheIvfPathAboveItsBound() throws IOException {
    FloatVectorValues vectors = clustered(3000, 12, 20, 11);
    int k = 8;
    FakeBackend device = new FakeBackend(1L << 30);
    try (GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.defaults())) {
      int[] found = GpuKnnGraph.knn(device, vectors, k, Metric.COSINE, service.buildAcceleration().assigner(), 1000);
      assertTrue(device.uploads.get() == 1 && device.passes.get() > 1, "searched an IVF index on the device");
      assertTrue(device.nearestCalls.get() > 0, "k-means assigned on the device");
      checkRows(found, 3000, k, "cosine");
      int[] exact = KnnFinder.CPU.knn(vectors, k, Metric.COSINE);
      double recall = IvfKnnGraph.recall(exact, found, 3000, k);
      assertTrue(recall >= 0.95, "recall " + recall);
      int[] byService = service.buildAcceleration().knnFinder().knn(vectors, k, Metric.COSINE);
      assertEquals(3000, service.stats().gpuKnnGraphVectors(), service.stats().toString());
      assertEquals(1, device.uploads.get(), "the default bound takes 3,000 vectors exactly: no IVF index");
      checkRows(byService, 3000, k, "cosine, exact");
    }
  }

  @Test
  void gpuIvfPathFindsTheCpuExactEdges() throws IOException {
    GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
    Assigner assigner = GpuSearchServices.current().buildAcceleration().assigner();
    FloatVectorValues vectors = clustered(30_000, 32, 200, 5);
    // a backend of its own (the service's finder keeps the default bound): a failing GPU call throws here
    try (GpuBackend backend = new CudaBackend(GpuDevice.open(0))) {
      for (int k : new int[] {10, 64}) {
        for (Metric metric : new Metric[] {Metric.L2, Metric.COSINE}) {
          int[] found = GpuKnnGraph.knn(backend, vectors, k, metric, assigner, 1000);
          checkRows(found, vectors.size(), k, metric + " k=" + k);
          int[] exact = KnnFinder.CPU.knn(vectors, k, metric);
          double recall = IvfKnnGraph.recall(exact, found, vectors.size(), k);
          System.out.printf("[gpu-vectors] GPU IVF k-NN graph, 30k x 32, %s, k = %d: recall %.4f%n", metric, k, recall);
          assertTrue(recall >= 0.95, metric + " k=" + k + ": recall of the exact edges " + recall);
        }
      }
    }
  }

  /** Every row: k distinct valid ordinals, never the row itself. */
  static void checkRows(int[] ids, int n, int k, String what) {
    for (int i = 0; i < n; i++) {
      int[] row = Arrays.copyOfRange(ids, i * k, (i + 1) * k);
      for (int j : row) {
        assertTrue(j >= 0 && j < n && j != i, what + " row " + i + ": valid neighbour " + j + " in " + Arrays.toString(row));
      }
      assertEquals(k, Arrays.stream(row).distinct().count(), what + " row " + i + ": no duplicates " + Arrays.toString(row));
    }
  }
}
