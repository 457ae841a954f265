package org.gpuvectors.yamlrest;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.zip.GZIPInputStream;

/**
 * The demo behind ./demo.sh: starts a local Elasticsearch node with the plugin installed, loads a small data set into a
 * {@code gpu_vector} field, runs a few knn queries, prints hits and timings, and stops the node.
 *
 * <p>Data: Fashion-MNIST from Debian's dataset-fashion-mnist package (/usr/share/datasets/fashion-mnist, gzipped IDX
 * files: 28x28 unsigned-byte images, one byte per label), each image a 784-dim float vector of pixel values (as in
 * ann-benchmarks' fashion-mnist-784-euclidean) scaled to [0, 1], its class as a keyword; queries are test images. Without the package:
 * synthetic clustered data, with a clear message.
 *
 * <p>Options: {@code --docs N} (10000), {@code --queries N} (5), {@code --k N} (10), {@code --num-candidates N} (100),
 * {@code --index-options TYPE} (flat), {@code --similarity S} (l2_norm), {@code --data DIR}.
 */
public final class Demo {

    private static final String[] LABELS = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
        "Bag", "Ankle boot"};

    record Dataset(String name, float[][] train, int[] trainLabels, float[][] test, int[] testLabels) {}

    public static void main(String[] args) throws Exception {
        int docs = 10_000, queries = 5, k = 10, numCandidates = 100;
        String indexOptions = "flat", similarity = "l2_norm";
        Path dataDir = Path.of("/usr/share/datasets/fashion-mnist");
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--docs" -> docs = Integer.parseInt(args[++i]);
                case "--queries" -> queries = Integer.parseInt(args[++i]);
                case "--k" -> k = Integer.parseInt(args[++i]);
                case "--num-candidates" -> numCandidates = Integer.parseInt(args[++i]);
                case "--index-options" -> indexOptions = args[++i];
                case "--similarity" -> similarity = args[++i];
                case "--data" -> dataDir = Path.of(args[++i]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        Dataset data = load(dataDir, docs, queries);
        boolean plugin = !"none".equals(EsNode.prop("tests.plugin.zip", ""));
        String type = plugin ? "gpu_vector" : "dense_vector";
        if (!plugin) {
            System.out.println("NOTE: no plugin zip (tests.plugin.zip=none): using Elasticsearch's dense_vector instead of gpu_vector");
        }

        long t0 = System.nanoTime();
        try (EsNode node = EsNode.fromSystemProperties()) {
            node.start();
            RestClient client = new RestClient(node.baseUri());
            Map<String, Object> vec = RestClient.map("type", type, "dims", data.train()[0].length, "similarity", similarity);
            if (plugin) {
                vec.put("index_options", RestClient.map("type", indexOptions));
            }
            client.ok("PUT", "/demo", RestClient.map(
                "settings", RestClient.map("number_of_shards", 1, "number_of_replicas", 0, "refresh_interval", "-1"),
                "mappings", RestClient.map("properties", RestClient.map("image", vec, "label", RestClient.map("type", "keyword")))));
            System.out.printf(Locale.ROOT, "index 'demo': %s field 'image' (dims %d, %s, index_options %s)%n", type,
                data.train()[0].length, similarity, plugin ? indexOptions : "ES default");

            long ti = System.nanoTime();
            int batch = 500;
            for (int from = 0; from < data.train().length; from += batch) {
                StringBuilder bulk = new StringBuilder();
                int to = Math.min(data.train().length, from + batch);
                for (int i = from; i < to; i++) {
                    bulk.append("{\"index\":{\"_id\":\"").append(i).append("\"}}\n");
                    bulk.append(RestClient.toJson(RestClient.map("image", data.train()[i], "label", LABELS[data.trainLabels()[i]])))
                        .append('\n');
                }
                RestClient.Response r = client.send("POST", "/demo/_bulk", null, bulk.toString(), Map.of("Content-Type", "application/x-ndjson"));
                if (r.status() != 200 || Boolean.TRUE.equals(r.map().get("errors"))) {
                    throw new IllegalStateException("bulk failed: " + r);
                }
                System.out.printf(Locale.ROOT, "\r  indexed %d / %d docs (%.1f s)", to, data.train().length, (System.nanoTime() - ti) / 1e9);
                System.out.flush();
            }
            System.out.println();
            client.ok("POST", "/demo/_refresh", null);
            double indexSeconds = (System.nanoTime() - ti) / 1e9;
            long tm = System.nanoTime();
            client.ok("POST", "/demo/_forcemerge?max_num_segments=1", null);
            double mergeSeconds = (System.nanoTime() - tm) / 1e9;
            System.out.printf(Locale.ROOT, "indexing: %d docs in %.1f s (%.0f docs/s, incl. refresh); force merge to 1 segment: %.1f s%n",
                data.train().length, indexSeconds, data.train().length / indexSeconds, mergeSeconds);

            List<Double> latencies = new ArrayList<>();
            double recallSum = 0;
            for (int q = 0; q < data.test().length; q++) {
                Map<String, Object> body = RestClient.map(
                    "knn", RestClient.map("field", "image", "query_vector", data.test()[q], "k", k, "num_candidates", numCandidates),
                    "_source", false, "fields", List.of("label"), "size", k);
                client.ok("POST", "/demo/_search", body); // warm-up (first query loads the segment)
                long tq = System.nanoTime();
                RestClient.Response r = client.ok("POST", "/demo/_search", body);
                double ms = (System.nanoTime() - tq) / 1e6;
                latencies.add(ms);
                Set<String> exact = exactTopK(data.train(), data.test()[q], k);
                List<?> hits = (List<?>) ((Map<?, ?>) r.map().get("hits")).get("hits");
                int found = 0;
                System.out.printf(Locale.ROOT, "%nquery %d: test image %d, label %s (%.1f ms, server took %s ms)%n", q + 1, q,
                    LABELS[data.testLabels()[q]], ms, r.map().get("took"));
                for (Object h : hits) {
                    Map<?, ?> hit = (Map<?, ?>) h;
                    String id = String.valueOf(hit.get("_id"));
                    if (exact.contains(id)) {
                        found++;
                    }
                    Object label = ((List<?>) ((Map<?, ?>) hit.get("fields")).get("label")).get(0);
                    System.out.printf(Locale.ROOT, "  id %-6s label %-12s score %.6f%s%n", id, label,
                        ((Number) hit.get("_score")).doubleValue(), exact.contains(id) ? "" : "  (not in exact top-" + k + ")");
                }
                double recall = found / (double) Math.min(k, data.train().length);
                recallSum += recall;
                System.out.printf(Locale.ROOT, "  recall@%d vs exact brute force: %.2f%n", k, recall);
            }
            double[] sorted = latencies.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            System.out.printf(Locale.ROOT, "%nsummary: data %s, %d docs, %d queries, k=%d, num_candidates=%d%n", data.name(),
                data.train().length, sorted.length, k, numCandidates);
            System.out.printf(Locale.ROOT, "  node start %.1f s, indexing %.1f s, query latency mean %.1f ms / median %.1f ms / max %.1f ms,"
                    + " mean recall@%d %.3f%n", node.lastStartSeconds(), indexSeconds, Arrays.stream(sorted).average().orElse(0),
                sorted[sorted.length / 2], sorted[sorted.length - 1], k, recallSum / sorted.length);
        }
        System.out.printf(Locale.ROOT, "demo done in %.1f s (node stopped)%n", (System.nanoTime() - t0) / 1e9);
    }

    private static Set<String> exactTopK(float[][] train, float[] q, int k) {
        Integer[] idx = new Integer[train.length];
        double[] dist = new double[train.length];
        for (int i = 0; i < train.length; i++) {
            idx[i] = i;
            double d = 0;
            for (int j = 0; j < q.length; j++) {
                double x = train[i][j] - q[j];
                d += x * x;
            }
            dist[i] = d;
        }
        Arrays.sort(idx, (a, b) -> Double.compare(dist[a], dist[b]));
        Set<String> out = new HashSet<>();
        for (int i = 0; i < Math.min(k, idx.length); i++) {
            out.add(Integer.toString(idx[i]));
        }
        return out;
    }

    static Dataset load(Path dir, int docs, int queries) throws IOException {
        Path trainImages = dir.resolve("train-images-idx3-ubyte.gz");
        if (Files.isReadable(trainImages)) {
            long t0 = System.nanoTime();
            float[][] train = readImages(trainImages, docs);
            int[] trainLabels = readLabels(dir.resolve("train-labels-idx1-ubyte.gz"), train.length);
            float[][] test = readImages(dir.resolve("t10k-images-idx3-ubyte.gz"), queries);
            int[] testLabels = readLabels(dir.resolve("t10k-labels-idx1-ubyte.gz"), test.length);
            System.out.printf(Locale.ROOT, "loaded Fashion-MNIST from %s: %d train + %d test images of %d dims (%.1f s)%n", dir,
                train.length, test.length, train[0].length, (System.nanoTime() - t0) / 1e9);
            return new Dataset("Fashion-MNIST", train, trainLabels, test, testLabels);
        }
        System.out.println("WARNING: Fashion-MNIST not found at " + dir + " (Debian package dataset-fashion-mnist: apt-get install"
            + " dataset-fashion-mnist). Using SYNTHETIC clustered data instead (784 dims, 10 clusters).");
        Random r = new Random(7);
        int dims = 784;
        float[][] centers = new float[10][dims];
        for (float[] c : centers) {
            for (int j = 0; j < dims; j++) {
                c[j] = r.nextFloat();
            }
        }
        float[][] train = new float[docs][];
        int[] trainLabels = new int[docs];
        float[][] test = new float[queries][];
        int[] testLabels = new int[queries];
        for (int i = 0; i < docs + queries; i++) {
            int c = r.nextInt(10);
            float[] v = new float[dims];
            for (int j = 0; j < dims; j++) {
                v[j] = centers[c][j] + (float) r.nextGaussian() * 0.1f;
            }
            if (i < docs) {
                train[i] = v;
                trainLabels[i] = c;
            } else {
                test[i - docs] = v;
                testLabels[i - docs] = c;
            }
        }
        return new Dataset("synthetic", train, trainLabels, test, testLabels);
    }

    private static float[][] readImages(Path file, int max) throws IOException {
        try (DataInputStream in = new DataInputStream(new GZIPInputStream(Files.newInputStream(file), 1 << 16))) {
            int magic = in.readInt();
            if (magic != 0x00000803) {
                throw new IOException(file + ": not an IDX image file (magic " + Integer.toHexString(magic) + ")");
            }
            int n = Math.min(max, in.readInt());
            int rows = in.readInt(), cols = in.readInt();
            float[][] out = new float[n][rows * cols];
            byte[] buf = new byte[rows * cols];
            for (int i = 0; i < n; i++) {
                in.readFully(buf);
                for (int j = 0; j < buf.length; j++) {
                    out[i][j] = (buf[j] & 0xFF) / 255f; // pixels scaled to [0, 1]: same neighbours, readable scores
                }
            }
            return out;
        }
    }

    private static int[] readLabels(Path file, int n) throws IOException {
        try (InputStream raw = new GZIPInputStream(Files.newInputStream(file)); DataInputStream in = new DataInputStream(raw)) {
            int magic = in.readInt();
            if (magic != 0x00000801) {
                throw new IOException(file + ": not an IDX label file (magic " + Integer.toHexString(magic) + ")");
            }
            int count = in.readInt();
            int[] out = new int[Math.min(n, count)];
            for (int i = 0; i < out.length; i++) {
                out[i] = in.readUnsignedByte();
            }
            return out;
        }
    }
}
