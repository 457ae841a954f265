package org.gpuvectors.codec.gpu;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.ivf.Assigner;
import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.MemoryPart;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.ivf.IvfLists;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.runtime.CudaException;

/**
 * A {@link GpuBackend} on the CPU for tests of the service on machines without a GPU: device
 * memory is counted (live and peak), passes are brute force with the kernels' conventions (squared
 * L2 or inner product, cosine normalised, masks per query) over all vectors, or for IVF fields over
 * the vectors of the group's {@code nprobe} nearest lists (as the GPU index probes them), and faults
 * can be injected. {@code ivf_pq} fields rank those vectors by asymmetric distance (to the
 * reconstruction centroid + codewords of their code, in double: the value the GPU's tables sum up to)
 * and, as the GPU index does, return either those candidates (codes only) or, when the structure
 * sends the raw vectors up ({@link GpuIvf.Pq#reranksOnDevice}), the k best of the {@code
 * rerankFactor} x k best candidates by exact distance.
 */
public final class FakeBackend implements GpuBackend {

  /** A fault to throw from the next uploads or passes (null: none). */
  public volatile Supplier<RuntimeException> uploadFault;
  public volatile Supplier<RuntimeException> passFault;
  /**
   * Milliseconds each pass sleeps (lets concurrent searches queue up behind it); the first half is reported as the
   * pass's host enqueue (timing[0]), so that with two passes at once the batcher starts the next one halfway.
   */
  public volatile long passMillis;
  /** Passes that may run at once ({@link #concurrentPasses}); set before the service is made. */
  public volatile int concurrentPasses = 1;
  /** Passes running now, and the most that ever ran at once. */
  public final AtomicInteger passesInFlight = new AtomicInteger();
  public final AtomicInteger maxPassesInFlight = new AtomicInteger();

  public final AtomicLong liveBytes = new AtomicLong();
  public final AtomicLong peakLiveBytes = new AtomicLong();
  public final AtomicInteger uploads = new AtomicInteger();
  /** Uploads of graph fields. */
  public final AtomicInteger graphUploads = new AtomicInteger();
  /** Uploads of fields held at their element type's own size (bfloat16 here). */
  public final AtomicInteger elementUploads = new AtomicInteger();
  /** The search parameters (IVF lists, graph search width or exact search) of every group searched, in order. */
  public final java.util.Queue<SearchParams> groupParams = new java.util.concurrent.ConcurrentLinkedQueue<>();
  public final AtomicInteger passes = new AtomicInteger();
  public final AtomicInteger maxGroupsPerPass = new AtomicInteger();
  /** Calls of {@link #nearest} (k-means assignment on the "device"). */
  public final AtomicInteger nearestCalls = new AtomicInteger();
  /** Threads that ran passes, in order. */
  public final List<Thread> passThreads = java.util.Collections.synchronizedList(new ArrayList<>());
  /** Every index uploaded, in order. */
  public final List<FakeIndex> indexes = java.util.Collections.synchronizedList(new ArrayList<>());
  private final long totalMemoryBytes;
  private volatile boolean closed;

  public FakeBackend(long totalMemoryBytes) {
    this.totalMemoryBytes = totalMemoryBytes;
  }

  /** A sticky CUDA error as the driver reports it (illegal address). */
  public static CudaException sticky() {
    return CudaException.driver("cuLaunchKernel(test)", 700, "CUDA_ERROR_ILLEGAL_ADDRESS");
  }

  /** Device out of memory as cuMemAlloc reports it. */
  public static CudaException outOfMemory() {
    return CudaException.driver("cuMemAlloc(test)", 2, "CUDA_ERROR_OUT_OF_MEMORY");
  }

  /** A launch that fails without poisoning the context (invalid value). */
  public static CudaException launchFailure() {
    return CudaException.driver("cuLaunchKernel(test)", 1, "CUDA_ERROR_INVALID_VALUE");
  }

