package org.gpuvectors.codec;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.gpuvectors.cuda.SearchResult;

/**
 * The ivf_pq re-rank of a large batch, vector by vector instead of query by query: every (query,
 * candidate) pair of the device's result is scored with the query's exact scorer, as the re-rank
 * of one query does, but in ordinal order, so the raw vectors are read in file order and a vector
 * that is a candidate of several queries is read once for all of them (10k Fashion-MNIST queries x
 * 40 candidates read 1.25 GB query by query, ~6.7 reads of each of the 60k vectors). Then each query
 * keeps its best k of its scored candidates ({@link SegmentHits}), so the hits are exactly those of
 * the query-by-query re-rank.
 *
 * <p>Pairs are sorted by a counting sort over the ordinals; tasks of consecutive pairs run on the
 * common fork-join pool, each with its own copy of the vectors and the scorers of the queries it
 * meets.
 */
final class OrdinalOrderRerank {

  /**
   * Pairs one task scores at least: a task makes a scorer for each query it meets (~70 ns each on a
   * 2-core box: 4k-pair tasks spent 11 % more CPU than 64k-pair ones on a 10k batch).
   */
  private static final int MIN_PAIRS_PER_TASK = 4096;

  /** Tasks per pool thread: enough to even out tasks of unequal cost. */
  private static final int TASKS_PER_THREAD = 4;

  private OrdinalOrderRerank() {}

  /**
   * Scores the candidates of every query of {@code result} and offers them to {@code hits}; counts
   * {@code visited} vectors for every query.
   */
  static void rerank(GpuSegmentSearcher.Prepared p, SearchResult result, SegmentHits hits, long visited)
      throws IOException {
    int numQueries = p.numQueries();
    int stride = result.k();
    int size = p.vectors().size();
    // counting sort of the pairs (positions q * stride + i in the result) by ordinal
    int[] start = new int[size + 1];
    int total = 0;
    for (int q = 0; q < numQueries; q++) {
      for (int i = 0; i < result.count(q); i++) {
        start[result.id(q, i) + 1]++;
        total++;
      }
    }
    for (int ord = 0; ord < size; ord++) {
      start[ord + 1] += start[ord];
    }
    int[] pairs = new int[total];
    for (int q = 0; q < numQueries; q++) {
      for (int i = 0; i < result.count(q); i++) {
        pairs[start[result.id(q, i)]++] = q * stride + i;
      }
    }
    float[] scores = new float[numQueries * stride];
    int[] docs = new int[numQueries * stride];
    int pairCount = total;
    int threads = ForkJoinPool.getCommonPoolParallelism() + 1; // the caller works too
    int perTask = Math.max(MIN_PAIRS_PER_TASK, (pairCount + TASKS_PER_THREAD * threads - 1) / (TASKS_PER_THREAD * threads));
    int tasks = (pairCount + perTask - 1) / perTask;
    try {
      IntStream.range(0, tasks).parallel().forEach(t -> {
        try {
          score(p, result, pairs, t * perTask, Math.min(pairCount, (t + 1) * perTask), scores, docs);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    IntStream queries = IntStream.range(0, numQueries);
    if (numQueries >= GpuSegmentSearcher.PARALLEL_CONVERT_QUERIES) {
      queries = queries.parallel();
    }
    queries.forEach(q -> {
      hits.visited(q, visited, Integer.MAX_VALUE);
      for (int i = 0; i < result.count(q); i++) {
        hits.add(q, docs[q * stride + i], scores[q * stride + i]);
      }
    });
  }

  /** Scores pairs {@code [from, to)} (in ordinal order) into {@code scores} and {@code docs}. */
  private static void score(GpuSegmentSearcher.Prepared p, SearchResult result, int[] pairs, int from, int to,
                            float[] scores, int[] docs) throws IOException {
    int stride = result.k();
    FloatVectorValues vectors = p.vectors().copy(); // one reader per task; its scorers are used one at a time
    RandomVectorScorer[] scorers = new RandomVectorScorer[p.numQueries()];
    for (int j = from; j < to; j++) {
      int at = pairs[j];
      int q = at / stride;
      RandomVectorScorer scorer = scorers[q];
      if (scorer == null) {
        scorer = p.scorers().getRandomVectorScorer(p.similarity(), vectors, p.queries()[q]);
        scorers[q] = scorer;
      }
      int ord = result.id(q, at - q * stride);
      scores[at] = scorer.score(ord);
      docs[at] = scorer.ordToDoc(ord);
    }
  }
}
