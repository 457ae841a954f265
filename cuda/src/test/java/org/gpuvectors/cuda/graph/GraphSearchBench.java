package org.gpuvectors.cuda.graph;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.gpuvectors.cuda.BenchUtil;
import org.gpuvectors.cuda.FashionLike;
import org.gpuvectors.cuda.FilterWidening;
import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.GraphConfig;
import org.gpuvectors.cuda.GraphReference;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuFlatIndex;

/**
 * Graph index search on the GPU ({@link GpuGraphIndex}): recall@10 and queries/s at batch 10k and batch 1 for search
 * widths 16 / 32 / 64 / 128 / 256, with both visited sets (hash table, Bloom filter), squared L2; then with the Bloom
 * filter: batch-1 latency for parents 1 / 2 / 4 x 256 / 1024 threads, 8 / 16 x 1024 (and the batch-size default) at
 * widths 32 / 64 / 128
 * ({@code latency} rows), and 1 %, 10 %, 50 % random filters (one mask for all queries) at widths 32 / 64 / 128,
 * each as the codec's widened walk and as the exact search of the accepted vectors, with the mode the codec's rule
 * ({@link FilterWidening}) picks marked {@code *} ({@code filter} rows). Not a test.
 *
 * <p>The graph is built here, not by the codec: the k-NN graph with k = build_degree = 2 x degree by {@link
 * GpuFlatIndex}'s exact search on the GPU (every vector a query, itself dropped), then {@link GraphReference#graph}
 * (nearest degree / 2 + reverse links, filled up from the k-NN list) on the host; 64 seeds drawn with seed 42. The
 * build time printed is both steps. Ground truth: GpuFlatIndex's exact search of the queries.
 *
 * <p>Data sets: Fashion-MNIST from {@code fmnist-dir} (Debian's dataset-fashion-mnist files: 60k vectors, 10k
 * queries) when present, else {@link FashionLike} 60k x 784 synthetic images; then, when {@code n} > 0, n x 128
 * clustered synthetic ({@link FashionLike#clustered}, 1000 clusters; 10k queries from the same clusters).
 * Timings: a full synchronous search() call (query upload, kernel, result download); batch 10k: median of 3 after a
 * warm-up; batch 1: median over 200 queries. Walks planned by the default {@link GraphConfig}, but for the latency
 * section's sweep of parents and threads (a device configured per setting). Writes $OUT/graph_bench.csv.
 *
 * <p>Usage: {@code GraphSearchBench [fmnist-dir] [n] [degree]} (defaults /tmp/fmnist, 1000000, 32).
 */
public final class GraphSearchBench {
  private static final int[] WIDTHS = {16, 32, 64, 128, 256};
  private static final int K = 10;
  private static final int BATCH = 10_000;
  private static final int SINGLE_QUERIES = 200;
  private static final int[] LATENCY_WIDTHS = {32, 64, 128};
  private static final int[] LATENCY_PARENTS = {1, 2, 4, 8, 16};
  private static final int[] LATENCY_THREADS = {256, 1024};
  /** Parents from which only the widest block is tried (a 256-thread block scores 8+ parents' neighbours slowly). */
  private static final int WIDE_ONLY_PARENTS = 8;
  /** System property {@code gv.bench.graph.sections}: which of widths, latency, filters to run (default all). */
  private static final List<String> SECTIONS =
      List.of(System.getProperty("gv.bench.graph.sections", "widths,latency,filters").split(","));
  private static final double[] FILTERS = {0.01, 0.1, 0.5};
  private static final int[] FILTER_WIDTHS = {32, 64, 128};
  /** The csv's visited column: the walk's one visited set (a Bloom filter). */
  private static final String VISITED = "BLOOM";

