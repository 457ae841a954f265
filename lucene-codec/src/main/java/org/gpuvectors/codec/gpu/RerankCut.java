package org.gpuvectors.codec.gpu;

import java.util.Arrays;
import java.util.List;
import org.gpuvectors.cuda.SearchResult;

/**
 * The cross-segment re-rank cut: when one pass holds the approximate candidates of several segments of a field for
 * the same queries (ivf_pq resident as its codes alone, whose candidates the host re-ranks from the raw vectors),
 * only the {@code depth} best of them by approximate distance over all those segments are re-ranked, per query: the
 * depth one segment holding the whole index would re-rank for the query's k, as Faiss refines k_factor x k
 * candidates over a whole index rather than per shard. Each segment keeps its candidates at least as good as the
 * depth-th best of the union (its rows are best first, so that is a prefix of each) and drops the rest.
 *
 * <p>What this keeps: the depth best of the whole index by approximate distance, which is what one segment holding
 * the whole index would re-rank for the query's k (the depth best of each segment's rows, merged), as Faiss refines
 * over a whole index. That depth is what one segment of ordinary size needs; over an index of many segments it can
 * fall short of the query's k best. So each segment also keeps at least its {@code floor} best (the k the search
 * asks of it): its own top hits by its own codes, which one codebook ranks consistently. Each segment's re-rank then
 * finds at least its own best, and the cut still drops most of what the segments would re-rank each. A segment returns
 * fewer than k hits only when it held fewer candidates.
 *
 * <p>Only for candidates whose approximate distances compare: the same field, the same metric, segments resident as
 * codes alone (a segment whose device re-ranks returns exact distances, not candidates), one row per query in the
 * same query order.
 */
public final class RerankCut {

  private RerankCut() {}

  /** The results cut (in the order given, the same k each) and the candidate entries the cut dropped. */
  public record Cut(SearchResult[] results, long dropped) {}

  /**
   * {@link #cut(List, int, int, boolean)} of the results at positions {@code which} of {@code results}, written back
   * in place (a pass's results, of which only some segments' are candidates to cut; fewer than two: nothing changes).
   *
   * @return the candidate entries the cut dropped
   */
  public static long cutAt(List<SearchResult> results, List<Integer> which, int depth, int floor,
                           boolean largestFirst) {
    if (which.size() < 2) {
      return 0;
    }
    List<SearchResult> candidates = new java.util.ArrayList<>(which.size());
    for (int i : which) {
      candidates.add(results.get(i));
    }
    Cut cut = cut(candidates, depth, floor, largestFirst);
    for (int c = 0; c < which.size(); c++) {
      results.set(which.get(c), cut.results()[c]);
    }
    return cut.dropped();
  }

  /**
   * Per query, each result cut to its entries at least as good as the {@code depth}-th best approximate distance of
   * all of them (ties at the boundary go to the earlier result: {@code depth} entries over all results when they
   * hold more), or to its {@code floor} best when that keeps more of it.
   *
   * @param candidates one field's candidate lists of several segments for the same queries, best first each
   * @param floor the entries each result keeps at least (at most what it holds): the k asked of each segment
   * @param largestFirst whether larger distances are better (inner product, cosine), as the device ranks them
   */
  public static Cut cut(List<SearchResult> candidates, int depth, int floor, boolean largestFirst) {
    int lists = candidates.size();
    SearchResult[] out = candidates.toArray(new SearchResult[0]);
    if (lists < 2) {
      return new Cut(out, 0);
    }
    int numQueries = out[0].numQueries();
    int[][] keep = new int[lists][numQueries];
    int[] at = new int[lists];
    long dropped = 0;
    boolean any = false;
    for (int q = 0; q < numQueries; q++) {
      long total = 0;
      for (int s = 0; s < lists; s++) {
        if (out[s].numQueries() != numQueries) {
          throw new IllegalArgumentException("results of " + out[s].numQueries() + " and " + numQueries + " queries");
        }
        total += out[s].count(q);
      }
      if (total <= depth) {
        for (int s = 0; s < lists; s++) {
          keep[s][q] = out[s].count(q);
        }
        continue;
      }
      // a merge of the best-first rows, taking depth entries: each row keeps what the merge took of it
      Arrays.fill(at, 0);
      for (int taken = 0; taken < depth; taken++) {
        int best = -1;
        float bestDistance = 0;
        for (int s = 0; s < lists; s++) {
          if (at[s] < out[s].count(q)) {
            float d = out[s].distance(q, at[s]);
            if (best < 0 || (largestFirst ? d > bestDistance : d < bestDistance)) {
              best = s;
              bestDistance = d;
            }
          }
        }
        at[best]++;
      }
      long kept = 0;
      for (int s = 0; s < lists; s++) {
        keep[s][q] = Math.max(at[s], Math.min(floor, out[s].count(q)));
        kept += keep[s][q];
      }
      dropped += total - kept;
      any |= kept < total;
    }
    if (any) {
      for (int s = 0; s < lists; s++) {
        out[s] = out[s].limit(keep[s]);
      }
    }
    return new Cut(out, dropped);
  }
}
