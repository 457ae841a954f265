package org.gpuvectors.plugin;

import org.elasticsearch.common.settings.Setting;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.unit.ByteSizeValue;
import org.elasticsearch.common.util.concurrent.EsExecutors;
import org.gpuvectors.codec.GpuVectorsFormat;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.MemoryBudget;
import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.PassConfig;

import java.util.List;
import java.util.Set;

/** Settings of the gpu-vectors plugin. */
public final class GpuVectorsSettings {

    /**
     * Whether an index writes {@code gpu_vector} fields with our Lucene format. Set automatically by
     * {@link GpuVectorsIndexSettingProvider} when an index is created with a {@code gpu_vector} field in its
     * mappings or templates; fixed for the life of the index because the engine (and so the codec) of an
     * index is chosen when its shards open.
     */
    public static final Setting<Boolean> INDEX_ENABLED = Setting.boolSetting(
        "index.gpu_vectors.enabled",
        false,
        Setting.Property.IndexScope,
        Setting.Property.Final
    );

    /**
     * Node setting: {@code auto} (default) searches on a GPU when one is usable and on the CPU otherwise;
     * {@code true} demands a GPU (a bootstrap check refuses to start the node without one); {@code false}
     * never uses the GPU.
     */
    public static final Setting<String> GPU_MODE = Setting.simpleString("gpu_vectors.gpu.mode", "auto", value -> {
        if (Set.of("auto", "true", "false").contains(value) == false) {
            throw new IllegalArgumentException("[gpu_vectors.gpu.mode] must be [auto], [true] or [false] but was [" + value + "]");
        }
    }, Setting.Property.NodeScope);

    /** Node setting: ordinal of the CUDA device to use. */
    public static final Setting<Integer> GPU_DEVICE = Setting.intSetting("gpu_vectors.gpu.device", 0, 0, Setting.Property.NodeScope);

    private static final String MEMORY_BUDGET_KEY = "gpu_vectors.gpu.memory_budget";

    /**
     * Node setting: the GPU memory that resident segment fields may take, as a fraction of the device's memory
     * ({@code 0.8}, {@code 80%}) or a byte size ({@code 24gb}), like Elasticsearch's disk watermarks. Past it, the
     * residency service admits what fits and serves the rest from compact forms or the CPU (OPERATIONS.md).
     */
    public static final Setting<MemoryBudget> GPU_MEMORY_BUDGET = new Setting<>(
        MEMORY_BUDGET_KEY,
        "0.8",
        GpuVectorsSettings::parseMemoryBudget,
        Setting.Property.NodeScope
    );

    /**
     * Node setting: the most queries one GPU pass takes. Concurrent knn searches are gathered while the GPU is busy
     * and run together; a larger cap means fewer, longer passes (throughput), a smaller one shorter waits.
     */
    public static final Setting<Integer> GPU_MAX_BATCH_QUERIES = Setting.intSetting(
        "gpu_vectors.gpu.max_batch_queries",
        GpuSearchService.Settings.DEFAULT_MAX_BATCH_QUERIES,
        1,
        65536,
        Setting.Property.NodeScope
    );

    /**
     * Node setting: CUDA streams the small groups of one GPU pass are spread over (1 = one stream). A query's search
     * of one small segment is a chain of short launches that fills a few multiprocessors; on several streams the
     * segments of a pass run side by side.
     */
    public static final Setting<Integer> GPU_LANES = Setting.intSetting(
        "gpu_vectors.gpu.lanes",
        PassConfig.defaults().lanes(),
        1,
        PassConfig.MAX_LANES,
        Setting.Property.NodeScope
    );

    /**
     * Node setting: GPU search passes that may be in flight at once. One at a time gathers the most concurrent
     * searches per pass; two can help an index of many small segments at moderate concurrency, where a pass's host
     * work is a large share of its time.
     */
    public static final Setting<Integer> GPU_PASSES_IN_FLIGHT = Setting.intSetting(
        "gpu_vectors.gpu.passes_in_flight",
        PassConfig.defaults().passesInFlight(),
        1,
        PassConfig.MAX_PASSES_IN_FLIGHT,
        Setting.Property.NodeScope
    );

    /**
     * Node setting: whether {@code ivf_pq} fields keep their raw vectors in GPU memory beside the codes, so that the
     * GPU re-ranks their candidates (default), or on the host, which then re-ranks the candidates the GPU returns:
     * the same results, 4 x dims bytes a vector less GPU memory, slower batches.
     */
    public static final Setting<Boolean> GPU_IVF_PQ_RERANK_ON_GPU = Setting.boolSetting(
        "gpu_vectors.gpu.ivf_pq_rerank_on_gpu",
        true,
        Setting.Property.NodeScope
    );

    /**
     * Index setting: the fewest vectors a segment needs for its {@code ivf_flat} / {@code ivf_pq} lists or its
     * {@code graph} to be built; smaller segments of such fields stay flat (exact search), which is faster than
     * probing lists or walking a graph over a few thousand vectors and needs no build. Applies to segments written
     * from then on; fixed for the life of the index.
     */
    public static final Setting<Integer> INDEX_APPROXIMATE_MIN_VECTORS = Setting.intSetting(
        "index.gpu_vectors.approximate_min_vectors",
        GpuVectorsFormat.DEFAULT_IVF_MIN_VECTORS,
        0,
        Setting.Property.IndexScope,
        Setting.Property.Final
    );

