package org.gpuvectors.codec.ivf;

import java.util.OptionalInt;

/**
 * How many lists an IVF search scans, from the segment's default and the query.
 *
 * <ul>
 *   <li>The default ({@code nprobe} of the mapping, else about {@code nlist / 16}) serves
 *       {@code num_candidates} (Lucene's k for the segment) up to {@value #BASE_CANDIDATES}; above that
 *       the lists grow in proportion, so that raising {@code num_candidates} raises recall as it does
 *       for HNSW. The lists scan at least {@value #MIN_SCAN_PER_CANDIDATE} vectors per result asked, which
 *       takes more lists in small segments.
 *   <li>A filter that accepts a fraction {@code s} of the vectors divides the accepted vectors a list
 *       holds by about {@code 1/s}: the lists grow by {@code 1/s} so that a query scans about as many
 *       accepted candidates as without a filter. At {@code nlist} lists the search is exact over the
 *       accepted vectors: a selective filter turns IVF into exact search (where it costs no more than
 *       scanning the accepted vectors), and recall holds where list probing would collapse.
 * </ul>
 */
public final class IvfProbes {

  /** num_candidates that the default number of lists serves. */
  public static final int BASE_CANDIDATES = 100;
  /** The default lists scanned are about nlist / this. */
  static final int DEFAULT_PROBE_DIVISOR = 16;

  /**
   * Vectors a search scans at least, per result asked ({@code num_candidates}), whatever {@code nprobe}: in a segment
   * of fewer than about {@code 1,024 x k} vectors, nlist / 16 lists scan too few. On embedding-like data (a slice of a 500-cluster
   * set whose clusters overlap, as a segment of a large index holds) nlist / 16 lists gave recall@10 0.868 at 20k x
   * 128, 0.887 at 10k x 768 and 0.942 at 60k x 128 (num_candidates 100); 32 vectors a result gave 0.943 / 0.999 /
   * 0.954, 64 gave 0.984 / 1.000 / 0.990 ({@code DefaultRecallTests}).
   */
  static final int MIN_SCAN_PER_CANDIDATE = 64;

  private IvfProbes() {}

  /** Lists for a segment of {@code nlist} lists: the mapping's nprobe (at most nlist), else about nlist / 16. */
  public static int defaultProbes(OptionalInt requested, int nlist) {
    if (requested.isPresent()) {
      return Math.min(requested.getAsInt(), nlist);
    }
    return Math.max(1, Math.min(nlist, Math.round(nlist / (float) DEFAULT_PROBE_DIVISOR)));
  }

  /**
   * Lists to scan for a search asking {@code k} results of a segment with {@code size} vectors of
   * which {@code accepted} pass the filter and deletions.
   */
  public static int probes(int defaultProbes, int nlist, int k, long accepted, int size) {
    double lists = defaultProbes * Math.max(1.0, k / (double) BASE_CANDIDATES);
    lists = Math.max(lists, (double) MIN_SCAN_PER_CANDIDATE * k * nlist / Math.max(1, size));
    if (accepted < size) {
      lists = lists * size / Math.max(1, accepted);
    }
    return (int) Math.max(1, Math.min(nlist, Math.ceil(lists)));
  }
}
