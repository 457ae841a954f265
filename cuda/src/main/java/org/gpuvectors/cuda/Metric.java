package org.gpuvectors.cuda;

/** Exact-search metrics. Distances are raw; the Lucene codec turns them into scores. */
public enum Metric {
  /** Squared Euclidean distance, smallest first. */
  L2,
  /** Inner product, largest first. */
  INNER_PRODUCT,
  /** Inner product of normalised vectors (vectors normalised at upload, queries per search), largest first. */
  COSINE;

  /** True when larger distances are better. */
  public boolean largestFirst() {
    return this != L2;
  }
}
