package org.gpuvectors.codec;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.TreeMap;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.index.FieldInfo;
import org.gpuvectors.codec.graph.GraphBuilder;

/**
 * An index type and the build / search parameters a user gave for it (absent ones take the
 * defaults the index type chooses from the segment's size, documented on each type). The codec
 * owns the schema: the Elasticsearch mapping validates with it, and the parameters travel to the
 * codec as {@link FieldInfo} attributes ({@link #ATTRIBUTE_PREFIX} + name), where the writer reads
 * and validates them again.
 *
 * @param values parameter name to value, only the parameters given
 */
public record IndexParams(IndexType type, Map<String, Integer> values) {

  /** Field attributes holding parameters start with this. */
  public static final String ATTRIBUTE_PREFIX = "gpu_vectors.";

  /** Coarse quantizer: number of inverted lists (k-means centroids) per segment. */
  public static final String NLIST = "nlist";
  /** Inverted lists scanned per query at {@code num_candidates <= 100} (more above, see the IVF docs). */
  public static final String NPROBE = "nprobe";
  /** Product quantizer: sub-quantizers (must divide the dimension). */
  public static final String PQ_M = "pq_m";
  /** Product quantizer: bits per sub-quantizer code. */
  public static final String PQ_BITS = "pq_bits";
  /** Graph: out-degree of the persisted graph. */
  public static final String DEGREE = "degree";
  /** Graph: neighbours per vector of the k-NN graph the build prunes (at least {@code degree}). */
  public static final String BUILD_DEGREE = "build_degree";
  /** Graph: the search's beam (best-first list) width at {@code num_candidates} up to it. */
  public static final String SEARCH_WIDTH = "search_width";

  /** Integer parameters each type accepts, with inclusive bounds {min, max}. */
  private static final Map<IndexType, Map<String, int[]>> SCHEMA =
      Map.of(
          IndexType.FLAT,
          Map.of(),
          IndexType.IVF_FLAT,
          Map.of(NLIST, new int[] {1, 1 << 16}, NPROBE, new int[] {1, 1 << 16}),
          IndexType.IVF_PQ,
          Map.of(
              NLIST, new int[] {1, 1 << 16},
              NPROBE, new int[] {1, 1 << 16},
              PQ_M, new int[] {1, 4096},
              PQ_BITS, new int[] {4, 8}),
          IndexType.PQT,
          Map.of(PQ_M, new int[] {1, 4096}, PQ_BITS, new int[] {4, 8}, NPROBE, new int[] {1, 1 << 16}),
          IndexType.GRAPH,
          Map.of(
              DEGREE, new int[] {GraphBuilder.MIN_DEGREE, GraphBuilder.MAX_DEGREE},
              BUILD_DEGREE, new int[] {GraphBuilder.MIN_DEGREE, GraphBuilder.MAX_BUILD_DEGREE},
              SEARCH_WIDTH, new int[] {GraphBuilder.MIN_SEARCH_WIDTH, GraphBuilder.MAX_SEARCH_WIDTH}));

  /** Flat (exact) search, no parameters. */
  public static final IndexParams FLAT = new IndexParams(IndexType.FLAT, Map.of());

  /**
   * Checks names and bounds, and for {@code graph} that {@code build_degree} is at least {@code degree}.
   *
   * @throws IllegalArgumentException naming the parameter and what is wrong with it
   */
  public IndexParams {
    Objects.requireNonNull(type, "type");
    for (Map.Entry<String, Integer> e : values.entrySet()) {
      checkBounds(type, e.getKey(), Objects.requireNonNull(e.getValue(), e.getKey()));
    }
    values = Collections.unmodifiableMap(new TreeMap<>(values));
    if (type == IndexType.GRAPH) {
      checkGraph(values);
    }
  }

