package org.gpuvectors.plugin;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.apache.lucene.search.ReferenceManager;
import org.elasticsearch.index.IndexSettings;
import org.elasticsearch.index.engine.Engine;
import org.elasticsearch.index.shard.ShardId;
import org.gpuvectors.codec.GpuWarmup;
import org.gpuvectors.codec.gpu.GpuSearchService;

import java.util.function.Supplier;

/**
 * After each refresh that changed what searches see (and after the shard's first one), makes the shard's
 * {@code gpu_vector} segments resident on the GPU, when {@code index.gpu_vectors.warmup_on_refresh} is on: new
 * segments are uploaded by the refresh, not by the first query that meets them. Segments already resident are
 * left alone; merged-away ones are freed when their readers close, as always.
 */
final class WarmupOnRefresh implements ReferenceManager.RefreshListener {

    private static final Logger LOGGER = LogManager.getLogger(WarmupOnRefresh.class);

    private final IndexSettings indexSettings;
    private final ShardId shardId;
    private final Supplier<GpuSearchService> service;
    private volatile Engine engine;
    private volatile boolean warmedOnce;

    WarmupOnRefresh(IndexSettings indexSettings, ShardId shardId, Supplier<GpuSearchService> service) {
        this.indexSettings = indexSettings;
        this.shardId = shardId;
        this.service = service;
    }

    void attach(Engine engine) {
        this.engine = engine;
    }

    @Override
    public void beforeRefresh() {}

    @Override
    public void afterRefresh(boolean didRefresh) {
        Engine current = engine;
        GpuSearchService gpu = service.get();
        if (current == null || gpu == null || (didRefresh == false && warmedOnce)) {
            return;
        }
        if (indexSettings.getScopedSettings().get(GpuVectorsSettings.INDEX_WARMUP_ON_REFRESH) == false
            || gpu.gpuActive() == false) {
            return;
        }
        try (Engine.Searcher searcher = current.acquireSearcher("gpu_vectors_warmup", Engine.SearcherScope.EXTERNAL)) {
            GpuWarmup.Result result = GpuWarmup.warm(searcher.getIndexReader(), gpu);
            warmedOnce = true;
            LOGGER.debug("{} GPU warm-up after refresh: {}/{} segment fields resident in {} ms", shardId, result.resident(),
                result.fields(), result.nanos() / 1_000_000);
        } catch (Exception e) {
            // a warm-up is an optimisation: the first query uploads instead
            LOGGER.warn(() -> shardId + " GPU warm-up after refresh failed", e);
        }
    }
}
