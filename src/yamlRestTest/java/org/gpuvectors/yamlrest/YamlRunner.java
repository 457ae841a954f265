package org.gpuvectors.yamlrest;

import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import org.opentest4j.TestAbortedException;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A small implementation of Elasticsearch's YAML REST test DSL (the format of rest-api-spec/test/**.yml).
 *
 * <p>File: YAML documents, each a map with one key: {@code setup}, {@code teardown} or a test name, whose value is a list
 * of steps. Steps: {@code do} (API call from the REST specs, with {@code body}, {@code catch}, {@code headers},
 * {@code ignore}; {@code warnings}/{@code allowed_warnings} are accepted and not checked), {@code match}, {@code length},
 * {@code set}, {@code is_true}, {@code is_false}, {@code gt}, {@code gte}, {@code lt}, {@code lte}, {@code close_to},
 * {@code contains}, {@code skip}/{@code requires} (runner features, {@code cluster_features}, {@code capabilities}:
 * {@link NodeRequirements}). Paths are dotted ({@code hits.hits.0._id}, {@code \.} escapes a dot,
 * {@code $body} is the whole response); {@code $name} / {@code ${name}} use values stored by {@code set}.
 */
public final class YamlRunner {

    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static final Set<String> DO_KEYWORDS = Set.of("catch", "headers", "warnings", "allowed_warnings", "warnings_regex",
        "allowed_warnings_regex", "node_selector");
    /** Features of the ES runner this one implements; a test requiring another feature is skipped. */
    private static final Set<String> SUPPORTED_FEATURES = Set.of("headers", "warnings", "allowed_warnings", "warnings_regex",
        "allowed_warnings_regex", "close_to", "contains", "stash_in_path", "stash_in_key", "default_shards", "yaml", "gtelte",
        "is_after", "arbitrary_key", "capabilities");
    private static final Map<String, Integer> CATCHES = Map.of("bad_request", 400, "unauthorized", 401, "forbidden", 403,
        "missing", 404, "request_timeout", 408, "conflict", 409, "unavailable", 503);

    /** A parsed YAML test file. */
    public record YamlFile(Path path, String name, List<Object> setup, List<Object> teardown, List<YamlTest> tests) {}

    public record YamlTest(String name, List<Object> steps) {}

    private final RestClient client;
    private final ApiSpec spec;
    private final NodeRequirements node;
    private Boolean gpuActive; // the node's, asked once (nodeFeature)

    public YamlRunner(RestClient client, ApiSpec spec) {
        this.client = client;
        this.spec = spec;
        this.node = new NodeRequirements(client);
    }

    // ------------------------------------------------------------------ parsing

    public static YamlFile parse(Path file, String name) throws IOException {
        List<Object> setup = List.of();
        List<Object> teardown = List.of();
        List<YamlTest> tests = new ArrayList<>();
        try (MappingIterator<Object> it = YAML.readerFor(Object.class).readValues(file.toFile())) {
            while (it.hasNext()) {
                Object doc = it.next();
                if (doc == null) {
                    continue;
                }
                if (!(doc instanceof Map<?, ?> m) || m.size() != 1) {
                    throw new IllegalArgumentException(file + ": each YAML document must be a map with exactly one key, got " + doc);
                }
                Map.Entry<?, ?> e = m.entrySet().iterator().next();
                String key = e.getKey().toString();
                if (!(e.getValue() instanceof List<?> steps)) {
                    throw new IllegalArgumentException(file + ": section [" + key + "] must be a list of steps");
                }
                @SuppressWarnings("unchecked")
                List<Object> s = (List<Object>) steps;
                switch (key) {
                    case "setup" -> setup = s;
                    case "teardown" -> teardown = s;
                    default -> tests.add(new YamlTest(key, s));
                }
            }
        }
        return new YamlFile(file, name, setup, teardown, tests);
    }

    // ------------------------------------------------------------------ execution

    /** Runs one test: setup, the test's steps, teardown. Throws AssertionError on failure, TestAbortedException if skipped. */
    public void run(YamlFile file, YamlTest test) throws Exception {
        Context ctx = new Context();
        checkSkip(file.setup(), "setup of " + file.name());
        checkSkip(test.steps(), test.name());
        try {
            execute(ctx, file.setup(), "setup");
            execute(ctx, test.steps(), test.name());
        } finally {
            try {
                execute(ctx, file.teardown(), "teardown");
            } catch (Exception | AssertionError e) {
                System.out.println("[yamlrest] teardown of " + file.name() + " failed: " + e);
            }
        }
    }

