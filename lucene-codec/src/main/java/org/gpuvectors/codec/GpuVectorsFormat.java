package org.gpuvectors.codec;

import java.io.IOException;
import java.util.List;
import java.util.Objects;
import org.apache.lucene.codecs.KnnVectorsFormat;
import org.apache.lucene.codecs.KnnVectorsReader;
import org.apache.lucene.codecs.KnnVectorsWriter;
import org.apache.lucene.codecs.lucene99.Lucene99FlatVectorsFormat;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.SegmentReadState;
import org.apache.lucene.index.SegmentWriteState;
import org.apache.lucene.index.VectorEncoding;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.gpuvectors.codec.index.ElementType;

/**
 * A vector format that keeps the raw vectors in flat vectors formats (one per kind of storage: see below) and adds,
 * per field, a GPU-searchable index structure chosen by the field's {@link IndexType}, for every {@link ElementType}.
 *
 * <p>The index type of a field comes from the {@link FieldInfo} attribute {@link
 * #INDEX_TYPE_ATTRIBUTE} (the lower-case {@link IndexType#typeName()}) and its parameters from the
 * attributes {@link IndexParams#ATTRIBUTE_PREFIX}{@code <name>} ({@link IndexParams}); fields without
 * them get the format's defaults ({@link IndexType#FLAT} unless constructed otherwise). Use {@link
 * #markField(FieldType, IndexParams)} to tag a vector field type. {@code flat} (exact search),
 * {@code ivf_flat}, {@code ivf_pq} and {@code graph} are implemented; writing any other type fails
 * with an {@link IllegalArgumentException}. An {@code ivf_flat}, {@code ivf_pq} or {@code graph}
 * segment field with fewer vectors than the format's threshold ({@code ivfMinVectors}, a constructor
 * argument, {@value #DEFAULT_IVF_MIN_VECTORS} by default) is written as flat: each segment's meta entry says which structure it holds.
 *
 * <p>The raw vectors live in flat vectors formats, one per kind of storage, each under a segment suffix of its own
 * ({@code FlatFormats}): float and byte vectors in the files of {@link Lucene99FlatVectorsFormat} ({@code .vec},
 * {@code .vemf}) under the segment's suffix; bit vectors in the same format's files, scored by Hamming, under the
 * suffix {@code bit}; bfloat16 vectors in {@link org.gpuvectors.codec.bf16.BFloat16FlatVectorsFormat} (2 bytes a
 * dimension, files {@code .vecbf}, {@code .vembf}) under the suffix {@code
 * bf16}. A segment has the files of the last two only when it has fields of those types.
 *
 * <h2>Element types</h2>
 *
 * <p>A field's {@link ElementType} ({@link #ELEMENT_TYPE_ATTRIBUTE}) picks its flat format and its scores: float and
 * bfloat16 vectors are scored as Lucene scores floats, byte vectors as Lucene scores bytes, bit vectors by
 * Elasticsearch's Hamming score ({@link org.gpuvectors.codec.index.HammingVectorsScorer}) under every similarity.
 * Every index type is built, for every element type, over the vectors' float view ({@link
 * org.gpuvectors.codec.index.FloatView}: a byte as its value, a bit as 0 or 1 whose squared L2 distance is the Hamming
 * distance), so k-means, product quantization and graphs are the same code and the same layouts; searches choose
 * candidates in the view and score them with the element type's scorer. {@code ivf_pq} is refused for bit vectors: a
 * bit vector is one bit a dimension already, smaller than its product-quantized codes.
 *
 * <p>This format adds two files per segment:
 *
 * <h2>.gvm (vector index metadata) file</h2>
 *
 * <p>Starts with an index header (codec <code>GpuVectorsFormatMeta</code>, segment id and
 * suffix). Then, for each field written by this format (a field's entry: written by {@code GpuVectorsWriter}, read
 * by {@code GpuVectorsReader.FieldEntry#create}):
 *
 * <ul>
 *   <li><b>[int32]</b> field number
 *   <li><b>[vint]</b> index type code: 0 = flat, 1 = ivf_flat, 2 = ivf_pq, 3 = pqt, 4 = graph (see
 *       {@link IndexType#code()})
 *   <li><b>[int32]</b> vector encoding: 0 = BYTE, 1 = FLOAT32 (a fixed list, never an {@code
 *       ordinal()})
 *   <li><b>[int32]</b> similarity function: 0 = EUCLIDEAN, 1 = DOT_PRODUCT, 2 = COSINE, 3 =
 *       MAXIMUM_INNER_PRODUCT (a fixed list, never an {@code ordinal()})
 *   <li><b>[vint]</b> element type (version 1 on): 0 = float, 1 = byte, 2 = bit, 3 = bfloat16 (a fixed list, never
 *       an {@code ordinal()}); it says which flat format holds the field's raw vectors. Version 0 has no such entry:
 *       float for FLOAT32 fields, byte for BYTE fields
 *   <li><b>[vint]</b> vector dimension
 *   <li><b>[int32]</b> number of documents with a vector in this field
 *   <li><b>[vlong]</b> offset of this field's data in the .gvd file
 *   <li><b>[vlong]</b> length in bytes of this field's data in the .gvd file (0 for flat)
 * </ul>
 *
 * <p>After the last field: <b>[int32]</b> -1 (end-of-fields marker), then the codec footer.
 *
 * <h2>.gvd (vector index data) file</h2>
 *
 * <p>Starts with an index header (codec <code>GpuVectorsFormatData</code>, segment id and
 * suffix), ends with the codec footer. In between, each field's data at the offset/length recorded
 * in the .gvm file, written by the structure as built ({@code *Layout}) and read back by the structure as read
 * ({@code *Field}; the reader's {@code FieldEntry} holds it):
 *
 * <ul>
 *   <li><b>flat</b>: empty; the raw vectors are searched directly.
 *   <li><b>ivf_flat</b> (inverted lists of raw vectors; written by {@link org.gpuvectors.codec.ivf.IvfLayout},
 *       read by {@link org.gpuvectors.codec.ivf.IvfField}):
 *       <ul>
 *         <li><b>[vint]</b> nlist, the number of lists (k-means centroids)
 *         <li><b>[vint]</b> the lists a query probes by default (nprobe, at most nlist)
 *         <li><b>[vint]</b> training points, <b>[vint]</b> k-means iterations, <b>[int64]</b> seed
 *         <li><b>[float32 x dims] x nlist</b> the centroids (normalised for cosine)
 *         <li><b>[int32] x (nlist + 1)</b> list offsets: list l holds positions [offsets[l],
 *             offsets[l + 1]), offsets[nlist] = the field's vector count
 *         <li><b>[int32] x count</b> vector ordinals by position, ascending within each list
 *       </ul>
 *       The vectors themselves are read from the flat vectors format (by ordinal).
 *   <li><b>ivf_pq</b> (inverted lists of product-quantized residuals, re-ranked with the raw vectors;
 *       written by {@link org.gpuvectors.codec.ivf.IvfPqLayout}, read by {@link
 *       org.gpuvectors.codec.ivf.IvfPqField}; {@code dsub} = dims / pq_m, {@code ksub} =
 *       2<sup>pq_bits</sup>):
 *       <ul>
 *         <li>the lists exactly as <b>ivf_flat</b> writes them (everything above)
 *         <li><b>[vint]</b> version of the ivf_pq part (0)
 *         <li><b>[vint]</b> pq_m, the sub-quantizers (divides dims), <b>[vint]</b> pq_bits (1 to 8)
 *         <li><b>[vint]</b> training residuals, <b>[vint]</b> k-means iterations, <b>[int64]</b> seed
 *         <li><b>[float32 x dsub] x ksub x pq_m</b> the codebooks: codeword c of sub-quantizer j at
 *             index j &times; ksub + c. They quantize residuals, vector minus its list's centroid (cosine:
 *             of the normalised vector), in squared L2; a sub-space trained on fewer residuals than
 *             ksub repeats codeword 0 in the unused entries
 *         <li><b>[byte x pq_m] x count</b> the codes by position in the lists (the code of the vector
 *             whose ordinal is at that position): byte j is the codeword of sub-vector j
 *       </ul>
 *       The raw vectors are read from the flat vectors format to re-rank candidates exactly.
 *   <li><b>graph</b> (fixed-degree proximity graph; built by {@link org.gpuvectors.codec.graph.GraphBuilder},
 *       written by {@link org.gpuvectors.codec.graph.GraphLayout}, read by {@link
 *       org.gpuvectors.codec.graph.GraphField}):
 *       <ul>
 *         <li><b>[vint]</b> version of the graph data (0)
 *         <li><b>[vint]</b> degree, the out-degree of every vector (1 to 128)
 *         <li><b>[vint]</b> build_degree, the k of the k-NN graph it was pruned from (degree to 256)
 *         <li><b>[vint]</b> search_width, the beam width of a search at num_candidates up to it
 *         <li><b>[int64]</b> seed of the build's random choices (42)
 *         <li><b>[vint]</b> s, the number of entry points (1 to count)
 *         <li><b>[int32] x s</b> the entry points: distinct vector ordinals, ascending
 *         <li><b>[int32 x degree] x count</b> the adjacency, row-major: row i holds the out-neighbours
 *             of ordinal i (no self loops, no duplicates); a row ends with -1 padding only when the
 *             segment has at most degree vectors
 *       </ul>
 *       The vectors themselves are read from the flat vectors format (by ordinal).
 *   <li>pqt: reserved for PQ tree codebooks.
 * </ul>
 */
