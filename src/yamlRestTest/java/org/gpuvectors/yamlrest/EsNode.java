package org.gpuvectors.yamlrest;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real, single Elasticsearch node for integration tests and the demo, started and stopped by the build.
 *
 * <p>Lifecycle: {@link #create} copies the unpacked integ-test-zip into a fresh directory under /tmp (the repo may
 * live under /root, unreadable to others), installs the plugin zip with {@code elasticsearch-plugin install --batch};
 * {@link #start} starts the node on loopback with free ports and waits for yellow health; {@link #stop} kills the whole
 * process tree and waits for it to exit; {@link #restart} = stop + start on the same data directory; {@link #close}
 * stops and deletes the directory. A JVM shutdown hook and an external watchdog (which kills the node's process group
 * when this JVM disappears, even after SIGKILL) make sure no node is left running.
 *
 * <p>Elasticsearch refuses to run as root: when this JVM runs as root, everything runs as the unprivileged user
 * {@value #ES_USER} (created with useradd if missing) through {@code runuser -u USER --}, and the directory is
 * chown'ed to that user.
 *
 * <p>System properties: {@code tests.es.home} (unpacked distribution), {@code tests.plugin.zip} (plugin to install;
 * "none" for a vanilla node), {@code tests.es.start.timeout} (seconds, default 240), {@code tests.es.keep} (true: keep
 * the directory after close), {@code tests.es.heap} (default 1g), {@code tests.work.dir} (where the node logs are copied
 * on close).
 */
public final class EsNode implements AutoCloseable {

    public static final String ES_USER = "gpuvectors-es";
    private static final String CLUSTER_NAME = "gpuvectors-test";

    private final Path distHome;
    private final boolean hasSecurity;
    private final Path pluginZip;
    private final Path workRoot;
    private final Path home;
    private final Path consoleLog;
    private final String runAs; // null when not root
    private final int httpPort;
    private final int transportPort;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private String nodeName = "node-0";
    private List<String> nodeSettings;
    private String heap = prop("tests.es.heap", "1g");
    private String healthAuthorization; // Authorization header of the start-up health check (security on), else null

    private Process process;
    private Process watchdog;
    private Thread shutdownHook;
    private double lastStartSeconds;
    private long launchedAt;
    private boolean frozen; // SIGSTOPped by freeze: stop kills it at once

    private EsNode(Path distHome, Path pluginZip) throws IOException {
        this.distHome = distHome;
        // The GPU machine's distribution leaves the x-pack modules out to fit a command's payload
        // (bench/es/make-es-payload.sh): without them the security setting is unknown and the node refuses to start.
        this.hasSecurity = Files.isDirectory(distHome.resolve("modules/x-pack-security"));
        this.nodeSettings = hasSecurity ? List.of("discovery.type=single-node", "xpack.security.enabled=false")
            : List.of("discovery.type=single-node");
        this.pluginZip = pluginZip;
        this.workRoot = Files.createTempDirectory(Path.of("/tmp"), "gpuvectors-es-");
        this.home = workRoot.resolve("es");
        this.consoleLog = workRoot.resolve("console.log");
        this.runAs = isRoot() ? ES_USER : null;
        this.httpPort = freePort();
        this.transportPort = freePort();
    }

    /** A node from the system properties set by Maven (see plugin/pom.xml). */
    public static EsNode fromSystemProperties() throws IOException, InterruptedException {
        String dist = prop("tests.es.home", null);
        if (dist == null) {
            throw new IllegalStateException("system property tests.es.home (unpacked Elasticsearch integ-test-zip) is not set;"
                + " run through Maven: ./mvnw -B verify");
        }
        String zip = prop("tests.plugin.zip", null);
        Path pluginZip = null;
        if (zip != null && !zip.equals("none")) {
            pluginZip = Path.of(zip);
            if (!Files.isRegularFile(pluginZip)) {
                throw new IllegalStateException("plugin zip " + pluginZip + " does not exist: the plugin module's package phase"
                    + " must build it (run ./mvnw -B verify, not only the integration-test goals), or pass"
                    + " -Dtests.plugin.zip=none to test against a vanilla node");
            }
        }
        return create(Path.of(dist), pluginZip);
    }

    /** Copies the distribution into a fresh temp directory and installs the plugin (if any). Does not start the node. */
    public static EsNode create(Path distHome, Path pluginZip) throws IOException, InterruptedException {
        if (!Files.isExecutable(distHome.resolve("bin/elasticsearch"))) {
            throw new IllegalStateException("no Elasticsearch distribution at " + distHome
                + " (the plugin module unpacks it in process-test-classes)");
        }
        int feature = Runtime.version().feature();
        if (feature < 21) {
            throw new IllegalStateException("Elasticsearch 9.5 needs Java 21+, this JVM is " + Runtime.version());
        }
        EsNode node = new EsNode(distHome, pluginZip);
        try {
            node.prepare();
        } catch (IOException | InterruptedException | RuntimeException e) {
            node.deleteWorkRoot();
            throw e;
        }
        return node;
    }

    private void prepare() throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        exec(List.of("cp", "-a", distHome.toString(), home.toString()), null, Duration.ofMinutes(5));
        try (Stream<Path> bins = Files.list(home.resolve("bin"))) {
            bins.forEach(p -> p.toFile().setExecutable(true, false));
        }
        Files.createDirectories(workRoot.resolve("tmp"));
        Path zipCopy = null;
        if (pluginZip != null) {
            zipCopy = workRoot.resolve(pluginZip.getFileName());
            Files.copy(pluginZip, zipCopy);
        }
        if (runAs != null) {
            ensureUser(runAs);
            exec(List.of("chown", "-R", runAs + ":" + runAs, workRoot.toString()), null, Duration.ofMinutes(2));
            String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            if (exec(List.of("runuser", "-u", runAs, "--", "test", "-x", javaBin), null, Duration.ofSeconds(30)).exitCode != 0) {
                throw new IllegalStateException("user " + runAs + " cannot execute " + javaBin + " (the JDK running the tests"
                    + " must be readable by others, e.g. under /usr/lib/jvm)");
            }
        }
        log("prepared " + home + " in " + secondsSince(t0) + " s" + (runAs != null ? " (running as user " + runAs + ")" : ""));
        if (zipCopy != null) {
            long t1 = System.nanoTime();
            ExecResult r = exec(asUser(List.of(home.resolve("bin/elasticsearch-plugin").toString(), "install", "--batch",
                zipCopy.toUri().toString())), esEnv(), Duration.ofMinutes(3));
            if (r.exitCode != 0) {
                throw new IllegalStateException("elasticsearch-plugin install " + zipCopy + " failed (exit " + r.exitCode + "):\n" + r.output);
            }
            log("installed plugin " + pluginZip.getFileName() + " in " + secondsSince(t1) + " s");
        }
    }

    /**
     * Makes this node one of a cluster rather than a single node: its name, and the {@code -E} settings that replace
     * the single-node ones ({@code discovery.type=single-node}, {@code xpack.security.enabled=false}); loopback, ports
     * and the cluster name stay. Call before {@link #start}.
     */
    public synchronized void configure(String name, String heap, List<String> settings) {
        this.nodeName = name;
        this.heap = heap;
        this.nodeSettings = List.copyOf(settings);
    }

    /** The user the start-up health check authenticates as, for a node with security on. */
    public synchronized void healthCheckAs(String user, String password) {
        this.healthAuthorization = "Basic " + java.util.Base64.getEncoder()
            .encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    public int transportPort() {
        return transportPort;
    }

    public String name() {
        return nodeName;
    }

    /**
     * Freezes ({@code true}: SIGSTOP) or thaws ({@code false}: SIGCONT) the node's whole process tree: a node that stops
     * answering without closing its connections, as a node that hangs or is cut off does, until the cluster's fault
     * detection removes it.
     */
    public synchronized void freeze(boolean frozen) throws IOException, InterruptedException {
        if (process == null) {
            throw new IllegalStateException("node not running");
        }
        List<String> cmd = new ArrayList<>(List.of("kill", frozen ? "-STOP" : "-CONT"));
        cmd.add(Long.toString(process.pid()));
        process.toHandle().descendants().forEach(p -> cmd.add(Long.toString(p.pid())));
        exec(cmd, null, Duration.ofSeconds(30));
        this.frozen = frozen;
        log("node " + nodeName + (frozen ? " frozen" : " thawed"));
    }

    /** Whether the node's process is running. */
    public synchronized boolean isRunning() {
        return process != null && process.isAlive();
    }

    /**
     * Runs one of the distribution's tools ({@code bin/<tool>}) on this node's directory, as the node's user; fails
     * with its output when it exits non-zero.
     */
    public String runTool(String tool, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(home.resolve("bin").resolve(tool).toString()));
        cmd.addAll(List.of(args));
        ExecResult r = exec(asUser(cmd), esEnv(), Duration.ofMinutes(3));
        if (r.exitCode != 0) {
            throw new IllegalStateException(tool + " " + String.join(" ", args) + " failed (exit " + r.exitCode + "):\n" + r.output);
        }
        return r.output;
    }

    /** Writes a file of the node's config directory (users, roles), owned by the node's user. */
    public void writeConfigFile(String name, String content) throws IOException, InterruptedException {
        Path file = home.resolve("config").resolve(name);
        Files.writeString(file, content, StandardCharsets.UTF_8);
        if (runAs != null) {
            exec(List.of("chown", runAs + ":" + runAs, file.toString()), null, Duration.ofSeconds(30));
        }
    }

    /** A file of the node's config directory. */
    public String readConfigFile(String name) throws IOException {
        return Files.readString(home.resolve("config").resolve(name), StandardCharsets.UTF_8);
    }

    /** Starts the node and waits until the cluster is yellow or green. */
    public synchronized void start() throws IOException, InterruptedException {
        launch();
        awaitHealthy();
    }

    /**
     * Starts the node's process without waiting for it: the nodes of a cluster are launched together, since none
     * of them is healthy before enough master-eligible nodes have joined.
     */
    public synchronized void launch() throws IOException {
        if (process != null && process.isAlive()) {
            throw new IllegalStateException("node already running");
        }
        launchedAt = System.nanoTime();
        List<String> cmd = new ArrayList<>();
        // own process group (pgid = pid), so the watchdog can kill the whole tree with one signal
        cmd.add("setsid");
        cmd.addAll(asUser(List.of(
            "env",
            "ES_JAVA_HOME=" + System.getProperty("java.home"),
            "ES_JAVA_OPTS=-Xms" + heap + " -Xmx" + heap,
            "ES_TMPDIR=" + workRoot.resolve("tmp"),
            // without the x-pack modules the CLI must not auto-configure security (which loads them)
            "CLI_JAVA_OPTS=" + (hasSecurity ? "" : "-Des.secure_settings.source=file_settings"),
            home.resolve("bin/elasticsearch").toString(),
            "-E", "cluster.name=" + CLUSTER_NAME,
            "-E", "node.name=" + nodeName,
            "-E", "network.host=127.0.0.1",
            "-E", "http.port=" + httpPort,
            "-E", "transport.port=" + transportPort,
            "-E", "cluster.routing.allocation.disk.threshold_enabled=false")));
        for (String setting : nodeSettings) {
            cmd.add("-E");
            cmd.add(setting);
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(home.toFile()).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(consoleLog.toFile()));
        pb.environment().keySet().removeIf(k -> k.equals("JAVA_HOME") || k.equals("ES_JAVA_OPTS") || k.equals("JAVA_TOOL_OPTIONS"));
        log("starting node " + nodeName + ": http://127.0.0.1:" + httpPort + " (home " + home + ")");
        process = pb.start();
        startWatchdog(process.pid());
        if (shutdownHook == null) {
            shutdownHook = new Thread(this::stopQuietly, "es-node-shutdown");
            Runtime.getRuntime().addShutdownHook(shutdownHook);
        }
    }

    /** Waits until the launched node answers that its cluster is yellow or green; stops it when it cannot. */
    public synchronized void awaitHealthy() throws IOException, InterruptedException {
        long t0 = launchedAt;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(prop("tests.es.start.timeout", "240")));
        String lastError = "no answer";
        while (true) {
            if (!process.isAlive()) {
                int exit = process.exitValue();
                String logs = logTail(200);
                stopQuietly();
                throw new IllegalStateException("Elasticsearch exited during startup with code " + exit
                    + "; log tail:\n" + logs);
            }
            if (System.nanoTime() > deadline) {
                String logs = logTail(200);
                stopQuietly();
                throw new IllegalStateException("Elasticsearch did not become yellow/green in time (" + lastError
                    + "); log tail:\n" + logs);
            }
            try {
                HttpRequest.Builder health = HttpRequest.newBuilder(baseUri().resolve("/_cluster/health?wait_for_status=yellow&timeout=2s"))
                    .timeout(Duration.ofSeconds(10)).GET();
                if (healthAuthorization != null) {
                    health.header("Authorization", healthAuthorization);
                }
                HttpResponse<String> r = http.send(health.build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200 && !r.body().contains("\"status\":\"red\"")) {
                    break;
                }
                lastError = "health: HTTP " + r.statusCode() + " " + r.body();
                if (r.statusCode() >= 400) {
                    Thread.sleep(500); // not formed yet (503) or not yet able to authenticate (401)
                }
            } catch (IOException e) {
                lastError = e.toString();
                Thread.sleep(500);
            }
        }
        lastStartSeconds = secondsSince(t0);
        log("node " + nodeName + " started in " + lastStartSeconds + " s");
    }

    /** Stops the node (whole process tree) and starts it again on the same data directory and ports. */
    public synchronized void restart() throws IOException, InterruptedException {
        stop();
        start();
    }

    /** Stops the node: SIGTERM to the whole process tree, then SIGKILL after 60 s; waits for every process to exit. */
    public synchronized void stop() {
        if (process == null) {
            return;
        }
        long t0 = System.nanoTime();
        ProcessHandle root = process.toHandle();
        List<ProcessHandle> tree = new ArrayList<>(root.descendants().toList());
        tree.sort(Comparator.comparingLong(ProcessHandle::pid).reversed());
        tree.add(root);
        if (frozen) {
            tree.forEach(ProcessHandle::destroyForcibly); // a stopped process acts on no signal but SIGKILL
            frozen = false;
        } else {
            tree.forEach(ProcessHandle::destroy);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        for (ProcessHandle p : tree) {
            while (p.isAlive() && System.nanoTime() < deadline) {
                try {
                    p.onExit().get(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())), TimeUnit.MILLISECONDS);
                } catch (Exception e) {
                    break;
                }
            }
        }
        for (ProcessHandle p : tree) {
            if (p.isAlive()) {
                log("process " + p.pid() + " did not stop in 60 s, killing it");
                p.destroyForcibly();
                try {
                    p.onExit().get(30, TimeUnit.SECONDS);
                } catch (Exception e) {
                    log("process " + p.pid() + " still alive after SIGKILL: " + e);
                }
            }
        }
        try {
            process.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        process = null;
        if (watchdog != null) {
            watchdog.destroyForcibly();
            watchdog = null;
        }
        log("node stopped in " + secondsSince(t0) + " s");
    }

    private void stopQuietly() {
        try {
            stop();
        } catch (RuntimeException e) {
            log("stop failed: " + e);
        }
    }

    @Override
    public synchronized void close() {
        stopQuietly();
        if (shutdownHook != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException e) {
                // JVM shutting down: the hook is running or will run
            }
            shutdownHook = null;
        }
        saveLogs();
        if (Boolean.parseBoolean(prop("tests.es.keep", "false"))) {
            log("keeping " + workRoot);
        } else {
            deleteWorkRoot();
        }
    }

    /** Copies the node's logs to {@code tests.work.dir}/&lt;work dir name&gt;/ (plugin/target/yaml-rest-test-work) for CI artifacts. */
    private void saveLogs() {
        String dir = prop("tests.work.dir", null);
        if (dir == null) {
            return;
        }
        try {
            Path target = Files.createDirectories(Path.of(dir, workRoot.getFileName().toString()));
            List<Path> logs = new ArrayList<>();
            logs.add(consoleLog);
            if (Files.isDirectory(home.resolve("logs"))) {
                try (Stream<Path> s = Files.list(home.resolve("logs"))) {
                    s.filter(p -> p.getFileName().toString().endsWith(".log")).forEach(logs::add);
                }
            }
            for (Path p : logs) {
                if (Files.isRegularFile(p)) {
                    Files.copy(p, target.resolve(p.getFileName()), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                }
            }
            log("node logs saved in " + target);
        } catch (IOException | UncheckedIOException e) {
            log("could not save the node logs: " + e);
        }
    }

    /**
     * Kills the node's process group when this JVM goes away without stopping it (e.g. SIGKILL of the test JVM). The
     * watchdog is a separate shell outside the group; it is killed by {@link #stop}.
     */
    private void startWatchdog(long nodePgid) {
        long self = ProcessHandle.current().pid();
        String script = "while kill -0 " + self + " 2>/dev/null && kill -0 " + nodePgid + " 2>/dev/null; do sleep 2; done; "
            + "if kill -0 " + nodePgid + " 2>/dev/null; then kill -TERM -" + nodePgid + "; "
            + "i=0; while kill -0 -" + nodePgid + " 2>/dev/null && [ $i -lt 30 ]; do sleep 1; i=$((i+1)); done; "
            + "kill -KILL -" + nodePgid + " 2>/dev/null; sleep 1; "
            + (Boolean.parseBoolean(prop("tests.es.keep", "false")) ? "" : "rm -rf '" + workRoot + "'; ")
            + "fi";
        try {
            // plain POSIX sh (dash): "kill -SIG -PGID" signals the group; dash refuses "kill -SIG -- -PGID"
            watchdog = new ProcessBuilder("sh", "-c", script).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        } catch (IOException e) {
            log("could not start watchdog (the shutdown hook still stops the node): " + e);
        }
    }

    public URI baseUri() {
        return URI.create("http://127.0.0.1:" + httpPort);
    }

    public double lastStartSeconds() {
        return lastStartSeconds;
    }

    public Path home() {
        return home;
    }

    /** The last lines of the node's log file (and of its console output). */
    public String logTail(int lines) {
        StringBuilder sb = new StringBuilder();
        for (Path p : new Path[] {consoleLog, home.resolve("logs").resolve(CLUSTER_NAME + ".log")}) {
            sb.append("----- ").append(p).append(" -----\n");
            try {
                List<String> all = Files.readAllLines(p, StandardCharsets.UTF_8);
                all.subList(Math.max(0, all.size() - lines), all.size()).forEach(l -> sb.append(l).append('\n'));
            } catch (IOException | UncheckedIOException e) {
                sb.append("(cannot read: ").append(e).append(")\n");
            }
        }
        return sb.toString();
    }

    private void deleteWorkRoot() {
        try {
            exec(List.of("rm", "-rf", "--", workRoot.toString()), null, Duration.ofMinutes(2));
        } catch (IOException | InterruptedException e) {
            log("could not delete " + workRoot + ": " + e);
        }
    }

    private Map<String, String> esEnv() {
        return Map.of("ES_JAVA_HOME", System.getProperty("java.home"), "ES_TMPDIR", workRoot.resolve("tmp").toString());
    }

    private List<String> asUser(List<String> cmd) {
        if (runAs == null) {
            return cmd;
        }
        List<String> l = new ArrayList<>(List.of("runuser", "-u", runAs, "--"));
        l.addAll(cmd);
        return l;
    }

    private static boolean isRoot() {
        try {
            return ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).intValue() == 0;
        } catch (IOException | UnsupportedOperationException e) {
            return "root".equals(System.getProperty("user.name"));
        }
    }

    private static void ensureUser(String user) throws IOException, InterruptedException {
        if (exec(List.of("getent", "passwd", user), null, Duration.ofSeconds(30)).exitCode == 0) {
            return;
        }
        ExecResult r = exec(List.of("useradd", "--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", user),
            null, Duration.ofSeconds(60));
        if (r.exitCode != 0 && exec(List.of("getent", "passwd", user), null, Duration.ofSeconds(30)).exitCode != 0) {
            throw new IllegalStateException("cannot create user " + user + " (Elasticsearch refuses to run as root): " + r.output);
        }
        log("created system user " + user);
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }

    record ExecResult(int exitCode, String output) {}

    private static ExecResult exec(List<String> cmd, Map<String, String> env, Duration timeout) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        if (env != null) {
            pb.environment().putAll(env);
        }
        pb.environment().remove("JAVA_TOOL_OPTIONS");
        pb.environment().remove("JAVA_HOME"); // ES tools use ES_JAVA_HOME and warn about JAVA_HOME
        Path out = Files.createTempFile("gpuvectors-exec-", ".log");
        try {
            pb.redirectOutput(out.toFile());
            Process p = pb.start();
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                throw new IllegalStateException("timed out after " + timeout + ": " + cmd);
            }
            return new ExecResult(p.exitValue(), Files.readString(out));
        } finally {
            Files.deleteIfExists(out);
        }
    }

    static String prop(String name, String def) {
        String v = System.getProperty(name);
        if (v == null || v.isBlank() || v.startsWith("${")) {
            return def;
        }
        return v;
    }

    private static double secondsSince(long t0) {
        return Math.round((System.nanoTime() - t0) / 1e8) / 10.0;
    }

    static void log(String msg) {
        System.out.println("[EsNode] " + msg);
        System.out.flush();
    }
}
