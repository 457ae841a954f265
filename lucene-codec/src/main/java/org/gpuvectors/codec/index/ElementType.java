package org.gpuvectors.codec.index;

import java.util.Locale;
import org.apache.lucene.index.VectorEncoding;

/**
 * What one dimension of a field's vectors is, as Elasticsearch's {@code dense_vector} names it. Lucene knows only two
 * encodings; the element type says how the codec stores, scores and uploads them:
 *
 * <ul>
 *   <li>{@link #FLOAT}: 4 bytes a dimension, Lucene's {@link VectorEncoding#FLOAT32}.
 *   <li>{@link #BYTE}: a signed byte a dimension, Lucene's {@link VectorEncoding#BYTE}.
 *   <li>{@link #BIT}: one bit a dimension, packed 8 to a byte; Lucene sees a {@link VectorEncoding#BYTE} vector of
 *       dims / 8 bytes. Scored by Hamming distance, as {@code dense_vector}'s bit vectors are.
 *   <li>{@link #BFLOAT16}: Lucene sees {@link VectorEncoding#FLOAT32} vectors (queries and values are floats); the
 *       codec stores 2 bytes a dimension (the high half of the float, rounded to nearest even), as Elasticsearch's
 *       bfloat16 format does.
 * </ul>
 *
 * <p>A field's element type is the field attribute {@code gpu_vectors.element_type} (its {@link #attributeValue()});
 * without it, a field is {@link #FLOAT} for float vectors and {@link #BYTE} for byte vectors.
 */
public enum ElementType {
  FLOAT(VectorEncoding.FLOAT32),
  BYTE(VectorEncoding.BYTE),
  BIT(VectorEncoding.BYTE),
  BFLOAT16(VectorEncoding.FLOAT32);

  private final VectorEncoding encoding;

  ElementType(VectorEncoding encoding) {
    this.encoding = encoding;
  }

  /** The Lucene encoding of the field's vectors. */
  public VectorEncoding encoding() {
    return encoding;
  }

  /** The attribute's value, as Elasticsearch's mapping names the type ({@code float}, {@code byte}, ...). */
  public String attributeValue() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The element type named by {@code value}, the default of {@code encoding} when it is null. */
  public static ElementType of(String value, VectorEncoding encoding) {
    if (value == null) {
      return encoding == VectorEncoding.BYTE ? BYTE : FLOAT;
    }
    for (ElementType type : values()) {
      if (type.attributeValue().equals(value)) {
        if (type.encoding != encoding) {
          throw new IllegalArgumentException(
              "element type [" + value + "] needs " + type.encoding + " vectors but the field has " + encoding);
        }
        return type;
      }
    }
    throw new IllegalArgumentException("unknown element type [" + value + "]");
  }
}