public final class GpuVectorsFormat extends KnnVectorsFormat {

  /** The SPI name of this format, written to the index per field. */
  public static final String NAME = "GpuVectorsFormat";

  /**
   * {@link FieldInfo} attribute naming the field's {@link IndexType} (its lower-case {@link
   * IndexType#typeName()}). Absent means {@link IndexType#FLAT}.
   */
  public static final String INDEX_TYPE_ATTRIBUTE = "gpu_vectors.index_type";

  /**
   * {@link FieldInfo} attribute naming the {@link ElementType} of the field's vectors ({@link
   * ElementType#attributeValue()}). Absent: float for float vectors, byte for byte vectors.
   */
  public static final String ELEMENT_TYPE_ATTRIBUTE = "gpu_vectors.element_type";

  /** Largest vector dimension accepted (Elasticsearch's dense_vector limit). */
  public static final int MAX_DIMENSIONS = 4096;

  static final String META_CODEC_NAME = "GpuVectorsFormatMeta";
  static final String DATA_CODEC_NAME = "GpuVectorsFormatData";
  static final String META_EXTENSION = "gvm";
  static final String DATA_EXTENSION = "gvd";

  static final int VERSION_START = 0;
  /** The meta file's field entries say the field's element type. */
  static final int VERSION_ELEMENT_TYPE = 1;
  static final int VERSION_CURRENT = VERSION_ELEMENT_TYPE;