    /**
     * Index setting: make the index's {@code gpu_vector} segments resident on the GPU as soon as a refresh (or the
     * shard's opening) makes them searchable, instead of on their first query. Dynamic.
     */
    public static final Setting<Boolean> INDEX_WARMUP_ON_REFRESH = Setting.boolSetting(
        "index.gpu_vectors.warmup_on_refresh",
        false,
        Setting.Property.IndexScope,
        Setting.Property.Dynamic
    );

    /**
     * Threads of the node's {@code search} pool per allocated processor that the plugin proposes
     * ({@link #additionalNodeSettings}). Elasticsearch sizes that pool for searches that keep a core busy ({@code (3 x
     * processors) / 2 + 1}: 25 on 16 cores); a {@code gpu_vector} search holds its thread while it waits for its GPU
     * pass, so with 25 threads a node's search rate is bound by threads, not cores: on a 16-core node {@code ivf_pq}
     * reached 69 % of Elasticsearch's knn ceiling with 25 threads and 90 % with 100; 6 per processor is that 100.
     */
    static final int SEARCH_THREADS_PER_PROCESSOR = 6;

    /**
     * Node settings the plugin adds ({@code Plugin#additionalSettings}; the node's own settings win): a larger
     * {@code thread_pool.search.size} unless the GPU is switched off ({@code gpu_vectors.gpu.mode: false}).
     */
    static Settings additionalNodeSettings(Settings nodeSettings) {
        if (GpuSearchService.Mode.parse(GPU_MODE.get(nodeSettings)) == GpuSearchService.Mode.FALSE) {
            return Settings.EMPTY;
        }
        return Settings.builder().put("thread_pool.search.size", searchPoolSize(EsExecutors.allocatedProcessors(nodeSettings))).build();
    }

    /** The {@code search} pool the plugin proposes for a node of {@code processors} allocated processors. */
    static int searchPoolSize(int processors) {
        return SEARCH_THREADS_PER_PROCESSOR * processors + 1;
    }

    static List<Setting<?>> all() {
        return List.of(
            INDEX_ENABLED,
            INDEX_WARMUP_ON_REFRESH,
            INDEX_APPROXIMATE_MIN_VECTORS,
            GPU_MODE,
            GPU_DEVICE,
            GPU_MEMORY_BUDGET,
            GPU_MAX_BATCH_QUERIES,
            GPU_LANES,
            GPU_PASSES_IN_FLIGHT,
            GPU_IVF_PQ_RERANK_ON_GPU
        );
    }

    /** The GPU search service's settings from the node's settings. */
    static GpuSearchService.Settings gpuSettings(Settings nodeSettings) {
        PassConfig pass = PassConfig.defaults()
            .withLanes(GPU_LANES.get(nodeSettings))
            .withPassesInFlight(GPU_PASSES_IN_FLIGHT.get(nodeSettings));
        return GpuSearchService.Settings.builder()
            .mode(GpuSearchService.Mode.parse(GPU_MODE.get(nodeSettings)))
            .deviceOrdinal(GPU_DEVICE.get(nodeSettings))
            .memoryBudget(GPU_MEMORY_BUDGET.get(nodeSettings))
            .maxBatchQueries(GPU_MAX_BATCH_QUERIES.get(nodeSettings))
            .ivfPqRerankOnGpu(GPU_IVF_PQ_RERANK_ON_GPU.get(nodeSettings))
            .gpu(GpuConfig.builder().pass(pass).build())
            .build();
    }

    /**
     * A fraction ({@code 0.8}), a percentage ({@code 80%}) or a byte size ({@code 24gb}); the message names what is
     * wrong. The ratio is read here, the byte size by Elasticsearch's {@link ByteSizeValue}: its {@code
     * RelativeByteSizeValue} reads both, but answers an out-of-range fraction ({@code 1.5}) with a missing byte unit.
     */
    static MemoryBudget parseMemoryBudget(String value) {
        String key = MEMORY_BUDGET_KEY;
        String trimmed = value.trim();
        Double fraction = null;
        try {
            fraction = trimmed.endsWith("%")
                ? Double.parseDouble(trimmed.substring(0, trimmed.length() - 1)) / 100
                : Double.parseDouble(trimmed);
        } catch (NumberFormatException notARatio) {
            // a byte size, parsed below
        }
        if (fraction != null) {
            if ((fraction > 0 && fraction <= 1) == false) {
                throw new IllegalArgumentException(
                    "[" + key + "] must be a fraction in (0, 1], a percentage or a byte size but was [" + value + "]");
            }
            return MemoryBudget.ofFraction(fraction);
        }
        long bytes = ByteSizeValue.parseBytesSizeValue(trimmed, key).getBytes();
        if (bytes <= 0) {
            throw new IllegalArgumentException("[" + key + "] must be more than 0 bytes but was [" + value + "]");
        }
        return MemoryBudget.ofBytes(bytes);
    }

    private GpuVectorsSettings() {}
}
