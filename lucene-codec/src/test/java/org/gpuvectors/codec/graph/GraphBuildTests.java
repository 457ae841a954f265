package org.gpuvectors.codec.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.IOContext;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.store.IndexOutput;
import org.gpuvectors.codec.index.Metric;
import org.junit.jupiter.api.Test;

/**
 * The build's steps on their own: rank-based pruning and reverse links on hand-checked examples, the
 * exact k-NN graph against a naive one, NN-descent's recall against the exact graph, determinism, and
 * the reader's validation of structurally broken graph data.
 */
class GraphBuildTests {

  /**
   * k = 3, degree 2. Row 0's edges by rank: 1, 2, 3. 0 -> 2 (rank 1) is detourable via 1 (0 -> 1 has
   * rank 0 and 1 -> 2 rank 0, both below 1); 0 -> 3 (rank 2) is not (neither 1's nor 2's list holds 3).
   * So 0 keeps 1 and 3 and drops 2, which a search reaches through 1. Every other row keeps its two
   * nearest (each has one detour, at rank 2).
   */
  @Test
  void pruningDropsDetourableEdgesOnAHandCheckedExample() {
    int[] knn = {
      1, 2, 3, // 0
      2, 0, 4, // 1
      1, 4, 0, // 2
      4, 0, 1, // 3
      3, 2, 0, // 4
    };
    int[] pruned = GraphPruner.prune(knn, 5, 3, 2);
    assertArrayEquals(new int[] {1, 3, 2, 0, 1, 4, 4, 0, 3, 2}, pruned);
  }

  /**
   * degree 2, half = 1 forward edge kept first. Nobody points to 3 in the pruned graph; 3 -> 2 makes 3
   * a reverse candidate of 2 (2's reverse edges by the rank they had: 1 (1 -> 2 at rank 0), 3 (3 -> 2 at
   * rank 0, after 1 by ordinal)), so row 2 = its first forward edge (1), then its reverse edges without
   * duplicates (1 is there already, 3 added): [1, 3]; 2 -> 0 is dropped. Row 3 has no reverse edges
   * and keeps its forward ones.
   */
  @Test
  void reverseLinksOnAHandCheckedExample() {
    int[] pruned = {
      1, 2, // 0
      2, 0, // 1
      1, 0, // 2
      2, 1, // 3
    };
    int[] graph = GraphPruner.addReverseLinks(pruned, 4, 2);
    assertArrayEquals(new int[] {1, 2, 2, 0, 1, 3, 2, 1}, graph);
  }

  /**
   * Many well-separated clusters larger than the build degree: the k-NN graph has no edge between
   * clusters, so each cluster is its own part of the graph and needs its own entry point, or the queries
   * that land there find nothing (Elasticsearch's 1M x 128 benchmark with 1,000 clusters found half its
   * neighbours when the entry points stopped at 512). 700 clusters of 24 points, degree 8 / build 16.
   */
  @Test
  void everyIsolatedClusterGetsAnEntryPoint() throws IOException {
    Random random = new Random(5);
    int clusters = 700;
    int perCluster = 24;
    List<float[]> rows = new ArrayList<>();
    for (int c = 0; c < clusters; c++) {
      float cx = 1000f * (c % 30);
      float cy = 1000f * (c / 30);
      for (int i = 0; i < perCluster; i++) {
        rows.add(new float[] {cx + (float) random.nextGaussian(), cy + (float) random.nextGaussian()});
      }
    }
    int n = rows.size();
    GraphLayout graph = GraphBuilder.build(FloatVectorValues.fromFloats(rows, 2), Metric.L2, 8, 16, 32, KnnFinder.CPU);
    int degree = 8;
    boolean[] reached = new boolean[n];
    int[] queue = new int[n];
    int head = 0;
    int tail = 0;
    for (int seed : graph.seeds()) {
      if (reached[seed] == false) {
        reached[seed] = true;
        queue[tail++] = seed;
      }
    }
    while (head < tail) {
      int u = queue[head++];
      for (int j = 0; j < degree; j++) {
        int v = graph.adjacency()[u * degree + j];
        if (v >= 0 && reached[v] == false) {
          reached[v] = true;
          queue[tail++] = v;
        }
      }
    }
    assertEquals(n, tail, "vectors reachable from the " + graph.seeds().length + " entry points");
    assertTrue(graph.seeds().length >= clusters, "at least one entry point per cluster: " + graph.seeds().length);
  }

