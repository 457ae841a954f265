package org.gpuvectors.codec.bf16;

import java.io.IOException;
import java.util.Objects;
import org.apache.lucene.codecs.hnsw.DefaultFlatVectorScorer;
import org.apache.lucene.codecs.hnsw.FlatVectorsFormat;
import org.apache.lucene.codecs.hnsw.FlatVectorsReader;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.codecs.hnsw.FlatVectorsWriter;
import org.apache.lucene.index.SegmentReadState;
import org.apache.lucene.index.SegmentWriteState;

/**
 * Flat (raw) storage of {@code FLOAT32} vector fields at two bytes a dimension: each float is
 * rounded to the nearest bfloat16 ({@link BFloat16}) when indexed, and read back as the floats
 * those bfloat16 values stand for. Everything that reads the vectors ({@link
 * org.apache.lucene.index.FloatVectorValues}, scorers, merges, other index structures built over
 * them) sees the rounded floats, so a flush and a merge of the same documents hold the same values.
 *
 * <p>The files mirror Lucene's {@code Lucene99FlatVectorsFormat}, with their own names so both can
 * live in one segment (float fields in one, bfloat16 fields in the other):
 *
 * <h2>.vecbf (vector data) file</h2>
 *
 * <p>An index header, then per field: padding to a multiple of {@value #VECTOR_ALIGNMENT} bytes,
 * the vectors in ordinal order, each {@code dims} little-endian bfloat16 values ({@code dims * 2}
 * bytes), then the field's docs-with-vector set and ordinal-to-doc map when not every document has
 * a vector (as {@code OrdToDocDISIReaderConfiguration} writes them). A footer ends the file.
 *
 * <h2>.vembf (vector metadata) file</h2>
 *
 * <p>An index header, then per field:
 *
 * <ul>
 *   <li><b>[int32]</b> field number; -1 ends the fields
 *   <li><b>[int32]</b> similarity function, an index into Lucene's fixed list ({@code
 *       Lucene99HnswVectorsReader.SIMILARITY_FUNCTIONS}), never the enum's ordinal
 *   <li><b>[vint]</b> dimensions
 *   <li><b>[vlong]</b> offset of the field's vectors in the .vecbf file
 *   <li><b>[vlong]</b> length in bytes of the field's vectors: count * dims * 2
 *   <li><b>[int32]</b> count: documents with a vector
 *   <li>the ordinal-to-doc configuration, as {@code OrdToDocDISIReaderConfiguration#writeStoredMeta}
 *       writes it (empty, dense, or where the sparse structures lie in the .vecbf file)
 * </ul>
 *
 * then the footer.
 *
 * <p>Only {@code FLOAT32} fields can be written; a {@code BYTE} field is refused when added.
 */
public final class BFloat16FlatVectorsFormat extends FlatVectorsFormat {

  static final String NAME = "BFloat16FlatVectorsFormat";
  static final String META_CODEC_NAME = "BFloat16FlatVectorsFormatMeta";
  static final String VECTOR_DATA_CODEC_NAME = "BFloat16FlatVectorsFormatData";
  static final String META_EXTENSION = "vembf";
  static final String VECTOR_DATA_EXTENSION = "vecbf";

  static final int VERSION_START = 0;
  static final int VERSION_CURRENT = VERSION_START;

  /** Block shift of the ordinal-to-doc map of sparse fields (Lucene's flat format uses the same). */
  static final int DIRECT_MONOTONIC_BLOCK_SHIFT = 16;

  /** Each field's vectors start on a 64-byte (cache line) boundary, as Lucene's float vectors do. */
  static final int VECTOR_ALIGNMENT = 64;

  private final FlatVectorsScorer vectorsScorer;

  /** Scores with Lucene's {@link DefaultFlatVectorScorer} over the decoded floats. */
  public BFloat16FlatVectorsFormat() {
    this(DefaultFlatVectorScorer.INSTANCE);
  }

  /**
   * Scores with {@code vectorsScorer}, which is handed the decoded {@link
   * org.apache.lucene.index.FloatVectorValues}. Lucene's vectorized flat scorer ({@code
   * FlatVectorScorerUtil.getLucene99FlatVectorsScorer()}) is safe too: it reads raw float bytes only
   * from values that expose their file slice, which these values do not, so it falls back to the
   * decoded floats.
   */
  public BFloat16FlatVectorsFormat(FlatVectorsScorer vectorsScorer) {
    super(NAME);
    this.vectorsScorer = Objects.requireNonNull(vectorsScorer, "vectorsScorer");
  }

  @Override
  public FlatVectorsWriter fieldsWriter(SegmentWriteState state) throws IOException {
    return new BFloat16FlatVectorsWriter(state, vectorsScorer);
  }

  @Override
  public FlatVectorsReader fieldsReader(SegmentReadState state) throws IOException {
    return new BFloat16FlatVectorsReader(state, vectorsScorer);
  }

  @Override
  public String toString() {
    return NAME + "(vectorsScorer=" + vectorsScorer + ")";
  }
}
