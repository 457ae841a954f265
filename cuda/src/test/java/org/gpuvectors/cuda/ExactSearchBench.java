package org.gpuvectors.cuda;

import java.io.PrintWriter;

/**
 * Exact search throughput on synthetic data (uniform random, 1M x 128 and 1M x 768, squared L2):
 * batches 1 / 16 / 1024 / 10000, k = 10 and 100, fused and GEMM strategies. Each timing is a full
 * synchronous search() call (query upload, kernels, result download), median after warm-up.
 * GEMM TFLOP/s counts 2 * n * queries * dims over the search time, as a fraction of a measured
 * 8192^3 SGEMM. Writes $OUT/exact_bench.csv. Usage: ExactSearchBench [n]
 */
public final class ExactSearchBench {
  public static void main(String[] args) throws Exception {
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

  static double sgemmTflops(GpuDevice d, int m) {
    try (GpuDevice.Scope s = d.lock();
         DeviceBuffer a = d.allocate(4L * m * m);
         DeviceBuffer b = d.allocate(4L * m * m);
         DeviceBuffer c = d.allocate(4L * m * m)) {
      float[] h = BenchUtil.randomFloats((long) m * m, 5);
      d.upload(h, 0, h.length, a, 0);
      d.upload(h, 0, h.length, b, 0);
      Cublas.Handle blas = d.cublas();
      Runnable gemm = () -> blas.sgemm(Cublas.OP_N, Cublas.OP_N, m, m, m, 1f, a.address(), m, b.address(), m, 0f,
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
