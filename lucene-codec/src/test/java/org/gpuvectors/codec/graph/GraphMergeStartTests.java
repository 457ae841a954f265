package org.gpuvectors.codec.graph;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.apache.lucene.codecs.hnsw.DefaultFlatVectorScorer;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.gpuvectors.codec.index.Metric;
import org.junit.jupiter.api.Test;

/**
 * Where a merge's k-NN lists start ({@link GraphMerge#start}), checked against brute force on the merged vectors: two
 * segments' graphs, their ordinals interleaved in the merged segment and some vectors deleted. The start alone (own
 * row + walk of the other graph, before NN-descent) must already hold most of each vector's true neighbours, name only
 * live merged ordinals, and include the vector's own row; the merge of mostly flat inputs is refused.
 */
class GraphMergeStartTests {

  private static final int DIMS = 16;
  private static final int DEGREE = 16;
  private static final int BUILD_DEGREE = 32;

  /** 20 Gaussian clusters of spread 0.5 ({@link GraphParallelBuildTests#clusters}). */
  private static float[][] clustered(int n, Random random) {
    return GraphParallelBuildTests.clusters(random, n, DIMS, 20, 0.5f);
  }

  private static GraphMerge.Segment segment(float[][] vectors, int[] toMerged) throws IOException {
    FloatVectorValues values = FloatVectorValues.fromFloats(List.of(vectors), DIMS);
    GraphLayout layout = GraphBuilder.build(values, Metric.L2, DEGREE, BUILD_DEGREE, 64, KnnFinder.CPU);
    return new GraphMerge.Segment(GraphBuildTests.read(layout, vectors.length), values, toMerged,
        DefaultFlatVectorScorer.INSTANCE, VectorSimilarityFunction.EUCLIDEAN);
  }

  @Test
  void theStartHoldsMostTrueNeighboursAndOnlyLiveMergedOrdinals() throws IOException {
    Random random = new Random(11);
    float[][] a = clustered(1500, random);
    float[][] b = clustered(1200, random);
    // merged order: a and b interleaved (as an index sort would), every 5th vector of a deleted
    int[] aToMerged = new int[a.length];
    int[] bToMerged = new int[b.length];
    List<float[]> merged = new ArrayList<>();
    int ia = 0;
    int ib = 0;
    while (ia < a.length || ib < b.length) {
      boolean takeA = ib == b.length || (ia < a.length && random.nextBoolean());
      if (takeA) {
        if (ia % 5 == 3) {
          aToMerged[ia++] = -1;
        } else {
          aToMerged[ia] = merged.size();
          merged.add(a[ia++]);
        }
      } else {
        bToMerged[ib] = merged.size();
        merged.add(b[ib++]);
      }
    }
    GraphMerge.Segment sa = segment(a, aToMerged);
    GraphMerge.Segment sb = segment(b, bToMerged);
    GraphMerge merge = GraphMerge.of(List.of(sa, sb), merged.size());
    FloatVectorValues mergedValues = FloatVectorValues.fromFloats(merged, DIMS);
    NnDescent.Start start = merge.start(mergedValues, BUILD_DEGREE);

    int[] exact = ExactKnn.knn(mergedValues, 10, Metric.L2);
    int[] aAdjacency = sa.graph().toAdjacency();
    int found = 0;
    for (int u = 0; u < merged.size(); u++) {
      Set<Integer> candidates = new HashSet<>();
      int self = u;
      start.candidates(u, j -> {
        assertTrue(j >= 0 && j < merged.size(), "merged ordinal " + j);
        candidates.add(j);
      });
      candidates.remove(self);
      for (int p = 0; p < 10; p++) {
        if (candidates.contains(exact[u * 10 + p])) {
          found++;
        }
      }
    }
    // vector u of a: its own row (live members, mapped) is part of its start
    for (int o = 0; o < a.length; o++) {
      if (aToMerged[o] < 0) {
        continue;
      }
      Set<Integer> candidates = new HashSet<>();
      start.candidates(aToMerged[o], candidates::add);
      for (int p = 0; p < DEGREE; p++) {
        int j = aAdjacency[o * DEGREE + p];
        if (aToMerged[j] >= 0) {
          assertTrue(candidates.contains(aToMerged[j]), "row of " + o + " holds " + j);
        }
      }
    }
    // (the own row is pruned: of the own segment's nearest it keeps those no two-hop path covers, so the start
    // misses some; a mapping or walk that went wrong would find next to none)
    double recall = found / (10.0 * merged.size());
    System.out.printf("[graph merge] start alone: %.4f of the exact 10-NN%n", recall);
    assertTrue(recall >= 0.85, "the start's recall of the exact 10-NN: " + recall);

    // the start's best k as they are, and refined by NN-descent: near-exact lists
    double started = knnRecall(merge.knn(mergedValues, BUILD_DEGREE, Metric.L2, 0), exact, merged.size());
    double refined = knnRecall(merge.knn(mergedValues, BUILD_DEGREE, Metric.L2, NnDescent.MAX_ITERATIONS), exact,
        merged.size());
    System.out.printf("[graph merge] k-NN lists of the start: %.4f of the exact 10-NN, refined: %.4f%n", started,
        refined);
    assertTrue(started >= 0.85, "the start's k-NN lists' recall of the exact 10-NN: " + started);
    assertTrue(refined >= 0.99, "the refined k-NN lists' recall of the exact 10-NN: " + refined);
  }

