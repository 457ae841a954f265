package org.gpuvectors.yamlrest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * What the REST API cannot show: which Lucene formats wrote the segments. An index with a {@code gpu_vector}
 * field and an {@code int8_hnsw} {@code dense_vector} is force-merged, then the shard's files on disk (and the
 * file names listed inside compound files) are inspected: the {@code gpu_vector} field is written by our
 * GpuVectorsFormat and the {@code dense_vector} keeps Elasticsearch's own quantized HNSW format.
 */
class SegmentFormatsIT extends SingleNodeIT {

    @BeforeAll
    static void needsPlugin() {
        Assumptions.assumeFalse(vanillaNode(), "needs the plugin");
    }

    @Test
    void gpuVectorFieldsUseOurFormatAndOtherFieldsKeepElasticsearchs() throws Exception {
        client.ok("PUT", "/formats", RestClient.map(
            "settings", RestClient.map("number_of_shards", 1, "number_of_replicas", 0),
            "mappings", RestClient.map("properties", RestClient.map(
                "gpu", RestClient.map("type", "gpu_vector", "dims", 4, "similarity", "l2_norm"),
                "quantized", RestClient.map("type", "dense_vector", "dims", 4, "similarity", "l2_norm",
                    "index_options", RestClient.map("type", "int8_hnsw"))))));
        StringBuilder bulk = new StringBuilder();
        for (int i = 0; i < 50; i++) {
            bulk.append("{\"index\":{\"_index\":\"formats\",\"_id\":\"").append(i).append("\"}}\n");
            bulk.append("{\"gpu\":[").append(i).append(",1,2,3],\"quantized\":[").append(i).append(",3,2,1]}\n");
        }
        RestClient.Response bulkResponse = client.send("POST", "/_bulk", Map.of("refresh", "true"), bulk.toString(),
            Map.of("Content-Type", "application/x-ndjson"));
        assertEquals(200, bulkResponse.status(), bulkResponse::toString);
        assertEquals(Boolean.FALSE, bulkResponse.map().get("errors"), bulkResponse::toString);
        client.ok("POST", "/formats/_forcemerge?max_num_segments=1&flush=true", null);

        Map<String, Object> settings = client.ok("GET", "/formats/_settings", null).map();
        String uuid = (String) ((Map<?, ?>) ((Map<?, ?>) ((Map<?, ?>) settings.get("formats")).get("settings")).get("index")).get("uuid");
        Path shard = node.home().resolve("data/indices").resolve(uuid).resolve("0/index");
        String names = segmentFileNames(shard);

        assertTrue(names.contains("_GpuVectorsFormat_0.gvm") && names.contains("_GpuVectorsFormat_0.gvd"),
            () -> "our meta and data files for the gpu_vector field: " + names);
        assertTrue(names.matches("(?s).*_ES\\d+HnswScalarQuantizedVectorsFormat_0\\.veq.*"),
            () -> "Elasticsearch's int8 HNSW files for the dense_vector field: " + names);

        // both fields still answer knn
        for (String field : List.of("gpu", "quantized")) {
            Map<String, Object> hits = client.ok("POST", "/formats/_search", RestClient.map(
                "knn", RestClient.map("field", field, "query_vector", List.of(7.2, 1, 2, 3), "k", 1, "num_candidates", 10))).map();
            Object top = ((List<?>) ((Map<?, ?>) hits.get("hits")).get("hits")).get(0);
            assertEquals("7", ((Map<?, ?>) top).get("_id"), field);
        }
    }

    /** File names in the shard directory, plus the entry names listed in its compound-file tables (.cfe). */
    private static String segmentFileNames(Path shard) throws Exception {
        List<String> names = new ArrayList<>();
        try (Stream<Path> files = Files.list(shard)) {
            for (Path file : files.toList()) {
                names.add(file.getFileName().toString());
                if (file.getFileName().toString().endsWith(".cfe")) {
                    // entry names are stored as strings in the .cfe table; Latin-1 keeps every byte
                    names.add(new String(Files.readAllBytes(file), StandardCharsets.ISO_8859_1));
                }
            }
        }
        return String.join("\n", names);
    }
}
