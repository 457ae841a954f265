package org.gpuvectors.codec;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopKnnCollector;
import org.apache.lucene.search.TotalHits;
import org.junit.jupiter.api.Test;

/**
 * {@link SegmentHits} against Lucene itself: what it keeps of a segment's hits is what a {@link
 * TopKnnCollector} keeps, in the same order, and its merge of a query's segments is {@link
 * TopDocs#merge(int, TopDocs[])}: same docs, scores, order and total hits, with many equal scores
 * (the tie-breaking by doc id), empty and missing segments, and k above a segment's hit count.
 */
class SegmentHitsTests {

  private final Random random = new Random(0xb47c4);

  /** A score from few distinct values, so that ties are common (0 among them). */
  private float tiedScore() {
    return random.nextInt(6) / 4f;
  }

  @Test
  void keepsWhatTopKnnCollectorKeepsInItsOrder() {
    for (int round = 0; round < 500; round++) {
      int k = 1 + random.nextInt(12);
      int numQueries = 1 + random.nextInt(4);
      SegmentHits hits = new SegmentHits(numQueries, k);
      for (int q = 0; q < numQueries; q++) {
        TopKnnCollector collector = new TopKnnCollector(k, Integer.MAX_VALUE);
        int offered = random.nextInt(3 * k);
        List<Integer> docs = new ArrayList<>();
        for (int d = 0; d < 4 * k + 8; d++) {
          docs.add(d);
        }
        java.util.Collections.shuffle(docs, random); // distinct docs in any order, as candidates come
        for (int i = 0; i < offered; i++) {
          float score = round % 2 == 0 ? tiedScore() : random.nextFloat();
          collector.collect(docs.get(i), score);
          hits.add(q, docs.get(i), score);
        }
        TopDocs expected = collector.topDocs();
        assertEquals(expected.scoreDocs.length, hits.count(q), "round " + round);
        for (int i = 0; i < hits.count(q); i++) {
          assertEquals(expected.scoreDocs[i].doc, hits.doc(q, i), "round " + round + " rank " + i);
          assertEquals(expected.scoreDocs[i].score, hits.score(q, i), 0f, "round " + round + " rank " + i);
        }
      }
    }
  }

  @Test
  void mergesAsTopDocsMerge() {
    for (int round = 0; round < 500; round++) {
      int k = 1 + random.nextInt(15);
      int numSegments = 1 + random.nextInt(5);
      int numQueries = 3;
      SegmentHits[] segments = new SegmentHits[numSegments];
      int[] docBases = new int[numSegments];
      TopDocs[][] perQuery = new TopDocs[numQueries][numSegments];
      int docBase = 0;
      for (int s = 0; s < numSegments; s++) {
        int maxDoc = random.nextInt(2 * k + 1); // some segments smaller than k, some empty
        docBases[s] = docBase;
        if (random.nextInt(6) == 0) {
          segments[s] = null; // nothing to search there (no document matches the filter)
          for (int q = 0; q < numQueries; q++) {
            perQuery[q][s] = new TopDocs(new TotalHits(0, TotalHits.Relation.EQUAL_TO), new ScoreDoc[0]);
          }
        } else {
          // two collectors fed alike per query: topDocs() empties a collector
          TopKnnCollector[] collectors = new TopKnnCollector[numQueries];
          TopKnnCollector[] twins = new TopKnnCollector[numQueries];
          for (int q = 0; q < numQueries; q++) {
            int visitLimit = random.nextInt(4) == 0 ? Math.max(1, maxDoc / 2) : Integer.MAX_VALUE;
            collectors[q] = new TopKnnCollector(k, visitLimit);
            twins[q] = new TopKnnCollector(k, visitLimit);
            for (int doc = 0; doc < maxDoc; doc++) {
              float score = round % 3 == 0 ? random.nextFloat() : tiedScore();
              for (TopKnnCollector c : new TopKnnCollector[] {collectors[q], twins[q]}) {
                c.incVisitedCount(1);
                c.collect(doc, score);
              }
            }
          }
          segments[s] = SegmentHits.of(collectors, k);
          for (int q = 0; q < numQueries; q++) {
            TopDocs topDocs = twins[q].topDocs();
            for (ScoreDoc scoreDoc : topDocs.scoreDocs) {
              scoreDoc.doc += docBase; // as the index searcher's leaves would
            }
            perQuery[q][s] = topDocs;
          }
        }
        docBase += maxDoc;
      }
      for (int q = 0; q < numQueries; q++) {
        TopDocs expected = TopDocs.merge(k, perQuery[q]);
        TopDocs actual = SegmentHits.merge(segments, docBases, q, k);
        String where = "round " + round + " query " + q;
        assertEquals(expected.totalHits, actual.totalHits, where);
        assertEquals(expected.scoreDocs.length, actual.scoreDocs.length, where);
        for (int i = 0; i < expected.scoreDocs.length; i++) {
          assertEquals(expected.scoreDocs[i].doc, actual.scoreDocs[i].doc, where + " rank " + i);
          assertEquals(expected.scoreDocs[i].score, actual.scoreDocs[i].score, 0f, where + " rank " + i);
        }
      }
    }
  }

  @Test
  void visitedCountsAsACollectorsTotalHits() {
    SegmentHits hits = new SegmentHits(2, 3);
    hits.visited(0, 120, Integer.MAX_VALUE);
    hits.visited(1, 50, 50); // the visit limit reached: a lower bound, as the collector reports it
    TopDocs first = SegmentHits.merge(new SegmentHits[] {hits, null}, new int[] {0, 10}, 0, 3);
    TopDocs second = SegmentHits.merge(new SegmentHits[] {hits, null}, new int[] {0, 10}, 1, 3);
    assertEquals(new TotalHits(120, TotalHits.Relation.EQUAL_TO), first.totalHits);
    assertEquals(new TotalHits(50, TotalHits.Relation.GREATER_THAN_OR_EQUAL_TO), second.totalHits);
    assertEquals(0, first.scoreDocs.length);
  }
}
