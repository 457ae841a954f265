package org.gpuvectors.codec.graph;

import java.io.IOException;
import org.apache.lucene.search.KnnCollector;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.util.BitSet;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.FixedBitSet;
import org.apache.lucene.util.SparseFixedBitSet;
import org.apache.lucene.util.hnsw.RandomVectorScorer;

/**
 * One best-first beam search of a {@link GraphField} on the CPU (the CAGRA / SONG loop): a list of the
 * {@code width} best vectors scored so far, best first; each iteration expands the best vector not
 * yet expanded (scores its neighbours not yet visited and merges them into the list); the search
 * ends when every vector in the list is expanded. It starts from the entry points. Vectors a filter
 * or a deletion rejects are traversed (they lead to accepted ones) but never collected: the collector
 * receives every accepted vector scored and keeps its best k. With an {@link EntryLayer} the walk starts from its
 * heads and the entry points grouped under the best of them, else from every entry point (as the GPU does).
 */
final class BeamSearch {

  /** Segments up to this many vectors mark visits in a {@link FixedBitSet}, larger ones in a sparse one. */
  private static final int DENSE_VISITED_MAX = 1 << 20;

  private final GraphField graph;
  /** The grouped entry points, or null: every entry point starts the walk. */
  private final EntryLayer layer;
  private final RandomVectorScorer scorer;
  private final Bits acceptOrds;
  private final int[] ids;
  private final float[] scores;
  private final boolean[] expanded;
  private int count;
  /** No vector before this position is unexpanded. */
  private int cursor;

  BeamSearch(GraphField graph, EntryLayer layer, RandomVectorScorer scorer, Bits acceptOrds, int width) {
    this.graph = graph;
    this.layer = layer;
    this.scorer = scorer;
    this.acceptOrds = acceptOrds;
    this.ids = new int[width];
    this.scores = new float[width];
    this.expanded = new boolean[width];
  }

  /** See {@link GraphField#width}: the rule the GPU search follows too ({@link GraphFilterPlan#width}). */
  static int width(int searchWidth, int k, long accepted, int size) {
    return GraphFilterPlan.width(searchWidth, k, accepted, size);
  }

  /**
   * The exact search of the accepted vectors (the ordinals {@code acceptOrds} accepts, all when null), for filters
   * so selective that a walk would score more vectors ({@link GraphField#effort}): each is scored and handed to
   * the collector, until the collector terminates early.
   */
  static void exact(int size, RandomVectorScorer scorer, Bits acceptOrds, KnnCollector collector) throws IOException {
    for (int ord = 0; ord < size; ord++) {
      if (acceptOrds != null && acceptOrds.get(ord) == false) {
        continue;
      }
      if (collector.earlyTerminated()) {
        return;
      }
      collector.incVisitedCount(1);
      collector.collect(scorer.ordToDoc(ord), scorer.score(ord));
    }
  }

  void run(KnnCollector collector) throws IOException {
    int size = graph.size();
    BitSet visited = size <= DENSE_VISITED_MAX ? new FixedBitSet(size) : new SparseFixedBitSet(size);
    int[] start = graph.entryPoints();
    if (layer != null) {
      int[] heads = layer.heads();
      float[] headScores = new float[heads.length];
      for (int h = 0; h < heads.length; h++) {
        if (collector.earlyTerminated()) {
          return;
        }
        visited.set(heads[h]);
        headScores[h] = visit(heads[h], collector);
      }
      start = layer.start(headScores, ids.length);
    }
    for (int seed : start) {
      if (visited.getAndSet(seed)) {
        continue; // a head, scored above
      }
      if (collector.earlyTerminated()) {
        return;
      }
      visit(seed, collector);
    }
    IndexInput adjacency = graph.adjacencyReader();
    int degree = graph.degree();
    int[] row = new int[degree];
    // each vector enters the list at most once (visited), so at most size expansions: the cap is a safety net
    for (int iteration = 0; iteration < size; iteration++) {
      while (cursor < count && expanded[cursor]) {
        cursor++;
      }
      if (cursor == count) {
        return; // every vector in the list is expanded
      }
      expanded[cursor] = true;
      adjacency.seek(4L * ids[cursor] * degree);
      adjacency.readInts(row, 0, degree);
      for (int j : row) {
        if (j < 0) {
          break; // padding
        }
        if (visited.getAndSet(j)) {
          continue;
        }
        if (collector.earlyTerminated()) {
          return;
        }
        visit(j, collector);
      }
    }
  }

  /** Scores vector {@code ord}, hands it to the collector if accepted, and merges it into the list; its score. */
  private float visit(int ord, KnnCollector collector) throws IOException {
    float score = scorer.score(ord);
    collector.incVisitedCount(1);
    if (acceptOrds == null || acceptOrds.get(ord)) {
      collector.collect(scorer.ordToDoc(ord), score);
    }
    insert(ord, score);
    return score;
  }

  /** Inserts (ord, score) in score order (ties: lower ordinal first) if it ranks within the width. */
  private void insert(int ord, float score) {
    int width = ids.length;
    if (count == width && better(score, ord, scores[count - 1], ids[count - 1]) == false) {
      return;
    }
    int pos = count < width ? count++ : count - 1;
    while (pos > 0 && better(score, ord, scores[pos - 1], ids[pos - 1])) {
      ids[pos] = ids[pos - 1];
      scores[pos] = scores[pos - 1];
      expanded[pos] = expanded[pos - 1];
      pos--;
    }
    ids[pos] = ord;
    scores[pos] = score;
    expanded[pos] = false;
    cursor = Math.min(cursor, pos);
  }

  private static boolean better(float s1, int id1, float s2, int id2) {
    int c = Float.compare(s1, s2);
    return c > 0 || (c == 0 && id1 < id2);
  }
}
