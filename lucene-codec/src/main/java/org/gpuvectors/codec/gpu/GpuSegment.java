package org.gpuvectors.codec.gpu;

import org.gpuvectors.cuda.SearchParams;

/**
 * A segment whose fields the service may hold, as the service needs to see it to search a query
 * over all of an index's segments at once ({@link CrossSegmentSpeculation}): which
 * index it belongs to, which vectors an unfiltered search of a field accepts there now, and how much
 * of an IVF field it scans.
 */
public interface GpuSegment {

  /** Segments of one index (one Lucene directory) share this object. */
  Object group();

  /** Documents in the segment (Lucene sizes its per-segment k by the segment's share of the index). */
  int maxDoc();

  /** What an unfiltered search of {@code field} accepts: all vectors, or the live ones. */
  Standing standing(String field);

  /**
   * The device's search parameters of an unfiltered search of {@code field} for k results: lists scanned (IVF
   * fields), the beam's width or the exact search of the live vectors (graph fields), {@link SearchParams#FLAT} for
   * flat ones.
   */
  SearchParams searchParams(String field, int k);

  /**
   * Results to ask the device for when an unfiltered search of {@code field} wants k: ivf_pq fields
   * whose candidates the host re-ranks ask for more than k; the others (ivf_pq re-ranked on the
   * device too: {@code rerankOnGpu}) k.
   */
  int deviceK(String field, int k, boolean rerankOnGpu);

  /**
   * Candidates the host re-ranks for a search of k over a whole index of {@code field}'s type held in one segment
   * (ivf_pq: its rerank factor x k, capped as a segment's search caps it, whatever this segment holds); k for the
   * other types. The depth of the cut across a pass's segments ({@link RerankCut}).
   */
  int rerankCandidates(String field, int k);

  /**
   * The accept mask of unfiltered searches: {@code token} is the live-docs instance it was built
   * from (null: no deletions seen, {@code mask} null: all accepted). A search whose accepted
   * documents are that same instance (or none) may use results computed with this mask.
   */
  record Standing(Object token, long[] mask) {
    public static final Standing ALL = new Standing(null, null);
  }
}
