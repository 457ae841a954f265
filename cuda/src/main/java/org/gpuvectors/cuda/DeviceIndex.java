package org.gpuvectors.cuda;

/**
 * A search structure of one segment field resident in GPU memory ({@link GpuFlatIndex}, {@link
 * GpuIvfFlatIndex}, {@link GpuIvfPqIndex}, {@link GpuGraphIndex}). It owns its device memory:
 * {@link #close()} returns it. Searches go through {@link BatchSearch}, which runs many queries over
 * many indexes in one pass.
 */
public interface DeviceIndex extends AutoCloseable {

  /** Vectors in the index. */
  int size();

  /** Floats per vector. */
  int dims();

  /** The distance the index ranks by. */
  Metric metric();

  /** Device memory held by the index. */
  long deviceBytes();

  /** Returns the index's device memory; searches after this fail. */
  @Override
  void close();
}
