package org.gpuvectors.codec.ivf;

import java.io.IOException;
import org.apache.lucene.store.IndexOutput;

/**
 * A segment field's {@code ivf_pq} structure as built: the coarse lists, the product quantizer of
 * the residuals, and every vector's code ({@code m} bytes), held by ordinal here and written by
 * position in the lists (so a list's codes are read in one run). Also its encoding in the {@code
 * .gvd} file (see {@code GpuVectorsFormat} for the layout). Its reader is {@link IvfPqField}: the same
 * structure as read from the file.
 *
 * @param codes the code of ordinal {@code ord} at {@code [ord * pq.m(), (ord + 1) * pq.m())}
 */
public record IvfPqLayout(IvfLayout lists, ProductQuantizer pq, byte[] codes) implements BuiltIvf {

  /** Version of the {@code ivf_pq} part that follows the lists; readers refuse others. */
  static final int VERSION = 0;

  @Override
  public int nlist() {
    return lists.nlist();
  }

  /** The same structure with ordinals renamed: the lists as {@link IvfLayout#remap}, each code moving with its vector. */
  @Override
  public IvfPqLayout remap(int[] oldToNew) {
    int m = pq.m();
    byte[] moved = new byte[codes.length];
    for (int ord = 0; ord < oldToNew.length; ord++) {
      System.arraycopy(codes, ord * m, moved, oldToNew[ord] * m, m);
    }
    return new IvfPqLayout(lists.remap(oldToNew), pq, moved);
  }

  /**
   * Writes the lists (as {@code ivf_flat} does), the version, the quantizer, then the codes by position. Read back
   * by {@link IvfPqField#read}.
   */
  @Override
  public void writeTo(IndexOutput out, int probes) throws IOException {
    lists.writeTo(out, probes);
    out.writeVInt(VERSION);
    pq.writeTo(out);
    int m = pq.m();
    for (int ord : lists.ords()) {
      out.writeBytes(codes, ord * m, m);
    }
  }
}
