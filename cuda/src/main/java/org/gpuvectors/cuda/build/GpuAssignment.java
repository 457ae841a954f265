package org.gpuvectors.cuda.build;

import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.KernelModule;
import jcuda.Pointer;

/**
 * Points held on the device for nearest-centroid steps against centroids that change: the Lloyd iterations of
 * k-means (the training sample goes up once, not once an iteration) and the encoding of a block of vectors. Each
 * point is cut into {@code groups} sub-vectors of {@code dims / groups} floats, each with its own centroids:
 *
 * <ul>
 *   <li>one group (the coarse quantizer of an IVF index): the brute-force primitive, the centroids as a flat index
 *       and the held points as its queries, k = 1 ({@link GpuFlatIndex}: GEMM + selection), for every metric;
 *   <li>several groups (the sub-quantizers of a product quantizer, squared L2 only): {@code gv_codebook_assign}, all
 *       groups in one launch. Fashion-MNIST's 98 sub-quantizers were 98 small brute-force searches an iteration, each
 *       one a GPU call with its own uploads (1.4-1.7 s of a 2.5 s build).
 * </ul>
 *
 * The update step of k-means runs here too ({@link #step}, {@link #means}: the assignment stays on the device, the
 * sums are exact fixed point). Kernels in kmeans.cu.
 *
 * Owns the points' device buffer, released by {@link #close}. Not thread-safe; each call takes the device lock.
 */
public final class GpuAssignment implements AutoCloseable {

  private final GpuDevice device;
  private final DeviceBuffer points;
  private final int count;
  private final int dims;
  private final int groups;
  private final Metric metric;
  /** The last {@link #nearest}'s answer on the device (what {@link #means} averages by), and its k; null before. */
  private DeviceBuffer assignment;
  private int assignmentK;
  /** {@link #means}'s fixed-point scale, from the points' largest magnitude; {@code Integer.MIN_VALUE} until known. */
  private int scaleLog2 = Integer.MIN_VALUE;
  private boolean closed;

  private GpuAssignment(GpuDevice device, DeviceBuffer points, int count, int dims, int groups, Metric metric) {
    this.device = device;
    this.points = points;
    this.count = count;
    this.dims = dims;
    this.groups = groups;
    this.metric = metric;
  }

  /**
   * Uploads {@code count} row-major points of {@code dims} floats. Several {@code groups} (they must divide {@code
   * dims}) take {@link Metric#L2} only; cosine points must come normalised, ranked by {@link Metric#INNER_PRODUCT}.
   */
  public static GpuAssignment hold(GpuDevice device, float[] pointsRowMajor, int count, int dims, int groups,
                                   Metric metric) {
    if ((long) count * dims > pointsRowMajor.length) {
      throw new IllegalArgumentException(
          "need count * dims point floats: count=" + count + " dims=" + dims + " length=" + pointsRowMajor.length);
    }
    return upload(device, count, dims, groups, metric, b -> device.uploadStaged(pointsRowMajor, count, dims, b, 0));
  }

  /**
   * As {@link #hold(GpuDevice, float[], int, int, int, Metric)}, the points the first {@code count} of {@code rows}
   * ({@code dims} floats each), each copied once on the host, straight into pinned memory ({@link
   * GpuDevice#uploadRows}).
   */
  public static GpuAssignment hold(GpuDevice device, float[][] rows, int count, int dims, int groups, Metric metric) {
    if (count > rows.length) {
      throw new IllegalArgumentException("count " + count + " > rows " + rows.length);
    }
    return upload(device, count, dims, groups, metric, b -> device.uploadRows(rows, count, dims, b, 0));
  }

  /** Checks the arguments, then allocates the points' buffer and fills it with {@code copy} under the lock. */
  private static GpuAssignment upload(GpuDevice device, int count, int dims, int groups, Metric metric,
                                      java.util.function.Consumer<DeviceBuffer> copy) {
    check(count, dims, groups, metric);
    try (GpuDevice.Scope s = device.lock()) {
      DeviceBuffer buffer = device.allocate(4L * count * dims);
      boolean ok = false;
      try {
        copy.accept(buffer);
        ok = true;
      } finally {
        if (!ok) {
          buffer.close();
        }
      }
      return new GpuAssignment(device, buffer, count, dims, groups, metric);
    }
  }

