package org.gpuvectors.cuda.device;

import java.nio.FloatBuffer;
import java.util.stream.IntStream;

/**
 * Rows of floats on the host on their way to the device: staged into pinned memory (a search pass's queries, an
 * index's vectors), normalised for the cosine metric.
 */
public final class HostRows {
  /** Rows staged on the common pool rather than on the calling thread from this many on. */
  public static final int PARALLEL_STAGING_ROWS = 1024;

  private HostRows() {}

  /**
   * Copies rows [from, from + rows) of {@code dims} floats into {@code dst} from float {@code at} on: from {@code
   * queries} (row-major) when not null, else from {@code queryRows}; on the common pool from {@link
   * #PARALLEL_STAGING_ROWS} rows on (blocks of 256 rows; absolute puts: no shared position).
   */
  public static void stage(float[] queries, float[][] queryRows, int dims, int from, int rows, FloatBuffer dst, int at) {
    int block = 256;
    IntStream blocks = IntStream.range(0, (rows + block - 1) / block);
    (rows >= PARALLEL_STAGING_ROWS ? blocks.parallel() : blocks).forEach(b -> {
      int first = b * block;
      int last = Math.min(rows, first + block);
      if (queries != null) {
        dst.put(at + first * dims, queries, (from + first) * dims, (last - first) * dims);
      } else {
        for (int q = first; q < last; q++) {
          dst.put(at + q * dims, queryRows[from + q]);
        }
      }
    });
  }

  /** Normalises {@code rows} rows of {@code dims} floats starting at {@code x[from]} (zero rows stay zero). */
  public static void normalize(float[] x, int from, int rows, int dims) {
    for (int r = 0; r < rows; r++) {
      double s = 0;
      for (int d = 0; d < dims; d++) {
        s += (double) x[from + r * dims + d] * x[from + r * dims + d];
      }
      if (s > 0) {
        float inv = (float) (1.0 / Math.sqrt(s));
        for (int d = 0; d < dims; d++) {
          x[from + r * dims + d] *= inv;
        }
      }
    }
  }
}
