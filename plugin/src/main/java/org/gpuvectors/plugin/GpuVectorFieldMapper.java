package org.gpuvectors.plugin;

import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnByteVectorField;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.index.IndexSettings;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.index.mapper.DocumentParserContext;
import org.elasticsearch.index.mapper.FieldMapper;
import org.elasticsearch.index.mapper.MapperBuilderContext;
import org.elasticsearch.index.mapper.MapperParsingException;
import org.elasticsearch.index.mapper.MappingParserContext;
import org.elasticsearch.index.mapper.SourceLoader;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper.DenseVectorFieldType;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper.Element;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper.ElementType;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper.VectorSimilarity;
import org.elasticsearch.index.mapper.vectors.SyntheticVectorsPatchFieldLoader;
import org.elasticsearch.search.vectors.VectorData;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.XContentParser.Token;
import org.gpuvectors.codec.GpuVectorsFormat;
import org.gpuvectors.codec.IndexParams;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The {@code gpu_vector} field: a dense vector indexed by the gpu-vectors Lucene format, with the element types of
 * {@code dense_vector} ({@code float}, {@code byte}, {@code bit}, {@code bfloat16}) and its rules for each
 * ({@link GpuElementTypes}).
 *
 * <p>Its {@link #fieldType()} is Elasticsearch's own {@link DenseVectorFieldType} with no index options, so the
 * {@code knn} search section and the {@code knn} query work unchanged and reach our format's
 * {@code KnnVectorsReader.search}. The Lucene field carries the {@link GpuVectorsFormat#INDEX_TYPE_ATTRIBUTE}
 * attribute, by which the codec installed by {@link GpuVectorsEngineFactory} routes it to our format, and the
 * {@code index_options} parameters given in the mapping ({@link GpuVectorsFormat#markField(FieldType, IndexParams)}),
 * which the codec reads back per segment.
 *
 * <p>Vectors are stored once, like {@code dense_vector}'s: with the index setting
 * {@code index.mapping.exclude_source_vectors} (on by default for new indices) and a stored (not synthetic) source,
 * {@link #syntheticVectorsLoader()} is non-null, so Elasticsearch's {@code SourceFieldMapper} removes the field from
 * the stored {@code _source} at index time and patches it back from the vector format whenever the source is read
 * with its vectors ({@code _source.exclude_vectors: false}, {@code fields}, get, scroll, reindex). Both
 * sides key on {@code FieldMapper.syntheticVectorsLoader()} (public, not final), the same hook {@code dense_vector}
 * uses, so no Elasticsearch code is copied or bypassed.
 *
 * <p>{@code dims} may be left out: the first document's vector length is then added to the mapping by a dynamic
 * mapping update (the document is parsed again with it), as {@code dense_vector} does.
 */
public final class GpuVectorFieldMapper extends FieldMapper {

    public static final String CONTENT_TYPE = "gpu_vector";

    public static final TypeParser PARSER = new TypeParser(
        (name, context) -> new Builder(name, context.indexVersionCreated(), excludeSourceVectorsSetting(context)),
        List.of(notInMultiFields(CONTENT_TYPE), GpuVectorFieldMapper::checkIndexUsesOurFormat)
    );

    /**
     * Refuses a gpu_vector field on an index whose engine does not use our format: without this, Elasticsearch
     * would silently write the field with its own HNSW format.
     */
    private static void checkIndexUsesOurFormat(String field, MappingParserContext context) {
        if (context.getIndexSettings() != null && GpuVectorsSettings.INDEX_ENABLED.get(context.getIndexSettings().getSettings()) == false) {
            throw new MapperParsingException(
                "field ["
                    + field
                    + "] of type ["
                    + CONTENT_TYPE
                    + "] cannot be added to index ["
                    + context.getIndexSettings().getIndex().getName()
                    + "]: this index was not created with a ["
                    + CONTENT_TYPE
                    + "] field, so it does not use the gpu-vectors format (["
                    + GpuVectorsSettings.INDEX_ENABLED.getKey()
                    + "] is false). Create a new index with the field in its mappings or in a matching index template, "
                    + "then reindex into it"
            );
        }
    }

    /** {@code index.mapping.exclude_source_vectors} of the index, read as {@code dense_vector}'s type parser reads it. */
    private static boolean excludeSourceVectorsSetting(MappingParserContext context) {
        Settings settings = context.getIndexSettings() == null ? Settings.EMPTY : context.getIndexSettings().getSettings();
        return IndexSettings.INDEX_MAPPING_EXCLUDE_SOURCE_VECTORS_SETTING.get(settings);
    }

    private static GpuVectorFieldMapper toType(FieldMapper in) {
        return (GpuVectorFieldMapper) in;
    }

    public static final class Builder extends FieldMapper.Builder {

        private final Parameter<ElementType> elementType = new Parameter<>(
            "element_type",
            false,
            () -> ElementType.FLOAT,
            (n, c, o) -> GpuElementTypes.parse(o),
            m -> toType(m).elementType,
            (b, n, v) -> b.field(n, v.toString()),
            Objects::toString
        );

        private final Parameter<Integer> dims = new Parameter<>("dims", false, () -> null, (n, c, o) -> {
            if (o instanceof Integer == false) {
                throw new MapperParsingException("Property [dims] on field [" + n + "] must be an integer but got [" + o + "]");
            }
            return (Integer) o;
        }, m -> toType(m).dims, XContentBuilder::field, Objects::toString).setSerializerCheck(
            (includeDefaults, isConfigured, value) -> value != null
        ) // left out: set once by the first document (dynamic mapping update), then fixed, as for dense_vector
            .setMergeValidator((previous, current, conflicts) -> previous == null || Objects.equals(previous, current))
            .addValidator(value -> {
                if (value != null) {
                    GpuElementTypes.checkDims(elementType.getValue(), value);
                }
            });

        private final Parameter<VectorSimilarity> similarity = new Parameter<>(
            "similarity",
            false,
            () -> GpuElementTypes.defaultSimilarity(elementType.getValue()),
            (n, c, o) -> parseSimilarity(n, o),
            m -> toType(m).fieldType().getSimilarity(),
            (b, n, v) -> b.field(n, v.toString()),
            Objects::toString
        ).alwaysSerialize().addValidator(value -> GpuElementTypes.checkSimilarity(elementType.getValue(), value));

        private final Parameter<GpuIndexOptions> indexOptions = new Parameter<>(
            "index_options",
            false,
            () -> GpuIndexOptions.DEFAULT,
            (n, c, o) -> GpuIndexOptions.parse(n, o),
            m -> toType(m).indexOptions,
            XContentBuilder::field,
            Objects::toString
        ).alwaysSerialize().addValidator(value -> GpuElementTypes.checkIndexType(leafName(), elementType.getValue(), value.type()));

        private final Parameter<Map<String, String>> meta = Parameter.metaParam();

        private final IndexVersion indexVersionCreated;
        private final boolean excludeSourceVectorsSetting;

        public Builder(String name, IndexVersion indexVersionCreated, boolean excludeSourceVectorsSetting) {
            super(name);
            this.indexVersionCreated = indexVersionCreated;
            this.excludeSourceVectorsSetting = excludeSourceVectorsSetting;
        }

        /** Sets {@code dims} (the dynamic mapping update that fixes the dims of a field mapped without them). */
        Builder dimensions(int dimensions) {
            dims.setValue(dimensions);
            return this;
        }

        Builder elementType(ElementType value) {
            elementType.setValue(value);
            return this;
        }

        Builder similarity(VectorSimilarity value) {
            similarity.setValue(value);
            return this;
        }

        Builder indexOptions(GpuIndexOptions value) {
            indexOptions.setValue(value);
            return this;
        }

        @Override
        protected Parameter<?>[] getParameters() {
            return new Parameter<?>[] { elementType, dims, similarity, indexOptions, meta };
        }

        @Override
        public String contentType() {
            return CONTENT_TYPE;
        }

        @Override
        public GpuVectorFieldMapper build(MapperBuilderContext context) {
            // again here, as dense_vector does: dims and the element type may have been set programmatically
            validate();
            if (dims.getValue() != null) {
                // what depends on the dimension (pq_m divides it): refused with the mapping (a 400), never at flush
                try {
                    int luceneDims = GpuElementTypes.luceneDims(elementType.getValue(), dims.getValue());
                    indexOptions.getValue().checkDimension(context.buildFullName(leafName()), luceneDims, "its [dims]");
                } catch (IllegalArgumentException e) {
                    throw new MapperParsingException(e.getMessage(), e);
                }
            }
            DenseVectorFieldType fieldType = new DenseVectorFieldType(
                context.buildFullName(leafName()),
                indexVersionCreated,
                elementType.getValue(),
                dims.getValue(),
                true,
                similarity.getValue(),
                null, // no Elasticsearch index options: the knn query then calls our reader's search()
                meta.getValue(),
                context.isSourceSynthetic()
            );
            // as dense_vector: the vector leaves the stored source unless the source is synthetic (then nothing is stored)
            boolean excludeSourceVectors = context.isSourceSynthetic() == false && excludeSourceVectorsSetting;
            return new GpuVectorFieldMapper(leafName(), fieldType, builderParams(this, context), this, excludeSourceVectors);
        }
    }

    private static VectorSimilarity parseSimilarity(String field, Object value) {
        String name = Objects.toString(value).toLowerCase(Locale.ROOT);
        for (VectorSimilarity similarity : VectorSimilarity.values()) {
            if (similarity.toString().equals(name)) {
                return similarity;
            }
        }
        throw new MapperParsingException(
            "unknown similarity [" + value + "] for field [" + field + "]; valid similarities are " + Arrays.toString(VectorSimilarity.values())
        );
    }

    private final ElementType elementType;
    private final GpuIndexOptions indexOptions;
    private final IndexVersion indexVersionCreated;
    /** Null until the first document sets it (then the mapping update builds a new mapper). */
    private final Integer dims;
    private final boolean excludeSourceVectorsSetting;
    private final boolean excludeSourceVectors;
    /** Null while {@link #dims} is. */
    private final FieldType luceneFieldType;

    private GpuVectorFieldMapper(
        String simpleName,
        DenseVectorFieldType fieldType,
        BuilderParams params,
        Builder builder,
        boolean excludeSourceVectors
    ) {
        super(simpleName, fieldType, params);
        this.elementType = builder.elementType.getValue();
        this.indexOptions = builder.indexOptions.getValue();
        this.indexVersionCreated = builder.indexVersionCreated;
        this.dims = builder.dims.getValue();
        this.excludeSourceVectorsSetting = builder.excludeSourceVectorsSetting;
        this.excludeSourceVectors = excludeSourceVectors;
        if (dims == null) {
            this.luceneFieldType = null;
        } else {
            // dense_vector's Lucene similarity for the element type: cosine over floats is a dot product of unit vectors
            // (new indices), over bytes Lucene's cosine
            VectorSimilarityFunction function = fieldType.getSimilarity().vectorSimilarityFunction(indexVersionCreated, elementType);
            // the index type, its parameters and the element type as field attributes, frozen (the dimension was
            // checked by the builder)
            this.luceneFieldType = GpuVectorsFormat.markField(
                GpuElementTypes.luceneFieldType(elementType, dims, function),
                indexOptions.params(),
                GpuElementTypes.codecType(elementType)
            );
        }
    }

    @Override
    public DenseVectorFieldType fieldType() {
        return (DenseVectorFieldType) super.fieldType();
    }

    GpuIndexOptions indexOptions() {
        return indexOptions;
    }

    /** The Lucene field type of the indexed vectors (with the codec's attributes); null while the dims are not known. */
    FieldType luceneFieldType() {
        return luceneFieldType;
    }

    @Override
    protected String contentType() {
        return CONTENT_TYPE;
    }

    /** Our type name in error messages; the field type's own name is fixed to {@code dense_vector}. */
    @Override
    public String typeName() {
        return CONTENT_TYPE;
    }

    @Override
    public boolean parsesArrayValue() {
        return true;
    }

    @Override
    public FieldMapper.Builder getMergeBuilder() {
        return new Builder(leafName(), indexVersionCreated, excludeSourceVectorsSetting).init(this);
    }

    /**
     * Non-null when the vector is kept out of the stored {@code _source} (see the class comment): Elasticsearch then
     * strips this field from the source at index time and rebuilds it with this loader on read. The loader classes are
     * Elasticsearch's public ones; the per-document reader is ours ({@link GpuVectorSourceLoader}), because
     * {@code dense_vector}'s is a private inner class of its mapper.
     */
    @Override
    public SourceLoader.SyntheticVectorsLoader syntheticVectorsLoader() {
        if (excludeSourceVectors == false) {
            return null;
        }
        return new SyntheticVectorsPatchFieldLoader<>(this::newSourceLoader, GpuVectorSourceLoader::copyVectorAsList);
    }

    GpuVectorSourceLoader newSourceLoader() {
        // only float vectors are stored normalized (dense_vector keeps byte vectors as given, cosine or not)
        boolean normalized = fieldType().isNormalized() && GpuElementTypes.isByteEncoded(elementType) == false;
        return new GpuVectorSourceLoader(fullPath(), leafName(), GpuElementTypes.isByteEncoded(elementType), normalized);
    }

    boolean excludesSourceVectors() {
        return excludeSourceVectors;
    }

    /**
     * Parses and indexes one document's vector with {@code dense_vector}'s own parser for the element type
     * ({@link Element#parseKnnVector}): arrays of numbers, base64 for float and bfloat16, hex or base64 bytes for byte
     * and bit, value bounds and magnitude checks, with its messages. Only the dimension messages are ours (they name
     * our type), and what follows the parse: the Lucene field carrying our codec's attributes.
     */
    @Override
    public void parse(DocumentParserContext context) throws IOException {
        // as dense_vector parses (it overrides parse too): a refused vector's error reaches the document parser as
        // thrown, so the client gets dense_vector's answer, not FieldMapper's "failed to parse field [..] of type
        // [dense_vector]" (our field type is dense_vector's, which would name the wrong mapping type)
        parseVector(context);
    }

    @Override
    protected void parseCreateField(DocumentParserContext context) {
        throw new AssertionError("parse is implemented directly");
    }

    private void parseVector(DocumentParserContext context) throws IOException {
        if (context.parser().currentToken() == Token.VALUE_NULL) {
            return;
        }
        String name = fieldType().name();
        if (context.doc().getByKey(name) != null) {
            throw new IllegalArgumentException(
                "Field ["
                    + fullPath()
                    + "] of type ["
                    + CONTENT_TYPE
                    + "] doesn't support indexing multiple values for the same field in the same document"
            );
        }
        Element element = Element.getElement(elementType);
        if (dims == null) {
            setDimsFromFirstDocument(context, element);
            return;
        }
        boolean array = context.parser().currentToken() == Token.START_ARRAY;
        VectorData vectorData = element.parseKnnVector(context, dims, (count, complete) -> {
            if (complete) {
                checkDimensionMatches(count, context);
            } else {
                checkDimensionExceeded(count, context);
            }
        }, fieldType().getSimilarity());
        if (GpuElementTypes.isByteEncoded(elementType)) {
            // byte: one signed byte a dimension; bit: the packed bits, dims / 8 bytes (the parser checked the length)
            context.doc().addWithKey(name, new KnnByteVectorField(name, vectorData.asByteVector(), luceneFieldType));
            return;
        }
        float[] vector = vectorData.asFloatVector();
        // the squared magnitude as dense_vector has it: its parser's float sum in dimension order for an array, the
        // element's own product for an encoded vector; so the unit-length test and the normalized vector are its own
        float squaredMagnitude = array ? squaredMagnitude(vector) : (float) element.computeSquaredMagnitude(vectorData);
        if (fieldType().isNormalized() && element.isUnitVector(squaredMagnitude) == false) {
            // Elasticsearch searches cosine fields of new indices with DOT_PRODUCT on unit vectors; keep the
            // magnitude the way it does, so that scripts and the _source rebuilt from the vector format
            // (GpuVectorSourceLoader: normalized[i] * magnitude) restore the original vector as dense_vector does.
            // bfloat16 vectors are given to Lucene as floats: the codec rounds them when it stores them, as
            // dense_vector's bfloat16 format does, not the parser.
            float magnitude = normalizeInPlace(vector, squaredMagnitude);
            context.doc().add(new NumericDocValuesField(name + DenseVectorFieldMapper.COSINE_MAGNITUDE_FIELD_SUFFIX, Float.floatToIntBits(magnitude)));
        }
        context.doc().addWithKey(name, new KnnFloatVectorField(name, vector, luceneFieldType));
    }

    /**
     * dense_vector's behaviour: the first vector fixes the dims through a dynamic mapping update (counted by the
     * element's own parser: bit fields count bits). The document is not indexed now: a document that updates the
     * mapping is parsed again once the update is applied, and its values are checked then.
     */
    private void setDimsFromFirstDocument(DocumentParserContext context, Element element) throws IOException {
        String name = fieldType().name();
        int count = element.parseDimensionCount(context);
        if (count == 0) {
            throw new IllegalArgumentException("field [" + name + "] of type [" + CONTENT_TYPE + "] cannot set its dims from an empty vector");
        }
        GpuElementTypes.checkDims(elementType, count);
        // the checks the mapping would have made with these dims (pq_m divides them): this document is refused
        // and the mapping keeps no dims, so a later document with a fitting length can still set them
        indexOptions.checkDimension(
            name,
            GpuElementTypes.luceneDims(elementType, count),
            "the length of the first document's vector, which would set its [dims]"
        );
        Builder update = ((Builder) getMergeBuilder()).dimensions(count);
        context.addDynamicMapper(update, fullPath());
    }

    /** dense_vector's message, naming our type. */
    private void checkDimensionExceeded(int index, DocumentParserContext context) {
        if (index >= dims) {
            throw new IllegalArgumentException(
                "The ["
                    + CONTENT_TYPE
                    + "] field ["
                    + fullPath()
                    + "] in doc ["
                    + context.documentDescription()
                    + "] has more dimensions than defined in the mapping ["
                    + dims
                    + "]"
            );
        }
    }

    /** dense_vector's message, naming our type. */
    private void checkDimensionMatches(int count, DocumentParserContext context) {
        if (count != dims) {
            throw new IllegalArgumentException(
                "The ["
                    + CONTENT_TYPE
                    + "] field ["
                    + fullPath()
                    + "] in doc ["
                    + context.documentDescription()
                    + "] has a different number of dimensions ["
                    + count
                    + "] than defined in the mapping ["
                    + dims
                    + "]"
            );
        }
    }

    /**
     * The squared magnitude exactly as {@code dense_vector} computes it while parsing (a float sum in dimension
     * order), so that the unit-length test, the stored magnitude and the normalized vector are bit-identical to
     * {@code dense_vector}'s, and so is the cosine vector rebuilt for {@code _source}.
     */
    static float squaredMagnitude(float[] vector) {
        float sum = 0f;
        for (float v : vector) {
            sum += v * v;
        }
        return sum;
    }

    /** Divides by the magnitude as {@code dense_vector} does (float sqrt of the float squared magnitude); returns it. */
    static float normalizeInPlace(float[] vector, float squaredMagnitude) {
        float magnitude = (float) Math.sqrt(squaredMagnitude);
        for (int i = 0; i < vector.length; i++) {
            vector[i] /= magnitude;
        }
        return magnitude;
    }
}