  private static void check(int count, int dims, int groups, Metric metric) {
    if (count < 1 || dims < 1) {
      throw new IllegalArgumentException("need points: count=" + count + " dims=" + dims);
    }
    if (groups < 1 || groups > MAX_GROUPS || dims % groups != 0) {
      throw new IllegalArgumentException(
          "groups must divide the dimension " + dims + " and be at most " + MAX_GROUPS + ": " + groups);
    }
    if (groups > 1 && metric != Metric.L2) {
      throw new IllegalArgumentException("sub-vector groups are assigned by squared L2 only, not " + metric);
    }
    if ((long) count * groups > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("count * groups must fit one int array: " + count + " * " + groups);
    }
  }

  /**
   * The nearest of {@code k} centroids for every sub-vector: {@code out[i * groups + g]} for point {@code i} and
   * group {@code g}, among the centroids {@code centroids[(g * k + c) * (dims / groups) ..]} of that group. Ties go
   * to the lower index (the GEMM path: up to float rounding of the distances).
   */
  public int[] nearest(float[] centroids, int k) {
    int[] out = new int[count * groups];
    try (GpuDevice.Scope s = device.lock()) {
      enqueueNearest(centroids, k);
      device.downloadStaged(assignment, 0, out, 0, out.length);
    }
    return out;
  }

  /**
   * One Lloyd iteration of k-means on the device: {@link #nearest} without bringing the assignment back, then {@link
   * #means} by it.
   */
  public Means step(float[] centroids, int k) {
    try (GpuDevice.Scope s = device.lock()) {
      enqueueNearest(centroids, k);
      return means();
    }
  }

  /** Enqueues the nearest-centroid step into a new {@link #assignment}; caller holds the lock. */
  private void enqueueNearest(float[] centroids, int k) {
    int subDims = dims / groups;
    if (k < 1 || (long) groups * k * subDims != centroids.length) {
      throw new IllegalArgumentException("need groups * k * subDims centroid floats: groups=" + groups + " k=" + k
          + " subDims=" + subDims + " length=" + centroids.length);
    }
    if (closed) {
      throw new IllegalStateException("assignment points released");
    }
    DeviceBuffer out = keepAssignment(device.allocate(4L * count * groups), k);
    if (groups == 1) {
      enqueueBruteForce(centroids, k, out);
    } else {
      enqueueCodewords(centroids, k, subDims, out);
    }
  }

  private void enqueueBruteForce(float[] centroids, int k, DeviceBuffer out) {
    // the centroids' index and the distances go back to the pool, reused in stream order after these kernels
    try (GpuFlatIndex index = GpuFlatIndex.upload(device, centroids, k, dims, metric);
         DeviceBuffer outV = device.allocate(4L * count)) {
      // FP32 distances: k-means steps are few and small, and TF32's candidate pass would only add its check
      index.setPrecision(GpuFlatIndex.Precision.FP32);
      index.enqueueSearch(points.address(), 0, count, 1, 0, 0, outV, out, 0);
    }
  }

  private void enqueueCodewords(float[] codebooks, int k, int subDims, DeviceBuffer out) {
    int bookBytes = 4 * k * subDims;
    try (DeviceBuffer books = device.allocate(4L * codebooks.length)) {
      device.upload(codebooks, 0, codebooks.length, books, 0);
      CodebookAssignParams p = new CodebookAssignParams();
      p.points = points.address();
      p.codebooks = books.address();
      p.out = out.address();
      p.count = count;
      p.dims = dims;
      p.groups = groups;
      p.subDims = subDims;
      p.k = k;
      KernelModule module = device.module();
      boolean shared = bookBytes <= module.maxDynamicSharedBytes(SHARED_KERNEL);
      String kernel = !shared ? GLOBAL_KERNEL : subDims == 4 ? "gv_codebook_assign_s4"
          : subDims == 8 ? "gv_codebook_assign_s8" : SHARED_KERNEL;
      if (shared) {
        module.allowDynamicShared(kernel, bookBytes);
      }
      module.launch(kernel, (count + CodebookAssignParams.THREADS - 1) / CodebookAssignParams.THREADS, groups,
          CodebookAssignParams.THREADS, shared ? bookBytes : 0, device.stream(), Pointer.to(p.encode()));
    }
  }

  /** Keeps {@code buffer} as the last assignment (of {@code k} centroids), returning the one it replaces to the pool. */
  private DeviceBuffer keepAssignment(DeviceBuffer buffer, int k) {
    if (assignment != null) {
      assignment.close();
    }
    assignment = buffer;
    assignmentK = k;
    return buffer;
  }

  /** What {@link #means} returns: per (group, centroid), the mean of its sub-vectors and their count. */
  public record Means(float[] means, int[] counts) {}