  /** The build's arrays hold n x build_degree ordinals: larger segments are refused before any work (the writer keeps them flat). */
  @Test
  void graphsBeyondTheBuildArraysAreRefusedUpFront() {
    assertTrue(GraphBuilder.fits(8_388_607, 256));
    assertTrue(GraphBuilder.fits(33_554_431, 64));
    assertEquals(false, GraphBuilder.fits(8_388_608, 256), "2^31 edges");
    assertEquals(false, GraphBuilder.fits(Integer.MAX_VALUE, 8));
    FloatVectorValues huge = new FloatVectorValues() {
      @Override
      public float[] vectorValue(int ord) {
        throw new AssertionError("no vector is read before the size check");
      }

      @Override
      public FloatVectorValues copy() {
        return this;
      }

      @Override
      public int dimension() {
        return 2;
      }

      @Override
      public int size() {
        return 40_000_000;
      }
    };
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> GraphBuilder.build(huge, Metric.L2, 32, 64, 64, KnnFinder.CPU));
    assertTrue(e.getMessage().contains("40000000 vectors at build_degree 64"), e.getMessage());
  }

  @Test
  void smallSegmentsPadRowsWithMinusOne() {
    // 3 vectors, degree 4: each row has the 2 others, then -1
    FloatVectorValues vectors = FloatVectorValues.fromFloats(List.of(new float[] {0, 0}, new float[] {1, 0}, new float[] {0, 3}), 2);
    try {
      GraphLayout graph = GraphBuilder.build(vectors, Metric.L2, 4, 8, 16, KnnFinder.CPU);
      assertArrayEquals(new int[] {1, 2, -1, -1, 0, 2, -1, -1, 0, 1, -1, -1}, graph.adjacency());
      assertArrayEquals(new int[] {0, 1, 2}, graph.seeds(), "every vector is an entry point");
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void exactKnnMatchesANaiveSortForEveryMetric() throws IOException {
    Random random = new Random(3);
    List<float[]> rows = clustered(random, 700, 8);
    FloatVectorValues vectors = FloatVectorValues.fromFloats(rows, 8);
    for (Metric metric : Metric.values()) {
      int k = 10;
      int[] knn = ExactKnn.knn(vectors, k, metric);
      for (int i = 0; i < rows.size(); i++) {
        int self = i;
        Integer[] order = new Integer[rows.size()];
        Arrays.setAll(order, j -> j);
        Arrays.sort(order, (a, b) -> {
          int c = Double.compare(naive(rows.get(self), rows.get(a), metric), naive(rows.get(self), rows.get(b), metric));
          return c != 0 ? c : Integer.compare(a, b);
        });
        int[] expected = Arrays.stream(order).mapToInt(Integer::intValue).filter(j -> j != self).limit(k).toArray();
        int[] actual = Arrays.copyOfRange(knn, i * k, (i + 1) * k);
        // the same set; the order may differ only between (near-)equal distances (float vs double)
        assertEquals(Arrays.stream(expected).sorted().boxed().toList(), Arrays.stream(actual).sorted().boxed().toList(),
            () -> metric + " row " + self);
      }
    }
  }

  /** NN-descent finds most of the exact k-NN graph's edges, on uniform data (no clusters to help it). */
  @Test
  void nnDescentRecallAgainstTheExactGraph() throws IOException {
    Random random = new Random(5);
    int n = 4000;
    int k = 32;
    FloatVectorValues vectors = FloatVectorValues.fromFloats(uniform(random, n, 32), 32);
    int[] exact = ExactKnn.knn(vectors, k, Metric.L2);
    int[] approximate = NnDescent.knn(vectors, k, Metric.L2, GraphBuilder.SEED);
    long found = 0;
    for (int i = 0; i < n; i++) {
      java.util.Set<Integer> truth = new java.util.HashSet<>();
      for (int p = 0; p < k; p++) {
        truth.add(exact[i * k + p]);
      }
      for (int p = 0; p < k; p++) {
        int j = approximate[i * k + p];
        assertTrue(j >= 0 && j < n && j != i, "valid neighbour");
        found += truth.contains(j) ? 1 : 0;
      }
    }
    double recall = found / (double) (n * k);
    System.out.println("[graph] NN-descent recall of the exact 32-NN graph (4000 x 32, uniform): " + recall);
    assertTrue(recall >= 0.95, "NN-descent recall (measured 0.983): " + recall);
    assertArrayEquals(approximate, NnDescent.knn(vectors, k, Metric.L2, GraphBuilder.SEED), "deterministic");
  }

  @Test
  void readerRejectsStructurallyBrokenGraphs() throws IOException {
    int n = 40;
    int degree = 8;
    Random random = new Random(11);
    FloatVectorValues vectors = FloatVectorValues.fromFloats(clustered(random, n, 4), 4);
    GraphLayout good = GraphBuilder.build(vectors, Metric.L2, degree, 16, 32, KnnFinder.CPU);
    assertEquals(n, read(good, n).size());

    int[] selfLoop = good.adjacency().clone();
    selfLoop[5 * degree + 3] = 5;
    assertCorrupt(good, selfLoop, good.seeds(), n, "invalid neighbour 5");
    int[] outOfRange = good.adjacency().clone();
    outOfRange[7 * degree] = n;
    assertCorrupt(good, outOfRange, good.seeds(), n, "invalid neighbour " + n);
    int[] duplicate = good.adjacency().clone();
    duplicate[9 * degree + 1] = duplicate[9 * degree];
    assertCorrupt(good, duplicate, good.seeds(), n, "duplicate neighbour");
    int[] padded = good.adjacency().clone();
    padded[3 * degree + degree - 1] = -1;
    assertCorrupt(good, padded, good.seeds(), n, "has 7 of 8 neighbours");
    int[] badSeeds = good.seeds().clone();
    badSeeds[badSeeds.length - 1] = n;
    assertCorrupt(good, good.adjacency(), badSeeds, n, "entry point");
    // the meta's vector count disagrees with the data's length
    assertThrows(CorruptIndexException.class, () -> read(good, n + 1));
    GraphLayout badDegree = new GraphLayout(GraphBuilder.MAX_DEGREE + 1, 300, 32, 42, new int[0], new int[] {0});
    assertThrows(CorruptIndexException.class, () -> read(badDegree, n));
  }

  private static void assertCorrupt(GraphLayout good, int[] adjacency, int[] seeds, int n, String message) {
    GraphLayout bad = new GraphLayout(good.degree(), good.buildDegree(), good.searchWidth(), good.seed(), adjacency, seeds);
    CorruptIndexException e = assertThrows(CorruptIndexException.class, () -> read(bad, n));
    assertTrue(e.getMessage().contains(message), e.getMessage());
  }

  /** Writes the layout to a file and reads it back as a segment of {@code n} vectors would. */
  static GraphField read(GraphLayout layout, int n) throws IOException {
    Directory dir = new ByteBuffersDirectory();
    try (IndexOutput out = dir.createOutput("g", IOContext.DEFAULT)) {
      out.writeInt(0xCAFE); // some bytes before the field's data, as in a real .gvd file
      layout.writeTo(out);
    }
    IndexInput in = dir.openInput("g", IOContext.DEFAULT);
    return GraphField.read(in, 4, in.length() - 4, n);
  }

  static List<float[]> clustered(Random random, int n, int dims) {
    float[][] centers = new float[20][dims];
    for (float[] c : centers) {
      for (int d = 0; d < dims; d++) {
        c[d] = random.nextFloat() * 2 - 1;
      }
    }
    List<float[]> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      float[] c = centers[random.nextInt(centers.length)];
      float[] v = new float[dims];
      for (int d = 0; d < dims; d++) {
        v[d] = c[d] + (float) random.nextGaussian() * 0.2f;
      }
      rows.add(v);
    }
    return rows;
  }

  /** Uniform in [-1, 1)^dims: no cluster structure, the hard case for NN-descent. */
  static List<float[]> uniform(Random random, int n, int dims) {
    List<float[]> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      float[] v = new float[dims];
      for (int d = 0; d < dims; d++) {
        v[d] = random.nextFloat() * 2 - 1;
      }
      rows.add(v);
    }
    return rows;
  }

  private static double naive(float[] a, float[] b, Metric metric) {
    double dot = 0;
    double l2 = 0;
    double na = 0;
    double nb = 0;
    for (int d = 0; d < a.length; d++) {
      dot += (double) a[d] * b[d];
      l2 += (double) (a[d] - b[d]) * (a[d] - b[d]);
      na += (double) a[d] * a[d];
      nb += (double) b[d] * b[d];
    }
    return switch (metric) {
      case L2 -> l2;
      case INNER_PRODUCT -> -dot;
      case COSINE -> -dot / Math.sqrt(na * nb);
    };
  }
}
