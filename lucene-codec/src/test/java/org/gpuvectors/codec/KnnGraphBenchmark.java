package org.gpuvectors.codec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.IntStream;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.codecs.KnnVectorsFormat;
import org.apache.lucene.codecs.lucene104.Lucene104Codec;
import org.apache.lucene.codecs.lucene99.Lucene99HnswVectorsFormat;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.IOUtils;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.gpu.KnnGraphPaths;
import org.gpuvectors.codec.graph.GraphBuilder;
import org.gpuvectors.codec.index.Metric;

/**
 * k-NN graphs at scale: for Fashion-MNIST (60k x 784, when its files are in DATA_DIR) and N x 128
 * clustered synthetic vectors (fixed seed, {@link FlatSearchBenchmark#clustered}), per data set:
 *
 * <ul>
 *   <li>the whole-index k-NN graph ({@link KnnGraphOfIndex}, k = 10) of a flat field: its time, where
 *       it ran, and its recall against brute force on a sample of 1,000 documents;
 *   <li>the same k-NN step (k = 10) as the default chooses it, and forced to exact brute force;
 *   <li>a {@code graph} field's build (flush + force-merge; its k-NN step at build_degree on the GPU),
 *       with each flush's and merge's phases (k-NN step, pruning, reverse links, entry points,
 *       reachability, writing), and that k-NN step alone as the default chooses it (with its recall)
 *       and forced exact;
 *   <li>Fashion-MNIST only: Lucene HNSW's build (m = 16, beam 100) as the graph field's (one indexing
 *       thread: its graph is built on that thread), and with all cores indexing and merging.
 * </ul>
 * Exact brute force of a large set (more than {@code EXACT_FULL_MAX} vectors) is timed on its first
 * quarter and extrapolated by 16 (its cost grows with n^2) unless the phase {@code full-exact} is
 * given. Progress: a line per step here, and the k-NN graph's own progress lines (java.util.logging).
 *
 * <pre>
 * java ... org.gpuvectors.codec.KnnGraphBenchmark DATA_DIR OUT_DIR [N [PHASES]]
 * </pre>
 * N: synthetic vectors (default 1,000,000; 0 skips them). PHASES: comma-separated of {@code fmnist},
 * {@code synthetic}, {@code hnsw}, {@code full-exact} (default {@code fmnist,synthetic,hnsw}).
 */
public final class KnnGraphBenchmark {

  private static final int K = 10;
  private static final int SAMPLE = 1000;
  /** Sets larger than this have their exact brute force extrapolated from a quarter (see class doc). */
  private static final int EXACT_FULL_MAX = 200_000;

  private final List<String> rows = new ArrayList<>();
  private final GpuSearchService service = GpuSearchServices.current();
  /** The k-NN step with either path forced, on a backend of its own (opened at its first use, before any timing). */
  private KnnGraphPaths paths;
  private final boolean fullExact;

  private KnnGraphBenchmark(boolean fullExact) {
    this.fullExact = fullExact;
  }