  /**
   * The update step of k-means, on the device: for each group {@code g} and centroid {@code c} of the last {@link
   * #nearest}, the mean of the sub-vectors assigned to it ({@code means[(g * k + c) * subDims ..]}, zeros where none)
   * and their number ({@code counts[g * k + c]}). The sums are fixed point (64-bit, each float scaled by a power of
   * two chosen from the points' largest magnitude), so that they are exact whatever order the atomics land in:
   * the same means on every run.
   */
  public Means means() {
    if (closed) {
      throw new IllegalStateException("assignment points released");
    }
    if (assignment == null) {
      throw new IllegalStateException("no assignment yet: call nearest first");
    }
    int k = assignmentK;
    int subDims = dims / groups;
    int slots = groups * k * subDims;
    float[] means = new float[slots];
    int[] counts = new int[groups * k];
    try (GpuDevice.Scope s = device.lock();
         DeviceBuffer sums = device.allocate(8L * slots);
         DeviceBuffer dCounts = device.allocate(4L * counts.length);
         DeviceBuffer dMeans = device.allocate(4L * slots)) {
      if (scaleLog2 == Integer.MIN_VALUE) {
        scaleLog2 = scaleLog2(absMax(), count);
      }
      device.clear(sums);
      device.clear(dCounts);
      CentroidMeansParams p = new CentroidMeansParams();
      p.points = points.address();
      p.assignment = assignment.address();
      p.sums = sums.address();
      p.counts = dCounts.address();
      p.means = dMeans.address();
      p.count = count;
      p.groups = groups;
      p.subDims = subDims;
      p.k = k;
      p.scaleLog2 = scaleLog2;
      KernelModule module = device.module();
      module.launch("gv_centroid_sums", blocksFor((long) count * dims), 1, CentroidMeansParams.THREADS, 0,
          device.stream(), Pointer.to(p.encode()));
      module.launch("gv_centroid_means", blocksFor(slots), 1, CentroidMeansParams.THREADS, 0, device.stream(),
          Pointer.to(p.encode()));
      device.download(dMeans, 0, means, 0, slots);
      device.download(dCounts, 0, counts, 0, counts.length);
    }
    return new Means(means, counts);
  }

  /** The points' largest magnitude ({@code gv_abs_max}); caller holds the lock. */
  private float absMax() {
    try (DeviceBuffer out = device.allocate(4)) {
      device.clear(out);
      long n = (long) count * dims;
      device.module().launch("gv_abs_max", blocksFor(n), 1, CentroidMeansParams.THREADS, 0, device.stream(),
          Pointer.to(new long[] {points.address()}), Pointer.to(new long[] {n}), Pointer.to(new long[] {out.address()}));
      int[] bits = new int[1];
      device.download(out, 0, bits, 0, 1);
      return Float.intBitsToFloat(bits[0]);
    }
  }

  /** Blocks of a grid-stride launch of the update kernels over {@code n} elements: 8 per SM at most. */
  private int blocksFor(long n) {
    return (int) Math.min(device.multiprocessorCount() * 8L, (n + CentroidMeansParams.THREADS - 1)
        / CentroidMeansParams.THREADS);
  }

  /**
   * The power of two that {@link #means} scales floats by: the largest for which {@code count} floats of magnitude at
   * most {@code absMax} sum to less than 2^62 in magnitude (a sum's resolution is then ~2^-(61 - log2 count) of
   * {@code absMax}: far below a float's rounding of the mean).
   */
  public static int scaleLog2(float absMax, int count) {
    if (!(absMax > 0) || Float.isInfinite(absMax)) {
      return 0; // all zeros (or no finite bound: the caller's floats are finite, Lucene rejects others)
    }
    int magnitude = Math.getExponent(absMax) + 1; // absMax < 2^magnitude
    int countBits = 32 - Integer.numberOfLeadingZeros(Math.max(1, count)); // count < 2^countBits
    return 62 - magnitude - countBits;
  }

  /** The most groups (a launch's grid y). */
  public static final int MAX_GROUPS = 65535;

  /** The kernel for sub-vectors of any length with the codebook in shared memory (4 and 8 floats have their own). */
  public static final String SHARED_KERNEL = "gv_codebook_assign_shared";
  static final String GLOBAL_KERNEL = "gv_codebook_assign_global";

  /** Points held. */
  public int count() {
    return count;
  }

  /** Returns the points' device memory (to the device's pool). Idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try (GpuDevice.Scope s = device.lock()) {
      points.close();
      if (assignment != null) {
        assignment.close();
        assignment = null;
      }
    }
  }
}
