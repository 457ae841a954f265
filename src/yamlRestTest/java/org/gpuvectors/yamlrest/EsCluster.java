package org.gpuvectors.yamlrest;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;
import java.util.stream.Collectors;

/**
 * A real cluster of {@link EsNode}s on loopback, with Elasticsearch's security on: every node master-eligible and data,
 * found through {@code discovery.seed_hosts} on the nodes' transport ports, the same file-realm users and roles on each
 * (made with {@code bin/elasticsearch-users} on the first node, copied to the others).
 *
 * <p>Transport and HTTP run without TLS: Elasticsearch requires transport TLS with security on only through a bootstrap
 * check, and bootstrap checks are enforced only for nodes bound to a non-loopback address; these bind to 127.0.0.1.
 *
 * <p>Users (password {@value #PASSWORD}): {@value #ADMIN} ({@code superuser}), {@value #WARMER} (role {@code gv_warmup}:
 * the {@code manage} index privilege on {@code gv-*} and nothing else), {@value #MONITOR} (role {@code gv_monitor}:
 * the {@code monitor} cluster privilege and nothing else).
 */
public final class EsCluster implements AutoCloseable {

    public static final String ADMIN = "gv-admin";
    public static final String WARMER = "gv-warmer";
    public static final String MONITOR = "gv-monitor";
    public static final String PASSWORD = "gv-test-password";

    static final String ROLES = """
        gv_warmup:
          indices:
            - names: ["gv-*"]
              privileges: ["manage"]
        gv_monitor:
          cluster: ["monitor"]
        """;

    private final List<EsNode> nodes;

    private EsCluster(List<EsNode> nodes) {
        this.nodes = List.copyOf(nodes);
    }

    /**
     * Prepares {@code size} nodes (in parallel: each copies the distribution and installs the plugin), gives each the
     * cluster's settings plus {@code extraSettings.apply(i)} (for example a node attribute), starts them together and
     * waits until each answers that the cluster is yellow or green.
     */
    public static EsCluster start(int size, IntFunction<List<String>> extraSettings) throws Exception {
        List<EsNode> nodes = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(size);
        try {
            List<Future<EsNode>> prepared = new ArrayList<>();
            for (int i = 0; i < size; i++) {
                prepared.add(pool.submit(EsNode::fromSystemProperties));
            }
            for (Future<EsNode> node : prepared) {
                nodes.add(node.get());
            }
        } catch (Exception e) {
            nodes.forEach(EsNode::close);
            throw e;
        } finally {
            pool.shutdown();
        }
        EsCluster cluster = new EsCluster(nodes);
        try {
            cluster.configure(extraSettings);
            cluster.addUsers();
            for (EsNode node : nodes) {
                node.launch();
            }
            for (EsNode node : nodes) {
                node.awaitHealthy();
            }
            RestClient admin = cluster.client(ADMIN);
            RestClient.Response health = admin.send("GET", "/_cluster/health",
                java.util.Map.of("wait_for_nodes", Integer.toString(size), "timeout", "120s"), null, null);
            if (health.isError() || Boolean.TRUE.equals(health.map().get("timed_out"))) {
                throw new IllegalStateException("the cluster did not form with " + size + " nodes: " + health);
            }
            return cluster;
        } catch (Exception | AssertionError e) {
            cluster.close();
            throw e;
        }
    }

    private void configure(IntFunction<List<String>> extraSettings) {
        String seeds = nodes.stream().map(n -> "127.0.0.1:" + n.transportPort()).collect(Collectors.joining(","));
        List<String> names = new ArrayList<>();
        for (int i = 0; i < nodes.size(); i++) {
            names.add("node-" + i);
        }
        for (int i = 0; i < nodes.size(); i++) {
            List<String> settings = new ArrayList<>(List.of(
                "discovery.seed_hosts=" + seeds,
                "cluster.initial_master_nodes=" + String.join(",", names),
                "xpack.security.enabled=true",
                "xpack.security.http.ssl.enabled=false",
                "xpack.security.transport.ssl.enabled=false",
                // a node that stops answering leaves the cluster after about 10 s rather than 30 (the default),
                // the master as well as the others
                "cluster.fault_detection.follower_check.timeout=3s",
                "cluster.fault_detection.follower_check.retry_count=3",
                "cluster.fault_detection.leader_check.timeout=3s",
                "cluster.fault_detection.leader_check.retry_count=3"));
            settings.addAll(extraSettings.apply(i));
            nodes.get(i).configure(names.get(i), EsNode.prop("tests.es.cluster.heap", "512m"), settings);
            nodes.get(i).healthCheckAs(ADMIN, PASSWORD);
        }
    }

    private void addUsers() throws IOException, InterruptedException {
        EsNode first = nodes.get(0);
        first.writeConfigFile("roles.yml", ROLES);
        first.runTool("elasticsearch-users", "useradd", ADMIN, "-p", PASSWORD, "-r", "superuser");
        first.runTool("elasticsearch-users", "useradd", WARMER, "-p", PASSWORD, "-r", "gv_warmup");
        first.runTool("elasticsearch-users", "useradd", MONITOR, "-p", PASSWORD, "-r", "gv_monitor");
        for (EsNode other : nodes.subList(1, nodes.size())) {
            for (String file : List.of("roles.yml", "users", "users_roles")) {
                other.writeConfigFile(file, first.readConfigFile(file));
            }
        }
    }

    public List<EsNode> nodes() {
        return nodes;
    }

    /** A client of the first node, authenticated as {@code user}. */
    public RestClient client(String user) {
        return client(0, user);
    }

    /** A client of node {@code i}, authenticated as {@code user}. */
    public RestClient client(int i, String user) {
        return new RestClient(nodes.get(i).baseUri(), Duration.ofSeconds(Long.parseLong(EsNode.prop("tests.rest.timeout", "300"))))
            .as(user, PASSWORD);
    }

    @Override
    public void close() {
        for (EsNode node : nodes) {
            node.close();
        }
    }
}
