package org.gpuvectors.plugin.warmup;

import org.elasticsearch.action.support.broadcast.BroadcastRequest;
import org.elasticsearch.common.io.stream.StreamInput;

import java.io.IOException;

/**
 * {@code POST <index>/_gpu_vectors/warmup}: the indices whose shard copies to warm. An indices request, so security
 * resolves and authorizes its indices (missing ones are a 404, closed ones refused, as for {@code _cache/clear}).
 */
public final class GpuVectorsWarmupRequest extends BroadcastRequest<GpuVectorsWarmupRequest> {

    public GpuVectorsWarmupRequest(String... indices) {
        super(indices);
    }

    public GpuVectorsWarmupRequest(StreamInput in) throws IOException {
        super(in);
    }
}
