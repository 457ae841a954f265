package org.gpuvectors.cuda;

import jcuda.Pointer;

/**
 * Step (4) of a graph build on the device: the entry points' farthest-first traversal over a sample of the vectors
 * ({@code gv_farthest_step}, graph_build.cu; the rule is the host's {@code GraphBuilder.seeds} in lucene-codec, which
 * this computes without the host's triangle-inequality pruning). On the host it was a third of a Fashion-MNIST graph
 * build on 16 cores (0.29-0.38 s of 0.84-1.0 s, docs/BENCHMARKS.md section 25): each step scans the whole sample, one
 * step per entry point (500 there), each step waiting for the last.
 *
 * <p>The traversal's state stays on the device: the host enqueues {@link #STEPS_PER_WAIT} steps, then reads whether
 * it has stopped (a stopped traversal's further steps return at once).
 */
public final class FarthestFirst {

  /** Threads per block (graph_build.cu's kFarthestThreads). */
  static final int THREADS = 256;
  /** Steps enqueued between two looks at the traversal's state. */
  static final int STEPS_PER_WAIT = 64;
  /** The largest dimension: the new entry point's vector sits in shared memory (32 KB, inside the 48 KB a kernel gets without an opt-in). */
  public static final int MAX_DIMS = 8 * 1024;

  private FarthestFirst() {}

  /**
   * The traversal over {@code count} points (the first {@code count} of {@code rows}, {@code dims} floats each;
   * cosine: normalised): starting from point 0, each next choice the point farthest from all chosen ones (squared L2,
   * or minus the cosine) while fewer than {@code seedCount} are chosen, then the one with the largest gap over its
   * {@code scale} (the squared L2 distance, or 1 minus the cosine), while that exceeds {@code uncovered} and fewer than
   * {@code limit} are chosen; ties go to the lower position. Returns the chosen positions in the order chosen. Takes
   * the device lock; synchronous.
   */
  public static int[] traverse(GpuDevice device, float[][] rows, int count, int dims, boolean cosine, float[] scale,
                               int seedCount, int limit, float uncovered) {
    if (count < 1 || count > rows.length || dims < 1 || dims > MAX_DIMS || scale.length < count) {
      throw new IllegalArgumentException("need 1 <= count <= rows, scales for each, 1 <= dims <= " + MAX_DIMS
          + ": count=" + count + " rows=" + rows.length + " dims=" + dims + " scales=" + scale.length);
    }
    if (seedCount < 1 || limit < seedCount) {
      throw new IllegalArgumentException("need 1 <= seedCount <= limit: " + seedCount + ", " + limit);
    }
    int most = Math.min(count, limit);
    int blocks = Math.max(1, Math.min((count + THREADS / 32 - 1) / (THREADS / 32), 4 * device.multiprocessorCount()));
    float[] nearest = new float[count];
    java.util.Arrays.fill(nearest, Float.POSITIVE_INFINITY);
    int[] state = new int[4 + most];
    try (GpuDevice.Scope s = device.lock();
         DeviceBuffer dPoints = device.allocate(4L * count * dims);
         DeviceBuffer dNearest = device.allocate(4L * count);
         DeviceBuffer dScale = device.allocate(4L * count);
         DeviceBuffer dState = device.allocate(4L * state.length);
         DeviceBuffer dKeys = device.allocate(4L * blocks);
         DeviceBuffer dPositions = device.allocate(4L * blocks)) {
      device.uploadRows(rows, count, dims, dPoints, 0);
      device.upload(nearest, 0, count, dNearest, 0);
      device.upload(scale, 0, count, dScale, 0);
      device.upload(state, dState); // not stopped, none chosen, the first choice point 0, no block done
      FarthestStepParams p = new FarthestStepParams();
      p.points = dPoints.address();
      p.nearest = dNearest.address();
      p.scale = dScale.address();
      p.state = dState.address();
      p.blockKeys = dKeys.address();
      p.blockPositions = dPositions.address();
      p.count = count;
      p.dims = dims;
      p.metric = cosine ? 1 : 0;
      p.seedCount = seedCount;
      p.limit = most;
      p.uncovered = uncovered;
      Pointer args = Pointer.to(p.encode());
      int[] head = new int[2];
      for (int steps = 0; steps < most; ) {
        for (int i = 0; i < STEPS_PER_WAIT && steps < most; i++, steps++) {
          device.module().launch("gv_farthest_step", blocks, 1, THREADS, 4 * dims, device.stream(), args);
        }
        device.download(dState, 0, head, 0, 2); // waits for the steps
        if (head[0] != 0) {
          break;
        }
      }
      device.download(dState, 0, state, 0, state.length);
    }
    return java.util.Arrays.copyOfRange(state, 4, 4 + state[1]);
  }
}
