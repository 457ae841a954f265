package org.gpuvectors.plugin.warmup;

import org.elasticsearch.action.support.IndicesOptions;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.common.Strings;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.action.RestToXContentListener;

import java.util.List;

/**
 * {@code POST <index>/_gpu_vectors/warmup}: makes the {@code gpu_vector} segments of every copy of the indices'
 * shards resident on the GPU of the node that holds it, before traffic; answers {@code _shards} and, per index, the
 * copies warmed, their segment fields and those now resident.
 */
public final class RestGpuVectorsWarmupAction extends BaseRestHandler {

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
        GpuVectorsWarmupRequest warmup = new GpuVectorsWarmupRequest(Strings.splitStringByCommaToArray(request.param("index")));
        warmup.indicesOptions(IndicesOptions.fromRequest(request, warmup.indicesOptions()));
        return channel -> client.execute(TransportGpuVectorsWarmupAction.TYPE, warmup, new RestToXContentListener<>(channel));
    }
}
