package org.gpuvectors.cuda.build;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Parameters of {@code gv_reverse_count}, {@code gv_reverse_fill} and {@code gv_reverse_rows}; mirrors {@code
 * gv::ReverseLinksParams} in common.cuh (56 bytes, little-endian; member by member checked by ParamLayoutTest). Device
 * addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class ReverseLinksParams {
  public static final int BYTES = 56;

  long pruned;
  long start;
  long cursor;
  long keys;
  long out;
  long n;
  int degree;
  /** The struct's tail to its 8-byte alignment (zero). */
  int pad;

  public byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(pruned).putLong(start).putLong(cursor).putLong(keys).putLong(out).putLong(n).putInt(degree).putInt(pad);
    return b.array();
  }
}
