package org.gpuvectors.plugin;

import org.elasticsearch.common.Strings;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.index.mapper.MapperParsingException;
import org.gpuvectors.codec.IndexType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GpuIndexOptionsTests {

    @BeforeAll
    static void elasticsearchLogging() {
        // Elasticsearch's exception classes log from their static initialisers (the node sets this up)
        LogConfigurator.configureESLogging();
    }

    @Test
    void parsesFlat() {
        GpuIndexOptions options = GpuIndexOptions.parse("vec", Map.of("type", "flat"));
        assertEquals(IndexType.FLAT, options.type());
        assertEquals(Map.of(), options.parameters());
        assertEquals("{\"type\":\"flat\"}", Strings.toString(options));
    }

    @Test
    void rejectsBadInputWithMessagesNamingTheProblem() {
        assertMessage("must be an object", "flat");
        assertMessage("requires [type]", Map.of("nlist", 4));
        assertMessage("unknown index type [hnsw]", Map.of("type", "hnsw"));
        assertMessage("unknown parameter [nlist] in [index_options] of type [flat]", Map.of("type", "flat", "nlist", 4));
        assertMessage("[index_options.nlist] on field [vec] must be an integer", Map.of("type", "ivf_pq", "nlist", "many"));
        assertMessage("[index_options.pq_bits] on field [vec] must be in [4, 8] but was [9]", Map.of("type", "ivf_pq", "pq_bits", 9));
        assertMessage("type [ivf_pq] on field [vec] is not implemented yet; available types are [flat]", Map.of("type", "ivf_pq", "nlist", 1024));
        assertMessage("type [graph] on field [vec] is not implemented yet", Map.of("type", "graph"));
    }

    private static void assertMessage(String expected, Object value) {
        MapperParsingException e = assertThrows(MapperParsingException.class, () -> GpuIndexOptions.parse("vec", value));
        assertTrue(e.getMessage().contains(expected), () -> "expected [" + expected + "] in [" + e.getMessage() + "]");
    }

    @Test
    void findsGpuVectorFieldsAnywhereInAMapping() {
        Map<String, Object> direct = Map.of("properties", Map.of("v", Map.of("type", "gpu_vector", "dims", 3)));
        Map<String, Object> nested = Map.of(
            "_doc",
            Map.of("properties", Map.of("obj", Map.of("properties", Map.of("v", Map.of("type", "gpu_vector"))))));
        Map<String, Object> dynamicTemplate = Map.of(
            "dynamic_templates",
            List.of(Map.of("vectors", Map.of("match", "emb_*", "mapping", Map.of("type", "gpu_vector", "dims", 8)))));
        Map<String, Object> none = Map.of(
            "properties",
            Map.of("type", Map.of("type", "keyword"), "v", Map.of("type", "dense_vector", "dims", 3)));
        assertTrue(GpuVectorsIndexSettingProvider.declaresGpuVector(direct));
        assertTrue(GpuVectorsIndexSettingProvider.declaresGpuVector(nested));
        assertTrue(GpuVectorsIndexSettingProvider.declaresGpuVector(dynamicTemplate));
        assertFalse(GpuVectorsIndexSettingProvider.declaresGpuVector(none));
    }
}
