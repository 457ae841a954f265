package org.gpuvectors.codec.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The filtered graph search's rule ({@link GraphFilterPlan}): its arithmetic. What the widened walk it relies on buys,
 * and that a walk scores no more than the rule's bound, is measured in the GPU module against the kernel's algorithm
 * (cuda's GraphWalkUnderFilterTest).
 */
class GraphFilterPlanTest {
  private static final int K = 10;
  private static final int DEGREE = 32;

  @Test
  void widthGrowsWithTheFilterUpToSixteenTimes() {
    assertEquals(32, GraphFilterPlan.width(32, 10, 1000, 1000), "no filter: the search width");
    assertEquals(100, GraphFilterPlan.width(32, 100, 1000, 1000), "at least k");
    assertEquals(64, GraphFilterPlan.width(32, 10, 500, 1000), "half accepted: twice as wide");
    assertEquals(320, GraphFilterPlan.width(32, 10, 10_000, 100_000), "10 %: ten times");
    assertEquals(512, GraphFilterPlan.width(32, 10, 1_000, 100_000), "1 %: at most sixteen times");
    assertEquals(512, GraphFilterPlan.width(32, 10, 0, 100_000), "nothing accepted: sixteen times");
    assertEquals(300, GraphFilterPlan.width(32, 10, 10, 300), "at most the segment");
  }

  @Test
  void exactWhereTheWalkMayScoreAsManyAsAreAccepted() {
    // 60k vectors, degree 32, width 32, 100 entry points: 10 % -> width 320, up to 10,340 scored > 6,000
    // accepted: exact
    assertTrue(GraphFilterPlan.exact(32, 10, 32, 100, 6_000, 60_000));
    // 20 %: width 160, 5,220 scored < 12,000 accepted: the walk
    assertFalse(GraphFilterPlan.exact(32, 10, 32, 100, 12_000, 60_000));
    assertTrue(GraphFilterPlan.exact(32, 10, 32, 100, 0, 60_000), "nothing accepted: exact (and empty)");
    assertFalse(GraphFilterPlan.exact(32, 10, 32, 100, 1_000, 1_000), "no filter: never exact");
    // the boundary: accepted = the bound (16,384 expansions' scores + the entry points)
    assertTrue(GraphFilterPlan.exact(32, 10, 32, 0, 16_384, 10_000_000));
    assertFalse(GraphFilterPlan.exact(32, 10, 32, 0, 16_385, 10_000_000));
    assertTrue(GraphFilterPlan.exact(32, 10, 32, 1_000, 17_384, 10_000_000), "the entry points are scored too");
    assertFalse(GraphFilterPlan.exact(32, 10, 32, 1_000, 17_385, 10_000_000));
    assertEquals(16_384, GraphFilterPlan.walkScores(512, 32, 0, 10_000_000));
    assertEquals(17_408, GraphFilterPlan.walkScores(512, 32, 1_024, 10_000_000));
    assertEquals(1_000, GraphFilterPlan.walkScores(512, 32, 64, 1_000), "at most the segment");
    assertThrows(IllegalArgumentException.class, () -> GraphFilterPlan.width(0, 10, 5, 10));
    assertThrows(IllegalArgumentException.class, () -> GraphFilterPlan.width(32, 0, 5, 10));
    assertThrows(IllegalArgumentException.class, () -> GraphFilterPlan.width(32, 10, 11, 10));
    assertThrows(IllegalArgumentException.class, () -> GraphFilterPlan.exact(32, 10, 32, 1, -1, 10));
    assertThrows(IllegalArgumentException.class, () -> GraphFilterPlan.walkScores(0, 32, 1, 10));
    assertThrows(IllegalArgumentException.class, () -> GraphFilterPlan.walkScores(32, 0, 1, 10));
    assertThrows(IllegalArgumentException.class, () -> GraphFilterPlan.walkScores(32, 32, -1, 10));
  }
}
