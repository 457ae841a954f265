package org.gpuvectors.cuda;


/**
 * A search structure of one segment field resident in GPU memory ({@code GpuFlatIndex}, {@code GpuElementFlatIndex},
 * {@code GpuIvfFlatIndex}, {@code GpuIvfPqIndex}, {@code GpuGraphIndex}). It owns its device memory:
 * {@link #close()} returns it. Searches go through {@code BatchSearch}, which runs many queries over
 * many indexes in one pass: each index enqueues its own part of it, with the {@link SearchParams} of its kind.
 */
public interface DeviceIndex extends AutoCloseable {

  /** Vectors in the index. */
  int size();

  /** Floats per vector, and per query (a bit index: bytes per vector, each a query float). */
  int dims();

  /** The distance the index ranks by. */
  Metric metric();

  /** Device memory held by the index, by what each part holds. */
  DeviceBytes deviceBytesByPart();

  /** Device memory held by the index: its parts together. */
  default long deviceBytes() {
    return deviceBytesByPart().total();
  }

  /**
   * Whether the index returns its candidates re-ranked exactly on the device (an ivf_pq index whose raw vectors are
   * resident beside its codes); false for an index whose results need no re-rank or whose caller re-ranks them.
   */
  default boolean reranksOnDevice() {
    return false;
  }

  /**
   * Refuses, before a pass starts, search parameters this index cannot take: another kind of index's (an {@link
   * IllegalArgumentException} naming the kind it takes), or a search past its kernels' limits for {@code k}.
   */
  void checkSearch(SearchParams params, int k);

  /** Returns the index's device memory; searches after this fail. */
  @Override
  void close();
}
