package org.gpuvectors.codec;

import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.IntStream;
import java.util.zip.GZIPInputStream;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.IOUtils;
import org.apache.lucene.util.VectorUtil;

/**
 * The ann-benchmarks {@code fashion-mnist-784-euclidean} set (60k train x 784, 10k test queries,
 * k = 10) through Lucene, side by side in one run: our {@code flat} field searched exactly on the
 * GPU (batches of queries through {@link KnnBatchSearcher}) and on the CPU path, {@code ivf_flat} and {@code ivf_pq} at
 * several nprobe (GPU batches; CPU path at one), and Lucene's HNSW
 * (m = 16, beam width 100, as Elasticsearch's defaults) at several search widths on all cores.
 * Recall@10 against a brute-force ground truth; queries/s; build times. Not a test: a program
 * whose output goes into docs/notes/BENCHMARKS.md and the recall-vs-queries/s plot.
 *
 * <pre>
 * java ... org.gpuvectors.codec.FashionMnistBenchmark DATA_DIR OUT_DIR [TRAIN_LIMIT QUERY_LIMIT]
 * </pre>
 *
 * DATA_DIR holds Debian's dataset-fashion-mnist files (train-images-idx3-ubyte.gz,
 * t10k-images-idx3-ubyte.gz); pixels become float values 0..255, as in ann-benchmarks.
 */
public final class FashionMnistBenchmark {

  private static final int K = 10;

  public static void main(String[] args) throws Exception {
    Path data = Path.of(args[0]);
    Path out = Path.of(args[1]);
    Files.createDirectories(out);
    int threads = Runtime.getRuntime().availableProcessors();
    float[][] train = readImages(data.resolve("train-images-idx3-ubyte.gz"));
    float[][] test = readImages(data.resolve("t10k-images-idx3-ubyte.gz"));
    if (args.length > 3) { // a smaller run, for a smoke test
      train = Arrays.copyOf(train, Integer.parseInt(args[2]));
      test = Arrays.copyOf(test, Integer.parseInt(args[3]));
    }
    System.out.printf(Locale.ROOT, "fashion-mnist: %d x %d train, %d queries, %d threads%n", train.length, train[0].length, test.length, threads);

    long t0 = System.nanoTime();
    int[][] truth = groundTruth(train, test);
    System.out.printf(Locale.ROOT, "ground truth (brute force, %d threads): %.1f s%n", threads, seconds(t0));

    List<String> rows = new ArrayList<>();
    rows.add("system,parameter,recall,queries_per_s,build_s");
    GpuSearchService service = GpuSearchServices.current();
    System.out.println("GPU: " + (service.gpuActive() ? service.deviceName() : service.unusableReason()));

    // flat field: exact search, GPU path (batches) and CPU path
    Path flatPath = Files.createTempDirectory("gv-fmnist-flat");
    try (Directory dir = FSDirectory.open(flatPath)) {
      FieldType type =
          GpuVectorsFormat.markField(
              KnnFloatVectorField.createFieldType(train[0].length, VectorSimilarityFunction.EUCLIDEAN), IndexType.FLAT);
      double build = build(dir, new GpuVectorsCodec(), type, train);
      System.out.printf(Locale.ROOT, "flat index build: %.1f s%n", build);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        if (service.gpuActive()) {
          KnnBatchSearcher.search(searcher, "vec", Arrays.copyOf(test, 1), K, null); // upload + warm-up
          for (int batch : new int[] {1, 100, 1000, 10_000}) {
            TopDocs[] all = new TopDocs[test.length];
            double qps = bestOf3(searcher, test, batch, K, all, service, "flat batch=" + batch);
            rows.add(row("gpu-exact", "batch=" + batch, recall(all, truth), qps, build));
          }
        }
        service.setEnabled(false);
        int cpuQueries = Math.min(200, test.length);
        long s = System.nanoTime();
        TopDocs[] cpu = KnnBatchSearcher.search(searcher, "vec", Arrays.copyOf(test, cpuQueries), K, null);
        rows.add(row("cpu-exact-1-thread", "batch=" + cpuQueries, recall(cpu, Arrays.copyOf(truth, cpuQueries)), cpuQueries / seconds(s), build));
        service.setEnabled(true);
      }
    } finally {
      IOUtils.rm(flatPath);
    }

    if (service.gpuActive()) {
      ivf(IndexType.IVF_FLAT, new int[] {1, 2, 4, 8, 16, 32, 64}, train, test, truth, rows, service);
      ivf(IndexType.IVF_PQ, new int[] {4, 8, 12, 16, 32}, train, test, truth, rows, service);
    }

    graph(train, test, truth, rows, service, threads);

