package org.gpuvectors.plugin;

import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.gpuvectors.codec.GpuVectorsFormat;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.MemoryBudget;
import org.gpuvectors.cuda.GpuConfig;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The node's GPU settings as the search service receives them, and the errors for bad values. */
class GpuVectorsSettingsTests {

    @BeforeAll
    static void elasticsearchLogging() {
        LogConfigurator.configureESLogging();
    }

    @Test
    void defaults() {
        GpuSearchService.Settings settings = GpuVectorsSettings.gpuSettings(Settings.EMPTY);
        assertEquals(GpuSearchService.Mode.AUTO, settings.mode());
        assertEquals(0, settings.deviceOrdinal());
        assertEquals(MemoryBudget.ofFraction(0.8), settings.memoryBudget());
        assertEquals(GpuSearchService.Settings.DEFAULT_MAX_BATCH_QUERIES, settings.maxBatchQueries());
        assertTrue(settings.ivfPqRerankOnGpu());
        assertEquals(GpuConfig.defaults(), settings.gpu(), "the node's GPU runs the production defaults");
        assertEquals(GpuSearchService.Settings.defaults(), settings, "the same settings as plain Lucene's defaults");
    }

    @Test
    void nodeSettingsReachTheService() {
        GpuSearchService.Settings settings = GpuVectorsSettings.gpuSettings(Settings.builder()
            .put("gpu_vectors.gpu.mode", "false")
            .put("gpu_vectors.gpu.device", 1)
            .put("gpu_vectors.gpu.memory_budget", 0.25)
            .put("gpu_vectors.gpu.max_batch_queries", 64)
            .put("gpu_vectors.gpu.lanes", 2)
            .put("gpu_vectors.gpu.passes_in_flight", 3)
            .put("gpu_vectors.gpu.ivf_pq_rerank_on_gpu", false)
            .build());
        assertEquals(GpuSearchService.Mode.FALSE, settings.mode());
        assertEquals(1, settings.deviceOrdinal());
        assertEquals(MemoryBudget.ofFraction(0.25), settings.memoryBudget());
        assertEquals(64, settings.maxBatchQueries());
        assertEquals(2, settings.gpu().pass().lanes());
        assertEquals(3, settings.gpu().pass().passesInFlight());
        assertEquals(false, settings.ivfPqRerankOnGpu());
        assertEquals(GpuConfig.defaults().flat(), settings.gpu().flat(), "what the node does not set keeps its default");
    }

