package org.gpuvectors.codec.graph;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntConsumer;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopKnnCollector;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.gpuvectors.codec.index.Metric;

/**
 * Step (1) of a merge's graph build from the graphs of the segments it merges, instead of from scratch: GGNN's merge
 * of sub-graphs (Groh et al., section 4: the sub-graphs' own edges kept, the edges between them found by searching
 * each sub-graph with the other's vectors as queries, then refined), on the CPU. Each merged vector's k-NN list starts
 * from
 * <ul>
 *   <li>its row in its own segment's graph (the out-neighbours that survive the merge: near ones, already diversified
 *       by the pruning), and
 *   <li>the best vectors a walk of each other segment's graph finds for it ({@link BeamSearch}: the segment's deleted
 *       vectors are walked through but not returned),
 * </ul>
 * then NN-descent ({@link NnDescent}) refines those lists for up to {@link #refinements} iterations (GGNN's
 * refinement iterations; it stops earlier once an iteration changes fewer than {@link NnDescent#DELTA} of the
 * entries). Segments without a graph (flat: too small to build one) have no row and no walk; their vectors start from
 * the walks and random vectors, and the refinements link them in. A merge of one segment takes over its graph where
 * nothing was deleted ({@code SingleSegmentGraph}); with deletions it starts from the graph's rows here (no walks).
 * Deterministic: the walks and NN-descent's random choices depend on the inputs alone.
 *
 * <p>A rebuild finds the k-NN graph without the inputs: on the GPU by brute force (or IVF), much faster than this;
 * on the CPU exactly up to {@link KnnFinder#EXACT_MAX_VECTORS} vectors and by NN-descent from random lists above,
 * slower than this merge once the graphs hold most of the merged vectors ({@link #pays}).
 */
public final class GraphMerge {

  /** The merge starts from the graphs only when they hold at least this share of the merged vectors. */
  static final double MIN_GRAPH_SHARE = 0.5;
  /**
   * Refinements (NN-descent iterations at most after the start, GGNN's refinement iterations; {@link #refinements})
   * when every merged vector starts from its own graph's row and at least two segments merge: none. Measured on
   * Fashion-MNIST: 2, 4 and 10 segments, and 4 with 30 % of the documents deleted, reached the rebuild's recall@10
   * without refinement (within 0.0005 at search width 16), and each iteration cost about as much as the walks.
   */
  static final int REFINEMENTS_ALL_IN_GRAPHS = 0;
  /**
   * Refinements when some merged vectors come from segments without a graph (their lists start from the walks alone,
   * and nothing starts from them), or when one segment merges (to drop its deleted vectors: no walks, the rows lose
   * their deleted members). Measured: 45,000 vectors in a graph and 5 x 3,000 flat, recall@10 at width 16 0.971
   * without refinement, 0.989 after one, 0.993 after two (the rebuild's 0.993); one segment of 40,000 with 30 %
   * deleted: 0.977, 0.995, 0.994 (the rebuild's 0.994), 5.1x faster than the rebuild after two.
   */
  static final int REFINEMENTS_OTHERWISE = 2;
  /** A walk of another segment's graph keeps at least this many vectors (its beam's width). */
  static final int MIN_WALK_WIDTH = 16;

  /**
   * One merged segment: its graph (null: it had none), its vectors (its own ordinals, deleted ones included), each
   * of its ordinals' merged ordinal ({@code toMerged}, -1 for a deleted vector), and how to score its vectors
   * ({@code scorers} under {@code similarity}) for the walks.
   */
  public record Segment(
      GraphField graph, FloatVectorValues vectors, int[] toMerged, FlatVectorsScorer scorers,
      VectorSimilarityFunction similarity) {

    /** Live vectors (those in the merge). */
    int live() {
      int live = 0;
      for (int m : toMerged) {
        if (m >= 0) {
          live++;
        }
      }
      return live;
    }
  }

  private final List<Segment> segments;
  /** Per merged ordinal, the segment it comes from and its ordinal there. */
  private final int[] fromSegment;
  private final int[] fromOrdinal;

  private GraphMerge(List<Segment> segments, int mergedSize) {
    this.segments = segments;
    this.fromSegment = new int[mergedSize];
    this.fromOrdinal = new int[mergedSize];
    Arrays.fill(fromSegment, -1);
    for (int s = 0; s < segments.size(); s++) {
      int[] toMerged = segments.get(s).toMerged();
      for (int ord = 0; ord < toMerged.length; ord++) {
        int m = toMerged[ord];
        if (m >= 0) {
          if (m >= mergedSize || fromSegment[m] >= 0) {
            throw new IllegalArgumentException("merged ordinal " + m + " out of range or taken twice (merged size "
                + mergedSize + ")");
          }
          fromSegment[m] = s;
          fromOrdinal[m] = ord;
        }
      }
    }
    for (int m = 0; m < mergedSize; m++) {
      if (fromSegment[m] < 0) {
        throw new IllegalArgumentException("merged ordinal " + m + " comes from no segment");
      }
    }
  }

  /**
   * The merge of {@code segments} into {@code mergedSize} vectors (their live vectors, each once), or null when it
   * does not pay ({@link #pays}): the build then starts from scratch.
   */
  public static GraphMerge of(List<Segment> segments, int mergedSize) {
    return pays(segments, mergedSize) ? new GraphMerge(List.copyOf(segments), mergedSize) : null;
  }

