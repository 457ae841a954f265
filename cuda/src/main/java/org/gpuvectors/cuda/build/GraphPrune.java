package org.gpuvectors.cuda.build;

import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import jcuda.Pointer;

/**
 * Step (2) of a graph build on the device: CAGRA's rank-based pruning of a k-NN graph ({@code gv_graph_prune},
 * graph_build.cu), the same output as the host's {@code GraphPruner.prune} in lucene-codec, which documents the
 * rule. On the host it was the largest part of a 1M-vector build after the k-NN step (2.1-2.9 s on 16 cores, k 64):
 * about k<sup>2</sup> random lookups per row, which a warp per row does from shared memory.
 */
public final class GraphPrune {

  /** Rows per block (graph_build.cu's kPruneWarps). */
  static final int WARPS = 8;
  /** The largest k-NN degree (the detour keys hold the rank in 9 bits, as the host's). */
  public static final int MAX_K = 256;

  private GraphPrune() {}

  /**
   * Keeps {@code degree} of each row's {@code k} edges of {@code knn} ({@code n * k} ordinals, rows nearest first,
   * -1 padding at the end), fewest detours first (ties: lower rank); returns {@code n * degree} ordinals, -1 padded
   * where a row had fewer edges. Takes the device lock; synchronous.
   */
  public static int[] prune(GpuDevice device, int[] knn, int n, int k, int degree) {
    if (k < 1 || k > MAX_K || degree < 1 || degree > k) {
      throw new IllegalArgumentException("need 1 <= degree <= k <= " + MAX_K + ": degree " + degree + ", k " + k);
    }
    if (n < 0 || knn.length != (long) n * k || (long) n * degree > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("k-NN graph of " + knn.length + " ordinals, expected n * k = " + n + " * " + k);
    }
    int[] out = new int[n * degree];
    if (n == 0) {
      return out;
    }
    int slots = Integer.highestOneBit(2 * k - 1) << 1; // graph_build.cu's pruneTableSlots: the power of two >= 2k
    int shared = 4 * WARPS * (2 * k + 2 * slots);
    try (GpuDevice.Scope s = device.lock();
         DeviceBuffer dKnn = device.allocate(4L * knn.length);
         DeviceBuffer dOut = device.allocate(4L * out.length)) {
      device.upload(knn, dKnn);
      GraphPruneParams p = new GraphPruneParams();
      p.knn = dKnn.address();
      p.out = dOut.address();
      p.n = n;
      p.k = k;
      p.degree = degree;
      device.module().allowDynamicShared("gv_graph_prune", shared);
      device.module().launch("gv_graph_prune", (n + WARPS - 1) / WARPS, 1, WARPS * 32, shared, device.stream(),
          Pointer.to(p.encode()));
      device.download(dOut, 0, out, 0, out.length);
    }
    return out;
  }
}
