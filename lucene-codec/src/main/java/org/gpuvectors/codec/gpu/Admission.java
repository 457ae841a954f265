package org.gpuvectors.codec.gpu;

import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Which segment field may take device memory from others when the budget is full: one searched clearly more often
 * than the fields it would evict together, so that the GPU serves more searches after the swap than before. Without
 * it, a working set larger than the budget evicts and re-uploads a segment on nearly every query (each search finds
 * its segment gone), and the GPU serves at upload speed, far below the CPU; with it, the resident set stays put and
 * the searches of the fields left out run on the CPU, so throughput falls with the share that does not fit, not off a
 * cliff.
 *
 * <p>The policy (documented for operators): across all indices of the node, a field takes the place of resident ones
 * only when it has been searched half again as often as they have together (so equally searched fields never swap);
 * free memory is taken without asking. Counts halve every {@link #period} recorded searches, so a field no longer
 * searched loses its place to one that is, within a few periods. This is the frequency-based
 * admission of TinyLFU (Einziger et al., "TinyLFU: A Highly Efficient Cache Admission Policy"), with exact counts: a
 * node holds at most a few thousand segment fields, and a map of them is small.
 *
 * <p>Threading: not thread-safe; {@link Residency} calls it under its lock.
 */
final class Admission {

  /** Searches recorded between two halvings, at least: enough for every field of a busy node to be counted. */
  private static final int MIN_PERIOD = 1024;

  /** Recorded searches between halvings per counted field. */
  private static final int PERIOD_PER_FIELD = 16;

  private final Map<Residency.Key, Integer> counts = new HashMap<>();
  private long sinceHalving;

  /** Counts one search of {@code key} (resident or not). */
  void record(Residency.Key key) {
    counts.merge(key, 1, Integer::sum);
    if (++sinceHalving >= period()) {
      halve();
    }
  }

  /** Searches of {@code key} counted (halved with age). */
  int count(Residency.Key key) {
    return counts.getOrDefault(key, 0);
  }

  /**
   * Whether {@code key} may replace {@code victims} (the resident fields that would be evicted to make room for it):
   * whether it has been searched half again as often as they have together. The margin: the counts of equally
   * searched fields differ by a search or so (where a query's segments are in their order at the moment of asking, a
   * halving between them), and swapping on such a difference would upload for nothing.
   */
  boolean admits(Residency.Key key, List<Residency.Key> victims) {
    long victimCount = 0;
    for (Residency.Key victim : victims) {
      victimCount += count(victim);
    }
    return 2L * count(key) > 3L * victimCount;
  }

  /** Forgets the fields of a closed segment. */
  void forget(Object segment) {
    counts.keySet().removeIf(key -> key.segment() == segment);
  }

  private long period() {
    return Math.max(MIN_PERIOD, (long) PERIOD_PER_FIELD * counts.size());
  }

  private void halve() {
    sinceHalving = 0;
    Iterator<Map.Entry<Residency.Key, Integer>> it = counts.entrySet().iterator();
    while (it.hasNext()) {
      Map.Entry<Residency.Key, Integer> e = it.next();
      int halved = e.getValue() >> 1;
      if (halved == 0) {
        it.remove();
      } else {
        e.setValue(halved);
      }
    }
  }
}
