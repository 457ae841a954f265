package org.gpuvectors.cuda.build;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Parameters of {@code gv_farthest_step}; mirrors {@code gv::FarthestStepParams} in common.cuh (88 bytes,
 * little-endian; member by member checked by ParamLayoutTest). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class FarthestStepParams {
  public static final int BYTES = 88;

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
  /** The struct's tail to its 8-byte alignment (zero). */
  int pad;

  public byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(points).putLong(sample).putLong(nearest).putLong(scale).putLong(state).putLong(blockKeys)
        .putLong(blockPositions).putLong(count).putInt(dims).putInt(metric).putInt(seedCount).putInt(limit).putFloat(uncovered).putInt(pad);
    return b.array();
  }
}
