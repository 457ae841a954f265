package org.gpuvectors.plugin;

import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.gpuvectors.codec.gpu.GpuSearchService;
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
        assertEquals(0.8, settings.memoryBudget());
        assertEquals(GpuSearchService.Settings.DEFAULT_MAX_BATCH_QUERIES, settings.maxBatchQueries());
    }

    @Test
    void nodeSettingsReachTheService() {
        GpuSearchService.Settings settings = GpuVectorsSettings.gpuSettings(Settings.builder()
            .put("gpu_vectors.gpu.mode", "false")
            .put("gpu_vectors.gpu.device", 1)
            .put("gpu_vectors.gpu.memory_budget", 0.25)
            .put("gpu_vectors.gpu.max_batch_queries", 64)
            .build());
        assertEquals(GpuSearchService.Mode.FALSE, settings.mode());
        assertEquals(1, settings.deviceOrdinal());
        assertEquals(0.25, settings.memoryBudget());
        assertEquals(64, settings.maxBatchQueries());
    }

    @Test
    void theSearchPoolGrowsUnlessTheGpuIsOff() {
        assertEquals(97, GpuVectorsSettings.searchPoolSize(16)); // the 100 threads measured on the 16-core H100 node
        // node.processors may not exceed this machine's processors: 1 is valid everywhere
        Settings one = Settings.builder().put("node.processors", 1).build();
        Settings added = GpuVectorsSettings.additionalNodeSettings(one);
        assertEquals(Set.of("thread_pool.search.size"), added.keySet());
        assertEquals(7, added.getAsInt("thread_pool.search.size", -1));
        assertEquals(added, new GpuVectorsPlugin(one).additionalSettings());
        assertEquals(added, GpuVectorsSettings.additionalNodeSettings(Settings.builder().put(one)
            .put("gpu_vectors.gpu.mode", "true").build()));
        assertTrue(GpuVectorsSettings.additionalNodeSettings(Settings.builder().put(one)
            .put("gpu_vectors.gpu.mode", "false").build()).isEmpty());
    }

    @Test
    void badValuesNameTheSettingAndTheValue() {
        assertMessage("[gpu_vectors.gpu.mode] must be [auto], [true] or [false] but was [maybe]", "gpu_vectors.gpu.mode", "maybe");
        assertMessage("[gpu_vectors.gpu.max_batch_queries] must be >= 1", "gpu_vectors.gpu.max_batch_queries", "0");
        assertMessage("[gpu_vectors.gpu.memory_budget] must be <= 1.0", "gpu_vectors.gpu.memory_budget", "1.5");
        assertMessage("[gpu_vectors.gpu.device] must be >= 0", "gpu_vectors.gpu.device", "-1");
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
