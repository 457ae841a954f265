package org.gpuvectors.yamlrest;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The rewrite of a dense_vector suite: mappings in requests change, documents, queries and assertions do not. */
class DenseVectorAsGpuVectorTests {

    @TempDir Path dir;

    @Test
    void indexedDenseVectorMappingsBecomeGpuVectorsOfTheIndexTypeAndNothingElseChanges() throws IOException {
        Path file = dir.resolve("t.yml");
        Files.writeString(file, """
            setup:
              - do:
                  indices.create:
                    index: test
                    body:
                      mappings:
                        properties:
                          vector: {type: dense_vector, element_type: byte, dims: 5, index: true, similarity: cosine,
                                   index_options: {type: hnsw, m: 16}}
                          kept: {type: dense_vector, dims: 3, index: false}
                          name: {type: keyword}
            ---
            "search":
              - do:
                  index: {index: test, id: "1", body: {name: a, type: dense_vector, vector: [1, 2, 3, 4, 5]}}
              - do:
                  search:
                    index: test
                    body:
                      knn: {field: vector, query_vector: [1, 2, 3, 4, 5], k: 1, num_candidates: 1}
                      query: {term: {type: dense_vector}}
              - match: {test.mappings.properties.vector.type: dense_vector}
            """);
        YamlRunner.YamlFile parsed = YamlRunner.parse(file, "t.yml");
        YamlRunner.YamlFile rewritten = new DenseVectorAsGpuVector("graph").rewrite(parsed);

        Map<?, ?> properties = (Map<?, ?>) at(rewritten.setup().get(0), "do", "indices.create", "body", "mappings", "properties");
        assertEquals(Map.of("type", "gpu_vector", "element_type", "byte", "dims", 5, "similarity", "cosine",
            "index_options", Map.of("type", "graph")), properties.get("vector"));
        assertEquals(Map.of("type", "dense_vector", "dims", 3, "index", false), properties.get("kept"), "not a knn field: kept");
        assertEquals(Map.of("type", "keyword"), properties.get("name"));
        Map<?, ?> sameType = (Map<?, ?>) at(new DenseVectorAsGpuVector("hnsw").rewrite(parsed).setup().get(0),
            "do", "indices.create", "body", "mappings", "properties", "vector");
        assertEquals(Map.of("type", "hnsw", "m", 16), sameType.get("index_options"), "options of the type asked for: kept");

        List<Object> steps = rewritten.tests().get(0).steps();
        // documents and searches are not mappings, though they have a field named type with that value
        assertEquals("dense_vector", at(steps.get(0), "do", "index", "body", "type"));
        assertEquals(Map.of("term", Map.of("type", "dense_vector")), at(steps.get(1), "do", "search", "body", "query"));
        assertEquals(parsed.tests().get(0).steps().get(2), steps.get(2), "assertions unchanged");
    }

    private static Object at(Object root, String... keys) {
        Object v = root;
        for (String k : keys) {
            v = ((Map<?, ?>) v).get(k);
        }
        return v;
    }
}