  /** The share of each vector's exact 10 nearest that its row of {@code knn} holds (rows checked: no self loop). */
  private static double knnRecall(int[] knn, int[] exact, int n) {
    int hits = 0;
    for (int u = 0; u < n; u++) {
      Set<Integer> row = new HashSet<>();
      for (int p = 0; p < BUILD_DEGREE; p++) {
        row.add(knn[u * BUILD_DEGREE + p]);
      }
      assertTrue(row.contains(u) == false, "no self loop in row " + u);
      for (int p = 0; p < 10; p++) {
        hits += row.contains(exact[u * 10 + p]) ? 1 : 0;
      }
    }
    return hits / (10.0 * n);
  }

  @Test
  void aMergeNeedsGraphsForHalfTheVectorsAndConsistentOrdinals() throws IOException {
    Random random = new Random(3);
    float[][] a = clustered(300, random);
    float[][] flat = clustered(400, random);
    int[] aToMerged = new int[a.length];
    int[] flatToMerged = new int[flat.length];
    for (int i = 0; i < a.length; i++) {
      aToMerged[i] = i;
    }
    for (int i = 0; i < flat.length; i++) {
      flatToMerged[i] = a.length + i;
    }
    GraphMerge.Segment sa = segment(a, aToMerged);
    GraphMerge.Segment noGraph = new GraphMerge.Segment(null, FloatVectorValues.fromFloats(List.of(flat), DIMS),
        flatToMerged, null, VectorSimilarityFunction.EUCLIDEAN);
    GraphMerge.Segment withGraph = segment(flat, flatToMerged);
    assertNull(GraphMerge.of(List.of(sa, noGraph), 700), "300 of 700 vectors in graphs: rebuild");
    assertNotNull(GraphMerge.of(List.of(sa), 300), "one segment's merge (after deletions) starts from its graph");
    assertNotNull(GraphMerge.of(List.of(sa, withGraph), 700), "both in graphs");
    GraphMerge.Segment aWithoutGraph =
        new GraphMerge.Segment(null, sa.vectors(), aToMerged, null, VectorSimilarityFunction.EUCLIDEAN);
    assertNotNull(GraphMerge.of(List.of(aWithoutGraph, withGraph), 700), "400 of 700 vectors in graphs");
    int[] twice = aToMerged.clone();
    twice[1] = 0;
    GraphMerge.Segment broken = new GraphMerge.Segment(sa.graph(), sa.vectors(), twice, sa.scorers(), sa.similarity());
    assertThrows(IllegalArgumentException.class, () -> GraphMerge.of(List.of(broken, withGraph), 700),
        "merged ordinal 0 taken twice, 1 by none");
    assertThrows(IllegalArgumentException.class, () -> GraphMerge.of(List.of(sa, withGraph), 701),
        "merged ordinal 700 from no segment");
  }
}
