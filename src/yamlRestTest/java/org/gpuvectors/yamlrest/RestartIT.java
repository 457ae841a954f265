package org.gpuvectors.yamlrest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * Data indexed into a {@code gpu_vector} field survives a node restart: index docs (two flushed segments plus some
 * docs only in the translog), restart the node on the same data directory, and the same knn search returns the same
 * hits with the same scores.
 *
 * <p>With {@code -Dtests.plugin.zip=none} (vanilla node, harness check only) the field is a {@code dense_vector}.
 */
class RestartIT extends SingleNodeIT {

    private static final int DIMS = 8;
    private static String fieldType;

    @BeforeAll
    static void chooseFieldType() {
        fieldType = vanillaNode() ? "dense_vector" : "gpu_vector";
    }

    @Test
    void dataSurvivesRestart() throws Exception {
        Map<String, Object> vec = RestClient.map("type", fieldType, "dims", DIMS, "similarity", "l2_norm");
        if (fieldType.equals("gpu_vector")) {
            vec.put("index_options", RestClient.map("type", "flat"));
        }
        client.ok("PUT", "/restart", RestClient.map(
            "settings", RestClient.map("number_of_shards", 2, "number_of_replicas", 0),
            "mappings", RestClient.map("properties", RestClient.map("vec", vec, "tag", RestClient.map("type", "keyword")))));

        Random random = new Random(42);
        int id = 0;
        for (int batch = 0; batch < 3; batch++) {
            StringBuilder bulk = new StringBuilder();
            for (int i = 0; i < 100; i++, id++) {
                float[] v = new float[DIMS];
                for (int d = 0; d < DIMS; d++) {
                    v[d] = (float) random.nextGaussian();
                }
                bulk.append(RestClient.toJson(RestClient.map("index", RestClient.map("_index", "restart", "_id", Integer.toString(id)))))
                    .append('\n')
                    .append(RestClient.toJson(RestClient.map("vec", v, "tag", "t" + (id % 3))))
                    .append('\n');
            }
            RestClient.Response r = client.send("POST", "/_bulk", Map.of("refresh", "true"), bulk.toString(),
                Map.of("Content-Type", "application/x-ndjson"));
            assertEquals(200, r.status(), r.toString());
            assertEquals(false, r.map().get("errors"), r.toString());
            if (batch < 2) {
                client.ok("POST", "/restart/_flush", null); // batch 0 and 1: segments on disk; batch 2: translog only
            }
        }
        client.ok("DELETE", "/restart/_doc/7?refresh=true", null);

        Map<String, Object> search = RestClient.map(
            "knn", RestClient.map("field", "vec", "query_vector", new float[] {0.5f, -0.25f, 1, 0, 0, 0.1f, -1, 0.3f}, "k", 10,
                "num_candidates", 50),
            "_source", false);
        Map<String, Object> filtered = RestClient.map(
            "knn", RestClient.map("field", "vec", "query_vector", new float[] {0, 0, 0, 0, 1, 1, 1, 1}, "k", 5,
                "num_candidates", 20, "filter", RestClient.map("term", RestClient.map("tag", "t1"))),
            "_source", false);
        List<String> before = hits(search);
        List<String> beforeFiltered = hits(filtered);
        assertEquals(10, before.size(), before.toString());
        assertEquals(5, beforeFiltered.size(), beforeFiltered.toString());
        assertEquals(299, count());

        node.restart();

        assertEquals(299, count());
        assertEquals(before, hits(search), "knn hits after restart");
        assertEquals(beforeFiltered, hits(filtered), "filtered knn hits after restart");
        RestClient.Response mapping = client.ok("GET", "/restart/_mapping", null);
        assertTrue(mapping.rawBody().contains("\"" + fieldType + "\""), mapping.toString());
        System.out.println("[RestartIT] same hits after restart: " + before);
    }

    private static long count() throws Exception {
        return ((Number) client.ok("GET", "/restart/_count", null).map().get("count")).longValue();
    }

    /** "id:score" of each hit, in order. */
    private static List<String> hits(Map<String, Object> body) throws Exception {
        Map<?, ?> hits = (Map<?, ?>) client.ok("POST", "/restart/_search", body).map().get("hits");
        List<String> out = new ArrayList<>();
        for (Object h : (List<?>) hits.get("hits")) {
            Map<?, ?> hit = (Map<?, ?>) h;
            out.add(hit.get("_id") + ":" + String.format(Locale.ROOT, "%.6f", ((Number) hit.get("_score")).doubleValue()));
        }
        return out;
    }
}
