package org.gpuvectors.codec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;

/**
 * The host side of a large batch search through {@link KnnBatchSearcher}, on a machine without a GPU:
 * Fashion-MNIST indexed as {@code flat}, {@code ivf_flat} and {@code ivf_pq} (nprobe 8), searched in
 * one batch of all test queries through a service whose backend ({@link PrecomputedBackend}) answers
 * each pass at once with results computed on the first run. What is left of the wall clock is
 * {@code KnnBatchSearcher} and Lucene around the pass: the "outside" part of {@link
 * FashionMnistBenchmark}'s breakdown. Prints per index the best and median of the timed runs, the
 * mean CPU time of the process per run (all threads, GC included: steadier than the wall clock on
 * a shared machine; the OS counts it in 10 ms ticks, hence the mean), and a
 * digest of all returned (doc, score) pairs and total hits, to check that a change of the host path
 * leaves the results as they were. Measured numbers: HOST_PATH_NOTES.md next to this file.
 *
 * <pre>
 * java --add-modules jdk.incubator.vector ... org.gpuvectors.codec.HostPathBenchmark DATA_DIR [QUERIES [TRAIN [SEGMENTS [RUNS]]]]
 * </pre>
 *
 * Indexes are built once (on the CPU) under {@code java.io.tmpdir} and reused by later runs.
 */
public final class HostPathBenchmark {

  private static final int K = 10;
  private static final int NPROBE = 8;

