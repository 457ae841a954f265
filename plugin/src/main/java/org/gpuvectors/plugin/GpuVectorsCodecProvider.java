package org.gpuvectors.plugin;

import org.apache.lucene.codecs.Codec;
import org.elasticsearch.index.codec.CodecProvider;
import org.gpuvectors.codec.GpuVectorsCodec;
import org.gpuvectors.codec.GpuVectorsFormat;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Hands out Elasticsearch's codecs wrapped by {@link GpuVectorsCodec#wrap}: same codec name (so segments stay
 * readable by Elasticsearch's own codec), with {@code gpu_vector} fields routed to our vector format by their
 * field attribute and all other fields left to Elasticsearch's per-field choice.
 */
final class GpuVectorsCodecProvider implements CodecProvider {

    private final CodecProvider delegate;
    private final GpuVectorsFormat format;
    private final Map<String, Codec> wrapped = new ConcurrentHashMap<>();

    /** Wraps {@code delegate}'s codecs so that {@code gpu_vector} fields are written by {@code format}. */
    GpuVectorsCodecProvider(CodecProvider delegate, GpuVectorsFormat format) {
        this.delegate = delegate;
        this.format = format;
    }

    @Override
    public Codec codec(String name) {
        return wrapped.computeIfAbsent(name, n -> GpuVectorsCodec.wrap(delegate.codec(n), format));
    }

    @Override
    public String[] availableCodecs() {
        return delegate.availableCodecs();
    }
}
