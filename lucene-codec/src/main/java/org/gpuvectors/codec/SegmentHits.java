package org.gpuvectors.codec;

import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopKnnCollector;
import org.apache.lucene.search.TotalHits;
import org.apache.lucene.util.NumericUtils;

/**
 * One segment's hits for a batch of queries, without a collector per query: per query up to {@code
 * k} (doc, score) pairs, kept and ordered exactly as a {@link TopKnnCollector} of that k keeps and
 * returns them (the k largest by score, equal scores by the lower doc id; best first), plus the
 * query's total hits (the vectors it visited). {@link #merge} then combines the segments of a query
 * into its {@link TopDocs} as {@link TopDocs#merge(int, TopDocs[])} does.
 *
 * <p>Each pair is stored as the collector's heap does: one long, {@code sortableInt(score) << 32 |
 * ~doc}, so the order of the longs is the collector's order. Queries are independent: different
 * queries may be filled from different threads.
 */
final class SegmentHits {

  private final int k;
  private final long[] entries; // query q: [q * k, q * k + counts[q]), best first
  private final int[] counts;
  private final long[] visited;
  private final boolean[] incomplete; // a collector's visit limit was reached (total hits are a lower bound)

  SegmentHits(int numQueries, int k) {
    if (k < 1) {
      throw new IllegalArgumentException("k must be at least 1 but was [" + k + "]");
    }
    this.k = k;
    this.entries = new long[Math.multiplyExact(numQueries, k)];
    this.counts = new int[numQueries];
    this.visited = new long[numQueries];
    this.incomplete = new boolean[numQueries];
  }

  /** The hits of collectors that searched the batch's queries one by one (CPU paths, other formats). */
  static SegmentHits of(TopKnnCollector[] collectors, int k) {
    SegmentHits hits = new SegmentHits(collectors.length, k);
    for (int q = 0; q < collectors.length; q++) {
      hits.replace(q, collectors[q]);
    }
    return hits;
  }

  /** Query q's hits and visited count replaced by those of a collector that searched it. */
  void replace(int q, TopKnnCollector collector) {
    TopDocs topDocs = collector.topDocs();
    counts[q] = 0;
    for (ScoreDoc scoreDoc : topDocs.scoreDocs) {
      add(q, scoreDoc.doc, scoreDoc.score);
    }
    visited[q] = topDocs.totalHits.value();
    incomplete[q] = topDocs.totalHits.relation() == TotalHits.Relation.GREATER_THAN_OR_EQUAL_TO;
  }

  int numQueries() {
    return counts.length;
  }

  /**
   * Offers query q a hit (a doc id of this segment): kept if it is among the k best so far, as
   * {@link TopKnnCollector#collect} keeps it. Fastest when hits come best first.
   */
  void add(int q, int doc, float score) {
    long entry = encode(doc, score);
    int from = q * k;
    int count = counts[q];
    if (count == k && entry < entries[from + k - 1]) {
      return; // below the k-th best
    }
    int at = from + Math.min(count, k - 1); // insertion point, found from the end (hits mostly come in order)
    while (at > from && entries[at - 1] < entry) {
      entries[at] = entries[at - 1];
      at--;
    }
    entries[at] = entry;
    if (count < k) {
      counts[q] = count + 1;
    }
  }

  /**
   * Sets the vectors query q visited in this segment (its total hits), as a collector counts them:
   * a count at or above {@code visitLimit} makes them a lower bound.
   */
  void visited(int q, long count, long visitLimit) {
    visited[q] = count;
    incomplete[q] = count >= visitLimit;
  }

  int count(int q) {
    return counts[q];
  }

  int doc(int q, int i) {
    return ~(int) entries[q * k + i];
  }

  float score(int q, int i) {
    return NumericUtils.sortableIntToFloat((int) (entries[q * k + i] >> 32));
  }

  private static long encode(int doc, float score) {
    return ((long) NumericUtils.floatToSortableInt(score) << 32) | (~doc & 0xFFFFFFFFL);
  }

  /**
   * Query q's top {@code k} over all segments, as {@link TopDocs#merge(int, TopDocs[])} makes it from
   * the segments' collectors: hits by score, equal scores by the lower doc id (index-wide, after
   * {@code docBases}), each segment's hits taken in their order; total hits summed (a lower bound if
   * any segment's is). A null segment had nothing to search (no hits, none visited).
   */
  static TopDocs merge(SegmentHits[] segments, int[] docBases, int q, int k) {
    long totalHits = 0;
    boolean lowerBound = false;
    int available = 0;
    int only = -1; // the one segment with hits, or -2 when several have them
    for (int s = 0; s < segments.length; s++) {
      SegmentHits hits = segments[s];
      if (hits == null) {
        continue;
      }
      totalHits += hits.visited[q];
      lowerBound |= hits.incomplete[q];
      if (hits.counts[q] > 0) {
        available += hits.counts[q];
        only = only == -1 ? s : -2;
      }
    }
    ScoreDoc[] scoreDocs = new ScoreDoc[Math.min(k, available)];
    if (only >= 0) {
      SegmentHits hits = segments[only];
      for (int i = 0; i < scoreDocs.length; i++) {
        scoreDocs[i] = new ScoreDoc(hits.doc(q, i) + docBases[only], hits.score(q, i));
      }
    } else if (scoreDocs.length > 0) {
      int[] next = new int[segments.length];
      for (int i = 0; i < scoreDocs.length; i++) {
        int best = -1;
        float bestScore = 0;
        int bestDoc = 0;
        for (int s = 0; s < segments.length; s++) {
          SegmentHits hits = segments[s];
          if (hits == null || next[s] >= hits.counts[q]) {
            continue;
          }
          float score = hits.score(q, next[s]);
          int doc = hits.doc(q, next[s]) + docBases[s];
          if (best < 0 || score > bestScore || (score == bestScore && doc < bestDoc)) {
            best = s;
            bestScore = score;
            bestDoc = doc;
          }
        }
        scoreDocs[i] = new ScoreDoc(bestDoc, bestScore);
        next[best]++;
      }
    }
    TotalHits.Relation relation =
        lowerBound ? TotalHits.Relation.GREATER_THAN_OR_EQUAL_TO : TotalHits.Relation.EQUAL_TO;
    return new TopDocs(new TotalHits(totalHits, relation), scoreDocs);
  }
}