  public static void main(String[] args) throws Exception {
    Path data = Path.of(args[0]);
    int queries = args.length > 1 ? Integer.parseInt(args[1]) : 10_000;
    int trainLimit = args.length > 2 ? Integer.parseInt(args[2]) : 60_000;
    int segments = args.length > 3 ? Integer.parseInt(args[3]) : 1;
    int runs = args.length > 4 ? Integer.parseInt(args[4]) : 7;
    float[][] train = FashionMnistBenchmark.readImages(data.resolve("train-images-idx3-ubyte.gz"));
    float[][] test = FashionMnistBenchmark.readImages(data.resolve("t10k-images-idx3-ubyte.gz"));
    train = Arrays.copyOf(train, Math.min(train.length, trainLimit));
    test = Arrays.copyOf(test, Math.min(test.length, queries));
    System.out.printf(Locale.ROOT, "host path: %d x %d indexed in %d segment(s), %d queries, k=%d, %d cores%n",
        train.length, train[0].length, segments, test.length, K, Runtime.getRuntime().availableProcessors());
    String only = System.getProperty("hostpath.types", "flat,ivf_flat,ivf_pq");
    for (IndexType type : new IndexType[] {IndexType.FLAT, IndexType.IVF_FLAT, IndexType.IVF_PQ}) {
      if (Arrays.asList(only.split(",")).contains(type.typeName()) == false) {
        continue;
      }
      Path path = Path.of(System.getProperty("java.io.tmpdir"),
          "gv-hostpath-" + type.typeName() + "-" + train.length + "-" + segments);
      if (Files.exists(path.resolve("done")) == false) {
        long s = System.nanoTime();
        build(path, type, train, segments);
        System.out.printf(Locale.ROOT, "%s: built in %.1f s (%s)%n", type.typeName(), (System.nanoTime() - s) / 1e9, path);
      }
      try (Directory dir = FSDirectory.open(path);
          DirectoryReader reader = DirectoryReader.open(dir);
          GpuSearchService service = GpuSearchService.withBackend(new PrecomputedBackend(),
              new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, 0.8, GpuSearchService.Settings.DEFAULT_MAX_BATCH_QUERIES))) {
        GpuSearchServices.install(service);
        try {
          measure(type.typeName(), new IndexSearcher(reader), test, service, runs);
        } finally {
          GpuSearchServices.uninstall(service);
        }
      }
    }
  }

  private static void measure(String label, IndexSearcher searcher, float[][] queries, GpuSearchService service, int runs)
      throws IOException {
    long s = System.nanoTime();
    TopDocs[] first = KnnBatchSearcher.search(searcher, "vec", queries, K, null); // computes the answers
    System.out.printf(Locale.ROOT, "%s: first run (answers computed) %.1f s%n", label, (System.nanoTime() - s) / 1e9);
    for (int i = 0; i < 3; i++) {
      KnnBatchSearcher.search(searcher, "vec", queries, K, null); // JIT warm-up
    }
    long[] walls = new long[runs];
    long[] outside = new long[runs];
    long[] cpu = new long[runs];
    var os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    TopDocs[] last = first;
    for (int r = 0; r < runs; r++) {
      long passNanos = service.stats().gpuNanos();
      long cpuStart = os.getProcessCpuTime();
      long start = System.nanoTime();
      last = KnnBatchSearcher.search(searcher, "vec", queries, K, null);
      walls[r] = System.nanoTime() - start;
      cpu[r] = os.getProcessCpuTime() - cpuStart;
      outside[r] = walls[r] - (service.stats().gpuNanos() - passNanos);
    }
    if (service.stats().cpuFallbacks() > 0) {
      throw new IllegalStateException(label + ": " + service.stats().cpuFallbacks() + " searches fell back to the CPU");
    }
    long digest = digest(last);
    if (digest != digest(first)) {
      throw new IllegalStateException(label + ": results differ between runs");
    }
    Arrays.sort(walls);
    Arrays.sort(outside);
    long cpuTotal = Arrays.stream(cpu).sum();
    System.out.printf(Locale.ROOT,
        "%s: %d queries, wall best %.1f ms median %.1f ms; outside the pass best %.1f ms median %.1f ms;"
            + " process CPU mean %.1f ms; digest %016x%n",
        label, queries.length, walls[0] / 1e6, walls[runs / 2] / 1e6, outside[0] / 1e6, outside[runs / 2] / 1e6,
        cpuTotal / 1e6 / runs, digest);
  }

  /** A hash of every hit (doc, score bits, in order) and total hits of every query. */
  static long digest(TopDocs[] results) {
    long h = 1;
    for (TopDocs td : results) {
      h = h * 1_000_003 + td.totalHits.value() * 31 + td.totalHits.relation().ordinal();
      for (ScoreDoc sd : td.scoreDocs) {
        h = h * 1_000_003 + sd.doc;
        h = h * 1_000_003 + Float.floatToIntBits(sd.score);
      }
    }
    return h;
  }

  /** The index on the CPU (the GPU service is off while it builds): {@code segments} equal segments. */
  private static void build(Path path, IndexType type, float[][] vectors, int segments) throws IOException {
    FieldType fieldType = GpuVectorsFormat.markField(
        KnnFloatVectorField.createFieldType(vectors[0].length, VectorSimilarityFunction.EUCLIDEAN),
        type == IndexType.FLAT ? new IndexParams(type, Map.of()) : new IndexParams(type, Map.of(IndexParams.NPROBE, NPROBE)));
    GpuSearchService cpu = GpuSearchService.create(
        new GpuSearchService.Settings(GpuSearchService.Mode.FALSE, 0, 0.8, GpuSearchService.Settings.DEFAULT_MAX_BATCH_QUERIES));
    GpuSearchServices.install(cpu);
    try (Directory dir = FSDirectory.open(path)) {
      IndexWriterConfig config = new IndexWriterConfig()
          .setCodec(new GpuVectorsCodec())
          .setMergePolicy(NoMergePolicy.INSTANCE)
          .setMaxBufferedDocs((vectors.length + segments - 1) / segments)
          .setRAMBufferSizeMB(IndexWriterConfig.DISABLE_AUTO_FLUSH);
      try (IndexWriter writer = new IndexWriter(dir, config)) {
        for (float[] vector : vectors) {
          Document doc = new Document();
          doc.add(new KnnFloatVectorField("vec", vector, fieldType));
          writer.addDocument(doc);
        }
      }
      Files.createFile(path.resolve("done"));
    } finally {
      GpuSearchServices.uninstall(cpu);
      cpu.close();
    }
  }
}