  /**
   * Checks one parameter on its own: that {@code type} takes it and that it is within its bounds (what
   * depends on other parameters is checked by the constructor).
   *
   * @throws IllegalArgumentException naming the parameter and what is wrong with it
   */
  public static void checkBounds(IndexType type, String name, int value) {
    Map<String, int[]> schema = SCHEMA.get(type);
    int[] bounds = schema.get(name);
    if (bounds == null) {
      throw new IllegalArgumentException(
          "unknown parameter ["
              + name
              + "] for index type ["
              + type
              + "]; "
              + (schema.isEmpty()
                  ? "this type takes no parameters"
                  : "valid parameters are " + new TreeMap<>(schema).keySet()));
    }
    if (value < bounds[0] || value > bounds[1]) {
      throw new IllegalArgumentException(
          "[" + name + "] must be in [" + bounds[0] + ", " + bounds[1] + "] but was [" + value + "]");
    }
  }

  /** {@code build_degree} (given or default) must be at least {@code degree} (given or default). */
  private static void checkGraph(Map<String, Integer> values) {
    Integer buildDegree = values.get(BUILD_DEGREE);
    Integer degree = values.get(DEGREE);
    int effectiveDegree = degree == null ? GraphBuilder.DEFAULT_DEGREE : degree;
    if (buildDegree != null && buildDegree < effectiveDegree) {
      throw new IllegalArgumentException(
          "["
              + BUILD_DEGREE
              + "] must be >= ["
              + DEGREE
              + "] ("
              + effectiveDegree
              + (degree == null ? ", the default" : "")
              + ") but was ["
              + buildDegree
              + "]");
    }
  }

  /** The parameters {@code type} accepts, with their bounds {min, max}. */
  public static Map<String, int[]> schema(IndexType type) {
    return SCHEMA.get(type);
  }

  /** A parameter's value, if the user gave it. */
  public OptionalInt get(String name) {
    Integer v = values.get(name);
    return v == null ? OptionalInt.empty() : OptionalInt.of(v);
  }

  /**
   * Checks what depends on the field's dimension ({@code pq_m} must divide it).
   *
   * @throws IllegalArgumentException naming the parameter and the dimension
   */
  public void checkDimension(int dims) {
    OptionalInt m = get(PQ_M);
    if (m.isPresent() && dims % m.getAsInt() != 0) {
      throw new IllegalArgumentException(
          "[" + PQ_M + "] must divide the vector dimension [" + dims + "] but was [" + m.getAsInt() + "]");
    }
  }

  /** Writes the type and the parameters into a (not yet frozen) field type's attributes. */
  public void putAttributes(FieldType fieldType) {
    fieldType.putAttribute(GpuVectorsFormat.INDEX_TYPE_ATTRIBUTE, type.typeName());
    for (Map.Entry<String, Integer> e : values.entrySet()) {
      fieldType.putAttribute(ATTRIBUTE_PREFIX + e.getKey(), Integer.toString(e.getValue()));
    }
  }

  /**
   * The parameters a field carries in its attributes ({@link #FLAT} without any).
   *
   * @throws IllegalArgumentException for an unknown type, an unparsable or out-of-range value, or a
   *     {@code pq_m} that does not divide the dimension
   */
  public static IndexParams of(FieldInfo fieldInfo) {
    IndexType type = GpuVectorsFormat.indexType(fieldInfo);
    Map<String, Integer> values = new TreeMap<>();
    for (String name : SCHEMA.get(type).keySet()) {
      String raw = fieldInfo.getAttribute(ATTRIBUTE_PREFIX + name);
      if (raw != null) {
        try {
          values.put(name, Integer.parseInt(raw));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(
              "field [" + fieldInfo.name + "]: [" + name + "] must be an integer but was [" + raw + "]", e);
        }
      }
    }
    try {
      IndexParams params = new IndexParams(type, values);
      params.checkDimension(fieldInfo.getVectorDimension());
      return params;
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("field [" + fieldInfo.name + "]: " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return type.typeName() + values;
  }
}
