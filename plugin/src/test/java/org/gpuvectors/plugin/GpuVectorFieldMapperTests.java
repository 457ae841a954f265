package org.gpuvectors.plugin;

import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.elasticsearch.common.Strings;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.index.mapper.MapperBuilderContext;
import org.elasticsearch.index.mapper.MapperMergeContext;
import org.elasticsearch.index.mapper.MapperParsingException;
import org.elasticsearch.index.mapper.MapperService;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper.VectorSimilarity;
import org.gpuvectors.codec.GpuVectorsCodec;
import org.gpuvectors.codec.GpuVectorsFormat;
import org.gpuvectors.codec.IndexParams;
import org.gpuvectors.codec.IndexType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mapper's side of {@code index_options}: Lucene field attributes, dimension checks, serialization, updates. */
class GpuVectorFieldMapperTests {

    @BeforeAll
    static void elasticsearchLogging() {
        LogConfigurator.configureESLogging();
    }

    private static GpuVectorFieldMapper.Builder builder(Integer dims, GpuIndexOptions options) {
        GpuVectorFieldMapper.Builder builder = new GpuVectorFieldMapper.Builder("vec", IndexVersion.current(), true);
        if (dims != null) {
            builder.dimensions(dims);
        }
        builder.similarity(VectorSimilarity.L2_NORM);
        if (options != null) {
            builder.indexOptions(options);
        }
        return builder;
    }

    private static GpuVectorFieldMapper build(GpuVectorFieldMapper.Builder builder) {
        return builder.build(MapperBuilderContext.root(false, false));
    }

    private static GpuIndexOptions ivfFlat(Map<String, Integer> values) {
        return new GpuIndexOptions(new IndexParams(IndexType.IVF_FLAT, values));
    }

    @Test
    void flatFieldsCarryTheTypeAttributesOnly() {
        FieldType type = build(builder(3, null)).luceneFieldType();
        assertEquals(Map.of(GpuVectorsFormat.INDEX_TYPE_ATTRIBUTE, "flat", GpuVectorsFormat.ELEMENT_TYPE_ATTRIBUTE, "float"), type.getAttributes());
        assertEquals(3, type.vectorDimension());
    }

    @Test
    void parametersTravelAsFieldAttributes() {
        GpuVectorFieldMapper mapper = build(builder(4, ivfFlat(Map.of("nlist", 16, "nprobe", 4))));
        FieldType type = mapper.luceneFieldType();
        assertEquals(
            Map.of(
                GpuVectorsFormat.INDEX_TYPE_ATTRIBUTE,
                "ivf_flat",
                IndexParams.ATTRIBUTE_PREFIX + "nlist",
                "16",
                IndexParams.ATTRIBUTE_PREFIX + "nprobe",
                "4",
                GpuVectorsFormat.ELEMENT_TYPE_ATTRIBUTE,
                "float"
            ),
            type.getAttributes()
        );
        assertThrows(IllegalStateException.class, () -> type.putAttribute("x", "y"), "frozen");
        // no parameters: the type alone, the codec picks its per-segment defaults
        assertEquals(
            Map.of(GpuVectorsFormat.INDEX_TYPE_ATTRIBUTE, "ivf_flat", GpuVectorsFormat.ELEMENT_TYPE_ATTRIBUTE, "float"),
            build(builder(4, ivfFlat(Map.of()))).luceneFieldType().getAttributes()
        );
    }

    @Test
    void mappingSerializesTheParametersGiven() {
        String json = Strings.toString(build(builder(4, ivfFlat(Map.of("nprobe", 4, "nlist", 16)))));
        assertTrue(json.contains("\"index_options\":{\"type\":\"ivf_flat\",\"nlist\":16,\"nprobe\":4}"), json);
        String defaults = Strings.toString(build(builder(4, ivfFlat(Map.of()))));
        assertTrue(defaults.contains("\"index_options\":{\"type\":\"ivf_flat\"}"), defaults);
        String flat = Strings.toString(build(builder(4, null)));
        assertTrue(flat.contains("\"index_options\":{\"type\":\"flat\"}"), flat);
    }

