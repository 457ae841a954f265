package org.gpuvectors.cuda.build;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Parameters of {@code gv_centroid_sums} and {@code gv_centroid_means}; mirrors {@code gv::CentroidMeansParams} in
 * common.cuh (64 bytes, little-endian; member by member checked by ParamLayoutTest). Device addresses are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class CentroidMeansParams {
  public static final int BYTES = 64;
  /** Threads per block of the update kernels (kmeans.cu's kMeansThreads). */
  public static final int THREADS = 256;

  long points;
  long assignment;
  long sums;
  long counts;
  long means;
  long count;
  int groups;
  int subDims;
  int k;
  int scaleLog2;

  public byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(points).putLong(assignment).putLong(sums).putLong(counts).putLong(means).putLong(count).putInt(groups)
        .putInt(subDims).putInt(k).putInt(scaleLog2);
    return b.array();
  }
}
