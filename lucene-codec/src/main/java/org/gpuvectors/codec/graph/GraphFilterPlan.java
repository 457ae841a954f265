package org.gpuvectors.codec.graph;

/**
 * How a graph search runs under a filter that accepts {@code accepted} of a segment's {@code size} vectors: one rule
 * for the GPU search (the codec asks the device for the width or the exact search this plan chose) and the CPU
 * (the codec's beam search), so that both paths search the same way. It is search policy, so it lives in the codec;
 * the GPU module only executes the search it is given.
 *
 * <ul>
 *   <li>The beam is widened by {@code size / accepted} (at most {@link #MAX_WIDENING} times), so that about as many
 *       accepted vectors enter it as without a filter ({@link #width}).
 *   <li>When the accepted vectors are no more than the widened walk may score ({@link #walkScores}), the
 *       search is exact over the accepted vectors instead ({@link #exact}): it scores fewer vectors, and its recall
 *       is 1 where the walk's collapses (a walk through a graph mostly of rejected nodes finds few accepted ones).
 *       On the GPU that is the flat search over the graph index's own vectors with the filter's mask.
 * </ul>
 */
public final class GraphFilterPlan {
  /** A filter widens the beam by at most this factor. */
  public static final int MAX_WIDENING = 16;

  /**
   * The widest beam either path walks: the GPU kernel's widest (its shared-memory beam; a test in the codec holds
   * the two equal), on the CPU too, so that both paths walk the same width.
   */
  public static final int MAX_WIDTH = 2048;

  private GraphFilterPlan() {}

  /**
   * The beam width of a search for k over {@code accepted} of {@code size} vectors: {@code max(searchWidth, k)},
   * times {@code size / accepted} under a filter (at most {@link #MAX_WIDENING}), at most {@link
   * #MAX_WIDTH} and {@code size}, at least k.
   */
  public static int width(int searchWidth, int k, long accepted, int size) {
    check(searchWidth, k, accepted, size);
    double width = Math.max(searchWidth, k);
    if (accepted < size) {
      width = Math.min(width * MAX_WIDENING, width * size / Math.max(1, accepted));
    }
    // at most the kernel's widest beam, on the CPU too, so that both paths walk the same width (k above it: the
    // GPU cannot serve the search, and the CPU walks a beam of k)
    width = Math.min(width, MAX_WIDTH);
    return (int) Math.max(1, Math.min(size, Math.max(k, Math.ceil(width))));
  }

  /**
   * The vectors a walk of this width scores over a graph of this degree with {@code seeds} entry points, at most:
   * every entry point once (the walk starts from all of them), then each of about {@code width} expanded nodes
   * scores its unvisited neighbours (the codec checks this against a collector's visit limit). The reference search
   * scores 0.3-1.0 times the expansion part unfiltered at widths 32 / 64, and 0.05-0.35 times in the widened walks
   * of selective filters (degree 32; clustered, Gaussian and FashionLike data of 4k-40k vectors: the wider the beam,
   * the more neighbours are already visited). The bound, not the mean, decides {@link #exact}: it is where Lucene
   * would end a filtered walk at its visit limit (the accepted count) and search exactly instead, so the codec, the
   * GPU and Lucene draw the line at the same place; and on the GPU a walk of width 512 (about 500 dependent
   * iterations) takes far longer than the exact search (one GEMM pass over the segment). The entry points count:
   * a graph keeps up to a few thousand of them (one per cluster of small segments), as many as a walk's expansions.
   */
  public static long walkScores(int width, int degree, int seeds, int size) {
    if (width < 1 || degree < 1 || seeds < 0 || size < 0) {
      throw new IllegalArgumentException("width and degree must be >= 1, seeds and size >= 0: width=" + width
          + " degree=" + degree + " seeds=" + seeds + " size=" + size);
    }
    return Math.min(size, (long) width * degree + seeds);
  }

  /**
   * Whether a search for k over {@code accepted} of {@code size} vectors should be exact over the accepted vectors:
   * under a filter ({@code accepted < size}), when they are no more than the widened walk would score ({@link
   * #walkScores}, with the graph's {@code seeds} entry points).
   */
  public static boolean exact(int searchWidth, int k, int degree, int seeds, long accepted, int size) {
    check(searchWidth, k, accepted, size);
    return accepted < size && accepted <= walkScores(width(searchWidth, k, accepted, size), degree, seeds, size);
  }

  private static void check(int searchWidth, int k, long accepted, int size) {
    if (searchWidth < 1 || k < 1 || size < 0 || accepted < 0 || accepted > size) {
      throw new IllegalArgumentException("need searchWidth >= 1, k >= 1, 0 <= accepted <= size: searchWidth="
          + searchWidth + " k=" + k + " accepted=" + accepted + " size=" + size);
    }
  }
}
