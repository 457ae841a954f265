package org.gpuvectors.codec.gpu;

import java.io.Closeable;
import java.io.IOException;
import java.util.List;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.ivf.Assigner;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.pass.PassGraphStats;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.rerank.RerankStats;

/**
 * The device that {@link GpuSearchService} runs on: uploads segment fields and runs batches of
 * searches over them. {@link CudaBackend} is the GPU; tests put doubles here to inject faults (out of
 * memory, failing launches, sticky errors) on machines without a GPU.
 */
public interface GpuBackend extends Closeable {

  /** The device's name, for stats and logs. */
  String deviceName();

  /** Device memory in bytes (the memory budget is a fraction of it). */
  long totalMemoryBytes();

  /**
   * Device bytes that {@link #upload} will take for these vectors and lists or graph (the residency
   * gate asks first); {@code structure} null: a flat field.
   */
  long estimateBytes(int size, int dims, Metric metric, GpuStructure structure);

  /**
   * Makes a segment field resident: its vectors, and with {@code structure} its inverted lists (the
   * vectors then go in list order) or its graph. May run concurrently with {@link #search}.
   */
  DeviceIndex upload(FloatVectorValues vectors, Metric metric, GpuStructure structure) throws IOException;

  /**
   * Makes a byte, bit or bfloat16 segment field resident for exact search, at its own size ({@link
   * ElementVectors#deviceBytes}: the residency gate's estimate), ranked by {@code metric} ({@link
   * ElementVectors#metric}). May run concurrently with {@link #search}. A backend without such indexes (a test double)
   * refuses.
   */
  default DeviceIndex upload(ElementVectors vectors, Metric metric) throws IOException {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " holds float vectors only, not "
        + vectors.type());
  }

  /**
   * Holds the first {@code count} of {@code points} on the device for nearest-centroid steps (k-means, IVF list
   * assignment, PQ encoding): {@link Assigner#hold}'s contract, computed on the device. Cosine: callers pass
   * normalised rows and ask for the inner product.
   */
  Assigner.Held hold(float[][] points, int count, int groups, Metric metric);

  /**
   * For each of {@code count} points (row-major) its {@code k} nearest of {@code numBase} base rows
   * (row-major) by {@code metric}, best first, with their raw distances: the brute-force primitive
   * that builds a graph's k-NN graph. Cosine: callers pass normalised rows and ask for the inner
   * product. {@code k <= numBase}.
   */
  SearchResult nearestK(float[] base, int numBase, float[] points, int count, int dims, Metric metric, int k);

  /**
   * Uploads the first {@code n} of {@code rows} ({@code dims} floats each) for the steps of a graph build that read
   * them, ranked by {@code metric} (cosine: rows come normalised, ranked by the inner product). By default, a backend
   * without them: the k-NN step through {@link #nearestK} (the rows as both base and points), the entry points left to
   * the host.
   */
  default HeldVectors holdVectors(float[][] rows, int n, int dims, Metric metric) {
    return new HeldVectors() {
      @Override
      public int[] nearestKOwn(int k) {
        float[] packed = new float[n * dims];
        for (int i = 0; i < n; i++) {
          System.arraycopy(rows[i], 0, packed, i * dims, dims);
        }
        SearchResult result = nearestK(packed, n, packed, n, dims, metric, k);
        int[] ids = new int[n * k];
        for (int q = 0; q < n; q++) {
          for (int i = 0; i < k; i++) {
            ids[q * k + i] = i < result.count(q) ? result.id(q, i) : -1;
          }
        }
        return ids;
      }
    };
  }

  /** A graph build's vectors on the device ({@link #holdVectors}); {@link #close} releases them. */
  interface HeldVectors extends AutoCloseable {

    /**
     * For each held vector its {@code k} nearest held vectors, itself normally among them: ids only, {@code k} per
     * vector, best first ({@code k <= n}).
     */
    int[] nearestKOwn(int k);

    /**
     * Each vector of {@code sample}'s smallest gap to a vector of its row of {@code adjacency} (the host's {@code
     * GraphBuilder.nearestGaps}), or null where the host computes it.
     */
    default float[] neighbourGaps(int[] sample, int[] adjacency, int degree, boolean cosine) {
      return null;
    }

    /**
     * The entry points' farthest-first traversal over the vectors of {@code sample} ({@code
     * org.gpuvectors.cuda.build.FarthestFirst#traverse} has the rule): the chosen positions in order, or null where the
     * host runs it.
     */
    default int[] farthestFirst(int[] sample, boolean cosine, float[] scale, int seedCount, int limit,
                                float uncovered) {
      return null;
    }

    @Override
    default void close() {}
  }

  /**
   * Step (2) of a graph build on the device: keeps {@code degree} of each row's {@code k} edges of the k-NN graph
   * ({@code n * k} ordinals, rows nearest first, -1 padding), fewest detours first; the same output as the host's
   * {@link org.gpuvectors.codec.graph.GraphPruner#prune}, which documents the rule.
   */
  int[] prune(int[] knn, int n, int k, int degree);

  /**
   * Step (3) of a graph build on the device: {@code pruned} ({@code n x degree}) with reverse links, the same output
   * as the host's {@code GraphPruner.addReverseLinks}.
   */
  int[] reverseLinks(int[] pruned, int n, int degree);

  /** Starts or stops the device profiler's range (benchmarks under a profiler); nothing without one. */
  default void profilerRange(boolean on) {}

  /** How many {@link #search} passes may run at once (from different threads); 1: one at a time. */
  default int concurrentPasses() {
    return 1;
  }

  /** What the device's search passes captured as CUDA graphs did and hold; zeros for a backend without them. */
  default PassGraphStats passGraphs() {
    return new PassGraphStats(0, 0, 0, 0, 0);
  }

  /** Flat queries answered by the FP16 candidate scan, and those its certificate sent back to FP32 (none here). */
  default RerankStats halfScans() {
    return new RerankStats(0, 0);
  }

  /**
   * Runs a batch of searches as one pass; results in group order. At most {@link #concurrentPasses} at once. Adds the
   * pass's host enqueue time to {@code timing[0]} and its wait for the device to {@code timing[1]}
   * (nanoseconds; a backend that cannot tell leaves them).
   */
  SearchResult[] search(List<SearchGroup> groups, long[] timing);

  /** Frees the device; indexes still open are closed by their owners first. */
  @Override
  void close();
}
