package org.gpuvectors.plugin;

import org.elasticsearch.index.mapper.MapperParsingException;
import org.elasticsearch.xcontent.ToXContentObject;
import org.elasticsearch.xcontent.XContentBuilder;
import org.gpuvectors.codec.IndexParams;
import org.gpuvectors.codec.IndexType;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * The {@code index_options} of a {@code gpu_vector} field: a thin mapping-side wrapper of the codec's
 * {@link IndexParams} (the index type and the parameters the user gave).
 *
 * <p>The schema (which parameters each type takes, their bounds, what depends on the dimension) is the codec's:
 * {@link IndexParams#schema(IndexType)}, the {@link IndexParams} constructor and {@link IndexParams#checkDimension}.
 * This class only reads the JSON (an object with {@code type}, integer values), turns the codec's
 * {@link IllegalArgumentException}s into mapping errors that name the field and the parameter, and refuses the types
 * whose index structures this release does not build yet, listing the available ones.
 */
record GpuIndexOptions(IndexParams params) implements ToXContentObject {

    static final GpuIndexOptions DEFAULT = new GpuIndexOptions(IndexParams.FLAT);

    GpuIndexOptions {
        Objects.requireNonNull(params, "params");
    }

    IndexType type() {
        return params.type();
    }

    /** The parameters given in the mapping (sorted by name); absent ones take the index type's per-segment defaults. */
    Map<String, Integer> parameters() {
        return params.values();
    }

    /** Parses and validates the mapping value of {@code index_options} for field {@code field}. */
    static GpuIndexOptions parse(String field, Object value) {
        if (!(value instanceof Map<?, ?> map)) {
            throw new MapperParsingException("[index_options] on field [" + field + "] must be an object but got [" + value + "]");
        }
        Object typeName = map.get("type");
        if (typeName == null) {
            throw new MapperParsingException("[index_options] on field [" + field + "] requires [type]; one of " + typeNames(false));
        }
        IndexType type;
        try {
            type = IndexType.fromName(typeName.toString());
        } catch (IllegalArgumentException e) {
            throw new MapperParsingException("[index_options] on field [" + field + "]: " + e.getMessage());
        }
        Map<String, int[]> schema = IndexParams.schema(type);
        Map<String, Integer> values = new LinkedHashMap<>();
        for (Map.Entry<?, ?> entry : map.entrySet()) {
            String name = entry.getKey().toString();
            if (name.equals("type")) {
                continue;
            }
            if (schema.containsKey(name) == false) {
                throw new MapperParsingException(
                    "unknown parameter [" + name + "] in [index_options] of type [" + type + "] on field [" + field + "]; "
                        + (schema.isEmpty() ? "this type takes no parameters" : "valid parameters are " + new TreeMap<>(schema).keySet())
                );
            }
            if (entry.getValue() instanceof Long || entry.getValue() instanceof java.math.BigInteger) {
                int[] bounds = schema.get(name); // an integer beyond int: out of the codec's bounds whatever they are
                throw new MapperParsingException(
                    "[index_options." + name + "] on field [" + field + "] must be in [" + bounds[0] + ", " + bounds[1] + "] but was ["
                        + entry.getValue() + "]"
                );
            }
            if (entry.getValue() instanceof Integer == false) {
                throw new MapperParsingException(
                    "[index_options." + name + "] on field [" + field + "] must be an integer but got [" + entry.getValue() + "]"
                );
            }
            int v = (Integer) entry.getValue();
            try {
                IndexParams.checkBounds(type, name, v); // the codec's bounds, one parameter at a time to name it
            } catch (IllegalArgumentException e) {
                throw parameterError(field, name, e);
            }
            values.put(name, v);
        }
        IndexParams params;
        try {
            params = new IndexParams(type, values); // and whatever the codec checks across parameters
        } catch (IllegalArgumentException e) {
            throw new MapperParsingException("[index_options] on field [" + field + "]: " + e.getMessage(), e);
        }
        if (type.isImplemented() == false) {
            throw new MapperParsingException(
                "[index_options] type [" + type + "] on field [" + field + "] is not implemented yet; available types are " + typeNames(true)
            );
        }
        return new GpuIndexOptions(params);
    }

    /**
     * Checks what depends on the field's dimension ({@code pq_m} must divide it), when the dimension is known.
     *
     * @param source where the dimension comes from, for the message (e.g. "the mapping's [dims]")
     * @throws IllegalArgumentException naming the field, the parameter and the dimension
     */
    void checkDimension(String field, int dims, String source) {
        try {
            params.checkDimension(dims);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                "[index_options] on field [" + field + "] does not fit " + source + ": " + e.getMessage(),
                e
            );
        }
    }

    /**
     * The codec's message about one parameter in mapping terms: its leading {@code [name]} becomes
     * {@code [index_options.name] on field [field]}, e.g. {@code [index_options.nlist] on field [vec] must be in [1, 65536] but was [0]}.
     */
    private static MapperParsingException parameterError(String field, String name, IllegalArgumentException e) {
        String message = Objects.toString(e.getMessage(), "");
        String prefix = "[" + name + "] ";
        String where = "[index_options." + name + "] on field [" + field + "]";
        return new MapperParsingException(
            message.startsWith(prefix) ? where + " " + message.substring(prefix.length()) : where + ": " + message,
            e
        );
    }

    private static Set<String> typeNames(boolean implementedOnly) {
        Set<String> names = new LinkedHashSet<>();
        for (IndexType t : IndexType.values()) {
            if (implementedOnly == false || t.isImplemented()) {
                names.add(t.typeName());
            }
        }
        return names;
    }

    @Override
    public XContentBuilder toXContent(XContentBuilder builder, Params xContentParams) throws IOException {
        builder.startObject();
        builder.field("type", type().typeName());
        for (Map.Entry<String, Integer> entry : parameters().entrySet()) {
            builder.field(entry.getKey(), entry.getValue());
        }
        return builder.endObject();
    }

    /** As in mapping conflicts: {@code ivf_flat{nlist=1024, nprobe=8}}. */
    @Override
    public String toString() {
        return params.toString();
    }
}
