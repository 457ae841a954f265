package org.gpuvectors.codec.graph;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;

/**
 * A CPU simulation that asks, before writing a kernel, whether one query's graph walk can be split over several
 * GPU blocks (for single-query latency: today one block of the H100's 132 walks alone, BENCHMARKS 11e). Counted,
 * not timed: the walk's sequential iterations (a block's latency is about iterations x one iteration), the vectors
 * scored (the work), and recall@10 against brute force, for
 *
 * <ul>
 *   <li>one block: the GPU kernel's loop (a list of {@code width} best, {@code parents} best unexpanded nodes
 *       expanded per iteration, until every listed node is expanded);
 *   <li>C independent blocks: the same loop each, with its own visited set, the entry points dealt round-robin,
 *       results merged (no communication until the end);
 *   <li>C blocks sharing the visited set (CAGRA's multi-CTA): in lockstep, a node scored by one block is skipped by
 *       the others, so they spread out.
 * </ul>
 *
 * Not a test: {@code java ... MultiBlockWalkSimulation [n] [dims] [queries]}; the graph is this project's (the CPU
 * build, exact k-NN, pruning, reverse links, entry points).
 */
public final class MultiBlockWalkSimulation {

  private final float[] data;
  private final int dims;
  private final int[] adjacency;
  private final int degree;
  private final int[] seeds;

  private MultiBlockWalkSimulation(float[] data, int dims, GraphLayout graph) {
    this.data = data;
    this.dims = dims;
    this.adjacency = graph.adjacency();
    this.degree = graph.degree();
    this.seeds = graph.seeds();
  }

  /** What a walk found and what it cost. */
  record Outcome(int[] top, int iterations, long scored) {}

  private float distance(float[] q, int id) {
    float s = 0;
    for (int d = 0, o = id * dims; d < dims; d++) {
      float x = q[d] - data[o + d];
      s += x * x;
    }
    return s;
  }

  /**
   * Marks and returns up to p best unexpanded nodes of a block's list (none: the walk is over). The list is the k-NN
   * build's {@link NeighborList}: nearest first, ties by the lower ordinal, "new" = not yet expanded.
   */
  private static int[] parents(NeighborList list, int p) {
    int[] out = new int[p];
    int found = 0;
    for (int i = 0; i < list.size() && found < p; i++) {
      if (list.isNew[i]) {
        list.isNew[i] = false;
        out[found++] = list.ids[i];
      }
    }
    return Arrays.copyOf(out, found);
  }