  @Override
  public String deviceName() {
    return "fake";
  }

  @Override
  public long totalMemoryBytes() {
    return totalMemoryBytes;
  }

  @Override
  public long estimateBytes(int size, int dims, Metric metric, GpuStructure structure) {
    return parts(size, dims, structure).total();
  }

  /**
   * The "device" memory of an upload, by part, as the real indexes split theirs: FP32 vectors; IVF centroids and
   * lists; ivf_pq codes in place of the vectors (this double keeps them on the heap at the vectors' size), and its raw
   * vectors when they go up for the device re-rank; graph adjacency.
   */
  public static DeviceBytes parts(int size, int dims, GpuStructure structure) {
    long vectors = 4L * Math.max(1, size) * dims;
    DeviceBytes.Builder parts = DeviceBytes.builder();
    switch (structure) {
      case null -> parts.add(MemoryPart.VECTORS, vectors);
      case GpuIvf ivf -> {
        parts.add(MemoryPart.LISTS, 4L * size).add(MemoryPart.CENTROIDS, 4L * ivf.nlist() * (dims + 1));
        if (ivf.pq() == null) {
          parts.add(MemoryPart.VECTORS, vectors);
        } else {
          parts.add(MemoryPart.PQ_CODES, vectors).add(MemoryPart.VECTORS, ivf.pq().reranksOnDevice() ? vectors : 0);
        }
      }
      case GpuGraph graph -> parts.add(MemoryPart.VECTORS, vectors).add(MemoryPart.GRAPH, 4L * size * graph.degree());
    }
    return parts.build();
  }

  /** Nearest-centroid calls (steps included) from which on every call fails with {@link #launchFailure}; -1: none. */
  public volatile int assignFailsFrom = -1;

  @Override
  public Assigner.Held hold(float[][] points, int count, int groups, Metric metric) {
    check();
    int dims = points[0].length;
    int subDims = dims / groups;
    return new Assigner.Held() {
      @Override
      public int[] nearest(float[] centroids, int k) {
        check();
        int call = nearestCalls.incrementAndGet();
        if (assignFailsFrom >= 0 && call >= assignFailsFrom) {
          throw launchFailure();
        }
        int[] out = new int[count * groups];
        float[] sub = new float[subDims];
        for (int g = 0; g < groups; g++) {
          float[] book = java.util.Arrays.copyOfRange(centroids, g * k * subDims, (g + 1) * k * subDims);
          for (int i = 0; i < count; i++) {
            System.arraycopy(points[i], g * subDims, sub, 0, subDims);
            out[i * groups + g] = nearestRow(book, k, sub, 0, subDims, metric);
          }
        }
        return out;
      }

      @Override
      public int[] update(float[] centroids, int k) {
        return org.gpuvectors.codec.ivf.KMeans.hostMeans(points, count, nearest(centroids, k), groups, k, centroids);
      }

      @Override
      public void close() {}
    };
  }

  /** Calls of {@link #prune} (graph builds' pruning on the "device": the host's GraphPruner). */
  public final AtomicInteger pruneCalls = new AtomicInteger();

  @Override
  public int[] prune(int[] knn, int n, int k, int degree) {
    check();
    Supplier<RuntimeException> fault = nearestKFault;
    if (fault != null) {
      throw fault.get();
    }
    pruneCalls.incrementAndGet();
    return org.gpuvectors.codec.graph.GraphPruner.prune(knn, n, k, degree);
  }

  /** Calls of {@link #reverseLinks} (graph builds' reverse links on the "device": the host's GraphPruner). */
  public final AtomicInteger reverseLinksCalls = new AtomicInteger();

  @Override
  public int[] reverseLinks(int[] pruned, int n, int degree) {
    check();
    Supplier<RuntimeException> fault = nearestKFault;
    if (fault != null) {
      throw fault.get();
    }
    reverseLinksCalls.incrementAndGet();
    return org.gpuvectors.codec.graph.GraphPruner.addReverseLinks(pruned, n, degree);
  }

