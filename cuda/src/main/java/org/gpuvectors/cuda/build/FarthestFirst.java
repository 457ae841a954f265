package org.gpuvectors.cuda.build;

import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import java.util.Arrays;
import jcuda.Pointer;

/**
 * Step (4) of a graph build on the device, over vectors already there (a {@link GpuFlatIndex} that the build's k-NN
 * step uploaded): the entry points' farthest-first traversal over a sample of them ({@code gv_farthest_step},
 * graph_build.cu; the rule is the host's {@code GraphBuilder.seeds} in lucene-codec, computed here without the host's
 * triangle-inequality pruning) and the scale it keys by past its first choices ({@code gv_neighbour_gaps}). On the
 * host the two took a third of a Fashion-MNIST graph build on 16 cores (0.29-0.38 s of 0.84-1.0 s): each step scans
 * the whole sample, one step per entry point (about 500 there), each waiting for the last.
 *
 * <p>The traversal's state stays on the device: the host enqueues {@link #STEPS_PER_WAIT} steps, then reads whether
 * it has stopped (a stopped traversal's further steps return at once). Each call takes the device lock and is
 * synchronous; its buffers go back to the pool before it returns.
 */
public final class FarthestFirst {

  /** Threads per block of a step (graph_build.cu's kFarthestThreads). */
  static final int THREADS = 256;
  /** Sample vectors (one a warp) per block of {@code gv_neighbour_gaps} (graph_build.cu's kGapWarps). */
  static final int GAP_WARPS = 8;
  /** Steps enqueued between two looks at the traversal's state. */
  static final int STEPS_PER_WAIT = 64;
  /** The largest dimension: the new entry point's vector sits in shared memory (32 KB, inside the default 48 KB). */
  public static final int MAX_DIMS = 8 * 1024;

  private FarthestFirst() {}

  /**
   * Each sample vector's smallest gap (squared L2, or for a cosine index 1 minus the cosine) to a vector of its row of
   * {@code adjacency} ({@code vectors.size() x degree} ordinals, each row ending at its first -1); +infinity for a row
   * without edges. {@code vectors} holds the rows as the traversal ranks them: raw for L2, normalised for cosine.
   */
  public static float[] neighbourGaps(GpuDevice device, GpuFlatIndex vectors, int[] sample, int[] adjacency, int degree,
                                      boolean cosine) {
    check(vectors, sample);
    if (degree < 1 || adjacency.length != (long) vectors.size() * degree) {
      throw new IllegalArgumentException("adjacency of " + adjacency.length + " ordinals, expected " + vectors.size()
          + " x degree " + degree);
    }
    float[] out = new float[sample.length];
    try (GpuDevice.Scope s = device.lock();
         DeviceBuffer dSample = device.allocate(4L * sample.length);
         DeviceBuffer dAdjacency = device.allocate(4L * adjacency.length);
         DeviceBuffer dOut = device.allocate(4L * sample.length)) {
      device.upload(sample, dSample);
      device.upload(adjacency, dAdjacency);
      NeighbourGapParams p = new NeighbourGapParams();
      p.points = vectors.vectorsAddress();
      p.sample = dSample.address();
      p.adjacency = dAdjacency.address();
      p.out = dOut.address();
      p.count = sample.length;
      p.dims = vectors.dims();
      p.degree = degree;
      p.metric = cosine ? 1 : 0;
      device.module().launch("gv_neighbour_gaps", (sample.length + GAP_WARPS - 1) / GAP_WARPS, 1, GAP_WARPS * 32, 0,
          device.stream(), Pointer.to(p.encode()));
      device.download(dOut, 0, out, 0, out.length);
    }
    return out;
  }

  /**
   * The traversal over the sample's vectors (positions into {@code sample}): starting from position 0, each next
   * choice the one farthest from all chosen ones (squared L2, or minus the cosine) while fewer than {@code seedCount}
   * are chosen, then the one with the largest gap over its {@code scale} (the squared L2 distance, or 1 minus the
   * cosine), while that exceeds {@code uncovered} and fewer than {@code limit} are chosen; ties go to the lower
   * position. Returns the chosen positions in the order chosen.
   */
  public static int[] traverse(GpuDevice device, GpuFlatIndex vectors, int[] sample, boolean cosine, float[] scale,
                               int seedCount, int limit, float uncovered) {
    check(vectors, sample);
    if (scale.length != sample.length) {
      throw new IllegalArgumentException("need a scale per sample vector: " + scale.length + " for " + sample.length);
    }
    if (seedCount < 1 || limit < seedCount) {
      throw new IllegalArgumentException("need 1 <= seedCount <= limit: " + seedCount + ", " + limit);
    }
    int count = sample.length;
    int dims = vectors.dims();
    int most = Math.min(count, limit);
    int blocks = Math.max(1, Math.min((count + THREADS / 32 - 1) / (THREADS / 32), 4 * device.multiprocessorCount()));
    float[] nearest = new float[count];
    Arrays.fill(nearest, Float.POSITIVE_INFINITY);
    int[] state = new int[4 + most];
    try (GpuDevice.Scope s = device.lock();
         DeviceBuffer dSample = device.allocate(4L * count);
         DeviceBuffer dNearest = device.allocate(4L * count);
         DeviceBuffer dScale = device.allocate(4L * count);
         DeviceBuffer dState = device.allocate(4L * state.length);
         DeviceBuffer dKeys = device.allocate(4L * blocks);
         DeviceBuffer dPositions = device.allocate(4L * blocks)) {
      device.upload(sample, dSample);
      device.upload(nearest, 0, count, dNearest, 0);
      device.upload(scale, 0, count, dScale, 0);
      device.upload(state, dState); // not stopped, none chosen, the first choice position 0, no block done
      FarthestStepParams p = new FarthestStepParams();
      p.points = vectors.vectorsAddress();
      p.sample = dSample.address();
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
    return Arrays.copyOfRange(state, 4, 4 + state[1]);
  }

  private static void check(GpuFlatIndex vectors, int[] sample) {
    if (sample.length < 1 || vectors.dims() > MAX_DIMS) {
      throw new IllegalArgumentException("need a sample and at most " + MAX_DIMS + " dimensions: " + sample.length
          + " vectors of " + vectors.dims());
    }
    for (int v : sample) {
      if (v < 0 || v >= vectors.size()) {
        throw new IllegalArgumentException("sample vector " + v + " outside [0, " + vectors.size() + ")");
      }
    }
  }
}
