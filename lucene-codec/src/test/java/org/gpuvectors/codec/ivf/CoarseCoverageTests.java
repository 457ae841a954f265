package org.gpuvectors.codec.ivf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.util.Comparator;
import java.util.Random;
import java.util.stream.IntStream;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.IOContext;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.store.IndexOutput;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.codec.index.Metric;
import org.junit.jupiter.api.Test;

/** {@link CoarseCoverage} against a brute force over the same lists, read back from their file. */
class CoarseCoverageTests {

  private static final int DIMS = 6;
  private static final int NLIST = 20;
  private static final int N = 500;
  private static final int QUERIES = 40;

  @Test
  void matchesABruteForceAtEveryNprobe() throws IOException {
    Random random = new Random(5);
    float[][] centroids = gaussians(random, NLIST);
    int[] listOf = IntStream.range(0, N).map(i -> random.nextInt(NLIST)).toArray();
    float[][] queries = gaussians(random, QUERIES);
    int[][] neighbours = new int[QUERIES][];
    int[] wanted = new int[QUERIES];
    for (int q = 0; q < QUERIES; q++) {
      wanted[q] = q % 7 == 0 ? 3 : 10; // an index of fewer vectors than k
      neighbours[q] = random.ints(0, N).distinct().limit(wanted[q] + random.nextInt(4)).toArray(); // ties: more
    }
    IvfLayout layout = IvfLayout.fromAssignment(centroids, listOf, new IvfBuilder.Training(N, 1, 42));
    try (Directory dir = new ByteBuffersDirectory()) {
      try (IndexOutput out = dir.createOutput("f", IOContext.DEFAULT)) {
        layout.writeTo(out, 4);
      }
      try (IndexInput in = dir.openInput("f", IOContext.DEFAULT)) {
        IvfField lists = IvfField.readLists(in, DIMS, N, Metric.L2);
        CoarseCoverage coverage = CoarseCoverage.of(lists, queries, neighbours, wanted);
        assertEquals(QUERIES, coverage.queries());
        for (int nprobe : new int[] {1, 2, 3, 5, 8, 13, NLIST, NLIST + 5}) {
          for (int count : new int[] {1, 9, QUERIES}) {
            assertEquals(bruteForce(centroids, listOf, queries, neighbours, wanted, nprobe, count),
                coverage.at(nprobe, count), 1e-12, "nprobe " + nprobe + ", " + count + " queries");
          }
        }
        assertEquals(1.0, coverage.at(NLIST), "every list probed: every neighbour found");
      }
    }
  }

  /** Per query its nprobe nearest centroids (ties: the lower list), and min(wanted, neighbours in them). */
  private static double bruteForce(float[][] centroids, int[] listOf, float[][] queries, int[][] neighbours,
                                   int[] wanted, int nprobe, int count) {
    long covered = 0;
    long expected = 0;
    for (int q = 0; q < count; q++) {
      float[] query = queries[q];
      boolean[] probed = new boolean[NLIST];
      IntStream.range(0, NLIST).boxed()
          .sorted(Comparator.<Integer>comparingDouble(l -> VectorUtil.squareDistance(query, centroids[l]))
              .thenComparingInt(l -> l))
          .limit(nprobe)
          .forEach(l -> probed[l] = true);
      int found = 0;
      for (int ord : neighbours[q]) {
        found += probed[listOf[ord]] ? 1 : 0;
      }
      covered += Math.min(found, wanted[q]);
      expected += wanted[q];
    }
    return covered / (double) expected;
  }

  private static float[][] gaussians(Random random, int rows) {
    float[][] out = new float[rows][DIMS];
    for (float[] row : out) {
      for (int d = 0; d < DIMS; d++) {
        row[d] = (float) random.nextGaussian();
      }
    }
    return out;
  }

  @Test
  void ranksGivenInAnyOrderCountTheNeighboursInTheProbedLists() {
    // query 0 wants 2 of its neighbours in lists ranked 3, 0, 5; query 1 wants its one neighbour, in list rank 1
    CoarseCoverage coverage = CoarseCoverage.ofListRanks(new int[][] {{3, 0, 5}, {1}}, new int[] {2, 1});
    assertEquals(0, coverage.at(0));
    assertEquals(1 / 3.0, coverage.at(1), 1e-12); // query 0: one neighbour in the nearest list
    assertEquals(2 / 3.0, coverage.at(2), 1e-12);
    assertEquals(1.0, coverage.at(4), 1e-12); // query 0: two probed, it wants two
    assertEquals(1.0, coverage.at(4, 1), 1e-12);
  }
}
