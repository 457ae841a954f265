package org.gpuvectors.codec.graph;

import org.gpuvectors.codec.BuildPhases;

/**
 * Where a graph build's time went, phase by phase (wall clock): the k-NN step, pruning, reverse links,
 * the farthest-first entry points, the reachability top-up, and writing (timed by the caller). One
 * instance per build, filled by {@link GraphBuilder#build} as it goes; not thread safe.
 */
public final class GraphBuildPhases extends BuildPhases<GraphBuildPhases.Phase> {

  /** The phases, in build order. */
  public enum Phase {
    KNN("knn"),
    PRUNE("prune"),
    REVERSE("reverse"),
    SEEDS("seeds"),
    REACH("reach"),
    WRITE("write");

    private final String label;

    Phase(String label) {
      this.label = label;
    }

    /** The label in the build's log line. */
    @Override
    public String toString() {
      return label;
    }
  }

  public GraphBuildPhases() {
    super(Phase.class);
  }
}
