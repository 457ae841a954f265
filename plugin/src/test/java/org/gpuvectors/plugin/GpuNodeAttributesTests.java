package org.gpuvectors.plugin;

import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class GpuNodeAttributesTests {

    @BeforeAll
    static void elasticsearchLogging() {
        LogConfigurator.configureESLogging();
    }

    @Test
    void aNodeWithoutAUsableGpuSaysSoWithNoBudget() {
        try (GpuSearchService service = GpuSearchService.create(GpuVectorsSettings.gpuSettings(
            Settings.builder().put("gpu_vectors.gpu.mode", "false").build()))) {
            Settings attributes = GpuNodeAttributes.of(service);
            assertEquals("false", attributes.get("node.attr.gpu_vectors.gpu"));
            assertEquals("0", attributes.get("node.attr.gpu_vectors.gpu_budget_bytes"));
        }
    }

    @Test
    void theNodesOwnSettingsWinOverThePlugins() {
        GpuVectorsPlugin plugin = new GpuVectorsPlugin(Settings.builder()
            .put("gpu_vectors.gpu.mode", "false")
            .put("node.attr.gpu_vectors.gpu", "true")
            .build());
        try {
            Settings proposed = plugin.additionalSettings();
            assertEquals("false", proposed.get("node.attr.gpu_vectors.gpu"), "the plugin proposes what it found");
            // Elasticsearch puts the node's own settings over the plugins' (PluginsService#updatedSettings), so a
            // node started with -E node.attr.gpu_vectors.gpu=true keeps it: how tests simulate a GPU node
        } finally {
            plugin.close();
        }
    }
}
