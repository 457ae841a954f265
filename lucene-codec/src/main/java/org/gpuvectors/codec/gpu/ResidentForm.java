package org.gpuvectors.codec.gpu;

/**
 * What of a segment field is resident on the device, for the field types that can be resident in more than one way.
 * A field keeps the form it went up in until it leaves; searches are prepared for that form ({@link
 * Residency#acquire(Residency.Key, ResidentForm, long, Residency.Upload)}). The smaller forms let more of an index be
 * searched on the device in the same memory, the host re-ranking their candidates exactly from the raw vectors.
 */
public enum ResidentForm {
  /** A flat float field's FP32 vectors (and their FP16 copy): the device search is exact. */
  WHOLE(true),
  /** An ivf_pq field's codes, lists and codebooks with its raw vectors: the device re-ranks the candidates. */
  CODES_WITH_VECTORS(true),
  /** An ivf_pq field's codes, lists and codebooks alone: the host re-ranks the candidates the device returns. */
  CODES(true),
  /**
   * A flat float field's bfloat16 copy (two bytes a dimension): the device selects candidates by their bfloat16
   * distances, the host re-ranks them and proves they hold the exact top k.
   */
  COMPACT_COPY(false);

  private final boolean searchedForPeers;

  ResidentForm(boolean searchedForPeers) {
    this.searchedForPeers = searchedForPeers;
  }

  /**
   * Whether another segment's pass may search a field in this form for its query ({@link CrossSegmentSpeculation}):
   * not a compact copy, whose candidates only its own search knows how to re-rank and prove.
   */
  public boolean searchedForPeers() {
    return searchedForPeers;
  }
}
