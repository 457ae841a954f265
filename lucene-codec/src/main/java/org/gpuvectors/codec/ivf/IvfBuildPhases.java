package org.gpuvectors.codec.ivf;

import org.gpuvectors.codec.index.BuildPhases;

/**
 * Where an IVF build's time went, phase by phase (wall clock): a merge's temporary copy of the merged
 * vectors (timed by the writer), the coarse quantizer's k-means on its sample, the assignment of every
 * vector to its list, and for {@code ivf_pq} the product quantizer's training on a residual sample and
 * the encoding of every residual; then writing (timed by the writer). One instance per build, filled
 * by {@link IvfBuilder#build} and {@link IvfPqBuilder#build} as they go; not thread safe.
 */
public final class IvfBuildPhases extends BuildPhases<IvfBuildPhases.Phase> {

  /** The phases, in build order. */
  public enum Phase {
    COPY,
    COARSE_KMEANS,
    ASSIGN,
    PQ_TRAIN,
    ENCODE,
    WRITE
  }

  public IvfBuildPhases() {
    super(Phase.class);
  }
}
