package org.gpuvectors.codec.graph;

import java.util.Locale;

/**
 * Where a graph build's time went, phase by phase (wall clock): the k-NN step, pruning, reverse links,
 * the farthest-first entry points, the reachability top-up, and writing (timed by the caller). One
 * instance per build, filled by {@link GraphBuilder#build} as it goes; not thread safe.
 */
public final class GraphBuildPhases {

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
  }

  private final long[] nanos = new long[Phase.values().length];
  private long started = System.nanoTime();

  /** Ends the running phase as {@code phase} (it began when the previous one ended) and starts the next. */
  public void end(Phase phase) {
    long now = System.nanoTime();
    nanos[phase.ordinal()] += now - started;
    started = now;
  }

  /** Restarts the clock without charging the time since the last phase to any phase. */
  public void restart() {
    started = System.nanoTime();
  }

  /** Seconds spent in {@code phase}. */
  public double seconds(Phase phase) {
    return nanos[phase.ordinal()] / 1e9;
  }

  /** Seconds over all phases. */
  public double totalSeconds() {
    long total = 0;
    for (long n : nanos) {
      total += n;
    }
    return total / 1e9;
  }

  /** {@code total 1.234 s: knn 0.500, prune 0.300, ...} (seconds). */
  @Override
  public String toString() {
    StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "total %.3f s:", totalSeconds()));
    for (Phase phase : Phase.values()) {
      b.append(String.format(Locale.ROOT, " %s %.3f", phase.label, seconds(phase)));
    }
    return b.toString();
  }
}
