package org.gpuvectors.cuda;

import org.gpuvectors.cuda.graph.GpuGraphIndex;

/**
 * The codec's rule for a graph search under a filter (its GraphFilterPlan), restated for the GPU module's tests,
 * which cannot see the codec: the beam widened by {@code size / accepted} (at most sixteen times, at most the
 * kernel's widest beam and the segment, at least k), and the exact search when the accepted vectors are no more than
 * such a walk may score ({@code width x degree + entry points}). The codec's own test holds the rule's arithmetic.
 */
public final class FilterWidening {
  private FilterWidening() {}

  public static int width(int searchWidth, int k, long accepted, int size) {
    double width = Math.max(searchWidth, k);
    if (accepted < size) {
      width = Math.min(width * 16, width * size / Math.max(1, accepted));
    }
    width = Math.min(width, GpuGraphIndex.MAX_WIDTH);
    return (int) Math.max(1, Math.min(size, Math.max(k, Math.ceil(width))));
  }

  public static long walkScores(int width, int degree, int seeds, int size) {
    return Math.min(size, (long) width * degree + seeds);
  }

  public static boolean exact(int searchWidth, int k, int degree, int seeds, long accepted, int size) {
    return accepted < size && accepted <= walkScores(width(searchWidth, k, accepted, size), degree, seeds, size);
  }
}
