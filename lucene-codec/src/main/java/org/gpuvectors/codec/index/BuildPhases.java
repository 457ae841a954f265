package org.gpuvectors.codec.index;

import java.util.Locale;

/**
 * Where a build's time went, phase by phase (wall clock), for the phases of one kind of build ({@link
 * org.gpuvectors.codec.graph.GraphBuildPhases}, {@link org.gpuvectors.codec.ivf.IvfBuildPhases}): each
 * phase runs from the end of the previous one; a phase's label in the log is its name in lower case with
 * dashes ({@code COARSE_KMEANS}: {@code coarse-kmeans}). One instance per build; not thread safe.
 *
 * @param <P> the build's phases, in build order
 */
public abstract class BuildPhases<P extends Enum<P>> {

  private final P[] phases;
  private final long[] nanos;
  private long started = System.nanoTime();

  protected BuildPhases(Class<P> phaseType) {
    this.phases = phaseType.getEnumConstants();
    this.nanos = new long[phases.length];
  }

  /** Ends the running phase as {@code phase} (it began when the previous one ended) and starts the next. */
  public final void end(P phase) {
    long now = System.nanoTime();
    nanos[phase.ordinal()] += now - started;
    started = now;
  }

  /** Restarts the clock without charging the time since the last phase to any phase. */
  public final void restart() {
    started = System.nanoTime();
  }

  /** Seconds spent in {@code phase}. */
  public final double seconds(P phase) {
    return nanos[phase.ordinal()] / 1e9;
  }

  /** Seconds over all phases. */
  public final double totalSeconds() {
    long total = 0;
    for (long n : nanos) {
      total += n;
    }
    return total / 1e9;
  }

  /** The phase's label in the log line. */
  public static String label(Enum<?> phase) {
    return phase.name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /** {@code total 1.234 s: knn 0.500 prune 0.300 ...} (seconds; phases a build did not run read 0). */
  @Override
  public final String toString() {
    StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "total %.3f s:", totalSeconds()));
    for (P phase : phases) {
      b.append(String.format(Locale.ROOT, " %s %.3f", label(phase), seconds(phase)));
    }
    return b.toString();
  }
}