    @Test
    void theCodecReadsTheMappingsParametersBack() throws IOException {
        // needs the codec's ivf_flat: the writer refuses the documents of unimplemented types
        GpuVectorFieldMapper mapper = build(builder(2, ivfFlat(Map.of("nlist", 2, "nprobe", 1))));
        try (Directory dir = new ByteBuffersDirectory()) {
            try (IndexWriter w = new IndexWriter(dir, new IndexWriterConfig().setCodec(new GpuVectorsCodec()))) {
                for (int i = 0; i < 5; i++) {
                    Document doc = new Document();
                    doc.add(new KnnFloatVectorField("vec", new float[] { i, 1 }, mapper.luceneFieldType()));
                    w.addDocument(doc);
                }
            }
            try (DirectoryReader reader = DirectoryReader.open(dir)) {
                LeafReader leaf = reader.leaves().get(0).reader();
                FieldInfo info = leaf.getFieldInfos().fieldInfo("vec");
                assertEquals(mapper.indexOptions().params(), IndexParams.of(info));
                assertEquals(5, leaf.getFloatVectorValues("vec").size());
            }
        }
    }

    @Test
    void aParameterThatDoesNotFitTheMappedDimsIsAMappingError() {
        // pq_m must divide dims
        GpuIndexOptions pq = GpuIndexOptions.parse("vec", Map.of("type", "ivf_pq", "nlist", 16, "pq_m", 4, "pq_bits", 8));
        MapperParsingException e = assertThrows(MapperParsingException.class, () -> build(builder(6, pq)));
        assertEquals(
            "[index_options] on field [vec] does not fit its [dims]: [pq_m] must divide the vector dimension [6] but was [4]",
            e.getMessage()
        );
        assertEquals(8, build(builder(8, pq)).luceneFieldType().vectorDimension());
    }

    @Test
    void withoutDimsTheDimensionChecksWaitForTheFirstDocument() {
        GpuIndexOptions pq = GpuIndexOptions.parse("vec", Map.of("type", "ivf_pq", "pq_m", 4));
        GpuVectorFieldMapper noDims = build(builder(null, pq));
        assertNull(noDims.luceneFieldType());
        // parseCreateField runs this check on the first vector before it asks for the mapping update
        IllegalArgumentException e = assertThrows(
            IllegalArgumentException.class,
            () -> noDims.indexOptions().checkDimension("vec", 6, "the length of the first document's vector, which would set its [dims]")
        );
        assertEquals(
            "[index_options] on field [vec] does not fit the length of the first document's vector, which would set its [dims]: "
                + "[pq_m] must divide the vector dimension [6] but was [4]",
            e.getMessage()
        );
        // and the mapping update itself is checked as any mapping
        GpuVectorFieldMapper.Builder update = ((GpuVectorFieldMapper.Builder) noDims.getMergeBuilder()).dimensions(6);
        assertThrows(MapperParsingException.class, () -> build(update));
        GpuVectorFieldMapper withDims = build(((GpuVectorFieldMapper.Builder) noDims.getMergeBuilder()).dimensions(8));
        assertEquals("4", withDims.luceneFieldType().getAttributes().get(IndexParams.ATTRIBUTE_PREFIX + "pq_m"));
        assertEquals(pq, withDims.indexOptions());
    }

    @Test
    void indexOptionsCannotBeUpdated() {
        GpuVectorFieldMapper existing = build(builder(4, ivfFlat(Map.of("nlist", 16))));
        MapperMergeContext context = MapperMergeContext.root(false, false, MapperService.MergeReason.MAPPING_UPDATE, Long.MAX_VALUE);
        // the same options: no conflict
        existing.getMergeBuilder().mergeWith(builder(4, ivfFlat(Map.of("nlist", 16))), context);
        for (GpuIndexOptions other : new GpuIndexOptions[] { ivfFlat(Map.of("nlist", 32)), ivfFlat(Map.of()), GpuIndexOptions.DEFAULT }) {
            IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> existing.getMergeBuilder().mergeWith(builder(4, other), context)
            );
            assertTrue(
                e.getMessage().contains("Cannot update parameter [index_options] from [ivf_flat{nlist=16}] to [" + other + "]"),
                e.getMessage()
            );
        }
    }
}
