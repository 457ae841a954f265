package org.gpuvectors.codec.gpu;

import java.io.IOException;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.util.IOFunction;
import org.gpuvectors.codec.graph.KnnFinder;
import org.gpuvectors.codec.ivf.Assigner;
import org.gpuvectors.cuda.build.GraphPrune;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.cuda.build.ReverseLinks;
import org.gpuvectors.cuda.runtime.CudaException;

/**
 * The GPU's part in building an index at flush and merge, for the writer: the nearest-centroid step of k-means, IVF
 * list assignment and PQ encoding ({@link #assigner()}), and the steps of a graph build ({@link #knnFinder()}: the
 * k-NN graph, pruning, reverse links, entry points). Each step runs on the GPU of the {@link GpuSearchService} that
 * made this while that GPU serves, else on the CPU, also when a GPU call fails: an index build never fails because of
 * the GPU.
 *
 * <p>Owns nothing: the device, the stats and the GPU's on/off and failure state are the service's, which says
 * whether its GPU takes a step ({@code serves}, given the k the step selects) and counts a failed call ({@code
 * gpuError}: a sticky CUDA error switches the GPU off for searches and builds alike).
 */
public final class GpuBuildAcceleration {

  private final GpuBackend backend; // null when no GPU is usable: then serves never says yes
  private final GpuSearchStats stats;
  private final IntPredicate serves;
  private final Consumer<Throwable> gpuError;

  /**
   * @param backend the service's device, or null without one
   * @param stats the service's counters, which count steps by where they ran
   * @param serves whether the service's GPU takes a step now that selects the k it is given
   * @param gpuError the service's handling of a failed GPU call (counted; sticky errors switch the GPU off)
   */
  GpuBuildAcceleration(GpuBackend backend, GpuSearchStats stats, IntPredicate serves, Consumer<Throwable> gpuError) {
    this.backend = backend;
    this.stats = stats;
    this.serves = serves;
    this.gpuError = gpuError;
  }
  /**
   * The nearest-centroid step of k-means, of IVF list assignment and of PQ encoding: on the service's GPU ({@link
   * GpuBackend#hold}: the points go up once for all the steps against them) while it serves, else on the CPU ({@link
   * Assigner#CPU}, also when a GPU call fails, for the rest of that hold: an index build never fails because of the
   * GPU). Counted in the stats by sub-vectors assigned.
   */
  public Assigner assigner() {
    return (points, count, groups, metric) -> {
      Assigner.Held device = null;
      if (count > 0 && serves.test(0)) {
        try {
          // cosine: rows come normalised, so the inner product ranks as cosine without normalising again
          device = backend.hold(points, count, groups, metric == Metric.COSINE ? Metric.INNER_PRODUCT : metric);
        } catch (CudaException e) {
          gpuError.accept(e); // counted; these points are assigned on the CPU
        }
      }
      Assigner.Held onDevice = device;
      return new Assigner.Held() {
        private Assigner.Held gpu = onDevice;
        private Assigner.Held cpu;

        @Override
        public int[] nearest(float[] centroids, int k) throws IOException {
          return run(held -> held.nearest(centroids, k));
        }

        @Override
        public int[] update(float[] centroids, int k) throws IOException {
          return run(held -> held.update(centroids, k));
        }

        /** {@code step} on the device while it serves this hold, else (from its first failure on) on the CPU. */
        private int[] run(IOFunction<Assigner.Held, int[]> step) throws IOException {
          if (gpu != null) {
            try {
              int[] out = step.apply(gpu);
              stats.recordAssigned((long) count * groups, true);
              return out;
            } catch (CudaException e) {
              gpuError.accept(e); // counted; this hold goes on on the CPU
              gpu.close();
              gpu = null;
            }
          }
          if (cpu == null) {
            cpu = Assigner.CPU.hold(points, count, groups, metric);
          }
          int[] out = step.apply(cpu);
          stats.recordAssigned((long) count * groups, false);
          return out;
        }

        @Override
        public void close() {
          if (gpu != null) {
            gpu.close();
          }
          if (cpu != null) {
            cpu.close();
          }
        }
      };
    };
  }

  /**
   * Step (1) of a graph build, the k-NN graph, and the whole-index k-NN graph: on the service's GPU
   * ({@link GpuKnnGraph}: exact brute force up to {@link GpuKnnGraph#EXACT_MAX_VECTORS} vectors, IVF
   * above) while it serves and k + 1 fits its k-selection, else on the CPU ({@link KnnFinder#CPU}, also
   * when a GPU call fails: an index build never fails because of the GPU). Counted in the stats by
   * vectors.
   */
  public KnnFinder knnFinder() {
    return new KnnFinder() {
      @Override
      public int[] knn(FloatVectorValues vectors, int k, Metric metric) throws IOException {
        int n = vectors.size();
        if (n > 1 && serves.test(k + 1)) {
          try {
            int[] knn = GpuKnnGraph.knn(backend, vectors, k, metric, assigner());
            stats.recordKnnGraph(n, true);
            return knn;
          } catch (CudaException e) {
            gpuError.accept(e); // counted; the graph is built on the CPU
          }
        }
        int[] knn = KnnFinder.CPU.knn(vectors, k, metric);
        stats.recordKnnGraph(n, false);
        return knn;
      }

      /**
       * A graph build's steps on the GPU while it serves ({@link GpuGraphBuild}: the vectors held there once for the
       * exact k-NN step and the entry points), each step on the CPU when it does not or when its call fails.
       */
      @Override
      public Build hold(FloatVectorValues vectors, Metric metric) throws IOException {
        return GpuGraphBuild.open(this, vectors, metric, backend, stats, () -> serves.test(0), gpuError);
      }

      /** Step (2) on the GPU while it serves (the CPU's rule, GraphPrune), else, or when the call fails, on the CPU. */
      @Override
      public int[] prune(int[] knn, int n, int k, int degree) {
        if (n > 1 && k <= GraphPrune.MAX_K && serves.test(0)) {
          try {
            int[] pruned = backend.prune(knn, n, k, degree);
            stats.recordPruned(n, true);
            return pruned;
          } catch (CudaException e) {
            gpuError.accept(e); // counted; pruned on the CPU
          }
        }
        int[] pruned = KnnFinder.super.prune(knn, n, k, degree);
        stats.recordPruned(n, false);
        return pruned;
      }

      /** Step (3) on the GPU while it serves (the CPU's rule, ReverseLinks), else, or when its call fails, the CPU. */
      @Override
      public int[] reverseLinks(int[] pruned, int n, int degree) {
        if (n > 1 && degree <= ReverseLinks.MAX_DEGREE && serves.test(0)) {
          try {
            int[] linked = backend.reverseLinks(pruned, n, degree);
            stats.recordReverseLinked(n, true);
            return linked;
          } catch (CudaException e) {
            gpuError.accept(e); // counted; linked on the CPU
          }
        }
        int[] linked = KnnFinder.super.reverseLinks(pruned, n, degree);
        stats.recordReverseLinked(n, false);
        return linked;
      }
    };
  }
}
