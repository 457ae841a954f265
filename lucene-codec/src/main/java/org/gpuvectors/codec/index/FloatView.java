package org.gpuvectors.codec.index;

import org.apache.lucene.index.VectorEncoding;
import org.apache.lucene.index.VectorSimilarityFunction;

/**
 * The float view of a field's vectors, through which k-means, product quantization and graph builds, the IVF lists'
 * centroids and the GPU's float kernels see every element type without knowing it. A byte is its value as a float; a
 * bit is one float per dimension, 0 or 1, so that the squared L2 distance of two views IS the Hamming distance of the
 * bit vectors; float and bfloat16 vectors are floats already. The view ranks exactly as the element type's own score
 * does (Lucene's byte scores are monotone in the byte distance or product, Elasticsearch's Hamming score in the Hamming
 * distance), so candidates chosen in the view and re-scored by the element type's scorer are what {@code
 * dense_vector} returns.
 */
public final class FloatView {

  private FloatView() {}

  /** Floats per vector in the view of a field with {@code luceneDims} Lucene dimensions (bit: 8 per byte). */
  public static int dimension(ElementType type, int luceneDims) {
    return type == ElementType.BIT ? luceneDims * Byte.SIZE : luceneDims;
  }

  /**
   * The metric the view is ranked by: the similarity's, except for bit vectors, whose Hamming distance is the squared
   * L2 distance of their views whatever similarity the field names (Elasticsearch scores bit vectors by Hamming
   * distance under every similarity).
   */
  public static Metric metric(ElementType type, VectorSimilarityFunction similarity) {
    return type == ElementType.BIT ? Metric.L2 : Metric.of(similarity);
  }

  /** The view of one byte-encoded vector (a byte or a bit vector), into {@code out} (its view's dimension). */
  public static float[] toFloats(ElementType type, byte[] vector, float[] out) {
    checkBytes(type);
    if (type == ElementType.BIT) {
      for (int i = 0; i < vector.length; i++) {
        int b = vector[i];
        for (int j = 0; j < Byte.SIZE; j++) {
          // most significant bit first: dimension 8i + j is bit 7 - j of byte i, as a hex string reads
          out[i * Byte.SIZE + j] = (b >>> (Byte.SIZE - 1 - j)) & 1;
        }
      }
    } else {
      for (int i = 0; i < vector.length; i++) {
        out[i] = vector[i];
      }
    }
    return out;
  }

  /** The view of one byte-encoded vector, in a new array. */
  public static float[] toFloats(ElementType type, byte[] vector) {
    return toFloats(type, vector, new float[dimension(type, vector.length)]);
  }

  /**
   * The byte-encoded vector whose view {@code view} is (the inverse of {@link #toFloats}; a bit is set where the
   * view is above one half).
   *
   * @throws IllegalArgumentException if the view's length does not fit the type
   */
  public static byte[] toBytes(ElementType type, float[] view) {
    checkBytes(type);
    if (type == ElementType.BIT) {
      if (view.length % Byte.SIZE != 0) {
        throw new IllegalArgumentException("a bit vector's view has a multiple of 8 floats, not " + view.length);
      }
      byte[] out = new byte[view.length / Byte.SIZE];
      for (int d = 0; d < view.length; d++) {
        if (view[d] > 0.5f) {
          out[d / Byte.SIZE] |= (byte) (1 << (Byte.SIZE - 1 - d % Byte.SIZE));
        }
      }
      return out;
    }
    byte[] out = new byte[view.length];
    for (int d = 0; d < view.length; d++) {
      out[d] = (byte) view[d];
    }
    return out;
  }

  private static void checkBytes(ElementType type) {
    if (type.encoding() != VectorEncoding.BYTE) {
      throw new IllegalArgumentException("element type [" + type.attributeValue() + "] is not stored as bytes");
    }
  }
}
