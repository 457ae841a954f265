package org.gpuvectors.plugin;

import org.apache.lucene.document.Document;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.elasticsearch.common.Strings;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.index.mapper.MapperBuilderContext;
import org.elasticsearch.index.mapper.SourceLoader;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.json.JsonXContent;
import org.gpuvectors.codec.GpuVectorsCodec;
import org.gpuvectors.codec.GpuVectorsFormat;
import org.gpuvectors.codec.IndexType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The {@code _source} side of "vectors stored once": the mapper's {@link GpuVectorFieldMapper#syntheticVectorsLoader()}
 * and {@link GpuVectorSourceLoader} read back, from segments written by our codec, exactly what the mapper indexed.
 */
class GpuVectorSourceLoaderTests {

    private static final int DIMS = 5;

    @BeforeAll
    static void elasticsearchLogging() {
        LogConfigurator.configureESLogging();
    }

    private static GpuVectorFieldMapper mapper(String similarity, Integer dims, boolean excludeSetting, boolean syntheticSource) {
        GpuVectorFieldMapper.Builder builder = new GpuVectorFieldMapper.Builder("vec", IndexVersion.current(), excludeSetting);
        if (dims != null) {
            builder.dimensions(dims);
        }
        builder.similarity(DenseVectorFieldMapper.VectorSimilarity.valueOf(similarity.toUpperCase(Locale.ROOT)));
        return builder.build(MapperBuilderContext.root(syntheticSource, false));
    }

    @Test
    void syntheticVectorsLoaderFollowsTheIndexSettingAndSourceMode() {
        assertNotNull(mapper("l2_norm", DIMS, true, false).syntheticVectorsLoader(), "default: the vector leaves the stored source");
        assertNull(mapper("l2_norm", DIMS, false, false).syntheticVectorsLoader(), "exclude_source_vectors false: kept in the source");
        assertNull(mapper("l2_norm", DIMS, true, true).syntheticVectorsLoader(), "synthetic source stores no source to strip");
        assertNotNull(mapper("l2_norm", null, true, false).syntheticVectorsLoader(), "dims not known yet: same as dense_vector");
    }

    @Test
    void mappingWithoutDimsBuildsAndSerializesWithoutThem() throws IOException {
        GpuVectorFieldMapper noDims = mapper("l2_norm", null, true, false);
        String json = Strings.toString(noDims);
        assertFalse(json.contains("dims"), json);
        GpuVectorFieldMapper.Builder update = ((GpuVectorFieldMapper.Builder) noDims.getMergeBuilder()).dimensions(3);
        GpuVectorFieldMapper withDims = update.build(MapperBuilderContext.root(false, false));
        assertTrue(Strings.toString(withDims).contains("\"dims\":3"), Strings.toString(withDims));
        assertEquals(3, withDims.fieldType().getVectorDimensions());
        assertTrue(withDims.excludesSourceVectors());
    }

    @Test
    void l2VectorsReadBackBitExactlyAcrossSegmentsAndGaps() throws IOException {
        GpuVectorFieldMapper mapper = mapper("l2_norm", DIMS, true, false);
        Random random = new Random(42);
        Map<String, float[]> indexed = new HashMap<>();
        try (Directory dir = new ByteBuffersDirectory()) {
            try (IndexWriter w = writer(dir)) {
                for (int i = 0; i < 40; i++) {
                    Document doc = new Document();
                    doc.add(new StringField("id", Integer.toString(i), Field.Store.YES));
                    if (i % 3 != 1) { // every third doc has no vector
                        float[] v = new float[DIMS];
                        for (int d = 0; d < DIMS; d++) {
                            // a quarter of arbitrary bit patterns (finite ones: tiny, huge, subnormal), the rest in [-100, 100)
                            do {
                                v[d] = random.nextInt(4) == 0 ? Float.intBitsToFloat(random.nextInt()) : random.nextFloat() * 200 - 100;
                            } while (Float.isFinite(v[d]) == false);
                        }
                        indexed.put(Integer.toString(i), v.clone());
                        doc.add(new KnnFloatVectorField("vec", v, fieldType(DIMS, VectorSimilarityFunction.EUCLIDEAN)));
                    }
                    w.addDocument(doc);
                    if (i % 13 == 12) {
                        w.flush(); // several segments
                    }
                }
            }
            Map<String, float[]> read = readAll(dir, mapper);
            assertEquals(indexed.keySet(), read.keySet());
            indexed.forEach((id, v) -> assertArrayEquals(v, read.get(id), 0f, "doc " + id));
            assertPatchesMatch(dir, mapper, read);
        }
    }

