package org.gpuvectors.cuda.build;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Parameters of the {@code gv_codebook_assign_*} kernels (kmeans.cu); mirrors {@code gv::CodebookAssignParams} in
 * common.cuh (48 bytes, little-endian; member by member checked by ParamLayoutTest). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class CodebookAssignParams {
  public static final int BYTES = 48;
  /** Points per block (kmeans.cu's kAssignThreads). */
  public static final int THREADS = 128;

  long points;
  long codebooks;
  long out;
  long count;
  int dims;
  int groups;
  int subDims;
  int k;

  public byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(points).putLong(codebooks).putLong(out).putLong(count).putInt(dims).putInt(groups).putInt(subDims)
        .putInt(k);
    return b.array();
  }
}
