package org.gpuvectors.cuda.build;

import org.gpuvectors.cuda.runtime.StructLayout;

/**
 * Parameters of {@code gv_neighbour_gaps}; mirrors {@code gv::NeighbourGapParams} in common.cuh (56 bytes,
 * little-endian; declared once in {@link #LAYOUT}, checked by ParamLayoutTest). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class NeighbourGapParams {
  /** The layout of {@code gv::NeighbourGapParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<NeighbourGapParams> LAYOUT =
      StructLayout.<NeighbourGapParams>struct("NeighbourGapParams")
          .i64("points", p -> p.points)
          .i64("sample", p -> p.sample)
          .i64("adjacency", p -> p.adjacency)
          .i64("out", p -> p.out)
          .i64("count", p -> p.count)
          .i32("dims", p -> p.dims)
          .i32("degree", p -> p.degree)
          .i32("metric", p -> p.metric)
          .pad32("pad")
          .build();
  public static final int BYTES = LAYOUT.bytes();

  long points;
  long sample;
  long adjacency;
  long out;
  long count;
  int dims;
  int degree;
  int metric;

  public byte[] encode() {
    return LAYOUT.encode(this);
  }
}
