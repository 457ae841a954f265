package org.gpuvectors.cuda.build;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Parameters of {@code gv_graph_prune}; mirrors {@code gv::GraphPruneParams} in common.cuh (32 bytes, little-endian;
 * member by member checked by ParamLayoutTest). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class GraphPruneParams {
  public static final int BYTES = 32;

  long knn;
  long out;
  long n;
  int k;
  int degree;

  public byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(knn).putLong(out).putLong(n).putInt(k).putInt(degree);
    return b.array();
  }
}