  /** End-of-fields marker in the meta file. */
  static final int END_OF_FIELDS = -1;

  /**
   * Similarity functions as stored in the meta file: the position in this list is the on-disk
   * value. Append only.
   */
  static final List<VectorSimilarityFunction> SIMILARITY_FUNCTIONS =
      List.of(
          VectorSimilarityFunction.EUCLIDEAN,
          VectorSimilarityFunction.DOT_PRODUCT,
          VectorSimilarityFunction.COSINE,
          VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT);

  /**
   * Vector encodings as stored in the meta file: the position in this list is the on-disk value.
   * Append only.
   */
  static final List<VectorEncoding> VECTOR_ENCODINGS =
      List.of(VectorEncoding.BYTE, VectorEncoding.FLOAT32);

  /**
   * Element types as stored in the meta file: the position in this list is the on-disk value. Append only.
   */
  static final List<ElementType> ELEMENT_TYPES =
      List.of(ElementType.FLOAT, ElementType.BYTE, ElementType.BIT, ElementType.BFLOAT16);

  /**
   * The fewest vectors a segment field needs by default for its IVF lists or its graph to be built (smaller
   * segments stay flat: exact search over a few thousand vectors costs less than probing lists or walking a
   * graph, and needs no build).
   */
  public static final int DEFAULT_IVF_MIN_VECTORS = 10_000;

