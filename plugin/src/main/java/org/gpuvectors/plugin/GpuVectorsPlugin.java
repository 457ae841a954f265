package org.gpuvectors.plugin;

import org.apache.lucene.util.SetOnce;
import org.elasticsearch.bootstrap.BootstrapCheck;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.settings.Setting;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.index.IndexSettingProvider;
import org.elasticsearch.index.IndexSettings;
import org.elasticsearch.index.engine.EngineFactory;
import org.elasticsearch.index.mapper.Mapper;
import org.elasticsearch.indices.IndicesService;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.EnginePlugin;
import org.elasticsearch.plugins.MapperPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.threadpool.ThreadPool;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * The gpu-vectors Elasticsearch plugin. It only wires: the {@code gpu_vector} field type, the index settings (our
 * vector format on, warm-up on refresh) and the provider that sets the first automatically, the engine factory that
 * puts our format under Elasticsearch's own codec for those indices, and the node's {@link GpuSearchService} (made
 * in {@link #createComponents} from the node's GPU settings, closed with the node), whose statistics
 * {@code GET _gpu_vectors/stats} returns and which {@code POST <index>/_gpu_vectors/warmup} fills.
 */
public class GpuVectorsPlugin extends Plugin implements MapperPlugin, EnginePlugin, ActionPlugin {

    private final Settings nodeSettings;
    private final SetOnce<GpuSearchService> service = new SetOnce<>();
    private final SetOnce<IndicesService> indicesService = new SetOnce<>();
    private final SetOnce<ClusterService> clusterService = new SetOnce<>();
    private final SetOnce<ThreadPool> threadPool = new SetOnce<>();
    private final SetOnce<IndexNameExpressionResolver> resolver = new SetOnce<>();

    public GpuVectorsPlugin(Settings nodeSettings) {
        this.nodeSettings = nodeSettings;
    }

    @Override
    public Collection<?> createComponents(PluginServices services) {
        GpuSearchService gpu = GpuSearchService.create(GpuVectorsSettings.gpuSettings(nodeSettings));
        service.set(gpu);
        // our segment readers are made by Lucene through SPI: this is how they find the node's service
        GpuSearchServices.install(gpu);
        indicesService.set(services.indicesService());
        clusterService.set(services.clusterService());
        threadPool.set(services.threadPool());
        resolver.set(services.indexNameExpressionResolver());
        return List.of(gpu);
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
        Supplier<GpuSearchService> gpu = service::get;
        return List.of(
            new RestGpuVectorsStatsAction(gpu),
            new RestGpuVectorsWarmupAction(gpu, indicesService::get, clusterService::get, threadPool::get, resolver::get)
        );
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
        return GpuVectorsSettings.additionalNodeSettings(nodeSettings);
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
