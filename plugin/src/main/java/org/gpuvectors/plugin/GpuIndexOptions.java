package org.gpuvectors.plugin;

import org.elasticsearch.index.mapper.MapperParsingException;
import org.elasticsearch.xcontent.ToXContentObject;
import org.elasticsearch.xcontent.XContentBuilder;
import org.gpuvectors.codec.IndexType;

import java.io.IOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The {@code index_options} of a {@code gpu_vector} field: the ANN index type and its parameters.
 *
 * <p>The schema of every index type of the design is known here, so a mapping is checked for unknown
 * parameters and bad values first; types whose index structures are not built yet are then refused with a
 * message that says which types are available.
 */
record GpuIndexOptions(IndexType type, Map<String, Integer> parameters) implements ToXContentObject {

    static final GpuIndexOptions DEFAULT = new GpuIndexOptions(IndexType.FLAT, Map.of());

    /** Integer parameters each type accepts, with their inclusive bounds. */
    private static final Map<IndexType, Map<String, int[]>> SCHEMA = Map.of(
        IndexType.FLAT,
        Map.of(),
        IndexType.IVF_FLAT,
        Map.of("nlist", new int[] { 1, 1 << 20 }, "nprobe", new int[] { 1, 1 << 20 }),
        IndexType.IVF_PQ,
        Map.of(
            "nlist",
            new int[] { 1, 1 << 20 },
            "nprobe",
            new int[] { 1, 1 << 20 },
            "pq_m",
            new int[] { 1, 4096 },
            "pq_bits",
            new int[] { 4, 8 }
        ),
        IndexType.PQT,
        Map.of("pq_m", new int[] { 1, 4096 }, "pq_bits", new int[] { 4, 8 }, "nprobe", new int[] { 1, 1 << 20 }),
        IndexType.GRAPH,
        Map.of("degree", new int[] { 4, 256 }, "build_degree", new int[] { 4, 512 }, "search_width", new int[] { 1, 4096 })
    );

    GpuIndexOptions {
        parameters = Collections.unmodifiableMap(new TreeMap<>(parameters));
    }

    /** Parses and validates the mapping value of {@code index_options} for field {@code field}. */
    static GpuIndexOptions parse(String field, Object value) {
        if (!(value instanceof Map<?, ?> map)) {
            throw new MapperParsingException("[index_options] on field [" + field + "] must be an object but got [" + value + "]");
        }
        Object typeName = map.get("type");
        if (typeName == null) {
            throw new MapperParsingException("[index_options] on field [" + field + "] requires [type]; one of " + validTypes());
        }
        IndexType type;
        try {
            type = IndexType.fromName(typeName.toString());
        } catch (IllegalArgumentException e) {
            throw new MapperParsingException("[index_options] on field [" + field + "]: " + e.getMessage());
        }
        Map<String, int[]> schema = SCHEMA.get(type);
        Map<String, Integer> parameters = new LinkedHashMap<>();
        for (Map.Entry<?, ?> entry : map.entrySet()) {
            String name = entry.getKey().toString();
            if (name.equals("type")) {
                continue;
            }
            int[] bounds = schema.get(name);
            if (bounds == null) {
                throw new MapperParsingException(
                    "unknown parameter [" + name + "] in [index_options] of type [" + type + "] on field [" + field + "]; "
                        + (schema.isEmpty() ? "this type takes no parameters" : "valid parameters are " + new TreeMap<>(schema).keySet())
                );
            }
            parameters.put(name, boundedInt(field, name, entry.getValue(), bounds));
        }
        if (type.isImplemented() == false) {
            throw new MapperParsingException(
                "[index_options] type [" + type + "] on field [" + field + "] is not implemented yet; available types are " + implementedTypes()
            );
        }
        return new GpuIndexOptions(type, parameters);
    }

    private static int boundedInt(String field, String name, Object value, int[] bounds) {
        if (value instanceof Integer == false) {
            throw new MapperParsingException(
                "[index_options." + name + "] on field [" + field + "] must be an integer but got [" + value + "]"
            );
        }
        int v = (Integer) value;
        if (v < bounds[0] || v > bounds[1]) {
            throw new MapperParsingException(
                "[index_options." + name + "] on field [" + field + "] must be in [" + bounds[0] + ", " + bounds[1] + "] but was [" + v + "]"
            );
        }
        return v;
    }

    private static Set<String> validTypes() {
        Set<String> names = new java.util.LinkedHashSet<>();
        for (IndexType t : IndexType.values()) {
            names.add(t.typeName());
        }
        return names;
    }

    private static Set<String> implementedTypes() {
        Set<String> names = new java.util.LinkedHashSet<>();
        for (IndexType t : IndexType.values()) {
            if (t.isImplemented()) {
                names.add(t.typeName());
            }
        }
        return names;
    }

    @Override
    public XContentBuilder toXContent(XContentBuilder builder, Params params) throws IOException {
        builder.startObject();
        builder.field("type", type.typeName());
        for (Map.Entry<String, Integer> entry : parameters.entrySet()) {
            builder.field(entry.getKey(), entry.getValue());
        }
        return builder.endObject();
    }

    @Override
    public String toString() {
        return type.typeName() + parameters;
    }
}
