package org.gpuvectors.codec.gpu;

import java.util.Locale;

/**
 * Why a segment could not take the result that its query's speculation parked for it ({@link Speculations}), and
 * searched alone instead; counted per reason in {@link GpuSearchStats}. Every miss is a search outside the query's
 * pass: an index whose segments miss often pays a second pass per query (the natural segments of an Elasticsearch
 * node ran at half the rate when a third of their searches missed).
 */
public enum SpeculationMiss {
  /** The query's array holds another vector now (the caller reused it). */
  OTHER_VECTOR,
  /** The pass did not search this segment (not resident then, or not a peer of the segment that ran it). */
  NOT_IN_PASS,
  /** The segment's accepted documents are not the live-docs instance the pass searched with. */
  OTHER_LIVE_DOCS,
  /** The segment asks for more results than the pass kept for it. */
  LARGER_K;

  /** The name in stats output ({@code other_vector}, {@code not_in_pass}, ...). */
  public String key() {
    return name().toLowerCase(Locale.ROOT);
  }
}
