package org.gpuvectors.cuda.ivf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** {@link IvfLists} validation (no GPU needed): each malformed part is refused with a message naming it. */
class IvfListsTest {

  // 3 lists of 2-d centroids over 5 vectors; list 1 is empty
  private static final float[] CENTROIDS = {0, 0, 1, 1, 2, 2};
  private static final int[] OFFSETS = {0, 2, 2, 5};
  private static final int[] ORDS = {4, 0, 1, 3, 2};

  @Test
  void wellFormedListsAreAccepted() {
    IvfLists lists = new IvfLists(3, CENTROIDS, OFFSETS, ORDS);
    assertEquals(5, lists.size());
    assertEquals(2, lists.dims());
    IvfLists empty = new IvfLists(1, new float[] {1, 2, 3}, new int[] {0, 0}, new int[0]);
    assertEquals(0, empty.size());
    assertEquals(3, empty.dims());
  }

  /** The small-batch scan's row bound: the sum of the p largest lists, for every p. */
  @Test
  void largestListsPrefixSumsTheLargestFirst() {
    assertArrayEquals(new long[] {0, 3, 5, 5}, new IvfLists(3, CENTROIDS, OFFSETS, ORDS).largestListsPrefix());
    assertArrayEquals(new long[] {0, 0}, new IvfLists(1, new float[] {1, 2, 3}, new int[] {0, 0}, new int[0])
        .largestListsPrefix());
  }

  @Test
  void malformedListsAreRefused() {
    refused("nlist must be >= 1", () -> new IvfLists(0, new float[0], new int[] {0}, new int[0]));
    refused("centroids must hold nlist * dims", () -> new IvfLists(3, new float[] {0, 0, 1, 1, 2}, OFFSETS, ORDS));
    refused("centroids must hold nlist * dims", () -> new IvfLists(3, new float[] {0, 1}, OFFSETS, ORDS));
    refused("offsets must have nlist + 1", () -> new IvfLists(3, CENTROIDS, new int[] {0, 2, 5}, ORDS));
    refused("offsets must run from 0", () -> new IvfLists(3, CENTROIDS, new int[] {1, 2, 2, 5}, ORDS));
    refused("offsets must run from 0", () -> new IvfLists(3, CENTROIDS, new int[] {0, 2, 2, 4}, ORDS));
    refused("offsets must not decrease", () -> new IvfLists(3, CENTROIDS, new int[] {0, 3, 2, 5}, ORDS));
    refused("is not an ordinal", () -> new IvfLists(3, CENTROIDS, OFFSETS, new int[] {4, 0, 1, 5, 2}));
    refused("is not an ordinal", () -> new IvfLists(3, CENTROIDS, OFFSETS, new int[] {4, 0, -1, 3, 2}));
    refused("appears twice", () -> new IvfLists(3, CENTROIDS, OFFSETS, new int[] {4, 0, 1, 3, 0}));
    assertThrows(NullPointerException.class, () -> new IvfLists(3, null, OFFSETS, ORDS));
    assertThrows(NullPointerException.class, () -> new IvfLists(3, CENTROIDS, null, ORDS));
    assertThrows(NullPointerException.class, () -> new IvfLists(3, CENTROIDS, OFFSETS, null));
  }

  private static void refused(String message, Executable make) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, make);
    assertTrue(e.getMessage().contains(message), e.getMessage());
  }
}
