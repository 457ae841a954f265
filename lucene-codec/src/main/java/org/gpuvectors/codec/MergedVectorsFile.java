package org.gpuvectors.codec;

import static org.apache.lucene.search.DocIdSetIterator.NO_MORE_DOCS;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.lucene.codecs.KnnVectorsWriter;
import org.apache.lucene.codecs.hnsw.FlatVectorScorerUtil;
import org.apache.lucene.codecs.lucene95.OffHeapByteVectorValues;
import org.apache.lucene.codecs.lucene95.OffHeapFloatVectorValues;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.MergeState;
import org.apache.lucene.index.SegmentWriteState;
import org.apache.lucene.store.IOContext;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.store.IndexOutput;
import org.apache.lucene.util.IOUtils;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.codec.index.FloatViewVectors;

/**
 * A merge's vectors of one field in a temporary file, read back as random-access {@link
 * FloatVectorValues} (ordinals as the merged segment numbers them: deleted documents dropped, in the
 * new doc order). Index structures that sample and revisit the vectors (k-means) build from it,
 * as Lucene's HNSW merge builds its graph from a temporary copy; the file is deleted on close. Byte and bit vectors
 * are copied as bytes and read back in their float view ({@link FloatViewVectors}), as the builds take them.
 */
final class MergedVectorsFile implements Closeable {

  private final SegmentWriteState state;
  private final String name;
  private final IndexInput input;
  private final FloatVectorValues vectors;

  private MergedVectorsFile(SegmentWriteState state, String name, IndexInput input, FloatVectorValues vectors) {
    this.state = state;
    this.name = name;
    this.input = input;
    this.vectors = vectors;
  }

  /** Copies the field's merged vectors, of element type {@code type}, into a temporary file of the segment's directory. */
  static MergedVectorsFile write(SegmentWriteState state, FieldInfo fieldInfo, ElementType type, MergeState mergeState)
      throws IOException {
    return switch (type.encoding()) {
      case FLOAT32 -> writeFloats(state, fieldInfo, mergeState);
      case BYTE -> writeBytes(state, fieldInfo, type, mergeState);
    };
  }

  private static MergedVectorsFile writeFloats(SegmentWriteState state, FieldInfo fieldInfo, MergeState mergeState)
      throws IOException {
    int dims = fieldInfo.getVectorDimension();
    FloatVectorValues merged = KnnVectorsWriter.MergedVectorValues.mergeFloatVectorValues(fieldInfo, mergeState);
    String name;
    int count = 0;
    boolean success = false;
    IndexOutput out = state.directory.createTempOutput(state.segmentInfo.name, "gvmerge", state.context);
    name = out.getName();
    try {
      ByteBuffer row = ByteBuffer.allocate(4 * dims).order(ByteOrder.LITTLE_ENDIAN);
      KnnVectorValues.DocIndexIterator it = merged.iterator();
      for (int doc = it.nextDoc(); doc != NO_MORE_DOCS; doc = it.nextDoc()) {
        row.clear();
        row.asFloatBuffer().put(merged.vectorValue(it.index()));
        out.writeBytes(row.array(), row.capacity());
        count++;
      }
      out.close();
      IndexInput in = state.directory.openInput(name, IOContext.DEFAULT);
      FloatVectorValues values =
          new OffHeapFloatVectorValues.DenseOffHeapVectorValues(
              dims, count, in, 4 * dims, FlatVectorScorerUtil.getLucene99FlatVectorsScorer(),
              fieldInfo.getVectorSimilarityFunction());
      success = true;
      return new MergedVectorsFile(state, name, in, values);
    } finally {
      if (success == false) {
        IOUtils.closeWhileHandlingException(out);
        IOUtils.deleteFilesIgnoringExceptions(state.directory, name);
      }
    }
  }

  private static MergedVectorsFile writeBytes(
      SegmentWriteState state, FieldInfo fieldInfo, ElementType type, MergeState mergeState) throws IOException {
    int dims = fieldInfo.getVectorDimension();
    ByteVectorValues merged = KnnVectorsWriter.MergedVectorValues.mergeByteVectorValues(fieldInfo, mergeState);
    int count = 0;
    boolean success = false;
    IndexOutput out = state.directory.createTempOutput(state.segmentInfo.name, "gvmerge", state.context);
    String name = out.getName();
    try {
      KnnVectorValues.DocIndexIterator it = merged.iterator();
      for (int doc = it.nextDoc(); doc != NO_MORE_DOCS; doc = it.nextDoc()) {
        out.writeBytes(merged.vectorValue(it.index()), dims);
        count++;
      }
      out.close();
      IndexInput in = state.directory.openInput(name, IOContext.DEFAULT);
      // the scorer is never asked: scores come from the segment's own flat format
      ByteVectorValues values =
          new OffHeapByteVectorValues.DenseOffHeapVectorValues(
              dims, count, in, dims, FlatVectorScorerUtil.getLucene99FlatVectorsScorer(),
              fieldInfo.getVectorSimilarityFunction());
      success = true;
      return new MergedVectorsFile(state, name, in, FloatViewVectors.of(values, type));
    } finally {
      if (success == false) {
        IOUtils.closeWhileHandlingException(out);
        IOUtils.deleteFilesIgnoringExceptions(state.directory, name);
      }
    }
  }

  /** Vectors in the merged segment. */
  int size() {
    return vectors.size();
  }

  /** The merged vectors, random access (byte and bit vectors in their float view). */
  FloatVectorValues vectors() {
    return vectors;
  }

  @Override
  public void close() throws IOException {
    try {
      input.close();
    } finally {
      IOUtils.deleteFilesIgnoringExceptions(state.directory, name);
    }
  }
}