  /**
   * Whether a merge pays: the segments with graphs hold at least {@link #MIN_GRAPH_SHARE} of the merged vectors (one
   * segment's merge, after deletions, too).
   */
  static boolean pays(List<Segment> segments, int mergedSize) {
    if (segments.isEmpty() || mergedSize < 1) {
      return false;
    }
    long inGraphs = 0;
    for (Segment segment : segments) {
      if (segment.graph() != null) {
        inGraphs += segment.live();
      }
    }
    return inGraphs >= MIN_GRAPH_SHARE * mergedSize;
  }

  /** The k-NN graph of {@code merged} (the merged vectors, by merged ordinal), as {@link KnnFinder#knn} gives it. */
  public int[] knn(FloatVectorValues merged, int k, Metric metric) throws IOException {
    return knn(merged, k, metric, refinements());
  }

  /** {@link #knn(FloatVectorValues, int, Metric)} with at most {@code refinements} NN-descent iterations. */
  int[] knn(FloatVectorValues merged, int k, Metric metric, int refinements) throws IOException {
    if (merged.size() != fromSegment.length) {
      throw new IllegalArgumentException("merged vectors: " + merged.size() + ", merge of " + fromSegment.length);
    }
    return NnDescent.knn(merged, k, metric, GraphBuilder.SEED, start(merged, k), refinements);
  }

  /**
   * The refinements of this merge: {@link #REFINEMENTS_ALL_IN_GRAPHS} when every merged vector comes from a segment
   * with a graph and at least two segments merge, else {@link #REFINEMENTS_OTHERWISE}.
   */
  int refinements() {
    boolean walked = segments.size() >= 2 && segments.stream().allMatch(s -> s.graph() != null);
    return walked ? REFINEMENTS_ALL_IN_GRAPHS : REFINEMENTS_OTHERWISE;
  }

  /**
   * Where each merged vector's list starts (before NN-descent refines it): its own segment's row and each other
   * segment's walk, of width k / (segments with graphs - 1), at least {@link #MIN_WALK_WIDTH}, so that the start
   * costs about the same however many segments merge.
   */
  NnDescent.Start start(FloatVectorValues merged, int k) {
    int withGraphs = (int) segments.stream().filter(s -> s.graph() != null).count();
    int walkWidth = Math.max(MIN_WALK_WIDTH, k / Math.max(1, withGraphs - 1));
    ThreadLocal<Walks> walks = ThreadLocal.withInitial(() -> new Walks(merged));
    return (u, candidates) -> walks.get().candidates(u, walkWidth, candidates);
  }

  /** One thread's readers: each segment's adjacency rows and vectors, the merged vectors as queries. */
  private final class Walks {
    private final FloatVectorValues queries;
    private final FloatVectorValues[] vectors = new FloatVectorValues[segments.size()];
    private final IndexInput[] adjacency = new IndexInput[segments.size()];
    private final int[][] rows = new int[segments.size()][];

    Walks(FloatVectorValues merged) {
      try {
        this.queries = merged.copy();
        for (int s = 0; s < segments.size(); s++) {
          Segment segment = segments.get(s);
          if (segment.graph() != null) {
            vectors[s] = segment.vectors().copy();
            adjacency[s] = segment.graph().adjacencyReader();
            rows[s] = new int[segment.graph().degree()];
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /** Merged vector {@code u}'s start: its own segment's row, then each other segment's walk. */
    void candidates(int u, int walkWidth, IntConsumer candidates) throws IOException {
      int own = fromSegment[u];
      for (int s = 0; s < segments.size(); s++) {
        Segment segment = segments.get(s);
        if (segment.graph() == null) {
          continue;
        }
        if (s == own) {
          adjacency[s].seek(4L * fromOrdinal[u] * rows[s].length);
          adjacency[s].readInts(rows[s], 0, rows[s].length);
          for (int j : rows[s]) {
            if (j >= 0 && segment.toMerged()[j] >= 0) {
              candidates.accept(segment.toMerged()[j]);
            }
          }
        } else {
          walk(segment, vectors[s], queries.vectorValue(u), walkWidth, candidates);
        }
      }
    }
  }

  /** The best {@code width} live vectors of {@code segment} that a walk of its graph finds for {@code query}. */
  private static void walk(Segment segment, FloatVectorValues vectors, float[] query, int width, IntConsumer candidates)
      throws IOException {
    RandomVectorScorer byDoc = segment.scorers().getRandomVectorScorer(segment.similarity(), vectors, query);
    // the walk collects "docs": score through the segment's scorer, but hand over ordinals
    RandomVectorScorer byOrdinal = new RandomVectorScorer() {
      @Override
      public float score(int ord) throws IOException {
        return byDoc.score(ord);
      }

      @Override
      public int maxOrd() {
        return byDoc.maxOrd();
      }
    };
    int[] toMerged = segment.toMerged();
    Bits live = new Bits() {
      @Override
      public boolean get(int ord) {
        return toMerged[ord] >= 0;
      }

      @Override
      public int length() {
        return toMerged.length;
      }
    };
    TopKnnCollector collector = new TopKnnCollector(width, Integer.MAX_VALUE);
    EntryLayer layer = segment.graph().entryLayer(segment.scorers(), segment.similarity(), vectors);
    new BeamSearch(segment.graph(), layer, byOrdinal, live, width).run(collector);
    for (ScoreDoc hit : collector.topDocs().scoreDocs) {
      candidates.accept(toMerged[hit.doc]);
    }
  }
}
