package org.gpuvectors.codec.gpu;

import org.apache.lucene.util.IOSupplier;
import org.gpuvectors.cuda.IvfLists;
import org.gpuvectors.cuda.PqCodebook;

/**
 * The inverted lists of a segment field, as the GPU service needs them: their number (to size the
 * upload before reading anything), the lists themselves (read when the field is uploaded) and, for
 * {@code ivf_pq}, the product quantizer's codebooks and the codes in list order (the raw vectors then
 * stay on the host: the caller re-ranks the candidates the device returns).
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
   * codebooks and the codes by position in the lists (both read only when the field is uploaded).
   */
  public record Pq(int m, IOSupplier<PqCodebook> codebook, IOSupplier<byte[]> codesInListOrder) {}
}
