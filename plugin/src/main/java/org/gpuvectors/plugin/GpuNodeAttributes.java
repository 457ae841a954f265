package org.gpuvectors.plugin;

import org.elasticsearch.common.settings.Settings;
import org.gpuvectors.codec.gpu.GpuSearchService;

/**
 * The node attributes the plugin publishes, so that Elasticsearch's own allocation filtering can keep
 * {@code gpu_vector} indices on the nodes that have a GPU ({@code index.routing.allocation.require.gpu_vectors.gpu:
 * true}) and {@code _cat/nodeattrs} shows which nodes have one:
 * <ul>
 *   <li>{@value #GPU}: {@code true} when the node's GPU is usable at start (a GPU, its driver, compute capability 8.0
 *       or newer, kernels built), else {@code false};</li>
 *   <li>{@value #BUDGET_BYTES}: the GPU memory resident segments may take ({@code gpu_vectors.gpu.memory_budget} in
 *       bytes), 0 without a GPU.</li>
 * </ul>
 * Proposed as the plugin's additional node settings: a value set in {@code elasticsearch.yml} or with {@code -E}
 * wins (to take a GPU node out of the filter by hand, or to simulate one in a test).
 */
final class GpuNodeAttributes {

    static final String GPU = "node.attr.gpu_vectors.gpu";
    static final String BUDGET_BYTES = "node.attr.gpu_vectors.gpu_budget_bytes";

    private GpuNodeAttributes() {}

    static Settings of(GpuSearchService service) {
        boolean active = service.gpuActive();
        return Settings.builder()
            .put(GPU, active)
            .put(BUDGET_BYTES, active ? service.budgetBytes() : 0L)
            .build();
    }
}
