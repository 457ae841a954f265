package org.gpuvectors.codec.bf16;

import java.io.IOException;
import java.util.Map;
import org.apache.lucene.codecs.KnnFieldVectorsWriter;
import org.apache.lucene.codecs.KnnVectorsFormat;
import org.apache.lucene.codecs.KnnVectorsReader;
import org.apache.lucene.codecs.KnnVectorsWriter;
import org.apache.lucene.codecs.hnsw.DefaultFlatVectorScorer;
import org.apache.lucene.codecs.hnsw.FlatVectorsReader;
import org.apache.lucene.codecs.hnsw.FlatVectorsWriter;
import org.apache.lucene.codecs.lucene99.Lucene99FlatVectorsFormat;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.MergeState;
import org.apache.lucene.index.SegmentReadState;
import org.apache.lucene.index.SegmentWriteState;
import org.apache.lucene.index.Sorter;
import org.apache.lucene.index.VectorEncoding;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.KnnCollector;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.IORunnable;
import org.apache.lucene.util.IOUtils;
import org.apache.lucene.util.hnsw.RandomVectorScorer;

/**
 * Test only: the smallest {@link KnnVectorsFormat} over {@link BFloat16FlatVectorsFormat}, so that Lucene's format
 * conformance suite can run against it. Float fields are stored as bfloat16; byte fields (which the bfloat16 format
 * refuses) go to Lucene's flat format in the same segment, as the GPU vectors format will hold both; search is
 * exact, every accepted vector scored through the flat readers' scorers.
 */
public final class BruteForceBFloat16VectorsFormat extends KnnVectorsFormat {

  static final String NAME = "BFloat16BruteForce";

  private final BFloat16FlatVectorsFormat floats = new BFloat16FlatVectorsFormat();
  private final Lucene99FlatVectorsFormat bytes = new Lucene99FlatVectorsFormat(DefaultFlatVectorScorer.INSTANCE);

  public BruteForceBFloat16VectorsFormat() {
    super(NAME);
  }

  @Override
  public KnnVectorsWriter fieldsWriter(SegmentWriteState state) throws IOException {
    FlatVectorsWriter floatWriter = floats.fieldsWriter(state);
    try {
      return new Writer(floatWriter, bytes.fieldsWriter(state));
    } catch (Throwable t) {
      IOUtils.closeWhileHandlingException(floatWriter);
      throw t;
    }
  }

  @Override
  public KnnVectorsReader fieldsReader(SegmentReadState state) throws IOException {
    FlatVectorsReader floatReader = floats.fieldsReader(state);
    try {
      return new Reader(floatReader, bytes.fieldsReader(state));
    } catch (Throwable t) {
      IOUtils.closeWhileHandlingException(floatReader);
      throw t;
    }
  }

  @Override
  public int getMaxDimensions(String fieldName) {
    return floats.getMaxDimensions(fieldName);
  }

  private static final class Writer extends KnnVectorsWriter {
    private final FlatVectorsWriter floats;
    private final FlatVectorsWriter bytes;

    Writer(FlatVectorsWriter floats, FlatVectorsWriter bytes) {
      this.floats = floats;
      this.bytes = bytes;
    }

    private FlatVectorsWriter writer(FieldInfo fieldInfo) {
      return fieldInfo.getVectorEncoding() == VectorEncoding.FLOAT32 ? floats : bytes;
    }

    @Override
    public KnnFieldVectorsWriter<?> addField(FieldInfo fieldInfo) throws IOException {
      return writer(fieldInfo).addField(fieldInfo);
    }

    @Override
    public void flush(int maxDoc, Sorter.DocMap sortMap) throws IOException {
      floats.flush(maxDoc, sortMap);
      bytes.flush(maxDoc, sortMap);
    }

    @Override
    public IORunnable mergeOneField(FieldInfo fieldInfo, MergeState mergeState) throws IOException {
      return writer(fieldInfo).mergeOneField(fieldInfo, mergeState);
    }

    @Override
    public void finish() throws IOException {
      floats.finish();
      bytes.finish();
    }

    @Override
    public long ramBytesUsed() {
      return floats.ramBytesUsed() + bytes.ramBytesUsed();
    }

    @Override
    public void close() throws IOException {
      IOUtils.close(floats, bytes);
    }
  }

  private static final class Reader extends KnnVectorsReader {
    private final FlatVectorsReader floats;
    private final FlatVectorsReader bytes;

    Reader(FlatVectorsReader floats, FlatVectorsReader bytes) {
      this.floats = floats;
      this.bytes = bytes;
    }

    @Override
    public void checkIntegrity() throws IOException {
      floats.checkIntegrity();
      bytes.checkIntegrity();
    }

    @Override
    public FloatVectorValues getFloatVectorValues(String field) throws IOException {
      return floats.getFloatVectorValues(field);
    }

    @Override
    public ByteVectorValues getByteVectorValues(String field) throws IOException {
      return bytes.getByteVectorValues(field);
    }

    @Override
    public void search(String field, float[] target, KnnCollector collector, AcceptDocs acceptDocs)
        throws IOException {
      scoreAll(floats.getRandomVectorScorer(field, target), collector, acceptDocs);
    }

    @Override
    public void search(String field, byte[] target, KnnCollector collector, AcceptDocs acceptDocs)
        throws IOException {
      scoreAll(bytes.getRandomVectorScorer(field, target), collector, acceptDocs);
    }

    /** Exact search: every accepted vector is visited and scored, until the collector's visit limit stops it. */
    private static void scoreAll(RandomVectorScorer scorer, KnnCollector collector, AcceptDocs acceptDocs)
        throws IOException {
      Bits acceptOrds = scorer.getAcceptOrds(acceptDocs == null ? null : acceptDocs.bits());
      for (int ord = 0; ord < scorer.maxOrd(); ord++) {
        if (acceptOrds != null && acceptOrds.get(ord) == false) {
          continue;
        }
        if (collector.earlyTerminated()) {
          return;
        }
        collector.incVisitedCount(1);
        collector.collect(scorer.ordToDoc(ord), scorer.score(ord));
      }
    }

    @Override
    public Map<String, Long> getOffHeapByteSize(FieldInfo fieldInfo) {
      return (fieldInfo.getVectorEncoding() == VectorEncoding.FLOAT32 ? floats : bytes).getOffHeapByteSize(fieldInfo);
    }

    @Override
    public KnnVectorsReader getMergeInstance() throws IOException {
      floats.getMergeInstance();
      bytes.getMergeInstance();
      return this;
    }

    @Override
    public void finishMerge() throws IOException {
      floats.finishMerge();
      bytes.finishMerge();
    }

    @Override
    public void close() throws IOException {
      IOUtils.close(floats, bytes);
    }
  }
}