    private static final class Context {
        final Map<String, Object> stash = new HashMap<>();
        RestClient.Response last;
    }

    private void checkSkip(List<Object> steps, String where) throws Exception {
        for (Object o : steps) {
            Map<?, ?> step = asStep(o);
            Object skip = step.get("skip");
            Object requires = step.get("requires");
            if (skip instanceof Map<?, ?> m) {
                String reason = String.valueOf(m.get("reason"));
                if (m.containsKey("awaits_fix") || "all".equals(String.valueOf(m.get("version")))
                    || (m.get("cluster_features") != null && node.hasClusterFeatures(m.get("cluster_features")))) {
                    throw new TestAbortedException("skipped (" + where + "): " + reason);
                }
                unsupported(m.get("features"), where);
            }
            if (requires instanceof Map<?, ?> m) {
                unsupported(m.get("test_runner_features"), where);
                if (m.get("cluster_features") != null && node.hasClusterFeatures(m.get("cluster_features")) == false) {
                    throw new TestAbortedException("skipped (" + where + "): the node lacks cluster features "
                        + NodeRequirements.list(m.get("cluster_features")) + " (" + m.get("reason") + ")");
                }
                String missing = m.get("capabilities") == null ? null : node.missingCapability(m.get("capabilities"));
                if (missing != null) {
                    throw new TestAbortedException("skipped (" + where + "): a capability the node lacks: " + missing);
                }
            }
        }
    }

    private void unsupported(Object features, String where) throws Exception {
        List<String> list = features == null ? List.of()
            : features instanceof List<?> l ? l.stream().map(String::valueOf).toList() : List.of(String.valueOf(features));
        for (String f : list) {
            if (!SUPPORTED_FEATURES.contains(f) && !nodeFeature(f)) {
                throw new TestAbortedException("skipped (" + where + "): " + (f.equals("gpu") || f.equals("no_gpu")
                    ? "for a node " + (f.equals("gpu") ? "with" : "without") + " a GPU" : "runner feature [" + f + "] is not supported"));
            }
        }
    }

    /**
     * Features of the node under test rather than of the runner, so that one suite holds with and without a GPU:
     * {@code gpu} (the nodes search on a GPU) and {@code no_gpu} (they do not), from {@code GET _gpu_vectors/stats}.
     * A test that lists one the node lacks is skipped, saying so.
     */
    private boolean nodeFeature(String feature) throws Exception {
        if (!feature.equals("gpu") && !feature.equals("no_gpu")) {
            return false;
        }
        if (gpuActive == null) {
            RestClient.Response stats = client.ok("GET", "/_gpu_vectors/stats", null);
            // total.gpu.active_nodes: the nodes with a usable GPU (a cluster under test has all or none)
            Object active = stats.body() instanceof Map<?, ?> m && m.get("total") instanceof Map<?, ?> t
                && t.get("gpu") instanceof Map<?, ?> g ? g.get("active_nodes") : null;
            gpuActive = active instanceof Number n && n.intValue() > 0;
        }
        return feature.equals("gpu") == gpuActive;
    }

    private static Map<?, ?> asStep(Object o) {
        if (!(o instanceof Map<?, ?> m) || m.size() != 1) {
            throw new IllegalArgumentException("a step must be a map with one key, got: " + o);
        }
        return m;
    }

    private void execute(Context ctx, List<Object> steps, String section) throws Exception {
        int i = 0;
        for (Object o : steps) {
            i++;
            Map<?, ?> step = asStep(o);
            Map.Entry<?, ?> e = step.entrySet().iterator().next();
            String kind = e.getKey().toString();
            try {
                switch (kind) {
                    case "skip", "requires" -> { }
                    case "do" -> doStep(ctx, (Map<?, ?>) e.getValue());
                    case "set" -> forEach(e.getValue(), (path, name) -> ctx.stash.put(String.valueOf(name), eval(ctx, path)));
                    case "match" -> forEach(e.getValue(), (path, expected) -> match(ctx, path, expected));
                    case "length" -> forEach(e.getValue(), (path, expected) -> length(ctx, path, expected));
                    case "is_true" -> isTrue(ctx, String.valueOf(e.getValue()), true);
                    case "is_false" -> isTrue(ctx, String.valueOf(e.getValue()), false);
                    case "gt", "gte", "lt", "lte" -> forEach(e.getValue(), (path, expected) -> compare(ctx, kind, path, expected));
                    case "close_to" -> forEach(e.getValue(), (path, spec) -> closeTo(ctx, path, spec));
                    case "contains" -> forEach(e.getValue(), (path, expected) -> contains(ctx, path, expected));
                    default -> throw new IllegalArgumentException("unsupported step [" + kind + "]");
                }
            } catch (AssertionError | RuntimeException ex) {
                String msg = "[" + section + "] step " + i + " " + kind + " " + RestClient.toJson(e.getValue()) + " failed: " + ex.getMessage()
                    + (ctx.last != null && !kind.equals("do") ? "\n  last response: " + ctx.last : "");
                AssertionError ae = new AssertionError(msg, ex);
                throw ae;
            }
        }
    }

