package org.gpuvectors.codec.index;

import java.io.IOException;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.util.VectorUtil;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.apache.lucene.util.hnsw.RandomVectorScorerSupplier;
import org.apache.lucene.util.hnsw.UpdateableRandomVectorScorer;

/**
 * The scorer of {@link ElementType#BIT} fields: Elasticsearch's score of bit vectors, {@code (bits - hamming) / bits}
 * with {@code bits} the dimension in bits and {@code hamming} the number of differing bits ({@link
 * VectorUtil#xorBitCount}), 1 for equal vectors and 0 for complements, under every similarity (as Elasticsearch's
 * bit flat format scores them). The flat vectors of bit fields are written with it, so that every score of a bit
 * field, Lucene's own exact search and a merge's included, is Hamming's.
 */
public final class HammingVectorsScorer implements FlatVectorsScorer {

  /** The one instance: it holds nothing. */
  public static final HammingVectorsScorer INSTANCE = new HammingVectorsScorer();

  private HammingVectorsScorer() {}

  /** The score of two packed bit vectors of the same length. */
  public static float score(byte[] a, byte[] b) {
    return score(VectorUtil.xorBitCount(a, b), a.length * Byte.SIZE);
  }

  /** The score of a Hamming distance between vectors of {@code bits} bits (the GPU's distances become scores so). */
  public static float score(int hamming, int bits) {
    return (bits - hamming) / (float) bits;
  }

  @Override
  public RandomVectorScorerSupplier getRandomVectorScorerSupplier(
      VectorSimilarityFunction similarity, KnnVectorValues vectors) throws IOException {
    return new Supplier(bytes(vectors));
  }

  @Override
  public RandomVectorScorer getRandomVectorScorer(
      VectorSimilarityFunction similarity, KnnVectorValues vectors, float[] target) {
    throw new IllegalArgumentException("bit vectors are scored against bit (byte) queries, not float ones");
  }

  @Override
  public RandomVectorScorer getRandomVectorScorer(
      VectorSimilarityFunction similarity, KnnVectorValues vectors, byte[] target) {
    ByteVectorValues values = bytes(vectors);
    FlatVectorsScorer.checkDimensions(target.length, values.dimension());
    return new RandomVectorScorer.AbstractRandomVectorScorer(values) {
      @Override
      public float score(int ord) throws IOException {
        return HammingVectorsScorer.score(values.vectorValue(ord), target);
      }
    };
  }

  private static ByteVectorValues bytes(KnnVectorValues vectors) {
    if (vectors instanceof ByteVectorValues bytes) {
      return bytes;
    }
    throw new IllegalArgumentException("bit vectors are byte vectors, not " + vectors.getEncoding());
  }

  @Override
  public String toString() {
    return "HammingVectorsScorer()";
  }

  /** Scores of stored vectors against each other (graph builds of Lucene's own, merges). */
  private static final class Supplier implements RandomVectorScorerSupplier {
    private final ByteVectorValues vectors;

    Supplier(ByteVectorValues vectors) {
      this.vectors = vectors;
    }

    @Override
    public UpdateableRandomVectorScorer scorer() throws IOException {
      ByteVectorValues queries = vectors.copy();
      ByteVectorValues values = vectors.copy();
      return new UpdateableRandomVectorScorer.AbstractUpdateableRandomVectorScorer(values) {
        private byte[] query;

        @Override
        public void setScoringOrdinal(int ord) throws IOException {
          query = queries.vectorValue(ord);
        }

        @Override
        public float score(int ord) throws IOException {
          return HammingVectorsScorer.score(values.vectorValue(ord), query);
        }
      };
    }

    @Override
    public RandomVectorScorerSupplier copy() throws IOException {
      return new Supplier(vectors.copy());
    }
  }
}
