package org.gpuvectors.plugin;

import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnByteVectorField;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.index.IndexableField;
import org.apache.lucene.index.VectorEncoding;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.elasticsearch.common.Strings;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.index.mapper.MapperBuilderContext;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper.ElementType;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper.VectorSimilarity;
import org.gpuvectors.codec.GpuVectorsFormat;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.gpuvectors.codec.GpuVectorsCodec;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code element_type} byte, bit and bfloat16 in the mapping and in documents: {@code dense_vector}'s rules and messages
 * (the expected texts are Elasticsearch's own, as its {@code dense_vector} gives them), the Lucene fields our codec gets.
 */
class GpuVectorElementTypesTests {

    @BeforeAll
    static void elasticsearchLogging() {
        LogConfigurator.configureESLogging();
    }

    /** The mapping {@code {"type": "gpu_vector", ...params}} parsed as a node parses it, then built. */
    private static GpuVectorFieldMapper map(Map<String, Object> params) {
        GpuVectorFieldMapper.Builder builder = new GpuVectorFieldMapper.Builder("vec", IndexVersion.current(), true);
        builder.parse("vec", SingleFieldParserContext.mappingParserContext(), new HashMap<>(params));
        return builder.build(MapperBuilderContext.root(false, false));
    }

    private static String mappingError(Map<String, Object> params) {
        // validators throw IllegalArgumentException, parameter parsers MapperParsingException: both are 400s
        return assertThrows(RuntimeException.class, () -> map(params)).getMessage();
    }

    private static IndexableField parse(GpuVectorFieldMapper mapper, String json) throws IOException {
        return SingleFieldParserContext.parse(mapper, json).doc().getByKey("vec");
    }

    /** The specific message of a refused document (Elasticsearch wraps it in "failed to parse field [vec] ..."). */
    private static String documentError(GpuVectorFieldMapper mapper, String json) {
        Exception e = assertThrows(Exception.class, () -> SingleFieldParserContext.parse(mapper, json));
        return e.getCause() != null ? e.getCause().getMessage() : e.getMessage();
    }

    @Test
    void eachElementTypeGivesLuceneDenseVectorsEncodingAndOurCodecItsElementType() {
        record Case(String type, int dims, VectorEncoding encoding, int luceneDims) {}
        for (Case c : new Case[] {
            new Case("float", 8, VectorEncoding.FLOAT32, 8),
            new Case("byte", 8, VectorEncoding.BYTE, 8),
            new Case("bit", 64, VectorEncoding.BYTE, 8),
            new Case("bfloat16", 8, VectorEncoding.FLOAT32, 8) }) {
            GpuVectorFieldMapper mapper = map(Map.of("element_type", c.type, "dims", c.dims, "similarity", "l2_norm"));
            FieldType type = mapper.luceneFieldType();
            assertEquals(c.encoding, type.vectorEncoding(), c.type);
            assertEquals(c.luceneDims, type.vectorDimension(), c.type);
            assertEquals(c.type, type.getAttributes().get(GpuVectorsFormat.ELEMENT_TYPE_ATTRIBUTE), c.type);
            assertEquals(ElementType.fromString(c.type), mapper.fieldType().getElementType(), c.type);
            assertEquals(c.dims, mapper.fieldType().getVectorDimensions(), c.type);
            String json = Strings.toString(mapper);
            if (c.type.equals("float") == false) { // the default is left out, as for dense_vector
                assertTrue(json.contains("\"element_type\":\"" + c.type + "\""), json);
            }
        }
    }

    @Test
    void cosineIsLucenesDotProductOfUnitVectorsForFloatsAndLucenesCosineForBytes() {
        for (String type : new String[] { "float", "bfloat16", "byte" }) {
            GpuVectorFieldMapper mapper = map(Map.of("element_type", type, "dims", 4, "similarity", "cosine"));
            assertEquals(
                VectorSimilarity.COSINE.vectorSimilarityFunction(IndexVersion.current(), ElementType.fromString(type)),
                mapper.luceneFieldType().vectorSimilarityFunction(),
                type
            );
        }
        assertEquals(VectorSimilarityFunction.COSINE, map(Map.of("element_type", "byte", "dims", 4, "similarity", "cosine")).luceneFieldType().vectorSimilarityFunction());
    }

    @Test
    void bitVectorsTakeL2NormOnlyWhichIsTheirDefault() {
        assertEquals(VectorSimilarity.L2_NORM, map(Map.of("element_type", "bit", "dims", 16)).fieldType().getSimilarity());
        assertEquals(VectorSimilarity.COSINE, map(Map.of("element_type", "byte", "dims", 16)).fieldType().getSimilarity());
        for (String similarity : new String[] { "cosine", "dot_product", "max_inner_product" }) {
            assertEquals(
                "The [l2_norm] similarity is the only supported similarity for bit vectors",
                mappingError(Map.of("element_type", "bit", "dims", 16, "similarity", similarity))
            );
        }
        for (String similarity : new String[] { "cosine", "dot_product", "max_inner_product", "l2_norm" }) {
            assertNotNull(map(Map.of("element_type", "byte", "dims", 16, "similarity", similarity)));
            assertNotNull(map(Map.of("element_type", "bfloat16", "dims", 16, "similarity", similarity)));
        }
    }

    @Test
    void dimsRulesAndMessagesAreDenseVectors() {
        assertEquals("The number of dimensions should be in the range [1, 4096] but was [4097]", mappingError(Map.of("element_type", "byte", "dims", 4097)));
        assertEquals("The number of dimensions should be in the range [1, 4096] but was [0]", mappingError(Map.of("element_type", "bfloat16", "dims", 0)));
        assertEquals(
            "The number of dimensions should be in the range [8, " + DenseVectorFieldMapper.MAX_DIMS_COUNT_BIT + "] but was [4]",
            mappingError(Map.of("element_type", "bit", "dims", 4))
        );
        assertEquals(
            "The number of dimensions should be in the range [8, 32768] but was [32776]",
            mappingError(Map.of("element_type", "bit", "dims", 32776))
        );
        assertEquals("The number of dimensions for should be a multiple of 8 but was [12]", mappingError(Map.of("element_type", "bit", "dims", 12)));
        assertEquals(4096, map(Map.of("element_type", "bit", "dims", 32768)).luceneFieldType().vectorDimension());
        assertEquals(
            "Property [dims] on field [vec] must be an integer but got [three]",
            mappingError(Map.of("element_type", "byte", "dims", "three"))
        );
    }

    @Test
    void unknownElementTypeListsDenseVectorsNames() {
        String message = mappingError(Map.of("element_type", "int4", "dims", 4));
        assertTrue(message.startsWith("invalid element_type [int4]; available types are "), message);
        for (String name : DenseVectorFieldMapper.namesToElementType.keySet()) {
            assertTrue(message.contains(name), message);
        }
    }

    @Test
    void bitRefusesIvfPqNamingWhyAndTakesTheOtherIndexTypes() {
        Map<String, Object> pq = Map.of("type", "ivf_pq", "pq_m", 4);
        String message = mappingError(Map.of("element_type", "bit", "dims", 64, "index_options", new HashMap<>(pq)));
        assertTrue(message.startsWith("field [vec]: index type [ivf_pq] is not supported for element type [bit]: "), message);
        assertTrue(message.contains("already one bit a dimension"), message);
        for (String type : new String[] { "flat", "ivf_flat", "graph" }) {
            GpuVectorFieldMapper mapper = map(Map.of("element_type", "bit", "dims", 64, "index_options", new HashMap<>(Map.of("type", type))));
            assertEquals(type, mapper.indexOptions().type().typeName());
        }
        for (String element : new String[] { "float", "byte", "bfloat16" }) {
            assertNotNull(map(Map.of("element_type", element, "dims", 64, "index_options", new HashMap<>(pq))).luceneFieldType());
        }
    }

    @Test
    void byteDocumentsIndexTheirBytesFromArraysOrHex() throws IOException {
        GpuVectorFieldMapper mapper = map(Map.of("element_type", "byte", "dims", 3, "similarity", "l2_norm"));
        KnnByteVectorField field = (KnnByteVectorField) parse(mapper, "[1, -128, 127]");
        assertArrayEquals(new byte[] { 1, -128, 127 }, field.vectorValue());
        assertEquals(mapper.luceneFieldType().getAttributes(), field.fieldType().getAttributes());
        assertArrayEquals(new byte[] { 1, -128, 127 }, ((KnnByteVectorField) parse(mapper, "\"01807f\"")).vectorValue());
        // a whole number written as a float is a byte, as for dense_vector
        assertArrayEquals(new byte[] { 1, 2, 3 }, ((KnnByteVectorField) parse(mapper, "[1.0, 2, 3]")).vectorValue());
    }

    @Test
    void badByteDocumentsGetDenseVectorsMessages() {
        GpuVectorFieldMapper mapper = map(Map.of("element_type", "byte", "dims", 3, "similarity", "l2_norm"));
        assertEquals(
            "element_type [byte] vectors only support integers between [-128, 127] but found [300] at dim [1];",
            documentError(mapper, "[1, 300, 0]")
        );
        assertEquals(
            "element_type [byte] vectors only support non-decimal values but found decimal value [0.5] at dim [2];",
            documentError(mapper, "[1, 2, 0.5]")
        );
        assertEquals(
            "The [gpu_vector] field [vec] in doc [document with id '1'] has a different number of dimensions [2] than defined in the mapping [3]",
            documentError(mapper, "[1, 2]")
        );
        assertEquals(
            "The [gpu_vector] field [vec] in doc [document with id '1'] has more dimensions than defined in the mapping [3]",
            documentError(mapper, "[1, 2, 3, 4]")
        );
        // a string that is not hex is read as base64, as dense_vector reads it: then its decoded length or characters
        assertEquals(
            "The [gpu_vector] field [vec] in doc [document with id '1'] has a different number of dimensions [4] than defined in the mapping [3]",
            documentError(mapper, "\"01zz7f\"")
        );
        assertEquals("Illegal base64 character 21", documentError(mapper, "\"01zz7!\""));
        // cosine refuses the zero vector, as for floats
        GpuVectorFieldMapper cosine = map(Map.of("element_type", "byte", "dims", 3, "similarity", "cosine"));
        assertTrue(documentError(cosine, "[0, 0, 0]").startsWith("The [cosine] similarity does not support vectors with zero magnitude."));
    }

    @Test
    void byteAndBitVectorsReadBackIntoSourceAsTheirBytes() throws IOException {
        for (Map<String, Object> mapping : List.<Map<String, Object>>of(
            Map.of("element_type", "byte", "dims", 3, "similarity", "cosine"),
            Map.of("element_type", "bit", "dims", 24))) {
            GpuVectorFieldMapper mapper = map(mapping);
            List<String> docs = List.of("[1, -128, 127]", "\"0a0bff\"", "[0, 5, -7]");
            try (Directory dir = new ByteBuffersDirectory()) {
                try (IndexWriter w = new IndexWriter(dir, new IndexWriterConfig().setCodec(new GpuVectorsCodec()))) {
                    for (String doc : docs) {
                        w.addDocument(SingleFieldParserContext.parse(mapper, doc).doc());
                    }
                }
                try (DirectoryReader reader = DirectoryReader.open(dir)) {
                    GpuVectorSourceLoader loader = mapper.newSourceLoader();
                    var values = loader.docValuesLoader(reader.leaves().get(0).reader(), null);
                    List<List<Object>> read = new ArrayList<>();
                    for (int doc = 0; doc < docs.size(); doc++) {
                        assertTrue(values.advanceToDoc(doc));
                        read.add(loader.copyVectorAsList());
                    }
                    // as dense_vector: numbers (signed bytes), whichever way the document gave them
                    assertEquals(
                        List.of(List.of((byte) 1, (byte) -128, (byte) 127), List.of((byte) 10, (byte) 11, (byte) -1), List.of((byte) 0, (byte) 5, (byte) -7)),
                        read,
                        mapping.toString()
                    );
                }
            }
        }
    }

    @Test
    void byteCosineVectorsAreIndexedAsGivenWithoutAMagnitude() throws IOException {
        GpuVectorFieldMapper mapper = map(Map.of("element_type", "byte", "dims", 3, "similarity", "cosine"));
        SingleFieldParserContext context = SingleFieldParserContext.parse(mapper, "[3, 4, 0]");
        assertArrayEquals(new byte[] { 3, 4, 0 }, ((KnnByteVectorField) context.doc().getByKey("vec")).vectorValue());
        assertNull(context.doc().getField("vec" + DenseVectorFieldMapper.COSINE_MAGNITUDE_FIELD_SUFFIX));
    }

    @Test
    void bitDocumentsArePackedBytesCountedInBits() throws IOException {
        GpuVectorFieldMapper mapper = map(Map.of("element_type", "bit", "dims", 16));
        assertArrayEquals(new byte[] { 5, -1 }, ((KnnByteVectorField) parse(mapper, "[5, -1]")).vectorValue());
        assertArrayEquals(HexFormat.of().parseHex("a0ff"), ((KnnByteVectorField) parse(mapper, "\"a0ff\"")).vectorValue());
        assertEquals(
            "The [gpu_vector] field [vec] in doc [document with id '1'] has a different number of dimensions [8] than defined in the mapping [16]",
            documentError(mapper, "[5]")
        );
        assertEquals(
            "The [gpu_vector] field [vec] in doc [document with id '1'] has a different number of dimensions [24] than defined in the mapping [16]",
            documentError(mapper, "\"a0ff01\"")
        );
        assertEquals(
            "element_type [bit] vectors only support integers between [-128, 127] but found [256] at dim [0];",
            documentError(mapper, "[256, 0]")
        );
    }

    @Test
    void bfloat16DocumentsAreGivenToTheCodecUnroundedAsDenseVectorDoes() throws IOException {
        GpuVectorFieldMapper mapper = map(Map.of("element_type", "bfloat16", "dims", 3, "similarity", "l2_norm"));
        float[] values = { 0.1f, 1.0009766f, -3.3333f }; // none is a bfloat16
        KnnFloatVectorField field = (KnnFloatVectorField) parse(mapper, "[0.1, 1.0009766, -3.3333]");
        assertArrayEquals(values, field.vectorValue());
        assertEquals("bfloat16", field.fieldType().getAttributes().get(GpuVectorsFormat.ELEMENT_TYPE_ATTRIBUTE));
    }

    @Test
    void bfloat16DotProductAcceptsTheLooserUnitLengthOfDenseVector() throws IOException {
        // squared magnitude 1.01: a unit vector for bfloat16 (tolerance 0.02), not for float (0.001)
        String almostUnit = "[" + (float) Math.sqrt(1.01) + ", 0, 0]";
        GpuVectorFieldMapper bf16 = map(Map.of("element_type", "bfloat16", "dims", 3, "similarity", "dot_product"));
        assertNotNull(parse(bf16, almostUnit));
        GpuVectorFieldMapper float32 = map(Map.of("element_type", "float", "dims", 3, "similarity", "dot_product"));
        assertTrue(documentError(float32, almostUnit).startsWith("The [dot_product] similarity can only be used with unit-length vectors."));
    }

    @Test
    void bfloat16CosineStoresTheUnitVectorAndMagnitudeAsFloatsDo() throws IOException {
        GpuVectorFieldMapper mapper = map(Map.of("element_type", "bfloat16", "dims", 2, "similarity", "cosine"));
        SingleFieldParserContext context = SingleFieldParserContext.parse(mapper, "[3, 4]");
        assertArrayEquals(new float[] { 0.6f, 0.8f }, ((KnnFloatVectorField) context.doc().getByKey("vec")).vectorValue());
        IndexableField magnitude = context.doc().getField("vec" + DenseVectorFieldMapper.COSINE_MAGNITUDE_FIELD_SUFFIX);
        assertEquals(5f, Float.intBitsToFloat(magnitude.numericValue().intValue()));
    }
}
