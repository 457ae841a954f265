package org.gpuvectors.codec.bf16;

import static org.apache.lucene.search.DocIdSetIterator.NO_MORE_DOCS;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.codecs.CodecUtil;
import org.apache.lucene.codecs.KnnVectorsWriter;
import org.apache.lucene.codecs.hnsw.FlatFieldVectorsWriter;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.codecs.hnsw.FlatVectorsWriter;
import org.apache.lucene.codecs.lucene95.OrdToDocDISIReaderConfiguration;
import org.apache.lucene.codecs.lucene99.Lucene99HnswVectorsReader;
import org.apache.lucene.index.DocsWithFieldSet;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexFileNames;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.MergeState;
import org.apache.lucene.index.SegmentWriteState;
import org.apache.lucene.index.Sorter;
import org.apache.lucene.index.VectorEncoding;
import org.apache.lucene.store.IndexOutput;
import org.apache.lucene.util.IOUtils;
import org.apache.lucene.util.RamUsageEstimator;

/**
 * Writes the {@link BFloat16FlatVectorsFormat} files: buffers each field's vectors, already rounded
 * to bfloat16, and writes them at flush (in the sorted order when the index is sorted) or streams a
 * merge's vectors (deleted documents dropped, in the merged doc order) straight to the data file.
 */
public final class BFloat16FlatVectorsWriter extends FlatVectorsWriter {

  private static final long SHALLOW_RAM_BYTES_USED =
      RamUsageEstimator.shallowSizeOfInstance(BFloat16FlatVectorsWriter.class);

  private final SegmentWriteState state;
  private final IndexOutput meta;
  private final IndexOutput vectorData;
  private final List<FieldWriter> fields = new ArrayList<>();
  private boolean finished;

  BFloat16FlatVectorsWriter(SegmentWriteState state, FlatVectorsScorer scorer) throws IOException {
    super(scorer);
    this.state = state;
    IndexOutput metaOut = null;
    IndexOutput dataOut = null;
    boolean success = false;
    try {
      metaOut = state.directory.createOutput(fileName(state, BFloat16FlatVectorsFormat.META_EXTENSION), state.context);
      dataOut =
          state.directory.createOutput(fileName(state, BFloat16FlatVectorsFormat.VECTOR_DATA_EXTENSION), state.context);
      CodecUtil.writeIndexHeader(metaOut, BFloat16FlatVectorsFormat.META_CODEC_NAME,
          BFloat16FlatVectorsFormat.VERSION_CURRENT, state.segmentInfo.getId(), state.segmentSuffix);
      CodecUtil.writeIndexHeader(dataOut, BFloat16FlatVectorsFormat.VECTOR_DATA_CODEC_NAME,
          BFloat16FlatVectorsFormat.VERSION_CURRENT, state.segmentInfo.getId(), state.segmentSuffix);
      success = true;
    } finally {
      if (success == false) {
        IOUtils.closeWhileHandlingException(metaOut, dataOut);
      }
    }
    this.meta = metaOut;
    this.vectorData = dataOut;
  }

  private static String fileName(SegmentWriteState state, String extension) {
    return IndexFileNames.segmentFileName(state.segmentInfo.name, state.segmentSuffix, extension);
  }

  @Override
  public FlatFieldVectorsWriter<float[]> addField(FieldInfo fieldInfo) throws IOException {
    checkFloat32(fieldInfo);
    FieldWriter field = new FieldWriter(fieldInfo);
    fields.add(field);
    return field;
  }

  private static void checkFloat32(FieldInfo fieldInfo) {
    if (fieldInfo.getVectorEncoding() != VectorEncoding.FLOAT32) {
      throw new IllegalArgumentException("field [" + fieldInfo.name + "] has " + fieldInfo.getVectorEncoding()
          + " vectors, but " + BFloat16FlatVectorsFormat.NAME + " stores FLOAT32 vectors only");
    }
  }

  @Override
  public void flush(int maxDoc, Sorter.DocMap sortMap) throws IOException {
    for (FieldWriter field : fields) {
      int count = field.vectors.size();
      DocsWithFieldSet docsWithField = field.docsWithField;
      int[] newToOld = null;
      if (sortMap != null) {
        newToOld = new int[count];
        docsWithField = new DocsWithFieldSet();
        mapOldOrdToNewOrd(field.docsWithField, sortMap, null, newToOld, docsWithField);
      }
      long offset = vectorData.alignFilePointer(BFloat16FlatVectorsFormat.VECTOR_ALIGNMENT);
      byte[] row = new byte[field.fieldInfo.getVectorDimension() * BFloat16.BYTES];
      for (int ord = 0; ord < count; ord++) {
        BFloat16.encode(field.vectors.get(newToOld == null ? ord : newToOld[ord]), row);
        vectorData.writeBytes(row, row.length);
      }
      writeMeta(field.fieldInfo, maxDoc, offset, vectorData.getFilePointer() - offset, docsWithField);
      field.finish();
    }
  }

