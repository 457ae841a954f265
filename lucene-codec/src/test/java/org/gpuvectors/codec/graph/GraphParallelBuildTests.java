package org.gpuvectors.codec.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;
import org.junit.jupiter.api.Test;

/**
 * The parallel host phases of a graph build give the same graph as the serial algorithms they
 * replace: pruning and reverse links against straightforward serial references (the build's code
 * before it ran in parallel, kept here), on random graphs of several shapes, on one thread and on the
 * common pool; the entry points on the pool against the one-thread traversal, on data full of ties.
 */
class GraphParallelBuildTests {

  @Test
  void parallelPruningEqualsTheSerialReference() {
    Random random = new Random(7);
    for (int[] shape : new int[][] {{1, 4, 2}, {5, 4, 4}, {300, 16, 8}, {3000, 64, 32}, {2500, 256, 128}, {4100, 24, 9}}) {
      int n = shape[0];
      int k = shape[1];
      int degree = shape[2];
      int[] knn = randomGraph(random, n, k, true);
      int[] expected = referencePrune(knn, n, k, degree);
      assertArrayEquals(expected, GraphPruner.prune(knn, n, k, degree, false), "one thread, " + Arrays.toString(shape));
      assertArrayEquals(expected, GraphPruner.prune(knn, n, k, degree, true), "common pool, " + Arrays.toString(shape));
    }
  }

  /** Neighbours of neighbours: rows drawn from a small window, so that detours are frequent. */
  @Test
  void parallelPruningEqualsTheSerialReferenceOnLocalGraphs() {
    Random random = new Random(11);
    int n = 5000;
    int k = 32;
    int[] knn = new int[n * k];
    for (int i = 0; i < n; i++) {
      List<Integer> window = new ArrayList<>();
      for (int j = Math.max(0, i - 40); j < Math.min(n, i + 40); j++) {
        if (j != i) {
          window.add(j);
        }
      }
      java.util.Collections.shuffle(window, random);
      for (int r = 0; r < k; r++) {
        knn[i * k + r] = window.get(r);
      }
    }
    int[] expected = referencePrune(knn, n, k, 16);
    assertArrayEquals(expected, GraphPruner.prune(knn, n, k, 16, false));
    assertArrayEquals(expected, GraphPruner.prune(knn, n, k, 16, true));
  }

  @Test
  void parallelReverseLinksEqualTheSerialReference() {
    Random random = new Random(13);
    for (int[] shape : new int[][] {{1, 2}, {3, 4}, {200, 8}, {3000, 32}, {4500, 17}}) {
      int n = shape[0];
      int degree = shape[1];
      int[] pruned = randomGraph(random, n, degree, false);
      int[] expected = referenceReverseLinks(pruned, n, degree);
      assertArrayEquals(expected, GraphPruner.addReverseLinks(pruned, n, degree, false), "one thread, " + Arrays.toString(shape));
      assertArrayEquals(expected, GraphPruner.addReverseLinks(pruned, n, degree, true), "common pool, " + Arrays.toString(shape));
    }
    // popular targets: many more reverse candidates than the degree, cut in (position, source) order
    int n = 3000;
    int degree = 8;
    int[] hubs = new int[n * degree];
    for (int i = 0; i < n; i++) {
      for (int p = 0; p < degree; p++) {
        hubs[i * degree + p] = (p + (i < degree ? 1 + i : 0)) % n; // rows point to 0..7 (the first rows elsewhere)
      }
    }
    assertArrayEquals(referenceReverseLinks(hubs, n, degree), GraphPruner.addReverseLinks(hubs, n, degree, true));
  }

