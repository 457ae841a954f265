package org.gpuvectors.codec;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import org.apache.lucene.codecs.hnsw.DefaultFlatVectorScorer;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.gpuvectors.cuda.SearchResult;
import org.junit.jupiter.api.Test;

/**
 * {@link OrdinalOrderRerank} against a brute-force oracle: per query its device candidates scored
 * with Lucene's similarity and the best k kept (by score, then the lower doc id), in order, with doc
 * ids mapped from ordinals (a sparse field: doc = 3 ord + 1). Candidates overlap across queries (the
 * case the ordinal order is for), queries have fewer candidates than others, and small integer
 * coordinates make many scores equal. Batches large enough to run on several pool tasks.
 */
class OrdinalOrderRerankTests {

  private static final int DIMS = 6;

  private final Random random = new Random(0x0e4d);

  /** A field of {@code vectors} whose ordinal {@code ord} is document {@code 3 ord + 1}. */
  private static FloatVectorValues sparse(List<float[]> vectors) {
    FloatVectorValues dense = FloatVectorValues.fromFloats(vectors, DIMS);
    return new FloatVectorValues() {
      @Override
      public float[] vectorValue(int ord) throws IOException {
        return dense.vectorValue(ord);
      }

      @Override
      public FloatVectorValues copy() {
        return this;
      }

      @Override
      public int dimension() {
        return DIMS;
      }

      @Override
      public int size() {
        return vectors.size();
      }

      @Override
      public int ordToDoc(int ord) {
        return 3 * ord + 1;
      }
    };
  }

  private record Hit(int doc, float score) {}

  @Test
  void keepsEachQuerysBestCandidatesAsTheOracle() throws IOException {
    for (VectorSimilarityFunction sim :
        new VectorSimilarityFunction[] {VectorSimilarityFunction.EUCLIDEAN, VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT}) {
      for (int size : new int[] {50, 3000}) {
        List<float[]> vectors = new ArrayList<>();
        for (int i = 0; i < size; i++) {
          vectors.add(point());
        }
        int numQueries = 2500;
        int candidates = 40;
        int k = 10;
        float[][] queries = new float[numQueries][];
        int[] ids = new int[numQueries * candidates];
        Arrays.fill(ids, -1);
        for (int q = 0; q < numQueries; q++) {
          queries[q] = point();
          int count = q % 7 == 0 ? random.nextInt(candidates) : candidates; // some with fewer (a filter)
          int[] distinct = random.ints(0, size).distinct().limit(Math.min(count, size)).toArray();
          System.arraycopy(distinct, 0, ids, q * candidates, distinct.length);
        }
        SearchResult result = new SearchResult(numQueries, candidates, ids, new float[ids.length]);
        FloatVectorValues values = sparse(vectors);
        GpuSegmentSearcher.Prepared p = new GpuSegmentSearcher.Prepared(
            "segment", "v", values, sim, queries, candidates, k, new AcceptMasks.Mask(null, size), null, 1,
            DefaultFlatVectorScorer.INSTANCE, false, null);
        SegmentHits hits = new SegmentHits(numQueries, k);
        OrdinalOrderRerank.rerank(p, result, hits, 1234);
        for (int q = 0; q < numQueries; q++) {
          List<Hit> expected = new ArrayList<>();
          for (int i = 0; i < result.count(q); i++) {
            int ord = result.id(q, i);
            expected.add(new Hit(3 * ord + 1, sim.compare(queries[q], vectors.get(ord))));
          }
          expected.sort(Comparator.comparingDouble((Hit h) -> -h.score()).thenComparingInt(Hit::doc));
          expected = expected.subList(0, Math.min(k, expected.size()));
          List<Hit> actual = new ArrayList<>();
          for (int i = 0; i < hits.count(q); i++) {
            actual.add(new Hit(hits.doc(q, i), hits.score(q, i)));
          }
          assertEquals(expected, actual, sim + " size " + size + " query " + q);
          var total = SegmentHits.merge(new SegmentHits[] {hits}, new int[] {0}, q, k).totalHits;
          assertEquals(1234, total.value(), "visited, as given");
        }
      }
    }
  }

  private float[] point() {
    float[] v = new float[DIMS];
    for (int d = 0; d < DIMS; d++) {
      v[d] = random.nextInt(4);
    }
    return v;
  }
}
