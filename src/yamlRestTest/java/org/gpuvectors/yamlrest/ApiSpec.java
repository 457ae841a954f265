package org.gpuvectors.yamlrest;

import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The Elasticsearch REST API specs (org.elasticsearch:rest-api-spec, rest-api-spec/api/*.json): turns an API name and
 * its parameters into an HTTP method, a path and query parameters, choosing the path whose parts are all given and
 * that uses the most of them (as Elasticsearch's own YAML runner does).
 */
public final class ApiSpec {

    record UrlPath(String path, List<String> methods, Set<String> parts) {}

    record Api(String name, List<UrlPath> paths, Set<String> params, boolean bodySupported, boolean ndjson) {}

    /** A resolved request. */
    public record Request(String method, String path, Map<String, String> query, boolean ndjson) {}

    /** A parameter that the API does not know ({@code catch: param}). */
    public static final class ParamException extends RuntimeException {
        ParamException(String msg) {
            super(msg);
        }
    }

    private final Map<String, Api> apis;
    private final Set<String> commonParams;

    private ApiSpec(Map<String, Api> apis, Set<String> commonParams) {
        this.apis = apis;
        this.commonParams = commonParams;
    }

    /** Loads the specs from directories of api/*.json files (Elasticsearch's, then the plugin's own APIs). */
    public static ApiSpec load(Path... dirs) throws IOException {
        ObjectMapper json = new ObjectMapper();
        Map<String, Api> apis = new HashMap<>();
        Set<String> common = new LinkedHashSet<>(List.of("pretty", "human", "error_trace", "source", "filter_path"));
        List<Path> files = new ArrayList<>();
        for (Path dir : dirs) {
            try (Stream<Path> s = Files.list(dir)) {
                List<Path> found = s.filter(p -> p.getFileName().toString().endsWith(".json")).sorted().toList();
                if (found.isEmpty()) {
                    throw new IllegalStateException("no REST API specs in " + dir);
                }
                files.addAll(found);
            }
        }
        for (Path f : files) {
            try (InputStream in = Files.newInputStream(f)) {
                Map<?, ?> root = json.readValue(in, Map.class);
                if (f.getFileName().toString().equals("_common.json")) {
                    Object params = root.get("params");
                    if (params instanceof Map<?, ?> m) {
                        m.keySet().forEach(k -> common.add(k.toString()));
                    }
                    continue;
                }
                for (Map.Entry<?, ?> e : root.entrySet()) {
                    apis.put(e.getKey().toString(), parse(e.getKey().toString(), (Map<?, ?>) e.getValue()));
                }
            }
        }
        return new ApiSpec(apis, common);
    }

    private static Api parse(String name, Map<?, ?> def) {
        List<UrlPath> paths = new ArrayList<>();
        Map<?, ?> url = (Map<?, ?>) def.get("url");
        for (Object o : (List<?>) url.get("paths")) {
            Map<?, ?> p = (Map<?, ?>) o;
            Set<String> parts = new LinkedHashSet<>();
            if (p.get("parts") instanceof Map<?, ?> pm) {
                pm.keySet().forEach(k -> parts.add(k.toString()));
            }
            List<String> methods = ((List<?>) p.get("methods")).stream().map(Object::toString).toList();
            paths.add(new UrlPath(p.get("path").toString(), methods, parts));
        }
        Set<String> params = new LinkedHashSet<>();
        if (def.get("params") instanceof Map<?, ?> pm) {
            pm.keySet().forEach(k -> params.add(k.toString()));
        }
        boolean ndjson = false;
        if (def.get("headers") instanceof Map<?, ?> h && h.get("content_type") instanceof List<?> ct) {
            ndjson = ct.stream().anyMatch(c -> c.toString().contains("ndjson"));
        }
        return new Api(name, paths, params, def.get("body") != null, ndjson);
    }

    public boolean has(String api) {
        return apis.containsKey(api);
    }

    /**
     * Resolves an API call. {@code params} values may be strings, numbers, booleans or lists (joined with commas).
     *
     * @throws ParamException when a parameter is unknown to the API
     */
    public Request resolve(String apiName, Map<String, Object> params, boolean hasBody) {
        Api api = apis.get(apiName);
        if (api == null) {
            throw new IllegalArgumentException("unknown API [" + apiName + "] (not in rest-api-spec)");
        }
        Map<String, String> values = new LinkedHashMap<>();
        params.forEach((k, v) -> values.put(k, stringify(v)));
        UrlPath best = null;
        for (UrlPath p : api.paths()) {
            if (values.keySet().containsAll(p.parts()) && (best == null || p.parts().size() > best.parts().size())) {
                best = p;
            }
        }
        if (best == null) {
            throw new IllegalArgumentException("no path of API [" + apiName + "] matches parameters " + values.keySet()
                + "; paths: " + api.paths().stream().map(UrlPath::path).collect(Collectors.joining(", ")));
        }
        String path = best.path();
        for (String part : best.parts()) {
            path = path.replace("{" + part + "}", encodePart(values.get(part)));
        }
        Map<String, String> query = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : values.entrySet()) {
            if (best.parts().contains(e.getKey())) {
                continue;
            }
            boolean isPart = api.paths().stream().anyMatch(p -> p.parts().contains(e.getKey()));
            if (!api.params().contains(e.getKey()) && !commonParams.contains(e.getKey())) {
                throw new ParamException((isPart ? "path part [" : "param [") + e.getKey() + "] not supported by API ["
                    + apiName + "] with the chosen path " + best.path());
            }
            query.put(e.getKey(), e.getValue());
        }
        List<String> methods = best.methods();
        String method = methods.get(0);
        if (hasBody && methods.contains("POST") && (method.equals("GET") || method.equals("DELETE"))) {
            method = "POST";
        }
        if (hasBody && !api.bodySupported()) {
            throw new IllegalArgumentException("API [" + apiName + "] does not take a body");
        }
        return new Request(method, path, query, api.ndjson());
    }

    static String stringify(Object v) {
        if (v instanceof List<?> l) {
            return l.stream().map(ApiSpec::stringify).collect(Collectors.joining(","));
        }
        return String.valueOf(v);
    }

    private static String encodePart(String v) {
        // keep commas (multi-index / multi-id paths) readable; everything else URL-encoded
        StringBuilder sb = new StringBuilder();
        for (String piece : v.split(",", -1)) {
            if (!sb.isEmpty()) {
                sb.append(',');
            }
            sb.append(URLEncoder.encode(piece, StandardCharsets.UTF_8).replace("+", "%20"));
        }
        return sb.toString();
    }

    static ApiSpec loadUnchecked(Path dir) {
        try {
            return load(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
