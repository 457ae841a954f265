package org.gpuvectors.codec;

import java.io.IOException;
import java.util.Objects;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.KnnCollector;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.hnsw.RandomVectorScorer;

/**
 * Exact (brute-force) k-NN search over one field's vectors on the CPU.
 *
 * <p>Every accepted vector is scored with the field's {@link VectorSimilarityFunction} through the
 * flat vectors scorer, so scores are exactly those of Lucene's (and Elasticsearch's) formulas. The
 * batch entry points scan the vectors once for all queries (each query has its own collector); the
 * single-query methods are batches of one. A GPU implementation sits next to this class with the
 * same inputs.
 *
 * <p>Collectors are honoured the way Lucene's searches do: a vector counts as visited when scored,
 * and a query stops as soon as its collector {@link KnnCollector#earlyTerminated() terminates
 * early} (its visit limit is reached).
 */
final class FlatExactSearcher {

  private final FlatVectorsScorer vectorsScorer;
  private final VectorSimilarityFunction similarity;

  FlatExactSearcher(FlatVectorsScorer vectorsScorer, VectorSimilarityFunction similarity) {
    this.vectorsScorer = Objects.requireNonNull(vectorsScorer);
    this.similarity = Objects.requireNonNull(similarity);
  }

  /** Searches one float query. */
  void search(FloatVectorValues vectors, float[] query, KnnCollector collector, AcceptDocs accept)
      throws IOException {
    search(vectors, new float[][] {query}, new KnnCollector[] {collector}, accept);
  }

  /** Searches one byte query. */
  void search(ByteVectorValues vectors, byte[] query, KnnCollector collector, AcceptDocs accept)
      throws IOException {
    search(vectors, new byte[][] {query}, new KnnCollector[] {collector}, accept);
  }

  /** Searches a batch of float queries; {@code collectors[i]} receives the hits of query i. */
  void search(
      FloatVectorValues vectors, float[][] queries, KnnCollector[] collectors, AcceptDocs accept)
      throws IOException {
    checkBatch(queries.length, collectors);
    scan(
        q -> vectorsScorer.getRandomVectorScorer(similarity, vectors.copy(), queries[q]),
        collectors,
        accept);
  }

  /** Searches a batch of byte queries; {@code collectors[i]} receives the hits of query i. */
  void search(
      ByteVectorValues vectors, byte[][] queries, KnnCollector[] collectors, AcceptDocs accept)
      throws IOException {
    checkBatch(queries.length, collectors);
    scan(
        q -> vectorsScorer.getRandomVectorScorer(similarity, vectors.copy(), queries[q]),
        collectors,
        accept);
  }

  @FunctionalInterface
  private interface IOIntFunction<R> {
    R apply(int value) throws IOException;
  }

  private static void checkBatch(int numQueries, KnnCollector[] collectors) {
    if (numQueries != collectors.length) {
      throw new IllegalArgumentException(
          "got " + numQueries + " queries but " + collectors.length + " collectors");
    }
  }

  /**
   * Scores every accepted ordinal against every query whose collector is still running.
   *
   * @param accept accepted documents; {@code null}, or {@code null} bits, accept every document
   */
  private static void scan(
      IOIntFunction<RandomVectorScorer> scorerForQuery,
      KnnCollector[] collectors,
      AcceptDocs accept)
      throws IOException {
    if (collectors.length == 0) {
      return;
    }
    // one scorer per query, each over its own copy of the vectors
    RandomVectorScorer[] scorers = new RandomVectorScorer[collectors.length];
    for (int q = 0; q < scorers.length; q++) {
      scorers[q] = scorerForQuery.apply(q);
    }
    Bits acceptDocs = accept == null ? null : accept.bits();
    // all scorers share the same vectors, so the same ordinal -> doc mapping
    Bits acceptOrds = scorers[0].getAcceptOrds(acceptDocs);
    int maxOrd = scorers[0].maxOrd();
    boolean[] done = new boolean[scorers.length];
    int running = 0;
    for (int q = 0; q < scorers.length; q++) {
      done[q] = collectors[q].k() == 0;
      if (done[q] == false) {
        running++;
      }
    }
    for (int ord = 0; ord < maxOrd && running > 0; ord++) {
      if (acceptOrds != null && acceptOrds.get(ord) == false) {
        continue;
      }
      int doc = scorers[0].ordToDoc(ord);
      for (int q = 0; q < scorers.length; q++) {
        if (done[q]) {
          continue;
        }
        KnnCollector collector = collectors[q];
        if (collector.earlyTerminated()) {
          done[q] = true;
          running--;
          continue;
        }
        collector.incVisitedCount(1);
        collector.collect(doc, scorers[q].score(ord));
      }
    }
  }
}
