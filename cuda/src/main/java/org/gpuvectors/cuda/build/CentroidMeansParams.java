package org.gpuvectors.cuda.build;

import org.gpuvectors.cuda.runtime.StructLayout;

/**
 * Parameters of {@code gv_centroid_sums} and {@code gv_centroid_means}; mirrors {@code gv::CentroidMeansParams} in
 * common.cuh (64 bytes, little-endian; declared once in {@link #LAYOUT}, checked by ParamLayoutTest). Device addresses
 * are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class CentroidMeansParams {
  /** The layout of {@code gv::CentroidMeansParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<CentroidMeansParams> LAYOUT =
      StructLayout.<CentroidMeansParams>struct("CentroidMeansParams")
          .i64("points", p -> p.points)
          .i64("assignment", p -> p.assignment)
          .i64("sums", p -> p.sums)
          .i64("counts", p -> p.counts)
          .i64("means", p -> p.means)
          .i64("count", p -> p.count)
          .i32("groups", p -> p.groups)
          .i32("subDims", p -> p.subDims)
          .i32("k", p -> p.k)
          .i32("scaleLog2", p -> p.scaleLog2)
          .build();
  public static final int BYTES = LAYOUT.bytes();
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
    return LAYOUT.encode(this);
  }
}
