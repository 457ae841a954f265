package org.gpuvectors.cuda.flat;

import org.gpuvectors.cuda.BenchUtil;
import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SelectConfig;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.Driver;
import org.gpuvectors.cuda.select.KSelect;
import org.gpuvectors.cuda.select.SelectParams;
import java.util.Arrays;

/**
 * The two selections of a one-query {@code ivf_pq} pass, timed on the GPU: each is captured 20 times over in a CUDA
 * graph, and the graph's launch is timed by CUDA events (median of 11, divided by 20), so that the host's launches
 * (which a pass captured as a graph no longer waits for) are not in the figure:
 * (1) the candidates of one short row of keys with their ids (the keys scan's row: thousands to a few hundred
 * thousand keys): the radix selection (one block a row up to {@link SelectConfig#radixBlockMaxLen} values, and the
 * passes in one cooperative launch, on a second device configured without the one-block path), one BlockSelect block, and the partitioned BlockSelect and WarpSelect of
 * {@link KSelect#select}; (2) the coarse step of one query over a
 * segment's centroids ({@link GpuFlatIndex#enqueueSmall}): for one query every vector's key and a radix selection,
 * for {@link GpuFlatIndex#SCORED_QUERIES} + 1 queries the fused kernel's chunks and their merge. Usage: ShortRowBench.
 */
