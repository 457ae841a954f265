package org.gpuvectors.cuda.build;

import org.gpuvectors.cuda.runtime.StructLayout;

/**
 * Parameters of {@code gv_graph_prune}; mirrors {@code gv::GraphPruneParams} in common.cuh (32 bytes, little-endian;
 * declared once in {@link #LAYOUT}, checked by ParamLayoutTest). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class GraphPruneParams {
  /** The layout of {@code gv::GraphPruneParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<GraphPruneParams> LAYOUT =
      StructLayout.<GraphPruneParams>struct("GraphPruneParams")
          .i64("knn", p -> p.knn)
          .i64("out", p -> p.out)
          .i64("n", p -> p.n)
          .i32("k", p -> p.k)
          .i32("degree", p -> p.degree)
          .build();
  public static final int BYTES = LAYOUT.bytes();

  long knn;
  long out;
  long n;
  int k;
  int degree;

  public byte[] encode() {
    return LAYOUT.encode(this);
  }
}
