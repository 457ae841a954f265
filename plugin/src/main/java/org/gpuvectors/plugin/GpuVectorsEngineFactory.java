package org.gpuvectors.plugin;

import org.elasticsearch.index.engine.Engine;
import org.elasticsearch.index.engine.EngineConfig;
import org.elasticsearch.index.engine.EngineFactory;
import org.elasticsearch.index.engine.InternalEngine;

/**
 * Elasticsearch's own engine, with the codec provider wrapped so that {@code gpu_vector} fields are written by
 * our vector format while every other field keeps Elasticsearch's formats.
 *
 * <p>Limit: an index has one engine factory. Plugins that supply their own engine (cross-cluster replication
 * followers, searchable snapshots) cannot be combined with {@code gpu_vector} indices.
 */
final class GpuVectorsEngineFactory implements EngineFactory {

    @Override
    public Engine newReadWriteEngine(EngineConfig config) {
        EngineConfig wrapped = EngineConfig.builder(config)
            .codecProvider(new GpuVectorsCodecProvider(config.getCodecProvider()))
            .build();
        return new InternalEngine(wrapped);
    }
}
