package org.gpuvectors.yamlrest;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Turns a YAML suite written for {@code dense_vector} (Elasticsearch's own knn suites) into the same suite over
 * {@code gpu_vector}: in the requests of its {@code do} steps that take mappings (index creation, mapping updates,
 * templates), every indexed {@code dense_vector} field becomes a {@code gpu_vector} of the same {@code element_type},
 * {@code dims} and {@code similarity}, with the given index type; the assertions are left as they are, so the suite
 * expects of {@code gpu_vector} exactly what it expects of {@code dense_vector}.
 *
 * <p>What cannot carry over stays {@code dense_vector}: a field mapped with {@code index: false} (not a knn field;
 * {@code gpu_vector} is always indexed). {@code index: true} is dropped (the default of both); {@code index_options} of
 * the index type asked for are kept as given (a suite's bad options stay bad), others (HNSW, quantization) give way to
 * that index type.
 */
final class DenseVectorAsGpuVector {

    /** The APIs whose requests carry mappings; the others (documents, searches) are left alone. */
    private static final Set<String> MAPPING_APIS = Set.of("indices.create", "indices.put_mapping", "indices.put_template",
        "indices.put_index_template", "cluster.put_component_template", "indices.simulate_index_template",
        "indices.simulate_template");

    private final String indexType;

    /** @param indexType the {@code gpu_vector} index type each rewritten field gets ({@code flat}, {@code graph}, ...) */
    DenseVectorAsGpuVector(String indexType) {
        this.indexType = Objects.requireNonNull(indexType);
    }

    /** The file with its setup, teardown and tests rewritten. */
    YamlRunner.YamlFile rewrite(YamlRunner.YamlFile file) {
        List<YamlRunner.YamlTest> tests = file.tests().stream()
            .map(t -> new YamlRunner.YamlTest(t.name(), steps(t.steps())))
            .toList();
        return new YamlRunner.YamlFile(file.path(), file.name(), steps(file.setup()), steps(file.teardown()), tests);
    }

    private List<Object> steps(List<Object> steps) {
        List<Object> out = new ArrayList<>(steps.size());
        for (Object step : steps) {
            if (step instanceof Map<?, ?> m && m.size() == 1 && m.get("do") instanceof Map<?, ?> call) {
                Map<Object, Object> rewritten = new LinkedHashMap<>();
                call.forEach((api, args) -> rewritten.put(api, MAPPING_APIS.contains(String.valueOf(api)) ? value(args) : args));
                out.add(Map.of("do", rewritten));
            } else {
                out.add(step); // assertions: what dense_vector must answer, gpu_vector must answer too
            }
        }
        return out;
    }

    private Object value(Object v) {
        if (v instanceof Map<?, ?> m) {
            if ("dense_vector".equals(m.get("type")) && Boolean.FALSE.equals(indexed(m)) == false) {
                return field(m);
            }
            Map<Object, Object> out = new LinkedHashMap<>();
            m.forEach((k, x) -> out.put(k, value(x)));
            return out;
        }
        if (v instanceof List<?> l) {
            List<Object> out = new ArrayList<>(l.size());
            l.forEach(x -> out.add(value(x)));
            return out;
        }
        return v;
    }

    /** dense_vector's {@code index} parameter (a boolean or its string), null when not given. */
    private static Boolean indexed(Map<?, ?> mapping) {
        Object index = mapping.get("index");
        return index == null ? null : Boolean.valueOf(String.valueOf(index));
    }

    private Map<Object, Object> field(Map<?, ?> mapping) {
        Map<Object, Object> out = new LinkedHashMap<>();
        mapping.forEach((k, v) -> {
            switch (String.valueOf(k)) {
                case "type" -> out.put(k, "gpu_vector");
                case "index", "index_options" -> { }
                default -> out.put(k, v);
            }
        });
        // options of the index type asked for stay as given, bad ones included: the suite's checks of them hold too
        boolean sameType = mapping.get("index_options") instanceof Map<?, ?> options && indexType.equals(options.get("type"));
        out.put("index_options", sameType ? mapping.get("index_options") : Map.of("type", indexType));
        return out;
    }
}
