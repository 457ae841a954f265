package org.gpuvectors.cuda.build;

import org.gpuvectors.cuda.runtime.StructLayout;

/**
 * Parameters of {@code gv_farthest_step}; mirrors {@code gv::FarthestStepParams} in common.cuh (88 bytes,
 * little-endian; declared once in {@link #LAYOUT}, checked by ParamLayoutTest). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class FarthestStepParams {
  /** The layout of {@code gv::FarthestStepParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<FarthestStepParams> LAYOUT =
      StructLayout.<FarthestStepParams>struct("FarthestStepParams")
          .i64("points", p -> p.points)
          .i64("sample", p -> p.sample)
          .i64("nearest", p -> p.nearest)
          .i64("scale", p -> p.scale)
          .i64("state", p -> p.state)
          .i64("blockKeys", p -> p.blockKeys)
          .i64("blockPositions", p -> p.blockPositions)
          .i64("count", p -> p.count)
          .i32("dims", p -> p.dims)
          .i32("metric", p -> p.metric)
          .i32("seedCount", p -> p.seedCount)
          .i32("limit", p -> p.limit)
          .f32("uncovered", p -> p.uncovered)
          .pad32("pad")
          .build();
  public static final int BYTES = LAYOUT.bytes();

  long points;
  long sample;
  long nearest;
  long scale;
  long state;
  long blockKeys;
  long blockPositions;
  long count;
  int dims;
  int metric;
  int seedCount;
  int limit;
  float uncovered;

  public byte[] encode() {
    return LAYOUT.encode(this);
  }
}
