package org.gpuvectors.plugin.stats;

import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.transport.AbstractTransportRequest;

import java.io.IOException;

/** What the gathering node sends each node: nothing to choose, every node answers all of its statistics. */
public final class GpuVectorsStatsNodeRequest extends AbstractTransportRequest {

    public GpuVectorsStatsNodeRequest() {}

    public GpuVectorsStatsNodeRequest(StreamInput in) throws IOException {
        super(in);
    }
}