    // Lucene HNSW, m=16, beam width 100, built with all cores, one segment; queries on all cores
    Path hnswPath = Files.createTempDirectory("gv-fmnist-hnsw");
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try (Directory dir = FSDirectory.open(hnswPath)) {
      Codec codec = KnnGraphBenchmark.hnswCodec(threads, pool);
      FieldType type = KnnFloatVectorField.createFieldType(train[0].length, VectorSimilarityFunction.EUCLIDEAN);
      double build = build(dir, codec, type, train);
      System.out.printf(Locale.ROOT, "Lucene HNSW build + force-merge (%d threads): %.1f s%n", threads, build);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        for (int ef : new int[] {10, 20, 40, 80, 120, 200, 400}) {
          searchHnsw(searcher, test, ef, pool); // warm-up
          long s = System.nanoTime();
          TopDocs[] all = searchHnsw(searcher, test, ef, pool);
          rows.add(row("lucene-hnsw-" + threads + "-threads", "ef=" + ef, recall(all, truth), test.length / seconds(s), build));
        }
      }
    } finally {
      pool.shutdown();
      IOUtils.rm(hnswPath);
    }

    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("fashion-mnist.csv")))) {
      rows.forEach(w::println);
    }
    System.out.printf(Locale.ROOT, "%n%-24s %-12s %8s %14s %9s%n", "system", "parameter", "recall", "queries/s", "build s");
    for (String r : rows.subList(1, rows.size())) {
      String[] c = r.split(",");
      System.out.printf(Locale.ROOT, "%-24s %-12s %8s %14.0f %9s%n", c[0], c[1], c[2], Double.parseDouble(c[3]), c[4]);
    }
    GpuSearchServices.closeDefault();
  }

  /**
   * {@code ivf_flat} or {@code ivf_pq} (default nlist: about sqrt(60k) = 245 lists; ivf_pq: default
   * pq_m = 784 / 8 = 98 bytes a vector, 8 bits, 8 x k candidates re-ranked) at several nprobe: one index
   * per nprobe (the mapping's value; num_candidates stays at k, so the effort is the lists alone),
   * trained on the GPU at flush/merge; batches of 10k queries on the GPU (and batch 1 at nprobe 16),
   * plus the CPU path on one thread for the same lists at nprobe 16.
   */
  private static void ivf(IndexType indexType, int[] nprobes, float[][] train, float[][] test, int[][] truth,
                          List<String> rows, GpuSearchService service) throws IOException {
    String name = indexType.typeName().replace('_', '-');
    for (int nprobe : nprobes) {
      Path path = Files.createTempDirectory("gv-fmnist-ivf");
      try (Directory dir = FSDirectory.open(path)) {
        FieldType type =
            GpuVectorsFormat.markField(
                KnnFloatVectorField.createFieldType(train[0].length, VectorSimilarityFunction.EUCLIDEAN),
                new IndexParams(indexType, java.util.Map.of(IndexParams.NPROBE, nprobe)));
        long assignedBefore = service.stats().gpuAssignedVectors();
        double build = build(dir, new GpuVectorsCodec(), type, train);
        System.out.printf(Locale.ROOT, "%s nprobe=%d: build + force-merge %.1f s (%d vectors assigned on the GPU)%n",
            indexType, nprobe, build, service.stats().gpuAssignedVectors() - assignedBefore);
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader);
          KnnBatchSearcher.search(searcher, "vec", Arrays.copyOf(test, 1), K, null); // upload + warm-up
          for (int batch : nprobe == 16 ? new int[] {1, 10_000} : new int[] {10_000}) {
            TopDocs[] all = new TopDocs[test.length];
            double qps = bestOf3(searcher, test, batch, K, all, service, indexType + " nprobe=" + nprobe + " batch=" + batch);
            rows.add(row(batch == 1 ? "gpu-" + name + "-batch-1" : "gpu-" + name, "nprobe=" + nprobe, recall(all, truth), qps, build));
          }
          if (nprobe == 16) {
            service.setEnabled(false);
            int cpuQueries = Math.min(500, test.length);
            long s = System.nanoTime();
            TopDocs[] cpu = KnnBatchSearcher.search(searcher, "vec", Arrays.copyOf(test, cpuQueries), K, null);
            rows.add(row("cpu-" + name + "-1-thread", "nprobe=" + nprobe, recall(cpu, Arrays.copyOf(truth, cpuQueries)), cpuQueries / seconds(s), build));
            service.setEnabled(true);
          }
        }
      } finally {
        IOUtils.rm(path);
      }
    }
  }

  /**
   * {@code graph} at the default degree (32) and build degree (64), one segment, with {@code
   * search_width} 16 so that num_candidates sets the beam width (max(search_width, num_candidates)):
   * rows at several widths. The k-NN step of the build runs on the GPU when there is one (printed).
   * With a GPU: batches of 10k (and one query at a time at width 64) through {@link KnnBatchSearcher}
   * asking num_candidates hits, of which the top 10 count, as Elasticsearch does; then the CPU's
   * beam search of the same graph on all cores (Lucene's kNN query, the GPU switched off).
   */
  private static void graph(float[][] train, float[][] test, int[][] truth, List<String> rows, GpuSearchService service,
                            int threads) throws Exception {
    Path path = Files.createTempDirectory("gv-fmnist-graph");
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try (Directory dir = FSDirectory.open(path)) {
      FieldType type =
          GpuVectorsFormat.markField(
              KnnFloatVectorField.createFieldType(train[0].length, VectorSimilarityFunction.EUCLIDEAN),
              new IndexParams(IndexType.GRAPH, java.util.Map.of(IndexParams.SEARCH_WIDTH, 16)));
      long gpuBefore = service.stats().gpuKnnGraphVectors();
      long cpuBefore = service.stats().cpuKnnGraphVectors();
      double build;
      try (BuildPhaseLog log = new BuildPhaseLog()) {
        build = build(dir, new GpuVectorsCodec(), type, train);
        System.out.printf(Locale.ROOT, "graph: build + force-merge %.1f s (k-NN graph of %d vectors on the GPU, %d on the CPU)%n",
            build, service.stats().gpuKnnGraphVectors() - gpuBefore, service.stats().cpuKnnGraphVectors() - cpuBefore);
        log.lines().forEach(line -> System.out.println("  " + line));
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        if (service.gpuActive()) {
          KnnBatchSearcher.search(searcher, "vec", Arrays.copyOf(test, 1), K, null); // upload + warm-up
          for (int candidates : new int[] {16, 32, 64, 128, 256}) {
            for (int batch : candidates == 64 ? new int[] {1, 10_000} : new int[] {10_000}) {
              TopDocs[] all = new TopDocs[test.length];
              double qps = bestOf3(searcher, test, batch, candidates, all, service, "graph width=" + candidates + " batch=" + batch);
              rows.add(row(batch == 1 ? "gpu-graph-batch-1" : "gpu-graph", "width=" + candidates, recall(topK(all), truth), qps, build));
            }
          }
        }
        service.setEnabled(false);
        for (int candidates : new int[] {16, 32, 64, 128, 256}) {
          searchHnsw(searcher, test, candidates, pool); // warm-up
          long s = System.nanoTime();
          TopDocs[] all = searchHnsw(searcher, test, candidates, pool);
          rows.add(row("cpu-graph-" + threads + "-threads", "width=" + candidates, recall(all, truth), test.length / seconds(s), build));
        }
        service.setEnabled(true);
      }
    } finally {
      pool.shutdown();
      IOUtils.rm(path);
    }
  }

  /**
   * Queries/s of the best of 3 runs over all queries in batches through {@link KnnBatchSearcher}
   * (the first run pays JIT and device-pool warm-up), results of the last run in {@code all}; prints
   * where the best run's time went: host work outside the GPU passes, the passes' host enqueue, and
   * their wait for the device.
   */
  private static double bestOf3(IndexSearcher searcher, float[][] test, int batch, int k, TopDocs[] all,
                                GpuSearchService service, String label) throws IOException {
    double best = 0;
    String breakdown = "";
    for (int run = 0; run < 3; run++) {
      var stats = service.stats();
      long passes = stats.batches(), gpu = stats.gpuNanos(), enqueue = stats.enqueueNanos(), wait = stats.waitNanos();
      long s = System.nanoTime();
      for (int from = 0; from < test.length; from += batch) {
        TopDocs[] part = KnnBatchSearcher.search(searcher, "vec", Arrays.copyOfRange(test, from, Math.min(test.length, from + batch)), k, null);
        System.arraycopy(part, 0, all, from, part.length);
      }
      long wall = System.nanoTime() - s;
      double qps = test.length / (wall / 1e9);
      if (qps > best) {
        best = qps;
        breakdown = String.format(Locale.ROOT,
            "%s: %.1f ms wall, %d passes: %.1f ms in passes (host enqueue %.1f, device wait %.1f), %.1f ms outside",
            label, wall / 1e6, stats.batches() - passes, (stats.gpuNanos() - gpu) / 1e6, (stats.enqueueNanos() - enqueue) / 1e6,
            (stats.waitNanos() - wait) / 1e6, (wall - (stats.gpuNanos() - gpu)) / 1e6);
      }
    }
    System.out.println(breakdown);
    return best;
  }

  /** Top K of Lucene's kNN query for max(K, ef) candidates, queries spread over all cores (HNSW's ef; graph's width). */
  private static TopDocs[] searchHnsw(IndexSearcher searcher, float[][] queries, int ef, ExecutorService pool) throws Exception {
    TopDocs[] results = new TopDocs[queries.length];
    List<Future<?>> futures = new ArrayList<>();
    int threads = Runtime.getRuntime().availableProcessors();
    for (int t = 0; t < threads; t++) {
      int first = t;
      futures.add(pool.submit(() -> {
        for (int q = first; q < queries.length; q += threads) {
          TopDocs td = searcher.search(new KnnFloatVectorQuery("vec", queries[q], Math.max(K, ef)), K);
          results[q] = td;
        }
        return null;
      }));
    }
    for (Future<?> f : futures) {
      f.get();
    }
    return results;
  }

  private static double build(Directory dir, Codec codec, FieldType type, float[][] vectors) throws IOException {
    long start = System.nanoTime();
    IndexWriterConfig config = new IndexWriterConfig().setCodec(codec).setRAMBufferSizeMB(512);
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (int i = 0; i < vectors.length; i++) {
        Document doc = new Document();
        doc.add(new KnnFloatVectorField("vec", vectors[i], type));
        writer.addDocument(doc);
        if ((i + 1) % 20_000 == 0) {
          System.out.printf(Locale.ROOT, "  indexed %d / %d (%.0f s)%n", i + 1, vectors.length, seconds(start));
        }
      }
      writer.forceMerge(1);
    }
    return seconds(start);
  }

  /**
   * Exact top-K ids per query (squared L2), all cores; ties broken by id; min(K, base) of them (the
   * ground truth of {@link IvfPqScaleBenchmark} without a GPU too).
   */
  static int[][] groundTruth(float[][] base, float[][] queries) {
    return IntStream.range(0, queries.length)
        .parallel()
        .mapToObj(
            q -> {
              float[] best = new float[K];
              int[] ids = new int[K];
              Arrays.fill(best, Float.POSITIVE_INFINITY);
              Arrays.fill(ids, Integer.MAX_VALUE);
              for (int i = 0; i < base.length; i++) {
                float d = VectorUtil.squareDistance(base[i], queries[q]);
                if (d < best[K - 1]) {
                  int j = K - 1;
                  while (j > 0 && best[j - 1] > d) {
                    best[j] = best[j - 1];
                    ids[j] = ids[j - 1];
                    j--;
                  }
                  best[j] = d;
                  ids[j] = i;
                }
              }
              return Arrays.copyOf(ids, Math.min(K, base.length));
            })
        .toArray(int[][]::new);
  }

  /** Recall@K: fraction of the true K nearest found among the K returned (one segment: doc = id). */
  /** The first K hits of each result (a search that asked num_candidates hits, as Elasticsearch keeps k of them). */
  private static TopDocs[] topK(TopDocs[] results) {
    TopDocs[] top = new TopDocs[results.length];
    for (int q = 0; q < results.length; q++) {
      ScoreDoc[] hits = results[q].scoreDocs;
      top[q] = new TopDocs(results[q].totalHits, Arrays.copyOf(hits, Math.min(K, hits.length)));
    }
    return top;
  }

  /** Recall@10 of {@code results} against the exact top-10 ids {@code truth}, over all queries. */
  static double recall(TopDocs[] results, int[][] truth) {
    long found = 0;
    for (int q = 0; q < truth.length; q++) {
      int[] expected = truth[q].clone();
      Arrays.sort(expected);
      for (ScoreDoc sd : results[q].scoreDocs) {
        if (Arrays.binarySearch(expected, sd.doc) >= 0) {
          found++;
        }
      }
    }
    return (double) found / ((long) truth.length * K);
  }

  private static String row(String system, String parameter, double recall, double qps, double build) {
    return String.format(Locale.ROOT, "%s,%s,%.4f,%.1f,%.1f", system, parameter, recall, qps, build);
  }

  /** IDX3 images (gzip): magic, count, rows, cols, then unsigned bytes. */
  public static float[][] readImages(Path file) throws IOException {
    try (InputStream raw = Files.newInputStream(file);
        DataInputStream in = new DataInputStream(new GZIPInputStream(raw, 1 << 16))) {
      int magic = in.readInt();
      if (magic != 2051) {
        throw new IOException(file + ": not an IDX3 image file (magic " + magic + ")");
      }
      int count = in.readInt();
      int dims = in.readInt() * in.readInt();
      byte[] pixels = new byte[dims];
      float[][] images = new float[count][dims];
      for (int i = 0; i < count; i++) {
        in.readFully(pixels);
        for (int d = 0; d < dims; d++) {
          images[i][d] = pixels[d] & 0xFF;
        }
      }
      return images;
    }
  }

  private static double seconds(long startNanos) {
    return (System.nanoTime() - startNanos) / 1e9;
  }
}
