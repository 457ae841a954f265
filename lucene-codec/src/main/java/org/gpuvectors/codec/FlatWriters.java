package org.gpuvectors.codec;

import java.io.Closeable;
import java.io.IOException;
import java.util.EnumMap;
import java.util.Map;
import org.apache.lucene.codecs.hnsw.FlatVectorsWriter;
import org.apache.lucene.index.SegmentWriteState;
import org.apache.lucene.index.Sorter;
import org.apache.lucene.util.IOUtils;
import org.gpuvectors.codec.index.ElementType;

/**
 * A segment's flat vectors writers, one per storage kind ({@link FlatFormats}): the float-and-byte writer from the
 * start (its files are in every segment, as before element types), the others when the first field of their type
 * arrives, so that a segment without bit or bfloat16 fields has none of their files. Owns and closes them.
 */
final class FlatWriters implements Closeable {

  private final FlatFormats formats;
  private final SegmentWriteState state;
  private final Map<ElementType, FlatVectorsWriter> writers = new EnumMap<>(ElementType.class);

  FlatWriters(FlatFormats formats, SegmentWriteState state) throws IOException {
    this.formats = formats;
    this.state = state;
    of(ElementType.FLOAT);
  }

  /** The writer of fields of this element type, created on first use. */
  FlatVectorsWriter of(ElementType type) throws IOException {
    ElementType storage = FlatFormats.storage(type);
    FlatVectorsWriter writer = writers.get(storage);
    if (writer == null) {
      String suffix = FlatFormats.suffix(storage, state.segmentSuffix);
      SegmentWriteState own = suffix.equals(state.segmentSuffix) ? state : new SegmentWriteState(state, suffix);
      writer = formats.of(storage).fieldsWriter(own);
      writers.put(storage, writer);
    }
    return writer;
  }

  void flush(int maxDoc, Sorter.DocMap sortMap) throws IOException {
    for (FlatVectorsWriter writer : writers.values()) {
      writer.flush(maxDoc, sortMap);
    }
  }

  void finish() throws IOException {
    for (FlatVectorsWriter writer : writers.values()) {
      writer.finish();
    }
  }

  long ramBytesUsed() {
    long bytes = 0;
    for (FlatVectorsWriter writer : writers.values()) {
      bytes += writer.ramBytesUsed();
    }
    return bytes;
  }

  @Override
  public void close() throws IOException {
    IOUtils.close(writers.values());
  }
}
