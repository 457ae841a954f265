package org.gpuvectors.cuda.build;

import org.gpuvectors.cuda.runtime.StructLayout;

/**
 * Parameters of the {@code gv_codebook_assign_*} kernels (kmeans.cu); mirrors {@code gv::CodebookAssignParams} in
 * common.cuh (48 bytes, little-endian; declared once in {@link #LAYOUT}, checked by ParamLayoutTest). Device addresses
 * are longs.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class CodebookAssignParams {
  /** The layout of {@code gv::CodebookAssignParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<CodebookAssignParams> LAYOUT =
      StructLayout.<CodebookAssignParams>struct("CodebookAssignParams")
          .i64("points", p -> p.points)
          .i64("codebooks", p -> p.codebooks)
          .i64("out", p -> p.out)
          .i64("count", p -> p.count)
          .i32("dims", p -> p.dims)
          .i32("groups", p -> p.groups)
          .i32("subDims", p -> p.subDims)
          .i32("k", p -> p.k)
          .build();
  public static final int BYTES = LAYOUT.bytes();
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
    return LAYOUT.encode(this);
  }
}
