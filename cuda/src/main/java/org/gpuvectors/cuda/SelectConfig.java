package org.gpuvectors.cuda;


/**
 * The select part of {@link GpuConfig}: the k-selection's choices that tests and benchmarks move to reach a path
 * ({@code KSelect}). Production takes {@link #defaults()}; {@code withX} returns a copy with one field changed.
 *
 * @param radixBlockMaxLen the longest row (or typical row, {@code SelectParams#typicalLen}) that the radix selection
 *     selects by one block with the row in shared memory ({@code KSelect#RADIX_BLOCK_KERNEL}) rather than by its
 *     passes over the whole device; also the longest row that takes the radix merge and the flat index's scored
 *     small search. 0: never (tests and benchmarks take the passes that way). Why 40,000: the passes meet in global
 *     memory, a fixed cost whatever the row's length, which the one block beats on short rows; at about 40k values
 *     the two cost the same (and the row takes 160 KB of the block's shared memory). At least 0.
 * @param radixBlockMaxSharedKeys for tests: the most keys the one-block radix selection holds in shared memory (0: as
 *     many as the device allows, the default), which forces rows longer than that to read the rest from global memory
 *     on each pass (the path of a row much longer than its typical length). At least 0.
 */
public record SelectConfig(int radixBlockMaxLen, int radixBlockMaxSharedKeys) {

  private static final SelectConfig DEFAULTS = new SelectConfig(40_000, 0);

  public SelectConfig {
    if (radixBlockMaxLen < 0) {
      throw new IllegalArgumentException("radixBlockMaxLen must be at least 0 but was [" + radixBlockMaxLen + "]");
    }
    if (radixBlockMaxSharedKeys < 0) {
      throw new IllegalArgumentException(
          "radixBlockMaxSharedKeys must be at least 0 (0: the device's limit) but was [" + radixBlockMaxSharedKeys
              + "]");
    }
  }

  public static SelectConfig defaults() {
    return DEFAULTS;
  }

  public SelectConfig withRadixBlockMaxLen(int value) {
    return new SelectConfig(value, radixBlockMaxSharedKeys);
  }

  public SelectConfig withRadixBlockMaxSharedKeys(int value) {
    return new SelectConfig(radixBlockMaxLen, value);
  }
}
