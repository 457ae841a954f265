package org.gpuvectors.codec.graph;

import java.io.IOException;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.codec.index.Metric;

/**
 * Distances between a segment's vectors as the graph build ranks them: squared L2, minus the inner
 * product, or minus the cosine (smaller is nearer in every case). One instance per thread: it reads
 * through its own copies of the vector values (an off-heap {@link FloatVectorValues} reuses one
 * buffer per copy).
 */
final class VectorDistances {

  private final FloatVectorValues a;
  private final FloatVectorValues b;
  private final Metric metric;
  /** Cosine: each vector's norm, computed once per build (null otherwise). */
  private final float[] norms;

  private VectorDistances(FloatVectorValues a, FloatVectorValues b, Metric metric, float[] norms) {
    this.a = a;
    this.b = b;
    this.metric = metric;
    this.norms = norms;
  }

  /** The norms a cosine build needs (null for the other metrics). */
  static float[] norms(FloatVectorValues vectors, Metric metric) throws IOException {
    if (metric != Metric.COSINE) {
      return null;
    }
    float[] norms = new float[vectors.size()];
    for (int i = 0; i < norms.length; i++) {
      float[] v = vectors.vectorValue(i);
      norms[i] = (float) Math.sqrt(VectorUtil.dotProduct(v, v));
    }
    return norms;
  }

  /** A reader for one thread; {@code norms} from {@link #norms} (shared, read only). */
  static VectorDistances of(FloatVectorValues vectors, Metric metric, float[] norms) throws IOException {
    return new VectorDistances(vectors.copy(), vectors.copy(), metric, norms);
  }

  /** Vector {@code i} as the first operand of the next {@link #distanceTo} calls (not a copy). */
  float[] vector(int i) throws IOException {
    return a.vectorValue(i);
  }

  /** The distance between {@code x} (vector {@code i}, from {@link #vector}) and vector {@code j}. */
  float distanceTo(float[] x, int i, int j) throws IOException {
    float[] y = b.vectorValue(j);
    return switch (metric) {
      case L2 -> VectorUtil.squareDistance(x, y);
      case INNER_PRODUCT -> -VectorUtil.dotProduct(x, y);
      case COSINE -> {
        float denominator = norms[i] * norms[j];
        yield denominator == 0 ? 0 : -VectorUtil.dotProduct(x, y) / denominator;
      }
    };
  }

  /** The distance between vectors {@code i} and {@code j}. */
  float distance(int i, int j) throws IOException {
    return distanceTo(vector(i), i, j);
  }
}
