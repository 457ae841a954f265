package org.gpuvectors.plugin.stats;

import org.elasticsearch.action.FailedNodeException;
import org.elasticsearch.cluster.ClusterName;
import org.elasticsearch.cluster.node.DiscoveryNode;
import org.elasticsearch.cluster.node.DiscoveryNodeRole;
import org.elasticsearch.cluster.node.VersionInformation;
import org.elasticsearch.common.io.stream.BytesStreamOutput;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.transport.TransportAddress;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GpuVectorsStatsResponseTests {

    @BeforeAll
    static void elasticsearchLogging() {
        LogConfigurator.configureESLogging();
    }

    static DiscoveryNode discoveryNode(String id, int port, boolean gpu) {
        return new DiscoveryNode("name-" + id, id, new TransportAddress(InetAddress.getLoopbackAddress(), port),
            Map.of("gpu_vectors.gpu", Boolean.toString(gpu)), Set.of(DiscoveryNodeRole.DATA_ROLE, DiscoveryNodeRole.MASTER_ROLE),
            VersionInformation.CURRENT);
    }

    static GpuVectorsStatsResponse twoNodes() {
        GpuNodeStats gpu = new GpuNodeStats(true, "a GPU", null, StatsSectionTests.node(4, 1, Map.of("k_too_large", 1L)));
        GpuNodeStats cpu = new GpuNodeStats(false, null, "no usable GPU: no driver", StatsSectionTests.node(0, 9, Map.of("no_gpu", 9L)));
        return new GpuVectorsStatsResponse(new ClusterName("c"),
            List.of(new GpuVectorsNodeStatsResponse(discoveryNode("a", 9300, true), gpu),
                new GpuVectorsNodeStatsResponse(discoveryNode("b", 9301, false), cpu)),
            List.of(new FailedNodeException("c", "node c did not answer", new IOException("gone"))));
    }

    @Test
    void sumsTheCountersOfEveryNodeThatAnsweredAndCountsTheGpuNodes() {
        GpuVectorsStatsResponse response = twoNodes();
        assertEquals(1, response.activeGpuNodes());
        StatsSection total = response.total();
        assertEquals(4L, total.counter("memory.uploads"));
        assertEquals(10L, total.counter("searches.cpu_fallbacks"));
        assertEquals(9L, total.counter("searches.cpu_fallbacks_by_reason.no_gpu"));
        assertEquals(1L, total.counter("searches.cpu_fallbacks_by_reason.k_too_large"));
        assertEquals(1, response.failures().size());
    }

    @Test
    void nodeResponsesRoundTripThroughTheTransport() throws IOException {
        for (GpuVectorsNodeStatsResponse node : twoNodes().getNodes()) {
            GpuVectorsNodeStatsResponse copy;
            try (BytesStreamOutput out = new BytesStreamOutput()) {
                node.writeTo(out);
                try (StreamInput in = out.bytes().streamInput()) {
                    copy = new GpuVectorsNodeStatsResponse(in);
                }
            }
            assertEquals(node.getNode(), copy.getNode());
            assertEquals(node.stats(), copy.stats());
        }
    }

    @Test
    void showsTheSumAndEachNodeUnderItsId() throws IOException {
        String json = StatsSectionTests.json(twoNodes());
        assertTrue(json.startsWith("{\"total\":{\"gpu\":{\"nodes\":2,\"active_nodes\":1},\"memory\":{\"uploads\":4},"), json);
        assertTrue(json.contains("\"nodes\":{\"a\":{\"name\":\"name-a\""), json);
        assertTrue(json.contains("\"attributes\":{\"gpu_vectors.gpu\":\"false\"},\"gpu\":{\"active\":false,\"device\":null,"
            + "\"unusable_reason\":\"no usable GPU: no driver\"},\"memory\":{\"uploads\":0}"), json);
    }

    @Test
    void aNodeWithoutAGpuReportsWhyAndItsCountersInTheUsualShape() throws IOException {
        try (GpuSearchService service = GpuSearchService.create(GpuSearchService.Settings.builder()
            .mode(GpuSearchService.Mode.FALSE).build())) {
            GpuNodeStats stats = GpuNodeStats.of(service);
            assertFalse(stats.gpuActive());
            assertNull(stats.device());
            assertEquals(0L, stats.counters().counter("memory.budget_bytes"));
            assertEquals(0L, stats.counters().counter("searches.batches.graph_bytes"));
            assertEquals(List.of("memory", "searches", "builds"), List.copyOf(stats.counters().entries().keySet()));
            try (BytesStreamOutput out = new BytesStreamOutput()) {
                stats.writeTo(out);
                try (StreamInput in = out.bytes().streamInput()) {
                    assertEquals(stats, GpuNodeStats.readFrom(in));
                }
            }
        }
    }
}
