package org.gpuvectors.cuda.build;

import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import jcuda.Pointer;

/**
 * Step (3) of a graph build on the device: the reverse links ({@code gv_reverse_count}, {@code gv_reverse_fill},
 * {@code gv_reverse_rows} in graph_build.cu), the same output as the host's {@code GraphPruner.addReverseLinks} in
 * lucene-codec, which documents the rule. On the host it took 26-30 ms of a 0.2 s Fashion-MNIST graph build on 16
 * cores; here the in-degrees' prefix sums are the only step on the host.
 */
public final class ReverseLinks {

  /** Threads per block of the per-edge launches. */
  static final int THREADS = 256;
  /** Rows per block of {@code gv_reverse_rows} (graph_build.cu's kReverseWarps). */
  static final int WARPS = 8;
  /** The largest degree (lucene-codec's GraphBuilder.MAX_DEGREE): two rows of it per warp in shared memory. */
  public static final int MAX_DEGREE = 128;

  private ReverseLinks() {}

  /**
   * The graph with reverse links from {@code pruned} ({@code n x degree} ordinals, each row ending at its first -1):
   * {@code n x degree} ordinals, -1 padded. Takes the device lock; synchronous.
   */
  public static int[] add(GpuDevice device, int[] pruned, int n, int degree) {
    if (n < 0 || degree < 1 || degree > MAX_DEGREE || pruned.length != (long) n * degree
        || (long) n * degree > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("pruned graph of " + pruned.length + " ordinals, expected n * degree = " + n
          + " * " + degree + " (degree <= " + MAX_DEGREE + ")");
    }
    int[] out = new int[n * degree];
    if (n == 0) {
      return out;
    }
    int edges = n * degree;
    int edgeBlocks = (edges + THREADS - 1) / THREADS;
    int[] counts = new int[n];
    int[] start = new int[n + 1];
    try (GpuDevice.Scope s = device.lock();
         DeviceBuffer dPruned = device.allocate(4L * edges);
         DeviceBuffer dStart = device.allocate(4L * (n + 1));
         DeviceBuffer dCursor = device.allocate(4L * n);
         DeviceBuffer dKeys = device.allocate(4L * edges);
         DeviceBuffer dOut = device.allocate(4L * edges)) {
      device.upload(pruned, dPruned);
      device.fill32(dCursor, 0);
      ReverseLinksParams p = new ReverseLinksParams();
      p.pruned = dPruned.address();
      p.start = dStart.address();
      p.cursor = dCursor.address();
      p.keys = dKeys.address();
      p.out = dOut.address();
      p.n = n;
      p.degree = degree;
      Pointer args = Pointer.to(p.encode());
      device.module().launch("gv_reverse_count", edgeBlocks, 1, THREADS, 0, device.stream(), args);
      device.download(dCursor, 0, counts, 0, n); // waits
      for (int j = 0; j < n; j++) {
        start[j + 1] = start[j] + counts[j]; // at most n * degree: an int
      }
      device.upload(start, dStart);
      device.upload(java.util.Arrays.copyOf(start, n), dCursor); // each vector's first free slot
      device.module().launch("gv_reverse_fill", edgeBlocks, 1, THREADS, 0, device.stream(), args);
      int shared = 4 * WARPS * 2 * degree;
      device.module().allowDynamicShared("gv_reverse_rows", shared);
      device.module().launch("gv_reverse_rows", (n + WARPS - 1) / WARPS, 1, WARPS * 32, shared, device.stream(), args);
      device.download(dOut, 0, out, 0, out.length);
    }
    return out;
  }
}
