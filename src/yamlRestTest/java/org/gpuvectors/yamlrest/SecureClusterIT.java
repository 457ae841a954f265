package org.gpuvectors.yamlrest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestMethodOrder;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The plugin on a real cluster of three nodes with Elasticsearch's security on (file-realm users, {@link EsCluster}):
 * stats gather every node, warm-up reaches every shard copy, each is authorized by its own privilege, the node
 * attribute drives allocation filtering, and the YAML tests of stats and warm-up hold on the cluster as on one node.
 *
 * <p>No node here has a GPU: node-0 is started with {@code node.attr.gpu_vectors.gpu=true} by hand, standing for the
 * GPU node of a mixed cluster (the node's own setting wins over the plugin's); node-1 and node-2 carry the value the
 * plugin publishes for a node without a usable GPU, {@code false}.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SecureClusterIT {

    private static final int NODES = 3;
    private static EsCluster cluster;
    private static RestClient admin;

    @BeforeAll
    static void startCluster() throws Exception {
        YamlRestIT.assumeRunByFailsafe();
        cluster = EsCluster.start(NODES, i -> i == 0 ? List.of("node.attr.gpu_vectors.gpu=true") : List.of());
        admin = cluster.client(EsCluster.ADMIN);
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
            cluster = null;
        }
    }

    @Test
    void statsGatherEveryNodeAndSumThem() throws Exception {
        Map<String, Object> stats = admin.ok("GET", "/_gpu_vectors/stats", null).map();
        assertEquals(Map.of("total", NODES, "successful", NODES, "failed", 0), stats.get("_nodes"), stats.toString());
        Map<?, ?> nodes = (Map<?, ?>) stats.get("nodes");
        assertEquals(NODES, nodes.size());
        Set<String> names = new HashSet<>();
        long fallbacks = 0;
        for (Object node : nodes.values()) {
            Map<?, ?> section = (Map<?, ?>) node;
            names.add((String) section.get("name"));
            Map<?, ?> attributes = (Map<?, ?>) section.get("attributes");
            boolean simulatedGpu = "node-0".equals(section.get("name"));
            assertEquals(Boolean.toString(simulatedGpu), attributes.get("gpu_vectors.gpu"), section.toString());
            assertEquals("0", attributes.get("gpu_vectors.gpu_budget_bytes"));
            assertEquals(false, ((Map<?, ?>) section.get("gpu")).get("active"));
            fallbacks += ((Number) ((Map<?, ?>) section.get("searches")).get("cpu_fallbacks")).longValue();
        }
        assertEquals(Set.of("node-0", "node-1", "node-2"), names);
        Map<?, ?> total = (Map<?, ?>) stats.get("total");
        assertEquals(Map.of("nodes", NODES, "active_nodes", 0), total.get("gpu"));
        assertEquals(fallbacks, ((Number) ((Map<?, ?>) total.get("searches")).get("cpu_fallbacks")).longValue());

        Map<String, Object> one = cluster.client(2, EsCluster.MONITOR).ok("GET", "/_gpu_vectors/stats/node-1", null).map();
        assertEquals(Map.of("total", 1, "successful", 1, "failed", 0), one.get("_nodes"));
        assertEquals("node-1", ((Map<?, ?>) ((Map<?, ?>) one.get("nodes")).values().iterator().next()).get("name"));
    }

    @Test
    void warmUpReachesEveryShardCopyOnEveryNode() throws Exception {
        createIndex("gv-warm", 3, 1, Map.of());
        Set<String> holders = new HashSet<>(shardNodes("gv-warm"));
        assertEquals(NODES, holders.size(), "the copies sit on every node: " + holders);
        for (int coordinator = 0; coordinator < NODES; coordinator++) {
            Map<String, Object> warm = cluster.client(coordinator, EsCluster.WARMER).ok("POST", "/gv-warm/_gpu_vectors/warmup", null).map();
            assertEquals(Map.of("total", 6, "successful", 6, "failed", 0), warm.get("_shards"), warm.toString());
            Map<?, ?> index = (Map<?, ?>) ((Map<?, ?>) warm.get("indices")).get("gv-warm");
            assertEquals(6, index.get("shards"), "primaries + replicas");
            assertEquals(0, index.get("gpu_shards"));
            assertTrue(((Number) index.get("segment_fields")).intValue() >= 1, warm.toString());
        }
        // the knn search still answers (on the CPU) from every copy
        Map<String, Object> hits = admin.ok("POST", "/gv-warm/_search",
            Map.of("knn", Map.of("field", "vec", "query_vector", List.of(3, 3), "k", 1, "num_candidates", 6))).map();
        assertEquals("2", ((Map<?, ?>) ((List<?>) ((Map<?, ?>) hits.get("hits")).get("hits")).get(0)).get("_id"));
    }

    @Test
    void eachActionAsksForItsOwnPrivilege() throws Exception {
        createIndex("gv-priv", 2, 1, Map.of());
        createIndex("other-priv", 1, 0, Map.of());
        RestClient monitor = cluster.client(1, EsCluster.MONITOR);
        RestClient warmer = cluster.client(1, EsCluster.WARMER);
        assertEquals(200, monitor.send("GET", "/_gpu_vectors/stats", null, null, null).status());
        assertForbidden(monitor.send("POST", "/gv-priv/_gpu_vectors/warmup", null, null, null), "indices:admin/gpu_vectors/warmup");
        assertEquals(200, warmer.send("POST", "/gv-priv/_gpu_vectors/warmup", null, null, null).status());
        assertForbidden(warmer.send("GET", "/_gpu_vectors/stats", null, null, null), "cluster:monitor/gpu_vectors/stats");
        assertForbidden(warmer.send("POST", "/other-priv/_gpu_vectors/warmup", null, null, null), "indices:admin/gpu_vectors/warmup");
        assertEquals(200, admin.send("POST", "/other-priv,gv-priv/_gpu_vectors/warmup", null, null, null).status(),
            "the superuser warms any index");
        RestClient anonymous = new RestClient(cluster.nodes().get(1).baseUri());
        assertEquals(401, anonymous.send("GET", "/_gpu_vectors/stats", null, null, null).status());
        assertEquals(401, anonymous.send("POST", "/gv-priv/_gpu_vectors/warmup", null, null, null).status());
    }

    @Test
    void allocationFilteringOnTheGpuAttributeKeepsShardsOnGpuNodes() throws Exception {
        createIndex("gv-on-gpu", 3, 0, Map.of("index.routing.allocation.require.gpu_vectors.gpu", "true"));
        assertEquals(List.of("node-0", "node-0", "node-0"), shardNodes("gv-on-gpu"));

        createIndex("gv-moves", 4, 0, Map.of("index.routing.allocation.require.gpu_vectors.gpu", "false"));
        assertFalse(shardNodes("gv-moves").contains("node-0"));
        admin.ok("PUT", "/gv-moves/_settings", Map.of("index.routing.allocation.require.gpu_vectors.gpu", "true"));
        // relocations are throttled (two incoming a node at a time): a moment without relocating shards can still
        // have copies waiting to move, so wait for where they are rather than for the health
        List<String> onGpu = List.of("node-0", "node-0", "node-0", "node-0");
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(120);
        while (!shardNodes("gv-moves").equals(onGpu) && System.nanoTime() < deadline) {
            Thread.sleep(500);
        }
        assertEquals(onGpu, shardNodes("gv-moves"), "moved to the GPU node");
        admin.ok("GET", "/_cluster/health/gv-moves?wait_for_status=green&wait_for_no_relocating_shards=true&timeout=120s", null);
        Map<String, Object> warm = admin.ok("POST", "/gv-moves/_gpu_vectors/warmup", null).map();
        assertEquals(Map.of("total", 4, "successful", 4, "failed", 0), warm.get("_shards"));
    }

    @TestFactory
    Stream<DynamicTest> yamlTestsOfStatsAndWarmupHoldOnTheCluster() throws Exception {
        ApiSpec spec = ApiSpec.load(
            Path.of(EsNode.prop("tests.rest.api.spec", "")),
            YamlRestIT.pluginApiSpec());
        YamlRunner runner = new YamlRunner(admin, spec);
        List<DynamicTest> tests = new ArrayList<>();
        for (String name : List.of("gpu_vectors/80_gpu_stats.yml", "gpu_vectors/85_warmup.yml")) {
            Path file = Path.of(EsNode.prop("tests.yaml.dir", "")).resolve(name);
            YamlRunner.YamlFile yaml = YamlRunner.parse(file, name);
            for (YamlRunner.YamlTest test : yaml.tests()) {
                tests.add(DynamicTest.dynamicTest(name + " / " + test.name(), file.toUri(), () -> {
                    try {
                        runner.run(yaml, test);
                    } finally {
                        runner.wipeCluster();
                    }
                }));
            }
        }
        return tests.stream();
    }

    /**
     * Last: it takes node-2 out. The node freezes (it stops answering, its connections stay open) before the warm-up
     * is sent, so the coordinator sends node-2 its copies; the warm-up answers when fault detection has removed the
     * node, with node-2's copies as shard failures and the others warmed. node-2 is then stopped for good.
     */
    @Test
    @Order(Integer.MAX_VALUE)
    void aNodeThatLeavesDuringTheWarmUpIsReportedAsShardFailures() throws Exception {
        createIndex("gv-leave", 3, 1, Map.of());
        List<String> holders = shardNodes("gv-leave");
        long onLeaving = holders.stream().filter("node-2"::equals).count();
        assertTrue(onLeaving > 0, "node-2 holds copies: " + holders);
        EsNode leaving = cluster.nodes().get(2);
        leaving.freeze(true);
        try {
            long t0 = System.nanoTime();
            RestClient.Response warm = admin.send("POST", "/gv-leave/_gpu_vectors/warmup", null, null, null);
            double seconds = (System.nanoTime() - t0) / 1e9;
            assertEquals(200, warm.status(), warm.toString());
            Map<?, ?> shards = (Map<?, ?>) warm.map().get("_shards");
            assertEquals(6, shards.get("total"), warm.toString());
            assertEquals((int) (6 - onLeaving), shards.get("successful"), warm.toString());
            assertEquals((int) onLeaving, shards.get("failed"), warm.toString());
            // failures of one cause are listed once (Elasticsearch groups them): the node's disconnection
            assertTrue(warm.rawBody().contains("node_disconnected_exception") && warm.rawBody().contains("[node-2]"), warm.toString());
            assertTrue(seconds < 120, "answered in " + seconds + " s");
            EsNode.log("warm-up with node-2 frozen answered in " + seconds + " s: " + warm);
        } finally {
            leaving.stop(); // killed as it is: a frozen node would not act on a polite stop
        }
    }

    /** Creates an index of a gpu_vector field with three documents and waits for every copy to start. */
    private static void createIndex(String name, int shards, int replicas, Map<String, Object> settings) throws Exception {
        Map<String, Object> indexSettings = new java.util.LinkedHashMap<>(Map.of("number_of_shards", shards, "number_of_replicas", replicas));
        indexSettings.putAll(settings);
        admin.ok("PUT", "/" + name, Map.of(
            "settings", indexSettings,
            "mappings", Map.of("properties", Map.of("vec", Map.of("type", "gpu_vector", "dims", 2, "similarity", "l2_norm")))));
        List<List<Integer>> vectors = List.of(List.of(0, 0), List.of(3, 4), List.of(1, 1));
        for (int i = 0; i < vectors.size(); i++) {
            admin.ok("PUT", "/" + name + "/_doc/" + (i + 1), Map.of("vec", vectors.get(i)));
        }
        admin.ok("POST", "/" + name + "/_refresh", null);
        Map<String, Object> health = admin.ok("GET", "/_cluster/health/" + name + "?wait_for_status=green&timeout=120s", null).map();
        assertEquals("green", health.get("status"), health.toString());
    }

    /** The node of each copy of the index's shards, in shard order. */
    private static List<String> shardNodes(String index) throws Exception {
        RestClient.Response shards = admin.send("GET", "/_cat/shards/" + index,
            Map.of("format", "json", "h", "shard,prirep,node", "s", "shard,prirep"), null, null);
        List<String> nodes = new ArrayList<>();
        for (Object row : (List<?>) shards.body()) {
            nodes.add(String.valueOf(((Map<?, ?>) row).get("node")));
        }
        return nodes;
    }

    private static void assertForbidden(RestClient.Response response, String action) {
        assertEquals(403, response.status(), response.toString());
        assertTrue(response.rawBody().contains(action), "names the action: " + response);
    }
}
