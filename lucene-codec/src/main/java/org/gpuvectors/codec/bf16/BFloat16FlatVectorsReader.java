package org.gpuvectors.codec.bf16;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import org.apache.lucene.codecs.CodecUtil;
import org.apache.lucene.codecs.hnsw.FlatVectorsReader;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.codecs.lucene95.OrdToDocDISIReaderConfiguration;
import org.apache.lucene.codecs.lucene99.Lucene99HnswVectorsReader;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FieldInfos;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexFileNames;
import org.apache.lucene.index.SegmentReadState;
import org.apache.lucene.index.VectorEncoding;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.store.ChecksumIndexInput;
import org.apache.lucene.store.DataAccessHint;
import org.apache.lucene.store.FileDataHint;
import org.apache.lucene.store.FileTypeHint;
import org.apache.lucene.store.IOContext;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.util.IOUtils;
import org.apache.lucene.util.RamUsageEstimator;
import org.apache.lucene.util.hnsw.RandomVectorScorer;

/**
 * Reads the {@link BFloat16FlatVectorsFormat} files: the metadata on open (checked against the
 * segment's {@link FieldInfos}), the vectors off-heap on demand, decoded to floats.
 */
public final class BFloat16FlatVectorsReader extends FlatVectorsReader {

  private static final long SHALLOW_SIZE = RamUsageEstimator.shallowSizeOfInstance(BFloat16FlatVectorsReader.class);

  /** The off-heap size key of raw vectors. */
  static final String RAW_VECTORS_KEY = "vec";

  private final Map<String, FieldEntry> fields = new HashMap<>();
  private final FlatVectorsScorer vectorsScorer;
  private final IOContext dataContext;
  private final IndexInput vectorData;

  BFloat16FlatVectorsReader(SegmentReadState state, FlatVectorsScorer vectorsScorer) throws IOException {
    this.vectorsScorer = vectorsScorer;
    int metaVersion = readMetadata(state);
    // searches read vectors by ordinal in any order; merges switch to sequential reads (getMergeInstance)
    this.dataContext = state.context.withHints(FileTypeHint.DATA, FileDataHint.KNN_VECTORS, DataAccessHint.RANDOM);
    this.vectorData = openVectorData(state, metaVersion, dataContext);
  }

  private int readMetadata(SegmentReadState state) throws IOException {
    String name = IndexFileNames.segmentFileName(
        state.segmentInfo.name, state.segmentSuffix, BFloat16FlatVectorsFormat.META_EXTENSION);
    int version = -1;
    try (ChecksumIndexInput meta = state.directory.openChecksumInput(name)) {
      Throwable priorE = null;
      try {
        version = CodecUtil.checkIndexHeader(meta, BFloat16FlatVectorsFormat.META_CODEC_NAME,
            BFloat16FlatVectorsFormat.VERSION_START, BFloat16FlatVectorsFormat.VERSION_CURRENT,
            state.segmentInfo.getId(), state.segmentSuffix);
        readFields(meta, state.fieldInfos);
      } catch (Throwable t) {
        priorE = t;
      } finally {
        CodecUtil.checkFooter(meta, priorE);
      }
    }
    return version;
  }

  private void readFields(ChecksumIndexInput meta, FieldInfos infos) throws IOException {
    for (int number = meta.readInt(); number != -1; number = meta.readInt()) {
      FieldInfo info = infos.fieldInfo(number);
      if (info == null) {
        throw new CorruptIndexException("invalid field number: " + number, meta);
      }
      fields.put(info.name, FieldEntry.read(meta, info));
    }
  }

  private static IndexInput openVectorData(SegmentReadState state, int metaVersion, IOContext context)
      throws IOException {
    String name = IndexFileNames.segmentFileName(
        state.segmentInfo.name, state.segmentSuffix, BFloat16FlatVectorsFormat.VECTOR_DATA_EXTENSION);
    IndexInput in = state.directory.openInput(name, context);
    boolean success = false;
    try {
      int dataVersion = CodecUtil.checkIndexHeader(in, BFloat16FlatVectorsFormat.VECTOR_DATA_CODEC_NAME,
          BFloat16FlatVectorsFormat.VERSION_START, BFloat16FlatVectorsFormat.VERSION_CURRENT,
          state.segmentInfo.getId(), state.segmentSuffix);
      if (dataVersion != metaVersion) {
        throw new CorruptIndexException(
            "format versions mismatch: meta=" + metaVersion + ", " + BFloat16FlatVectorsFormat.VECTOR_DATA_CODEC_NAME
                + "=" + dataVersion, in);
      }
      // checks the footer's structure (not the whole file's checksum, which checkIntegrity does)
      CodecUtil.retrieveChecksum(in);
      success = true;
      return in;
    } finally {
      if (success == false) {
        IOUtils.closeWhileHandlingException(in);
      }
    }
  }

