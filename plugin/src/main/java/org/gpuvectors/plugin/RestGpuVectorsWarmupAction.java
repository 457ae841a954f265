package org.gpuvectors.plugin;

import org.elasticsearch.action.support.IndicesOptions;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.Strings;
import org.elasticsearch.index.Index;
import org.elasticsearch.index.IndexService;
import org.elasticsearch.index.engine.Engine;
import org.elasticsearch.index.shard.IndexShard;
import org.elasticsearch.index.shard.IndexShardState;
import org.elasticsearch.indices.IndicesService;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.threadpool.ThreadPool;
import org.elasticsearch.xcontent.XContentBuilder;
import org.gpuvectors.codec.GpuWarmup;
import org.gpuvectors.codec.gpu.GpuSearchService;

import java.util.List;
import java.util.function.Supplier;

/**
 * {@code POST <index>/_gpu_vectors/warmup}: makes the {@code gpu_vector} segments of the index's shards on the
 * receiving node resident on its GPU, before traffic; answers per index the shards, segment fields resident, and
 * the time it took. Runs on the generic thread pool (uploads take time), not on the network thread.
 *
 * <p>Limit: it warms the shards held by the node that receives the request (every shard on a single-node cluster);
 * on a larger cluster send it to each data node, or set {@code index.gpu_vectors.warmup_on_refresh}.
 */
final class RestGpuVectorsWarmupAction extends BaseRestHandler {

    private final Supplier<GpuSearchService> service;
    private final Supplier<IndicesService> indicesService;
    private final Supplier<ClusterService> clusterService;
    private final Supplier<ThreadPool> threadPool;
    private final Supplier<IndexNameExpressionResolver> resolver;

    RestGpuVectorsWarmupAction(
        Supplier<GpuSearchService> service,
        Supplier<IndicesService> indicesService,
        Supplier<ClusterService> clusterService,
        Supplier<ThreadPool> threadPool,
        Supplier<IndexNameExpressionResolver> resolver
    ) {
        this.service = service;
        this.indicesService = indicesService;
        this.clusterService = clusterService;
        this.threadPool = threadPool;
        this.resolver = resolver;
    }

    @Override
    public String getName() {
        return "gpu_vectors_warmup";
    }

    @Override
    public List<Route> routes() {
        return List.of(new Route(RestRequest.Method.POST, "/{index}/_gpu_vectors/warmup"));
    }

    @Override
    protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
        String[] names = Strings.splitStringByCommaToArray(request.param("index"));
        // resolved now: a missing index is a 404 before any work starts
        Index[] indices = resolver.get().concreteIndices(clusterService.get().state(), IndicesOptions.strictExpandOpen(), names);
        return channel -> threadPool.get().generic().execute(() -> {
            try {
                XContentBuilder builder = channel.newBuilder();
                GpuSearchService gpu = service.get();
                builder.startObject();
                builder.field("gpu_active", gpu.gpuActive());
                builder.startObject("indices");
                for (Index index : indices) {
                    warm(index, gpu, builder);
                }
                builder.endObject();
                builder.endObject();
                channel.sendResponse(new RestResponse(RestStatus.OK, builder));
            } catch (Exception e) {
                try {
                    channel.sendResponse(new RestResponse(channel, e));
                } catch (Exception inner) {
                    e.addSuppressed(inner);
                }
            }
        });
    }

    private void warm(Index index, GpuSearchService gpu, XContentBuilder builder) throws Exception {
        long start = System.nanoTime();
        int shards = 0;
        int fields = 0;
        int resident = 0;
        IndexService indexService = indicesService.get().indexService(index);
        if (indexService != null) {
            for (IndexShard shard : indexService) {
                if (shard.state() != IndexShardState.STARTED) {
                    continue;
                }
                try (Engine.Searcher searcher = shard.acquireSearcher("gpu_vectors_warmup")) {
                    GpuWarmup.Result result = GpuWarmup.warm(searcher.getIndexReader(), gpu);
                    shards++;
                    fields += result.fields();
                    resident += result.resident();
                }
            }
        }
        builder.startObject(index.getName());
        builder.field("shards", shards);
        builder.field("segment_fields", fields);
        builder.field("resident_segment_fields", resident);
        builder.field("took_in_millis", (System.nanoTime() - start) / 1_000_000);
        builder.endObject();
    }
}
