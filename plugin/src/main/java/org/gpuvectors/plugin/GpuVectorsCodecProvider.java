package org.gpuvectors.plugin;

import org.apache.lucene.codecs.Codec;
import org.elasticsearch.index.codec.CodecProvider;
import org.gpuvectors.codec.GpuVectorsCodec;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Hands out Elasticsearch's codecs wrapped by {@link GpuVectorsCodec#wrap}: same codec name (so segments stay
 * readable by Elasticsearch's own codec), with {@code gpu_vector} fields routed to our vector format by their
 * field attribute and all other fields left to Elasticsearch's per-field choice.
 */
final class GpuVectorsCodecProvider implements CodecProvider {

    private final CodecProvider delegate;
    private final Map<String, Codec> wrapped = new ConcurrentHashMap<>();

    GpuVectorsCodecProvider(CodecProvider delegate) {
        this.delegate = delegate;
    }

    @Override
    public Codec codec(String name) {
        return wrapped.computeIfAbsent(name, n -> GpuVectorsCodec.wrap(delegate.codec(n)));
    }

    @Override
    public String[] availableCodecs() {
        return delegate.availableCodecs();
    }
}
