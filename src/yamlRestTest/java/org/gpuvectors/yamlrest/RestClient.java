package org.gpuvectors.yamlrest;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Minimal HTTP client for a test node (java.net.http). Responses with a JSON body are parsed into maps/lists. */
public final class RestClient {

    static final ObjectMapper JSON = new ObjectMapper();

    private final URI base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final Duration timeout;
    private final String authorization; // null: no Authorization header (a node with security off)

    public RestClient(URI base) {
        this(base, Duration.ofSeconds(Long.parseLong(EsNode.prop("tests.rest.timeout", "300"))));
    }

    public RestClient(URI base, Duration timeout) {
        this(base, timeout, null);
    }

    private RestClient(URI base, Duration timeout, String authorization) {
        this.base = base;
        this.timeout = timeout;
        this.authorization = authorization;
    }

    /** The same client, sending every request as {@code user} (HTTP basic authentication, for a node with security on). */
    public RestClient as(String user, String password) {
        String token = java.util.Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
        return new RestClient(base, timeout, "Basic " + token);
    }

    /** A response: status, headers, raw body, and the parsed JSON body (maps/lists/values) or the text body. */
    public record Response(int status, Map<String, List<String>> headers, String rawBody, Object body) {
        public boolean isError() {
            return status >= 400;
        }

        public Optional<String> header(String name) {
            for (Map.Entry<String, List<String>> e : headers.entrySet()) {
                if (e.getKey().equalsIgnoreCase(name) && !e.getValue().isEmpty()) {
                    return Optional.of(e.getValue().get(0));
                }
            }
            return Optional.empty();
        }

        @SuppressWarnings("unchecked")
        public Map<String, Object> map() {
            if (body instanceof Map<?, ?> m) {
                return (Map<String, Object>) m;
            }
            throw new IllegalStateException("response is not a JSON object: HTTP " + status + " " + rawBody);
        }

        @Override
        public String toString() {
            String b = rawBody == null ? "" : rawBody;
            return "HTTP " + status + " " + (b.length() > 4000 ? b.substring(0, 4000) + "...(" + b.length() + " chars)" : b);
        }
    }

    /**
     * Sends a request. {@code path} may already contain a query string; {@code query} values are URL-encoded and appended.
     * {@code body} is sent as is when it is a String, otherwise serialized as JSON.
     */
    public Response send(String method, String path, Map<String, String> query, Object body, Map<String, String> headers)
        throws IOException, InterruptedException {
        StringBuilder uri = new StringBuilder(path.startsWith("/") ? path : "/" + path);
        if (query != null && !query.isEmpty()) {
            uri.append(uri.indexOf("?") >= 0 ? '&' : '?');
            boolean first = true;
            for (Map.Entry<String, String> e : query.entrySet()) {
                if (!first) {
                    uri.append('&');
                }
                first = false;
                uri.append(URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8));
                if (e.getValue() != null) {
                    uri.append('=').append(URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8));
                }
            }
        }
        HttpRequest.Builder rb = HttpRequest.newBuilder(base.resolve(uri.toString())).timeout(timeout);
        boolean hasContentType = false;
        if (authorization != null && (headers == null || headers.keySet().stream().noneMatch("authorization"::equalsIgnoreCase))) {
            rb.header("Authorization", authorization);
        }
        if (headers != null) {
            for (Map.Entry<String, String> h : headers.entrySet()) {
                rb.header(h.getKey(), h.getValue());
                hasContentType |= h.getKey().equalsIgnoreCase("content-type");
            }
        }
        if (body == null) {
            rb.method(method, HttpRequest.BodyPublishers.noBody());
        } else {
            String text = body instanceof String s ? s : toJson(body);
            if (!hasContentType) {
                rb.header("Content-Type", "application/json");
            }
            rb.method(method, HttpRequest.BodyPublishers.ofString(text, StandardCharsets.UTF_8));
        }
        HttpResponse<String> r = http.send(rb.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        String raw = r.body();
        Object parsed = raw;
        String ct = r.headers().firstValue("content-type").orElse("");
        if (method.equals("HEAD")) {
            parsed = r.statusCode() == 200;
        } else if (ct.contains("json") && raw != null && !raw.isEmpty()) {
            try {
                parsed = JSON.readValue(raw, Object.class);
            } catch (JsonProcessingException e) {
                parsed = raw;
            }
        }
        return new Response(r.statusCode(), r.headers().map(), raw, parsed);
    }

    /** Sends a request and fails unless the status is 2xx. */
    public Response ok(String method, String path, Object body) throws IOException, InterruptedException {
        Response r = send(method, path, null, body, null);
        if (r.status() / 100 != 2) {
            throw new AssertionError(method + " " + path + " failed: " + r);
        }
        return r;
    }

    public static String toJson(Object o) {
        try {
            return JSON.writeValueAsString(o);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Convenience: builds a map from alternating keys and values. */
    public static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }
}