  public static void main(String[] args) throws Exception {
    Path data = Path.of(args[0]);
    Path out = Path.of(args[1]);
    Files.createDirectories(out);
    int n = args.length > 2 ? Integer.parseInt(args[2]) : 1_000_000;
    Set<String> phases = Set.of((args.length > 3 ? args[3] : "fmnist,synthetic,hnsw").split(","));
    KnnGraphBenchmark bench = new KnnGraphBenchmark(phases.contains("full-exact"));
    bench.rows.add("data,step,path,k,seconds,recall");
    GpuSearchService service = bench.service;
    System.out.println("GPU: " + (service.gpuActive() ? service.deviceName() : service.unusableReason())
        + ", " + Runtime.getRuntime().availableProcessors() + " cores");

    Path train = data.resolve("train-images-idx3-ubyte.gz");
    if (phases.contains("fmnist") && Files.exists(train)) {
      float[][] fashion = FashionMnistBenchmark.readImages(train);
      bench.dataSet("fashion-mnist", fashion);
      if (phases.contains("hnsw")) {
        bench.hnswBuild("fashion-mnist", fashion);
      }
    } else if (phases.contains("fmnist")) {
      System.out.println("fashion-mnist: skipped, no " + train);
    }
    if (phases.contains("synthetic") && n > 0) {
      long s = System.nanoTime();
      float[][] synthetic = FlatSearchBenchmark.clustered(n, 128, 42);
      System.out.printf(Locale.ROOT, "synthetic %d x 128 clustered: generated in %.1f s%n", n, seconds(s));
      bench.dataSet("synthetic-" + n + "x128", synthetic);
    }

    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("knn-graph.csv")))) {
      bench.rows.forEach(w::println);
    }
    System.out.printf(Locale.ROOT, "%n%-22s %-34s %-22s %4s %9s %8s%n", "data", "step", "path", "k", "seconds", "recall");
    for (String r : bench.rows.subList(1, bench.rows.size())) {
      String[] c = r.split(",", -1);
      System.out.printf(Locale.ROOT, "%-22s %-34s %-22s %4s %9s %8s%n", c[0], c[1], c[2], c[3], c[4], c[5]);
    }
    if (bench.paths != null) {
      bench.paths.close();
    }
    GpuSearchServices.closeDefault();
  }

  /** Every measurement of one data set (ids = positions in {@code vectors}). */
  private void dataSet(String name, float[][] vectors) throws IOException {
    int n = vectors.length;
    System.out.printf(Locale.ROOT, "%n== %s: %d x %d ==%n", name, n, vectors[0].length);
    int buildDegree = GraphBuilder.buildDegree(OptionalInt.empty(), GraphBuilder.DEFAULT_DEGREE);
    int[] sample = sample(n);
    long s = System.nanoTime();
    int[][] truth = exactRows(vectors, sample, buildDegree); // k = build_degree; its prefix is the k = 10 truth
    System.out.printf(Locale.ROOT, "ground truth of %d sampled rows (CPU brute force, k = %d): %.1f s%n", sample.length,
        buildDegree, seconds(s));

    wholeIndex(name, vectors, sample, truth);
    knnStep(name, vectors, K, sample, truth);
    graphField(name, vectors);
    knnStep(name, vectors, buildDegree, sample, truth);
  }

  /** The whole-index k-NN graph of a flat field, default path, with its recall on the sample. */
  private void wholeIndex(String name, float[][] vectors, int[] sample, int[][] truth) throws IOException {
    Path path = Files.createTempDirectory("gv-knn-graph-flat");
    try (Directory dir = FSDirectory.open(path)) {
      FieldType type =
          GpuVectorsFormat.markField(
              KnnFloatVectorField.createFieldType(vectors[0].length, VectorSimilarityFunction.EUCLIDEAN), IndexType.FLAT);
      double build = build(dir, new GpuVectorsCodec(), type, vectors);
      System.out.printf(Locale.ROOT, "flat index of %d vectors: %.1f s%n", vectors.length, build);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        int[] idOfDoc = ids(reader);
        int[] docOfId = new int[idOfDoc.length];
        for (int doc = 0; doc < idOfDoc.length; doc++) {
          docOfId[idOfDoc[doc]] = doc;
        }
        long gpuBefore = service.stats().gpuKnnGraphVectors();
        System.out.println("whole-index k-NN graph, k = " + K + " ...");
        long s = System.nanoTime();
        KnnGraphOfIndex graph = KnnGraphOfIndex.compute(reader, "vec", K);
        double seconds = seconds(s);
        int[][] found = new int[sample.length][];
        for (int i = 0; i < sample.length; i++) {
          found[i] = Arrays.stream(graph.neighbors(docOfId[sample[i]])).map(doc -> idOfDoc[doc]).toArray();
        }
        String where = service.stats().gpuKnnGraphVectors() > gpuBefore ? defaultPath(vectors.length) : "cpu";
        record(name, "KnnGraphOfIndex.compute", where, K, seconds, recall(found, truth, K));
      }
    } finally {
      IOUtils.rm(path);
    }
  }

  /**
   * The k-NN step through the service's finder: the default path, with its recall; then the other GPU
   * path: IVF forced (with its recall) where the default is exact, exact brute force where it is IVF.
   */
  private void knnStep(String name, float[][] vectors, int k, int[] sample, int[][] truth) throws IOException {
    FloatVectorValues values = FloatVectorValues.fromFloats(Arrays.asList(vectors), vectors[0].length);
    System.out.println("k-NN step, k = " + k + ", default path ...");
    long gpuBefore = service.stats().gpuKnnGraphVectors();
    long s = System.nanoTime();
    int[] ids = service.buildAcceleration().knnFinder().knn(values, k, Metric.L2);
    double seconds = seconds(s);
    String where = service.stats().gpuKnnGraphVectors() > gpuBefore ? defaultPath(vectors.length) : "cpu";
    record(name, "k-NN step", where, k, seconds, recall(rows(ids, sample, k), truth, k));
    if (service.gpuActive() == false) {
      return; // the CPU's exact step of a large set takes far too long to time here
    }
    if (paths == null) {
      paths = KnnGraphPaths.open(0, service.buildAcceleration().assigner());
    }

    if (where.equals("gpu-exact")) {
      System.out.println("k-NN step, k = " + k + ", IVF forced ...");
      s = System.nanoTime();
      ids = knnWithThreshold(values, k, 0);
      record(name, "k-NN step (IVF forced)", "gpu-ivf", k, seconds(s), recall(rows(ids, sample, k), truth, k));
      return;
    }
    boolean full = fullExact || vectors.length <= EXACT_FULL_MAX;
    float[][] part = full ? vectors : Arrays.copyOf(vectors, vectors.length / 4);
    FloatVectorValues exactValues = FloatVectorValues.fromFloats(Arrays.asList(part), part[0].length);
    System.out.println("k-NN step, k = " + k + ", exact brute force of " + part.length + " vectors ...");
    s = System.nanoTime();
    knnWithThreshold(exactValues, k, Integer.MAX_VALUE);
    seconds = seconds(s);
    if (full) {
      record(name, "k-NN step (exact forced)", "gpu-exact", k, seconds, 1);
    } else {
      record(name, "k-NN step (exact n/4 x 16: estimate)", "gpu-exact", k, seconds * 16, 1);
    }
  }

  /** The device's k-NN graph, exact up to {@code exactMax} vectors, else through IVF. */
  private int[] knnWithThreshold(FloatVectorValues values, int k, int exactMax) throws IOException {
    return paths.knn(values, k, Metric.L2, exactMax);
  }

  /** The sampled rows of a k-NN graph. */
  private static int[][] rows(int[] ids, int[] sample, int k) {
    int[][] found = new int[sample.length][];
    for (int i = 0; i < sample.length; i++) {
      found[i] = Arrays.copyOfRange(ids, sample[i] * k, (sample[i] + 1) * k);
    }
    return found;
  }

  /** A graph field's build: flush + force-merge, its k-NN step where the service puts it. */
  private void graphField(String name, float[][] vectors) throws IOException {
    Path path = Files.createTempDirectory("gv-knn-graph-graph");
    try (Directory dir = FSDirectory.open(path)) {
      FieldType type =
          GpuVectorsFormat.markField(
              KnnFloatVectorField.createFieldType(vectors[0].length, VectorSimilarityFunction.EUCLIDEAN), IndexType.GRAPH);
      long gpuBefore = service.stats().gpuKnnGraphVectors();
      long cpuBefore = service.stats().cpuKnnGraphVectors();
      System.out.println("graph field build ...");
      double build;
      long gpu;
      long cpu;
      try (BuildPhaseLog log = new BuildPhaseLog()) {
        build = build(dir, new GpuVectorsCodec(), type, vectors);
        gpu = service.stats().gpuKnnGraphVectors() - gpuBefore;
        cpu = service.stats().cpuKnnGraphVectors() - cpuBefore;
        System.out.printf(Locale.ROOT, "graph field: build + force-merge %.1f s (k-NN graph of %d vectors on the GPU, %d on the CPU)%n",
            build, gpu, cpu);
        log.lines().forEach(line -> System.out.println("  " + line)); // per flush / merge: its phases
      }
      // no k-NN graph at all: a segment below the format's minimum for an approximate index stays flat
      String where = cpu > 0 ? "cpu-knn" : gpu > 0 ? defaultPath(vectors.length) : "flat (too small)";
      record(name, "graph field build (flush+merge)", where, -1, build, -1);
    } finally {
      IOUtils.rm(path);
    }
  }

  /**
   * Lucene HNSW (m = 16, beam 100), twice: (1) as the graph field is built (one indexing thread, one
   * flush, force-merge): HNSW builds its graph while documents are added, so on that one thread (the
   * merge threads stay idle: Lucene does not rewrite a lone segment at force-merge); (2) with every
   * core: documents added from all cores (a segment per thread, each building its graph), then
   * force-merged by all cores as merge threads (the largest segment's graph grown by the others).
   */
  private void hnswBuild(String name, float[][] vectors) throws IOException {
    int threads = Runtime.getRuntime().availableProcessors();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (boolean allCores : new boolean[] {false, true}) {
        Path path = Files.createTempDirectory("gv-knn-graph-hnsw");
        try (Directory dir = FSDirectory.open(path)) {
          Codec codec = hnswCodec(threads, pool);
          FieldType type = KnnFloatVectorField.createFieldType(vectors[0].length, VectorSimilarityFunction.EUCLIDEAN);
          if (allCores) {
            System.out.println("Lucene HNSW build (" + threads + " indexing threads, " + threads + " merge threads) ...");
            record(name, "Lucene HNSW build (all-core)", "cpu-" + threads + "-threads", -1,
                buildConcurrently(dir, codec, type, vectors, threads), -1);
          } else {
            System.out.println("Lucene HNSW build (one indexing thread, " + threads + " merge threads) ...");
            record(name, "Lucene HNSW build (flush+merge)", "cpu-" + threads + "-threads", -1, build(dir, codec, type, vectors), -1);
          }
        } finally {
          IOUtils.rm(path);
        }
      }
    } finally {
      pool.shutdown();
    }
  }

  /**
   * The peer every benchmark builds: Lucene HNSW at Elasticsearch's defaults (m 16, beam width 100) for every field,
   * its merges on {@code mergeThreads} workers of {@code pool}.
   */
  static Codec hnswCodec(int mergeThreads, ExecutorService pool) {
    KnnVectorsFormat hnsw = new Lucene99HnswVectorsFormat(16, 100, mergeThreads, pool);
    return new Lucene104Codec() {
      @Override
      public KnnVectorsFormat getKnnVectorsFormatForField(String field) {
        return hnsw;
      }
    };
  }

  /** Like {@link #build}, the documents added from {@code threads} threads (each a contiguous share). */
  static double buildConcurrently(Directory dir, Codec codec, FieldType type, float[][] vectors, int threads)
      throws IOException {
    long start = System.nanoTime();
    IndexWriterConfig config = new IndexWriterConfig().setCodec(codec).setRAMBufferSizeMB(2048);
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      IntStream.range(0, threads).parallel().forEach(t -> {
        try {
          for (int i = (int) ((long) t * vectors.length / threads), end = (int) ((long) (t + 1) * vectors.length / threads);
              i < end; i++) {
            Document doc = new Document();
            doc.add(new KnnFloatVectorField("vec", vectors[i], type));
            doc.add(new NumericDocValuesField("id", i));
            writer.addDocument(doc);
          }
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
      writer.forceMerge(1);
    }
    return seconds(start);
  }

  private String defaultPath(int n) {
    return n <= KnnGraphPaths.EXACT_MAX_VECTORS ? "gpu-exact" : "gpu-ivf";
  }

  private void record(String data, String step, String path, int k, double seconds, double recall) {
    String row = String.format(Locale.ROOT, "%s,%s,%s,%s,%.2f,%s", data, step, path, k < 0 ? "" : Integer.toString(k),
        seconds, recall < 0 ? "" : String.format(Locale.ROOT, "%.4f", recall));
    rows.add(row);
    System.out.println("  -> " + row);
  }

  /** One segment (flush at 2 GB of buffer, then force-merge), doc value "id" = position. */
  private static double build(Directory dir, Codec codec, FieldType type, float[][] vectors) throws IOException {
    long start = System.nanoTime();
    IndexWriterConfig config = new IndexWriterConfig().setCodec(codec).setRAMBufferSizeMB(2048);
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (int i = 0; i < vectors.length; i++) {
        Document doc = new Document();
        doc.add(new KnnFloatVectorField("vec", vectors[i], type));
        doc.add(new NumericDocValuesField("id", i));
        writer.addDocument(doc);
      }
      writer.forceMerge(1);
    }
    return seconds(start);
  }

  /** Per global doc id, its "id" doc value. */
  private static int[] ids(DirectoryReader reader) throws IOException {
    int[] ids = new int[reader.maxDoc()];
    for (LeafReaderContext leaf : reader.leaves()) {
      NumericDocValues values = leaf.reader().getNumericDocValues("id");
      for (int doc = values.nextDoc(); doc != NumericDocValues.NO_MORE_DOCS; doc = values.nextDoc()) {
        ids[leaf.docBase + doc] = (int) values.longValue();
      }
    }
    return ids;
  }

  private static int[] sample(int n) {
    Random random = new Random(99);
    return random.ints(0, n).distinct().limit(Math.min(SAMPLE, n)).sorted().toArray();
  }

  /** Per sampled row, its k nearest other rows by squared L2 (ties: lower id), all cores. */
  private static int[][] exactRows(float[][] vectors, int[] sample, int k) {
    return IntStream.range(0, sample.length).parallel().mapToObj(r -> {
      int self = sample[r];
      float[] best = new float[k];
      int[] ids = new int[k];
      Arrays.fill(best, Float.POSITIVE_INFINITY);
      Arrays.fill(ids, Integer.MAX_VALUE);
      for (int i = 0; i < vectors.length; i++) {
        if (i == self) {
          continue;
        }
        float d = VectorUtil.squareDistance(vectors[self], vectors[i]);
        if (d < best[k - 1]) {
          int j = k - 1;
          while (j > 0 && best[j - 1] > d) {
            best[j] = best[j - 1];
            ids[j] = ids[j - 1];
            j--;
          }
          best[j] = d;
          ids[j] = i;
        }
      }
      return ids;
    }).toArray(int[][]::new);
  }

  /** Share of each sampled row's k exact neighbours (the truth's first k) found in its row. */
  private static double recall(int[][] found, int[][] truth, int k) {
    long hits = 0;
    for (int r = 0; r < truth.length; r++) {
      int[] expected = Arrays.copyOf(truth[r], k);
      Arrays.sort(expected);
      for (int id : found[r]) {
        if (id >= 0 && Arrays.binarySearch(expected, id) >= 0) {
          hits++;
        }
      }
    }
    return hits / ((double) truth.length * k);
  }

  private static double seconds(long startNanos) {
    return (System.nanoTime() - startNanos) / 1e9;
  }
}
