package org.gpuvectors.cuda.ivf;

import org.gpuvectors.cuda.runtime.StructLayout;

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
public final class IvfScanParams {
  /** The layout of {@code gv::IvfScanParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<IvfScanParams> LAYOUT =
      StructLayout.<IvfScanParams>struct("IvfScanParams")
          .i64("vectors", p -> p.vectors)
          .i64("ords", p -> p.ords)
          .i64("listOffsets", p -> p.listOffsets)
          .i64("queries", p -> p.queries)
          .i64("probes", p -> p.probes)
          .i64("acceptBits", p -> p.acceptBits)
          .i64("outK", p -> p.outK)
          .i64("outIdx", p -> p.outIdx)
          .i64("acceptRowWords", p -> p.acceptRowWords)
          .i64("outRowStride", p -> p.outRowStride)
          .i32("dims", p -> p.dims)
          .i32("k", p -> p.k)
          .i32("nprobe", p -> p.nprobe)
          .i32("metric", p -> p.metric)
          .build();
  public static final int BYTES = LAYOUT.bytes();

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

  public byte[] encode() {
    return LAYOUT.encode(this);
  }
}
