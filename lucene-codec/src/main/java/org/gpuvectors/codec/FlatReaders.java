package org.gpuvectors.codec;

import java.io.Closeable;
import java.io.IOException;
import java.util.EnumMap;
import java.util.Map;
import java.util.Set;
import org.apache.lucene.codecs.hnsw.FlatVectorsReader;
import org.apache.lucene.index.SegmentReadState;
import org.apache.lucene.util.IOUtils;
import org.gpuvectors.codec.index.ElementType;

/**
 * A segment's flat vectors readers, one per storage kind its fields use ({@link FlatFormats}; the .gvm entries say
 * which): the float-and-byte reader always, the others where the segment has fields of their types. Owns and closes
 * them.
 */
final class FlatReaders implements Closeable {

  private final Map<ElementType, FlatVectorsReader> readers;

  private FlatReaders(Map<ElementType, FlatVectorsReader> readers) {
    this.readers = readers;
  }

  /** Opens the readers of the float-and-byte format and of {@code types}' formats. */
  static FlatReaders open(FlatFormats formats, SegmentReadState state, Set<ElementType> types) throws IOException {
    Map<ElementType, FlatVectorsReader> readers = new EnumMap<>(ElementType.class);
    boolean success = false;
    try {
      open(formats, state, ElementType.FLOAT, readers);
      for (ElementType type : types) {
        open(formats, state, type, readers);
      }
      success = true;
      return new FlatReaders(readers);
    } finally {
      if (success == false) {
        IOUtils.closeWhileHandlingException(readers.values());
      }
    }
  }

  private static void open(FlatFormats formats, SegmentReadState state, ElementType type,
                           Map<ElementType, FlatVectorsReader> readers) throws IOException {
    ElementType storage = FlatFormats.storage(type);
    if (readers.containsKey(storage)) {
      return;
    }
    String suffix = FlatFormats.suffix(storage, state.segmentSuffix);
    SegmentReadState own = suffix.equals(state.segmentSuffix) ? state : new SegmentReadState(state, suffix);
    readers.put(storage, formats.of(storage).fieldsReader(own));
  }

  /** The reader of fields of this element type. */
  FlatVectorsReader of(ElementType type) {
    FlatVectorsReader reader = readers.get(FlatFormats.storage(type));
    if (reader == null) {
      throw new IllegalStateException("no flat vectors of element type [" + type.attributeValue() + "] in this segment");
    }
    return reader;
  }

  void checkIntegrity() throws IOException {
    for (FlatVectorsReader reader : readers.values()) {
      reader.checkIntegrity();
    }
  }

  long ramBytesUsed() {
    long bytes = 0;
    for (FlatVectorsReader reader : readers.values()) {
      bytes += reader.ramBytesUsed();
    }
    return bytes;
  }

  @Override
  public void close() throws IOException {
    IOUtils.close(readers.values());
  }
}