  public static void main(String[] args) throws Exception {
    Path fmnist = Path.of(args.length > 0 ? args[0] : "/tmp/fmnist");
    int n = args.length > 1 ? Integer.parseInt(args[1]) : 1_000_000;
    int degree = args.length > 2 ? Integer.parseInt(args[2]) : 32;
    try (GpuDevice d = GpuDevice.open(0);
         PrintWriter csv = BenchUtil.csv("graph_bench.csv",
             "data,n,dims,degree,visited,width,batch,recall_at_10,median_ms,queries_per_s,section,filter,mode,parents,"
                 + "threads")) {
      System.out.printf("GPU %s; graph search, degree %d, build degree %d, k = %d; parents %s, threads %s%n", d.name(),
          degree, 2 * degree, K,
          "by batch (width / 8 within 4..16 below " + GpuGraphIndex.LATENCY_BATCH + " queries, else 1)",
          "by batch (" + GpuGraphIndex.LATENCY_BATCH_THREADS + " below " + GpuGraphIndex.LATENCY_BATCH + " queries, "
              + GpuGraphIndex.SMALL_BATCH_THREADS + " below " + GpuGraphIndex.SMALL_BATCH + ", else 128)");
      float[] x = FashionLike.readIdx(fmnist.resolve("train-images-idx3-ubyte.gz"), 60_000);
      float[] q = FashionLike.readIdx(fmnist.resolve("t10k-images-idx3-ubyte.gz"), BATCH);
      String name = "fashion-mnist";
      if (x == null || q == null) {
        name = "fashion-like";
        x = FashionLike.vectors(60_000, 1);
        q = FashionLike.vectors(BATCH, 2);
      }
      run(d, csv, name, x, x.length / FashionLike.DIMS, FashionLike.DIMS, q, degree);
      if (n > 0) {
        int dims = 128;
        run(d, csv, "clustered", FashionLike.clustered(n, dims, 1000, 3), n, dims,
            FashionLike.clustered(BATCH, dims, 1000, 4), degree);
      }
    }
  }

  private static void run(GpuDevice d, PrintWriter csv, String name, float[] x, int n, int dims, float[] queries,
                          int degree) {
    int nq = queries.length / dims;
    long t0 = System.nanoTime();
    int buildDegree = Math.min(n - 1, 2 * degree);
    int[] truth;
    int[] knn;
    try (GpuFlatIndex flat = GpuFlatIndex.upload(d, x, n, dims, Metric.L2)) {
      flat.setPrecision(GpuFlatIndex.Precision.AUTO); // TF32 candidates + FP32 re-rank for the big batches: same ids
      knn = knnGraph(flat, x, n, dims, buildDegree);
      long knnNanos = System.nanoTime() - t0;
      System.out.printf("%s %d x %d: k-NN graph (k = %d) on the GPU in %.1f s%n", name, n, dims, buildDegree,
          knnNanos / 1e9);
      SearchResult exact = flat.search(queries, nq, K, null);
      truth = GpuGraphIndexGpuTest.ids(exact);
    }
    long t1 = System.nanoTime();
    int[] graph = GraphReference.graph(knn, n, buildDegree, degree);
    knn = null;
    int[] seeds = GraphReference.seeds(n, 64);
    System.out.printf("%s: pruning + reverse links on the host in %.1f s; build total %.1f s%n", name,
        (System.nanoTime() - t1) / 1e9, (System.nanoTime() - t0) / 1e9);
    try (GpuGraphIndex index = GpuGraphIndex.upload(d, x, n, dims, Metric.L2, graph, degree, seeds)) {
      System.out.printf("%-14s %-6s %6s %6s %10s %10s %12s%n", "data", "visit", "width", "batch", "recall@10",
          "median ms", "queries/s");
      if (SECTIONS.contains("widths")) {
        for (int width : WIDTHS) {
          // batch 10k
          double[] t = new double[3];
          SearchResult res = null;
          for (int r = -1; r < t.length; r++) {
            long s = System.nanoTime();
            res = index.search(queries, nq, K, new SearchParams.Graph(width), null);
            if (r >= 0) {
              t[r] = (System.nanoTime() - s) / 1e6;
            }
          }
          double recall = GraphReference.recall(GpuGraphIndexGpuTest.ids(res), K, truth, K, nq, K);
          print(csv, name, n, dims, degree, width, nq, recall, BenchUtil.median(t));
          // batch 1
          int[] found = new int[SINGLE_QUERIES * K];
          double ms = single(index, queries, new SearchParams.Graph(width), null, found);
          print(csv, name, n, dims, degree, width, 1, GraphReference.recall(found, K, truth, K, SINGLE_QUERIES, K),
              ms);
        }
      }
      if (SECTIONS.contains("latency")) {
        latency(csv, name, on -> GpuGraphIndex.upload(on, x, n, dims, Metric.L2, graph, degree, seeds), queries, truth);
      }
      if (SECTIONS.contains("filters")) {
        filtered(d, csv, name, x, index, queries);
      }
    }
  }