  private FieldEntry entry(String field) {
    FieldEntry entry = fields.get(field);
    if (entry == null) {
      throw new IllegalArgumentException("field=\"" + field + "\" not found");
    }
    return entry;
  }

  /** The field's vectors, decoded from bfloat16; an empty result when no document of the segment has one. */
  @Override
  public FloatVectorValues getFloatVectorValues(String field) throws IOException {
    FieldEntry entry = entry(field);
    return OffHeapBFloat16VectorValues.load(entry.ordToDoc, entry.dimension, entry.size, entry.dataOffset,
        entry.dataLength, vectorData, vectorsScorer, entry.similarity);
  }

  @Override
  public ByteVectorValues getByteVectorValues(String field) {
    throw new IllegalArgumentException("field=\"" + field + "\" is encoded as: " + VectorEncoding.FLOAT32
        + " expected: " + VectorEncoding.BYTE + " (" + BFloat16FlatVectorsFormat.NAME + " stores FLOAT32 only)");
  }

  @Override
  public FlatVectorsScorer getFlatVectorScorer(String field) {
    return vectorsScorer;
  }

  @Override
  public RandomVectorScorer getRandomVectorScorer(String field, float[] target) throws IOException {
    FieldEntry entry = entry(field);
    return vectorsScorer.getRandomVectorScorer(entry.similarity, getFloatVectorValues(field), target);
  }

  @Override
  public RandomVectorScorer getRandomVectorScorer(String field, byte[] target) {
    throw new IllegalArgumentException("field=\"" + field + "\" holds FLOAT32 vectors: a byte query cannot score them");
  }

  /**
   * The field's raw vectors, under the key Lucene and Elasticsearch give raw vectors ({@value #RAW_VECTORS_KEY}),
   * whatever the file is called: the key names the kind of data, which the node's off-heap stats add up by.
   */
  @Override
  public Map<String, Long> getOffHeapByteSize(FieldInfo fieldInfo) {
    return Map.of(RAW_VECTORS_KEY, entry(fieldInfo.name).dataLength);
  }

  @Override
  public void checkIntegrity() throws IOException {
    CodecUtil.checksumEntireFile(vectorData);
  }

  @Override
  public FlatVectorsReader getMergeInstance() throws IOException {
    // a merge reads every vector once, in order
    vectorData.updateIOContext(dataContext.withHints(DataAccessHint.SEQUENTIAL));
    return this;
  }

  @Override
  public void finishMerge() throws IOException {
    vectorData.updateIOContext(dataContext);
  }

  @Override
  public long ramBytesUsed() {
    return SHALLOW_SIZE + RamUsageEstimator.sizeOfMap(fields, RamUsageEstimator.shallowSizeOfInstance(FieldEntry.class));
  }

  @Override
  public void close() throws IOException {
    IOUtils.close(vectorData);
  }

  /** One field's metadata entry, checked against its {@link FieldInfo}. */
  private record FieldEntry(
      VectorSimilarityFunction similarity,
      int dimension,
      long dataOffset,
      long dataLength,
      int size,
      OrdToDocDISIReaderConfiguration ordToDoc) {

    static FieldEntry read(ChecksumIndexInput meta, FieldInfo info) throws IOException {
      if (info.getVectorEncoding() != VectorEncoding.FLOAT32) {
        throw new CorruptIndexException("field [" + info.name + "] has " + info.getVectorEncoding()
            + " vectors; " + BFloat16FlatVectorsFormat.NAME + " stores FLOAT32 only", meta);
      }
      VectorSimilarityFunction similarity = Lucene99HnswVectorsReader.readSimilarityFunction(meta);
      if (similarity != info.getVectorSimilarityFunction()) {
        throw new CorruptIndexException("inconsistent vector similarity function for field [" + info.name + "]: "
            + similarity + " != " + info.getVectorSimilarityFunction(), meta);
      }
      int dimension = meta.readVInt();
      if (dimension != info.getVectorDimension()) {
        throw new CorruptIndexException("inconsistent vector dimension for field [" + info.name + "]: "
            + dimension + " != " + info.getVectorDimension(), meta);
      }
      long dataOffset = meta.readVLong();
      long dataLength = meta.readVLong();
      int size = meta.readInt();
      long expectedLength = Math.multiplyExact(Math.multiplyExact((long) dimension, BFloat16.BYTES), size);
      if (dataLength != expectedLength) {
        throw new CorruptIndexException("vector data length " + dataLength + " of field [" + info.name
            + "] does not match " + size + " vectors * " + dimension + " dims * " + BFloat16.BYTES + " bytes", meta);
      }
      OrdToDocDISIReaderConfiguration ordToDoc = OrdToDocDISIReaderConfiguration.fromStoredMeta(meta, size);
      return new FieldEntry(similarity, dimension, dataOffset, dataLength, size, ordToDoc);
    }
  }
}
