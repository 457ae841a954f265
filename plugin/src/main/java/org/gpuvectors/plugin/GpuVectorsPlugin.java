package org.gpuvectors.plugin;

import org.elasticsearch.bootstrap.BootstrapCheck;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.common.settings.Setting;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.index.IndexSettingProvider;
import org.elasticsearch.index.IndexSettings;
import org.elasticsearch.index.engine.EngineFactory;
import org.elasticsearch.index.mapper.Mapper;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.EnginePlugin;
import org.elasticsearch.plugins.MapperPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.RestHandler;
import org.gpuvectors.codec.GpuFlatSearchService;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * The gpu-vectors Elasticsearch plugin. It only wires: the {@code gpu_vector} field type, the index setting
 * that turns our vector format on for an index, the provider that sets it automatically, and the engine
 * factory that puts our format under Elasticsearch's own codec for those indices; and the node's GPU settings
 * into the process-wide {@link GpuFlatSearchService}, whose statistics {@code GET _gpu_vectors/stats} returns.
 */
public class GpuVectorsPlugin extends Plugin implements MapperPlugin, EnginePlugin, ActionPlugin {

    private final Settings nodeSettings;

    public GpuVectorsPlugin(Settings nodeSettings) {
        this.nodeSettings = nodeSettings;
        // before any search: the process-wide GPU search service takes the node's GPU settings
        GpuFlatSearchService.configure(GpuVectorsSettings.gpuSettings(nodeSettings));
    }

    @Override
    public List<BootstrapCheck> getBootstrapChecks() {
        return List.of(new GpuModeBootstrapCheck());
    }

    @Override
    public Collection<RestHandler> getRestHandlers(
        RestHandlersServices services,
        Supplier<DiscoveryNodes> nodesInCluster,
        Predicate<NodeFeature> clusterSupportsFeature
    ) {
        return List.of(new RestGpuVectorsStatsAction());
    }

    @Override
    public void close() {
        GpuFlatSearchService.shutdown(); // frees all GPU memory of this node
    }

    @Override
    public Map<String, Mapper.TypeParser> getMappers() {
        return Map.of(GpuVectorFieldMapper.CONTENT_TYPE, GpuVectorFieldMapper.PARSER);
    }

    @Override
    public List<Setting<?>> getSettings() {
        return GpuVectorsSettings.all();
    }

    @Override
    public Collection<IndexSettingProvider> getAdditionalIndexSettingProviders(IndexSettingProvider.Parameters parameters) {
        return List.of(new GpuVectorsIndexSettingProvider());
    }

    @Override
    public Optional<EngineFactory> getEngineFactory(IndexSettings indexSettings) {
        if (GpuVectorsSettings.INDEX_ENABLED.get(indexSettings.getSettings())) {
            return Optional.of(new GpuVectorsEngineFactory());
        }
        return Optional.empty();
    }
}
