package org.gpuvectors.codec;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.util.Bits;

/**
 * The float vectors of one field over all segments of an index, live documents only, as one {@link
 * FloatVectorValues}: ordinal i is the i-th live document with a vector in global doc id order, read
 * from its segment's own values (nothing is copied to the heap). {@link #doc} maps an ordinal to its
 * global doc id ({@code docBase + doc}).
 */
final class LiveVectors extends FloatVectorValues {

  private final FloatVectorValues[] leaves; // per segment, null where it has no vectors of the field
  private final int[] leafOf; // per ordinal: its segment
  private final int[] ordOf; // per ordinal: its ordinal in the segment's values
  private final int[] docOf; // per ordinal: its global doc id
  private final int dims;

  private LiveVectors(FloatVectorValues[] leaves, int[] leafOf, int[] ordOf, int[] docOf, int dims) {
    this.leaves = leaves;
    this.leafOf = leafOf;
    this.ordOf = ordOf;
    this.docOf = docOf;
    this.dims = dims;
  }

  /** The live vectors of {@code field} (a float vector field of {@code dims} dimensions). */
  static LiveVectors of(IndexReader reader, String field, int dims) throws IOException {
    List<LeafReaderContext> contexts = reader.leaves();
    FloatVectorValues[] leaves = new FloatVectorValues[contexts.size()];
    int count = 0;
    for (int l = 0; l < leaves.length; l++) {
      leaves[l] = contexts.get(l).reader().getFloatVectorValues(field);
      if (leaves[l] != null) {
        count += leaves[l].size(); // deleted documents included: an upper bound
      }
    }
    int[] leafOf = new int[count];
    int[] ordOf = new int[count];
    int[] docOf = new int[count];
    int n = 0;
    for (int l = 0; l < leaves.length; l++) {
      if (leaves[l] == null) {
        continue;
      }
      LeafReaderContext context = contexts.get(l);
      Bits live = context.reader().getLiveDocs();
      KnnVectorValues.DocIndexIterator it = leaves[l].iterator();
      for (int doc = it.nextDoc(); doc != KnnVectorValues.DocIndexIterator.NO_MORE_DOCS; doc = it.nextDoc()) {
        if (live == null || live.get(doc)) {
          leafOf[n] = l;
          ordOf[n] = it.index();
          docOf[n] = context.docBase + doc;
          n++;
        }
      }
    }
    return new LiveVectors(
        leaves, Arrays.copyOf(leafOf, n), Arrays.copyOf(ordOf, n),
        Arrays.copyOf(docOf, n), dims);
  }

  /** The global doc id of ordinal {@code ord}. */
  int doc(int ord) {
    return docOf[ord];
  }

  @Override
  public float[] vectorValue(int ord) throws IOException {
    return leaves[leafOf[ord]].vectorValue(ordOf[ord]);
  }

  @Override
  public int dimension() {
    return dims;
  }

  @Override
  public int size() {
    return docOf.length;
  }

  /** An independent reader of the same vectors (each segment's values copied: they reuse a buffer). */
  @Override
  public LiveVectors copy() throws IOException {
    FloatVectorValues[] copies = new FloatVectorValues[leaves.length];
    for (int l = 0; l < leaves.length; l++) {
      copies[l] = leaves[l] == null ? null : leaves[l].copy();
    }
    return new LiveVectors(copies, leafOf, ordOf, docOf, dims);
  }
}
