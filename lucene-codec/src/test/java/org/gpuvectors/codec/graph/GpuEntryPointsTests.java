package org.gpuvectors.codec.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.GpuTestSupport;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.codec.index.Metric;
import org.junit.jupiter.api.Test;

/**
 * Step (4)'s farthest-first traversal on the GPU ({@code gv_farthest_step}, through the service's finder) chooses the
 * host's entry points ({@link GraphBuilder#seeds} with the CPU's finder, itself checked against the unpruned traversal
 * by {@link GraphParallelBuildTests}): Gaussian clusters for every metric, many small clusters (past seedCount into the
 * uncovered-points phase), a sample of 32,768 out of 40,000 vectors, uniform noise, integer points full of exact ties
 * (ties go to the lower position on both), and a segment past the exact k-NN step's size (only the sample on the
 * device); the scale and the traversal both on the device where the build holds every vector. No CPU fallback; every
 * traversal counted on the GPU. Skips visibly without a GPU, fails on the GPU machine when the GPU is broken.
 */
class GpuEntryPointsTests {

  /**
   * GpuKnnGraph.EXACT_MAX_VECTORS (package-private there): a build of more vectors takes the IVF k-NN step and does
   * not hold its vectors on the device; its traversal uploads the sample alone.
   */
  private static final int EXACT_MAX_VECTORS = 100_000;

  @Test
  void gpuChoosesTheHostsEntryPoints() throws IOException {
    GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
    GpuSearchService service = GpuSearchServices.current();
    KnnFinder finder = service.buildAcceleration().knnFinder();
    Random random = new Random(23);
    List<float[][]> datasets = new ArrayList<>();
    datasets.add(GraphParallelBuildTests.clusters(random, 6000, 16, 40, 0.05f));
    datasets.add(GraphParallelBuildTests.clusters(random, 9000, 8, 900, 0.01f)); // the uncovered phase
    datasets.add(GraphParallelBuildTests.clusters(random, 40_000, 32, 200, 0.1f)); // a sample of 32,768
    float[][] noise = new float[2500][24];
    for (float[] v : noise) {
      for (int d = 0; d < v.length; d++) {
        v[d] = (float) random.nextGaussian();
      }
    }
    datasets.add(noise);
    float[][] ties = new float[4000][3];
    for (float[] v : ties) {
      for (int d = 0; d < 3; d++) {
        v[d] = random.nextInt(3);
      }
    }
    datasets.add(ties);
    // past the exact k-NN step's size: the vectors are not held, the sample goes up for the traversal
    datasets.add(GraphParallelBuildTests.clusters(random, EXACT_MAX_VECTORS + 2000, 16, 200, 0.1f));
    long fallbacks = service.stats().cpuFallbacks();
    long before = service.stats().gpuEntryPointTraversals();
    int traversals = 0;
    for (float[][] data : datasets) {
      FloatVectorValues vectors = FloatVectorValues.fromFloats(Arrays.asList(data), data[0].length);
      int degree = 8;
      int[] adjacency = GraphParallelBuildTests.randomGraph(random, data.length, degree, false);
      // integer ties are exact ties in squared L2 on both sides; a cosine's rounding differs between the host's
      // dot / (|x| |y|) and the device's dot of normalised rows, so exact cosine ties may break either way
      Metric[] metrics = data == ties ? new Metric[] {Metric.L2} : Metric.values();
      for (Metric metric : metrics) {
        int[] host = GraphBuilder.seeds(vectors, metric, adjacency, degree, new GraphBuildPhases(), true);
        // every vector held on the device (the exact k-NN step's segments): the scale and the traversal there; past
        // its size, the sample alone
        int[] gpu;
        try (KnnFinder.Build steps = finder.hold(vectors, metric)) {
          gpu = GraphBuilder.seeds(vectors, metric, adjacency, degree, new GraphBuildPhases(), true, steps);
        }
        traversals++;
        assertArrayEquals(host, gpu, metric + ", " + data.length + " x " + data[0].length + ": " + host.length
            + " entry points on the host, " + gpu.length + " on the GPU");
      }
    }
    assertEquals(fallbacks, service.stats().cpuFallbacks(), "traversed on the GPU: " + service.stats());
    assertEquals(before + traversals, service.stats().gpuEntryPointTraversals(), "every traversal counted on the GPU");
  }
}
