package org.gpuvectors.plugin.stats;

import org.elasticsearch.action.support.nodes.BaseNodeResponse;
import org.elasticsearch.cluster.node.DiscoveryNode;
import org.elasticsearch.cluster.node.DiscoveryNodeRole;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.xcontent.ToXContentFragment;
import org.elasticsearch.xcontent.XContentBuilder;

import java.io.IOException;
import java.util.Map;
import java.util.TreeMap;

/** One node's answer: its statistics, shown under {@code nodes.<id>} with the node's name, host, roles and attributes. */
public final class GpuVectorsNodeStatsResponse extends BaseNodeResponse implements ToXContentFragment {

    private final GpuNodeStats stats;

    public GpuVectorsNodeStatsResponse(DiscoveryNode node, GpuNodeStats stats) {
        super(node);
        this.stats = stats;
    }

    public GpuVectorsNodeStatsResponse(StreamInput in, DiscoveryNode node) throws IOException {
        super(in, node);
        this.stats = GpuNodeStats.readFrom(in);
    }

    public GpuVectorsNodeStatsResponse(StreamInput in) throws IOException {
        super(in);
        this.stats = GpuNodeStats.readFrom(in);
    }

    public GpuNodeStats stats() {
        return stats;
    }

    @Override
    public void writeTo(StreamOutput out) throws IOException {
        super.writeTo(out);
        stats.writeTo(out);
    }

    @Override
    public XContentBuilder toXContent(XContentBuilder builder, Params params) throws IOException {
        DiscoveryNode node = getNode();
        builder.field("name", node.getName());
        builder.field("host", node.getHostName());
        builder.startArray("roles");
        for (DiscoveryNodeRole role : node.getRoles()) {
            builder.value(role.roleName());
        }
        builder.endArray();
        // the node's attributes, among them the plugin's gpu_vectors.* (what allocation filtering matches)
        builder.startObject("attributes");
        for (Map.Entry<String, String> attribute : new TreeMap<>(node.getAttributes()).entrySet()) {
            builder.field(attribute.getKey(), attribute.getValue());
        }
        builder.endObject();
        return stats.toXContent(builder, params);
    }
}
