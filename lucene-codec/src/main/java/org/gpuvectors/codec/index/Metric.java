package org.gpuvectors.codec.index;

import org.apache.lucene.index.VectorSimilarityFunction;

/**
 * The distance an index ranks by, as the codec's CPU search, builds and file formats compute it. Distances are raw
 * (squared L2, inner product); {@code GpuVectorsReader} turns them into Lucene scores. The GPU module has an enum of
 * its own for what its kernels compute: the codec's CPU code does not depend on the GPU module, and {@code
 * codec.gpu} maps one to the other where it hands work to the device.
 */
public enum Metric {
  /** Squared Euclidean distance, smallest first. */
  L2,
  /** Inner product, largest first. */
  INNER_PRODUCT,
  /** Inner product of normalised vectors (vectors normalised when written or uploaded, queries per search), largest first. */
  COSINE;

  /** True when larger distances are better. */
  public boolean largestFirst() {
    return this != L2;
  }

  /**
   * The metric of a Lucene similarity: Euclidean ranks by squared L2, dot product and maximum inner product by the
   * inner product (dot product's vectors are unit length already), cosine by the inner product of normalised vectors.
   */
  public static Metric of(VectorSimilarityFunction similarity) {
    return switch (similarity) {
      case EUCLIDEAN -> L2;
      case DOT_PRODUCT, MAXIMUM_INNER_PRODUCT -> INNER_PRODUCT;
      case COSINE -> COSINE;
    };
  }
}
