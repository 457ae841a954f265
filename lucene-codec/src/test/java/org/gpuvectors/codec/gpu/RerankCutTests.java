package org.gpuvectors.codec.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.gpuvectors.cuda.SearchResult;
import org.junit.jupiter.api.Test;

/**
 * {@link RerankCut} against a brute-force expectation: the entries it keeps are exactly the depth best of the union
 * of the lists (by the metric's direction) and each list's floor best, each list keeps a prefix of its best-first
 * row, and the views keep the lists' k for the slices a segment takes later.
 */
class RerankCutTests {

  @Test
  void keepsExactlyTheDepthBestOfAllListsForEitherDirection() {
    Random random = new Random(3);
    for (boolean largestFirst : new boolean[] {false, true}) {
      for (int round = 0; round < 200; round++) {
        int lists = 2 + random.nextInt(6);
        int numQueries = 1 + random.nextInt(4);
        int k = 1 + random.nextInt(40);
        List<SearchResult> results = new ArrayList<>();
        for (int s = 0; s < lists; s++) {
          results.add(randomResult(random, numQueries, k, largestFirst));
        }
        int depth = 1 + random.nextInt(lists * k);
        int floor = random.nextInt(3) == 0 ? 0 : random.nextInt(k + 2);
        RerankCut.Cut cut = RerankCut.cut(results, depth, floor, largestFirst);
        long dropped = 0;
        for (int q = 0; q < numQueries; q++) {
          // brute force: all distances of the union, sorted best first; the depth-th is the cut (distinct values)
          List<Float> all = new ArrayList<>();
          for (SearchResult r : results) {
            for (int i = 0; i < r.count(q); i++) {
              all.add(r.distance(q, i));
            }
          }
          all.sort(largestFirst ? (a, b) -> Float.compare(b, a) : Float::compare);
          int kept = Math.min(depth, all.size());
          float cutAt = kept == 0 ? 0 : all.get(kept - 1);
          int keptTotal = 0;
          for (int s = 0; s < lists; s++) {
            SearchResult before = results.get(s);
            SearchResult after = cut.results()[s];
            assertEquals(before.k(), after.k(), "the k stays: slices for any k a segment asks");
            int expected = 0;
            while (expected < before.count(q)
                && (largestFirst ? before.distance(q, expected) >= cutAt : before.distance(q, expected) <= cutAt)) {
              expected++;
            }
            if (all.size() > depth) {
              expected = Math.max(expected, Math.min(floor, before.count(q))); // each list keeps its floor best
            } else {
              expected = before.count(q); // nothing to cut
            }
            assertEquals(expected, after.count(q), "list " + s + " query " + q);
            for (int i = 0; i < after.count(q); i++) {
              assertEquals(before.id(q, i), after.id(q, i));
              assertEquals(before.distance(q, i), after.distance(q, i));
            }
            keptTotal += after.count(q);
          }
          if (floor == 0) {
            assertEquals(kept, keptTotal, "depth entries kept over all lists, query " + q);
          }
          dropped += all.size() - keptTotal;
        }
        assertEquals(dropped, cut.dropped());
      }
    }
  }

  @Test
  void fewerCandidatesThanTheDepthOrOneListAreKeptWhole() {
    Random random = new Random(5);
    SearchResult a = randomResult(random, 2, 10, false);
    SearchResult b = randomResult(random, 2, 10, false);
    RerankCut.Cut all = RerankCut.cut(List.of(a, b), 20, 5, false);
    assertSame(a, all.results()[0]);
    assertSame(b, all.results()[1]);
    assertEquals(0, all.dropped());
    RerankCut.Cut one = RerankCut.cut(List.of(a), 1, 1, false);
    assertSame(a, one.results()[0]);
    assertEquals(0, one.dropped());
  }

  @Test
  void aSliceOfACutListKeepsTheCut() {
    SearchResult a = new SearchResult(1, 4, new int[] {7, 8, 9, 10}, new float[] {1, 2, 3, 4});
    SearchResult b = new SearchResult(1, 4, new int[] {1, 2, 3, 4}, new float[] {1.5f, 2.5f, 3.5f, 4.5f});
    RerankCut.Cut cut = RerankCut.cut(List.of(a, b), 3, 0, false); // 1, 1.5, 2
    assertEquals(2, cut.results()[0].count(0));
    assertEquals(1, cut.results()[1].count(0));
    assertEquals(2, cut.results()[0].slice(0, 1, 4).count(0), "a slice of the full k: the cut count");
    assertEquals(1, cut.results()[0].slice(0, 1, 1).count(0), "a slice below it: its k");
    assertEquals(5, cut.dropped());
    assertEquals(1, cut.results()[1].slice(0, 1, 2).count(0));
  }

  @Test
  void aSegmentWhoseCandidatesAllRankBelowTheOthersKeepsItsFloorBest() {
    // all of b's distances above a's: without a floor the merge takes a's four and none of b's
    SearchResult a = new SearchResult(1, 4, new int[] {7, 8, 9, 10}, new float[] {1, 2, 3, 4});
    SearchResult b = new SearchResult(1, 4, new int[] {1, 2, 3, 4}, new float[] {10, 11, 12, 13});
    RerankCut.Cut none = RerankCut.cut(List.of(a, b), 4, 0, false);
    assertEquals(4, none.results()[0].count(0));
    assertEquals(0, none.results()[1].count(0));
    assertEquals(4, none.dropped());
    RerankCut.Cut floored = RerankCut.cut(List.of(a, b), 4, 2, false);
    assertEquals(4, floored.results()[0].count(0), "the depth best stay");
    assertEquals(2, floored.results()[1].count(0), "b keeps its two best");
    assertEquals(1, floored.results()[1].id(0, 0));
    assertEquals(2, floored.results()[1].id(0, 1));
    assertEquals(2, floored.dropped());
  }

  /** Rows of k best-first distinct distances (some rows shorter: fewer accepted vectors). */
  private static SearchResult randomResult(Random random, int numQueries, int k, boolean largestFirst) {
    int[] ids = new int[numQueries * k];
    float[] distances = new float[numQueries * k];
    Arrays.fill(ids, -1);
    for (int q = 0; q < numQueries; q++) {
      int count = random.nextInt(4) == 0 ? random.nextInt(k + 1) : k;
      float[] row = new float[count];
      for (int i = 0; i < count; i++) {
        row[i] = random.nextFloat() * 100 + random.nextInt(1000); // distinct with overwhelming odds
      }
      Arrays.sort(row);
      for (int i = 0; i < count; i++) {
        distances[q * k + i] = largestFirst ? row[count - 1 - i] : row[i];
        ids[q * k + i] = random.nextInt(1 << 20);
      }
    }
    return new SearchResult(numQueries, k, ids, distances);
  }
}