  /** A fault to throw from the next {@link #nearestK}, {@link #prune} and {@link #reverseLinks} calls (null: none). */
  public volatile Supplier<RuntimeException> nearestKFault;
  /** Calls of {@link #nearestK} (graph builds' k-NN graph on the "device"). */
  public final AtomicInteger nearestKCalls = new AtomicInteger();

  @Override
  public SearchResult nearestK(float[] base, int numBase, float[] points, int count, int dims, Metric metric, int k) {
    check();
    Supplier<RuntimeException> fault = nearestKFault;
    if (fault != null) {
      throw fault.get();
    }
    nearestKCalls.incrementAndGet();
    int[] ids = new int[count * k];
    float[] distances = new float[count * k];
    for (int q = 0; q < count; q++) {
      // exact in double, best first, ties by the lower row: a raw distance (squared L2 or inner product) per hit
      double[] value = new double[numBase];
      Integer[] order = new Integer[numBase];
      for (int r = 0; r < numBase; r++) {
        double acc = 0;
        for (int d = 0; d < dims; d++) {
          float a = base[r * dims + d];
          float b = points[q * dims + d];
          acc += metric == Metric.L2 ? (a - b) * (double) (a - b) : (double) a * b;
        }
        value[r] = metric == Metric.L2 ? acc : -acc;
        order[r] = r;
      }
      java.util.Arrays.sort(order, (x, y) -> value[x] != value[y] ? Double.compare(value[x], value[y]) : Integer.compare(x, y));
      for (int i = 0; i < k; i++) {
        ids[q * k + i] = order[i];
        distances[q * k + i] = (float) (metric == Metric.L2 ? value[order[i]] : -value[order[i]]);
      }
    }
    return new SearchResult(count, k, ids, distances);
  }

  /** The nearest of {@code rows} rows of {@code matrix} to the vector at {@code x[from]} (ties: lower row). */
  private static int nearestRow(float[] matrix, int rows, float[] x, int from, int dims, Metric metric) {
    int best = 0;
    double bestValue = 0;
    for (int r = 0; r < rows; r++) {
      double acc = 0;
      for (int d = 0; d < dims; d++) {
        float a = matrix[r * dims + d];
        float b = x[from + d];
        acc += metric == Metric.L2 ? (a - b) * (double) (a - b) : -(double) a * b;
      }
      if (r == 0 || acc < bestValue) {
        best = r;
        bestValue = acc;
      }
    }
    return best;
  }

  @Override
  public DeviceIndex upload(FloatVectorValues vectors, Metric metric, GpuStructure structure) throws IOException {
    return upload(vectors, metric, structure, parts(vectors.size(), vectors.dimension(), structure));
  }

  /** An upload that counts {@code bytes} of "device" memory. */
  private FakeIndex upload(FloatVectorValues vectors, Metric metric, GpuStructure structure, DeviceBytes bytes)
      throws IOException {
    check();
    Supplier<RuntimeException> fault = uploadFault;
    if (fault != null) {
      throw fault.get();
    }
    int n = vectors.size();
    int dims = vectors.dimension();
    float[] data = new float[n * dims];
    for (int i = 0; i < n; i++) {
      float[] v = vectors.vectorValue(i);
      System.arraycopy(v, 0, data, i * dims, dims);
      if (metric == Metric.COSINE) {
        normalize(data, i * dims, dims);
      }
    }
    // a graph is searched exactly here (this double checks the codec's plumbing, not the graph search)
    IvfLists lists = structure instanceof GpuIvf ivf ? ivf.lists().get() : null;
    if (structure instanceof GpuGraph graph) {
      graph.adjacency().get(); // read as the real upload does
      graphUploads.incrementAndGet();
    }
    uploads.incrementAndGet();
    FakeIndex index = new FakeIndex(data, n, dims, metric, lists, bytes);
    if (structure instanceof GpuIvf ivf && ivf.pq() != null) {
      index.quantized(ivf.pq().codebook().get(), ivf.pq().codesInListOrder().get(), ivf.pq().rerankFactor());
    }
    indexes.add(index);
    return index;
  }