  /**
   * C blocks of the given width in lockstep; {@code shared}: one visited set for all (multi-CTA), else one each.
   * C = 1 is the single-block kernel.
   */
  Outcome walk(float[] q, int blocks, int width, int parents, boolean shared) {
    NeighborList[] beams = new NeighborList[blocks];
    BitSet[] visited = new BitSet[blocks];
    BitSet common = new BitSet();
    long scored = 0;
    for (int b = 0; b < blocks; b++) {
      beams[b] = new NeighborList(width);
      visited[b] = shared ? common : new BitSet();
    }
    for (int s = 0; s < seeds.length; s++) {
      int b = s % blocks;
      if (!visited[b].get(seeds[s])) {
        visited[b].set(seeds[s]);
        beams[b].insert(distance(q, seeds[s]), seeds[s]);
        scored++;
      }
    }
    int iterations = 0;
    boolean any = true;
    while (any) {
      any = false;
      for (int b = 0; b < blocks; b++) {
        int[] ps = parents(beams[b], parents);
        if (ps.length == 0) {
          continue;
        }
        any = true;
        for (int p : ps) {
          for (int e = p * degree, end = e + degree; e < end; e++) {
            int j = adjacency[e];
            if (j < 0 || visited[b].get(j)) {
              continue;
            }
            visited[b].set(j);
            beams[b].insert(distance(q, j), j);
            scored++;
          }
        }
      }
      iterations += any ? 1 : 0;
    }
    // the blocks' lists merged: the 10 best distinct ids
    List<long[]> all = new ArrayList<>();
    BitSet taken = new BitSet();
    for (NeighborList beam : beams) {
      for (int i = 0; i < beam.size(); i++) {
        if (!taken.get(beam.ids[i])) {
          taken.set(beam.ids[i]);
          all.add(new long[] {Float.floatToIntBits(beam.distances[i]), beam.ids[i]}); // non-negative floats sort as ints
        }
      }
    }
    all.sort((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
    int[] top = new int[Math.min(10, all.size())];
    for (int i = 0; i < top.length; i++) {
      top[i] = (int) all.get(i)[1];
    }
    return new Outcome(top, iterations, scored);
  }

  int[] exactTop10(float[] q, int n) {
    long[] keyed = new long[n];
    for (int i = 0; i < n; i++) {
      keyed[i] = ((long) Float.floatToIntBits(distance(q, i)) << 32) | i;
    }
    Arrays.sort(keyed);
    int[] top = new int[10];
    for (int i = 0; i < 10; i++) {
      top[i] = (int) keyed[i];
    }
    return top;
  }

  /** Clustered gaussians (1,000 centres, sigma 0.35: the bench/es generator's shape), or none (plain gaussians). */
  static float[] vectors(int n, int dims, boolean clustered, Random r) {
    float[][] centres = new float[1000][dims];
    for (float[] c : centres) {
      for (int d = 0; d < dims; d++) {
        c[d] = clustered ? (float) r.nextGaussian() : 0;
      }
    }
    float[] out = new float[n * dims];
    for (int i = 0; i < n; i++) {
      float[] c = centres[r.nextInt(centres.length)];
      for (int d = 0; d < dims; d++) {
        out[i * dims + d] = c[d] + (float) r.nextGaussian() * (clustered ? 0.35f : 1f);
      }
    }
    return out;
  }

  public static void main(String[] args) throws IOException {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 30_000;
    int dims = args.length > 1 ? Integer.parseInt(args[1]) : 32;
    int nq = args.length > 2 ? Integer.parseInt(args[2]) : 200;
    for (boolean clustered : new boolean[] {true, false}) {
      Random r = new Random(5);
      float[] all = vectors(n + nq, dims, clustered, r);
      float[] base = Arrays.copyOf(all, n * dims);
      List<float[]> rows = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        rows.add(Arrays.copyOfRange(base, i * dims, (i + 1) * dims));
      }
      long t0 = System.nanoTime();
      GraphLayout graph = GraphBuilder.build(FloatVectorValues.fromFloats(rows, dims), Metric.L2, 32, 64, 64,
          KnnFinder.CPU);
      MultiBlockWalkSimulation sim = new MultiBlockWalkSimulation(base, dims, graph);
      System.out.printf(Locale.ROOT, "%n%s %d x %d, degree 32, %d entry points, graph built in %.1f s; %d queries%n",
          clustered ? "clustered" : "gaussian", n, dims, graph.seeds().length, (System.nanoTime() - t0) / 1e9, nq);
      int[][] truth = new int[nq][];
      float[][] queries = new float[nq][];
      for (int q = 0; q < nq; q++) {
        queries[q] = Arrays.copyOfRange(all, (n + q) * dims, (n + q + 1) * dims);
        truth[q] = sim.exactTop10(queries[q], n);
      }
      System.out.println("blocks,shared_visited,width_per_block,parents,recall@10,iterations(mean),iterations(max),scored(mean)");
      int[][] configs = {
          {1, 0, 100, 4}, {1, 0, 100, 1}, {1, 0, 100, 16},
          {4, 0, 25, 4}, {4, 1, 25, 4}, {4, 1, 32, 1}, {8, 0, 16, 4}, {8, 1, 16, 4}, {8, 1, 32, 1},
          {16, 1, 16, 1}, {16, 1, 32, 1}, {32, 1, 32, 1}, {16, 0, 32, 1}};
      for (int[] c : configs) {
        double recall = 0;
        double iterations = 0;
        int maxIterations = 0;
        double scored = 0;
        for (int q = 0; q < nq; q++) {
          Outcome o = sim.walk(queries[q], c[0], c[2], c[3], c[1] == 1);
          int hits = 0;
          for (int id : o.top()) {
            for (int t : truth[q]) {
              hits += id == t ? 1 : 0;
            }
          }
          recall += hits / 10.0;
          iterations += o.iterations();
          maxIterations = Math.max(maxIterations, o.iterations());
          scored += o.scored();
        }
        System.out.printf(Locale.ROOT, "%d,%s,%d,%d,%.4f,%.1f,%d,%.0f%n", c[0], c[1] == 1 ? "yes" : "no", c[2], c[3],
            recall / nq, iterations / nq, maxIterations, scored / nq);
      }
    }
  }
}
