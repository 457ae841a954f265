package org.gpuvectors.plugin;

import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.NumericDocValues;
import org.elasticsearch.index.mapper.SourceLoader;
import org.elasticsearch.index.mapper.vectors.DenseVectorFieldMapper;
import org.elasticsearch.xcontent.XContentBuilder;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Rebuilds a {@code gpu_vector} value from the indexed vector (Lucene's {@link FloatVectorValues} or
 * {@link ByteVectorValues}, served by our format's reader) for {@code _source}: Elasticsearch patches it back into a stored source from which the vector was
 * removed ({@link SourceLoader.SyntheticVectorsLoader}, see {@link GpuVectorFieldMapper#syntheticVectorsLoader()}).
 *
 * <p>Same contract as {@code dense_vector}'s own (package-private) loader: a cosine field of a new index stores the
 * unit vector plus the original magnitude in the {@link DenseVectorFieldMapper#COSINE_MAGNITUDE_FIELD_SUFFIX} doc
 * values (only for vectors that were not unit length already), and the value read back is
 * {@code normalized[i] * magnitude} in float arithmetic. Every other similarity (and a cosine vector that was already
 * unit length) is stored as given and reads back bit-exactly, except that a bfloat16 field reads back the values the
 * codec stored (rounded to bfloat16), as {@code dense_vector}'s do.
 *
 * <p>Byte and bit fields read back their bytes as numbers ({@code dense_vector}'s loader writes a byte array): a bit
 * vector given as a hex string comes back as its dims / 8 signed bytes.
 *
 * <p>One instance serves one leaf at a time, on one thread, like Elasticsearch's synthetic field loaders.
 */
final class GpuVectorSourceLoader extends SourceLoader.DocValuesBasedSyntheticFieldLoader {

    private final String fullPath;
    private final String leafName;
    private final boolean byteEncoded;
    private final boolean normalized;

    private FloatVectorValues values;
    private ByteVectorValues byteValues;
    private NumericDocValues magnitudes;
    private boolean hasValue;
    private boolean hasMagnitude;
    private int ord;

    /**
     * @param fullPath   the field's full name (the Lucene field)
     * @param leafName    the name written into the source object of its parent
     * @param byteEncoded whether Lucene holds the vectors as bytes (byte and bit fields)
     * @param normalized  whether the field stores unit float vectors plus their magnitudes (cosine on a new index)
     */
    GpuVectorSourceLoader(String fullPath, String leafName, boolean byteEncoded, boolean normalized) {
        assert byteEncoded == false || normalized == false : "byte vectors are never normalized";
        this.fullPath = fullPath;
        this.leafName = leafName;
        this.byteEncoded = byteEncoded;
        this.normalized = normalized;
    }

    @Override
    public DocValuesLoader docValuesLoader(LeafReader reader, int[] docIdsInLeaf) throws IOException {
        KnnVectorValues vectorValues;
        if (byteEncoded) {
            vectorValues = byteValues = reader.getByteVectorValues(fullPath);
        } else {
            vectorValues = values = reader.getFloatVectorValues(fullPath);
        }
        if (vectorValues == null) {
            return null;
        }
        magnitudes = normalized ? reader.getNumericDocValues(fullPath + DenseVectorFieldMapper.COSINE_MAGNITUDE_FIELD_SUFFIX) : null;
        KnnVectorValues.DocIndexIterator iterator = vectorValues.iterator();
        return docId -> {
            if (iterator.docID() > docId) {
                return hasValue = false;
            }
            if (iterator.docID() == docId || iterator.advance(docId) == docId) {
                ord = iterator.index();
                hasValue = true;
                hasMagnitude = magnitudes != null && magnitudes.advanceExact(docId);
            } else {
                hasValue = false;
            }
            return hasValue;
        };
    }

    @Override
    public boolean hasValue() {
        return hasValue;
    }

    /** The current document's float vector as given at index time (up to cosine's float rounding, see the class comment). */
    float[] vector() throws IOException {
        assert hasValue : "no vector for ord " + ord;
        assert byteEncoded == false : "a byte field has no float vector";
        float[] stored = values.vectorValue(ord);
        float[] vector = new float[stored.length];
        float magnitude = hasMagnitude ? Float.intBitsToFloat((int) magnitudes.longValue()) : 1f;
        for (int i = 0; i < stored.length; i++) {
            vector[i] = hasMagnitude ? stored[i] * magnitude : stored[i];
        }
        return vector;
    }

    /** The current document's byte vector (bit fields: the packed bits) as indexed. */
    byte[] bytes() throws IOException {
        assert hasValue : "no vector for ord " + ord;
        assert byteEncoded : "a float field has no byte vector";
        return byteValues.vectorValue(ord).clone(); // the values object may reuse its array
    }

    /**
     * The current document's vector as a list of {@link Float} (float and bfloat16) or {@link Byte} (byte and bit), the
     * value that is patched into {@code _source}.
     */
    List<Object> copyVectorAsList() throws IOException {
        if (byteEncoded) {
            byte[] bytes = bytes();
            List<Object> list = new ArrayList<>(bytes.length);
            for (byte b : bytes) {
                list.add(b);
            }
            return list;
        }
        float[] vector = vector();
        List<Object> list = new ArrayList<>(vector.length);
        for (float v : vector) {
            list.add(v);
        }
        return list;
    }

    @Override
    public void write(XContentBuilder b) throws IOException {
        if (hasValue == false) {
            return;
        }
        b.startArray(leafName);
        if (byteEncoded) {
            for (byte v : bytes()) {
                b.value(v);
            }
        } else {
            for (float v : vector()) {
                b.value(v);
            }
        }
        b.endArray();
    }

    @Override
    public String fieldName() {
        return fullPath;
    }
}
