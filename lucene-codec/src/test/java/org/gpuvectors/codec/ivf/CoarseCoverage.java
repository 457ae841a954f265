package org.gpuvectors.codec.ivf;

import java.io.IOException;
import java.util.Arrays;
import java.util.stream.IntStream;

/**
 * The coarse step's share of a recall: for queries whose true neighbours are known, the share of them whose list is
 * among the lists a search probes (the query's {@code nprobe} nearest centroids, ranked as the segment's own search
 * ranks them: {@link IvfField#nearestLists}). A neighbour in a list that is not probed is lost whatever the list scan
 * and the re-rank do afterwards, so this is the recall an exact scan of the probed lists would reach, and what a
 * search's recall falls short of it is the scan's (PQ ranking and re-rank depth). Computed on the host from the
 * segment's centroids and lists, once per query for every nprobe.
 *
 * <p>Ties: a query's neighbours may be more than it wants (every vector at the true 10th distance is a right answer);
 * a query counts {@code min(wanted, neighbours in probed lists)}, as recall counts any hit at most at the 10th
 * distance.
 */
public final class CoarseCoverage {

  /** Per query, the rank among its centroids (0: nearest) of each neighbour's list, ascending. */
  private final int[][] listRanks;
  /** Per query, the right answers a search can return (k, or fewer in an index of fewer vectors). */
  private final int[] wanted;

  private CoarseCoverage(int[][] listRanks, int[] wanted) {
    this.listRanks = listRanks;
    this.wanted = wanted;
  }

  /**
   * @param lists the segment's lists
   * @param queries in the float view the lists were built in
   * @param neighbours per query the ordinals of its true neighbours (ties included)
   * @param wanted per query the right answers a search can return (recall's denominator)
   */
  public static CoarseCoverage of(IvfField lists, float[][] queries, int[][] neighbours, int[] wanted)
      throws IOException {
    if (neighbours.length != queries.length || wanted.length != queries.length) {
      throw new IllegalArgumentException("one row of neighbours and one count per query");
    }
    int[] listOf = listOfOrdinals(lists);
    int nlist = lists.nlist();
    int[][] listRanks = new int[queries.length][];
    IntStream.range(0, queries.length).parallel().forEach(q -> {
      int[] order = lists.nearestLists(queries[q], nlist);
      int[] rankOfList = new int[nlist];
      for (int r = 0; r < order.length; r++) {
        rankOfList[order[r]] = r;
      }
      int[] ranks = new int[neighbours[q].length];
      for (int i = 0; i < ranks.length; i++) {
        ranks[i] = rankOfList[listOf[neighbours[q][i]]];
      }
      Arrays.sort(ranks);
      listRanks[q] = ranks;
    });
    return new CoarseCoverage(listRanks, wanted.clone());
  }

  /**
   * From ranks computed elsewhere (a quantizer trained outside a segment): per query the rank among its centroids
   * (0: nearest) of each true neighbour's list, and the right answers it wants.
   */
  public static CoarseCoverage ofListRanks(int[][] listRanks, int[] wanted) {
    if (wanted.length != listRanks.length) {
      throw new IllegalArgumentException("one count per query");
    }
    int[][] sorted = new int[listRanks.length][];
    for (int q = 0; q < listRanks.length; q++) {
      sorted[q] = listRanks[q].clone();
      Arrays.sort(sorted[q]); // at() stops at the first rank past nprobe
    }
    return new CoarseCoverage(sorted, wanted.clone());
  }

  /** The list of every ordinal, from the lists' offsets and ordinals in list order (read from the file). */
  static int[] listOfOrdinals(IvfField lists) throws IOException {
    int[] offsets = lists.listOffsets();
    int[] ords = lists.ordinalsInListOrder();
    int[] listOf = new int[ords.length];
    for (int l = 0; l + 1 < offsets.length; l++) {
      for (int p = offsets[l]; p < offsets[l + 1]; p++) {
        listOf[ords[p]] = l;
      }
    }
    return listOf;
  }

  /** Queries known. */
  public int queries() {
    return listRanks.length;
  }

  /** The share over all queries at {@code nprobe} lists probed. */
  public double at(int nprobe) {
    return at(nprobe, queries());
  }

  /** The share over the first {@code count} queries (those a row searched) at {@code nprobe} lists probed. */
  public double at(int nprobe, int count) {
    long covered = 0;
    long expected = 0;
    for (int q = 0; q < count; q++) {
      int inProbed = 0;
      for (int rank : listRanks[q]) {
        if (rank >= nprobe) {
          break; // ascending
        }
        inProbed++;
      }
      covered += Math.min(wanted[q], inProbed);
      expected += wanted[q];
    }
    return expected == 0 ? 1 : covered / (double) expected;
  }
}
