package org.gpuvectors.codec.graph;

import java.util.Arrays;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.stream.IntStream;

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
 *
 * Both run in parallel on the common fork-join pool, by ranges of rows; every row's result depends on
 * the input alone, so the output is the same with any number of threads.
 */
public final class GraphPruner {

  /** Rows per parallel task of the reverse links (small enough to balance, large enough to amortise a task). */
  static final int ROWS = 1024;
  /** Pruning tasks per thread of the common pool (each allocates a rank table of n: few, but enough to balance). */
  static final int TASKS_PER_THREAD = 4;

  private GraphPruner() {}

  /**
   * Keeps {@code degree} of each row's {@code k} edges (the k-NN graph, {@code n * k}, rows nearest
   * first, -1 padding at the end), fewest detours first (ties: lower rank).
   *
   * @return {@code n * degree} ordinals, -1 padded where a row had fewer edges
   */
  public static int[] prune(int[] knn, int n, int k, int degree) {
    return prune(knn, n, k, degree, true);
  }

  /** {@link #prune}, on the common pool when {@code parallel}, else on this thread (for tests). */
  static int[] prune(int[] knn, int n, int k, int degree, boolean parallel) {
    if (degree > k) {
      throw new IllegalArgumentException("degree " + degree + " > k-NN degree " + k);
    }
    if (knn.length != (long) n * k) {
      throw new IllegalArgumentException("k-NN graph of " + knn.length + " ordinals, expected n * k = " + n + " * " + k);
    }
    int[] out = new int[n * degree];
    // a few contiguous ranges of rows per thread: each task holds a rank table of n (see pruneRow)
    int tasks = parallel ? Math.min((n + ROWS - 1) / ROWS, TASKS_PER_THREAD * ForkJoinPool.getCommonPoolParallelism()) : 1;
    // tables handed from a finished task to the next: no more of them than tasks running at once
    Queue<short[]> tables = new ConcurrentLinkedQueue<>();
    IntStream ranges = IntStream.range(0, tasks);
    (parallel ? ranges.parallel() : ranges).forEach(task -> {
      short[] rankOf = tables.poll();
      if (rankOf == null) {
        rankOf = new short[n];
      }
      int[] keys = new int[k + 1];
      for (int i = (int) ((long) task * n / tasks), end = (int) ((long) (task + 1) * n / tasks); i < end; i++) {
        pruneRow(knn, k, degree, i, rankOf, keys, out);
      }
      tables.add(rankOf); // all zero again: every row clears its entries
    });
    return out;
  }

  /**
   * Row {@code i}: counts each edge's detours, then keeps the {@code degree} with the fewest (ties:
   * lower rank). {@code rankOf} (of n, zero outside the row) holds rank + 1 of the row's ordinals
   * while the row is pruned: a short, so that the table of a million vectors stays within a core's
   * L2 cache (int: 10 % slower there; an L1-sized hash table was 3 times slower for its unpredictable
   * probes). {@code keys} is scratch of k + 1: keys[r + 1] = detours * 2^9 + r (a detour count is
   * below its rank, ranks below {@link GraphBuilder#MAX_BUILD_DEGREE} = 2^8: keys never overlap);
   * keys[0] collects the lookups of ordinals outside the row, so the loop has no branch.
   */
  private static void pruneRow(int[] knn, int k, int degree, int i, short[] rankOf, int[] keys, int[] out) {
    int rowStart = i * k;
    int size = rowSize(knn, rowStart, k);
    for (int r = 0; r < size; r++) {
      rankOf[knn[rowStart + r]] = (short) (r + 1);
      keys[r + 1] = r;
    }
    // only vias at rank s < size - 1 can detour anything (r > s), and only their first size - 1 edges (t < r)
    for (int s = 0; s < size - 1; s++) {
      int viaStart = knn[rowStart + s] * k;
      int viaSize = Math.min(size - 1, rowSize(knn, viaStart, size - 1));
      for (int t = 0; t < viaSize; t++) {
        int r1 = rankOf[knn[viaStart + t]];
        int r = r1 - 1; // -1 outside the row
        keys[r1] += (((s - r) & (t - r)) >>> 31) << 9; // one detour more when r > s and r > t
      }
    }
    for (int r = 0; r < size; r++) {
      rankOf[knn[rowStart + r]] = 0;
    }
    Arrays.sort(keys, 1, size + 1);
    int kept = Math.min(size, degree);
    int outStart = i * degree;
    for (int p = 0; p < kept; p++) {
      out[outStart + p] = knn[rowStart + (keys[p + 1] & 0x1FF)];
    }
    Arrays.fill(out, outStart + kept, outStart + degree, -1);
  }

