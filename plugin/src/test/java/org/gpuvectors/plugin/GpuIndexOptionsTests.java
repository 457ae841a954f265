package org.gpuvectors.plugin;

import org.elasticsearch.common.Strings;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.index.mapper.MapperParsingException;
import org.gpuvectors.codec.IndexParams;
import org.gpuvectors.codec.IndexType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.LinkedHashMap;
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
        assertEquals(IndexParams.FLAT, options.params());
        assertEquals(GpuIndexOptions.DEFAULT, options);
        assertEquals("{\"type\":\"flat\"}", Strings.toString(options));
    }

    @Test
    void parsesIvfFlatWithAndWithoutParameters() {
        // needs the codec's ivf_flat (IndexType.IVF_FLAT.isImplemented())
        Map<String, Object> mapping = new LinkedHashMap<>();
        mapping.put("nprobe", 8);
        mapping.put("type", "ivf_flat");
        mapping.put("nlist", 1024);
        GpuIndexOptions options = GpuIndexOptions.parse("vec", mapping);
        assertEquals(IndexType.IVF_FLAT, options.type());
        assertEquals(Map.of("nlist", 1024, "nprobe", 8), options.parameters());
        assertEquals(new IndexParams(IndexType.IVF_FLAT, Map.of("nlist", 1024, "nprobe", 8)), options.params());
        // serialized as the mapping shows it: type first, then the parameters given, by name
        assertEquals("{\"type\":\"ivf_flat\",\"nlist\":1024,\"nprobe\":8}", Strings.toString(options));
        assertEquals("ivf_flat{nlist=1024, nprobe=8}", options.toString());

        GpuIndexOptions defaults = GpuIndexOptions.parse("vec", Map.of("type", "ivf_flat"));
        assertEquals(Map.of(), defaults.parameters());
        assertEquals("{\"type\":\"ivf_flat\"}", Strings.toString(defaults));
        assertEquals(Map.of("nprobe", 1), GpuIndexOptions.parse("vec", Map.of("type", "ivf_flat", "nprobe", 1)).parameters());

        // the codec's bounds, both ends included
        int[] nlist = IndexParams.schema(IndexType.IVF_FLAT).get("nlist");
        assertEquals(nlist[0], GpuIndexOptions.parse("vec", Map.of("type", "ivf_flat", "nlist", nlist[0])).parameters().get("nlist"));
        assertEquals(nlist[1], GpuIndexOptions.parse("vec", Map.of("type", "ivf_flat", "nlist", nlist[1])).parameters().get("nlist"));
    }

    @Test
    void rejectsBadInputWithMessagesNamingTheProblem() {
        assertMessage("[index_options] on field [vec] must be an object but got [flat]", "flat");
        assertMessage("[index_options] on field [vec] requires [type]; one of [flat, ivf_flat, ivf_pq, pqt, graph]", Map.of("nlist", 4));
        assertMessage("[index_options] on field [vec]: unknown index type [hnsw]", Map.of("type", "hnsw"));
        assertMessage(
            "unknown parameter [nlist] in [index_options] of type [flat] on field [vec]; this type takes no parameters",
            Map.of("type", "flat", "nlist", 4)
        );
        assertMessage("[index_options.nlist] on field [vec] must be an integer but got [many]", Map.of("type", "ivf_pq", "nlist", "many"));
        assertMessage("[index_options.pq_bits] on field [vec] must be in [4, 8] but was [9]", Map.of("type", "ivf_pq", "pq_bits", 9));
        assertMessage("[index_options] type [pqt] on field [vec] is not implemented yet", Map.of("type", "pqt"));
    }

    @Test
    void rejectsBadIvfFlatParameters() {
        int[] nlist = IndexParams.schema(IndexType.IVF_FLAT).get("nlist");
        int[] nprobe = IndexParams.schema(IndexType.IVF_FLAT).get("nprobe");
        assertMessage("[index_options.nlist] on field [vec] must be in [1, " + nlist[1] + "] but was [0]", Map.of("type", "ivf_flat", "nlist", 0));
        assertMessage(
            "[index_options.nprobe] on field [vec] must be in [1, " + nprobe[1] + "] but was [-1]",
            Map.of("type", "ivf_flat", "nlist", 16, "nprobe", -1)
        );
        assertMessage(
            "[index_options.nlist] on field [vec] must be in [1, " + nlist[1] + "] but was [" + (nlist[1] + 1) + "]",
            Map.of("type", "ivf_flat", "nlist", nlist[1] + 1)
        );
        // integers beyond int (JSON gives a Long) are out of bounds, not "not an integer"
        assertMessage(
            "[index_options.nlist] on field [vec] must be in [1, " + nlist[1] + "] but was [10000000000]",
            Map.of("type", "ivf_flat", "nlist", 10_000_000_000L)
        );
        // strings, even of digits, and fractions are not integers
        assertMessage("[index_options.nlist] on field [vec] must be an integer but got [16]", Map.of("type", "ivf_flat", "nlist", "16"));
        assertMessage("[index_options.nprobe] on field [vec] must be an integer but got [1.5]", Map.of("type", "ivf_flat", "nprobe", 1.5));
        Map<String, Object> nullValue = new HashMap<>();
        nullValue.put("type", "ivf_flat");
        nullValue.put("nlist", null);
        assertMessage("[index_options.nlist] on field [vec] must be an integer but got [null]", nullValue);
        // a parameter of another type: named, with the valid ones
        assertMessage(
            "unknown parameter [pq_m] in [index_options] of type [ivf_flat] on field [vec]; valid parameters are [nlist, nprobe]",
            Map.of("type", "ivf_flat", "pq_m", 4)
        );
        // the unknown name is reported before its (bad) value
        assertMessage("unknown parameter [nlists] in [index_options] of type [ivf_flat]", Map.of("type", "ivf_flat", "nlists", "x"));
    }

    @Test
    void parsesIvfPqWithAndWithoutParameters() {
        // needs the codec's ivf_pq (IndexType.IVF_PQ.isImplemented())
        Map<String, Object> mapping = new LinkedHashMap<>();
        mapping.put("pq_bits", 6);
        mapping.put("type", "ivf_pq");
        mapping.put("nlist", 1024);
        mapping.put("pq_m", 8);
        mapping.put("nprobe", 16);
        GpuIndexOptions options = GpuIndexOptions.parse("vec", mapping);
        assertEquals(IndexType.IVF_PQ, options.type());
        assertEquals(Map.of("nlist", 1024, "nprobe", 16, "pq_m", 8, "pq_bits", 6), options.parameters());
        assertEquals("{\"type\":\"ivf_pq\",\"nlist\":1024,\"nprobe\":16,\"pq_bits\":6,\"pq_m\":8}", Strings.toString(options));
        assertEquals("ivf_pq{nlist=1024, nprobe=16, pq_bits=6, pq_m=8}", options.toString());

        GpuIndexOptions defaults = GpuIndexOptions.parse("vec", Map.of("type", "ivf_pq"));
        assertEquals(Map.of(), defaults.parameters());
        assertEquals("{\"type\":\"ivf_pq\"}", Strings.toString(defaults));
        // the codec's bounds, both ends included
        int[] bits = IndexParams.schema(IndexType.IVF_PQ).get("pq_bits");
        assertEquals(bits[0], GpuIndexOptions.parse("vec", Map.of("type", "ivf_pq", "pq_bits", bits[0])).parameters().get("pq_bits"));
        assertEquals(bits[1], GpuIndexOptions.parse("vec", Map.of("type", "ivf_pq", "pq_bits", bits[1])).parameters().get("pq_bits"));
        assertMessage("[index_options.pq_bits] on field [vec] must be in [4, 8] but was [3]", Map.of("type", "ivf_pq", "pq_bits", 3));
        assertMessage("[index_options.pq_m] on field [vec] must be in [1, 4096] but was [0]", Map.of("type", "ivf_pq", "pq_m", 0));
        assertMessage(
            "unknown parameter [degree] in [index_options] of type [ivf_pq] on field [vec]; valid parameters are [nlist, nprobe, pq_bits, pq_m]",
            Map.of("type", "ivf_pq", "degree", 8)
        );
    }

    @Test
    void parsesGraphAndRefusesBadGraphParameters() {
        // needs the codec's graph (IndexType.GRAPH.isImplemented())
        Map<String, Object> mapping = new LinkedHashMap<>();
        mapping.put("type", "graph");
        mapping.put("search_width", 128);
        mapping.put("degree", 16);
        mapping.put("build_degree", 48);
        GpuIndexOptions options = GpuIndexOptions.parse("vec", mapping);
        assertEquals(IndexType.GRAPH, options.type());
        assertEquals(Map.of("degree", 16, "build_degree", 48, "search_width", 128), options.parameters());
        assertEquals("{\"type\":\"graph\",\"build_degree\":48,\"degree\":16,\"search_width\":128}", Strings.toString(options));
        assertEquals(Map.of(), GpuIndexOptions.parse("vec", Map.of("type", "graph")).parameters());
        assertMessage("[index_options.degree] on field [vec] must be in [8, 128] but was [4]", Map.of("type", "graph", "degree", 4));
        assertMessage("[index_options.build_degree] on field [vec] must be in [8, 256] but was [512]", Map.of("type", "graph", "build_degree", 512));
        assertMessage("[index_options.search_width] on field [vec] must be in [8, 1024] but was [2048]", Map.of("type", "graph", "search_width", 2048));
        assertMessage(
            "[index_options] on field [vec]: [build_degree] must be >= [degree] (64) but was [32]",
            Map.of("type", "graph", "degree", 64, "build_degree", 32)
        );
        assertMessage(
            "[index_options] on field [vec]: [build_degree] must be >= [degree] (32, the default) but was [16]",
            Map.of("type", "graph", "build_degree", 16)
        );
        // checked across the parameters, not one at a time: a small build_degree with a smaller degree is fine
        assertEquals(Map.of("degree", 8, "build_degree", 16), GpuIndexOptions.parse("vec", Map.of("type", "graph", "build_degree", 16, "degree", 8)).parameters());
        assertMessage(
            "unknown parameter [nprobe] in [index_options] of type [graph] on field [vec]; valid parameters are [build_degree, degree, search_width]",
            Map.of("type", "graph", "nprobe", 4)
        );
    }

    @Test
    void refusesTypesNotImplementedListingTheAvailableOnes() {
        // needs the codec's ivf_flat, ivf_pq and graph: pqt is still refused, after its parameters were checked
        assertMessage(
            "[index_options] type [pqt] on field [vec] is not implemented yet; available types are [flat, ivf_flat, ivf_pq, graph]",
            Map.of("type", "pqt", "pq_m", 8, "pq_bits", 8)
        );
        assertMessage("[index_options.pq_bits] on field [vec] must be in [4, 8] but was [3]", Map.of("type", "pqt", "pq_bits", 3));
    }

    @Test
    void dimensionChecksNameTheFieldTheParameterAndWhereTheDimensionComesFrom() {
        // pq_m must divide the dimension
        GpuIndexOptions pq = GpuIndexOptions.parse("vec", Map.of("type", "ivf_pq", "pq_m", 4));
        pq.checkDimension("vec", 8, "its [dims]");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> pq.checkDimension("vec", 6, "its [dims]"));
        assertEquals(
            "[index_options] on field [vec] does not fit its [dims]: [pq_m] must divide the vector dimension [6] but was [4]",
            e.getMessage()
        );
        // nothing depends on the dimension for the others
        GpuIndexOptions.DEFAULT.checkDimension("vec", 7, "its [dims]");
        new GpuIndexOptions(new IndexParams(IndexType.IVF_FLAT, Map.of("nlist", 16))).checkDimension("vec", 7, "its [dims]");
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
