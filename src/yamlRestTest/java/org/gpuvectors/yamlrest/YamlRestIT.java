package org.gpuvectors.yamlrest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.opentest4j.TestAbortedException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * Runs every YAML REST test under {@code tests.yaml.dir} (src/yamlRestTest/resources/rest-api-spec/test) against one
 * real Elasticsearch node with the plugin installed: one dynamic test per YAML test, grouped per file. Between tests all
 * non-system indices and templates are deleted. {@code -Dtests.yaml.filter=text[,text...]} keeps files or tests whose
 * relative path or name contains one of the texts. {@code -Dtests.yaml.dir=DIR -Dtests.yaml.as_gpu_vector=TYPE} runs a
 * suite written for {@code dense_vector} (Elasticsearch's own knn tests) with its fields mapped as {@code gpu_vector}
 * of index type TYPE ({@link DenseVectorAsGpuVector}).
 */
class YamlRestIT {

    private static EsNode node;
    private static YamlRunner runner;
    private static long classStart;
    private static final AtomicInteger passed = new AtomicInteger();
    private static final AtomicInteger failed = new AtomicInteger();
    private static final AtomicInteger skipped = new AtomicInteger();
    private static final List<String> failures = new ArrayList<>();

    @BeforeAll
    static void startNode() throws Exception {
        classStart = System.nanoTime();
        assumeRunByFailsafe();
        ApiSpec spec = ApiSpec.load(
            Path.of(required("tests.rest.api.spec")),
            pluginApiSpec() // the plugin's own APIs
        );
        node = EsNode.fromSystemProperties();
        node.start();
        runner = new YamlRunner(new RestClient(node.baseUri()), spec);
    }

    @AfterAll
    static void stopNode() {
        if (EsNode.prop("tests.es.home", null) == null) {
            return; // skipped outside failsafe
        }
        if (node != null) {
            node.close();
            node = null;
        }
        System.out.printf(Locale.ROOT, "[yamlrest] %d passed, %d failed, %d skipped (%.1f s in total)%n", passed.get(), failed.get(),
            skipped.get(), (System.nanoTime() - classStart) / 1e9);
        failures.forEach(f -> System.out.println("[yamlrest]   FAILED " + f));
        if (passed.get() + failed.get() + skipped.get() == 0) {
            System.out.println("[yamlrest] no YAML test ran: see the error of startNode above (node or plugin install)");
        }
    }

    @TestFactory
    Stream<DynamicNode> yamlTests() throws IOException {
        Path dir = Path.of(required("tests.yaml.dir"));
        String filterProp = EsNode.prop("tests.yaml.filter", null);
        // comma-separated alternatives: -Dtests.yaml.filter=50_,60_,70_
        List<String> filters = filterProp == null ? null
            : Arrays.stream(filterProp.split(",")).map(String::trim).filter(x -> !x.isEmpty()).toList();
        List<Path> files;
        try (Stream<Path> s = Files.walk(dir)) {
            files = s.filter(p -> p.toString().endsWith(".yml") || p.toString().endsWith(".yaml")).sorted().toList();
        }
        if (files.isEmpty()) {
            throw new IllegalStateException("no YAML tests under " + dir);
        }
        // -Dtests.yaml.as_gpu_vector=flat (or another index type): a dense_vector suite run over gpu_vector fields
        String asGpuVector = EsNode.prop("tests.yaml.as_gpu_vector", "");
        DenseVectorAsGpuVector rewrite = asGpuVector.isBlank() ? null : new DenseVectorAsGpuVector(asGpuVector.strip());
        List<DynamicNode> containers = new ArrayList<>();
        for (Path f : files) {
            String rel = dir.relativize(f).toString();
            YamlRunner.YamlFile yf;
            try {
                YamlRunner.YamlFile parsed = YamlRunner.parse(f, rel);
                yf = rewrite == null ? parsed : rewrite.rewrite(parsed);
            } catch (Exception e) {
                containers.add(DynamicTest.dynamicTest(rel + " (parse)", f.toUri(), () -> {
                    failed.incrementAndGet();
                    failures.add(rel + ": cannot parse: " + e);
                    throw new AssertionError("cannot parse " + f + ": " + e.getMessage(), e);
                }));
                continue;
            }
            boolean fileMatches = filters == null || filters.stream().anyMatch(rel::contains);
            List<DynamicTest> tests = yf.tests().stream()
                .filter(t -> fileMatches || filters.stream().anyMatch(x -> t.name().contains(x)))
                .map(t -> DynamicTest.dynamicTest(t.name(), f.toUri(), () -> runOne(yf, t)))
                .toList();
            if (!tests.isEmpty()) {
                containers.add(DynamicContainer.dynamicContainer(rel, f.toUri(), tests.stream()));
            }
        }
        return containers.stream();
    }

    private static void runOne(YamlRunner.YamlFile file, YamlRunner.YamlTest test) throws Exception {
        String id = file.name() + " / " + test.name();
        long t0 = System.nanoTime();
        try {
            runner.run(file, test);
            passed.incrementAndGet();
            System.out.printf(Locale.ROOT, "[yamlrest] PASS %s (%d ms)%n", id, (System.nanoTime() - t0) / 1_000_000);
        } catch (TestAbortedException e) {
            skipped.incrementAndGet();
            System.out.println("[yamlrest] SKIP " + id + ": " + e.getMessage());
            throw e;
        } catch (Exception | AssertionError e) {
            failed.incrementAndGet();
            synchronized (failures) {
                failures.add(id);
            }
            System.out.println("[yamlrest] FAIL " + id + ": " + e.getMessage());
            throw e;
        } finally {
            runner.wipeCluster();
        }
    }

    /**
     * These classes run in failsafe's integration-test phase, which sets tests.es.home (plugin/pom.xml). Picked up by
     * surefire (e.g. with -Dtest=...), they are skipped rather than failed.
     */
    static void assumeRunByFailsafe() {
        Assumptions.assumeTrue(EsNode.prop("tests.es.home", null) != null,
            "integration test: runs in the integration-test phase (./mvnw verify), which sets tests.es.home");
    }

    /** The plugin's REST API specs: {@code tests.plugin.api.spec}, else beside the project's own suites. */
    static Path pluginApiSpec() {
        String given = EsNode.prop("tests.plugin.api.spec", null);
        return given != null ? Path.of(given) : Path.of(required("tests.yaml.dir")).resolveSibling("api");
    }

    private static String required(String name) {
        String v = EsNode.prop(name, null);
        if (v == null) {
            throw new IllegalStateException("system property " + name + " is not set; run through Maven (./mvnw -B verify)");
        }
        return v;
    }
}
