package org.gpuvectors.cuda.ivf;

import org.gpuvectors.cuda.runtime.StructLayout;

/**
 * Parameters of the IVF-PQ kernels: the full-table list scan ({@code gv_ivf_pq_scan_kK}, ivf_pq.cu) and the
 * precomputed-table kernels ({@code gv_ivf_pq_code_terms}, {@code gv_ivf_pq_query_tables}, {@code
 * gv_ivf_pq_table_scan_kK}, {@code gv_ivf_pq_table_keys}, ivf_pq_tables.cu); mirrors {@code gv::IvfPqScanParams} in
 * common.cuh (152 bytes, little-endian; declared once in {@link #LAYOUT}, checked by ParamLayoutTest). Device addresses
 * are longs; 0 = none for the optional accept mask, for {@code codeTerms} (inner product) and, in the full-table scan,
 * for {@code tables} (then the lookup table is in shared memory).
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class IvfPqScanParams {
  /** The layout of {@code gv::IvfPqScanParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<IvfPqScanParams> LAYOUT =
      StructLayout.<IvfPqScanParams>struct("IvfPqScanParams")
          .i64("codes", p -> p.codes)
          .i64("ords", p -> p.ords)
          .i64("listOffsets", p -> p.listOffsets)
          .i64("queries", p -> p.queries)
          .i64("centroids", p -> p.centroids)
          .i64("codebooks", p -> p.codebooks)
          .i64("probes", p -> p.probes)
          .i64("acceptBits", p -> p.acceptBits)
          .i64("tables", p -> p.tables)
          .i64("codeTerms", p -> p.codeTerms)
          .i64("outK", p -> p.outK)
          .i64("outIdx", p -> p.outIdx)
          .i64("acceptRowWords", p -> p.acceptRowWords)
          .i64("outRowStride", p -> p.outRowStride)
          .i64("rowLengths", p -> p.rowLengths)
          .i32("dims", p -> p.dims)
          .i32("k", p -> p.k)
          .i32("nprobe", p -> p.nprobe)
          .i32("metric", p -> p.metric)
          .i32("m", p -> p.m)
          .i32("bits", p -> p.bits)
          .i32("probesPerBlock", p -> p.probesPerBlock)
          .i32("numQueries", p -> p.numQueries)
          .build();
  public static final int BYTES = LAYOUT.bytes();

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

  public byte[] encode() {
    return LAYOUT.encode(this);
  }
}
