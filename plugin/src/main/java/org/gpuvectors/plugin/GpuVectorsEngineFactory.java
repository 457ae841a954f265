package org.gpuvectors.plugin;

import org.apache.lucene.search.ReferenceManager;
import org.elasticsearch.index.engine.Engine;
import org.elasticsearch.index.engine.EngineConfig;
import org.elasticsearch.index.engine.EngineFactory;
import org.elasticsearch.index.engine.InternalEngine;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

import org.gpuvectors.codec.GpuVectorsFormat;
import org.gpuvectors.codec.gpu.GpuSearchService;

/**
 * Elasticsearch's own engine, with the codec provider wrapped so that {@code gpu_vector} fields are written by
 * our vector format while every other field keeps Elasticsearch's formats, and a refresh listener that makes new
 * segments resident on the GPU when {@code index.gpu_vectors.warmup_on_refresh} is on.
 *
 * <p>Limit: an index has one engine factory. Plugins that supply their own engine (cross-cluster replication
 * followers, searchable snapshots) cannot be combined with {@code gpu_vector} indices.
 */
final class GpuVectorsEngineFactory implements EngineFactory {

    private final Supplier<GpuSearchService> service;

    GpuVectorsEngineFactory(Supplier<GpuSearchService> service) {
        this.service = service;
    }

    @Override
    public Engine newReadWriteEngine(EngineConfig config) {
        WarmupOnRefresh warmup = new WarmupOnRefresh(config.getIndexSettings(), config.getShardId(), service);
        List<ReferenceManager.RefreshListener> external = new ArrayList<>(config.getExternalRefreshListener());
        external.add(warmup);
        EngineConfig wrapped = EngineConfig.builder(config)
            .codecProvider(new GpuVectorsCodecProvider(config.getCodecProvider(), new GpuVectorsFormat(
                GpuVectorsSettings.INDEX_APPROXIMATE_MIN_VECTORS.get(config.getIndexSettings().getSettings()))))
            .externalRefreshListener(external)
            .build();
        InternalEngine engine = new InternalEngine(wrapped);
        warmup.attach(engine);
        return engine;
    }
}
