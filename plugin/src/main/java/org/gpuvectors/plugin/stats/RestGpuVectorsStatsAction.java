package org.gpuvectors.plugin.stats;

import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.common.Strings;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestUtils;
import org.elasticsearch.rest.action.RestActions;

import java.util.List;

/**
 * {@code GET _gpu_vectors/stats} and {@code GET _gpu_vectors/stats/<node ids>}: the GPU search statistics of every
 * node (or of those named) — whether a GPU is in use (or why not), device memory used and budgeted, resident segment
 * fields, searches that ran on the GPU and those that fell back to the CPU, by reason — per node and summed.
 */
public final class RestGpuVectorsStatsAction extends BaseRestHandler {

    @Override
    public String getName() {
        return "gpu_vectors_stats";
    }

    @Override
    public List<Route> routes() {
        return List.of(
            new Route(RestRequest.Method.GET, "/_gpu_vectors/stats"),
            new Route(RestRequest.Method.GET, "/_gpu_vectors/stats/{node_id}")
        );
    }

    @Override
    protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
        GpuVectorsStatsRequest statsRequest = new GpuVectorsStatsRequest(Strings.splitStringByCommaToArray(request.param("node_id")));
        statsRequest.setTimeout(RestUtils.getTimeout(request));
        return channel -> client.execute(TransportGpuVectorsStatsAction.TYPE, statsRequest,
            new RestActions.NodesResponseRestListener<>(channel));
    }
}