    @Test
    void approximateMinVectorsIsAFinalIndexSetting() {
        assertEquals(GpuVectorsFormat.DEFAULT_IVF_MIN_VECTORS, GpuVectorsSettings.INDEX_APPROXIMATE_MIN_VECTORS.get(Settings.EMPTY));
        assertEquals(0, GpuVectorsSettings.INDEX_APPROXIMATE_MIN_VECTORS.get(
            Settings.builder().put("index.gpu_vectors.approximate_min_vectors", 0).build()));
        assertTrue(GpuVectorsSettings.INDEX_APPROXIMATE_MIN_VECTORS.isFinal());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GpuVectorsSettings
            .INDEX_APPROXIMATE_MIN_VECTORS.get(Settings.builder().put("index.gpu_vectors.approximate_min_vectors", -1).build()));
        assertTrue(e.getMessage().contains("[index.gpu_vectors.approximate_min_vectors] must be >= 0"), e.getMessage());
    }

    @Test
    void theSearchPoolGrowsUnlessTheGpuIsOff() {
        assertEquals(97, GpuVectorsSettings.searchPoolSize(16)); // the 100 threads measured on the 16-core H100 node
        // node.processors may not exceed this machine's processors: 1 is valid everywhere
        Settings one = Settings.builder().put("node.processors", 1).build();
        Settings added = GpuVectorsSettings.additionalNodeSettings(one);
        assertEquals(Set.of("thread_pool.search.size"), added.keySet());
        assertEquals(7, added.getAsInt("thread_pool.search.size", -1));
        GpuVectorsPlugin plugin = new GpuVectorsPlugin(one);
        try {
            // the plugin proposes the pool and the node attributes that say whether the node has a usable GPU
            Settings proposed = plugin.additionalSettings();
            assertEquals(added, proposed.filter(key -> key.startsWith("thread_pool.")));
            assertEquals(Set.of("thread_pool.search.size", "node.attr.gpu_vectors.gpu", "node.attr.gpu_vectors.gpu_budget_bytes"),
                proposed.keySet());
        } finally {
            plugin.close();
        }
        assertEquals(added, GpuVectorsSettings.additionalNodeSettings(Settings.builder().put(one)
            .put("gpu_vectors.gpu.mode", "true").build()));
        assertTrue(GpuVectorsSettings.additionalNodeSettings(Settings.builder().put(one)
            .put("gpu_vectors.gpu.mode", "false").build()).isEmpty());
    }

    @Test
    void badValuesNameTheSettingAndTheValue() {
        assertMessage("[gpu_vectors.gpu.mode] must be [auto], [true] or [false] but was [maybe]", "gpu_vectors.gpu.mode", "maybe");
        assertMessage("[gpu_vectors.gpu.max_batch_queries] must be >= 1", "gpu_vectors.gpu.max_batch_queries", "0");
        assertMessage("[gpu_vectors.gpu.memory_budget] must be a fraction in (0, 1], a percentage or a byte size but was [1.5]",
            "gpu_vectors.gpu.memory_budget", "1.5");
        assertMessage("[gpu_vectors.gpu.memory_budget] must be a fraction in (0, 1], a percentage or a byte size but was [0%]",
            "gpu_vectors.gpu.memory_budget", "0%");
        assertMessage("[gpu_vectors.gpu.memory_budget] must be more than 0 bytes but was [0b]", "gpu_vectors.gpu.memory_budget", "0b");
        assertMessage("gpu_vectors.gpu.memory_budget", "gpu_vectors.gpu.memory_budget", "lots");
        assertMessage("[gpu_vectors.gpu.device] must be >= 0", "gpu_vectors.gpu.device", "-1");
        assertMessage("[gpu_vectors.gpu.lanes] must be <= 16", "gpu_vectors.gpu.lanes", "17");
        assertMessage("[gpu_vectors.gpu.passes_in_flight] must be >= 1", "gpu_vectors.gpu.passes_in_flight", "0");
    }

    @Test
    void theMemoryBudgetIsAFractionAPercentageOrABytesSize() {
        assertEquals(MemoryBudget.ofFraction(0.02), budget("0.02"));
        assertEquals(MemoryBudget.ofFraction(0.125), budget("12.5%"));
        assertEquals(MemoryBudget.ofBytes(384L << 20), budget("384mb"));
        assertEquals(384L << 20, budget("384mb").bytesOf(141L << 30), "bytes are the budget on a larger device");
        assertEquals(1L << 30, budget("2gb").bytesOf(1L << 30), "and capped at a smaller device's memory");
        assertEquals((long) ((1L << 30) * 0.125), budget("12.5%").bytesOf(1L << 30));
    }

    private static MemoryBudget budget(String value) {
        return GpuVectorsSettings.gpuSettings(Settings.builder().put("gpu_vectors.gpu.memory_budget", value).build()).memoryBudget();
    }

    @Test
    void warmupOnRefreshIsADynamicBooleanIndexSetting() {
        assertTrue(GpuVectorsSettings.INDEX_WARMUP_ON_REFRESH.isDynamic());
        assertEquals(true, GpuVectorsSettings.INDEX_WARMUP_ON_REFRESH.get(
            Settings.builder().put("index.gpu_vectors.warmup_on_refresh", true).build()));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GpuVectorsSettings.INDEX_WARMUP_ON_REFRESH.get(
            Settings.builder().put("index.gpu_vectors.warmup_on_refresh", "sometimes").build()));
        assertTrue(e.getMessage().contains("[sometimes]"), e.getMessage());
    }

    private static void assertMessage(String expected, String key, String value) {
        IllegalArgumentException e = assertThrows(
            IllegalArgumentException.class,
            () -> GpuVectorsSettings.gpuSettings(Settings.builder().put(key, value).build())
        );
        String message = e.getMessage() + (e.getCause() == null ? "" : " / " + e.getCause().getMessage());
        assertTrue(message.contains(expected), () -> "expected [" + expected + "] in: " + message);
    }
}