  /**
   * Batch 1 at parents 1 / 2 / 4 x 256 / 1024 threads, 8 / 16 x 1024, and the batch-size default (0 / 0): per
   * setting a device configured with it ({@link GraphConfig}), the index uploaded there.
   */
  private static void latency(PrintWriter csv, String name,
                              java.util.function.Function<GpuDevice, GpuGraphIndex> upload, float[] queries,
                              int[] truth) {
    System.out.printf("%n%-14s %6s %7s %7s %10s %10s %12s%n", "data", "width", "parents", "threads", "recall@10",
        "median ms", "queries/s");
    List<int[]> settings = new ArrayList<>();
    settings.add(new int[] {0, 0});
    for (int p : LATENCY_PARENTS) {
      for (int t : LATENCY_THREADS) {
        if (p >= WIDE_ONLY_PARENTS && t != LATENCY_THREADS[LATENCY_THREADS.length - 1]) {
          continue;
        }
        settings.add(new int[] {p, t});
      }
    }
    for (int[] setting : settings) {
      GraphConfig graph = GraphConfig.defaults().withParents(setting[0]).withThreads(setting[1]);
      try (GpuDevice on = GpuDevice.open(0, GpuConfig.builder().graph(graph).build());
           GpuGraphIndex index = upload.apply(on)) {
        for (int width : LATENCY_WIDTHS) {
          GpuGraphIndex.SearchPlan plan = GpuGraphIndex.SearchPlan.of(graph, index.dims(), index.degree(), K, width,
              1);
          int[] found = new int[SINGLE_QUERIES * K];
          double ms = single(index, queries, new SearchParams.Graph(width), null, found);
          double recall = GraphReference.recall(found, K, truth, K, SINGLE_QUERIES, K);
          String label = (setting[0] == 0 ? "(" + plan.parents() + ")" : String.valueOf(plan.parents()));
          String tlabel = (setting[1] == 0 ? "(" + plan.threads() + ")" : String.valueOf(plan.threads()));
          System.out.printf("%-14s %6d %7s %7s %10.4f %10.3f %12.0f%n", name, width, label, tlabel, recall, ms,
              1 / (ms * 1e-3));
          row(csv, name, index, width, 1, recall, ms, "latency", 1.0, "walk", plan.parents(), plan.threads());
        }
      }
    }
  }

  /**
   * 1 / 10 / 50 % filters: per width the codec's widened walk and the exact search, at batch 10k and batch 1; the
   * mode the rule picks is marked *. Ground truth: the flat search of the same vectors with the mask.
   */
  private static void filtered(GpuDevice d, PrintWriter csv, String name, float[] x, GpuGraphIndex index,
                               float[] queries) {
    int n = index.size();
    int dims = index.dims();
    int nq = queries.length / dims;
    System.out.printf("%n%-14s %6s %6s %8s %6s %10s %10s %12s%n", "data", "filter", "width", "mode", "batch",
        "recall@10", "median ms", "queries/s");
    Random r = new Random(42);
    for (double p : FILTERS) {
      long[] mask = GraphReference.mask(n, p, r);
      long accepted = 0;
      for (long w : mask) {
        accepted += Long.bitCount(w);
      }
      int[] truth;
      try (GpuFlatIndex flat = GpuFlatIndex.upload(d, x, n, dims, Metric.L2)) {
        truth = GpuGraphIndexGpuTest.ids(flat.search(queries, nq, K, mask));
      }
      for (int width : FILTER_WIDTHS) {
        boolean exactPicked = FilterWidening.exact(width, K, index.degree(), index.numSeeds(), accepted, n);
        int walkWidth = Math.min(GpuGraphIndex.MAX_WIDTH, FilterWidening.width(width, K, accepted, n));
        for (boolean exact : new boolean[] {false, true}) {
          SearchParams params = exact ? SearchParams.EXACT : new SearchParams.Graph(walkWidth);
          String mode = (exact ? "exact" : "walk " + walkWidth) + (exact == exactPicked ? "*" : "");
          double[] t = new double[3];
          SearchResult res = null;
          for (int i = -1; i < t.length; i++) {
            long s = System.nanoTime();
            res = index.search(queries, nq, K, params, mask);
            if (i >= 0) {
              t[i] = (System.nanoTime() - s) / 1e6;
            }
          }
          double recall = GraphReference.recall(GpuGraphIndexGpuTest.ids(res), K, truth, K, nq, K);
          filterRow(csv, name, index, p, width, mode, nq, recall, BenchUtil.median(t));
          int[] found = new int[SINGLE_QUERIES * K];
          double ms = single(index, queries, params, mask, found);
          filterRow(csv, name, index, p, width, mode, 1, GraphReference.recall(found, K, truth, K, SINGLE_QUERIES, K),
              ms);
        }
      }
    }
  }

