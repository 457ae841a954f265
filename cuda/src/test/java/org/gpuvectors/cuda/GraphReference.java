package org.gpuvectors.cuda;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.IntStream;
import org.gpuvectors.cuda.device.HostRows;
import org.gpuvectors.cuda.flat.GpuFlatIndexGpuTest;

/**
 * The test side of the graph index type, independent of the kernel and of the codec's builder:
 * <ul>
 *   <li>a simple graph construction: the exact k-NN graph by brute force ({@link #knn}), each node's nearest half
 *       of the degree kept, merged with the reverse links (interleaved), filled up from the k-NN list
 *       ({@link #graph}), and seeds drawn with seed 42 ({@link #seeds});
 *   <li>the reference beam search ({@link #search}): the algorithm the kernel runs (a sorted list of the width best
 *       visited nodes, the {@code parents} best not-yet-expanded ones expanded per iteration, an exact visited set,
 *       a separate list of the k best accepted nodes), in double precision;
 *   <li>brute force and recall ({@link #exact}, {@link #recall}).
 * </ul>
 * Keys are smaller-is-better: squared L2, or the negated inner product (cosine: over vectors and queries normalised
 * first, as the GPU index does: {@link #prepare}).
 */
public final class GraphReference {
  private GraphReference() {}

  /** The vectors as the index sees them: a copy, rows normalised for cosine. */
  public static float[] prepare(float[] x, int rows, int dims, Metric m) {
    float[] y = Arrays.copyOf(x, rows * dims);
    if (m == Metric.COSINE) {
      HostRows.normalize(y, 0, rows, dims);
    }
    return y;
  }

  /** Key of row {@code a} of x against row {@code b} of q (prepared rows). */
  public static double key(float[] x, int a, float[] q, int b, int dims, Metric m) {
    double s = 0;
    int xo = a * dims, qo = b * dims;
    if (m == Metric.L2) {
      for (int d = 0; d < dims; d++) {
        double t = (double) x[xo + d] - q[qo + d];
        s += t * t;
      }
      return s;
    }
    for (int d = 0; d < dims; d++) {
      s += (double) x[xo + d] * q[qo + d];
    }
    return -s;
  }

  /** Per node its kk nearest other nodes, best first (ties by ordinal): n x kk ordinals. Prepared vectors. */
  static int[] knn(float[] x, int n, int dims, Metric m, int kk) {
    int[] out = new int[n * kk];
    Arrays.fill(out, -1);
    IntStream.range(0, n).parallel().forEach(i -> {
      List<double[]> best = topK(x, n, dims, m, x, i, kk, null, i);
      for (int r = 0; r < best.size(); r++) {
        out[i * kk + r] = (int) best.get(r)[1];
      }
    });
    return out;
  }

  /** The k best (key, id) of query row qi among the accepted vectors, except {@code skip}; best first. */
  private static List<double[]> topK(float[] x, int n, int dims, Metric m, float[] q, int qi, int k, long[] accept,
                                     int skip) {
    // a bounded max-heap by (key, id)
    PriorityQueue<double[]> heap = new PriorityQueue<>(
        (a, b) -> a[0] != b[0] ? Double.compare(b[0], a[0]) : Double.compare(b[1], a[1]));
    for (int j = 0; j < n; j++) {
      if (j == skip || !CpuOracle.accepted(accept, j)) {
        continue;
      }
      double key = key(x, j, q, qi, dims, m);
      if (heap.size() < k) {
        heap.add(new double[] {key, j});
      } else {
        double[] worst = heap.peek();
        if (key < worst[0] || (key == worst[0] && j < worst[1])) {
          heap.poll();
          heap.add(new double[] {key, j});
        }
      }
    }
    List<double[]> out = new ArrayList<>(heap);
    out.sort((a, b) -> a[0] != b[0] ? Double.compare(a[0], b[0]) : Double.compare(a[1], b[1]));
    return out;
  }

