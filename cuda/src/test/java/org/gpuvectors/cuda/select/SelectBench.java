package org.gpuvectors.cuda.select;

import org.gpuvectors.cuda.BenchUtil;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import java.io.PrintWriter;

/**
 * k-selection throughput: GB/s of input read and fraction of the device's measured copy bandwidth,
 * WarpSelect vs BlockSelect vs Tang, smallest k per row. Input: uniform random floats; each timed
 * run reads a different region of a 1e8-float buffer when the input is smaller (no L2 replay).
 * Writes $OUT/select_bench.csv. Usage: SelectBench [maxFloats] [levels]; "levels" prints instead, for a
 * few shapes, the time of the first (chunked) pass alone next to the whole selection.
 * {@code SelectBench one ROWS LEN K ALGORITHM} runs that one selection 5 times (for a profiler).
 */
public final class SelectBench {
  public static void main(String[] args) throws Exception {
    if (args.length == 5 && args[0].equals("one")) {
      one(Integer.parseInt(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]),
          KSelect.Algorithm.valueOf(args[4]));
      return;
    }
    long maxFloats = args.length > 0 ? Long.parseLong(args[0]) : 100_000_000L;
    long[][] shapes = {{1, 1_000_000}, {1, 10_000_000}, {1, 100_000_000}, {100, 100_000}, {1000, 100_000},
        {10_000, 10_000}, {100_000, 1000}};
    int[] ks = {1, 10, 100, 1000, 2048};
    if (args.length > 1 && args[1].equals("levels")) {
      levels(maxFloats);
      return;
    }
    try (GpuDevice d = BenchUtil.openDevice()) {
      double copy = BenchUtil.copyBandwidth(d, 2L << 30);
      System.out.printf("GPU %s, %d SMs; device-to-device copy %.0f GB/s (read+write)%n", d.name(),
          d.multiprocessorCount(), copy);
      float[] host = BenchUtil.randomFloats(maxFloats, 1);
      try (PrintWriter csv = BenchUtil.csv("select_bench.csv", "rows,len,k,algorithm,ms,gbps,fraction_of_copy_bw");
           GpuDevice.Scope s = d.lock();
           DeviceBuffer in = d.allocate(4L * maxFloats)) {
        d.upload(host, 0, host.length, in, 0);
        host = null;
        System.out.printf("%-14s %5s %18s %18s %18s%n", "rows x len", "k", "warp GB/s (%bw)", "block GB/s (%bw)",
            "tang GB/s (%bw)");
        for (long[] sh : shapes) {
          int rows = (int) sh[0], len = (int) sh[1];
          long total = (long) rows * len;
          if (total > maxFloats) {
            continue;
          }
          int regions = (int) Math.max(1, maxFloats / total);
          for (int k : ks) {
            if (k > len) {
              continue;
            }
            StringBuilder line = new StringBuilder(String.format("%-14s %5d", rows + "x" + len, k));
            try (DeviceBuffer outV = d.allocate(4L * rows * k); DeviceBuffer outI = d.allocate(4L * rows * k)) {
              for (KSelect.Algorithm a : KSelect.Algorithm.values()) {
                int reps = total >= 50_000_000 ? 7 : 15;
                double[] t = new double[reps];
                for (int r = -2; r < reps; r++) {
                  long off = (long) ((r + 2) % regions) * total;
                  SelectParams p = new SelectParams().input(in, rows, len, len).k(k).output(outV, outI, k);
                  p.in = in.address() + 4 * off;
                  float ms = d.time(() -> KSelect.select(d, a, p));
                  if (r >= 0) {
                    t[r] = ms;
                  }
                }
                double ms = BenchUtil.median(t);
                double gbps = 4.0 * total / (ms * 1e-3) / 1e9;
                csv.printf("%d,%d,%d,%s,%.4f,%.1f,%.4f%n", rows, len, k, a, ms, gbps, gbps / copy);
                line.append(String.format(" %11.0f (%3.0f%%)", gbps, 100 * gbps / copy));
              }
            }
            System.out.println(line);
          }
        }
      }
    }
  }

  /** One selection, 5 times, times printed: the shape to put under a profiler. */
  static void one(int rows, int len, int k, KSelect.Algorithm a) {
    try (GpuDevice d = BenchUtil.openDevice()) {
      float[] host = BenchUtil.randomFloats((long) rows * len, 1);
      try (GpuDevice.Scope s = d.lock();
           DeviceBuffer in = d.allocate(4L * rows * len);
           DeviceBuffer outV = d.allocate(4L * rows * k);
           DeviceBuffer outI = d.allocate(4L * rows * k)) {
        d.upload(host, 0, host.length, in, 0);
        for (int r = 0; r < 5; r++) {
          SelectParams p = new SelectParams().input(in, rows, len, len).k(k).output(outV, outI, k);
          System.out.printf("%dx%d k=%d %s: %.4f ms%n", rows, len, k, a, d.time(() -> KSelect.select(d, a, p)));
        }
      }
    }
  }

  /**
   * First pass alone vs the whole selection (ms, GPU time between events), WarpSelect and BlockSelect,
   * and the host time to enqueue the whole selection (asynchronous launches; us).
   */
  static void levels(long maxFloats) {
    long[][] shapes = {{1, 10_000_000}, {1, 100_000_000}, {100, 100_000}, {1000, 100_000}, {10_000, 10_000}};
    try (GpuDevice d = BenchUtil.openDevice()) {
      float[] host = BenchUtil.randomFloats(maxFloats, 1);
      try (GpuDevice.Scope s = d.lock(); DeviceBuffer in = d.allocate(4L * maxFloats)) {
        d.upload(host, 0, host.length, in, 0);
        System.out.printf("%-14s %5s %-12s %6s %10s %10s %10s%n", "rows x len", "k", "algorithm", "chunks", "pass1 ms",
            "total ms", "host us");
        for (long[] sh : shapes) {
          int rows = (int) sh[0], len = (int) sh[1];
          for (int k : new int[] {10, 100, 1000, 2048}) {
            for (KSelect.Algorithm a : new KSelect.Algorithm[] {KSelect.Algorithm.WARP_SELECT,
                KSelect.Algorithm.BLOCK_SELECT}) {
              int chunks = KSelect.selectChunks(d, a, rows, len, k);
              int chunkLen = chunks <= 1 ? len : (int) (((len + (long) chunks - 1) / chunks + 3) / 4 * 4);
              chunks = chunks <= 1 ? 1 : (int) ((len + (long) chunkLen - 1) / chunkLen);
              long width = (long) chunks * k;
              try (DeviceBuffer outV = d.allocate(4L * rows * width); DeviceBuffer outI = d.allocate(4L * rows * width)) {
                double[] t1 = new double[7], t2 = new double[7], enqueueUs = new double[7];
                for (int r = -2; r < 7; r++) {
                  final int c = chunks, cl = chunkLen;
                  SelectParams p1 = new SelectParams().input(in, rows, len, len).k(k).output(outV, outI, width).chunks(c, cl);
                  float ms1 = d.time(() -> KSelect.run(d, a, p1));
                  SelectParams p2 = new SelectParams().input(in, rows, len, len).k(k).output(outV, outI, k);
                  long[] enqueueNs = new long[1];
                  float ms2 = d.time(() -> {
                    long t0 = System.nanoTime();
                    KSelect.select(d, a, p2);
                    enqueueNs[0] = System.nanoTime() - t0;
                  });
                  if (r >= 0) {
                    t1[r] = ms1;
                    t2[r] = ms2;
                    enqueueUs[r] = enqueueNs[0] / 1e3;
                  }
                }
                System.out.printf("%-14s %5d %-12s %6d %10.4f %10.4f %10.1f%n", rows + "x" + len, k, a, chunks,
                    BenchUtil.median(t1), BenchUtil.median(t2), BenchUtil.median(enqueueUs));
              }
            }
          }
        }
      }
    }
  }
}