  private static void filterRow(PrintWriter csv, String name, GpuGraphIndex index, double p, int width, String mode,
                                int batch, double recall, double ms) {
    System.out.printf("%-14s %5.0f%% %6d %8s %6d %10.4f %10.3f %12.0f%n", name, 100 * p, width, mode, batch, recall,
        ms, batch / (ms * 1e-3));
    GpuGraphIndex.SearchPlan plan = GpuGraphIndex.SearchPlan.of(index.dims(), index.degree(), K, width, batch);
    row(csv, name, index, width, batch, recall, ms, "filter", p, mode.replace(' ', '_'), plan.parents(),
        plan.threads());
  }

  /** Median ms of {@link #SINGLE_QUERIES} searches of one query (after 10 warm-ups); their ids into {@code found}. */
  private static double single(GpuGraphIndex index, float[] queries, SearchParams params, long[] mask, int[] found) {
    int dims = index.dims();
    double[] one = new double[SINGLE_QUERIES];
    for (int i = -10; i < SINGLE_QUERIES; i++) {
      int qi = Math.floorMod(i, SINGLE_QUERIES);
      float[] query = Arrays.copyOfRange(queries, qi * dims, (qi + 1) * dims);
      long s = System.nanoTime();
      SearchResult r1 = index.search(query, 1, K, params, mask);
      if (i >= 0) {
        one[i] = (System.nanoTime() - s) / 1e6;
        System.arraycopy(GpuGraphIndexGpuTest.ids(r1), 0, found, i * K, K);
      }
    }
    return BenchUtil.median(one);
  }

  private static void print(PrintWriter csv, String name, int n, int dims, int degree, int width, int batch,
                            double recall, double ms) {
    String v = VISITED;
    double qps = batch / (ms * 1e-3);
    System.out.printf("%-14s %-6s %6d %6d %10.4f %10.3f %12.0f%n", name, v, width, batch, recall, ms, qps);
    GpuGraphIndex.SearchPlan plan = GpuGraphIndex.SearchPlan.of(dims, degree, K, width, batch);
    csv.printf("%s,%d,%d,%d,%s,%d,%d,%.4f,%.4f,%.1f,widths,1.0,walk,%d,%d%n", name, n, dims, degree, v, width, batch,
        recall, ms, qps, plan.parents(), plan.threads());
    csv.flush();
  }

  private static void row(PrintWriter csv, String name, GpuGraphIndex index, int width, int batch, double recall,
                          double ms, String section, double filter, String mode, int parents, int threads) {
    csv.printf("%s,%d,%d,%d,%s,%d,%d,%.4f,%.4f,%.1f,%s,%.2f,%s,%d,%d%n", name, index.size(), index.dims(),
        index.degree(), VISITED, width, batch, recall, ms, batch / (ms * 1e-3), section, filter, mode,
        parents, threads);
    csv.flush();
  }

  /** Per vector its kk nearest others (exact, on the GPU, in batches of queries; itself dropped): n x kk. */
  static int[] knnGraph(GpuFlatIndex flat, float[] x, int n, int dims, int kk) {
    int[] knn = new int[n * kk];
    Arrays.fill(knn, -1);
    int block = 10_000;
    for (int q0 = 0; q0 < n; q0 += block) {
      int count = Math.min(block, n - q0);
      float[] qs = Arrays.copyOfRange(x, q0 * dims, (q0 + count) * dims);
      SearchResult r = flat.search(qs, count, kk + 1, null);
      for (int q = 0; q < count; q++) {
        int node = q0 + q;
        int c = 0;
        for (int i = 0; i < kk + 1 && c < kk; i++) {
          int id = r.id(q, i);
          if (id >= 0 && id != node) {
            knn[node * kk + c++] = id;
          }
        }
      }
    }
    return knn;
  }
}
