package org.gpuvectors.codec.gpu;

import java.io.IOException;
import java.util.Objects;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.cuda.flat.GpuElementFlatIndex;

/**
 * A byte, bit or bfloat16 segment field's vectors as the GPU service uploads them, at their own size on the device
 * ({@link GpuElementFlatIndex}): Lucene's byte vector values for {@link ElementType#BYTE} and {@link ElementType#BIT}
 * (a bit vector's dims / 8 bytes), its float vector values for {@link ElementType#BFLOAT16} (the bfloat16 values the
 * format read back, as floats). A {@link ElementType#FLOAT} field comes this way only as its compact copy ({@link
 * ResidentForm#COMPACT_COPY}): its floats rounded to bfloat16 on the device, for candidates that the host re-ranks;
 * its exact search keeps the float path.
 *
 * @param type the field's element type ({@link ElementType#FLOAT}: a float field's compact copy)
 * @param values the field's vectors by ordinal
 */
public record ElementVectors(ElementType type, KnnVectorValues values) {

  public ElementVectors {
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(values, "values");
    boolean bytes = values instanceof ByteVectorValues;
    boolean ok = switch (type) {
      case BYTE, BIT -> bytes;
      case BFLOAT16, FLOAT -> values instanceof FloatVectorValues;
    };
    if (!ok) {
      throw new IllegalArgumentException("element type " + type + " cannot be searched from "
          + values.getClass().getSimpleName());
    }
  }

  /** Vectors of the field in this segment. */
  public int size() {
    return values.size();
  }

  /** Values a vector as Lucene stores it (bit: bytes, dims / 8), and floats a query. */
  public int dims() {
    return values.dimension();
  }

  /** The device's element of this type (a float field's compact copy: bfloat16). */
  public GpuElementFlatIndex.Element element() {
    return switch (type) {
      case BYTE -> GpuElementFlatIndex.Element.BYTE;
      case BIT -> GpuElementFlatIndex.Element.BIT;
      case BFLOAT16, FLOAT -> GpuElementFlatIndex.Element.BFLOAT16;
    };
  }

  /**
   * The distance the device ranks this field's vectors by: Hamming for bit vectors whatever the similarity (as {@code
   * dense_vector}'s bit vectors score), else the similarity's (raw inner product for dot_product and max inner
   * product: the codec scales it to Lucene's score).
   */
  public Metric metric(VectorSimilarityFunction similarity) {
    return type == ElementType.BIT ? Metric.L2 : Metric.of(similarity);
  }

  /** Device bytes the field takes when resident: its rows alone, at their own size. */
  public long deviceBytes() {
    return GpuElementFlatIndex.deviceBytes(element(), size(), dims());
  }

  /** A copy with its own reader (uploads read from another thread than the search's). */
  ElementVectors copy() throws IOException {
    return new ElementVectors(type, values.copy());
  }
}
