package org.gpuvectors.cuda;


/**
 * How hard a search of one {@link DeviceIndex} looks, apart from what the index was built with (as cuVS keeps
 * {@code CagraSearchParams} apart from {@code CagraIndexParams}): one record per kind of index, each holding only
 * what that kind reads. The index checks the kind it gets ({@link DeviceIndex#checkSearch}) before a pass starts,
 * so a pass never guesses what a number means.
 *
 * <ul>
 *   <li>{@link Flat}: a flat index's exact search, which has no knob;
 *   <li>{@link Ivf}: the lists an IVF index ({@code GpuIvfFlatIndex}, {@code GpuIvfPqIndex}) probes per query;
 *   <li>{@link Graph}: the width of a graph index's ({@code GpuGraphIndex}) walk;
 *   <li>{@link Exact}: a graph index's exact search of the accepted vectors instead of a walk, for filters so
 *       selective that a walk would score more vectors than they hold (the codec's filter rule decides).
 * </ul>
 */
public sealed interface SearchParams {

  /** A flat index's search. */
  SearchParams FLAT = new Flat();
  /** A graph index's exact search of the accepted vectors. */
  SearchParams EXACT = new Exact();

  /**
   * Parameters that search at least as much as both these and {@code other}, of the same kind: a group that merges
   * several searches of one index runs them all at the widest, which loses none of the hits any of them asked for.
   */
  SearchParams widest(SearchParams other);

  /** A flat index's exact search: nothing to choose. */
  record Flat() implements SearchParams {
    @Override
    public SearchParams widest(SearchParams other) {
      return sameKind(this, other);
    }
  }

  /**
   * An IVF search probing the {@code nprobe} lists whose centroids are nearest each query ({@code nprobe} >= 1; the
   * index caps it at its nlist, and refuses more than its coarse step can select).
   */
  record Ivf(int nprobe) implements SearchParams {
    public Ivf {
      if (nprobe < 1) {
        throw new IllegalArgumentException("nprobe must be >= 1: " + nprobe);
      }
    }

    @Override
    public SearchParams widest(SearchParams other) {
      return nprobe >= sameKind(this, other).nprobe ? this : (Ivf) other;
    }
  }

  /**
   * A graph walk whose list keeps max({@code width}, k) nodes ({@code width} >= 1; the index refuses a list past its
   * kernel's, {@code GpuGraphIndex#MAX_WIDTH}).
   */
  record Graph(int width) implements SearchParams {
    public Graph {
      if (width < 1) {
        throw new IllegalArgumentException("search width must be >= 1: " + width);
      }
    }

    @Override
    public SearchParams widest(SearchParams other) {
      return width >= sameKind(this, other).width ? this : (Graph) other;
    }
  }

  /** A graph index's exact search of the accepted vectors (over the vectors the walk reads) instead of a walk. */
  record Exact() implements SearchParams {
    @Override
    public SearchParams widest(SearchParams other) {
      return sameKind(this, other);
    }
  }

  /** {@code other} as {@code params}' kind, or an {@link IllegalArgumentException} naming both. */
  @SuppressWarnings("unchecked")
  private static <P extends SearchParams> P sameKind(P params, SearchParams other) {
    if (other == null || other.getClass() != params.getClass()) {
      throw new IllegalArgumentException("cannot merge " + params + " with " + other);
    }
    return (P) other;
  }

}
