package org.gpuvectors.cuda;

/**
 * Per query up to k (id, distance) pairs, best first. Query q's entries are at {@code q * k + i};
 * {@link #count(int)} of them are filled (fewer than k when fewer vectors are accepted), the rest
 * have id -1. Immutable.
 */
public final class SearchResult {
  private final int numQueries;
  private final int k;
  private final int[] ids;
  private final float[] distances;
  private final int[] counts;

  /** Wraps per-query (id, distance) rows of k entries each; unfilled slots have id -1. */
  public SearchResult(int numQueries, int k, int[] ids, float[] distances) {
    this.numQueries = numQueries;
    this.k = k;
    this.ids = ids;
    this.distances = distances;
    this.counts = new int[numQueries];
    for (int q = 0; q < numQueries; q++) {
      int c = 0;
      while (c < k && ids[q * k + c] >= 0) {
        c++;
      }
      counts[q] = c;
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
    return ids[q * k + i];
  }

  /**
   * Queries {@code [from, from + count)} with their first {@code k} (at most {@link #k()}) entries:
   * one caller's share of a batched result.
   */
  public SearchResult slice(int from, int count, int k) {
    if (from < 0 || count < 0 || from + count > numQueries || k < 1 || k > this.k) {
      throw new IllegalArgumentException("slice [" + from + ", " + (from + count) + ") x " + k + " of " + numQueries
          + " x " + this.k);
    }
    if (from == 0 && count == numQueries && k == this.k) {
      return this;
    }
    int[] outIds = new int[count * k];
    float[] outDistances = new float[count * k];
    for (int q = 0; q < count; q++) {
      System.arraycopy(ids, (from + q) * this.k, outIds, q * k, k);
      System.arraycopy(distances, (from + q) * this.k, outDistances, q * k, k);
    }
    return new SearchResult(count, k, outIds, outDistances);
  }

  /** Raw distance (squared L2, or inner product) of the i-th best match of query q. */
  public float distance(int q, int i) {
    return distances[q * k + i];
  }
}
