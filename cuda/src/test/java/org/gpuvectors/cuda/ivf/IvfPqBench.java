package org.gpuvectors.cuda.ivf;

import org.gpuvectors.cuda.BenchUtil;
import org.gpuvectors.cuda.FashionLike;
import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.IvfConfig;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import java.util.stream.IntStream;

/**
 * GPU IVF-PQ search, the precomputed-table scan against the full per-pair table scan ({@link
 * IvfConfig#fullTables}: the same index on a second device configured with it), on Fashion-MNIST (60k x 784 from $FMNIST_DIR or the first argument, as
 * {@code ExactSearchBench tf32} reads it; else {@link FashionLike}'s synthetic images): nlist = 245 lists (k-means,
 * assignments on the GPU), pq_m = 98 sub-quantizers of 8 dimensions x 256 codewords (k-means per sub-space on the
 * residuals), k = 40 candidates (the codec's re-rank depth for k = 10), nprobe 4 / 8 / 16, batches of 10,000 and
 * of 1 query. Per row:
 * <ul>
 *   <li>device ms: CUDA events around the enqueued search of the batch (queries already on the device, results
 *       left there): coarse step, tables and scan, merge;
 *   <li>wall ms: the synchronous {@code search()} call (query upload, kernels, download); for batch 1 the median
 *       of 200 single-query searches, and q/s = 1 / that;
 *   <li>agree: the fraction of the path's result ids that are in the full-table path's result of the query (1 up
 *       to float near-ties: both rank the same approximate distances); for the device re-rank rows, in the host
 *       re-rank's result (the precomputed path's 40 candidates re-ranked here in double, as the codec did);
 *   <li>recall: recall@10 against the exact top 10 (GPU exact search, FP32), for the rows that return 10 exact
 *       results: {@code device-rerank} (an index that also holds the raw vectors, {@link
 *       GpuIvfPqIndex#reranksOnDevice}: k = 10 results, the 4 x 10 = 40 best candidates re-ranked exactly on the
 *       device) and {@code host-rerank} (the precomputed path's 40 candidates re-ranked here; its time is the
 *       device's only, the host re-rank not counted: it is what the device re-rank replaces).
 * </ul>
 * Not a test. Usage: {@code IvfPqBench [fmnist-dir]}, with {@code -Dgv.ivfpq.m} and {@code -Dgv.ivfpq.k} to change pq_m
 * and k; writes $OUT/ivfpq.csv.
 */
public final class IvfPqBench {
  private static final int NLIST = 245;
  /** Sub-quantizers: -Dgv.ivfpq.m (default 98; the codec's default for 784 dimensions is 196, dims / 4). */
  private static final int M = Integer.getInteger("gv.ivfpq.m", 98);
  private static final int KSUB = 256;
  /** Candidates: -Dgv.ivfpq.k (default 40; the codec re-ranks 8 x k = 80 for 784-dimension codes). */
  private static final int K = Integer.getInteger("gv.ivfpq.k", 40);
  /** Results of the re-ranked rows (the codec's k; K = 4 x KR candidates by default). */
  private static final int KR = 10;

