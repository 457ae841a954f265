package org.gpuvectors.codec.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.IntStream;
import org.apache.lucene.codecs.hnsw.DefaultFlatVectorScorer;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopKnnCollector;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.gpuvectors.codec.index.Metric;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The CPU walks' {@link EntryLayer} on a graph of 20,000 clustered vectors (400 Gaussian clusters of 24 dims, degree
 * 32; several hundred entry points): the groups partition the entry points under a farthest-first cover of heads, a
 * start takes whole groups of the best heads, and a walk that starts from the layer keeps the recall of one that
 * starts from every entry point (checked against brute force) while scoring fewer vectors.
 */
class EntryLayerTests {
  private static final int N = 20_000;
  private static final int DIMS = 24;
  private static final int K = 10;
  private static final VectorSimilarityFunction SIM = VectorSimilarityFunction.EUCLIDEAN;

  private static List<float[]> vectors;
  private static FloatVectorValues values;
  private static GraphField field;
  private static EntryLayer layer;

  @BeforeAll
  static void build() throws IOException {
    vectors = Arrays.asList(GraphParallelBuildTests.clusters(new Random(21), N + 200, DIMS, 400, 0.35f));
    values = FloatVectorValues.fromFloats(vectors.subList(0, N), DIMS);
    field = GraphBuildTests.read(GraphBuilder.build(values, Metric.L2, 32, 64, 64, KnnFinder.CPU), N);
    layer = EntryLayer.build(field.entryPoints(), DefaultFlatVectorScorer.INSTANCE, SIM, values);
  }

  @Test
  void groupsPartitionTheEntryPointsUnderTheirMostSimilarHead() throws IOException {
    int[] entryPoints = field.entryPoints();
    assertTrue(entryPoints.length >= EntryLayer.MIN_ENTRY_POINTS, "entry points: " + entryPoints.length);
    assertNotNull(layer);
    int[] heads = layer.heads();
    assertEquals((int) Math.ceil(Math.sqrt(entryPoints.length)), heads.length);
    assertEquals(entryPoints[0], heads[0], "the cover starts from the first entry point");
    assertEquals(heads.length, Arrays.stream(heads).distinct().count(), "distinct heads");
    // all groups at once: every entry point once, each head first in its group, every member under its most similar head
    float[] uniform = new float[heads.length];
    int[] all = layer.start(uniform, entryPoints.length);
    assertEquals(entryPoints.length, all.length);
    assertEquals(Set.copyOf(Arrays.stream(entryPoints).boxed().toList()), Set.copyOf(Arrays.stream(all).boxed().toList()));
    Set<Integer> headSet = new HashSet<>(Arrays.stream(heads).boxed().toList());
    int currentHead = -1;
    for (int ord : all) {
      if (headSet.contains(ord)) {
        currentHead = ord;
        continue;
      }
      assertTrue(currentHead >= 0, "a group starts with its head");
      float own = SIM.compare(vectors.get(ord), vectors.get(currentHead));
      for (int h : heads) {
        assertTrue(SIM.compare(vectors.get(ord), vectors.get(h)) <= own,
            "entry point " + ord + " is more similar to head " + h + " than to its own head " + currentHead);
      }
    }
    // farthest-first: each head (after the first) was the entry point least similar to the heads before it
    for (int h = 1; h < heads.length; h++) {
      int head = heads[h];
      float headGap = maxSimilarity(head, heads, h);
      for (int e : entryPoints) {
        if (!headSet.contains(e) || indexOf(heads, e) > h) {
          assertTrue(maxSimilarity(e, heads, h) >= headGap, "head " + h + " is not the farthest entry point");
        }
      }
    }
  }

