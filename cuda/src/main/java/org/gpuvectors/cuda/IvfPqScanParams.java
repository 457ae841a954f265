package org.gpuvectors.cuda;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Parameters of the IVF-PQ kernels: the full-table list scan ({@code gv_ivf_pq_scan_kK}, ivf_pq.cu) and the
 * precomputed-table kernels ({@code gv_ivf_pq_code_terms}, {@code gv_ivf_pq_query_tables}, {@code
 * gv_ivf_pq_table_scan_kK}, {@code gv_ivf_pq_table_keys}, ivf_pq_tables.cu); mirrors {@code gv::IvfPqScanParams} in
 * common.cuh (152 bytes, little-endian; member by member checked by ParamLayoutTest). Device addresses are longs;
 * 0 = none for the optional accept mask, for {@code codeTerms} (inner product) and, in the full-table scan, for
 * {@code tables} (then the lookup table is in shared memory).
 *
 * <p>Not thread-safe (a plain value object).
 */
final class IvfPqScanParams {
  static final int BYTES = 152;

  long codes;
  long ords;
  long listOffsets;
  long queries;
  long centroids;
  long codebooks;
  long probes;
  long acceptBits;
  long tables;
  long codeTerms;
  long outK;
  long outIdx;
  long acceptRowWords;
  long outRowStride;
  /** {@code gv_ivf_pq_table_keys}: per query the count of keys appended to its row (zeroed before the launch). */
  long rowLengths;
  int dims;
  int k;
  int nprobe;
  /** 0 = squared L2 (residual tables), 1 = inner product (selected largest). */
  int metric;
  int m;
  int bits;
  /** Precomputed-table scan: probes per block (1, or all of a query's). */
  int probesPerBlock;
  /** Precomputed-table kernels: queries in this launch's block of queries. */
  int numQueries;

  byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(codes).putLong(ords).putLong(listOffsets).putLong(queries).putLong(centroids).putLong(codebooks)
        .putLong(probes).putLong(acceptBits).putLong(tables).putLong(codeTerms).putLong(outK).putLong(outIdx)
        .putLong(acceptRowWords).putLong(outRowStride).putLong(rowLengths);
    b.putInt(dims).putInt(k).putInt(nprobe).putInt(metric).putInt(m).putInt(bits).putInt(probesPerBlock)
        .putInt(numQueries);
    return b.array();
  }
}