  private IvfPqBench() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args.length > 0 ? args[0] : System.getenv().getOrDefault("FMNIST_DIR", "/tmp/fmnist"));
    int n = 60_000;
    int dims = FashionLike.DIMS;
    int nq = 10_000;
    float[] x = FashionLike.readIdx(dir.resolve("train-images-idx3-ubyte.gz"), n);
    float[] queries = FashionLike.readIdx(dir.resolve("t10k-images-idx3-ubyte.gz"), nq);
    String data = "fashion-mnist";
    if (x == null || queries == null || x.length < n * dims || queries.length < nq * dims) {
      data = "synthetic";
      x = FashionLike.vectors(n, 11);
      queries = FashionLike.vectors(nq, 12);
    }
    float[] base = x; // the raw vectors by ordinal, for the device re-rank's index
    try (GpuDevice d = GpuDevice.open(0);
         GpuDevice fullTableDevice =
             GpuDevice.open(0, GpuConfig.builder().ivf(IvfConfig.defaults().withFullTables(true)).build())) {
      long t0 = System.nanoTime();
      int[] listOf = new int[n];
      float[] centroids = kmeansLists(d, x, n, dims, listOf);
      IvfLists lists = toLists(centroids, listOf, n);
      PqCodebook pq = trainPq(x, dims, centroids, listOf, n);
      byte[] codes = encode(x, dims, centroids, lists, listOf, pq);
      System.out.printf("GPU %s; data %s %d x %d, %d queries; nlist %d, pq_m %d x %d bits; trained in %.1f s%n",
          d.name(), data, n, dims, nq, NLIST, M, 8, (System.nanoTime() - t0) / 1e9);
      try (GpuIvfPqIndex index = GpuIvfPqIndex.upload(d, lists, pq, codes, dims, Metric.L2);
           GpuIvfPqIndex fullIndex = GpuIvfPqIndex.upload(fullTableDevice, lists, pq, codes, dims, Metric.L2);
           PrintWriter csv = BenchUtil.csv("ivfpq.csv",
               "data,n,dims,nlist,pq_m,nprobe,batch,k,path,device_ms,wall_ms,queries_per_s,agree,recall");
           GpuIvfPqIndex reranking = GpuIvfPqIndex.upload(d, lists, pq, codes, dims, Metric.L2,
               (first, count, dst) -> System.arraycopy(base, first * dims, dst, 0, count * dims), K / KR)) {
        int[][] truth = exactTop(d, x, n, queries, nq, dims);
        System.out.printf("index: %.1f MB on the device%n", index.deviceBytes() / 1e6);
        System.out.printf("with raw vectors (device re-rank): %.1f MB%n", reranking.deviceBytes() / 1e6);
        System.out.printf("%-7s %6s %4s %-13s %10s %10s %12s %7s %7s%n", "nprobe", "batch", "k", "path", "device ms",
            "wall ms", "queries/s", "agree", "recall");
        for (int nprobe : new int[] {4, 8, 16}) {
          SearchResult full = null;
          SearchResult host = null;
          for (boolean fullTables : new boolean[] {true, false}) {
            GpuDevice on = fullTables ? fullTableDevice : d;
            GpuIvfPqIndex searched = fullTables ? fullIndex : index;
            String path = fullTables ? "full-table" : "precomputed";
            double[] wall = new double[5];
            SearchResult res = null;
            for (int r = -2; r < wall.length; r++) {
              long s = System.nanoTime();
              res = searched.search(queries, nq, K, nprobe, null);
              if (r >= 0) {
                wall[r] = (System.nanoTime() - s) / 1e6;
              }
            }
            if (fullTables) {
              full = res;
            }
            double agree = agreement(res, full, nq);
            double deviceMs = BenchUtil.median(deviceTimes(on, searched, queries, nq, dims, nprobe, K, 5));
            double wallMs = BenchUtil.median(wall);
            row(csv, data, n, dims, nprobe, nq, K, path, deviceMs, wallMs, nq / (wallMs * 1e-3), agree, Double.NaN);
            if (!fullTables) {
              // what the device re-rank replaces: these candidates re-ranked on the host (time not counted)
              host = hostRerank(res, x, queries, nq, dims);
              row(csv, data, n, dims, nprobe, nq, KR, "host-rerank", deviceMs, Double.NaN, Double.NaN, 1,
                  recall(host, truth, nq));
            }
            double[] single = new double[200];
            for (int r = -20; r < single.length; r++) {
              float[] q = new float[dims];
              System.arraycopy(queries, (r + 20) % nq * dims, q, 0, dims);
              long s = System.nanoTime();
              searched.search(q, 1, K, nprobe, null);
              if (r >= 0) {
                single[r] = (System.nanoTime() - s) / 1e6;
              }
            }
            double oneMs = BenchUtil.median(single);
            double oneDevice = BenchUtil.median(deviceTimes(on, searched, queries, 1, dims, nprobe, K, 20));
            row(csv, data, n, dims, nprobe, 1, K, path, oneDevice, oneMs, 1 / (oneMs * 1e-3), Double.NaN, Double.NaN);
          }
          rerankRows(csv, d, reranking, data, n, dims, nprobe, queries, nq, host, truth);
        }
      }
    }
  }

  private static void row(PrintWriter csv, String data, int n, int dims, int nprobe, int batch, int k, String path,
                          double deviceMs, double wallMs, double qps, double agree, double recall) {
    csv.printf("%s,%d,%d,%d,%d,%d,%d,%d,%s,%.4f,%.4f,%.1f,%.6f,%.6f%n", data, n, dims, NLIST, M, nprobe, batch, k, path,
        deviceMs, wallMs, qps, agree, recall);
    csv.flush();
    System.out.printf("%-7d %6d %4d %-13s %10.3f %10.3f %12.0f %7.4f %7.4f%n", nprobe, batch, k, path, deviceMs, wallMs,
        qps, agree, recall);
  }

  /**
   * The device re-rank rows of one nprobe: batch 10k (best of 5 synchronous searches after 2 warm-ups; device time
   * by CUDA events; agree with the host re-rank of the same candidates; recall@10) and batch 1 (median of 200).
   */
  private static void rerankRows(PrintWriter csv, GpuDevice d, GpuIvfPqIndex index, String data, int n, int dims,
                                 int nprobe, float[] queries, int nq, SearchResult host, int[][] truth) {
    double[] wall = new double[5];
    SearchResult res = null;
    for (int r = -2; r < wall.length; r++) {
      long s = System.nanoTime();
      res = index.search(queries, nq, KR, nprobe, null);
      if (r >= 0) {
        wall[r] = (System.nanoTime() - s) / 1e6;
      }
    }
    double wallMs = BenchUtil.median(wall);
    double deviceMs = BenchUtil.median(deviceTimes(d, index, queries, nq, dims, nprobe, KR, 5));
    row(csv, data, n, dims, nprobe, nq, KR, "device-rerank", deviceMs, wallMs, nq / (wallMs * 1e-3),
        agreement(res, host, nq), recall(res, truth, nq));
    double[] single = new double[200];
    for (int r = -20; r < single.length; r++) {
      float[] q = new float[dims];
      System.arraycopy(queries, (r + 20) % nq * dims, q, 0, dims);
      long s = System.nanoTime();
      index.search(q, 1, KR, nprobe, null);
      if (r >= 0) {
        single[r] = (System.nanoTime() - s) / 1e6;
      }
    }
    double oneMs = BenchUtil.median(single);
    double oneDevice = BenchUtil.median(deviceTimes(d, index, queries, 1, dims, nprobe, KR, 20));
    row(csv, data, n, dims, nprobe, 1, KR, "device-rerank", oneDevice, oneMs, 1 / (oneMs * 1e-3), Double.NaN,
        Double.NaN);
  }

  /** The exact top KR of each query (GPU exact search, FP32 distances): the recall's ground truth. */
  private static int[][] exactTop(GpuDevice d, float[] x, int n, float[] queries, int nq, int dims) {
    try (GpuFlatIndex exact = GpuFlatIndex.upload(d, x, n, dims, Metric.L2)) {
      exact.setPrecision(GpuFlatIndex.Precision.FP32);
      SearchResult res = exact.search(queries, nq, KR, null);
      int[][] top = new int[nq][];
      for (int q = 0; q < nq; q++) {
        top[q] = new int[res.count(q)];
        for (int i = 0; i < top[q].length; i++) {
          top[q][i] = res.id(q, i);
        }
      }
      return top;
    }
  }

  /** Recall@KR: the fraction of the true top KR found in the result's first KR. */
  private static double recall(SearchResult res, int[][] truth, int nq) {
    long found = 0;
    long total = 0;
    for (int q = 0; q < nq; q++) {
      Set<Integer> ids = new HashSet<>();
      for (int i = 0; i < Math.min(KR, res.count(q)); i++) {
        ids.add(res.id(q, i));
      }
      for (int id : truth[q]) {
        found += ids.contains(id) ? 1 : 0;
        total++;
      }
    }
    return total == 0 ? 1 : (double) found / total;
  }

  /**
   * The host re-rank of the codec before the device re-rank: each query's candidates by exact squared L2 (double),
   * the best KR first, ties by ordinal.
   */
  private static SearchResult hostRerank(SearchResult candidates, float[] x, float[] queries, int nq, int dims) {
    int[] ids = new int[nq * KR];
    float[] dist = new float[nq * KR];
    java.util.Arrays.fill(ids, -1);
    IntStream.range(0, nq).parallel().forEach(q -> {
      int c = candidates.count(q);
      double[] key = new double[c];
      Integer[] order = new Integer[c];
      for (int i = 0; i < c; i++) {
        int ord = candidates.id(q, i);
        double s = 0;
        for (int t = 0; t < dims; t++) {
          double diff = (double) x[ord * dims + t] - queries[q * dims + t];
          s += diff * diff;
        }
        key[i] = s;
        order[i] = i;
      }
      java.util.Arrays.sort(order, (a, b) -> key[a] != key[b] ? Double.compare(key[a], key[b])
          : Integer.compare(candidates.id(q, a), candidates.id(q, b)));
      for (int i = 0; i < Math.min(KR, c); i++) {
        ids[q * KR + i] = candidates.id(q, order[i]);
        dist[q * KR + i] = (float) key[order[i]];
      }
    });
    return new SearchResult(nq, KR, ids, dist);
  }

  /** CUDA-event times of {@code reps} enqueued searches for k (after one warm-up), queries and results on the device. */
  private static double[] deviceTimes(GpuDevice d, GpuIvfPqIndex index, float[] queries, int nq, int dims,
                                      int nprobe, int k, int reps) {
    try (GpuDevice.Scope s = d.lock();
         DeviceBuffer dq = d.allocate(4L * nq * dims);
         DeviceBuffer outV = d.allocate(4L * nq * k);
         DeviceBuffer outI = d.allocate(4L * nq * k)) {
      d.upload(queries, 0, nq * dims, dq, 0);
      Runnable search = () -> index.enqueueSearch(dq.address(), 0, nq, k, nprobe, 0, 0, outV, outI, 0);
      search.run();
      d.synchronize();
      double[] t = new double[reps];
      for (int r = 0; r < reps; r++) {
        t[r] = d.time(search);
      }
      return t;
    }
  }

  /** The fraction of {@code res}'s ids that are in {@code ref}'s id set of the same query. */
  private static double agreement(SearchResult res, SearchResult ref, int nq) {
    long same = 0;
    long total = 0;
    for (int q = 0; q < nq; q++) {
      Set<Integer> ids = new HashSet<>();
      for (int i = 0; i < ref.count(q); i++) {
        ids.add(ref.id(q, i));
      }
      for (int i = 0; i < res.count(q); i++) {
        same += ids.contains(res.id(q, i)) ? 1 : 0;
        total++;
      }
    }
    return total == 0 ? 1 : (double) same / total;
  }

  /** Coarse k-means (6 Lloyd rounds from random samples; assignments by the GPU's exact search): the centroids. */
  private static float[] kmeansLists(GpuDevice d, float[] x, int n, int dims, int[] listOf) {
    Random r = new Random(5);
    float[] c = new float[NLIST * dims];
    for (int l = 0; l < NLIST; l++) {
      System.arraycopy(x, r.nextInt(n) * dims, c, l * dims, dims);
    }
    for (int round = 0; round < 6; round++) {
      try (GpuFlatIndex index = GpuFlatIndex.upload(d, c, NLIST, dims, Metric.L2)) {
        SearchResult res = index.search(x, n, 1, null);
        for (int i = 0; i < n; i++) {
          listOf[i] = res.id(i, 0);
        }
      }
      double[] sum = new double[NLIST * dims];
      int[] count = new int[NLIST];
      for (int i = 0; i < n; i++) {
        count[listOf[i]]++;
        for (int k = 0; k < dims; k++) {
          sum[listOf[i] * dims + k] += x[i * dims + k];
        }
      }
      for (int l = 0; l < NLIST; l++) {
        if (count[l] > 0) {
          for (int k = 0; k < dims; k++) {
            c[l * dims + k] = (float) (sum[l * dims + k] / count[l]);
          }
        }
      }
    }
    try (GpuFlatIndex index = GpuFlatIndex.upload(d, c, NLIST, dims, Metric.L2)) {
      SearchResult res = index.search(x, n, 1, null);
      for (int i = 0; i < n; i++) {
        listOf[i] = res.id(i, 0);
      }
    }
    return c;
  }

  /** The lists of the assignment: ordinals grouped by list, ascending within each. */
  private static IvfLists toLists(float[] centroids, int[] listOf, int n) {
    int[] offsets = new int[NLIST + 1];
    for (int i = 0; i < n; i++) {
      offsets[listOf[i] + 1]++;
    }
    for (int l = 0; l < NLIST; l++) {
      offsets[l + 1] += offsets[l];
    }
    int[] next = offsets.clone();
    int[] ords = new int[n];
    for (int i = 0; i < n; i++) {
      ords[next[listOf[i]]++] = i;
    }
    return new IvfLists(NLIST, centroids, offsets, ords);
  }

  /** Per sub-space, k-means (4 Lloyd rounds from random samples) of the residuals' sub-vectors, in parallel. */
  private static PqCodebook trainPq(float[] x, int dims, float[] centroids, int[] listOf, int n) {
    int sub = dims / M;
    float[] books = new float[M * KSUB * sub];
    IntStream.range(0, M).parallel().forEach(j -> {
      float[] res = new float[n * sub];
      for (int i = 0; i < n; i++) {
        for (int t = 0; t < sub; t++) {
          res[i * sub + t] = x[i * dims + j * sub + t] - centroids[listOf[i] * dims + j * sub + t];
        }
      }
      Random r = new Random(100 + j);
      float[] w = new float[KSUB * sub];
      for (int c = 0; c < KSUB; c++) {
        System.arraycopy(res, r.nextInt(n) * sub, w, c * sub, sub);
      }
      int[] assign = new int[n];
      for (int round = 0; round < 4; round++) {
        for (int i = 0; i < n; i++) {
          assign[i] = nearest(res, i * sub, w, 0, sub);
        }
        double[] sum = new double[KSUB * sub];
        int[] count = new int[KSUB];
        for (int i = 0; i < n; i++) {
          count[assign[i]]++;
          for (int t = 0; t < sub; t++) {
            sum[assign[i] * sub + t] += res[i * sub + t];
          }
        }
        for (int c = 0; c < KSUB; c++) {
          if (count[c] > 0) {
            for (int t = 0; t < sub; t++) {
              w[c * sub + t] = (float) (sum[c * sub + t] / count[c]);
            }
          }
        }
      }
      System.arraycopy(w, 0, books, j * KSUB * sub, KSUB * sub);
    });
    return new PqCodebook(M, 8, sub, books);
  }

  /** The codeword of the KSUB x sub at w[from ..] nearest the sub-vector at v[at ..]. */
  private static int nearest(float[] v, int at, float[] w, int from, int sub) {
    int best = 0;
    float bestDist = Float.MAX_VALUE;
    for (int c = 0; c < KSUB; c++) {
      float s = 0;
      for (int t = 0; t < sub; t++) {
        float diff = v[at + t] - w[from + c * sub + t];
        s += diff * diff;
      }
      if (s < bestDist) {
        bestDist = s;
        best = c;
      }
    }
    return best;
  }

  /** The codes of the vectors in list order: per residual sub-vector its nearest codeword. */
  private static byte[] encode(float[] x, int dims, float[] centroids, IvfLists lists, int[] listOf, PqCodebook pq) {
    int sub = pq.subDims();
    int[] ords = lists.ords();
    byte[] codes = new byte[ords.length * M];
    IntStream.range(0, ords.length).parallel().forEach(p -> {
      int i = ords[p];
      float[] res = new float[sub];
      for (int j = 0; j < M; j++) {
        for (int t = 0; t < sub; t++) {
          res[t] = x[i * dims + j * sub + t] - centroids[listOf[i] * dims + j * sub + t];
        }
        codes[p * M + j] = (byte) nearest(res, 0, pq.codebooks(), j * KSUB * sub, sub);
      }
    });
    return codes;
  }
}
