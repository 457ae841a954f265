package org.gpuvectors.cuda.ivf;

import java.util.Objects;

/**
 * Product quantizer codebooks: m sub-quantizers of 2^bits codewords of subDims floats; codeword c of
 * sub-quantizer j at codebooks[(j * (1 << bits) + c) * subDims ...]. bits <= 8 (one byte per sub-code).
 * A vector of {@link #dims()} = m * subDims floats is coded as m bytes, byte j the codeword of its sub-vector j
 * (floats {@code [j * subDims, (j + 1) * subDims)}). The array is not copied: do not change it while an upload
 * reads it.
 */
public record PqCodebook(int m, int bits, int subDims, float[] codebooks) {

  public PqCodebook {
    Objects.requireNonNull(codebooks, "codebooks");
    if (m < 1) {
      throw new IllegalArgumentException("m must be >= 1: " + m);
    }
    if (bits < 1 || bits > 8) {
      throw new IllegalArgumentException("bits must be in [1, 8]: " + bits);
    }
    if (subDims < 1) {
      throw new IllegalArgumentException("subDims must be >= 1: " + subDims);
    }
    long floats = (long) m * (1 << bits) * subDims;
    if (floats > Integer.MAX_VALUE - 8 || codebooks.length != floats) {
      throw new IllegalArgumentException("codebooks must hold m * 2^bits * subDims = " + floats + " floats, got "
          + codebooks.length);
    }
  }

  /** Codewords per sub-quantizer (2^bits). */
  public int ksub() {
    return 1 << bits;
  }

  /** Floats per vector: m * subDims. */
  public int dims() {
    return m * subDims;
  }

  /** Floats of one query's lookup table: m * 2^bits. */
  int tableFloats() {
    return m << bits;
  }
}
