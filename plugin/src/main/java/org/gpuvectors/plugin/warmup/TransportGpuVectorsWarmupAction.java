package org.gpuvectors.plugin.warmup;

import org.elasticsearch.action.ActionListener;
import org.elasticsearch.action.ActionType;
import org.elasticsearch.action.support.ActionFilters;
import org.elasticsearch.action.support.broadcast.node.TransportBroadcastByNodeAction;
import org.elasticsearch.cluster.ClusterState;
import org.elasticsearch.cluster.block.ClusterBlockException;
import org.elasticsearch.cluster.block.ClusterBlockLevel;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.routing.ShardRouting;
import org.elasticsearch.cluster.routing.ShardsIterator;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.index.engine.Engine;
import org.elasticsearch.index.shard.IndexShard;
import org.elasticsearch.indices.IndicesService;
import org.elasticsearch.injection.guice.Inject;
import org.elasticsearch.tasks.Task;
import org.elasticsearch.threadpool.ThreadPool;
import org.elasticsearch.transport.TransportService;
import org.gpuvectors.codec.GpuWarmup;
import org.gpuvectors.codec.gpu.GpuSearchService;

import java.io.IOException;

/**
 * Warms every copy (primaries and replicas) of the requested indices on the node that holds it, as
 * {@code _cache/clear} and {@code _forcemerge} reach every copy: the node that receives the request sends one request
 * to each node holding copies, and each warms its own from its own {@link GpuSearchService}. A copy that fails, or
 * whose node leaves before answering, is a shard failure in {@code _shards}.
 *
 * <p>Its name is an {@code indices:admin/} action: warming changes what the node's GPU holds (it can evict other
 * indices' segments under the budget), an administrative act on the index like clearing its caches, so security
 * grants it with the {@code manage} index privilege (or the action's own name), not with read-only {@code monitor}.
 * Runs on the generic pool: uploads take time.
 */
public class TransportGpuVectorsWarmupAction extends TransportBroadcastByNodeAction<
    GpuVectorsWarmupRequest,
    GpuVectorsWarmupResponse,
    ShardWarmup,
    Void> {

    public static final String NAME = "indices:admin/gpu_vectors/warmup";
    public static final ActionType<GpuVectorsWarmupResponse> TYPE = new ActionType<>(NAME);

    private final IndicesService indicesService;
    private final GpuSearchService service;

    @Inject
    public TransportGpuVectorsWarmupAction(
        ClusterService clusterService,
        TransportService transportService,
        IndicesService indicesService,
        ActionFilters actionFilters,
        IndexNameExpressionResolver indexNameExpressionResolver,
        GpuSearchService service
    ) {
        super(NAME, clusterService, transportService, actionFilters, indexNameExpressionResolver, GpuVectorsWarmupRequest::new,
            transportService.getThreadPool().executor(ThreadPool.Names.GENERIC));
        this.indicesService = indicesService;
        this.service = service;
    }

    @Override
    protected ShardWarmup readShardResult(StreamInput in) throws IOException {
        return ShardWarmup.readFrom(in);
    }

    @Override
    protected ResponseFactory<GpuVectorsWarmupResponse, ShardWarmup> getResponseFactory(GpuVectorsWarmupRequest request,
                                                                                        ClusterState clusterState) {
        return GpuVectorsWarmupResponse::new;
    }

    @Override
    protected GpuVectorsWarmupRequest readRequestFrom(StreamInput in) throws IOException {
        return new GpuVectorsWarmupRequest(in);
    }

    @Override
    protected void shardOperation(GpuVectorsWarmupRequest request, ShardRouting shardRouting, Task task, Void nodeContext,
                                  ActionListener<ShardWarmup> listener) {
        ActionListener.completeWith(listener, () -> {
            IndexShard shard = indicesService.indexServiceSafe(shardRouting.index()).getShard(shardRouting.id());
            try (Engine.Searcher searcher = shard.acquireSearcher("gpu_vectors_warmup")) {
                GpuWarmup.Result result = GpuWarmup.warm(searcher.getIndexReader(), service);
                return new ShardWarmup(shardRouting.getIndexName(), service.gpuActive(), result.fields(), result.resident(),
                    result.nanos());
            }
        });
    }

    @Override
    protected ShardsIterator shards(ClusterState clusterState, GpuVectorsWarmupRequest request, String[] concreteIndices) {
        return clusterState.routingTable().allShards(concreteIndices);
    }

    @Override
    protected ClusterBlockException checkGlobalBlock(ClusterState state, GpuVectorsWarmupRequest request) {
        return state.blocks().globalBlockedException(ClusterBlockLevel.METADATA_READ);
    }

    @Override
    protected ClusterBlockException checkRequestBlock(ClusterState state, GpuVectorsWarmupRequest request, String[] concreteIndices) {
        return state.blocks().indicesBlockedException(ClusterBlockLevel.READ, concreteIndices);
    }
}