  private final FlatFormats flatFormats;
  private final IndexParams unmarkedFields;
  private final int ivfMinVectors;

  /**
   * The format as readers find it by its SPI name; writes IVF lists and graphs for segment fields of at least
   * {@value #DEFAULT_IVF_MIN_VECTORS} vectors.
   */
  public GpuVectorsFormat() {
    this(DEFAULT_IVF_MIN_VECTORS);
  }

  /** A format that builds IVF lists for segment fields of at least {@code ivfMinVectors} vectors. */
  public GpuVectorsFormat(int ivfMinVectors) {
    this(IndexParams.FLAT, ivfMinVectors);
  }

  /**
   * A format that indexes fields without the {@link #INDEX_TYPE_ATTRIBUTE} as {@code unmarkedFields}
   * says (for Lucene users who give one format to every vector field, e.g. through {@code
   * PerFieldKnnVectorsFormat}), and builds IVF lists for segment fields of at least {@code
   * ivfMinVectors} vectors.
   */
  public GpuVectorsFormat(IndexParams unmarkedFields, int ivfMinVectors) {
    super(NAME);
    if (ivfMinVectors < 0) {
      throw new IllegalArgumentException("ivfMinVectors must be >= 0 but was [" + ivfMinVectors + "]");
    }
    if (unmarkedFields.type().isImplemented() == false) {
      throw new IllegalArgumentException("index type [" + unmarkedFields.type() + "] is not implemented yet");
    }
    this.unmarkedFields = unmarkedFields;
    this.ivfMinVectors = ivfMinVectors;
    this.flatFormats = FlatFormats.standard();
  }

  @Override
  public KnnVectorsWriter fieldsWriter(SegmentWriteState state) throws IOException {
    return new GpuVectorsWriter(state, new FlatWriters(flatFormats, state), unmarkedFields, ivfMinVectors);
  }

  @Override
  public KnnVectorsReader fieldsReader(SegmentReadState state) throws IOException {
    return new GpuVectorsReader(state, flatFormats);
  }

  @Override
  public int getMaxDimensions(String fieldName) {
    return MAX_DIMENSIONS;
  }

  @Override
  public String toString() {
    return NAME
        + "(name="
        + NAME
        + ", flatVectorsFormat="
        + flatFormats.floatsAndBytes()
        + (unmarkedFields.equals(IndexParams.FLAT) ? "" : ", unmarkedFields=" + unmarkedFields)
        + ", ivfMinVectors="
        + ivfMinVectors
        + ")";
  }

  /**
   * Returns a frozen copy of a vector field type (e.g. from {@code
   * KnnFloatVectorField.createFieldType}) tagged with the given index type, so that {@link
   * GpuVectorsCodec} routes the field to this format.
   *
   * @throws IllegalArgumentException if the field type is not a vector field type
   * @throws NullPointerException if an argument is null
   */
  public static FieldType markField(FieldType vectorFieldType, IndexType type) {
    Objects.requireNonNull(type, "type");
    return markField(vectorFieldType, new IndexParams(type, java.util.Map.of()));
  }

