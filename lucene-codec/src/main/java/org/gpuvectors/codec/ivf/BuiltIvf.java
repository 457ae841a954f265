package org.gpuvectors.codec.ivf;

import java.io.IOException;
import org.apache.lucene.store.IndexOutput;

/**
 * A segment field's IVF structure as built at flush or merge, before it is written to the {@code
 * .gvd} file: {@code ivf_flat}'s lists ({@link IvfLayout}) or {@code ivf_pq}'s lists and codes
 * ({@link IvfPqLayout}). The writer handles both the same way. Read back, they are an {@link IvfIndex}.
 */
public sealed interface BuiltIvf permits IvfLayout, IvfPqLayout {

  /** Number of lists. */
  int nlist();

  /**
   * The same structure with every vector ordinal renamed {@code oldToNew[ord]}: a flush under index
   * sorting builds on the buffered order, and the segment numbers vectors in the sorted order.
   */
  BuiltIvf remap(int[] oldToNew);

  /** Writes the field's data; {@code probes} is the lists a query scans by default. */
  void writeTo(IndexOutput out, int probes) throws IOException;
}
