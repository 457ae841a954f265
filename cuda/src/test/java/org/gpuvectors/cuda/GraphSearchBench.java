package org.gpuvectors.cuda;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Graph index search on the GPU ({@link GpuGraphIndex}): recall@10 and queries/s at batch 10k and batch 1 for search
 * widths 16 / 32 / 64 / 128 / 256, with both visited sets (hash table, Bloom filter), squared L2. Not a test.
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
 * warm-up; batch 1: median over 200 queries. System properties {@code gv.graph.parents}, {@code gv.graph.threads},
 * {@code gv.graph.hashMinWords} tune the kernel. Writes $OUT/graph_bench.csv.
 *
 * <p>Usage: {@code GraphSearchBench [fmnist-dir] [n] [degree]} (defaults /tmp/fmnist, 1000000, 32).
 */
public final class GraphSearchBench {
  private static final int[] WIDTHS = {16, 32, 64, 128, 256};
  private static final int K = 10;
  private static final int BATCH = 10_000;
  private static final int SINGLE_QUERIES = 200;

  public static void main(String[] args) throws Exception {
    Path fmnist = Path.of(args.length > 0 ? args[0] : "/tmp/fmnist");
    int n = args.length > 1 ? Integer.parseInt(args[1]) : 1_000_000;
    int degree = args.length > 2 ? Integer.parseInt(args[2]) : 32;
    try (GpuDevice d = GpuDevice.open(0);
         PrintWriter csv = BenchUtil.csv("graph_bench.csv",
             "data,n,dims,degree,visited,width,batch,recall_at_10,median_ms,queries_per_s")) {
      System.out.printf("GPU %s; graph search, degree %d, build degree %d, k = %d; parents %d, threads %s%n", d.name(),
          degree, 2 * degree, K, GpuGraphIndex.parents,
          GpuGraphIndex.threads == 0 ? "by batch (" + GpuGraphIndex.SMALL_BATCH_THREADS + " below "
              + GpuGraphIndex.SMALL_BATCH + " queries, else 128)" : GpuGraphIndex.threads);
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
      for (GpuGraphIndex.VisitedSet v : GpuGraphIndex.VisitedSet.values()) {
        index.setVisitedSet(v);
        for (int width : WIDTHS) {
          // batch 10k
          double[] t = new double[3];
          SearchResult res = null;
          for (int r = -1; r < t.length; r++) {
            long s = System.nanoTime();
            res = index.search(queries, nq, K, width, null);
            if (r >= 0) {
              t[r] = (System.nanoTime() - s) / 1e6;
            }
          }
          double recall = GraphReference.recall(GpuGraphIndexGpuTest.ids(res), K, truth, K, nq, K);
          print(csv, name, n, dims, degree, v, width, nq, recall, BenchUtil.median(t));
          // batch 1
          double[] one = new double[SINGLE_QUERIES];
          int[] found = new int[SINGLE_QUERIES * K];
          for (int i = -10; i < SINGLE_QUERIES; i++) {
            int qi = Math.floorMod(i, SINGLE_QUERIES);
            float[] query = Arrays.copyOfRange(queries, qi * dims, (qi + 1) * dims);
            long s = System.nanoTime();
            SearchResult r1 = index.search(query, 1, K, width, null);
            if (i >= 0) {
              one[i] = (System.nanoTime() - s) / 1e6;
              System.arraycopy(GpuGraphIndexGpuTest.ids(r1), 0, found, i * K, K);
            }
          }
          double recall1 = GraphReference.recall(found, K, truth, K, SINGLE_QUERIES, K);
          print(csv, name, n, dims, degree, v, width, 1, recall1, BenchUtil.median(one));
        }
      }
    }
  }

  private static void print(PrintWriter csv, String name, int n, int dims, int degree, GpuGraphIndex.VisitedSet v,
                            int width, int batch, double recall, double ms) {
    double qps = batch / (ms * 1e-3);
    System.out.printf("%-14s %-6s %6d %6d %10.4f %10.3f %12.0f%n", name, v, width, batch, recall, ms, qps);
    csv.printf("%s,%d,%d,%d,%s,%d,%d,%.4f,%.4f,%.1f%n", name, n, dims, degree, v, width, batch, recall, ms, qps);
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