    @Test
    void cosineVectorsReadBackAsNormalizedTimesMagnitudeLikeDenseVector() throws IOException {
        GpuVectorFieldMapper mapper = mapper("cosine", 4, true, false);
        assertTrue(mapper.fieldType().isNormalized());
        float[][] vectors = { { 0.1f, -2.5f, 3.14159f, 7f }, { 3f, 4f, 0f, 0f }, { 0.5f, 0.5f, 0.5f, 0.5f } };
        float[][] expected = new float[vectors.length][];
        try (Directory dir = new ByteBuffersDirectory()) {
            try (IndexWriter w = writer(dir)) {
                for (int i = 0; i < vectors.length; i++) {
                    float[] v = vectors[i].clone();
                    Document doc = new Document();
                    doc.add(new StringField("id", Integer.toString(i), Field.Store.YES));
                    float squared = GpuVectorFieldMapper.squaredMagnitude(v);
                    if (DenseVectorFieldMapper.FLOAT_ELEMENT.isUnitVector(squared) == false) { // as parseCreateField
                        float magnitude = GpuVectorFieldMapper.normalizeInPlace(v, squared);
                        doc.add(new NumericDocValuesField("vec" + DenseVectorFieldMapper.COSINE_MAGNITUDE_FIELD_SUFFIX, Float.floatToIntBits(magnitude)));
                        expected[i] = new float[v.length];
                        for (int d = 0; d < v.length; d++) {
                            expected[i][d] = v[d] * magnitude;
                        }
                    } else {
                        expected[i] = v.clone();
                    }
                    doc.add(new KnnFloatVectorField("vec", v, fieldType(4, VectorSimilarityFunction.DOT_PRODUCT)));
                    w.addDocument(doc);
                }
            }
            Map<String, float[]> read = readAll(dir, mapper);
            for (int i = 0; i < vectors.length; i++) {
                float[] got = read.get(Integer.toString(i));
                assertArrayEquals(expected[i], got, 0f, "normalized * magnitude, bit for bit");
                assertArrayEquals(vectors[i], got, 1e-6f * 8, "close to the original");
            }
            assertArrayEquals(vectors[2], read.get("2"), 0f, "a unit vector is stored and read back as given");
        }
    }

    @Test
    void writeRendersTheShortestFloatText() throws IOException {
        GpuVectorFieldMapper mapper = mapper("l2_norm", 4, true, false);
        try (Directory dir = new ByteBuffersDirectory()) {
            try (IndexWriter w = writer(dir)) {
                Document doc = new Document();
                doc.add(new KnnFloatVectorField("vec", new float[] { 0.1f, -2.5f, 3.14159f, 1e-7f }, fieldType(4, VectorSimilarityFunction.EUCLIDEAN)));
                w.addDocument(doc);
            }
            try (DirectoryReader reader = DirectoryReader.open(dir)) {
                GpuVectorSourceLoader loader = mapper.newSourceLoader();
                var docValues = loader.docValuesLoader(reader.leaves().get(0).reader(), null);
                assertTrue(docValues.advanceToDoc(0));
                XContentBuilder b = JsonXContent.contentBuilder().startObject();
                loader.write(b);
                b.endObject();
                assertEquals("{\"vec\":[0.1,-2.5,3.14159,1.0E-7]}", Strings.toString(b));
            }
        }
    }

    private static org.apache.lucene.document.FieldType fieldType(int dims, VectorSimilarityFunction function) {
        return GpuVectorsFormat.markField(KnnFloatVectorField.createFieldType(dims, function), IndexType.FLAT);
    }

    private static IndexWriter writer(Directory dir) throws IOException {
        return new IndexWriter(dir, new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setMergePolicy(NoMergePolicy.INSTANCE));
    }

    /** Reads every document's vector through the loader, visiting the docs of each leaf in order (as the fetch phase). */
    private static Map<String, float[]> readAll(Directory dir, GpuVectorFieldMapper mapper) throws IOException {
        Map<String, float[]> out = new HashMap<>();
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
            for (LeafReaderContext leaf : reader.leaves()) {
                GpuVectorSourceLoader loader = mapper.newSourceLoader();
                var docValues = loader.docValuesLoader(leaf.reader(), null);
                var stored = leaf.reader().storedFields();
                for (int doc = 0; doc < leaf.reader().maxDoc(); doc++) {
                    if (docValues != null && docValues.advanceToDoc(doc)) {
                        assertTrue(loader.hasValue());
                        out.put(stored.document(doc).get("id"), loader.vector());
                    }
                }
            }
        }
        return out;
    }

    /** The mapper's SyntheticVectorsLoader (Elasticsearch's patch loader around ours) yields the same values. */
    private static void assertPatchesMatch(Directory dir, GpuVectorFieldMapper mapper, Map<String, float[]> expected) throws IOException {
        SourceLoader.SyntheticVectorsLoader vectors = mapper.syntheticVectorsLoader();
        int patched = 0;
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
            for (LeafReaderContext leaf : reader.leaves()) {
                SourceLoader.SyntheticVectorsLoader.Leaf leafLoader = vectors.leaf(leaf);
                var stored = leaf.reader().storedFields();
                for (int doc = 0; doc < leaf.reader().maxDoc(); doc++) {
                    List<SourceLoader.SyntheticVectorPatch> patches = new ArrayList<>();
                    leafLoader.load(doc, patches);
                    float[] want = expected.get(stored.document(doc).get("id"));
                    if (want == null) {
                        assertTrue(patches.isEmpty());
                        continue;
                    }
                    assertEquals(1, patches.size());
                    SourceLoader.LeafSyntheticVectorPath patch = (SourceLoader.LeafSyntheticVectorPath) patches.get(0);
                    assertEquals("vec", patch.fullPath());
                    List<?> values = (List<?>) patch.value();
                    float[] got = new float[values.size()];
                    for (int i = 0; i < got.length; i++) {
                        got[i] = (Float) values.get(i);
                    }
                    assertArrayEquals(want, got, 0f);
                    patched++;
                }
            }
        }
        assertEquals(expected.size(), patched);
    }
}
