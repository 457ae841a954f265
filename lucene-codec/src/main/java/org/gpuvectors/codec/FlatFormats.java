package org.gpuvectors.codec;

import java.util.Objects;
import org.apache.lucene.codecs.hnsw.FlatVectorScorerUtil;
import org.apache.lucene.codecs.hnsw.FlatVectorsFormat;
import org.apache.lucene.codecs.lucene99.Lucene99FlatVectorsFormat;
import org.gpuvectors.codec.bf16.BFloat16FlatVectorsFormat;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.codec.index.HammingVectorsScorer;

/**
 * The flat vectors formats that hold a {@link GpuVectorsFormat} segment's raw vectors, one per kind of storage, and
 * the segment suffix of each one's files: float and byte vectors in Lucene's flat format under the segment's own
 * suffix (the files of every earlier version); bit vectors in Lucene's flat format scored by Hamming ({@link
 * HammingVectorsScorer}: a flat format has one scorer for all its fields, and Lucene's exact search and {@code
 * vectorValues.scorer(...)} score through it) under {@value #BIT_SUFFIX}; bfloat16 vectors in {@link
 * BFloat16FlatVectorsFormat} (2 bytes a dimension) under {@value #BFLOAT16_SUFFIX}. A segment holds the files of the
 * last two only when it has fields of their types.
 */
final class FlatFormats {

  static final String BIT_SUFFIX = "bit";
  static final String BFLOAT16_SUFFIX = "bf16";

  private final FlatVectorsFormat floatsAndBytes;
  private final FlatVectorsFormat bits;
  private final FlatVectorsFormat bfloat16;

  private FlatFormats(FlatVectorsFormat floatsAndBytes, FlatVectorsFormat bits, FlatVectorsFormat bfloat16) {
    this.floatsAndBytes = Objects.requireNonNull(floatsAndBytes);
    this.bits = Objects.requireNonNull(bits);
    this.bfloat16 = Objects.requireNonNull(bfloat16);
  }

  /** The formats of {@link GpuVectorsFormat}. */
  static FlatFormats standard() {
    return new FlatFormats(
        new Lucene99FlatVectorsFormat(FlatVectorScorerUtil.getLucene99FlatVectorsScorer()),
        new Lucene99FlatVectorsFormat(HammingVectorsScorer.INSTANCE),
        // scored as float fields are: the vectorized scorer reads the decoded floats of bfloat16 values
        new BFloat16FlatVectorsFormat(FlatVectorScorerUtil.getLucene99FlatVectorsScorer()));
  }


  /** The format of a field of this element type. */
  FlatVectorsFormat of(ElementType type) {
    return switch (type) {
      case FLOAT, BYTE -> floatsAndBytes;
      case BIT -> bits;
      case BFLOAT16 -> bfloat16;
    };
  }

  /** The files' segment suffix of that format, given the segment's own. */
  static String suffix(ElementType type, String segmentSuffix) {
    String own = switch (type) {
      case FLOAT, BYTE -> null;
      case BIT -> BIT_SUFFIX;
      case BFLOAT16 -> BFLOAT16_SUFFIX;
    };
    if (own == null) {
      return segmentSuffix;
    }
    return segmentSuffix.isEmpty() ? own : segmentSuffix + "_" + own;
  }

  /** The storage kind of an element type: the types that share a format share one (float and byte). */
  static ElementType storage(ElementType type) {
    return type == ElementType.BYTE ? ElementType.FLOAT : type;
  }

  /** The format that float and byte fields use (what {@link GpuVectorsFormat#toString} names). */
  FlatVectorsFormat floatsAndBytes() {
    return floatsAndBytes;
  }
}
