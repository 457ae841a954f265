package org.gpuvectors.plugin;

import org.elasticsearch.common.settings.Setting;
import org.elasticsearch.common.settings.Settings;
import org.gpuvectors.codec.gpu.GpuSearchService;

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

    /** Node setting: fraction of the device's memory that resident segments may take; beyond it, LRU eviction. */
    public static final Setting<Double> GPU_MEMORY_BUDGET = Setting.doubleSetting(
        "gpu_vectors.gpu.memory_budget",
        0.8,
        0.01,
        1.0,
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
     * Index setting: make the index's {@code gpu_vector} segments resident on the GPU as soon as a refresh (or the
     * shard's opening) makes them searchable, instead of on their first query. Dynamic.
     */
    public static final Setting<Boolean> INDEX_WARMUP_ON_REFRESH = Setting.boolSetting(
        "index.gpu_vectors.warmup_on_refresh",
        false,
        Setting.Property.IndexScope,
        Setting.Property.Dynamic
    );

    static List<Setting<?>> all() {
        return List.of(INDEX_ENABLED, INDEX_WARMUP_ON_REFRESH, GPU_MODE, GPU_DEVICE, GPU_MEMORY_BUDGET, GPU_MAX_BATCH_QUERIES);
    }

    /** The GPU search service's settings from the node's settings. */
    static GpuSearchService.Settings gpuSettings(Settings nodeSettings) {
        return new GpuSearchService.Settings(
            GpuSearchService.Mode.parse(GPU_MODE.get(nodeSettings)),
            GPU_DEVICE.get(nodeSettings),
            GPU_MEMORY_BUDGET.get(nodeSettings),
            GPU_MAX_BATCH_QUERIES.get(nodeSettings)
        );
    }

    private GpuVectorsSettings() {}
}
