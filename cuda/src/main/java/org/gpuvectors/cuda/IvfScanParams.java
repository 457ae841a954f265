package org.gpuvectors.cuda;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Parameters of one IVF-Flat list-scan launch ({@code gv_ivf_flat_scan_kK}); mirrors {@code
 * gv::IvfScanParams} in common.cuh (96 bytes, little-endian; member by member checked by
 * ParamLayoutTest). Device addresses are longs; 0 = none for the optional accept mask.
 *
 * <p>Block (query, probe) scans list {@code probes[query * nprobe + probe]} and writes its k best
 * (distance, ordinal) pairs at {@code outK / outIdx + query * outRowStride + probe * k}.
 *
 * <p>Not thread-safe (a plain value object).
 */
final class IvfScanParams {
  static final int BYTES = 96;

  long vectors;
  long ords;
  long listOffsets;
  long queries;
  long probes;
  long acceptBits;
  long outK;
  long outIdx;
  long acceptRowWords;
  long outRowStride;
  int dims;
  int k;
  int nprobe;
  /** 0 = squared L2, 1 = inner product (selected largest). */
  int metric;

  byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(vectors).putLong(ords).putLong(listOffsets).putLong(queries).putLong(probes).putLong(acceptBits)
        .putLong(outK).putLong(outIdx).putLong(acceptRowWords).putLong(outRowStride);
    b.putInt(dims).putInt(k).putInt(nprobe).putInt(metric);
    return b.array();
  }
}
