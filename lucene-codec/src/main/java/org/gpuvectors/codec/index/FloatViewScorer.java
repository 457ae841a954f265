package org.gpuvectors.codec.index;

import java.io.IOException;
import java.util.Objects;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.apache.lucene.util.hnsw.RandomVectorScorerSupplier;

/**
 * A field's own scorer that also takes its vectors' {@link FloatView}: float queries over {@link FloatViewVectors}
 * are turned back into the byte or bit query they view and scored by the element type's scorer over the byte
 * vectors, so that the index types' CPU searches, which walk and scan in the float view, hand out exactly the scores
 * of {@code dense_vector} (Lucene's for byte vectors, Elasticsearch's Hamming score for bit vectors). Anything else
 * goes to the field's scorer unchanged.
 */
public final class FloatViewScorer implements FlatVectorsScorer {

  private final FlatVectorsScorer elementScorer;

  /** Scores views with {@code elementScorer}, the scorer of the field's flat vectors. */
  public FloatViewScorer(FlatVectorsScorer elementScorer) {
    this.elementScorer = Objects.requireNonNull(elementScorer);
  }

  @Override
  public RandomVectorScorerSupplier getRandomVectorScorerSupplier(
      VectorSimilarityFunction similarity, KnnVectorValues vectors) throws IOException {
    return elementScorer.getRandomVectorScorerSupplier(similarity, unwrap(vectors));
  }

  @Override
  public RandomVectorScorer getRandomVectorScorer(
      VectorSimilarityFunction similarity, KnnVectorValues vectors, float[] target) throws IOException {
    if (vectors instanceof FloatViewVectors view) {
      return elementScorer.getRandomVectorScorer(
          similarity, view.bytes(), FloatView.toBytes(view.elementType(), target));
    }
    return elementScorer.getRandomVectorScorer(similarity, vectors, target);
  }

  @Override
  public RandomVectorScorer getRandomVectorScorer(
      VectorSimilarityFunction similarity, KnnVectorValues vectors, byte[] target) throws IOException {
    return elementScorer.getRandomVectorScorer(similarity, unwrap(vectors), target);
  }

  private static KnnVectorValues unwrap(KnnVectorValues vectors) {
    return vectors instanceof FloatViewVectors view ? view.bytes() : vectors;
  }

  @Override
  public String toString() {
    return "FloatViewScorer(" + elementScorer + ")";
  }
}