  /**
   * A fixed-degree graph from the k-NN lists ({@code n x kk}, best first): row i takes its nearest degree / 2
   * neighbours and the nodes that took i among theirs (reverse links), interleaved, without self loops or
   * duplicates, then fills up from the rest of its k-NN list; -1 pads only when fewer than degree nodes exist.
   */
  public static int[] graph(int[] knn, int n, int kk, int degree) {
    int forward = Math.min(kk, Math.max(1, degree / 2));
    List<List<Integer>> reverse = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      reverse.add(new ArrayList<>());
    }
    for (int i = 0; i < n; i++) {
      for (int r = 0; r < forward; r++) {
        int j = knn[i * kk + r];
        if (j >= 0) {
          reverse.get(j).add(i);
        }
      }
    }
    int[] g = new int[n * degree];
    Arrays.fill(g, -1);
    for (int i = 0; i < n; i++) {
      LinkedHashSet<Integer> row = new LinkedHashSet<>();
      List<Integer> rev = reverse.get(i);
      for (int r = 0; row.size() < degree && (r < forward || r < rev.size()); r++) {
        if (r < forward && knn[i * kk + r] >= 0) {
          row.add(knn[i * kk + r]);
        }
        if (r < rev.size() && row.size() < degree) {
          row.add(rev.get(r));
        }
      }
      for (int r = forward; r < kk && row.size() < degree; r++) {
        if (knn[i * kk + r] >= 0) {
          row.add(knn[i * kk + r]);
        }
      }
      row.remove(i);
      int c = 0;
      for (int j : row) {
        if (c < degree) {
          g[i * degree + c++] = j;
        }
      }
    }
    return g;
  }

  /** {@code count} distinct ordinals (all when n <= count), drawn with seed 42. */
  public static int[] seeds(int n, int count) {
    int[] perm = IntStream.range(0, n).toArray();
    Random r = new Random(42);
    for (int i = n - 1; i > 0; i--) {
      int j = r.nextInt(i + 1);
      int t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    return Arrays.copyOf(perm, Math.min(n, count));
  }

  /** The graph of prepared vectors: k-NN with kk = 2 * degree (capped at n - 1), then {@link #graph}. */
  public static int[] build(float[] prepared, int n, int dims, Metric m, int degree) {
    int kk = Math.max(1, Math.min(n - 1, 2 * degree));
    return graph(knn(prepared, n, dims, m, kk), n, kk, degree);
  }

  /** Exact k best accepted ids of each prepared query: nq x k (-1 when fewer are accepted). */
  public static int[] exact(float[] x, int n, int dims, Metric m, float[] q, int nq, int k, long[][] masks) {
    int[] out = new int[nq * k];
    Arrays.fill(out, -1);
    IntStream.range(0, nq).parallel().forEach(qi -> {
      List<double[]> best = topK(x, n, dims, m, q, qi, k, masks == null ? null : masks[qi], -1);
      for (int r = 0; r < best.size(); r++) {
        out[qi * k + r] = (int) best.get(r)[1];
      }
    });
    return out;
  }

  /**
   * The reference beam search of every prepared query (nq x k ids, -1 = none), with the kernel's width, parents
   * and iteration cap ({@code GpuGraphIndex.SearchPlan}).
   */
  public static int[] search(float[] x, int n, int dims, Metric m, int[] graph, int degree, int[] seeds, float[] q, int nq,
                      int k, int width, int parents, int maxIterations, long[][] masks) {
    return search(x, n, dims, m, graph, degree, seeds, q, nq, k, width, parents, maxIterations, masks, null);
  }

  /**
   * What a search costs, summed over queries: vectors scored (distances computed) and iterations (expansion rounds;
   * the kernel's latency at batch 1 is about iterations x the cost of one round).
   */
  public record Cost(LongAdder scored, LongAdder iterations) {
    public Cost() {
      this(new LongAdder(), new LongAdder());
    }
  }

  /** As the other {@code search}, adding each query's scored vectors and iterations to {@code cost} (may be null). */
  public static int[] search(float[] x, int n, int dims, Metric m, int[] graph, int degree, int[] seeds, float[] q, int nq,
                      int k, int width, int parents, int maxIterations, long[][] masks, Cost cost) {
    int[] out = new int[nq * k];
    IntStream.range(0, nq).parallel().forEach(qi -> {
      int[] ids = searchOne(x, n, dims, m, graph, degree, seeds, q, qi, k, width, parents, maxIterations,
          masks == null ? null : masks[qi], cost);
      System.arraycopy(ids, 0, out, qi * k, k);
    });
    return out;
  }

  /** A sorted list of at most {@code cap} (key, id) entries, with an expanded flag per entry. */
  private static final class BeamList {
    final double[] keys;
    final int[] ids;
    final boolean[] expanded;
    int size;

    BeamList(int cap) {
      keys = new double[cap];
      ids = new int[cap];
      expanded = new boolean[cap];
    }

    /** Merges candidates sorted by (key, id); equal keys: the list's entries first. Keeps the cap best. */
    void merge(double[] ck, int[] ci, int count) {
      int cap = keys.length;
      double[] nk = new double[cap];
      int[] ni = new int[cap];
      boolean[] ne = new boolean[cap];
      int a = 0, b = 0, o = 0;
      while (o < cap && (a < size || b < count)) {
        if (b >= count || (a < size && keys[a] <= ck[b])) {
          nk[o] = keys[a];
          ni[o] = ids[a];
          ne[o++] = expanded[a++];
        } else {
          nk[o] = ck[b];
          ni[o] = ci[b++];
          ne[o++] = false;
        }
      }
      System.arraycopy(nk, 0, keys, 0, o);
      System.arraycopy(ni, 0, ids, 0, o);
      System.arraycopy(ne, 0, expanded, 0, o);
      size = o;
    }
  }

  static int[] searchOne(float[] x, int n, int dims, Metric m, int[] graph, int degree, int[] seeds, float[] q,
                         int qi, int k, int width, int parents, int maxIterations, long[] accept, Cost cost) {
    boolean[] visited = new boolean[n];
    BeamList list = new BeamList(width);
    BeamList acc = new BeamList(k);
    int[] batch = seeds.clone();
    for (int it = -1; it < maxIterations; it++) {
      if (it >= 0) { // expand the best not-yet-expanded entries
        List<Integer> next = new ArrayList<>();
        for (int i = 0, found = 0; i < list.size && found < parents; i++) {
          if (!list.expanded[i]) {
            list.expanded[i] = true;
            found++;
            for (int e = 0; e < degree; e++) {
              next.add(graph[list.ids[i] * degree + e]);
            }
          }
        }
        if (next.isEmpty()) {
          break;
        }
        if (cost != null) {
          cost.iterations().increment();
        }
        batch = next.stream().mapToInt(Integer::intValue).toArray();
      }
      List<double[]> cands = new ArrayList<>();
      for (int id : batch) {
        if (id >= 0 && !visited[id]) {
          visited[id] = true;
          double key = key(x, id, q, qi, dims, m);
          if (cost != null) {
            cost.scored().increment();
          }
          if (!Double.isNaN(key)) {
            cands.add(new double[] {key, id});
          }
        }
      }
      cands.sort((a, b) -> a[0] != b[0] ? Double.compare(a[0], b[0]) : Double.compare(a[1], b[1]));
      double[] ck = new double[cands.size()];
      int[] ci = new int[cands.size()];
      double[] ak = new double[cands.size()];
      int[] ai = new int[cands.size()];
      int accepted = 0;
      for (int c = 0; c < cands.size(); c++) {
        ck[c] = cands.get(c)[0];
        ci[c] = (int) cands.get(c)[1];
        if (CpuOracle.accepted(accept, ci[c])) {
          ak[accepted] = ck[c];
          ai[accepted++] = ci[c];
        }
      }
      list.merge(ck, ci, ck.length);
      acc.merge(ak, ai, accepted);
    }
    BeamList result = accept == null ? list : acc;
    int[] out = new int[k];
    Arrays.fill(out, -1);
    for (int i = 0; i < Math.min(k, result.size); i++) {
      out[i] = result.ids[i];
    }
    return out;
  }

  /** Mean over queries of |found ∩ truth| / |truth| (queries with an empty truth skipped). */
  public static double recall(int[] found, int foundK, int[] truth, int truthK, int nq, int k) {
    double sum = 0;
    int counted = 0;
    for (int q = 0; q < nq; q++) {
      Set<Integer> t = new HashSet<>();
      for (int i = 0; i < k; i++) {
        if (truth[q * truthK + i] >= 0) {
          t.add(truth[q * truthK + i]);
        }
      }
      if (t.isEmpty()) {
        continue;
      }
      int hit = 0;
      for (int i = 0; i < k; i++) {
        if (t.contains(found[q * foundK + i])) {
          hit++;
        }
      }
      sum += (double) hit / t.size();
      counted++;
    }
    return counted == 0 ? 1 : sum / counted;
  }

  /** An accept mask with each of n ordinals accepted with probability p. */
  public static long[] mask(int n, double p, Random r) {
    return GpuFlatIndexGpuTest.bits(n, p, r);
  }
}
