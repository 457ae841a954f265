package org.gpuvectors.codec.index;

import java.io.IOException;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.util.Bits;

/**
 * A field's byte or bit vectors as their {@link FloatView}: same ordinals, documents and accepted ordinals, each
 * vector converted on read into an array of its own that the next read reuses (as Lucene's off-heap values reuse
 * theirs). {@link FloatViewScorer} finds the byte vectors behind it to score them exactly.
 */
public final class FloatViewVectors extends FloatVectorValues {

  private final ByteVectorValues bytes;
  private final ElementType type;
  private final float[] view;

  private FloatViewVectors(ByteVectorValues bytes, ElementType type) {
    this.bytes = bytes;
    this.type = type;
    this.view = new float[FloatView.dimension(type, bytes.dimension())];
  }

  /**
   * The float view of {@code bytes}, vectors of the byte-encoded element type {@code type}.
   *
   * @throws IllegalArgumentException if {@code type} is not stored as bytes
   */
  public static FloatViewVectors of(ByteVectorValues bytes, ElementType type) {
    if (type != ElementType.BYTE && type != ElementType.BIT) {
      throw new IllegalArgumentException("element type [" + type.attributeValue() + "] is not stored as bytes");
    }
    return new FloatViewVectors(bytes, type);
  }

  /** The byte vectors seen through this view. */
  public ByteVectorValues bytes() {
    return bytes;
  }

  /** What the bytes are: byte or bit vectors. */
  public ElementType elementType() {
    return type;
  }

  @Override
  public float[] vectorValue(int ord) throws IOException {
    return FloatView.toFloats(type, bytes.vectorValue(ord), view);
  }

  @Override
  public int dimension() {
    return view.length;
  }

  @Override
  public int size() {
    return bytes.size();
  }

  @Override
  public int ordToDoc(int ord) {
    return bytes.ordToDoc(ord);
  }

  @Override
  public Bits getAcceptOrds(Bits acceptDocs) {
    return bytes.getAcceptOrds(acceptDocs);
  }

  @Override
  public DocIndexIterator iterator() {
    return bytes.iterator();
  }

  @Override
  public FloatViewVectors copy() throws IOException {
    return new FloatViewVectors(bytes.copy(), type);
  }
}
