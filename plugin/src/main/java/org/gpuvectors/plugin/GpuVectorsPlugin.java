package org.gpuvectors.plugin;

import org.apache.lucene.util.SetOnce;
import org.elasticsearch.bootstrap.BootstrapCheck;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.common.settings.Setting;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.index.IndexSettingProvider;
import org.elasticsearch.index.IndexSettings;
import org.elasticsearch.index.engine.EngineFactory;
import org.elasticsearch.index.mapper.Mapper;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.EnginePlugin;
import org.elasticsearch.plugins.MapperPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.RestHandler;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.plugin.stats.RestGpuVectorsStatsAction;
import org.gpuvectors.plugin.stats.TransportGpuVectorsStatsAction;
import org.gpuvectors.plugin.warmup.RestGpuVectorsWarmupAction;
import org.gpuvectors.plugin.warmup.TransportGpuVectorsWarmupAction;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * The gpu-vectors Elasticsearch plugin. It only wires: the {@code gpu_vector} field type, the index settings (our
 * vector format on, warm-up on refresh) and the provider that sets the first automatically, the engine factory that
 * puts our format under Elasticsearch's own codec for those indices, the node's {@link GpuSearchService} (made from
 * the node's GPU settings when the node asks for the plugin's settings, closed with the node), the node attributes
 * that say whether it has a usable GPU ({@link GpuNodeAttributes}), and the two transport actions behind
 * {@code GET _gpu_vectors/stats} (every node's statistics) and {@code POST <index>/_gpu_vectors/warmup} (every shard
 * copy warmed on its node).
 */
public class GpuVectorsPlugin extends Plugin implements MapperPlugin, EnginePlugin, ActionPlugin {

    private final Settings nodeSettings;
    private final SetOnce<GpuSearchService> service = new SetOnce<>();

    public GpuVectorsPlugin(Settings nodeSettings) {
        this.nodeSettings = nodeSettings;
    }

    /**
     * The node's GPU service, made on first use. The node asks for {@link #additionalSettings} (where the node
     * attributes need to know whether the GPU is usable) before {@link #createComponents}: whichever comes first makes
     * it, so the GPU is probed once.
     */
    private synchronized GpuSearchService gpuService() {
        GpuSearchService gpu = service.get();
        if (gpu == null) {
            gpu = GpuSearchService.create(GpuVectorsSettings.gpuSettings(nodeSettings));
            service.set(gpu);
            // our segment readers are made by Lucene through SPI: this is how they find the node's service
            GpuSearchServices.install(gpu);
        }
        return gpu;
    }

    @Override
    public Collection<?> createComponents(PluginServices services) {
        // a component: the transport actions get it injected
        return List.of(gpuService());
    }

    @Override
    public Collection<ActionHandler> getActions() {
        return List.of(
            new ActionHandler(TransportGpuVectorsStatsAction.TYPE, TransportGpuVectorsStatsAction.class),
            new ActionHandler(TransportGpuVectorsWarmupAction.TYPE, TransportGpuVectorsWarmupAction.class)
        );
    }

    @Override
    public List<BootstrapCheck> getBootstrapChecks() {
        return List.of(new GpuModeBootstrapCheck(service::get));
    }

    @Override
    public Collection<RestHandler> getRestHandlers(
        RestHandlersServices services,
        Supplier<DiscoveryNodes> nodesInCluster,
        Predicate<NodeFeature> clusterSupportsFeature
    ) {
        return List.of(new RestGpuVectorsStatsAction(), new RestGpuVectorsWarmupAction());
    }

    @Override
    public void close() {
        GpuSearchService gpu = service.get();
        if (gpu != null) {
            GpuSearchServices.uninstall(gpu);
            gpu.close(); // frees all GPU memory of this node
        }
    }

    @Override
    public Map<String, Mapper.TypeParser> getMappers() {
        return Map.of(GpuVectorFieldMapper.CONTENT_TYPE, GpuVectorFieldMapper.PARSER);
    }

    @Override
    public Settings additionalSettings() {
        return Settings.builder()
            .put(GpuVectorsSettings.additionalNodeSettings(nodeSettings))
            .put(GpuNodeAttributes.of(gpuService()))
            .build();
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
            return Optional.of(new GpuVectorsEngineFactory(service::get));
        }
        return Optional.empty();
    }
}
