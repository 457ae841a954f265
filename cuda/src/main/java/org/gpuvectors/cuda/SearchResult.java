package org.gpuvectors.cuda;


/**
 * Per query up to k (id, distance) pairs, best first. {@link #count(int)} of query q's k entries are filled
 * (fewer than k when fewer vectors are accepted, or when a {@link #limit}ed view keeps fewer), the rest have id -1
 * (in a limited view: entries past the count are not part of it). Immutable.
 *
 * <p>A result may be a view into larger arrays (a pass's results for all its groups, {@code BatchSearch}; a
 * caller's share of a group, {@link #slice}): rows of k entries, {@code stride} elements apart from element
 * {@code offset}. Views copy nothing: cutting a pass's arrays into groups and groups into callers' shares by copy
 * showed in profiles of many small searches (Elasticsearch, 8 segments: as much host time per pass as the kernel
 * launches).
 */
public final class SearchResult {
  private final int numQueries;
  private final int k;
  private final int[] ids;
  private final float[] distances;
  private final int offset;
  private final int stride;
  private final int[] counts;

  /** Wraps per-query (id, distance) rows of k entries each; unfilled slots have id -1. */
  public SearchResult(int numQueries, int k, int[] ids, float[] distances) {
    this(numQueries, k, ids, distances, 0, k);
  }

  /**
   * Wraps {@code numQueries} rows of k entries, row q starting at element {@code offset + q * stride} of {@code ids}
   * and {@code distances} (which are not copied, and must not change afterwards).
   */
  public SearchResult(int numQueries, int k, int[] ids, float[] distances, int offset, int stride) {
    if (numQueries < 0 || k < 0 || offset < 0 || stride < k
        || (numQueries > 0 && (long) offset + (long) (numQueries - 1) * stride + k > Math.min(ids.length, distances.length))) {
      throw new IllegalArgumentException(numQueries + " rows of " + k + " at " + offset + " stride " + stride + " in "
          + ids.length + " ids, " + distances.length + " distances");
    }
    this.numQueries = numQueries;
    this.k = k;
    this.ids = ids;
    this.distances = distances;
    this.offset = offset;
    this.stride = stride;
    this.counts = new int[numQueries];
    for (int q = 0; q < numQueries; q++) {
      int row = offset + q * stride;
      int c = 0;
      while (c < k && ids[row + c] >= 0) {
        c++;
      }
      counts[q] = c;
    }
  }

  /** A view of {@code parent}'s rows {@code [from, from + count)} cut to their first k entries. */
  private SearchResult(SearchResult parent, int from, int count, int k) {
    this.numQueries = count;
    this.k = k;
    this.ids = parent.ids;
    this.distances = parent.distances;
    this.offset = parent.offset + from * parent.stride;
    this.stride = parent.stride;
    this.counts = new int[count];
    for (int q = 0; q < count; q++) {
      counts[q] = Math.min(parent.counts[from + q], k); // filled entries come first
    }
  }

  /** A view of {@code parent} with query q cut to its first {@code limits[q]} entries (at most its own count). */
  private SearchResult(SearchResult parent, int[] limits) {
    this.numQueries = parent.numQueries;
    this.k = parent.k;
    this.ids = parent.ids;
    this.distances = parent.distances;
    this.offset = parent.offset;
    this.stride = parent.stride;
    this.counts = new int[numQueries];
    for (int q = 0; q < numQueries; q++) {
      counts[q] = Math.max(0, Math.min(parent.counts[q], limits[q]));
    }
  }

  public int numQueries() {
    return numQueries;
  }

  public int k() {
    return k;
  }

  /** Filled entries of query q. */
  public int count(int q) {
    return counts[q];
  }

  /** Vector ordinal of the i-th best match of query q (-1 when i >= count(q)). */
  public int id(int q, int i) {
    return ids[offset + q * stride + i];
  }

  /**
   * Queries {@code [from, from + count)} with their first {@code k} (at most {@link #k()}) entries:
   * one caller's share of a batched result (a view, no copy).
   */
  public SearchResult slice(int from, int count, int k) {
    if (from < 0 || count < 0 || from + count > numQueries || k < 1 || k > this.k) {
      throw new IllegalArgumentException("slice [" + from + ", " + (from + count) + ") x " + k + " of " + numQueries
          + " x " + this.k);
    }
    if (from == 0 && count == numQueries && k == this.k) {
      return this;
    }
    return new SearchResult(this, from, count, k);
  }

  /**
   * This result with query q's filled entries cut to its best {@code limits[q]} (never more than {@link #count}),
   * the same k: a view, no copy. A caller that keeps fewer than the k entries of some rows for their content (the
   * codec's cut of a pass's re-rank candidates across segments) still takes its slices for any k up to {@link #k()},
   * and {@link #id} past a row's count keeps returning what the arrays hold: read only {@link #count} entries.
   */
  public SearchResult limit(int[] limits) {
    if (limits.length != numQueries) {
      throw new IllegalArgumentException(limits.length + " limits for " + numQueries + " queries");
    }
    return new SearchResult(this, limits);
  }

  /** Raw distance (squared L2, or inner product) of the i-th best match of query q. */
  public float distance(int q, int i) {
    return distances[offset + q * stride + i];
  }
}