  /**
   * bfloat16 fields, and float fields' compact copies, held as their floats rounded to bfloat16 (as the device's upload
   * rounds them; a bfloat16 field's values are bfloat16 already) and scored in FP32 as the device's bf16 kernel scores
   * them, counted at the device's two bytes a dimension; byte and bit fields are refused (the GPU tests cover their
   * kernels).
   */
  @Override
  public DeviceIndex upload(ElementVectors vectors, Metric metric) throws IOException {
    if (vectors.type() != ElementType.BFLOAT16 && vectors.type() != ElementType.FLOAT) {
      return GpuBackend.super.upload(vectors, metric);
    }
    FloatVectorValues floats = (FloatVectorValues) vectors.values();
    List<float[]> rounded = new ArrayList<>(floats.size());
    for (int i = 0; i < floats.size(); i++) {
      float[] v = floats.vectorValue(i).clone();
      for (int d = 0; d < v.length; d++) {
        v[d] = org.gpuvectors.cuda.flat.Bf16.round(v[d]);
      }
      rounded.add(v);
    }
    FakeIndex index = upload(FloatVectorValues.fromFloats(rounded, floats.dimension()), metric, null,
        DeviceBytes.builder().add(MemoryPart.VECTORS, vectors.deviceBytes()).build());
    elementUploads.incrementAndGet();
    return index;
  }

  @Override
  public int concurrentPasses() {
    return concurrentPasses;
  }

  @Override
  public SearchResult[] search(List<SearchGroup> groups, long[] timing) {
    maxPassesInFlight.accumulateAndGet(passesInFlight.incrementAndGet(), Math::max);
    try {
      timing[0] += passMillis * 500_000L;
      return pass(groups);
    } finally {
      passesInFlight.decrementAndGet();
    }
  }

