package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** Views of a pass's result arrays: rows, counts and slices read the right elements, nothing copied. */
class SearchResultTest {

  /** Two groups in one pass's arrays: 2 queries x k 3, then 3 queries x k 2; -1 marks unfilled slots. */
  private static final int[] IDS = {5, 6, -1, 7, 8, 9, /* group 2 */ 1, 2, 3, -1, -1, -1};
  private static final float[] DISTANCES = {.5f, .6f, Float.POSITIVE_INFINITY, .7f, .8f, .9f, .1f, .2f, .3f,
      Float.POSITIVE_INFINITY, Float.POSITIVE_INFINITY, Float.POSITIVE_INFINITY};

  @Test
  void groupsAreViewsIntoThePassArrays() {
    SearchResult first = new SearchResult(2, 3, IDS, DISTANCES, 0, 3);
    SearchResult second = new SearchResult(3, 2, IDS, DISTANCES, 6, 2);
    assertEquals(2, first.count(0));
    assertEquals(3, first.count(1));
    assertEquals(7, first.id(1, 0));
    assertEquals(.9f, first.distance(1, 2));
    assertEquals(2, second.count(0));
    assertEquals(1, second.count(1));
    assertEquals(0, second.count(2));
    assertEquals(3, second.id(1, 0));
    assertEquals(.3f, second.distance(1, 0));
    assertEquals(-1, second.id(2, 1));
  }

  @Test
  void slicesCutRowsAndEntries() {
    SearchResult first = new SearchResult(2, 3, IDS, DISTANCES, 0, 3);
    assertSame(first, first.slice(0, 2, 3));
    SearchResult row1 = first.slice(1, 1, 2);
    assertEquals(1, row1.numQueries());
    assertEquals(2, row1.k());
    assertEquals(2, row1.count(0));
    assertEquals(8, row1.id(0, 1));
    assertEquals(.8f, row1.distance(0, 1));
    SearchResult row0 = first.slice(0, 1, 1);
    assertEquals(1, row0.count(0));
    assertEquals(5, row0.id(0, 0));
    SearchResult again = first.slice(0, 2, 2).slice(1, 1, 1); // a slice of a slice
    assertEquals(7, again.id(0, 0));
    assertEquals(1, again.count(0));
    SearchResult second = new SearchResult(3, 2, IDS, DISTANCES, 6, 2);
    assertEquals(1, second.slice(1, 2, 2).count(0));
    assertEquals(0, second.slice(1, 2, 2).count(1));
  }

  @Test
  void badViewsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> new SearchResult(3, 3, IDS, DISTANCES, 6, 3)); // past the end
    assertThrows(IllegalArgumentException.class, () -> new SearchResult(2, 3, IDS, DISTANCES, 0, 2)); // stride < k
    assertThrows(IllegalArgumentException.class, () -> new SearchResult(1, 1, IDS, DISTANCES, -1, 1));
    SearchResult first = new SearchResult(2, 3, IDS, DISTANCES, 0, 3);
    assertThrows(IllegalArgumentException.class, () -> first.slice(1, 2, 1));
    assertThrows(IllegalArgumentException.class, () -> first.slice(0, 1, 4));
  }
}
