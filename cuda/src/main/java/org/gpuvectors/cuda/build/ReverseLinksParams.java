package org.gpuvectors.cuda.build;

import org.gpuvectors.cuda.runtime.StructLayout;

/**
 * Parameters of {@code gv_reverse_count}, {@code gv_reverse_fill} and {@code gv_reverse_rows}; mirrors {@code
 * gv::ReverseLinksParams} in common.cuh (56 bytes, little-endian; declared once in {@link #LAYOUT}, checked by
 * ParamLayoutTest). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class ReverseLinksParams {
  /** The layout of {@code gv::ReverseLinksParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<ReverseLinksParams> LAYOUT =
      StructLayout.<ReverseLinksParams>struct("ReverseLinksParams")
          .i64("pruned", p -> p.pruned)
          .i64("start", p -> p.start)
          .i64("cursor", p -> p.cursor)
          .i64("keys", p -> p.keys)
          .i64("out", p -> p.out)
          .i64("n", p -> p.n)
          .i32("degree", p -> p.degree)
          .pad32("pad")
          .build();
  public static final int BYTES = LAYOUT.bytes();

  long pruned;
  long start;
  long cursor;
  long keys;
  long out;
  long n;
  int degree;

  public byte[] encode() {
    return LAYOUT.encode(this);
  }
}
