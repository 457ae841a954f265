package org.gpuvectors.cuda;

import org.gpuvectors.cuda.runtime.PinnedHostBuffer;

/**
 * The pass part of {@link GpuConfig}: how a device runs the passes that search its indexes.
 *
 * @param lanes streams the small groups of one pass are spread over (1 = one stream): a query's search of one small
 *     segment is a chain of short launches that fills a few multiprocessors, so the segments of a pass run side by
 *     side instead of one after another. 1..{@value #MAX_LANES}.
 * @param passesInFlight search passes that may be in flight at once (1 = one at a time): a pass holds the device lock
 *     only while it enqueues, then waits for its end without it, so that with more than one the next pass is
 *     enqueued while the last one runs. One at a time gathers the most searches per pass; two helped loads of many
 *     small segments at moderate concurrency. 1..{@value #MAX_PASSES_IN_FLIGHT}.
 * @param queryStagingBytes bytes of a pass's pinned buffer that its large groups' queries are staged into before the
 *     host waits for the copies that still read it ({@code QueryUploads}): the buffer's largest size by default, so
 *     that a batch goes up without the host waiting; tests make it a few rows to reach the reuse. At least 4.
 */
public record PassConfig(int lanes, int passesInFlight, long queryStagingBytes) {
  public static final int MAX_LANES = 16;
  public static final int MAX_PASSES_IN_FLIGHT = 8;

  private static final PassConfig DEFAULTS = new PassConfig(4, 1, PinnedHostBuffer.MAX_BYTES);

  public PassConfig {
    if (lanes < 1 || lanes > MAX_LANES) {
      throw new IllegalArgumentException("lanes must be in [1, " + MAX_LANES + "] but was [" + lanes + "]");
    }
    if (passesInFlight < 1 || passesInFlight > MAX_PASSES_IN_FLIGHT) {
      throw new IllegalArgumentException(
          "passes in flight must be in [1, " + MAX_PASSES_IN_FLIGHT + "] but was [" + passesInFlight + "]");
    }
    if (queryStagingBytes < 4) {
      throw new IllegalArgumentException("query staging bytes must be >= 4 but was [" + queryStagingBytes + "]");
    }
  }

  public static PassConfig defaults() {
    return DEFAULTS;
  }

  public PassConfig withLanes(int value) {
    return new PassConfig(value, passesInFlight, queryStagingBytes);
  }

  public PassConfig withPassesInFlight(int value) {
    return new PassConfig(lanes, value, queryStagingBytes);
  }

  public PassConfig withQueryStagingBytes(long value) {
    return new PassConfig(lanes, passesInFlight, value);
  }
}