    private interface PathAction {
        void apply(String path, Object value) throws Exception;
    }

    private static void forEach(Object args, PathAction action) throws Exception {
        if (!(args instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException("expected a map of path: value, got " + args);
        }
        for (Map.Entry<?, ?> e : m.entrySet()) {
            action.apply(String.valueOf(e.getKey()), e.getValue());
        }
    }

    @SuppressWarnings("unchecked")
    private void doStep(Context ctx, Map<?, ?> def) throws Exception {
        String catchSpec = def.get("catch") == null ? null : String.valueOf(def.get("catch"));
        Map<String, String> headers = new LinkedHashMap<>();
        if (def.get("headers") instanceof Map<?, ?> h) {
            h.forEach((k, v) -> headers.put(String.valueOf(k), String.valueOf(resolveStash(ctx, v))));
        }
        String apiName = null;
        Object apiArgs = null;
        for (Map.Entry<?, ?> e : def.entrySet()) {
            if (!DO_KEYWORDS.contains(e.getKey().toString())) {
                if (apiName != null) {
                    throw new IllegalArgumentException("a do step calls exactly one API, got [" + apiName + "] and [" + e.getKey() + "]");
                }
                apiName = e.getKey().toString();
                apiArgs = e.getValue();
            }
        }
        if (apiName == null) {
            throw new IllegalArgumentException("do step without an API: " + def);
        }
        Map<String, Object> params = new LinkedHashMap<>();
        if (apiArgs instanceof Map<?, ?> m) {
            ((Map<String, Object>) m).forEach((k, v) -> params.put(k, resolveStash(ctx, v)));
        }
        Object body = params.remove("body");
        Object ignore = params.remove("ignore");
        ApiSpec.Request req;
        try {
            req = spec.resolve(apiName, params, body != null);
        } catch (ApiSpec.ParamException pe) {
            if ("param".equals(catchSpec)) {
                return;
            }
            throw pe;
        }
        if ("param".equals(catchSpec)) {
            throw new AssertionError("expected a param error (unknown parameter) but the call was valid: " + apiName + " " + params);
        }
        Object sendBody = null;
        if (body != null) {
            if (req.ndjson()) {
                sendBody = ndjson(body);
                headers.putIfAbsent("Content-Type", "application/x-ndjson");
            } else {
                sendBody = body instanceof String s ? s : RestClient.toJson(body);
            }
        }
        RestClient.Response r = client.send(req.method(), req.path(), req.query(), sendBody, headers);
        ctx.last = r;
        ctx.stash.put("body", r.body());
        String call = req.method() + " " + req.path() + (req.query().isEmpty() ? "" : " " + req.query());
        Set<Integer> ignored = new java.util.HashSet<>();
        if (ignore != null) {
            for (Object o : ignore instanceof List<?> l ? l : List.of(ignore)) {
                ignored.add(Integer.parseInt(String.valueOf(o)));
            }
        }
        if (catchSpec == null) {
            boolean headMissing = req.method().equals("HEAD") && r.status() == 404;
            if (r.isError() && !headMissing && !ignored.contains(r.status())) {
                throw new AssertionError(apiName + " (" + call + ") failed: " + r);
            }
            return;
        }
        if (!r.isError()) {
            throw new AssertionError(apiName + " (" + call + ") expected to fail with [" + catchSpec + "] but got " + r);
        }
        Integer code = CATCHES.get(catchSpec);
        if (code != null) {
            if (r.status() != code) {
                throw new AssertionError(apiName + " (" + call + ") expected status " + code + " (" + catchSpec + ") but got " + r);
            }
        } else if (catchSpec.equals("request")) {
            if (Set.of(400, 401, 403, 404, 408, 409).contains(r.status())) {
                throw new AssertionError(apiName + " (" + call + ") [catch: request] matches 4xx/5xx other than 400/401/403/404/408/409, got " + r);
            }
        } else if (isRegex(catchSpec)) {
            Pattern p = regex(catchSpec);
            if (!p.matcher(r.rawBody() == null ? "" : r.rawBody()).find()) {
                throw new AssertionError(apiName + " (" + call + ") error does not match " + catchSpec + ": " + r);
            }
        } else {
            throw new IllegalArgumentException("unknown catch [" + catchSpec + "]");
        }
    }

    private static String ndjson(Object body) {
        if (body instanceof String s) {
            return s.endsWith("\n") ? s : s + "\n";
        }
        if (body instanceof List<?> l) {
            StringBuilder sb = new StringBuilder();
            for (Object line : l) {
                String text = line instanceof String s ? s.strip() : RestClient.toJson(line);
                sb.append(text).append('\n');
            }
            return sb.toString();
        }
        return RestClient.toJson(body) + "\n";
    }

    // ------------------------------------------------------------------ stash & paths

    private static final Pattern STASH_IN_STRING = Pattern.compile("\\$\\{([^}]+)}");

    /** Replaces "$name" values and "${name}" inside strings (and map keys) with stashed values. */
    private static Object resolveStash(Context ctx, Object v) {
        if (v instanceof String s) {
            if (s.startsWith("$") && !s.startsWith("${") && s.length() > 1) {
                String key = s.substring(1);
                if (!ctx.stash.containsKey(key)) {
                    throw new IllegalArgumentException("stashed value [" + key + "] not found");
                }
                return ctx.stash.get(key);
            }
            if (s.contains("${")) {
                Matcher m = STASH_IN_STRING.matcher(s);
                StringBuilder sb = new StringBuilder();
                while (m.find()) {
                    Object val = ctx.stash.get(m.group(1));
                    if (val == null) {
                        throw new IllegalArgumentException("stashed value [" + m.group(1) + "] not found");
                    }
                    m.appendReplacement(sb, Matcher.quoteReplacement(String.valueOf(val)));
                }
                m.appendTail(sb);
                return sb.toString();
            }
            return s;
        }
        if (v instanceof Map<?, ?> m) {
            Map<Object, Object> out = new LinkedHashMap<>();
            m.forEach((k, val) -> out.put(resolveStash(ctx, k), resolveStash(ctx, val)));
            return out;
        }
        if (v instanceof List<?> l) {
            return l.stream().map(x -> resolveStash(ctx, x)).collect(Collectors.toList());
        }
        return v;
    }

    private static Object eval(Context ctx, String path) {
        if (ctx.last == null) {
            throw new IllegalStateException("no response yet to evaluate [" + path + "] on");
        }
        Object cur = ctx.last.body();
        if (path.isEmpty() || path.equals("$body")) {
            return cur;
        }
        for (String raw : path.split("(?<!\\\\)\\.")) {
            String part = raw.replace("\\.", ".");
            if (part.startsWith("$") && part.length() > 1) {
                Object stashed = ctx.stash.get(part.substring(1));
                if (stashed == null) {
                    throw new IllegalArgumentException("stashed value [" + part.substring(1) + "] not found");
                }
                part = String.valueOf(stashed);
            }
            if (cur instanceof Map<?, ?> m && part.equals("_arbitrary_key_")) {
                if (m.isEmpty()) {
                    throw new AssertionError("path [" + path + "]: no key to pick for _arbitrary_key_");
                }
                return m.keySet().iterator().next(); // as in Elasticsearch's runner: the key itself, ends the path
            } else if (cur instanceof Map<?, ?> m) {
                cur = m.get(part);
            } else if (cur instanceof List<?> l) {
                int idx;
                try {
                    idx = Integer.parseInt(part);
                } catch (NumberFormatException e) {
                    throw new AssertionError("path [" + path + "]: [" + part + "] is not an index into a list");
                }
                cur = idx >= 0 && idx < l.size() ? l.get(idx) : null;
            } else {
                return null;
            }
            if (cur == null) {
                return null;
            }
        }
        return cur;
    }

    // ------------------------------------------------------------------ assertions

    private static boolean isRegex(Object o) {
        return o instanceof String s && s.length() > 1 && s.trim().startsWith("/") && s.trim().endsWith("/");
    }

    private static Pattern regex(String s) {
        String t = s.trim();
        return Pattern.compile(t.substring(1, t.length() - 1), Pattern.COMMENTS);
    }

    private static void match(Context ctx, String path, Object expectedRaw) {
        Object actual = eval(ctx, path);
        Object expected = resolveStash(ctx, expectedRaw);
        if (isRegex(expected)) {
            if (actual == null) {
                throw new AssertionError("[" + path + "] is missing, expected to match " + expected);
            }
            String text = actual instanceof String s ? s : RestClient.toJson(actual);
            if (!regex((String) expected).matcher(text).find()) {
                throw new AssertionError("[" + path + "] = " + abbreviate(text) + " does not match " + expected);
            }
            return;
        }
        if (!deepEquals(expected, actual)) {
            throw new AssertionError("[" + path + "]: expected " + RestClient.toJson(expected) + " but was " + abbreviate(RestClient.toJson(actual)));
        }
    }

    private static boolean deepEquals(Object expected, Object actual) {
        if (expected == null || actual == null) {
            return expected == actual;
        }
        if (expected instanceof Number a && actual instanceof Number b) {
            return numericCompare(a, b) == 0;
        }
        if (expected instanceof Map<?, ?> em && actual instanceof Map<?, ?> am) {
            if (em.size() != am.size()) {
                return false;
            }
            for (Map.Entry<?, ?> e : em.entrySet()) {
                if (!am.containsKey(String.valueOf(e.getKey())) || !deepEquals(e.getValue(), am.get(String.valueOf(e.getKey())))) {
                    return false;
                }
            }
            return true;
        }
        if (expected instanceof List<?> el && actual instanceof List<?> al) {
            if (el.size() != al.size()) {
                return false;
            }
            for (int i = 0; i < el.size(); i++) {
                if (!deepEquals(el.get(i), al.get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (expected instanceof String s && !(actual instanceof String) && !(actual instanceof Map) && !(actual instanceof List)) {
            return s.equals(String.valueOf(actual)); // e.g. match: {count: "3"} or booleans as strings
        }
        return Objects.equals(expected, actual);
    }

    /** For {@code contains}: every key of an expected map is in the actual map with an equal value. */
    private static boolean subsetEquals(Object expected, Object actual) {
        if (expected instanceof Map<?, ?> em && actual instanceof Map<?, ?> am) {
            return em.entrySet().stream().allMatch(e -> deepEquals(e.getValue(), am.get(String.valueOf(e.getKey()))));
        }
        return deepEquals(expected, actual);
    }

    private static int numericCompare(Number a, Number b) {
        try {
            return new BigDecimal(a.toString()).compareTo(new BigDecimal(b.toString()));
        } catch (NumberFormatException e) {
            return Double.compare(a.doubleValue(), b.doubleValue());
        }
    }

    private static void length(Context ctx, String path, Object expectedRaw) {
        Object actual = eval(ctx, path);
        int expected = ((Number) resolveStash(ctx, expectedRaw)).intValue();
        int len;
        if (actual instanceof List<?> l) {
            len = l.size();
        } else if (actual instanceof Map<?, ?> m) {
            len = m.size();
        } else if (actual instanceof String s) {
            len = s.length();
        } else {
            throw new AssertionError("[" + path + "] has no length: " + RestClient.toJson(actual));
        }
        if (len != expected) {
            throw new AssertionError("[" + path + "]: expected length " + expected + " but was " + len + ": " + abbreviate(RestClient.toJson(actual)));
        }
    }

    private static void isTrue(Context ctx, String path, boolean wantTrue) {
        Object actual = eval(ctx, path);
        boolean falsy = actual == null || Boolean.FALSE.equals(actual) || "".equals(actual) || "false".equals(actual)
            || "0".equals(String.valueOf(actual)) || (actual instanceof Number n && n.doubleValue() == 0);
        if (wantTrue && falsy) {
            throw new AssertionError("[" + path + "] expected to be true-ish but was " + RestClient.toJson(actual));
        }
        if (!wantTrue && !falsy) {
            throw new AssertionError("[" + path + "] expected to be false-ish/missing but was " + abbreviate(RestClient.toJson(actual)));
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void compare(Context ctx, String op, String path, Object expectedRaw) {
        Object actual = eval(ctx, path);
        Object expected = resolveStash(ctx, expectedRaw);
        if (actual == null) {
            throw new AssertionError("[" + path + "] is missing (" + op + " " + expected + ")");
        }
        int c;
        if (actual instanceof Number a && expected instanceof Number b) {
            c = numericCompare(a, b);
        } else if (actual instanceof Comparable a && expected != null && a.getClass() == expected.getClass()) {
            c = a.compareTo(expected);
        } else {
            throw new AssertionError("[" + path + "] = " + actual + " is not comparable with " + expected);
        }
        boolean ok = switch (op) {
            case "gt" -> c > 0;
            case "gte" -> c >= 0;
            case "lt" -> c < 0;
            default -> c <= 0;
        };
        if (!ok) {
            throw new AssertionError("[" + path + "] = " + actual + " is not " + op + " " + expected);
        }
    }

    private static void closeTo(Context ctx, String path, Object specRaw) {
        Object actual = eval(ctx, path);
        if (!(resolveStash(ctx, specRaw) instanceof Map<?, ?> spec) || !(spec.get("value") instanceof Number value)) {
            throw new IllegalArgumentException("close_to needs {value: number, error: number}, got " + specRaw);
        }
        double error = spec.get("error") instanceof Number e ? e.doubleValue() : 1e-6;
        if (!(actual instanceof Number a)) {
            throw new AssertionError("[" + path + "] = " + RestClient.toJson(actual) + " is not a number (close_to " + value + ")");
        }
        if (Math.abs(a.doubleValue() - value.doubleValue()) > error) {
            throw new AssertionError("[" + path + "] = " + a + " is not within " + error + " of " + value);
        }
    }

    private static void contains(Context ctx, String path, Object expectedRaw) {
        Object actual = eval(ctx, path);
        Object expected = resolveStash(ctx, expectedRaw);
        if (!(actual instanceof List<?> l)) {
            throw new AssertionError("[" + path + "] is not a list: " + abbreviate(RestClient.toJson(actual)));
        }
        if (l.stream().noneMatch(x -> subsetEquals(expected, x))) {
            throw new AssertionError("[" + path + "] does not contain " + RestClient.toJson(expected) + ": " + abbreviate(RestClient.toJson(actual)));
        }
    }

    private static String abbreviate(String s) {
        return s.length() > 2000 ? s.substring(0, 2000) + "...(" + s.length() + " chars)" : s;
    }

    // ------------------------------------------------------------------ cleanup between tests

    /** Deletes all non-system indices and all index/component/legacy templates whose names do not start with a dot. */
    public void wipeCluster() throws Exception {
        RestClient.Response r = client.send("GET", "/_cat/indices", Map.of("format", "json", "h", "index", "expand_wildcards", "all"), null, null);
        if (r.status() == 200 && r.body() instanceof List<?> rows) {
            List<String> names = new ArrayList<>();
            for (Object row : rows) {
                String idx = String.valueOf(((Map<?, ?>) row).get("index"));
                if (!idx.startsWith(".")) {
                    names.add(idx);
                }
            }
            for (int i = 0; i < names.size(); i += 50) {
                String batch = String.join(",", names.subList(i, Math.min(names.size(), i + 50)));
                RestClient.Response d = client.send("DELETE", "/" + batch, Map.of("expand_wildcards", "all", "ignore_unavailable", "true"), null, null);
                if (d.isError()) {
                    System.out.println("[yamlrest] could not delete indices " + batch + ": " + d);
                }
            }
        }
        deleteTemplates("/_index_template", "index_templates");
        deleteTemplates("/_component_template", "component_templates");
        RestClient.Response legacy = client.send("GET", "/_template", null, null, null);
        if (legacy.status() == 200 && legacy.body() instanceof Map<?, ?> m) {
            for (Object name : m.keySet()) {
                if (!name.toString().startsWith(".")) {
                    client.send("DELETE", "/_template/" + name, null, null, null);
                }
            }
        }
    }

    private void deleteTemplates(String endpoint, String listKey) throws Exception {
        RestClient.Response r = client.send("GET", endpoint, null, null, null);
        if (r.status() != 200 || !(r.body() instanceof Map<?, ?> m) || !(m.get(listKey) instanceof List<?> list)) {
            return;
        }
        for (Object t : list) {
            Map<?, ?> tm = (Map<?, ?>) t;
            String name = String.valueOf(tm.get("name"));
            Object inner = tm.get(listKey.equals("index_templates") ? "index_template" : "component_template");
            boolean managed = inner instanceof Map<?, ?> im && im.get("_meta") instanceof Map<?, ?> meta && Boolean.TRUE.equals(meta.get("managed"));
            if (!name.startsWith(".") && !managed) {
                RestClient.Response d = client.send("DELETE", endpoint + "/" + name, null, null, null);
                if (d.isError() && d.status() != 404) {
                    System.out.println("[yamlrest] could not delete template " + name + ": " + d);
                }
            }
        }
    }
}
