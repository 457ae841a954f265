package org.gpuvectors.codec.gpu;

import java.io.IOException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.VectorRows;
import org.gpuvectors.codec.graph.GraphMerge;
import org.gpuvectors.codec.graph.KnnFinder;
import org.gpuvectors.cuda.runtime.CudaException;
import org.gpuvectors.codec.index.Metric;

/**
 * One graph build's steps on the GPU ({@link KnnFinder#hold} of the service's finder). A segment that takes the exact
 * k-NN step ({@link GpuKnnGraph#holdsWhole}) has its vectors copied and uploaded once, here, for that step ({@link
 * GpuKnnGraph#own}), the entry points' scale and their farthest-first traversal; a larger one finds its k-NN graph
 * through the finder (IVF on the GPU) and uploads the traversal's sample alone. Pruning and the reverse links go
 * through the finder.
 *
 * <p>When the GPU does not serve, or a step's call fails (counted by {@code gpuError}), the held vectors are released:
 * the k-NN step, the pruning and the reverse links then go through the finder (the GPU again if it still serves, else
 * the CPU), and the entry points' traversal uploads its sample alone if the GPU still serves, else runs on the host.
 * Steps are counted where they ran. Owns the held vectors until {@link #close}.
 */
final class GpuGraphBuild implements KnnFinder.Build {

  private final KnnFinder finder;
  private final FloatVectorValues vectors;
  private final Metric metric;
  private final GpuBackend backend;
  private final GpuSearchStats stats;
  private final BooleanSupplier serving;
  private final Consumer<Throwable> gpuError;
  /** All the vectors on the device, or null (not held, or released after a failure). */
  private GpuBackend.HeldVectors held;

  private GpuGraphBuild(KnnFinder finder, FloatVectorValues vectors, Metric metric, GpuBackend backend,
                        GpuSearchStats stats, BooleanSupplier serving, Consumer<Throwable> gpuError) {
    this.finder = finder;
    this.vectors = vectors;
    this.metric = metric;
    this.backend = backend;
    this.stats = stats;
    this.serving = serving;
    this.gpuError = gpuError;
  }

  /**
   * The build's steps; the vectors go up now when the GPU serves and the segment takes the exact k-NN step. {@code
   * serving} says whether the GPU serves now, {@code gpuError} counts a failed call.
   */
  static GpuGraphBuild open(KnnFinder finder, FloatVectorValues vectors, Metric metric, GpuBackend backend,
                            GpuSearchStats stats, BooleanSupplier serving, Consumer<Throwable> gpuError)
      throws IOException {
    GpuGraphBuild build = new GpuGraphBuild(finder, vectors, metric, backend, stats, serving, gpuError);
    int n = vectors.size();
    if (n > 1 && serving.getAsBoolean() && GpuKnnGraph.holdsWhole(n, vectors.dimension())) {
      try {
        build.held = GpuKnnGraph.hold(backend, vectors, metric);
      } catch (CudaException e) {
        gpuError.accept(e); // counted; the build's steps go through the finder and the host
      }
    }
    return build;
  }

  @Override
  public int[] knn(int k) throws IOException {
    int n = vectors.size();
    if (held != null && serving.getAsBoolean()) {
      try {
        int[] ids = GpuKnnGraph.own(held, n, k);
        stats.recordKnnGraph(n, true);
        return ids;
      } catch (CudaException e) {
        failed(e);
      }
    }
    return finder.knn(vectors, k, metric); // IVF on the GPU, or the CPU; counted there
  }

  /**
   * A merge's k-NN step: a rebuild on the GPU while it serves (its brute force, or IVF, beats the CPU's walks of the
   * merged graphs many times over), else on the CPU from the merged segments' graphs.
   */
  @Override
  public int[] knn(int k, GraphMerge merge) throws IOException {
    if (merge == null || serving.getAsBoolean()) {
      return knn(k);
    }
    int[] ids = merge.knn(vectors, k, metric);
    stats.recordMergedKnnGraph(vectors.size());
    return ids;
  }

  @Override
  public int[] prune(int[] knn, int n, int k, int degree) {
    return finder.prune(knn, n, k, degree);
  }

  @Override
  public int[] reverseLinks(int[] pruned, int n, int degree) {
    return finder.reverseLinks(pruned, n, degree);
  }

  @Override
  public float[] neighbourGaps(int[] sample, int[] adjacency, int degree) {
    if (held == null || !serving.getAsBoolean()) {
      return null;
    }
    try {
      return held.neighbourGaps(sample, adjacency, degree, metric == Metric.COSINE);
    } catch (CudaException e) {
      failed(e);
      return null;
    }
  }

  @Override
  public int[] farthestFirst(int[] sample, float[] scale, int seedCount, int limit, float uncovered)
      throws IOException {
    int[] chosen = null;
    if (serving.getAsBoolean()) {
      try {
        chosen = held != null ? traverse(held, sample, scale, seedCount, limit, uncovered)
            : traverseSample(sample, scale, seedCount, limit, uncovered);
      } catch (CudaException e) {
        failed(e);
      }
    }
    stats.recordEntryPointTraversal(chosen != null);
    return chosen;
  }

  /** The traversal over the sample's own rows, copied and uploaded for it (a segment whose vectors are not held). */
  private int[] traverseSample(int[] sample, float[] scale, int seedCount, int limit, float uncovered)
      throws IOException {
    float[][] rows = VectorRows.copies(vectors, sample.length, i -> sample[i], metric);
    int[] positions = new int[sample.length];
    for (int i = 0; i < positions.length; i++) {
      positions[i] = i;
    }
    try (GpuBackend.HeldVectors rowsHeld = backend.holdVectors(rows, sample.length, vectors.dimension(),
        metric == Metric.COSINE ? Metric.INNER_PRODUCT : metric)) {
      return traverse(rowsHeld, positions, scale, seedCount, limit, uncovered);
    }
  }

  private int[] traverse(GpuBackend.HeldVectors on, int[] sample, float[] scale, int seedCount, int limit,
                         float uncovered) {
    return on.farthestFirst(sample, metric == Metric.COSINE, scale, seedCount, limit, uncovered);
  }

  /** A step's GPU call failed: counted, and the held vectors released (the class comment says where steps go on). */
  private void failed(CudaException e) {
    gpuError.accept(e);
    close();
  }

  @Override
  public void close() {
    if (held != null) {
      held.close();
      held = null;
    }
  }
}
