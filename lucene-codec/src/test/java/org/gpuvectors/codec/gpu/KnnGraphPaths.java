package org.gpuvectors.codec.gpu;

import java.io.IOException;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.ivf.Assigner;
import org.gpuvectors.cuda.device.GpuDevice;

/**
 * The device k-NN graph ({@link GpuKnnGraph}) with its bound of exact vectors chosen per call, for benchmarks outside
 * this package that time either path on the same data: a backend of its own on GPU {@code ordinal} (closed with this).
 */
public final class KnnGraphPaths implements AutoCloseable {

  /** {@link GpuKnnGraph#EXACT_MAX_VECTORS}: the production bound (the service's finder). */
  public static final int EXACT_MAX_VECTORS = GpuKnnGraph.EXACT_MAX_VECTORS;

  private final GpuBackend backend;
  private final Assigner assigner;

  private KnnGraphPaths(GpuBackend backend, Assigner assigner) {
    this.backend = backend;
    this.assigner = assigner;
  }

  /** A backend on GPU {@code ordinal}; the IVF path's k-means assigns with {@code assigner}. */
  public static KnnGraphPaths open(int ordinal, Assigner assigner) {
    return new KnnGraphPaths(new CudaBackend(GpuDevice.open(ordinal)), assigner);
  }

  /** The k-NN graph, exact up to {@code exactMaxVectors} vectors, else through IVF. */
  public int[] knn(FloatVectorValues vectors, int k, Metric metric, int exactMaxVectors) throws IOException {
    return GpuKnnGraph.knn(backend, vectors, k, metric, assigner, exactMaxVectors);
  }

  @Override
  public void close() {
    backend.close();
  }
}