  /**
   * Merges each row of the pruned graph ({@code n * degree}) with its reverse edges, as the class
   * comment says.
   *
   * @return {@code n * degree} ordinals, no self loops or duplicates; -1 padding only where a vector
   *     has fewer than {@code degree} distinct neighbours among forward and reverse edges
   */
  public static int[] addReverseLinks(int[] pruned, int n, int degree) {
    return addReverseLinks(pruned, n, degree, true);
  }

  /**
   * {@link #addReverseLinks}, on the common pool when {@code parallel}, else on this thread. The
   * reverse edges of j, as a compressed sparse row: a counting pass (atomic counters), prefix sums,
   * a fill pass (atomic cursors: the order within a row depends on the threads), then each row sorted
   * by its key position * n + source (the order the class comment asks for, whatever the threads did)
   * and cut to {@code degree}.
   */
  static int[] addReverseLinks(int[] pruned, int n, int degree, boolean parallel) {
    if (pruned.length != (long) n * degree) {
      throw new IllegalArgumentException("pruned graph of " + pruned.length + " ordinals, expected n * degree = " + n + " * " + degree);
    }
    AtomicIntegerArray counts = new AtomicIntegerArray(n);
    blocks(n, parallel).forEach(b -> {
      for (int e = b * ROWS * degree, end = Math.min(n, (b + 1) * ROWS) * degree; e < end; e++) {
        int j = pruned[e];
        if (j >= 0) {
          counts.getAndIncrement(j);
        }
      }
    });
    int[] start = new int[n + 1];
    for (int j = 0; j < n; j++) {
      start[j + 1] = start[j] + counts.get(j);
    }
    AtomicIntegerArray cursor = counts; // reused: counts become each row's next free slot
    for (int j = 0; j < n; j++) {
      cursor.lazySet(j, start[j]);
    }
    int[] keys = new int[start[n]];
    blocks(n, parallel).forEach(b -> {
      for (int i = b * ROWS, end = Math.min(n, i + ROWS); i < end; i++) {
        for (int p = 0; p < degree; p++) {
          int j = pruned[i * degree + p];
          if (j >= 0) {
            keys[cursor.getAndIncrement(j)] = p * n + i; // < degree * n, an int like the arrays' sizes
          }
        }
      }
    });
    int[] out = new int[n * degree];
    int half = degree / 2;
    blocks(n, parallel).forEach(b -> {
      for (int i = b * ROWS, end = Math.min(n, i + ROWS); i < end; i++) {
        Arrays.sort(keys, start[i], start[i + 1]);
        int rowStart = i * degree;
        int size = 0;
        for (int p = 0; p < half; p++) {
          size = append(out, rowStart, size, pruned[rowStart + p], i);
        }
        for (int q = start[i], last = Math.min(start[i + 1], start[i] + degree); q < last && size < degree; q++) {
          size = append(out, rowStart, size, keys[q] % n, i);
        }
        for (int p = half; p < degree && size < degree; p++) {
          size = append(out, rowStart, size, pruned[rowStart + p], i);
        }
        Arrays.fill(out, rowStart + size, rowStart + degree, -1);
      }
    });
    return out;
  }

  /** The block numbers of n rows, a parallel stream when {@code parallel}. */
  private static IntStream blocks(int n, boolean parallel) {
    IntStream blocks = IntStream.range(0, (n + ROWS - 1) / ROWS);
    return parallel ? blocks.parallel() : blocks;
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
