package org.gpuvectors.plugin.stats;

import org.elasticsearch.action.support.nodes.BaseNodesRequest;

/**
 * {@code GET _gpu_vectors/stats[/<node ids>]}: the nodes to ask, as {@code _nodes/stats} resolves them (ids, names,
 * {@code _local}, attributes; none = every node). Like every nodes request it stays on the node that receives it:
 * only the per-node requests travel.
 */
public final class GpuVectorsStatsRequest extends BaseNodesRequest {

    public GpuVectorsStatsRequest(String... nodesIds) {
        super(nodesIds);
    }
}