  @Test
  void parallelEntryPointsEqualTheOneThreadTraversal() throws IOException {
    Random random = new Random(17);
    int n = 9000; // over four slices of the sample
    List<float[]> list = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      float[] v = new float[4];
      for (int d = 0; d < v.length; d++) {
        v[d] = random.nextInt(3); // 81 distinct points: ties everywhere
      }
      list.add(v);
    }
    FloatVectorValues vectors = FloatVectorValues.fromFloats(list, 4);
    int degree = 8;
    int[] adjacency = randomGraph(random, n, degree, false);
    for (Metric metric : Metric.values()) {
      int[] serial = GraphBuilder.seeds(vectors, metric, adjacency, degree, new GraphBuildPhases(), false);
      assertArrayEquals(serial, GraphBuilder.seeds(vectors, metric, adjacency, degree, new GraphBuildPhases(), true), metric.name());
    }
  }

  /**
   * The traversal's triangle-inequality pruning changes no choice: entry points with and without it, for every metric,
   * on Gaussian clusters (where it skips most distances), on uniform noise, on a few dozen points full of ties, with
   * zero vectors among them (cosine), and past seedCount into the uncovered-points phase (many small clusters).
   */
  @Test
  void prunedTraversalEqualsTheFullOne() throws IOException {
    Random random = new Random(19);
    List<float[][]> datasets = new ArrayList<>();
    datasets.add(clusters(random, 6000, 16, 40, 0.05f));
    datasets.add(clusters(random, 3000, 64, 7, 0.3f));
    datasets.add(clusters(random, 9000, 8, 900, 0.01f)); // more clusters than seedCount: the uncovered phase
    float[][] noise = new float[2500][24];
    for (float[] v : noise) {
      for (int d = 0; d < v.length; d++) {
        v[d] = (float) random.nextGaussian();
      }
    }
    datasets.add(noise);
    float[][] ties = new float[4000][3];
    for (int i = 0; i < ties.length; i++) {
      for (int d = 0; d < 3; d++) {
        ties[i][d] = i % 50 == 0 ? 0 : random.nextInt(3); // zero vectors too
      }
    }
    datasets.add(ties);
    for (float[][] data : datasets) {
      FloatVectorValues vectors = FloatVectorValues.fromFloats(Arrays.asList(data), data[0].length);
      int degree = 8;
      int[] adjacency = randomGraph(random, data.length, degree, false);
      for (Metric metric : Metric.values()) {
        int[] full = GraphBuilder.unprunedSeeds(vectors, metric, adjacency, degree);
        int[] pruned = GraphBuilder.seeds(vectors, metric, adjacency, degree, new GraphBuildPhases(), true);
        assertArrayEquals(full, pruned, metric + ", " + data.length + " x " + data[0].length);
      }
    }
  }

  /** n vectors around {@code centres} Gaussian centres, spread {@code sigma} around each. */
  static float[][] clusters(Random random, int n, int dims, int centres, float sigma) {
    float[][] c = new float[centres][dims];
    for (float[] v : c) {
      for (int d = 0; d < dims; d++) {
        v[d] = (float) random.nextGaussian();
      }
    }
    float[][] out = new float[n][dims];
    for (int i = 0; i < n; i++) {
      float[] centre = c[random.nextInt(centres)];
      for (int d = 0; d < dims; d++) {
        out[i][d] = centre[d] + sigma * (float) random.nextGaussian();
      }
    }
    return out;
  }

  @Test
  void wrongArraySizesAreRejected() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GraphPruner.prune(new int[10], 3, 4, 2));
    org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("expected n * k"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> GraphPruner.addReverseLinks(new int[10], 3, 4));
    org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("expected n * degree"), e.getMessage());
  }

  /**
   * Rows of {@code width} distinct ordinals other than the row's own; in a small graph the rows end
   * with -1; with {@code padSome}, some rows of larger graphs are cut short too.
   */
  static int[] randomGraph(Random random, int n, int width, boolean padSome) {
    int[] graph = new int[n * width];
    for (int source = 0; source < n; source++) {
      int i = source;
      int size = Math.min(width, n - 1);
      if (padSome && random.nextInt(10) == 0) {
        size = random.nextInt(size + 1);
      }
      int[] row = random.ints(0, n).filter(j -> j != i).distinct().limit(size).toArray();
      System.arraycopy(row, 0, graph, i * width, size);
      Arrays.fill(graph, i * width + size, (i + 1) * width, -1);
    }
    return graph;
  }

  /** The pruning as the build ran it before it went parallel (a rank table of n, boxed sort). */
  private static int[] referencePrune(int[] knn, int n, int k, int degree) {
    int[] out = new int[n * degree];
    int[] rankOf = new int[n];
    int[] detours = new int[k];
    Integer[] order = new Integer[k];
    for (int i = 0; i < n; i++) {
      int rowStart = i * k;
      int size = 0;
      while (size < k && knn[rowStart + size] >= 0) {
        size++;
      }
      for (int r = 0; r < size; r++) {
        rankOf[knn[rowStart + r]] = r + 1;
      }
      Arrays.fill(detours, 0);
      for (int s = 0; s < size; s++) {
        int viaStart = knn[rowStart + s] * k;
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

  /** The reverse links as the build ran them before they went parallel (position-major counting). */
  private static int[] referenceReverseLinks(int[] pruned, int n, int degree) {
    int[] reverseCount = new int[n];
    int[] reverse = new int[n * degree];
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
      List<Integer> row = new ArrayList<>();
      for (int p = 0; p < half; p++) {
        add(row, pruned[start + p], i, degree);
      }
      for (int p = 0; p < reverseCount[i]; p++) {
        add(row, reverse[start + p], i, degree);
      }
      for (int p = half; p < degree; p++) {
        add(row, pruned[start + p], i, degree);
      }
      Arrays.fill(out, start, start + degree, -1);
      for (int p = 0; p < row.size(); p++) {
        out[start + p] = row.get(p);
      }
    }
    return out;
  }

  private static void add(List<Integer> row, int id, int self, int degree) {
    if (id >= 0 && id != self && row.size() < degree && row.contains(id) == false) {
      row.add(id);
    }
  }
}