  private SearchResult[] pass(List<SearchGroup> groups) {
    check();
    passes.incrementAndGet();
    passThreads.add(Thread.currentThread());
    maxGroupsPerPass.accumulateAndGet(groups.size(), Math::max);
    Supplier<RuntimeException> fault = passFault;
    if (fault != null) {
      throw fault.get();
    }
    if (passMillis > 0) {
      try {
        Thread.sleep(passMillis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    SearchResult[] out = new SearchResult[groups.size()];
    for (int g = 0; g < groups.size(); g++) {
      groupParams.add(groups.get(g).params());
      out[g] = search(groups.get(g));
    }
    return out;
  }

  private static SearchResult search(SearchGroup group) {
    FakeIndex index = (FakeIndex) group.index();
    if (index.closed) {
      throw new IllegalStateException("searched a closed index");
    }
    int k = group.k();
    int dims = index.dims;
    int[] ids = new int[group.numQueries() * k];
    float[] distances = new float[group.numQueries() * k];
    Arrays.fill(ids, -1);
    for (int q = 0; q < group.numQueries(); q++) {
      float[] query = group.query(q);
      if (index.metric == Metric.COSINE) {
        normalize(query, 0, dims);
      }
      long[] mask = group.queryMasks() != null ? group.queryMasks()[q] : group.sharedMask();
      List<float[]> scored = new ArrayList<>(); // {distance, id}
      for (int id : candidates(index, query, nprobe(group))) {
        if (mask != null && ((mask[id >>> 6] >>> id) & 1) == 0) {
          continue;
        }
        scored.add(new float[] {(float) (index.codes == null ? exact(index, id, query) : approximate(index, id, query)), id});
      }
      sort(scored, index.metric);
      if (index.codes != null && index.rerankFactor > 0) {
        // the device re-rank: the rerankFactor x k best candidates (at most the device's k) by exact distance
        int candidates = (int) Math.max(k, Math.min(org.gpuvectors.cuda.select.KSelect.MAX_K, (long) index.rerankFactor * k));
        scored = new ArrayList<>(scored.subList(0, Math.min(candidates, scored.size())));
        for (float[] c : scored) {
          c[0] = (float) exact(index, (int) c[1], query);
        }
        sort(scored, index.metric);
      }
      for (int i = 0; i < Math.min(k, scored.size()); i++) {
        distances[q * k + i] = scored.get(i)[0];
        ids[q * k + i] = (int) scored.get(i)[1];
      }
    }
    return new SearchResult(group.numQueries(), k, ids, distances);
  }

  /** Best first: smallest squared L2, largest inner product; ties by the lower id. */
  private static void sort(List<float[]> scored, Metric metric) {
    boolean largest = metric != Metric.L2;
    scored.sort((a, b) -> a[0] != b[0] ? (largest ? Float.compare(b[0], a[0]) : Float.compare(a[0], b[0]))
        : Float.compare(a[1], b[1]));
  }

  /** The kernels' exact distance of vector {@code id} (squared L2, or inner product), in double. */
  private static double exact(FakeIndex index, int id, float[] query) {
    double acc = 0;
    for (int d = 0; d < index.dims; d++) {
      float x = index.data[id * index.dims + d];
      acc += index.metric == Metric.L2 ? (x - query[d]) * (double) (x - query[d]) : (double) x * query[d];
    }
    return acc;
  }

  /**
   * The asymmetric distance of vector {@code id} (squared L2 or inner product of the query and the
   * reconstruction centroid + codewords of its code), in double.
   */
  private static double approximate(FakeIndex index, int id, float[] query) {
    org.gpuvectors.cuda.ivf.PqCodebook book = index.book;
    int dims = index.dims;
    int l = index.listOf[id];
    double acc = 0;
    for (int j = 0; j < book.m(); j++) {
      int c = index.codes[id * book.m() + j] & 0xFF;
      for (int s = 0; s < book.subDims(); s++) {
        int d = j * book.subDims() + s;
        double x = (double) index.lists.centroids()[l * dims + d] + book.codebooks()[(j * book.ksub() + c) * book.subDims() + s];
        acc += index.metric == Metric.L2 ? (x - query[d]) * (x - query[d]) : x * query[d];
      }
    }
    return acc;
  }

  /** The lists an IVF group probes (other groups' parameters name none). */
  public static int nprobe(SearchGroup group) {
    return group.params() instanceof SearchParams.Ivf ivf ? ivf.nprobe() : 1;
  }

  /** All ordinals of a flat index; of an IVF index, those in the nprobe lists nearest to the query. */
  private static int[] candidates(FakeIndex index, float[] query, int nprobe) {
    if (index.lists == null) {
      int[] all = new int[index.n];
      Arrays.setAll(all, i -> i);
      return all;
    }
    IvfLists lists = index.lists;
    int dims = index.dims;
    float[] centroids = lists.centroids().clone();
    Metric coarse = index.metric;
    if (coarse == Metric.COSINE) {
      for (int l = 0; l < lists.nlist(); l++) {
        normalize(centroids, l * dims, dims);
      }
    }
    // rank lists by distance (ties: lower list), take the nearest nprobe
    Integer[] order = new Integer[lists.nlist()];
    double[] dist = new double[lists.nlist()];
    for (int l = 0; l < order.length; l++) {
      order[l] = l;
      double acc = 0;
      for (int d = 0; d < dims; d++) {
        float a = centroids[l * dims + d];
        acc += coarse == Metric.L2 ? (a - query[d]) * (double) (a - query[d]) : -(double) a * query[d];
      }
      dist[l] = acc;
    }
    Arrays.sort(order, (a, b) -> dist[a] != dist[b] ? Double.compare(dist[a], dist[b]) : Integer.compare(a, b));
    List<Integer> ids = new ArrayList<>();
    for (int i = 0; i < Math.min(nprobe, order.length); i++) {
      for (int p = lists.offsets()[order[i]]; p < lists.offsets()[order[i] + 1]; p++) {
        ids.add(lists.ords()[p]);
      }
    }
    return ids.stream().mapToInt(Integer::intValue).toArray();
  }

  private static void normalize(float[] x, int from, int dims) {
    double s = 0;
    for (int d = 0; d < dims; d++) {
      s += (double) x[from + d] * x[from + d];
    }
    if (s > 0) {
      for (int d = 0; d < dims; d++) {
        x[from + d] = (float) (x[from + d] / Math.sqrt(s));
      }
    }
  }

  private void check() {
    if (closed) {
      throw new IllegalStateException("fake device closed");
    }
  }

  @Override
  public void close() {
    closed = true;
  }

  /** A resident index of the fake device: vectors on the heap, bytes counted as device memory. */
  public final class FakeIndex implements DeviceIndex {
    final float[] data;
    final int n;
    final int dims;
    final Metric metric;
    final IvfLists lists; // null: flat
    final DeviceBytes bytes;
    volatile boolean closed;
    // ivf_pq: the codebooks, the code of each ordinal (m bytes), its list, and the device re-rank's factor (0: none)
    org.gpuvectors.cuda.ivf.PqCodebook book;
    byte[] codes;
    int[] listOf;
    int rerankFactor;

    /** An IVF index takes the lists to probe, the others (flat, and graph fields held as flat) anything else. */
    @Override
    public void checkSearch(SearchParams params, int k) {
      if ((lists != null) != (params instanceof SearchParams.Ivf)) {
        throw new IllegalArgumentException((lists != null ? "an IVF index" : "no IVF index") + " searched with " + params);
      }
      if (params instanceof SearchParams.Ivf ivf) {
        org.gpuvectors.cuda.ivf.IvfSearch.probes(ivf.nprobe(), lists.nlist()); // refuses what the device's coarse step does
      }
    }

    /** Makes this an ivf_pq index: its codes by ordinal (from list order) and lists. */
    void quantized(org.gpuvectors.cuda.ivf.PqCodebook book, byte[] codesInListOrder, int rerankFactor) {
      int m = book.m();
      this.book = book;
      this.codes = new byte[n * m];
      this.listOf = new int[n];
      this.rerankFactor = rerankFactor;
      for (int l = 0; l < lists.nlist(); l++) {
        for (int p = lists.offsets()[l]; p < lists.offsets()[l + 1]; p++) {
          int ord = lists.ords()[p];
          listOf[ord] = l;
          System.arraycopy(codesInListOrder, p * m, codes, ord * m, m);
        }
      }
    }

    /** Whether searches re-rank on the "device" (ivf_pq uploaded with its raw vectors). */
    @Override
    public boolean reranksOnDevice() {
      return codes != null && rerankFactor > 0;
    }

    FakeIndex(float[] data, int n, int dims, Metric metric, IvfLists lists, DeviceBytes bytes) {
      this.data = data;
      this.n = n;
      this.dims = dims;
      this.metric = metric;
      this.lists = lists;
      this.bytes = bytes;
      long live = liveBytes.addAndGet(bytes.total());
      peakLiveBytes.accumulateAndGet(live, Math::max);
    }

    @Override
    public int size() {
      return n;
    }

    @Override
    public int dims() {
      return dims;
    }

    @Override
    public org.gpuvectors.cuda.Metric metric() {
      return org.gpuvectors.codec.gpu.DeviceMetric.of(metric);
    }

    @Override
    public DeviceBytes deviceBytesByPart() {
      return bytes;
    }

    public boolean isClosed() {
      return closed;
    }

    @Override
    public void close() {
      if (closed) {
        throw new IllegalStateException("index closed twice");
      }
      closed = true;
      liveBytes.addAndGet(-bytes.total());
    }
  }
}