  @Test
  void aStartTakesWholeGroupsOfTheBestHeads() {
    int[] heads = layer.heads();
    float[] scores = new float[heads.length];
    Random random = new Random(5);
    for (int h = 0; h < heads.length; h++) {
      scores[h] = random.nextFloat();
    }
    Integer[] order = IntStream.range(0, heads.length).boxed().toArray(Integer[]::new);
    Arrays.sort(order, (a, b) -> Float.compare(scores[b], scores[a]));
    for (int width : new int[] {1, 16, 64, 256}) {
      int[] start = layer.start(scores, width);
      long target = Math.min(layer.size(), (long) EntryLayer.MEMBERS_PER_WIDTH * width);
      assertTrue(start.length >= target, width + ": " + start.length + " entry points, below " + target);
      // the groups of order[0], order[1], ... in that order, each starting with its head, and no more than needed
      int groups = 0;
      for (int p = 0; p < start.length; p++) {
        if (indexOf(heads, start[p]) >= 0) {
          assertEquals(heads[order[groups]], start[p], width + ": group " + groups + " is not the next best head's");
          groups++;
        }
      }
      assertTrue(groups >= EntryLayer.MIN_GROUPS, width + ": " + groups + " groups");
      int withoutLast = start.length - groupSize(heads[order[groups - 1]], start);
      assertTrue(groups == EntryLayer.MIN_GROUPS || withoutLast < target, width + ": one group more than needed");
    }
  }

  @Test
  void walksFromTheLayerKeepTheRecallAndScoreFewerVectors() throws IOException {
    for (int width : new int[] {16, 64}) {
      double[] recall = new double[2];
      long[] scored = new long[2];
      for (int q = N; q < N + 200; q++) {
        float[] query = vectors.get(q);
        Set<Integer> truth = new HashSet<>();
        IntStream.range(0, N).boxed()
            .sorted((a, b) -> Float.compare(SIM.compare(query, vectors.get(b)), SIM.compare(query, vectors.get(a))))
            .limit(K).forEach(truth::add);
        for (int layered = 0; layered < 2; layered++) {
          RandomVectorScorer scorer = DefaultFlatVectorScorer.INSTANCE.getRandomVectorScorer(SIM, values.copy(), query);
          TopKnnCollector collector = new TopKnnCollector(K, Integer.MAX_VALUE);
          new BeamSearch(field, layered == 1 ? layer : null, scorer, null, width).run(collector);
          scored[layered] += collector.visitedCount();
          for (ScoreDoc hit : collector.topDocs().scoreDocs) {
            recall[layered] += truth.contains(hit.doc) ? 1.0 / K / 200 : 0;
          }
        }
      }
      System.out.printf("[graph] width %d, %d entry points: recall@10 %.4f scoring %.0f a query from every entry point,"
              + " %.4f scoring %.0f from the layer%n", width, field.entryPoints().length, recall[0], scored[0] / 200.0,
          recall[1], scored[1] / 200.0);
      assertTrue(recall[1] >= recall[0] - 0.005, width + ": recall " + recall[1] + " against " + recall[0]);
      assertTrue(recall[1] >= 0.95, width + ": recall " + recall[1]);
      assertTrue(scored[1] < scored[0], width + ": scored " + scored[1] + " against " + scored[0]);
    }
  }

  @Test
  void fewEntryPointsHaveNoLayer() throws IOException {
    int[] few = Arrays.copyOf(field.entryPoints(), EntryLayer.MIN_ENTRY_POINTS - 1);
    assertNull(EntryLayer.build(few, DefaultFlatVectorScorer.INSTANCE, SIM, values));
  }

  @Test
  void theFieldBuildsItsLayerOnce() throws IOException {
    GraphField fresh = GraphBuildTests.read(new GraphLayout(field.degree(), field.buildDegree(), field.searchWidth(),
        field.seed(), field.toAdjacency(), field.seeds()), N);
    EntryLayer first = fresh.entryLayer(DefaultFlatVectorScorer.INSTANCE, SIM, values);
    assertNotNull(first);
    assertSame(first, fresh.entryLayer(DefaultFlatVectorScorer.INSTANCE, SIM, values));
  }

  /** The largest similarity of entry point {@code e} to the first {@code count} heads. */
  private static float maxSimilarity(int e, int[] heads, int count) {
    float best = Float.NEGATIVE_INFINITY;
    for (int h = 0; h < count; h++) {
      best = Math.max(best, SIM.compare(vectors.get(e), vectors.get(heads[h])));
    }
    return best;
  }

  private static int indexOf(int[] a, int v) {
    for (int i = 0; i < a.length; i++) {
      if (a[i] == v) {
        return i;
      }
    }
    return -1;
  }

  /** The length of the group that starts with {@code head} in {@code start}. */
  private static int groupSize(int head, int[] start) {
    int from = indexOf(start, head);
    int to = from + 1;
    while (to < start.length && indexOf(layer.heads(), start[to]) < 0) {
      to++;
    }
    return to - from;
  }
}