  /**
   * Returns a frozen copy of a vector field type tagged with an index type and its parameters
   * ({@link IndexParams#putAttributes}); the dimension-dependent checks run here.
   *
   * @throws IllegalArgumentException if the field type is not a vector field type, or a parameter
   *     does not fit its dimension
   */
  public static FieldType markField(FieldType vectorFieldType, IndexParams params) {
    Objects.requireNonNull(vectorFieldType, "vectorFieldType");
    Objects.requireNonNull(params, "params");
    if (vectorFieldType.vectorDimension() <= 0) {
      throw new IllegalArgumentException(
          "field type is not a vector field type (vector dimension is "
              + vectorFieldType.vectorDimension()
              + ")");
    }
    params.checkDimension(vectorFieldType.vectorDimension());
    FieldType marked = new FieldType(vectorFieldType);
    params.putAttributes(marked);
    marked.freeze();
    return marked;
  }

  /**
   * Returns a frozen copy of a vector field type tagged with an index type, its parameters and the element type of
   * its vectors ({@link #ELEMENT_TYPE_ATTRIBUTE}).
   *
   * @throws IllegalArgumentException as {@link #markField(FieldType, IndexParams)}, or if the field type's encoding is
   *     not the element type's
   */
  public static FieldType markField(FieldType vectorFieldType, IndexParams params, ElementType elementType) {
    Objects.requireNonNull(elementType, "elementType");
    Objects.requireNonNull(params, "params");
    checkIndexType(params.type(), elementType);
    if (vectorFieldType.vectorEncoding() != elementType.encoding()) {
      throw new IllegalArgumentException(
          "element type ["
              + elementType.attributeValue()
              + "] needs "
              + elementType.encoding()
              + " vectors but the field type has "
              + vectorFieldType.vectorEncoding());
    }
    FieldType marked = new FieldType(markField(vectorFieldType, params));
    marked.putAttribute(ELEMENT_TYPE_ATTRIBUTE, elementType.attributeValue());
    marked.freeze();
    return marked;
  }

  /**
   * The element type of a field's vectors: its {@link #ELEMENT_TYPE_ATTRIBUTE}, else the default of its encoding.
   *
   * @throws IllegalArgumentException if the attribute names an unknown element type or one of another encoding
   */
  public static ElementType elementType(FieldInfo fieldInfo) {
    try {
      return ElementType.of(fieldInfo.getAttribute(ELEMENT_TYPE_ATTRIBUTE), fieldInfo.getVectorEncoding());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("field [" + fieldInfo.name + "]: " + e.getMessage(), e);
    }
  }

  /**
   * Refuses an index type that a field of this element type cannot have: {@code ivf_pq} over bit vectors (a bit
   * vector is already one bit a dimension, smaller than product-quantized codes of it).
   *
   * @throws IllegalArgumentException naming the pair and the reason
   */
  public static void checkIndexType(IndexType type, ElementType elementType) {
    if (type == IndexType.IVF_PQ && elementType == ElementType.BIT) {
      throw new IllegalArgumentException(
          "index type [ivf_pq] is not supported for element type [bit]: a bit vector is already one bit a dimension, "
              + "smaller than product-quantized codes of it; use [flat], [ivf_flat] or [graph]");
    }
  }

  /** Whether the field carries {@link #INDEX_TYPE_ATTRIBUTE}, i.e. belongs to this format. */
  public static boolean isMarked(FieldInfo fieldInfo) {
    return fieldInfo.getAttribute(INDEX_TYPE_ATTRIBUTE) != null;
  }

  /**
   * Returns the index type of a field: {@link IndexType#FLAT} without the attribute.
   *
   * @throws IllegalArgumentException if the attribute names an unknown index type
   */
  public static IndexType indexType(FieldInfo fieldInfo) {
    String name = fieldInfo.getAttribute(INDEX_TYPE_ATTRIBUTE);
    if (name == null) {
      return IndexType.FLAT;
    }
    try {
      return IndexType.fromName(name);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "field [" + fieldInfo.name + "]: " + e.getMessage(), e);
    }
  }
}
