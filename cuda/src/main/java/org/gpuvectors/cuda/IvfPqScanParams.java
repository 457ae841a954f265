package org.gpuvectors.cuda;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Parameters of one IVF-PQ list-scan launch ({@code gv_ivf_pq_scan_kK}); mirrors {@code gv::IvfPqScanParams}
 * in common.cuh (128 bytes, little-endian; member by member checked by ParamLayoutTest). Device addresses are
 * longs; 0 = none for the optional accept mask and for {@code tables} (then the lookup table is in shared
 * memory).
 *
 * <p>Not thread-safe (a plain value object).
 */
final class IvfPqScanParams {
  static final int BYTES = 128;

  long codes;
  long ords;
  long listOffsets;
  long queries;
  long centroids;
  long codebooks;
  long probes;
  long acceptBits;
  long tables;
  long outK;
  long outIdx;
  long acceptRowWords;
  long outRowStride;
  int dims;
  int k;
  int nprobe;
  /** 0 = squared L2 (residual tables), 1 = inner product (selected largest). */
  int metric;
  int m;
  int bits;

  byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(codes).putLong(ords).putLong(listOffsets).putLong(queries).putLong(centroids).putLong(codebooks)
        .putLong(probes).putLong(acceptBits).putLong(tables).putLong(outK).putLong(outIdx).putLong(acceptRowWords)
        .putLong(outRowStride);
    b.putInt(dims).putInt(k).putInt(nprobe).putInt(metric).putInt(m).putInt(bits);
    return b.array();
  }
}
