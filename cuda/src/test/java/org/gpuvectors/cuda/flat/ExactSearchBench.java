package org.gpuvectors.cuda.flat;

import org.gpuvectors.cuda.BenchUtil;
import org.gpuvectors.cuda.FashionLike;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.rerank.CandidateBound;
import org.gpuvectors.cuda.rerank.RerankStats;
import org.gpuvectors.cuda.runtime.Cublas;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Exact search throughput on synthetic data (uniform random, 1M x 128 and 1M x 768, squared L2):
 * batches 1 / 16 / 1024 / 10000, k = 10 and 100, fused and GEMM strategies. Each timing is a full
 * synchronous search() call (query upload, kernels, result download), median after warm-up.
 * GEMM TFLOP/s counts 2 * n * queries * dims over the search time, as a fraction of a measured
 * 8192^3 SGEMM. Writes $OUT/exact_bench.csv. Usage: ExactSearchBench [n]
 *
 * <p>{@code ExactSearchBench tf32 [fmnist-dir] [n] [dims]}: {@link #tf32} (FP32 vs TF32_RERANK).
 * <p>{@code ExactSearchBench small [n]}: {@link #small} (the scan against the GEMM path at small batches).
 * <p>{@code ExactSearchBench passes [n]}: {@link #passes} (the FP16 path's passes).
 */
public final class ExactSearchBench {
  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("tf32")) {
      tf32(args);
      return;
    }
    if (args.length > 0 && args[0].equals("small")) {
      small(args);
      return;
    }
    if (args.length > 0 && args[0].equals("passes")) {
      passes(args);
      return;
    }
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    int[] dimsList = {128, 768};
    int[] batches = {1, 16, 1024, 10_000};
    int[] ks = {10, 100};
    try (GpuDevice d = GpuDevice.open(0)) {
      double sgemmPeak = sgemmTflops(d, 8192);
      System.out.printf("GPU %s; measured SGEMM 8192^3: %.1f TFLOP/s (FP32)%n", d.name(), sgemmPeak);
      try (PrintWriter csv = BenchUtil.csv("exact_bench.csv",
          "n,dims,batch,k,strategy,median_ms,queries_per_s,tflops,fraction_of_sgemm")) {
        System.out.printf("%-9s %6s %4s %-6s %10s %12s %8s%n", "n x dims", "batch", "k", "path", "median ms", "queries/s",
            "TFLOP/s");
        for (int dims : dimsList) {
          float[] x = BenchUtil.randomFloats((long) n * dims, 11);
          try (GpuFlatIndex index = GpuFlatIndex.upload(d, x, n, dims, Metric.L2)) {
            x = null;
            float[] queries = BenchUtil.randomFloats(10_000L * dims, 12);
            for (int batch : batches) {
              for (int k : ks) {
                for (GpuFlatIndex.Strategy st : new GpuFlatIndex.Strategy[] {GpuFlatIndex.Strategy.FUSED,
                    GpuFlatIndex.Strategy.GEMM}) {
                  if (st == GpuFlatIndex.Strategy.FUSED && batch > 1024) {
                    continue; // the fused kernel re-reads the vectors per query block: far slower there
                  }
                  if (st == GpuFlatIndex.Strategy.FUSED && batch == 1024 && dims > 128) {
                    continue;
                  }
                  int reps = batch >= 1024 ? 5 : 30;
                  double[] t = new double[reps];
                  for (int r = -2; r < reps; r++) {
                    long t0 = System.nanoTime();
                    index.search(queries, batch, k, null, st);
                    if (r >= 0) {
                      t[r] = (System.nanoTime() - t0) / 1e6;
                    }
                  }
                  double ms = BenchUtil.median(t);
                  double qps = batch / (ms * 1e-3);
                  double tflops = 2.0 * n * batch * dims / (ms * 1e-3) / 1e12;
                  csv.printf("%d,%d,%d,%d,%s,%.4f,%.1f,%.2f,%.4f%n", n, dims, batch, k, st, ms, qps, tflops,
                      tflops / sgemmPeak);
                  System.out.printf("%-9s %6d %4d %-6s %10.3f %12.0f %8.1f%n", (n / 1000) + "kx" + dims, batch, k,
                      st, ms, qps, tflops);
                }
              }
            }
          }
        }
      }
    }
  }

  /**
   * GpuFlatIndex's GEMM path in FP32 and as TF32 candidates + exact FP32 re-rank ({@link GpuFlatIndex.Precision}),
   * squared L2, batch 10k, k = 1 / 10 / 100, on Fashion-MNIST's shape: the real set when {@code fmnist-dir} (default
   * /tmp/fmnist) holds Debian's dataset-fashion-mnist files (train-images-idx3-ubyte.gz: the 60k vectors,
   * t10k-images-idx3-ubyte.gz: the 10k queries), else {@link FashionLike} synthetic images of n x dims (default
   * 60000 x 784; clusters for other dims). Per row, medians after warm-up:
   * <ul>
   *   <li>device ms (5 searches): CUDA events around the enqueued search, queries already on the device, results
   *       left there (the TF32 path's one wait for its certificates, and its FP32 re-runs, included);
   *   <li>wall ms (7 searches): the synchronous pass every caller takes ({@link BatchSearch}: query upload, kernels,
   *       download), and of it the enqueue ms: from the device lock to the last launch (the copies of the queries,
   *       and the TF32 path's wait for its certificates, included);
   *   <li>fallbacks: queries per search that the certificate sent back to FP32;
   *   <li>agree: the fraction of result ids that are also in the FP32 result of the query (1 up to FP32 near-ties).
   * </ul>
   * Writes $OUT/exact_tf32.csv.
   */
  static void tf32(String[] args) throws Exception {
    Path dir = Path.of(args.length > 1 ? args[1] : "/tmp/fmnist");
    int n = args.length > 2 ? Integer.parseInt(args[2]) : 60_000;
    int dims = args.length > 3 ? Integer.parseInt(args[3]) : FashionLike.DIMS;
    int nq = 10_000;
    float[] x = null;
    float[] queries = null;
    if (dims == FashionLike.DIMS) {
      x = FashionLike.readIdx(dir.resolve("train-images-idx3-ubyte.gz"), n);
      queries = FashionLike.readIdx(dir.resolve("t10k-images-idx3-ubyte.gz"), nq);
    }
    String data = "fashion-mnist";
    if (x == null || queries == null || x.length < n * dims || queries.length < nq * dims) {
      data = "synthetic";
      x = dims == FashionLike.DIMS ? FashionLike.vectors(n, 11) : FashionLike.clustered(n, dims, 1000, 11);
      queries = dims == FashionLike.DIMS ? FashionLike.vectors(nq, 12) : FashionLike.clustered(nq, dims, 1000, 12);
    }
    try (GpuDevice d = GpuDevice.open(0)) {
      System.out.printf("GPU %s; measured GEMM 8192^3: %.1f TFLOP/s FP32, %.1f TFLOP/s TF32; data %s %d x %d, %d queries%n",
          d.name(), sgemmTflops(d, 8192, false), sgemmTflops(d, 8192, true), data, n, dims, nq);
      try (GpuFlatIndex index = GpuFlatIndex.upload(d, x, n, dims, Metric.L2);
           PrintWriter csv = BenchUtil.csv("exact_tf32.csv",
               "data,n,dims,batch,k,precision,device_ms,wall_ms,enqueue_ms,queries_per_s_wall,fallbacks,agree")) {
        System.out.printf("%-13s %6s %4s %-12s %10s %10s %10s %12s %9s %7s%n", "data", "batch", "k",
            "precision", "device ms", "wall ms", "enqueue ms", "queries/s", "fallbacks", "agree");
        for (int k : new int[] {1, 10, 100}) {
          SearchResult fp32 = null;
          for (GpuFlatIndex.Precision precision : new GpuFlatIndex.Precision[] {GpuFlatIndex.Precision.FP32,
              GpuFlatIndex.Precision.TF32_RERANK}) {
            index.setPrecision(precision);
            // the pass every caller takes (BatchSearch): queries copied block by block while the blocks before
            // are searched (QueryUploads)
            double deviceMs = BenchUtil.median(deviceTimes(d, index, queries, nq, dims, k, 5,
                GpuFlatIndex.Strategy.AUTO));
            RerankStats before = index.rerankStats();
            double[] wall = new double[7];
            double[] enqueue = new double[wall.length];
            SearchResult res = null;
            for (int r = -2; r < wall.length; r++) {
              long[] timing = new long[2]; // the pass's enqueue (copies included) and its wait for the device
              long t0 = System.nanoTime();
              res = BatchSearch.run(d, List.of(new SearchGroup(index, queries, nq, k, null, null)), timing)[0];
              if (r >= 0) {
                wall[r] = (System.nanoTime() - t0) / 1e6;
                enqueue[r] = timing[0] / 1e6;
              }
            }
            RerankStats after = index.rerankStats();
            double fallbacks = (double) (after.fallbacks() - before.fallbacks()) / (wall.length + 2);
            if (precision == GpuFlatIndex.Precision.FP32 && fp32 == null) {
              fp32 = res;
            }
            double agree = agreement(res, fp32, nq, k);
            double wallMs = BenchUtil.median(wall);
            double enqueueMs = BenchUtil.median(enqueue);
            csv.printf("%s,%d,%d,%d,%d,%s,%.4f,%.4f,%.4f,%.1f,%.2f,%.6f%n", data, n, dims, nq, k, precision,
                deviceMs, wallMs, enqueueMs, nq / (wallMs * 1e-3), fallbacks, agree);
            System.out.printf("%-13s %6d %4d %-12s %10.3f %10.3f %10.3f %12.0f %9.1f %7.5f%n", data, nq, k,
                precision, deviceMs, wallMs, enqueueMs, nq / (wallMs * 1e-3), fallbacks, agree);
          }
        }
      }
    }
  }

  /**
   * Small batches, the scan ({@link GpuFlatIndex.Strategy#SCAN}) and, up to 16 queries, the FP16 candidate scan with
   * its re-rank ({@link GpuFlatIndex.Strategy#HALF_SCAN}) against the GEMM path, squared L2 on uniform random
   * n x 128 and n x 768 (default n = 1M), batches 1 to 128, k = 10 and 100. Per row, medians of 30 after warm-up:
   * device ms (CUDA events around the enqueued search, queries already on the device) and wall ms (the synchronous
   * {@code search()}: upload, kernels, download); the read bound is the vectors' bytes over the measured device-to-
   * device copy bandwidth; agree is the fraction of the scan's ids in the GEMM path's result (1 up to FP32 near-ties).
   * Writes $OUT/exact_small.csv.
   */
  static void small(String[] args) throws Exception {
    int n = args.length > 1 ? Integer.parseInt(args[1]) : 1_000_000;
    try (GpuDevice d = GpuDevice.open(0);
         PrintWriter csv = BenchUtil.csv("exact_small.csv",
             "n,dims,batch,k,strategy,device_ms,wall_ms,queries_per_s_device,read_bound_ms,agree")) {
      double copyGbs = BenchUtil.copyBandwidth(d, 1L << 30);
      System.out.printf("GPU %s; device-to-device copy %.0f GB/s%n", d.name(), copyGbs);
      System.out.printf("%-9s %6s %4s %-5s %10s %10s %12s %9s %7s%n", "n x dims", "batch", "k", "path", "device ms",
          "wall ms", "queries/s", "bound ms", "agree");
      for (int dims : new int[] {128, 768}) {
        float[] x = BenchUtil.randomFloats((long) n * dims, 11);
        try (GpuFlatIndex index = GpuFlatIndex.upload(d, x, n, dims, Metric.L2)) {
          x = null;
          index.addHalfCopy();
          float[] queries = BenchUtil.randomFloats(128L * dims, 12);
          double bound = 4.0 * n * dims / (copyGbs * 1e9) * 1e3;
          for (int batch : new int[] {1, 2, 4, 8, 16, 32, 64, 128}) {
            for (int k : new int[] {10, 100}) {
              SearchResult gemm = null;
              List<GpuFlatIndex.Strategy> strategies = new ArrayList<>(List.of(GpuFlatIndex.Strategy.GEMM,
                  GpuFlatIndex.Strategy.SCAN));
              if (batch <= 16) { // the FP16 candidates and their re-rank (wall: with the certificate's wait)
                strategies.add(GpuFlatIndex.Strategy.HALF_SCAN);
              }
              for (GpuFlatIndex.Strategy st : strategies) {
                double[] wall = new double[30];
                SearchResult res = null;
                for (int r = -3; r < wall.length; r++) {
                  long t0 = System.nanoTime();
                  res = index.search(queries, batch, k, null, st);
                  if (r >= 0) {
                    wall[r] = (System.nanoTime() - t0) / 1e6;
                  }
                }
                double deviceMs = BenchUtil.median(st == GpuFlatIndex.Strategy.HALF_SCAN
                    ? halfDeviceTimes(d, index, queries, batch, dims, k, 30, false)
                    : deviceTimes(d, index, queries, batch, dims, k, 30, st));
                if (st == GpuFlatIndex.Strategy.HALF_SCAN) { // of which the scan kernel alone
                  System.out.printf("%-9s %6d %4d %-9s %10.3f%n", "", batch, k, "half scan kernel",
                      BenchUtil.median(halfDeviceTimes(d, index, queries, batch, dims, k, 30, true)));
                }
                gemm = st == GpuFlatIndex.Strategy.GEMM ? res : gemm;
                double agree = agreement(res, gemm, batch, k);
                double wallMs = BenchUtil.median(wall);
                csv.printf("%d,%d,%d,%d,%s,%.4f,%.4f,%.1f,%.4f,%.6f%n", n, dims, batch, k, st, deviceMs, wallMs,
                    batch / (deviceMs * 1e-3), bound, agree);
                System.out.printf("%-9s %6d %4d %-5s %10.3f %10.3f %12.0f %9.3f %7.5f%n", (n / 1000) + "kx" + dims,
                    batch, k, st, deviceMs, wallMs, batch / (deviceMs * 1e-3), bound, agree);
              }
            }
          }
        }
      }
    }
  }

  /**
   * The FP16 path's passes at the small batches a search service gathers (1 to 16 queries, k = 10 and 100, uniform
   * random n x 128 and n x 768, default n = 1M), the chunks keeping their share of k' ({@link
   * HalfScanParams#chunkCandidates}): device ms (CUDA events around the enqueued search, queries on
   * the device), of it the scan kernel, and the pass every caller takes ({@link BatchSearch}, captured as a CUDA graph
   * after its second sighting, as a service's repeated shapes are): its wall ms, of it the host enqueue; medians of
   * 30 after warm-up; rejected: the certificates that failed (their queries searched again in FP32, in the wall time).
   * Writes $OUT/half_passes.csv.
   */
  static void passes(String[] args) throws Exception {
    int n = args.length > 1 ? Integer.parseInt(args[1]) : 1_000_000;
    try (GpuDevice d = GpuDevice.open(0);
         PrintWriter csv = BenchUtil.csv("half_passes.csv",
             "n,dims,batch,k,device_ms,kernel_ms,pass_wall_ms,pass_enqueue_ms,rejected")) {
      System.out.printf("GPU %s%n", d.name());
      System.out.printf("%-9s %6s %4s %10s %10s %12s %12s %9s%n", "n x dims", "batch", "k", "device ms", "kernel ms",
          "pass wall ms", "enqueue ms", "rejected");
      for (int dims : new int[] {128, 768}) {
        float[] x = BenchUtil.randomFloats((long) n * dims, 11);
        try (GpuFlatIndex index = GpuFlatIndex.upload(d, x, n, dims, Metric.L2)) {
          x = null;
          index.addHalfCopy();
          float[] queries = BenchUtil.randomFloats(16L * dims, 12);
          for (int batch : new int[] {1, 2, 4, 8, 16}) {
            for (int k : new int[] {10, 100}) {
              double deviceMs = BenchUtil.median(halfDeviceTimes(d, index, queries, batch, dims, k, 30, false));
              double kernelMs = BenchUtil.median(halfDeviceTimes(d, index, queries, batch, dims, k, 30, true));
              RerankStats before = index.halfStats();
              double[] wall = new double[30];
              double[] enqueue = new double[wall.length];
              for (int r = -3; r < wall.length; r++) {
                long[] timing = new long[2];
                long t0 = System.nanoTime();
                BatchSearch.run(d, List.of(new SearchGroup(index, queries, batch, k, null, null)), timing);
                if (r >= 0) {
                  wall[r] = (System.nanoTime() - t0) / 1e6;
                  enqueue[r] = timing[0] / 1e6;
                }
              }
              long rejected = index.halfStats().fallbacks() - before.fallbacks();
              csv.printf("%d,%d,%d,%d,%.4f,%.4f,%.4f,%.4f,%d%n", n, dims, batch, k, deviceMs, kernelMs,
                  BenchUtil.median(wall), BenchUtil.median(enqueue), rejected);
              System.out.printf("%-9s %6d %4d %10.3f %10.3f %12.3f %12.3f %9d%n", (n / 1000) + "kx" + dims, batch, k,
                  deviceMs, kernelMs, BenchUtil.median(wall), BenchUtil.median(enqueue), rejected);
            }
          }
        }
      }
    }
  }

  /**
   * CUDA-event times of {@code reps} enqueued searches (after one warm-up) by {@code strategy} (AUTO: as a search
   * chooses, {@link GpuFlatIndex#enqueueSearch}), queries and results on the device.
   */
  private static double[] deviceTimes(GpuDevice d, GpuFlatIndex index, float[] queries, int nq, int dims, int k,
                                      int reps, GpuFlatIndex.Strategy strategy) {
    try (GpuDevice.Scope s = d.lock();
         DeviceBuffer dq = d.allocate(4L * nq * dims);
         DeviceBuffer outV = d.allocate(4L * nq * k);
         DeviceBuffer outI = d.allocate(4L * nq * k)) {
      d.upload(queries, 0, nq * dims, dq, 0);
      Runnable search = strategy == GpuFlatIndex.Strategy.AUTO
          ? () -> index.enqueueSearch(dq.address(), 0, nq, k, 0, 0, outV, outI, 0)
          : () -> index.enqueueStrategy(strategy, dq.address(), nq, k, 0, outV, outI);
      search.run();
      d.synchronize();
      double[] t = new double[reps];
      for (int r = 0; r < reps; r++) {
        t[r] = d.time(search);
      }
      return t;
    }
  }

  /** {@link #deviceTimes} of the half scan's enqueued search (candidates, re-rank, the certificate's inputs). */
  private static double[] halfDeviceTimes(GpuDevice d, GpuFlatIndex index, float[] queries, int nq, int dims, int k,
                                          int reps, boolean scanOnly) {
    int kc = CandidateBound.candidates(k);
    try (GpuDevice.Scope s = d.lock();
         DeviceBuffer dq = d.allocate(4L * nq * dims);
         DeviceBuffer outV = d.allocate(4L * nq * k);
         DeviceBuffer outI = d.allocate(4L * nq * k);
         DeviceBuffer stats = d.allocate(16L * nq)) {
      d.upload(queries, 0, nq * dims, dq, 0);
      HalfScanParams p = index.halfScanParams(dq.address(), nq, kc, 0, 0).planChunks(d.multiprocessorCount());
      p.k = index.halfChunkCandidates(kc, p.chunks, p.chunkLen); // as the search's scan keeps (k' for one chunk)
      DeviceBuffer chunkV = d.allocate(4L * nq * p.k * p.chunks);
      DeviceBuffer chunkI = d.allocate(4L * nq * p.k * p.chunks);
      p.outK = chunkV.address();
      p.outIdx = chunkI.address();
      p.outRowStride = (long) p.chunks * p.k;
      Runnable search = scanOnly ? () -> p.enqueue(d)
          : () -> index.enqueueHalfSearch(dq.address(), nq, k, 0, 0, outV, outI, 0, stats.address());
      search.run();
      d.synchronize();
      double[] t = new double[reps];
      for (int r = 0; r < reps; r++) {
        t[r] = d.time(search);
      }
      chunkV.close();
      chunkI.close();
      return t;
    }
  }

  /** The fraction of {@code res}'s ids that are in {@code ref}'s id set of the same query. */
  private static double agreement(SearchResult res, SearchResult ref, int nq, int k) {
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

  static double sgemmTflops(GpuDevice d, int m) {
    return sgemmTflops(d, m, false);
  }

  /** Measured m^3 GEMM rate, FP32 or on TF32 tensor cores. */
  static double sgemmTflops(GpuDevice d, int m, boolean tf32) {
    try (GpuDevice.Scope s = d.lock();
         DeviceBuffer a = d.allocate(4L * m * m);
         DeviceBuffer b = d.allocate(4L * m * m);
         DeviceBuffer c = d.allocate(4L * m * m)) {
      float[] h = BenchUtil.randomFloats((long) m * m, 5);
      d.upload(h, 0, h.length, a, 0);
      d.upload(h, 0, h.length, b, 0);
      Cublas.Handle blas = d.cublas();
      Runnable gemm = tf32
          ? () -> blas.sgemmTf32(Cublas.OP_N, Cublas.OP_N, m, m, m, 1f, a.address(), m, b.address(), m, 0f,
              c.address(), m)
          : () -> blas.sgemm(Cublas.OP_N, Cublas.OP_N, m, m, m, 1f, a.address(), m, b.address(), m, 0f,
              c.address(), m);
      gemm.run();
      d.synchronize();
      double[] t = new double[5];
      for (int i = 0; i < t.length; i++) {
        t[i] = d.time(gemm);
      }
      return 2.0 * m * m * m / (BenchUtil.median(t) * 1e-3) / 1e12;
    }
  }
}
