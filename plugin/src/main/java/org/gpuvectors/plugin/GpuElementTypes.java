package org.gpuvectors.plugin;

import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnByteVectorField;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.index.VectorEncoding;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.elasticsearch.index.mapper.MapperParsingException;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper.ElementType;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper.VectorSimilarity;
import org.gpuvectors.codec.GpuVectorsFormat;
import org.gpuvectors.codec.IndexType;

import java.util.Objects;

/**
 * What each {@code element_type} allows in a {@code gpu_vector} mapping: {@code dense_vector}'s rules (names, default
 * and allowed similarities, dimension bounds, with its messages) and the index types our codec builds for it.
 *
 * <p>Lucene sees byte and bit fields as byte vectors (bit: dims / 8 bytes, as {@code dense_vector} indexes them) and
 * float and bfloat16 fields as float vectors; the codec learns the element type from the field attribute set by
 * {@code GpuVectorsFormat.markField(FieldType, IndexParams, ElementType)}.
 */
final class GpuElementTypes {

    private GpuElementTypes() {}

    /** The element type named in the mapping, with {@code dense_vector}'s message for an unknown name. */
    static ElementType parse(Object value) {
        ElementType type = DenseVectorFieldMapper.namesToElementType.get(Objects.toString(value));
        if (type == null) {
            throw new MapperParsingException(
                "invalid element_type [" + value + "]; available types are " + DenseVectorFieldMapper.namesToElementType.keySet()
            );
        }
        return type;
    }

    /** As {@code dense_vector}: bit vectors are compared by Hamming distance, which it maps to {@code l2_norm}. */
    static VectorSimilarity defaultSimilarity(ElementType type) {
        return type == ElementType.BIT ? VectorSimilarity.L2_NORM : VectorSimilarity.COSINE;
    }

    /** {@code dense_vector}'s rule and message: bit vectors take {@code l2_norm} (their Hamming score) only. */
    static void checkSimilarity(ElementType type, VectorSimilarity similarity) {
        if (type == ElementType.BIT && similarity != VectorSimilarity.L2_NORM) {
            throw new IllegalArgumentException(
                "The [" + VectorSimilarity.L2_NORM + "] similarity is the only supported similarity for bit vectors"
            );
        }
    }

    /** {@code dense_vector}'s dimension bounds and messages: bit fields count bits, a multiple of 8 up to 8 x 4096. */
    static void checkDims(ElementType type, int dims) {
        int min = type == ElementType.BIT ? Byte.SIZE : 1;
        int max = maxDims(type);
        if (dims < min || dims > max) {
            throw new MapperParsingException("The number of dimensions should be in the range [" + min + ", " + max + "] but was [" + dims + "]");
        }
        if (type == ElementType.BIT && dims % Byte.SIZE != 0) {
            // sic: dense_vector's wording, kept so that clients matching it match ours
            throw new MapperParsingException("The number of dimensions for should be a multiple of 8 but was [" + dims + "]");
        }
    }

    static int maxDims(ElementType type) {
        return type == ElementType.BIT ? DenseVectorFieldMapper.MAX_DIMS_COUNT_BIT : DenseVectorFieldMapper.MAX_DIMS_COUNT;
    }

    /**
     * Refuses the index types that make no sense for an element type (the codec's rule: {@code ivf_pq} over bit
     * vectors), naming the field.
     */
    static void checkIndexType(String field, ElementType type, IndexType indexType) {
        try {
            GpuVectorsFormat.checkIndexType(indexType, codecType(type));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("field [" + field + "]: " + e.getMessage(), e);
        }
    }

    /** The dimension Lucene and the codec see: bytes for bit fields, elements otherwise. */
    static int luceneDims(ElementType type, int dims) {
        return type == ElementType.BIT ? dims / Byte.SIZE : dims;
    }

    /** The Lucene vector field type (not yet marked for our codec) of a field with these dims. */
    static FieldType luceneFieldType(ElementType type, int dims, VectorSimilarityFunction function) {
        return isByteEncoded(type)
            ? KnnByteVectorField.createFieldType(luceneDims(type, dims), function)
            : KnnFloatVectorField.createFieldType(dims, function);
    }

    /** The codec's name for the same element type (the field attribute it reads). */
    static org.gpuvectors.codec.index.ElementType codecType(ElementType type) {
        return switch (type) {
            case FLOAT -> org.gpuvectors.codec.index.ElementType.FLOAT;
            case BYTE -> org.gpuvectors.codec.index.ElementType.BYTE;
            case BIT -> org.gpuvectors.codec.index.ElementType.BIT;
            case BFLOAT16 -> org.gpuvectors.codec.index.ElementType.BFLOAT16;
        };
    }

    /** Whether Lucene holds the field's vectors as byte vectors (the codec's encoding of the element type). */
    static boolean isByteEncoded(ElementType type) {
        return codecType(type).encoding() == VectorEncoding.BYTE;
    }
}
