package org.gpuvectors.yamlrest;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

import java.util.Map;

/**
 * The node's {@code search} thread pool: with the plugin (GPU mode {@code auto}), 6 threads per allocated processor
 * plus one, since a {@code gpu_vector} search holds its thread while it waits for the GPU; without it, Elasticsearch's
 * own {@code (3 x processors) / 2 + 1}. Both read from the running node, the processors from {@code _nodes/os}.
 */
class SearchPoolIT extends SingleNodeIT {

    @Test
    void searchPoolIsSizedForSearchesThatWaitOnTheGpu() throws Exception {
        Map<?, ?> nodes = (Map<?, ?>) client.ok("GET", "/_nodes/os,thread_pool", null).map().get("nodes");
        Map<?, ?> info = (Map<?, ?>) nodes.values().iterator().next();
        int processors = ((Number) ((Map<?, ?>) info.get("os")).get("allocated_processors")).intValue();
        Map<?, ?> search = (Map<?, ?>) ((Map<?, ?>) info.get("thread_pool")).get("search");
        int expected = vanillaNode() ? (3 * processors) / 2 + 1 : 6 * processors + 1;
        assertEquals(expected, ((Number) search.get("size")).intValue(), () -> "search pool of " + info);
    }
}
