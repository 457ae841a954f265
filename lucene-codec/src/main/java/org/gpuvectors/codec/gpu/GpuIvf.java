package org.gpuvectors.codec.gpu;

import org.apache.lucene.util.IOSupplier;
import org.gpuvectors.cuda.ivf.IvfLists;
import org.gpuvectors.cuda.ivf.PqCodebook;

/**
 * The inverted lists of a segment field, as the GPU service needs them: their number (to size the
 * upload before reading anything), the lists themselves (read when the field is uploaded) and, for
 * {@code ivf_pq}, the product quantizer's codebooks and the codes in list order, and whether the raw
 * vectors go up too ({@link Pq#reranksOnDevice}: the device then re-ranks the candidates exactly and
 * returns the k best; else the raw vectors stay on the host and the caller re-ranks the candidates the
 * device returns).
 *
 * @param pq null for {@code ivf_flat}
 */
public record GpuIvf(int nlist, IOSupplier<IvfLists> lists, Pq pq) implements GpuStructure {

  /** An {@code ivf_flat} field's lists. */
  public GpuIvf(int nlist, IOSupplier<IvfLists> lists) {
    this(nlist, lists, null);
  }

  /**
   * The PQ part of an {@code ivf_pq} field: {@code m} bytes per vector (sizes the upload), the
   * codebooks and the codes by position in the lists (both read only when the field is uploaded),
   * and the device re-rank: {@code rerankFactor} approximate candidates per result re-ranked exactly
   * on the device from the raw vectors, which are uploaded with the codes; 0: no raw vectors on the
   * device, the caller re-ranks.
   */
  public record Pq(int m, IOSupplier<PqCodebook> codebook, IOSupplier<byte[]> codesInListOrder, int rerankFactor) {

    public Pq {
      if (rerankFactor < 0) {
        throw new IllegalArgumentException("rerankFactor must be >= 0: " + rerankFactor);
      }
    }

    /** Codes only: the caller re-ranks the candidates with the raw vectors on the host. */
    public Pq(int m, IOSupplier<PqCodebook> codebook, IOSupplier<byte[]> codesInListOrder) {
      this(m, codebook, codesInListOrder, 0);
    }

    /** Whether the raw vectors go to the device and searches return exact results. */
    public boolean reranksOnDevice() {
      return rerankFactor > 0;
    }
  }
}
