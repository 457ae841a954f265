package org.gpuvectors.cuda.pass;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The check that a table's members' results lie one after another ({@link BatchSearch#membersOut}); no GPU. */
class BatchSearchLayoutTest {

  @Test
  void membersOutIsTheFirstMembersStart() {
    int[] firstRow = {-1, 0, -1, 2, 5}; // members 1, 3, 4 with 2, 3 and some rows; groups 0 and 2 not in the table
    long[] outAt = {300, 40, 500, 60, 90};
    assertEquals(40, BatchSearch.membersOut(firstRow, outAt, 10));
  }

  @Test
  void membersOutRefusesAGap() {
    int[] firstRow = {0, 2};
    long[] outAt = {0, 30}; // member 1 should start 2 rows of 10 after member 0
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> BatchSearch.membersOut(firstRow, outAt, 10));
    assertEquals("the members' results are not laid out one after another (placeResults)", e.getMessage());
  }

  @Test
  void noMembersNoStart() {
    assertEquals(-1, BatchSearch.membersOut(new int[] {-1, -1}, new long[] {0, 10}, 10));
  }
}
