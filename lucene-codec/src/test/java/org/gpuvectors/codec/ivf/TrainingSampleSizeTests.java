package org.gpuvectors.codec.ivf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The expected counts are worked out by hand from the rule's documented bounds (see each comment). */
class TrainingSampleSizeTests {

  private static final long GB = 1L << 30;
  private static final int ITERATIONS = 15;

  @Test
  void largeSegmentGetsTheMaximumPerListWhereTheHeapHoldsIt() {
    // 100M x 128, 10,000 lists: 256 a list = 2,560,000 points (1.3 GB); a 31 GB heap's sixteenth holds 4,063,232
    // points of 512 bytes; cost bound 100M / 15 = 6.7M does not bind. The old fixed 128 MB gave 262,144.
    assertEquals(2_560_000, TrainingSampleSize.forLists(100_000_000, 10_000, 128, ITERATIONS, 31 * GB));
  }

  @Test
  void smallHeapBoundsTheSampleBelowTheMinimumPerList() {
    // the same segment on a 4 GB heap: 4 GB / 16 / 512 bytes = 524,288 points (52 a list); the heap wins
    assertEquals(524_288, TrainingSampleSize.forLists(100_000_000, 10_000, 128, ITERATIONS, 4 * GB));
  }

  @Test
  void typicalSegmentOnlyExceedsTheMinimumWhileKMeansCostsLessThanTheAssignment() {
    // 1M x 768, 1,000 lists: cost bound 1,000,000 / 15 = 66,666, between 64,000 and 256,000
    assertEquals(66_666, TrainingSampleSize.forLists(1_000_000, 1_000, 768, ITERATIONS, 31 * GB));
    // 10M x 128 with the default sqrt(n) = 3,162 lists: 666,666, between 202,368 and 809,472
    assertEquals(666_666, TrainingSampleSize.forLists(10_000_000, 3_162, 128, ITERATIONS, 31 * GB));
  }

  @Test
  void minimumPerListHoldsWhenTheCostBoundIsBelowIt() {
    // 10,000 vectors, 100 lists: cost bound 666 < 64 x 100 = 6,400
    assertEquals(6_400, TrainingSampleSize.forLists(10_000, 100, 128, ITERATIONS, 31 * GB));
  }

  @Test
  void neverMoreThanTheVectors() {
    // 64 x 100 = 6,400 wanted, 5,000 vectors
    assertEquals(5_000, TrainingSampleSize.forLists(5_000, 100, 128, ITERATIONS, 31 * GB));
  }

  @Test
  void noIterationsCountsAsOne() {
    // cost bound 1,000,000 / 1, clamped to 256 x 1,000
    assertEquals(256_000, TrainingSampleSize.forLists(1_000_000, 1_000, 128, 0, 31 * GB));
  }

  @Test
  void neverFewerThanTheLists() {
    // 16 MB heap / 16 / (4,096 x 4 bytes) = 64 points, but 100 lists need 100
    assertEquals(100, TrainingSampleSize.forLists(1_000_000, 100, 4_096, ITERATIONS, 16L << 20));
  }

  @Test
  void refusesListsOutsideTheVectors() {
    assertThrows(IllegalArgumentException.class, () -> TrainingSampleSize.forLists(10, 11, 8, ITERATIONS, GB));
    assertThrows(IllegalArgumentException.class, () -> TrainingSampleSize.forLists(10, 0, 8, ITERATIONS, GB));
  }

  @Test
  void codebooksGetSixtyFourPointsPerCodewordAtUsualDimensions() {
    // 256 x 64 = 16,384 points; the heap's sixteenth at 31 GB holds far more at 128 and 768 dims (two copies)
    assertEquals(16_384, TrainingSampleSize.forCodebooks(1_000_000, 256, 128, 31 * GB));
    assertEquals(16_384, TrainingSampleSize.forCodebooks(1_000_000, 256, 768, 31 * GB));
  }

  @Test
  void codebooksAreBoundedByTheHeapVectorsAndCodewords() {
    // 4,096 dims on a 1 GB heap: 1 GB / 16 / (2 x 16,384 bytes) = 2,048 points
    assertEquals(2_048, TrainingSampleSize.forCodebooks(1_000_000, 256, 4_096, GB));
    // 64 MB: 128 points, but 256 codewords need 256
    assertEquals(256, TrainingSampleSize.forCodebooks(1_000_000, 256, 4_096, 64L << 20));
    // fewer vectors than 16,384
    assertEquals(10_000, TrainingSampleSize.forCodebooks(10_000, 256, 128, 31 * GB));
    // fewer vectors than codewords: all of them
    assertEquals(100, TrainingSampleSize.forCodebooks(100, 256, 128, GB));
  }
}
