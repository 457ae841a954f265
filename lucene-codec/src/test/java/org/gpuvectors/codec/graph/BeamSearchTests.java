package org.gpuvectors.codec.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.apache.lucene.codecs.hnsw.DefaultFlatVectorScorer;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopKnnCollector;
import org.apache.lucene.util.BitSetIterator;
import org.apache.lucene.util.FixedBitSet;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.gpuvectors.codec.index.Metric;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The CPU graph search under filters, on a graph built by the codec's builder (6,000 uniform vectors of 16 floats,
 * degree 32, search width 64): the walk widened by the filter (collects only accepted vectors, keeps its recall at
 * 1 %, 10 % and 50 %, scores no more than {@link GraphFilterPlan#walkScores}), and {@link GraphField#search}'s
 * choice between the walk and the exact search of the accepted vectors ({@link GraphField#exact}, the rule the GPU
 * follows), checked by the vectors it scores and against brute force.
 */
class BeamSearchTests {
  private static final int N = 6000;
  private static final int DIMS = 16;
  private static final int K = 10;
  private static final VectorSimilarityFunction SIM = VectorSimilarityFunction.EUCLIDEAN;

  private static List<float[]> vectors;
  private static FloatVectorValues values;
  private static GraphField field;
  /** The same graph with a search width of 16: a 50 % filter walks it. */
  private static GraphField narrow;

  @BeforeAll
  static void build() throws IOException {
    vectors = GraphBuildTests.uniform(new Random(3), N, DIMS);
    values = FloatVectorValues.fromFloats(vectors, DIMS);
    GraphLayout layout = GraphBuilder.build(values, Metric.L2, 32, 64, 64, KnnFinder.CPU);
    field = GraphBuildTests.read(layout, N);
    narrow = GraphBuildTests.read(new GraphLayout(layout.degree(), layout.buildDegree(), 16, layout.seed(),
        layout.adjacency(), layout.seeds()), N);
  }

  /** Every id % modulus (doc = ordinal here). */
  private static FixedBitSet filter(int modulus) {
    FixedBitSet bits = new FixedBitSet(N);
    for (int i = 0; i < N; i += modulus) {
      bits.set(i);
    }
    return bits;
  }

  /** The k best accepted ids by brute force, best first (ties: lower id). */
  private static int[] truth(float[] query, FixedBitSet accepted) {
    return java.util.stream.IntStream.range(0, N).filter(accepted::get).boxed()
        .sorted((a, b) -> {
          int c = Float.compare(SIM.compare(query, vectors.get(b)), SIM.compare(query, vectors.get(a)));
          return c != 0 ? c : Integer.compare(a, b);
        })
        .limit(K).mapToInt(Integer::intValue).toArray();
  }

  private static RandomVectorScorer scorer(float[] query) throws IOException {
    return DefaultFlatVectorScorer.INSTANCE.getRandomVectorScorer(SIM, values.copy(), query);
  }

  /** The walk alone at the widened width: accepted vectors only, recall@10 >= 0.9, within the rule's bound. */
  @Test
  void walkUnderFiltersCollectsOnlyAcceptedVectors() throws IOException {
    Random random = new Random(4);
    for (int percent : new int[] {1, 10, 50}) {
      FixedBitSet accepted = filter(100 / percent);
      int width = field.width(K, accepted.cardinality());
      double recall = 0;
      int queries = 30;
      for (int q = 0; q < queries; q++) {
        float[] query = GraphBuildTests.uniform(random, 1, DIMS).get(0);
        RandomVectorScorer scorer = scorer(query);
        TopKnnCollector collector = new TopKnnCollector(K, Integer.MAX_VALUE);
        new BeamSearch(field, field.entryLayer(DefaultFlatVectorScorer.INSTANCE, SIM, values), scorer,
            scorer.getAcceptOrds(accepted), width).run(collector);
        assertTrue(collector.visitedCount() <= GraphFilterPlan.walkScores(width, field.degree(), field.seeds().length, N),
            percent + " %: the walk scored " + collector.visitedCount() + ", above the bound");
        Set<Integer> truth = new HashSet<>();
        for (int id : truth(query, accepted)) {
          truth.add(id);
        }
        int found = 0;
        for (ScoreDoc hit : collector.topDocs().scoreDocs) {
          assertTrue(accepted.get(hit.doc), "only accepted vectors: " + hit.doc);
          found += truth.contains(hit.doc) ? 1 : 0;
        }
        recall += found / (double) K;
      }
      recall /= queries;
      System.out.printf("[graph] the walk alone with a %d%% filter (width %d): recall@10 %.4f%n", percent, width,
          recall);
      assertTrue(recall >= 0.9, "recall@10 of the walk with a " + percent + " % filter: " + recall);
    }
  }

  /**
   * {@link GraphField#search}: exact over the accepted vectors where the rule says so (it scores each once: the
   * brute force's hits), the walk elsewhere. Search width 64: 1, 10 and 50 % are exact (50 %: 3,000 accepted, a
   * walk of width 128 may score 4,096); search width 16: 50 % walks (width 32, at most 1,024 scored).
   */
  @Test
  void searchIsExactWhereAWalkWouldScoreAsManyAsAreAccepted() throws IOException {
    Random random = new Random(5);
    assertEquals(0, searches(field, random), "search width 64: every filter exact");
    assertEquals(10, searches(narrow, random), "search width 16: the ten queries of the 50 % filter walked");
    assertFalse(field.exact(K, N), "no filter: a walk");
    assertTrue(field.exact(K, 0), "nothing accepted: exact, and empty");
  }

  /** Ten queries per filter through {@code graph}'s search, checked; returns how many walked. */
  private static int searches(GraphField graph, Random random) throws IOException {
    int walks = 0;
    for (int percent : new int[] {1, 10, 50}) {
      FixedBitSet accepted = filter(100 / percent);
      int count = accepted.cardinality();
      boolean exact = graph.exact(K, count);
      String what = "search width " + graph.searchWidth() + ", " + percent + " %";
      assertEquals(GraphFilterPlan.exact(graph.searchWidth(), K, graph.degree(), graph.seeds().length, count, N), exact, what);
      assertEquals(exact ? GraphField.EXACT_EFFORT : graph.width(K, count), graph.effort(K, count), what);
      assertEquals(exact ? count : GraphFilterPlan.walkScores(graph.width(K, count), graph.degree(), graph.seeds().length, N),
          graph.visited(count, graph.effort(K, count)), what);
      for (int q = 0; q < 10; q++) {
        float[] query = GraphBuildTests.uniform(random, 1, DIMS).get(0);
        TopKnnCollector collector = new TopKnnCollector(K, Integer.MAX_VALUE);
        graph.search(DefaultFlatVectorScorer.INSTANCE, SIM, values, query, collector, accept(accepted), count);
        int[] hits = Arrays.stream(collector.topDocs().scoreDocs).mapToInt(h -> h.doc).toArray();
        if (exact) {
          assertEquals(count, collector.visitedCount(), what + ": every accepted vector scored once");
          assertArrayEquals(truth(query, accepted), hits, what + ": the brute force's hits");
        } else {
          assertTrue(collector.visitedCount() < count, what + ": a walk scores fewer than are accepted");
          for (int doc : hits) {
            assertTrue(accepted.get(doc), what + ": only accepted vectors");
          }
          walks++;
        }
      }
    }
    return walks;
  }

  /** The exact search stops when the collector's visit limit ends it, as Lucene's searches do. */
  @Test
  void exactSearchHonoursTheVisitLimit() throws IOException {
    FixedBitSet accepted = filter(100);
    TopKnnCollector collector = new TopKnnCollector(K, 7);
    float[] query = GraphBuildTests.uniform(new Random(6), 1, DIMS).get(0);
    field.search(DefaultFlatVectorScorer.INSTANCE, SIM, values, query, collector, accept(accepted), accepted.cardinality());
    assertTrue(collector.earlyTerminated());
    assertEquals(7, collector.visitedCount());
  }

  private static AcceptDocs accept(FixedBitSet bits) {
    return AcceptDocs.fromIteratorSupplier(() -> new BitSetIterator(bits, bits.cardinality()), null, N);
  }
}
