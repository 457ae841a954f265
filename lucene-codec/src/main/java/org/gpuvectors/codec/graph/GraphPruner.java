package org.gpuvectors.codec.graph;

import java.util.Arrays;

/**
 * Steps (2) and (3) of a graph build, CAGRA's graph optimisation (Ootomo et al., "CAGRA: Highly
 * Parallel Graph Construction and Approximate Nearest Neighbor Search for GPUs", 2023), on ranks
 * only (no distance is recomputed):
 *
 * <ol>
 *   <li>{@link #prune}: rank-based reordering. In vector i's k-NN list, the edge i -> j at rank r is
 *       <i>detourable</i> via k when i -> k has a rank s &lt; r and j is in k's list at a rank t &lt;
 *       r (max(s, t) &lt; r: a two-hop path through nearer edges). The {@code degree} edges with the
 *       fewest detours are kept, ties by rank, in that order: the graph keeps its diverse edges and
 *       drops those that a search reaches anyway through a shorter edge.
 *   <li>{@link #addReverseLinks}: each kept edge i -> j gives j a reverse candidate i; a vector's row
 *       is the first half of its pruned edges, then its reverse edges (by the rank j had in i's pruned
 *       row, then by i), then the rest of its pruned edges, without duplicates, to {@code degree}.
 *       Reverse edges make vectors that few others point to reachable.
 * </ol>
 */
public final class GraphPruner {

  private GraphPruner() {}

  /**
   * Keeps {@code degree} of each row's {@code k} edges (the k-NN graph, {@code n * k}, rows nearest
   * first, -1 padding at the end), fewest detours first (ties: lower rank).
   *
   * @return {@code n * degree} ordinals, -1 padded where a row had fewer edges
   */
  public static int[] prune(int[] knn, int n, int k, int degree) {
    if (degree > k) {
      throw new IllegalArgumentException("degree " + degree + " > k-NN degree " + k);
    }
    int[] out = new int[n * degree];
    // rankOf[j] = rank of j in the current row + 1 (0: not in the row); reset after each row
    int[] rankOf = new int[n];
    int[] detours = new int[k];
    Integer[] order = new Integer[k];
    for (int i = 0; i < n; i++) {
      int rowStart = i * k;
      int size = rowSize(knn, rowStart, k);
      for (int r = 0; r < size; r++) {
        rankOf[knn[rowStart + r]] = r + 1;
      }
      Arrays.fill(detours, 0);
      for (int s = 0; s < size; s++) {
        int via = knn[rowStart + s];
        int viaStart = via * k;
        for (int t = 0; t < k; t++) {
          int j = knn[viaStart + t];
          if (j < 0) {
            break;
          }
          int r = rankOf[j] - 1;
          if (r >= 0 && Math.max(s, t) < r) {
            detours[r]++;
          }
        }
      }
      for (int r = 0; r < size; r++) {
        order[r] = r;
      }
      Arrays.sort(order, 0, size, (a, b) -> detours[a] != detours[b] ? Integer.compare(detours[a], detours[b]) : Integer.compare(a, b));
      int kept = Math.min(size, degree);
      for (int p = 0; p < kept; p++) {
        out[i * degree + p] = knn[rowStart + order[p]];
      }
      Arrays.fill(out, i * degree + kept, (i + 1) * degree, -1);
      for (int r = 0; r < size; r++) {
        rankOf[knn[rowStart + r]] = 0;
      }
    }
    return out;
  }

  /**
   * Merges each row of the pruned graph ({@code n * degree}) with its reverse edges, as the class
   * comment says.
   *
   * @return {@code n * degree} ordinals, no self loops or duplicates; -1 padding only where a vector
   *     has fewer than {@code degree} distinct neighbours among forward and reverse edges
   */
  public static int[] addReverseLinks(int[] pruned, int n, int degree) {
    // reverse edges of j: sources i ordered by (position of j in row i, i): a counting sort by position
    int[] reverseCount = new int[n];
    int[] reverse = new int[n * degree];
    Arrays.fill(reverse, -1);
    for (int p = 0; p < degree; p++) {
      for (int i = 0; i < n; i++) {
        int j = pruned[i * degree + p];
        if (j >= 0 && reverseCount[j] < degree) {
          reverse[j * degree + reverseCount[j]++] = i;
        }
      }
    }
    int[] out = new int[n * degree];
    int half = degree / 2;
    for (int i = 0; i < n; i++) {
      int start = i * degree;
      int size = 0;
      for (int p = 0; p < half; p++) {
        size = append(out, start, size, pruned[start + p], i);
      }
      for (int p = 0; p < reverseCount[i] && size < degree; p++) {
        size = append(out, start, size, reverse[start + p], i);
      }
      for (int p = half; p < degree && size < degree; p++) {
        size = append(out, start, size, pruned[start + p], i);
      }
      Arrays.fill(out, start + size, start + degree, -1);
    }
    return out;
  }

  /** Appends {@code id} to the row unless it is -1, the row's own vector, or already there. */
  private static int append(int[] out, int start, int size, int id, int self) {
    if (id < 0 || id == self) {
      return size;
    }
    for (int p = 0; p < size; p++) {
      if (out[start + p] == id) {
        return size;
      }
    }
    out[start + size] = id;
    return size + 1;
  }

  private static int rowSize(int[] graph, int start, int width) {
    int size = 0;
    while (size < width && graph[start + size] >= 0) {
      size++;
    }
    return size;
  }
}
