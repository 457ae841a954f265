package org.gpuvectors.codec;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The kind of search structure a {@link GpuVectorsFormat} field persists next to its raw vectors.
 *
 * <p>Each type has a stable on-disk {@link #code()} (written to the meta file; never derived from
 * {@link #ordinal()}) and a lower-case {@link #typeName()} that users write in mappings and that is
 * stored in the {@link GpuVectorsFormat#INDEX_TYPE_ATTRIBUTE} field attribute.
 */
public enum IndexType {
  /** Raw vectors only, exact (brute-force) search. */
  FLAT(0, "flat"),
  /** Coarse k-means quantizer + inverted lists of raw vectors. */
  IVF_FLAT(1, "ivf_flat"),
  /**
   * Coarse k-means quantizer + inverted lists of product-quantized residual codes (IVFADC), the
   * candidates re-ranked with the raw vectors. Parameters: {@code nlist} and {@code nprobe} as
   * {@link #IVF_FLAT}; {@code pq_m} (default {@link
   * org.gpuvectors.codec.ivf.ProductQuantizer#defaultM}) and {@code pq_bits} (default 8).
   */
  IVF_PQ(2, "ivf_pq"),
  /** Product quantization tree (Wieschollek et al.). */
  PQT(3, "pqt"),
  /**
   * Fixed-degree proximity graph (CAGRA-style build: k-NN graph, rank-based pruning, reverse links),
   * searched best-first from a few entry points. Parameters: {@code degree} (default {@link
   * org.gpuvectors.codec.graph.GraphBuilder#DEFAULT_DEGREE}), {@code build_degree} (default twice
   * the degree) and {@code search_width} (default {@link
   * org.gpuvectors.codec.graph.GraphBuilder#DEFAULT_SEARCH_WIDTH}).
   */
  GRAPH(4, "graph");

  private final int code;
  private final String typeName;

  IndexType(int code, String typeName) {
    this.code = code;
    this.typeName = typeName;
  }

  /** The stable code written to the meta file. */
  public int code() {
    return code;
  }

  /** The lower-case name used in mappings and in the field attribute. */
  public String typeName() {
    return typeName;
  }

  /** Whether this release can write and search this index type. */
  public boolean isImplemented() {
    return this == FLAT || this == IVF_FLAT || this == IVF_PQ || this == GRAPH;
  }

  /**
   * Whether segments of this type hold coarse k-means lists (built at flush and merge for segment
   * fields above the format's size threshold; smaller ones stay flat).
   */
  public boolean isIvf() {
    return this == IVF_FLAT || this == IVF_PQ;
  }

  /**
   * Whether segment fields of this type get a search structure built at flush and merge (those above
   * the format's size threshold; smaller ones stay flat): the IVF types and {@link #GRAPH}.
   */
  public boolean buildsIndex() {
    return isIvf() || this == GRAPH;
  }

  /** The implemented types' names, as {@code [flat], [ivf_flat], [ivf_pq], [graph]}. */
  public static String implementedNames() {
    return Arrays.stream(values())
        .filter(IndexType::isImplemented)
        .map(t -> "[" + t.typeName + "]")
        .collect(Collectors.joining(", "));
  }

  @Override
  public String toString() {
    return typeName;
  }

  /**
   * Returns the type with the given lower-case name.
   *
   * @throws IllegalArgumentException if the name is unknown, listing the valid names
   */
  public static IndexType fromName(String name) {
    for (IndexType type : values()) {
      if (type.typeName.equals(name)) {
        return type;
      }
    }
    throw new IllegalArgumentException(
        "unknown index type ["
            + name
            + "]; valid types are "
            + Arrays.stream(values())
                .map(t -> "[" + t.typeName + "]")
                .collect(Collectors.joining(", ")));
  }

  /**
   * Returns the type with the given on-disk code.
   *
   * @throws IllegalArgumentException if the code is unknown
   */
  public static IndexType fromCode(int code) {
    for (IndexType type : values()) {
      if (type.code == code) {
        return type;
      }
    }
    throw new IllegalArgumentException(
        String.format(Locale.ROOT, "unknown index type code [%d]", code));
  }
}
