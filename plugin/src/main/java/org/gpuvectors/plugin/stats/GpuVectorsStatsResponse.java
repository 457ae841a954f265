package org.gpuvectors.plugin.stats;

import org.elasticsearch.action.FailedNodeException;
import org.elasticsearch.action.support.nodes.BaseNodesResponse;
import org.elasticsearch.cluster.ClusterName;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.xcontent.ToXContentFragment;
import org.elasticsearch.xcontent.XContentBuilder;

import java.io.IOException;
import java.util.List;

/**
 * The answer of {@code GET _gpu_vectors/stats}: after the {@code _nodes} header and {@code cluster_name} (written by
 * Elasticsearch's nodes listener), {@code total} (the counters summed over the nodes that answered, and how many of
 * them have a usable GPU) and {@code nodes.<id>}, each node's own section.
 */
public final class GpuVectorsStatsResponse extends BaseNodesResponse<GpuVectorsNodeStatsResponse> implements ToXContentFragment {

    public GpuVectorsStatsResponse(ClusterName clusterName, List<GpuVectorsNodeStatsResponse> nodes, List<FailedNodeException> failures) {
        super(clusterName, nodes, failures);
    }

    public GpuVectorsStatsResponse(StreamInput in) throws IOException {
        super(in);
    }

    @Override
    protected List<GpuVectorsNodeStatsResponse> readNodesFrom(StreamInput in) throws IOException {
        return in.readCollectionAsList(GpuVectorsNodeStatsResponse::new);
    }

    @Override
    protected void writeNodesTo(StreamOutput out, List<GpuVectorsNodeStatsResponse> nodes) throws IOException {
        out.writeCollection(nodes);
    }

    /** Nodes that answered with a usable GPU. */
    public int activeGpuNodes() {
        return (int) getNodes().stream().filter(n -> n.stats().gpuActive()).count();
    }

    /** Every answering node's counters, summed name by name. */
    public StatsSection total() {
        StatsSection sum = StatsSection.EMPTY;
        for (GpuVectorsNodeStatsResponse node : getNodes()) {
            sum = sum.plus(node.stats().counters());
        }
        return sum;
    }

    @Override
    public XContentBuilder toXContent(XContentBuilder builder, Params params) throws IOException {
        builder.startObject("total");
        builder.startObject("gpu");
        builder.field("nodes", getNodes().size());
        builder.field("active_nodes", activeGpuNodes());
        builder.endObject();
        total().toXContent(builder, params);
        builder.endObject();
        builder.startObject("nodes");
        for (GpuVectorsNodeStatsResponse node : getNodes()) {
            builder.startObject(node.getNode().getId());
            node.toXContent(builder, params);
            builder.endObject();
        }
        builder.endObject();
        return builder;
    }
}
