package org.gpuvectors.codec.gpu;

/**
 * Progress of a long k-NN graph build, logged (INFO) at most every {@link #INTERVAL_NANOS}: vectors
 * done out of the total, with the step under way, so a build of millions of vectors says where it is.
 * Builds short enough to finish within the interval log nothing. One per build, one thread.
 */
final class KnnGraphProgress {

  private static final System.Logger LOG = System.getLogger(GpuKnnGraph.class.getName());
  /** Seconds between lines (5). */
  static final long INTERVAL_NANOS = 5_000_000_000L;

  private final String what;
  private final long total;
  private final long start = System.nanoTime();
  private long lastLog = start;

  KnnGraphProgress(String what, long total) {
    this.what = what;
    this.total = total;
  }

  /** Reports {@code done} of the total for {@code step}; logs when the interval has passed. */
  void report(String step, long done) {
    long now = System.nanoTime();
    if (now - lastLog >= INTERVAL_NANOS) {
      lastLog = now;
      LOG.log(
          System.Logger.Level.INFO,
          "gpu-vectors: {0} k-NN graph: {1}, {2} / {3} vectors, {4} s",
          what,
          step,
          done,
          total,
          (now - start) / 1_000_000_000L);
    }
  }

  /** Logs the end of a build that logged progress (short builds stay silent). */
  void finish(String summary) {
    long now = System.nanoTime();
    if (now - start >= INTERVAL_NANOS) {
      LOG.log(
          System.Logger.Level.INFO,
          "gpu-vectors: {0} k-NN graph of {1} vectors done in {2} s: {3}",
          what,
          total,
          String.format(java.util.Locale.ROOT, "%.1f", (now - start) / 1e9),
          summary);
    }
  }
}
