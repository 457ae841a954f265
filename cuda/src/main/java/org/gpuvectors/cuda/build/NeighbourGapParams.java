package org.gpuvectors.cuda.build;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Parameters of {@code gv_neighbour_gaps}; mirrors {@code gv::NeighbourGapParams} in common.cuh (56 bytes,
 * little-endian; member by member checked by ParamLayoutTest). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class NeighbourGapParams {
  public static final int BYTES = 56;

  long points;
  long sample;
  long adjacency;
  long out;
  long count;
  int dims;
  int degree;
  int metric;
  /** The struct's tail to its 8-byte alignment (zero). */
  int pad;

  public byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(points).putLong(sample).putLong(adjacency).putLong(out).putLong(count).putInt(dims).putInt(degree)
        .putInt(metric).putInt(pad);
    return b.array();
  }
}