public final class ShortRowBench {
  public static void main(String[] args) {
    if (args.length > 0 && args[0].equals("profile")) {
      profile(Integer.parseInt(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]));
      return;
    }
    try (GpuDevice d = GpuDevice.open(0)) {
      System.out.printf("GPU %s; device ms of one selection (graphs of %d), median of 11%n", d.name(), REPS);
      rows(d);
      coarse(d);
    }
  }

  private static void rows(GpuDevice d) {
    int maxLen = 200_000;
    // uniform keys, and keys like a scan's distances (around 1, a tenth apart: a radix digit leaves few in play)
    float[] uniform = BenchUtil.randomFloats(4L * maxLen, 3);
    java.util.Random random = new java.util.Random(4);
    float[] clustered = new float[uniform.length];
    for (int i = 0; i < clustered.length; i++) {
      clustered[i] = (float) (1 + 0.1 * random.nextGaussian());
    }
    int[] ids = new int[4 * maxLen];
    Arrays.setAll(ids, i -> i);
    // the passes alone: a second device on the same GPU, which shares its primary context (and so d's buffers)
    try (GpuDevice passes = GpuDevice.open(d.ordinal(),
        GpuConfig.builder().select(SelectConfig.defaults().withRadixBlockMaxLen(0)).build())) {
      for (float[] keys : new float[][] {uniform, clustered}) {
        System.out.printf("%n%s keys%n", keys == uniform ? "uniform" : "clustered");
        rows(d, passes, keys, ids, maxLen);
      }
    }
  }

  private static void rows(GpuDevice d, GpuDevice passes, float[] keys, int[] ids, int maxLen) {
    System.out.printf("%-6s %7s %5s %11s %11s %10s %10s %10s%n", "rows", "len", "k", "radix", "radix-fused",
        "block1", "block", "warp");
    try (GpuDevice.Scope s = d.lock();
         DeviceBuffer in = d.allocate(4L * keys.length);
         DeviceBuffer inIds = d.allocate(4L * ids.length);
         DeviceBuffer outV = d.allocate(4L * 4 * 2048);
         DeviceBuffer outI = d.allocate(4L * 4 * 2048)) {
      d.upload(keys, 0, keys.length, in, 0);
      d.upload(ids, inIds);
      d.synchronize(); // the other device's stream reads them
      for (int rows : new int[] {1, 4, 32}) {
        for (int len : new int[] {2_000, 8_000, 20_000, 40_000, 48_000, 80_000, 200_000}) {
          for (int k : new int[] {80, 160, 400}) {
            if (k > len) {
              continue;
            }
            SelectParams base = new SelectParams().input(in, rows, len, len).inputIds(inIds).k(k).output(outV, outI, k);
            if ((long) rows * len > 4L * maxLen) {
              continue;
            }
            double radix = median(d, () -> KSelect.radixSelect(d, base.copy())); // one block a row up to 40k values
            double fused = median(passes, () -> KSelect.radixSelect(passes, base.copy()));
            double block1 = median(d, () -> KSelect.runBlockSelect(d, base.copy().chunks(1, len)));
            double block = median(d, () -> KSelect.select(d, KSelect.Algorithm.BLOCK_SELECT, base.copy()));
            double warp = median(d, () -> KSelect.select(d, KSelect.Algorithm.WARP_SELECT, base.copy()));
            System.out.printf("%-6d %7d %5d %11.4f %11.4f %10.4f %10.4f %10.4f%n", rows, len, k, radix, fused, block1,
                block, warp);
          }
        }
      }
    }
  }

  private static void coarse(GpuDevice d) {
    int fusedQueries = GpuFlatIndex.SCORED_QUERIES + 1;
    System.out.printf("%n%-6s %5s %5s %s%n", "n", "dims", "k", "enqueueSmall ms: 1 query (every vector's key + radix "
        + "selection); " + fusedQueries + " queries (the fused kernel's chunks + merge)");
    int[][] shapes = {{1_000, 128}, {4_096, 128}, {16_384, 128}, {1_414, 768}, {2_600, 768}};
    for (int[] sh : shapes) {
      int n = sh[0];
      int dims = sh[1];
      float[] x = BenchUtil.randomFloats((long) n * dims, 5);
      float[] q = BenchUtil.randomFloats((long) fusedQueries * dims, 6);
      try (GpuFlatIndex index = GpuFlatIndex.upload(d, x, n, dims, Metric.L2);
           GpuDevice.Scope s = d.lock();
           DeviceBuffer dq = d.allocate(4L * fusedQueries * dims);
           DeviceBuffer outV = d.allocate(4L * fusedQueries * 128);
           DeviceBuffer outI = d.allocate(4L * fusedQueries * 128)) {
        d.upload(q, 0, fusedQueries * dims, dq, 0);
        for (int k : new int[] {16, 63}) {
          StringBuilder line = new StringBuilder(String.format("%-6d %5d %5d", n, dims, k));
          for (int nq : new int[] {1, fusedQueries}) {
            Runnable small = () -> index.enqueueSmall(dq.address(), nq, k, outV, outI, 0);
            line.append(String.format(" %10.4f", median(d, small)));
          }
          System.out.println(line);
        }
      }
    }
  }

  /**
   * {@code profile ROWS LEN K}: five radix selections of ROWS rows of LEN clustered keys, not captured, in the
   * profiler's range (for ncu --profile-from-start off: one kernel's stall reasons).
   */
  private static void profile(int rows, int len, int k) {
    java.util.Random random = new java.util.Random(4);
    float[] keys = new float[rows * len];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = (float) (1 + 0.1 * random.nextGaussian());
    }
    try (GpuDevice d = GpuDevice.open(0);
         GpuDevice.Scope s = d.lock();
         DeviceBuffer in = d.allocate(4L * keys.length);
         DeviceBuffer outV = d.allocate(4L * rows * k);
         DeviceBuffer outI = d.allocate(4L * rows * k)) {
      d.upload(keys, 0, keys.length, in, 0);
      SelectParams base = new SelectParams().input(in, rows, len, len).k(k).output(outV, outI, k);
      KSelect.radixSelect(d, base.copy());
      d.synchronize();
      d.profilerRange(true);
      for (int i = 0; i < 5; i++) {
        KSelect.radixSelect(d, base.copy());
      }
      d.synchronize();
      d.profilerRange(false);
    }
  }

  private static final int REPS = 20;

  private static double median(GpuDevice d, Runnable work) {
    jcuda.driver.CUstream stream = d.stream();
    jcuda.driver.CUgraph graph = new jcuda.driver.CUgraph();
    jcuda.driver.CUgraphExec exec = new jcuda.driver.CUgraphExec();
    Driver.check("cuStreamBeginCapture", jcuda.driver.JCudaDriver.cuStreamBeginCapture(stream,
        jcuda.driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED));
    for (int i = 0; i < REPS; i++) {
      work.run();
    }
    Driver.check("cuStreamEndCapture", jcuda.driver.JCudaDriver.cuStreamEndCapture(stream, graph));
    Driver.check("cuGraphInstantiate", jcuda.driver.JCudaDriver.cuGraphInstantiate(exec, graph, 0));
    try {
      Runnable launch = () -> Driver.check("cuGraphLaunch", jcuda.driver.JCudaDriver.cuGraphLaunch(exec, stream));
      for (int i = 0; i < 3; i++) {
        d.time(launch);
      }
      double[] t = new double[11];
      for (int i = 0; i < t.length; i++) {
        t[i] = d.time(launch) / REPS;
      }
      Arrays.sort(t);
      return t[t.length / 2];
    } finally {
      jcuda.driver.JCudaDriver.cuGraphExecDestroy(exec);
      jcuda.driver.JCudaDriver.cuGraphDestroy(graph);
    }
  }
}
