package org.gpuvectors.plugin.stats;

import org.elasticsearch.action.ActionType;
import org.elasticsearch.action.FailedNodeException;
import org.elasticsearch.action.support.ActionFilters;
import org.elasticsearch.action.support.nodes.TransportNodesAction;
import org.elasticsearch.cluster.node.DiscoveryNode;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.injection.guice.Inject;
import org.elasticsearch.tasks.Task;
import org.elasticsearch.threadpool.ThreadPool;
import org.elasticsearch.transport.TransportService;
import org.gpuvectors.codec.gpu.GpuSearchService;

import java.io.IOException;
import java.util.List;

/**
 * Gathers the GPU statistics of every node (or the chosen ones), as {@code _nodes/stats} does. Its name is a
 * {@code cluster:monitor/} action, so Elasticsearch's security grants it with the {@code monitor} cluster privilege
 * (or {@code manage}, or the action's own name); each node answers from its own {@link GpuSearchService}, and a node
 * that does not answer is a failure in the {@code _nodes} header, not an error of the whole request.
 */
public class TransportGpuVectorsStatsAction extends TransportNodesAction<
    GpuVectorsStatsRequest,
    GpuVectorsStatsResponse,
    GpuVectorsStatsNodeRequest,
    GpuVectorsNodeStatsResponse,
    Void> {

    public static final String NAME = "cluster:monitor/gpu_vectors/stats";
    public static final ActionType<GpuVectorsStatsResponse> TYPE = new ActionType<>(NAME);

    private final GpuSearchService service;

    @Inject
    public TransportGpuVectorsStatsAction(
        ThreadPool threadPool,
        ClusterService clusterService,
        TransportService transportService,
        ActionFilters actionFilters,
        GpuSearchService service
    ) {
        super(NAME, clusterService, transportService, actionFilters, GpuVectorsStatsNodeRequest::new,
            threadPool.executor(ThreadPool.Names.MANAGEMENT));
        this.service = service;
    }

    @Override
    protected GpuVectorsStatsResponse newResponse(
        GpuVectorsStatsRequest request,
        List<GpuVectorsNodeStatsResponse> responses,
        List<FailedNodeException> failures
    ) {
        return new GpuVectorsStatsResponse(clusterService.getClusterName(), responses, failures);
    }

    @Override
    protected GpuVectorsStatsNodeRequest newNodeRequest(GpuVectorsStatsRequest request) {
        return new GpuVectorsStatsNodeRequest();
    }

    @Override
    protected GpuVectorsNodeStatsResponse newNodeResponse(StreamInput in, DiscoveryNode node) throws IOException {
        return new GpuVectorsNodeStatsResponse(in, node);
    }

    @Override
    protected GpuVectorsNodeStatsResponse nodeOperation(GpuVectorsStatsNodeRequest request, Task task) {
        return new GpuVectorsNodeStatsResponse(clusterService.localNode(), GpuNodeStats.of(service));
    }
}