  @Override
  public void mergeOneFlatVectorField(FieldInfo fieldInfo, MergeState mergeState) throws IOException {
    checkFloat32(fieldInfo);
    // the merged values drop deleted documents and follow the merged segment's doc order (index sorting included);
    // the source segments' values are already bfloat16, so encoding them again is exact
    FloatVectorValues merged = KnnVectorsWriter.MergedVectorValues.mergeFloatVectorValues(fieldInfo, mergeState);
    long offset = vectorData.alignFilePointer(BFloat16FlatVectorsFormat.VECTOR_ALIGNMENT);
    byte[] row = new byte[fieldInfo.getVectorDimension() * BFloat16.BYTES];
    DocsWithFieldSet docsWithField = new DocsWithFieldSet();
    KnnVectorValues.DocIndexIterator it = merged.iterator();
    for (int doc = it.nextDoc(); doc != NO_MORE_DOCS; doc = it.nextDoc()) {
      BFloat16.encode(merged.vectorValue(it.index()), row);
      vectorData.writeBytes(row, row.length);
      docsWithField.add(doc);
    }
    writeMeta(fieldInfo, state.segmentInfo.maxDoc(), offset, vectorData.getFilePointer() - offset, docsWithField);
  }

  private void writeMeta(FieldInfo field, int maxDoc, long offset, long length, DocsWithFieldSet docsWithField)
      throws IOException {
    meta.writeInt(field.number);
    meta.writeInt(Lucene99HnswVectorsReader.SIMILARITY_FUNCTIONS.indexOf(field.getVectorSimilarityFunction()));
    meta.writeVInt(field.getVectorDimension());
    meta.writeVLong(offset);
    meta.writeVLong(length);
    int count = docsWithField.cardinality();
    meta.writeInt(count);
    OrdToDocDISIReaderConfiguration.writeStoredMeta(
        BFloat16FlatVectorsFormat.DIRECT_MONOTONIC_BLOCK_SHIFT, meta, vectorData, count, maxDoc, docsWithField);
  }

  @Override
  public void finish() throws IOException {
    if (finished) {
      throw new IllegalStateException("already finished");
    }
    finished = true;
    meta.writeInt(-1); // end of fields
    CodecUtil.writeFooter(meta);
    CodecUtil.writeFooter(vectorData);
  }

  @Override
  public long ramBytesUsed() {
    long total = SHALLOW_RAM_BYTES_USED;
    for (FieldWriter field : fields) {
      total += field.ramBytesUsed();
    }
    return total;
  }

  @Override
  public void close() throws IOException {
    IOUtils.close(meta, vectorData);
  }

  /**
   * One field's buffered vectors, each rounded to bfloat16 as it is added: {@link #getVectors()} (which index
   * structures built at flush read) holds exactly the floats the segment will return.
   */
  private static final class FieldWriter extends FlatFieldVectorsWriter<float[]> {

    private static final long SHALLOW_SIZE = RamUsageEstimator.shallowSizeOfInstance(FieldWriter.class);

    private final FieldInfo fieldInfo;
    private final DocsWithFieldSet docsWithField = new DocsWithFieldSet();
    private final List<float[]> vectors = new ArrayList<>();
    private int lastDocID = -1;
    private boolean finished;

    FieldWriter(FieldInfo fieldInfo) {
      this.fieldInfo = fieldInfo;
    }

    @Override
    public void addValue(int docID, float[] vectorValue) throws IOException {
      if (finished) {
        throw new IllegalStateException("already finished, cannot add more values");
      }
      if (docID == lastDocID) {
        throw new IllegalArgumentException("VectorValuesField \"" + fieldInfo.name
            + "\" appears more than once in this document (only one value is allowed per field)");
      }
      assert docID > lastDocID;
      float[] rounded = copyValue(vectorValue);
      docsWithField.add(docID);
      vectors.add(rounded);
      lastDocID = docID;
    }

    /**
     * A copy rounded to bfloat16. A finite value too large for bfloat16 would become infinite and make every score
     * with this vector NaN or infinite; it is refused, as Lucene refuses non-finite vectors.
     */
    @Override
    public float[] copyValue(float[] vectorValue) {
      int dims = fieldInfo.getVectorDimension();
      float[] rounded = new float[dims];
      for (int d = 0; d < dims; d++) {
        rounded[d] = BFloat16.round(vectorValue[d]);
        if (Float.isInfinite(rounded[d]) && Float.isFinite(vectorValue[d])) {
          throw new IllegalArgumentException("vector value " + vectorValue[d] + " at dimension " + d + " of field ["
              + fieldInfo.name + "] is too large for bfloat16 (it would round to infinity)");
        }
      }
      return rounded;
    }

    @Override
    public List<float[]> getVectors() {
      return vectors;
    }

    @Override
    public DocsWithFieldSet getDocsWithFieldSet() {
      return docsWithField;
    }

    @Override
    public void finish() {
      finished = true;
    }

    @Override
    public boolean isFinished() {
      return finished;
    }

    @Override
    public long ramBytesUsed() {
      long vectorBytes = (long) vectors.size()
          * (RamUsageEstimator.NUM_BYTES_OBJECT_REF + RamUsageEstimator.NUM_BYTES_ARRAY_HEADER
              + (long) fieldInfo.getVectorDimension() * Float.BYTES);
      return SHALLOW_SIZE + docsWithField.ramBytesUsed() + vectorBytes;
    }
  }
}
