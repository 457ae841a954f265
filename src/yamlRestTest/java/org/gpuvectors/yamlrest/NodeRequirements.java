package org.gpuvectors.yamlrest;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a YAML test's {@code requires} / {@code skip} sections ask of the node under test, as Elasticsearch's runner
 * answers it: {@code cluster_features} (a version feature {@code gte_vX.Y.Z} against the node's version, a named one
 * against the features the nodes publish in the cluster state) and {@code capabilities} (the {@code _capabilities}
 * API). Asked of the node once per runner.
 */
final class NodeRequirements {

    private static final Pattern VERSION_FEATURE = Pattern.compile("gte_v(\\d+)\\.(\\d+)\\.(\\d+)");

    private final RestClient client;
    /**
     * Named features taken as present though no node publishes them: features of older versions that Elasticsearch
     * retired (every node has them; its own runner knows them from its sources, which this one does not have).
     * {@code -Dtests.yaml.assume_features=a,b}.
     */
    private final Set<String> assumed;
    private int[] version;
    /** The features every node publishes; null when the cluster state does not list them (then taken as present). */
    private Set<String> features;
    private boolean featuresRead;

    NodeRequirements(RestClient client) {
        this.client = client;
        this.assumed = Set.of(EsNode.prop("tests.yaml.assume_features", "").split(","));
    }

    /** Whether the node has every one of {@code wanted} (a feature name or a list of them). */
    boolean hasClusterFeatures(Object wanted) throws Exception {
        for (String feature : list(wanted)) {
            Matcher m = VERSION_FEATURE.matcher(feature);
            if (m.matches()) {
                int[] needed = {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3))};
                if (compare(version(), needed) < 0) {
                    return false;
                }
            } else if (assumed.contains(feature) == false && publishedFeatures() != null
                && publishedFeatures().contains(feature) == false) {
                return false;
            }
        }
        return true;
    }

    /**
     * Null when every entry ({@code method}, {@code path}, {@code parameters}, {@code capabilities}) is supported,
     * else the first that is not, with the node's answer.
     */
    String missingCapability(Object entries) throws Exception {
        for (Object o : entries instanceof List<?> l ? l : List.of(entries)) {
            Map<?, ?> entry = (Map<?, ?>) o;
            Map<String, String> query = new LinkedHashMap<>();
            query.put("method", String.valueOf(entry.containsKey("method") ? entry.get("method") : "GET"));
            query.put("path", String.valueOf(entry.get("path")));
            if (entry.get("parameters") != null) {
                query.put("parameters", String.join(",", list(entry.get("parameters"))));
            }
            if (entry.get("capabilities") != null) {
                query.put("capabilities", String.join(",", list(entry.get("capabilities"))));
            }
            RestClient.Response r = client.send("GET", "/_capabilities", query, null, null);
            if (r.isError() || !(r.body() instanceof Map<?, ?> body) || Boolean.TRUE.equals(body.get("supported")) == false) {
                return query + " answered " + r.status() + " " + r.rawBody();
            }
        }
        return null;
    }

    static List<String> list(Object v) {
        return v == null ? List.of() : v instanceof List<?> l ? l.stream().map(String::valueOf).toList() : List.of(String.valueOf(v));
    }

    private int[] version() throws Exception {
        if (version == null) {
            // from the nodes info API: the root endpoint (GET /) is a module the test distribution leaves out
            Map<?, ?> nodes = (Map<?, ?>) ((Map<?, ?>) client.ok("GET", "/_nodes/_local?filter_path=nodes.*.version", null).body())
                .get("nodes");
            Object number = ((Map<?, ?>) nodes.values().iterator().next()).get("version");
            String[] parts = String.valueOf(number).split("[.-]");
            version = new int[] {Integer.parseInt(parts[0]), Integer.parseInt(parts[1]), Integer.parseInt(parts[2])};
        }
        return version;
    }

    private Set<String> publishedFeatures() throws Exception {
        if (featuresRead == false) {
            featuresRead = true;
            RestClient.Response r = client.send("GET", "/_cluster/state", Map.of("filter_path", "nodes_features"), null, null);
            if (r.isError() == false && r.body() instanceof Map<?, ?> body && body.get("nodes_features") instanceof List<?> nodes
                && nodes.isEmpty() == false) {
                List<Set<String>> perNode = new ArrayList<>();
                for (Object n : nodes) {
                    perNode.add(new HashSet<>(list(((Map<?, ?>) n).get("features"))));
                }
                Set<String> common = new HashSet<>(perNode.get(0));
                perNode.forEach(common::retainAll);
                features = Set.copyOf(common);
            }
        }
        return features;
    }

    private static int compare(int[] a, int[] b) {
        for (int i = 0; i < 3; i++) {
            if (a[i] != b[i]) {
                return Integer.compare(a[i], b[i]);
            }
        }
        return 0;
    }
}
