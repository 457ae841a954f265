package org.gpuvectors.codec.index;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.util.List;
import java.util.Random;
import org.apache.lucene.codecs.hnsw.FlatVectorScorerUtil;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.apache.lucene.util.hnsw.RandomVectorScorerSupplier;
import org.apache.lucene.util.hnsw.UpdateableRandomVectorScorer;
import org.junit.jupiter.api.Test;

/** The float view of byte and bit vectors, its scorer, and the Hamming score against a formula counted by hand. */
class FloatViewTests {

  private final Random random = new Random(5);

  @Test
  void byteViewIsTheValues() {
    byte[] v = {-128, -1, 0, 1, 127};
    assertArrayEquals(new float[] {-128, -1, 0, 1, 127}, FloatView.toFloats(ElementType.BYTE, v));
    assertArrayEquals(v, FloatView.toBytes(ElementType.BYTE, FloatView.toFloats(ElementType.BYTE, v)));
  }

  @Test
  void bitViewIsOneFloatABitMostSignificantFirst() {
    byte[] v = {(byte) 0x80, 0x01};
    float[] view = FloatView.toFloats(ElementType.BIT, v);
    assertEquals(16, view.length);
    float[] expected = new float[16];
    expected[0] = 1;
    expected[15] = 1;
    assertArrayEquals(expected, view);
    assertArrayEquals(v, FloatView.toBytes(ElementType.BIT, view));
  }

  /** The squared L2 distance of two bit vectors' views is their Hamming distance, counted by hand. */
  @Test
  void bitViewSquaredL2IsHamming() {
    for (int t = 0; t < 100; t++) {
      byte[] a = new byte[1 + random.nextInt(16)];
      byte[] b = new byte[a.length];
      random.nextBytes(a);
      random.nextBytes(b);
      float l2 = org.apache.lucene.util.VectorUtil.squareDistance(
          FloatView.toFloats(ElementType.BIT, a), FloatView.toFloats(ElementType.BIT, b));
      assertEquals(differingBits(a, b), l2);
    }
  }

  @Test
  void viewMetricAndDimension() {
    assertEquals(Metric.L2, FloatView.metric(ElementType.BIT, VectorSimilarityFunction.COSINE));
    assertEquals(Metric.INNER_PRODUCT, FloatView.metric(ElementType.BYTE, VectorSimilarityFunction.DOT_PRODUCT));
    assertEquals(Metric.COSINE, FloatView.metric(ElementType.BFLOAT16, VectorSimilarityFunction.COSINE));
    assertEquals(64, FloatView.dimension(ElementType.BIT, 8));
    assertEquals(8, FloatView.dimension(ElementType.BYTE, 8));
    assertThrows(IllegalArgumentException.class, () -> FloatView.toFloats(ElementType.FLOAT, new byte[1]));
    assertThrows(IllegalArgumentException.class, () -> FloatView.toBytes(ElementType.BIT, new float[7]));
    assertThrows(IllegalArgumentException.class,
        () -> FloatViewVectors.of(ByteVectorValues.fromBytes(List.of(new byte[1]), 1), ElementType.FLOAT));
  }

  /** Elasticsearch's score of bit vectors, {@code (bits - differing bits) / bits}, by hand, under every similarity. */
  @Test
  void hammingScoresAreTheFormula() throws IOException {
    List<byte[]> vectors = List.of(randomBytes(6), randomBytes(6), randomBytes(6), new byte[6]);
    ByteVectorValues values = ByteVectorValues.fromBytes(vectors, 6);
    byte[] query = randomBytes(6);
    for (VectorSimilarityFunction sim : VectorSimilarityFunction.values()) {
      RandomVectorScorer scorer = HammingVectorsScorer.INSTANCE.getRandomVectorScorer(sim, values, query);
      for (int ord = 0; ord < vectors.size(); ord++) {
        assertEquals((48 - differingBits(vectors.get(ord), query)) / 48f, scorer.score(ord), sim + " ord " + ord);
      }
      RandomVectorScorerSupplier supplier = HammingVectorsScorer.INSTANCE.getRandomVectorScorerSupplier(sim, values);
      UpdateableRandomVectorScorer between = supplier.scorer();
      between.setScoringOrdinal(1);
      assertEquals(1f, between.score(1));
      assertEquals((48 - differingBits(vectors.get(1), vectors.get(3))) / 48f, between.score(3));
    }
    byte[] ones = {-1, -1, -1, -1, -1, -1};
    assertEquals(0f, HammingVectorsScorer.score(ones, new byte[6]));
    assertEquals(1f, HammingVectorsScorer.score(ones, ones.clone()));
    assertEquals(0.75f, HammingVectorsScorer.score(12, 48));
    assertThrows(IllegalArgumentException.class,
        () -> HammingVectorsScorer.INSTANCE.getRandomVectorScorer(VectorSimilarityFunction.EUCLIDEAN, values, new byte[5]));
    assertThrows(IllegalArgumentException.class,
        () -> HammingVectorsScorer.INSTANCE.getRandomVectorScorer(VectorSimilarityFunction.EUCLIDEAN, values, new float[48]));
  }

  /** A float query over the view scores exactly as the byte query over the bytes, by the element type's scorer. */
  @Test
  void viewScorerScoresTheBytes() throws IOException {
    List<byte[]> vectors = List.of(randomBytes(8), randomBytes(8), randomBytes(8));
    ByteVectorValues bytes = ByteVectorValues.fromBytes(vectors, 8);
    byte[] query = randomBytes(8);
    for (ElementType type : new ElementType[] {ElementType.BYTE, ElementType.BIT}) {
      var elementScorer = type == ElementType.BIT
          ? HammingVectorsScorer.INSTANCE : FlatVectorScorerUtil.getLucene99FlatVectorsScorer();
      FloatViewScorer viewScorer = new FloatViewScorer(elementScorer);
      FloatViewVectors view = FloatViewVectors.of(bytes, type);
      assertSame(bytes, view.bytes());
      RandomVectorScorer viaView = viewScorer.getRandomVectorScorer(
          VectorSimilarityFunction.EUCLIDEAN, view, FloatView.toFloats(type, query));
      RandomVectorScorer direct = elementScorer.getRandomVectorScorer(VectorSimilarityFunction.EUCLIDEAN, bytes, query);
      for (int ord = 0; ord < vectors.size(); ord++) {
        assertEquals(direct.score(ord), viaView.score(ord), type + " ord " + ord);
        assertArrayEquals(FloatView.toFloats(type, vectors.get(ord)), view.vectorValue(ord));
      }
    }
  }

  private byte[] randomBytes(int n) {
    byte[] b = new byte[n];
    random.nextBytes(b);
    return b;
  }

  private static int differingBits(byte[] a, byte[] b) {
    int n = 0;
    for (int i = 0; i < a.length; i++) {
      for (int j = 0; j < 8; j++) {
        n += ((a[i] >> j) & 1) ^ ((b[i] >> j) & 1);
      }
    }
    return n;
  }
}
