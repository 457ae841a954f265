package org.gpuvectors.codec;

import java.util.Objects;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.codecs.FilterCodec;
import org.apache.lucene.codecs.KnnVectorsFormat;
import org.apache.lucene.codecs.lucene104.Lucene104Codec;

/**
 * A codec that writes vector fields tagged with {@link GpuVectorsFormat#INDEX_TYPE_ATTRIBUTE} (see
 * {@link GpuVectorsFormat#markField}) with {@link GpuVectorsFormat}, and everything else exactly as
 * its delegate does.
 *
 * <p>The SPI codec {@value #NAME} wraps Lucene's default codec of this Lucene version ({@link
 * Lucene104Codec}) and is usable from plain Lucene: {@code
 * indexWriterConfig.setCodec(new GpuVectorsCodec())}. {@link #wrap(Codec)} wraps any codec
 * (Elasticsearch's) under the delegate's own name, so segments record the delegate's codec name and
 * are read back by it: the per-field vectors attributes lead Lucene to {@link GpuVectorsFormat}.
 */
public final class GpuVectorsCodec extends FilterCodec {

  /** The SPI name of the standalone codec. */
  public static final String NAME = "GpuVectorsCodec";

  private final KnnVectorsFormat knnVectorsFormat;

  /** The standalone codec over Lucene's default codec; instantiated by SPI. */
  public GpuVectorsCodec() {
    // not Codec.getDefault(): that may be set to this very codec
    this(NAME, new Lucene104Codec(), new GpuVectorsFormat());
  }

  private GpuVectorsCodec(String name, Codec delegate, GpuVectorsFormat format) {
    super(name, delegate);
    this.knnVectorsFormat = GpuVectorsRoutingFormat.routing(delegate.knnVectorsFormat(), format);
  }

  /**
   * Returns a codec with {@code delegate}'s name and formats, except that tagged vector fields are
   * written with {@link GpuVectorsFormat}; every other vector field keeps the delegate's choice.
   * Returns {@code delegate} itself if it already is a {@link GpuVectorsCodec}.
   */
  public static Codec wrap(Codec delegate) {
    return wrap(delegate, new GpuVectorsFormat());
  }

  /** As {@link #wrap(Codec)}, with tagged vector fields written by {@code format}. */
  public static Codec wrap(Codec delegate, GpuVectorsFormat format) {
    Objects.requireNonNull(delegate, "delegate");
    if (delegate instanceof GpuVectorsCodec) {
      return delegate;
    }
    return new GpuVectorsCodec(delegate.getName(), delegate, format);
  }

  /** The wrapped codec. */
  public Codec delegate() {
    return delegate;
  }

  @Override
  public KnnVectorsFormat knnVectorsFormat() {
    return knnVectorsFormat;
  }
}
