package org.gpuvectors.cuda;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Parameters of the TF32 candidate pass's exact re-rank ({@code gv_rerank_exact}, {@code gv_rerank_stats}); mirrors
 * {@code gv::RerankParams} in common.cuh (80 bytes, little-endian; member by member checked by ParamLayoutTest).
 * Device addresses are longs. Keys: smaller = better (squared L2, or -x.q for inner product and cosine).
 *
 * <p>Not thread-safe (a plain value object).
 */
final class RerankParams {
  static final int BYTES = 80;

  long vectors;
  long queries;
  long candIdx;
  long candKeys;
  long exactKeys;
  /** Per query 4 floats: k-th exact key, last candidate's TF32 key, ||q||^2 rounded up, 0. */
  long stats;
  long outK;
  int dims;
  int numQueries;
  int candidates;
  int k;
  /** 0 = squared L2, 1 = inner product (key -x.q). */
  int metric;
  /** outK holds outScale * key. */
  float outScale = 1f;

  byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(vectors).putLong(queries).putLong(candIdx).putLong(candKeys).putLong(exactKeys).putLong(stats)
        .putLong(outK);
    b.putInt(dims).putInt(numQueries).putInt(candidates).putInt(k).putInt(metric).putFloat(outScale);
    return b.array();
  }
}
