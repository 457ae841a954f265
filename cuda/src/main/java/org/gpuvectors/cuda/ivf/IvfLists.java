package org.gpuvectors.cuda.ivf;

import java.util.Arrays;
import java.util.Objects;

/**
 * The inverted lists of an IVF index, as built on the host (the codec's k-means and assignment): what
 * {@link GpuIvfFlatIndex#upload} puts on the GPU.
 *
 * <ul>
 *   <li>{@code centroids}: {@code nlist} centroids of dims floats each, row-major (the coarse
 *       quantizer; dims = {@code centroids.length / nlist}).
 *   <li>{@code offsets}: {@code nlist + 1} entries; list l holds the positions {@code [offsets[l],
 *       offsets[l + 1])} (empty lists allowed).
 *   <li>{@code ords}: the vector ordinal at each position, {@code 0 .. n - 1} each exactly once
 *       ({@code n = ords.length}): vectors are stored in list order, so a list is one contiguous
 *       range, and searches report ordinals.
 * </ul>
 * The arrays are not copied: do not change them while an upload reads them.
 */
public record IvfLists(int nlist, float[] centroids, int[] offsets, int[] ords) {

  public IvfLists {
    Objects.requireNonNull(centroids, "centroids");
    Objects.requireNonNull(offsets, "offsets");
    Objects.requireNonNull(ords, "ords");
    if (nlist < 1) {
      throw new IllegalArgumentException("nlist must be >= 1: " + nlist);
    }
    if (centroids.length < nlist || centroids.length % nlist != 0) {
      throw new IllegalArgumentException("centroids must hold nlist * dims floats (dims >= 1): " + centroids.length
          + " floats for nlist " + nlist);
    }
    if (offsets.length != nlist + 1) {
      throw new IllegalArgumentException("offsets must have nlist + 1 = " + (nlist + 1) + " entries, got "
          + offsets.length);
    }
    if (offsets[0] != 0 || offsets[nlist] != ords.length) {
      throw new IllegalArgumentException("offsets must run from 0 to ords.length = " + ords.length + ": got "
          + offsets[0] + " .. " + offsets[nlist]);
    }
    for (int l = 0; l < nlist; l++) {
      if (offsets[l + 1] < offsets[l]) {
        throw new IllegalArgumentException("offsets must not decrease: offsets[" + (l + 1) + "] = " + offsets[l + 1]
            + " < offsets[" + l + "] = " + offsets[l]);
      }
    }
    boolean[] seen = new boolean[ords.length];
    for (int p = 0; p < ords.length; p++) {
      int ord = ords[p];
      if (ord < 0 || ord >= ords.length) {
        throw new IllegalArgumentException("ords[" + p + "] = " + ord + " is not an ordinal in [0, " + ords.length
            + ")");
      }
      if (seen[ord]) {
        throw new IllegalArgumentException("ordinal " + ord + " appears twice (ords[" + p + "])");
      }
      seen[ord] = true;
    }
  }

  /** Vectors in the lists (n). */
  public int size() {
    return ords.length;
  }

  /** Floats per centroid (and vector). */
  public int dims() {
    return centroids.length / nlist;
  }

  /**
   * For p = 0 .. nlist, the sum of the p largest list sizes: the most vectors p probed lists can hold (a bound on a
   * query's candidates, for the small-batch scan's rows).
   */
  public long[] largestListsPrefix() {
    return largestListsPrefix(offsets);
  }

  /** {@link #largestListsPrefix()} of the lists at {@code offsets} ({@code nlist + 1} entries, as this record's). */
  public static long[] largestListsPrefix(int[] offsets) {
    int nlist = offsets.length - 1;
    int[] sizes = new int[nlist];
    for (int l = 0; l < nlist; l++) {
      sizes[l] = offsets[l + 1] - offsets[l];
    }
    Arrays.sort(sizes);
    long[] prefix = new long[nlist + 1];
    for (int p = 1; p <= nlist; p++) {
      prefix[p] = prefix[p - 1] + sizes[nlist - p];
    }
    return prefix;
  }
}
