package org.gpuvectors.codec;

import java.io.IOException;
import java.util.Objects;
import java.util.function.Function;
import org.apache.lucene.codecs.KnnFieldVectorsWriter;
import org.apache.lucene.codecs.KnnVectorsFormat;
import org.apache.lucene.codecs.KnnVectorsWriter;
import org.apache.lucene.codecs.perfield.PerFieldKnnVectorsFormat;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.MergeState;
import org.apache.lucene.index.SegmentWriteState;
import org.apache.lucene.index.Sorter;
import org.apache.lucene.util.IOFunction;
import org.apache.lucene.util.IORunnable;

/**
 * A per-field vectors format that sends fields tagged with {@link
 * GpuVectorsFormat#INDEX_TYPE_ATTRIBUTE} to {@link GpuVectorsFormat} and every other field to a
 * fallback.
 *
 * <p>{@link PerFieldKnnVectorsFormat}'s writer asks {@link #getKnnVectorsFormatForField(String)}
 * with the field name only (from {@code addField} and {@code mergeOneField}). This format wraps
 * that writer so that the {@link FieldInfo} being added or merged is visible while the question is
 * asked, and routes on its attributes; the answer is recorded per field by {@link
 * PerFieldKnnVectorsFormat} as usual, so reading needs nothing from this class. It works on flush
 * and on merge (merged field infos keep the attribute). It does not rely on {@code
 * SegmentWriteState.fieldInfos}, which is {@code null} at flush.
 *
 * <p>The fallback must not itself be a {@link PerFieldKnnVectorsFormat} (per-field formats do not
 * nest: their attribute keys would clash); {@link #routing(KnnVectorsFormat)} unwraps one.
 *
 * <p>{@link #getMaxDimensions(String)} only has the field name, so it answers with the fallback's
 * limit for every field.
 */
public final class GpuVectorsRoutingFormat extends PerFieldKnnVectorsFormat {

  private final KnnVectorsFormat gpuVectorsFormat;
  private final Function<String, KnnVectorsFormat> fallback;
  /** The field whose format is being chosen by the per-field writer on this thread. */
  private final ThreadLocal<FieldInfo> currentField = new ThreadLocal<>();

  /**
   * Routes tagged fields to a new {@link GpuVectorsFormat}, other fields to {@code fallback}.
   *
   * @param fallback the format of every untagged field, by field name; never a {@link
   *     PerFieldKnnVectorsFormat}
   */
  public GpuVectorsRoutingFormat(Function<String, KnnVectorsFormat> fallback) {
    this(new GpuVectorsFormat(), fallback);
  }

  /** Routes tagged fields to {@code gpuVectorsFormat}, other fields to {@code fallback}. */
  public GpuVectorsRoutingFormat(
      KnnVectorsFormat gpuVectorsFormat, Function<String, KnnVectorsFormat> fallback) {
    this.gpuVectorsFormat = Objects.requireNonNull(gpuVectorsFormat, "gpuVectorsFormat");
    this.fallback = Objects.requireNonNull(fallback, "fallback");
  }

  /**
   * Routes tagged fields to {@link GpuVectorsFormat} and every other field to {@code delegate}'s
   * choice: its {@link PerFieldKnnVectorsFormat#getKnnVectorsFormatForField(String)} if it is a
   * per-field format, else {@code delegate} itself.
   */
  public static GpuVectorsRoutingFormat routing(KnnVectorsFormat delegate) {
    return routing(delegate, new GpuVectorsFormat());
  }

  /** As {@link #routing(KnnVectorsFormat)}, with tagged fields written by {@code gpuVectorsFormat}. */
  public static GpuVectorsRoutingFormat routing(KnnVectorsFormat delegate, GpuVectorsFormat gpuVectorsFormat) {
    Objects.requireNonNull(delegate, "delegate");
    if (delegate instanceof PerFieldKnnVectorsFormat perField) {
      return new GpuVectorsRoutingFormat(gpuVectorsFormat, perField::getKnnVectorsFormatForField);
    }
    return new GpuVectorsRoutingFormat(gpuVectorsFormat, field -> delegate);
  }

  @Override
  public KnnVectorsFormat getKnnVectorsFormatForField(String field) {
    FieldInfo fieldInfo = currentField.get();
    if (fieldInfo != null
        && fieldInfo.name.equals(field)
        && GpuVectorsFormat.isMarked(fieldInfo)) {
      return gpuVectorsFormat;
    }
    KnnVectorsFormat format = fallback.apply(field);
    if (format instanceof PerFieldKnnVectorsFormat) {
      throw new IllegalStateException(
          "fallback format for field [" + field + "] is a per-field format: " + format);
    }
    return format;
  }

  @Override
  public KnnVectorsWriter fieldsWriter(SegmentWriteState state) throws IOException {
    return new RoutingWriter(super.fieldsWriter(state));
  }

  @Override
  public String toString() {
    return "GpuVectorsRoutingFormat(gpuVectorsFormat=" + gpuVectorsFormat + ")";
  }

  private <T> T withField(FieldInfo fieldInfo, IOFunction<FieldInfo, T> action)
      throws IOException {
    FieldInfo previous = currentField.get();
    currentField.set(fieldInfo);
    try {
      return action.apply(fieldInfo);
    } finally {
      if (previous == null) {
        currentField.remove();
      } else {
        currentField.set(previous);
      }
    }
  }

  /** Exposes the field being added or merged to {@link #getKnnVectorsFormatForField(String)}. */
  private final class RoutingWriter extends KnnVectorsWriter {
    private final KnnVectorsWriter in;

    RoutingWriter(KnnVectorsWriter in) {
      this.in = in;
    }

    @Override
    public KnnFieldVectorsWriter<?> addField(FieldInfo fieldInfo) throws IOException {
      return withField(fieldInfo, in::addField);
    }

    @Override
    public IORunnable mergeOneField(FieldInfo fieldInfo, MergeState mergeState)
        throws IOException {
      return withField(fieldInfo, fi -> in.mergeOneField(fi, mergeState));
    }

    @Override
    public void flush(int maxDoc, Sorter.DocMap sortMap) throws IOException {
      in.flush(maxDoc, sortMap);
    }

    @Override
    public void finish() throws IOException {
      in.finish();
    }

    @Override
    public long ramBytesUsed() {
      return in.ramBytesUsed();
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }
}
