package org.gpuvectors.codec.graph;

import org.gpuvectors.codec.index.BuildPhases;

/**
 * Where a graph build's time went, phase by phase (wall clock): the k-NN step, pruning, reverse links,
 * the farthest-first entry points, the reachability top-up, and writing (timed by the caller). One
 * instance per build, filled by {@link GraphBuilder#build} as it goes; not thread safe.
 */
public final class GraphBuildPhases extends BuildPhases<GraphBuildPhases.Phase> {

  /** The phases, in build order. */
  public enum Phase {
    KNN,
    PRUNE,
    REVERSE,
    SEEDS,
    REACH,
    WRITE
  }

  public GraphBuildPhases() {
    super(Phase.class);
  }
}
