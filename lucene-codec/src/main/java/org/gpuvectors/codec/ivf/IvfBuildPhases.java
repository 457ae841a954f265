package org.gpuvectors.codec.ivf;

import java.util.Locale;

/**
 * Where an IVF build's time went, phase by phase (wall clock): a merge's temporary copy of the merged
 * vectors (timed by the writer), the coarse quantizer's k-means on its sample, the assignment of every
 * vector to its list, and for {@code ivf_pq} the product quantizer's training on a residual sample and
 * the encoding of every residual; then writing (timed by the writer). One instance per build, filled
 * by {@link IvfBuilder#build} and {@link IvfPqBuilder#build} as they go; not thread safe.
 */
public final class IvfBuildPhases {

  /** The phases, in build order. */
  public enum Phase {
    COPY("copy"),
    COARSE("coarse-kmeans"),
    ASSIGN("assign"),
    PQ_TRAIN("pq-train"),
    ENCODE("encode"),
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

  /** {@code total 1.234 s: copy 0.100 coarse-kmeans 0.500 ...} (seconds; phases a build did not run read 0). */
  @Override
  public String toString() {
    StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "total %.3f s:", totalSeconds()));
    for (Phase phase : Phase.values()) {
      b.append(String.format(Locale.ROOT, " %s %.3f", phase.label, seconds(phase)));
    }
    return b.toString();
  }
}
