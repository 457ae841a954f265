package org.gpuvectors.codec.gpu;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.pass.PassGraphStats;
import org.gpuvectors.cuda.rerank.RerankStats;
import org.gpuvectors.cuda.runtime.CudaException;
import org.gpuvectors.cuda.select.KSelect;

/**
 * Searches segment fields on one GPU: the owner of the device ({@link GpuBackend}), of what is
 * resident there ({@link Residency}) and of the batching of concurrent searches ({@link
 * SearchBatcher}), and of the GPU's on/off and failure state and fallback counting. Two parts work
 * on what it lends them and own nothing themselves: the one-pass search of a query's segments
 * ({@link CrossSegmentSpeculation}) and the GPU's part in index builds ({@link
 * GpuBuildAcceleration}); {@link #close} frees the device and what is resident, in one place. One
 * per node (the Elasticsearch plugin makes it in {@code createComponents} and closes it with the
 * node) or per process for plain Lucene ({@link GpuSearchServices}).
 *
 * <p>A search never fails because of the GPU: when the GPU cannot serve it, {@link #search} returns
 * null, the caller runs the CPU path, and the {@link FallbackReason} is counted (and logged once). A
 * sticky CUDA error (one that poisons the context) switches the GPU path off for good, logged and
 * counted, rather than failing every later search. Anything else thrown on the way (argument checks,
 * index bounds, null pointers) is a bug and propagates.
 */
public final class GpuSearchService implements Closeable {

  /** Largest k the GPU k-selection serves. */
  public static final int MAX_GPU_K = KSelect.MAX_K;
  /** Most lists an IVF search probes on the GPU: its coarse step selects them with the same k-selection. */
  public static final int MAX_GPU_PROBES = KSelect.MAX_K;

  /**
   * Whether the GPU can run a search with these parameters: an IVF search probes at most {@link #MAX_GPU_PROBES}
   * lists (the CPU probes any number, with the same results).
   */
  public static boolean servesParams(SearchParams params) {
    return !(params instanceof SearchParams.Ivf ivf) || ivf.nprobe() <= MAX_GPU_PROBES;
  }

  private static final System.Logger LOG = System.getLogger(GpuSearchService.class.getName());

  /** When to use the GPU. */
  public enum Mode {
    /** A GPU when one is usable, else the CPU. */
    AUTO,
    /** A GPU is required (the Elasticsearch plugin refuses to start without one). */
    TRUE,
    /** Never the GPU. */
    FALSE;

    public static Mode parse(String value) {
      return switch (value.toLowerCase(Locale.ROOT)) {
        case "auto" -> AUTO;
        case "true" -> TRUE;
        case "false" -> FALSE;
        default -> throw new IllegalArgumentException(
            "GPU mode must be [auto], [true] or [false] but was [" + value + "]");
      };
    }
  }

  /**
   * How the service is set up: immutable, made by {@link #builder()} (plain Lucene) or from the node's settings (the
   * Elasticsearch plugin). {@link #defaults()}: a GPU when one is usable, device 0, 80 % of its memory, batches of up
   * to {@value #DEFAULT_MAX_BATCH_QUERIES} queries.
   *
   * @param mode whether to use a GPU
   * @param deviceOrdinal the CUDA device searched
   * @param memoryBudget the device memory that resident segment fields may take (a fraction or bytes)
   * @param maxBatchQueries queries one GPU pass takes at most (a search with more runs alone)
   * @param ivfPqRerankOnGpu whether ivf_pq fields upload their raw vectors with the codes, so that the device
   *     re-ranks their candidates exactly and a batch never waits on random host reads of raw vectors (the default;
   *     a field whose raw vectors do not fit the free budget goes up as its codes alone: {@link #ivfPqRerankOnGpu});
   *     false keeps the raw vectors on the host (4 x dims bytes a vector less GPU memory), which re-ranks the
   *     candidates the device returns: the same results
   * @param gpu how the device searches ({@link GpuConfig}: lanes, passes in flight, per-index tuning)
   */
  public record Settings(
      Mode mode, int deviceOrdinal, MemoryBudget memoryBudget, int maxBatchQueries, boolean ivfPqRerankOnGpu,
      GpuConfig gpu) {
    public static final int DEFAULT_MAX_BATCH_QUERIES = 1024;
    public static final MemoryBudget DEFAULT_MEMORY_BUDGET = MemoryBudget.ofFraction(0.8);

    public Settings {
      java.util.Objects.requireNonNull(mode, "mode");
      java.util.Objects.requireNonNull(gpu, "gpu");
      if (deviceOrdinal < 0) {
        throw new IllegalArgumentException("GPU device ordinal must be >= 0 but was [" + deviceOrdinal + "]");
      }
      java.util.Objects.requireNonNull(memoryBudget, "memoryBudget");
      if (maxBatchQueries < 1) {
        throw new IllegalArgumentException("max batch queries must be >= 1 but was [" + maxBatchQueries + "]");
      }
    }

    /** The four choices tests and benchmarks vary most, the rest as {@link #defaults()}. */
    public Settings(Mode mode, int deviceOrdinal, double memoryBudget, int maxBatchQueries) {
      this(mode, deviceOrdinal, MemoryBudget.ofFraction(memoryBudget), maxBatchQueries, true, GpuConfig.defaults());
    }

    public static Settings defaults() {
      return builder().build();
    }

    public static Builder builder() {
      return new Builder();
    }

    /** A builder that starts from these settings. */
    public Builder toBuilder() {
      return new Builder()
          .mode(mode)
          .deviceOrdinal(deviceOrdinal)
          .memoryBudget(memoryBudget)
          .maxBatchQueries(maxBatchQueries)
          .ivfPqRerankOnGpu(ivfPqRerankOnGpu)
          .gpu(gpu);
    }

    /** Builds {@link Settings}; what is not set keeps its default. */
    public static final class Builder {
      private Mode mode = Mode.AUTO;
      private int deviceOrdinal;
      private MemoryBudget memoryBudget = DEFAULT_MEMORY_BUDGET;
      private int maxBatchQueries = DEFAULT_MAX_BATCH_QUERIES;
      private boolean ivfPqRerankOnGpu = true;
      private GpuConfig gpu = GpuConfig.defaults();

      private Builder() {}

      public Builder mode(Mode value) {
        this.mode = value;
        return this;
      }

      public Builder deviceOrdinal(int value) {
        this.deviceOrdinal = value;
        return this;
      }

      /** A fraction of the device's memory, in (0, 1]. */
      public Builder memoryBudget(double fraction) {
        return memoryBudget(MemoryBudget.ofFraction(fraction));
      }

      public Builder memoryBudget(MemoryBudget value) {
        this.memoryBudget = value;
        return this;
      }

      public Builder maxBatchQueries(int value) {
        this.maxBatchQueries = value;
        return this;
      }

      public Builder ivfPqRerankOnGpu(boolean value) {
        this.ivfPqRerankOnGpu = value;
        return this;
      }

      public Builder gpu(GpuConfig value) {
        this.gpu = value;
        return this;
      }

      public Settings build() {
        return new Settings(mode, deviceOrdinal, memoryBudget, maxBatchQueries, ivfPqRerankOnGpu, gpu);
      }
    }
  }

  private final Settings settings;
  private final GpuSearchStats stats = new GpuSearchStats();
  private final GpuBackend backend; // null when no GPU is usable
  private final String unusableReason; // why backend is null
  private final Residency residency;
  // indices (GpuSegment groups) short of memory, and how far they turned to their compact forms from now on
  // (demoteToCompactForms); weak keys, so that a closed index's entry goes
  private final java.util.Map<Object, Demotion> demotions =
      java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());
  private final SearchBatcher batcher;
  private final GpuBuildAcceleration buildAcceleration;
  private final CrossSegmentSpeculation speculation;
  private volatile boolean enabled;
  private volatile String failure; // the sticky error that switched the GPU off
  private volatile boolean closed;

  private GpuSearchService(GpuBackend backend, String unusableReason, Settings settings) {
    this.settings = settings;
    this.backend = backend;
    this.unusableReason = unusableReason;
    long budget = backend == null ? 0 : settings.memoryBudget().bytesOf(backend.totalMemoryBytes());
    this.residency = new Residency(budget, stats);
    this.batcher =
        backend == null
            ? null
            : new SearchBatcher(backend::search, settings.maxBatchQueries(), backend.concurrentPasses(), stats);
    this.speculation =
        new CrossSegmentSpeculation(residency, batcher, stats, this::acquire, this::gpuError);
    this.buildAcceleration = new GpuBuildAcceleration(backend, stats, k -> refusal(k) == null, this::gpuError);
    this.enabled = backend != null;
  }

  /** Opens the GPU the settings name (or none: mode false, no usable GPU, the device fails to open). */
  public static GpuSearchService create(Settings settings) {
    if (settings.mode() == Mode.FALSE) {
      return new GpuSearchService(null, "GPU disabled (mode=false)", settings);
    }
    GpuAvailability availability = GpuAvailability.get();
    if (availability.available() == false) {
      return new GpuSearchService(null, "no usable GPU: " + availability.reason(), settings);
    }
    int ordinal = settings.deviceOrdinal();
    GpuDevice device;
    try {
      device = GpuDevice.open(ordinal, settings.gpu());
    } catch (RuntimeException e) {
      return new GpuSearchService(
          null, "no usable GPU: GPU " + ordinal + " could not be opened: " + e.getMessage(), settings);
    }
    LOG.log(
        System.Logger.Level.INFO,
        "gpu-vectors: searching on GPU {0} ({1}), memory budget {2} MB, batches of up to {3} queries",
        ordinal,
        device.name(),
        settings.memoryBudget().bytesOf(device.totalMemoryBytes()) >> 20,
        settings.maxBatchQueries());
    return new GpuSearchService(new CudaBackend(device), null, settings);
  }

  /** A service on a given backend (tests: doubles that inject faults). */
  public static GpuSearchService withBackend(GpuBackend backend, Settings settings) {
    return new GpuSearchService(backend, null, settings);
  }

  /** How this service was set up. */
  public Settings settings() {
    return settings;
  }

  /** Counters of GPU searches, batches, fallbacks and residency. */
  public GpuSearchStats stats() {
    return stats;
  }

  /**
   * What the device's search passes captured as CUDA graphs did and hold (one graph launch for a pass of a shape
   * seen before, instead of its chain of launches); zeros without a GPU or once closed.
   */
  public PassGraphStats passGraphStats() {
    return backend == null || closed ? new PassGraphStats(0, 0, 0, 0, 0) : backend.passGraphs();
  }

  /**
   * Flat queries (per segment) answered by the FP16 candidate scan of small batches, and those its certificate sent
   * back to the FP32 scan (GpuFlatIndex.addHalfCopy).
   */
  public RerankStats halfScanStats() {
    return backend == null || closed ? new RerankStats(0, 0) : backend.halfScans();
  }

  /** Whether searches currently go to the GPU. */
  public boolean gpuActive() {
    return backend != null && enabled && failure == null && closed == false;
  }

  /** Why there is no GPU (or why it was switched off after a failure), or null while it serves. */
  public String unusableReason() {
    if (backend == null) {
      return unusableReason;
    }
    return failure;
  }

  /** Name of the GPU in use, or null. */
  public String deviceName() {
    return backend == null ? null : backend.deviceName();
  }

  /** Device memory that resident segment fields may take (0 without a GPU). */
  public long budgetBytes() {
    return residency.budgetBytes();
  }

  /** Device memory held by resident segment fields. */
  public long residentBytes() {
    return residency.heldBytes();
  }

  /** Device memory held by resident segment fields, by what it holds (vectors, codes, graphs, ...). */
  public DeviceBytes residentBytesByPart() {
    return residency.residentBytesByPart();
  }

  /** Resident segment fields. */
  public int residentCount() {
    return residency.size();
  }

  /** Whether a segment field is resident now. */
  public boolean isResident(Object segment, String field) {
    return residency.isResident(new Residency.Key(segment, field));
  }

  /**
   * Turns the GPU path on or off at run time (when a GPU is usable); with it off every search runs
   * on the CPU and counts as a fallback. Used to compare both paths on the same index.
   */
  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  /**
   * Whether the GPU can take a search asking for k results; if not, counts (and logs once) the
   * fallback. Callers ask before preparing a GPU search, so a CPU search does no GPU-only work.
   */
  public boolean canServe(int k) {
    FallbackReason reason = refusal(k);
    if (reason != null) {
      fallback(reason, null);
      return false;
    }
    return true;
  }

  private FallbackReason refusal(int k) {
    if (closed) {
      return FallbackReason.CLOSED;
    }
    if (backend == null) {
      return FallbackReason.NO_GPU;
    }
    if (failure != null) {
      return FallbackReason.GPU_FAILED;
    }
    if (enabled == false) {
      return FallbackReason.GPU_OFF;
    }
    if (k > MAX_GPU_K) {
      return FallbackReason.K_TOO_LARGE;
    }
    return null;
  }

  /** Counts a fallback the caller decided on (e.g. a collector's visit limit). */
  public void countFallback(FallbackReason reason) {
    fallback(reason, null);
  }

  /**
   * Searches {@code numQueries} row-major queries against one segment field, batched with concurrent
   * searches.
   *
   * @param segment the key of the segment (its vectors reader); {@link #releaseSegment} frees it
   * @param mask accepted ordinals (bit {@code ord % 64} of word {@code ord / 64}), or null for all
   * @return per query the k best (ordinal, raw distance) pairs, or null when the CPU must do it
   */
  public SearchResult search(
      Object segment,
      String field,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      float[] queries,
      int numQueries,
      int k,
      long[] mask)
      throws IOException {
    float[][] rows = new float[numQueries][];
    int dims = vectors.dimension();
    for (int q = 0; q < numQueries; q++) {
      rows[q] = numQueries == 1 && queries.length == dims ? queries : Arrays.copyOfRange(queries, q * dims, (q + 1) * dims);
    }
    return search(
        segment, field, vectors, similarity, null, SearchParams.FLAT, rows, numQueries, k, mask, false, null, k);
  }

  /**
   * As {@link #search(Object, String, FloatVectorValues, VectorSimilarityFunction, float[], int, int,
   * long[])}, for one unfiltered query of a {@link GpuSegment}: the first of the index's segments to
   * ask searches every resident segment of the index for this query in the same pass, and the others
   * take their results when they ask ({@link CrossSegmentSpeculation}).
   *
   * @param queries the queries, one array per query (read, never written; not copied: the device
   *     layer stages them for the copy to the device)
   * @param structure the field's inverted lists or graph, or null for a flat field
   * @param params the device's search parameters of the field's kind: lists to scan (IVF), the beam's width or the
   *     exact search (graph), {@link SearchParams#FLAT} for flat fields
   * @param speculative whether this is one unfiltered query that may search the index's other
   *     segments too (Lucene passes every segment the same vector array: its identity and contents
   *     tie the segments' calls together)
   * @param token the live-docs instance {@code mask} was built from (null: no deletions)
   * @param requestedK the collector's k, before capping it by this segment's accepted count
   */
  public SearchResult search(
      Object segment,
      String field,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      GpuStructure structure,
      SearchParams params,
      float[][] queries,
      int numQueries,
      int k,
      long[] mask,
      boolean speculative,
      Object token,
      int requestedK)
      throws IOException {
    if (canServe(Math.max(k, requestedK)) == false) {
      return null;
    }
    Request alone = new Request(segment, field, vectors, similarity, structure, params, queries, numQueries, k, mask);
    if (speculation.enabled() && speculative && numQueries == 1 && segment instanceof GpuSegment gpuSegment) {
      return speculation.search(
          gpuSegment, field, vectors, similarity, structure, params, queries, k, mask, token, requestedK,
          () -> run(List.of(alone))[0]);
    }
    return run(List.of(alone))[0];
  }

  /**
   * One segment field's share of {@link #searchAll}: as the arguments of {@link #search} (the queries
   * one array per query, the caller's own: segments of one batch share them).
   */
  public record Request(
      Object segment,
      String field,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      GpuStructure structure,
      SearchParams params,
      float[][] queries,
      int numQueries,
      int k,
      long[] mask,
      ElementVectors elements) {

    /**
     * @param vectors a float field's vectors (null for a byte, bit or bfloat16 field)
     * @param elements a byte, bit or bfloat16 field's vectors, searched exactly (null for a float field)
     */
    public Request {
      if ((vectors == null) == (elements == null)) {
        throw new IllegalArgumentException("a float field's vectors or a byte, bit or bfloat16 field's, exactly one");
      }
      if (elements != null && structure != null) {
        throw new IllegalArgumentException(elements.type() + " fields are searched exactly on the GPU, not through "
            + structure);
      }
    }

    /** A float field's request. */
    public Request(
        Object segment, String field, FloatVectorValues vectors, VectorSimilarityFunction similarity,
        GpuStructure structure, SearchParams params, float[][] queries, int numQueries, int k, long[] mask) {
      this(segment, field, vectors, similarity, structure, params, queries, numQueries, k, mask, null);
    }

    /** A byte, bit or bfloat16 field's exact search. */
    public static Request ofElements(
        Object segment, String field, ElementVectors elements, VectorSimilarityFunction similarity, float[][] queries,
        int numQueries, int k, long[] mask) {
      return new Request(segment, field, null, similarity, null, SearchParams.FLAT, queries, numQueries, k, mask,
          elements);
    }

    /** A flat field's request. */
    public Request(
        Object segment, String field, FloatVectorValues vectors, VectorSimilarityFunction similarity,
        float[][] queries, int numQueries, int k, long[] mask) {
      this(segment, field, vectors, similarity, null, SearchParams.FLAT, queries, numQueries, k, mask);
    }
  }

  /**
   * Several segment fields' searches in the same pass (the batch API over all of an index's
   * segments): per request its result, or null where the CPU must run it (counted).
   */
  public SearchResult[] searchAll(List<Request> requests) throws IOException {
    SearchResult[] results = new SearchResult[requests.size()];
    int maxK = 0;
    for (Request r : requests) {
      maxK = Math.max(maxK, r.k());
    }
    if (requests.isEmpty() || canServe(maxK) == false) {
      return results;
    }
    return run(requests);
  }

  /** The searches of {@link #searchAll} (already allowed by {@link #canServe}) in one pass. */
  private SearchResult[] run(List<Request> requests) throws IOException {
    SearchResult[] results = new SearchResult[requests.size()];
    List<Residency.Handle> handles = new ArrayList<>();
    try {
      List<SearchBatcher.Search> searches = new ArrayList<>();
      List<Integer> at = new ArrayList<>();
      for (int i = 0; i < requests.size(); i++) {
        Request r = requests.get(i);
        Residency.Handle handle = r.elements() != null
            ? acquireElements(r.segment(), r.field(), r.elements(), r.similarity())
            : acquire(r.segment(), r.field(), r.vectors(), r.similarity(), r.structure());
        if (handle == null) {
          continue; // counted; this one runs on the CPU
        }
        handles.add(handle);
        searches.add(
            new SearchBatcher.Search(handle.index(), r.queries(), r.numQueries(), r.k(), r.mask(), r.params()));
        at.add(i);
      }
      if (searches.isEmpty()) {
        return results;
      }
      batcher.run(searches);
      for (int s = 0; s < searches.size(); s++) {
        SearchBatcher.Search search = searches.get(s);
        if (search.error() != null) {
          gpuError(search.error());
        } else {
          results[at.get(s)] = search.result();
          stats.recordGpuSearch(search.numQueries);
        }
      }
      return results;
    } finally {
      for (Residency.Handle handle : handles) {
        handle.close();
      }
    }
  }

  /**
   * Searches a byte, bit or bfloat16 segment field exactly ({@code flat}), batched with concurrent searches: queries
   * as floats, one a stored value (byte and bit: each byte of the query vector as a float; bfloat16: the query's
   * floats), one array per query (read, never written).
   *
   * @param segment the key of the segment (its vectors reader); {@link #releaseSegment} frees it
   * @param mask accepted ordinals (bit {@code ord % 64} of word {@code ord / 64}), or null for all
   * @return per query the k best (ordinal, raw distance) pairs: squared L2 (bit: Hamming distance) smallest first,
   *     inner product or cosine largest first; or null when the CPU must do it (counted)
   */
  public SearchResult searchElements(
      Object segment,
      String field,
      ElementVectors vectors,
      VectorSimilarityFunction similarity,
      float[][] queries,
      int numQueries,
      int k,
      long[] mask)
      throws IOException {
    if (canServe(k) == false) {
      return null;
    }
    return run(List.of(Request.ofElements(segment, field, vectors, similarity, queries, numQueries, k, mask)))[0];
  }

  /**
   * Makes a byte, bit or bfloat16 segment field resident ahead of its first search (a warm-up).
   *
   * @return whether it is resident (false: no GPU, does not fit, or the upload failed: counted)
   */
  public boolean warmElements(Object segment, String field, ElementVectors vectors, VectorSimilarityFunction similarity)
      throws IOException {
    if (refusal(0) != null || vectors.size() == 0) {
      return false;
    }
    boolean resident = isResident(segment, field);
    try (Residency.Handle handle = acquireElements(segment, field, vectors, similarity)) {
      if (handle != null && resident == false) {
        stats.recordWarmup();
      }
      return handle != null;
    }
  }

  /**
   * The GPU's part in building an index at flush and merge (k-means and list assignment, the steps of a graph build),
   * on this service's GPU while it serves, else on the CPU.
   */
  public GpuBuildAcceleration buildAcceleration() {
    return buildAcceleration;
  }

  /** Turns the one-pass search of a query's segments on or off (to measure both; on by default). */
  public void setSpeculation(boolean on) {
    speculation.setEnabled(on);
  }

  /**
   * Starts or stops the GPU profiler's range, so that a benchmark run under Nsight ({@code --profile-from-start off})
   * records its searches alone; nothing without a GPU.
   */
  public void profilerRange(boolean on) {
    if (backend != null) {
      backend.profilerRange(on);
    }
  }

  /**
   * Makes a segment field resident ahead of its first search (a warm-up).
   *
   * @return whether it is resident (false: no GPU, does not fit, or the upload failed: counted)
   */
  public boolean warm(
      Object segment, String field, FloatVectorValues vectors, VectorSimilarityFunction similarity, GpuStructure structure)
      throws IOException {
    if (refusal(0) != null || vectors.size() == 0) {
      return false;
    }
    boolean resident = isResident(segment, field);
    try (Residency.Handle handle = acquire(segment, field, vectors, similarity, structure)) {
      if (handle != null && resident == false) {
        stats.recordWarmup();
      }
      return handle != null;
    }
  }

  /**
   * Whether a search of an ivf_pq field is prepared for the field with its raw vectors on the device (the device
   * re-ranks the candidates and returns the k best) rather than its codes alone (the caller re-ranks the candidates
   * it gets on the host): as the field is resident (or uploading), if it is; else, with {@link
   * Settings#ivfPqRerankOnGpu} on, whether the field with its raw vectors ({@code withRawVectors}) fits the free
   * budget beside what is resident now. A field that does not fit whole goes up as its codes, lists and codebooks, a
   * few bytes a vector instead of 4 x dims more: codes before raw vectors, so that more of an index is searched on
   * the device for the same memory, with the same results.
   */
  public boolean ivfPqRerankOnGpu(
      Object segment, String field, FloatVectorValues vectors, VectorSimilarityFunction similarity,
      GpuStructure withRawVectors) {
    if (settings.ivfPqRerankOnGpu() == false) {
      return false;
    }
    ResidentForm resident = residency.formOf(new Residency.Key(segment, field));
    if (resident != null) {
      return resident == ResidentForm.CODES_WITH_VECTORS;
    }
    if (backend == null) {
      return true; // nothing will be resident: the search runs on the CPU
    }
    if (demotion(segment) != null) {
      return false; // its index was short of memory: all of its ivf_pq fields as codes (demoteToCompactForms)
    }
    long bytes = backend.estimateBytes(vectors.size(), vectors.dimension(), Metric.of(similarity), withRawVectors);
    return residency.fitsFree(bytes);
  }

  /**
   * Whether a search of a flat float field is prepared for its compact copy ({@link ResidentForm#COMPACT_COPY}: its
   * vectors as bfloat16, two bytes a dimension, whose candidates the caller re-ranks and proves exact) rather than
   * the whole field (its FP32 vectors): as the field is resident (or uploading), if it is; else whether the whole
   * field does not fit the free budget beside what is resident now. The copy takes a third of the whole field's
   * memory at 768 dimensions, so that more of an index is searched on the device for the same memory.
   */
  public boolean flatCompactCopy(
      Object segment, String field, FloatVectorValues vectors, VectorSimilarityFunction similarity) {
    ResidentForm resident = residency.formOf(new Residency.Key(segment, field));
    if (resident != null) {
      return resident == ResidentForm.COMPACT_COPY;
    }
    if (demotion(segment) == Demotion.ALL_COMPACT) {
      return true; // its index was short of memory: all of its flat fields as copies (demoteToCompactForms)
    }
    return backend != null && residency.fitsFree(flatWholeBytes(vectors, similarity)) == false;
  }

  /** How far {@code segment}'s index turned to its compact forms ({@link #demoteToCompactForms}), or null. */
  private Demotion demotion(Object segment) {
    return segment instanceof GpuSegment s ? demotions.get(s.group()) : null;
  }

  /**
   * How far an index short of memory turned to its compact forms, in order of value per byte: first its ivf_pq
   * fields' raw vectors go (they serve only the exact re-rank, which the host does from the index's files), then its
   * flat fields' whole form (which the cross-segment pass searches with its peers; a compact copy is searched and
   * proven on its own).
   */
  private enum Demotion {
    /** ivf_pq fields as their codes, flat fields whole while they fit. */
    IVF_PQ_CODES,
    /** ivf_pq fields as their codes, flat fields as their compact copies. */
    ALL_COMPACT
  }

  /**
   * A field of {@code segment}'s index did not fit the budget in {@code refused}, its form: from now on the index's
   * fields go up in smaller forms ({@link Demotion}), and its fields in the larger forms that no search holds are
   * evicted, to come back in the smaller ones at their next search. A refusal while the index holds ivf_pq raw
   * vectors (or of an ivf_pq field with its raw vectors) turns the index's ivf_pq fields to their codes; a refusal
   * with no raw vectors left to free turns everything compact. First searches decide segment by segment (the larger
   * form while one fits), so an index larger than the budget would otherwise keep its first segments in the larger
   * form and search the rest on the CPU for good; this turns it, after one or two rounds of uploads, into smaller
   * forms that fit (what a warm-up plans from the start, {@code GpuWarmup}).
   */
  private void demoteToCompactForms(Object segment, ResidentForm refused) {
    if (!(segment instanceof GpuSegment s)) {
      return;
    }
    Object group = s.group();
    java.util.function.Predicate<Residency.Key> inGroup =
        key -> key.segment() instanceof GpuSegment o && o.group() == group;
    Demotion wanted = refused == ResidentForm.CODES_WITH_VECTORS
        || residency.holdsAny(ResidentForm.CODES_WITH_VECTORS, inGroup) ? Demotion.IVF_PQ_CODES : Demotion.ALL_COMPACT;
    Demotion now = demotions.merge(group, wanted, (a, b) -> a.compareTo(b) >= 0 ? a : b);
    residency.evict(ResidentForm.CODES_WITH_VECTORS, inGroup);
    if (now == Demotion.ALL_COMPACT) {
      residency.evict(ResidentForm.WHOLE, inGroup);
    }
  }

  /**
   * Device bytes a flat float field takes whole (0 without a GPU): what a warm-up adds up over an index to choose
   * between whole fields and compact copies ({@link #fitsFree}).
   */
  public long flatWholeBytes(FloatVectorValues vectors, VectorSimilarityFunction similarity) {
    return backend == null ? 0 : backend.estimateBytes(vectors.size(), vectors.dimension(), Metric.of(similarity), null);
  }

  /**
   * Device bytes a field's structure takes in {@code structure}'s form (0 without a GPU): what a warm-up adds up over
   * an index to choose between the forms of its ivf_pq fields ({@link #fitsFree}).
   */
  public long structureBytes(FloatVectorValues vectors, VectorSimilarityFunction similarity, GpuStructure structure) {
    return backend == null
        ? 0
        : backend.estimateBytes(vectors.size(), vectors.dimension(), Metric.of(similarity), structure);
  }

  /** Whether {@code bytes} more fit the memory budget beside what is resident now. */
  public boolean fitsFree(long bytes) {
    return residency.fitsFree(bytes);
  }

  /** A handle on the segment field's device index (uploaded if needed), or null (fallback counted). */
  private Residency.Handle acquire(
      Object segment, String field, FloatVectorValues vectors, VectorSimilarityFunction similarity, GpuStructure structure)
      throws IOException {
    Metric metric = Metric.of(similarity);
    long bytes = backend.estimateBytes(vectors.size(), vectors.dimension(), metric, structure);
    // a flat float field is resident whole or as its compact copy (flatCompactCopy), an ivf_pq field with its raw
    // vectors or as its codes (ivfPqRerankOnGpu); the other types in their one form
    ResidentForm form = switch (structure) {
      case null -> ResidentForm.WHOLE;
      case GpuIvf ivf when ivf.pq() != null ->
          ivf.pq().reranksOnDevice() ? ResidentForm.CODES_WITH_VECTORS : ResidentForm.CODES;
      default -> null;
    };
    return acquire(segment, field, form, bytes, () -> backend.upload(vectors.copy(), metric, structure));
  }

  /** A handle on a byte, bit or bfloat16 field's device index (uploaded at its own size if needed), or null. */
  private Residency.Handle acquireElements(
      Object segment, String field, ElementVectors vectors, VectorSimilarityFunction similarity) throws IOException {
    Metric metric = vectors.metric(similarity);
    ResidentForm form = vectors.type() == ElementType.FLOAT ? ResidentForm.COMPACT_COPY : null;
    return acquire(segment, field, form, vectors.deviceBytes(), () -> backend.upload(vectors.copy(), metric));
  }

  /**
   * A handle on what {@code upload} makes resident in {@code form} ({@link Residency#acquire(Residency.Key,
   * ResidentForm, long, Residency.Upload)}) under {@code bytes} of the budget, or null (fallback counted).
   */
  private Residency.Handle acquire(
      Object segment, String field, ResidentForm form, long bytes, Residency.Upload upload)
      throws IOException {
    Residency.Acquired acquired;
    try {
      acquired = residency.acquire(new Residency.Key(segment, field), form, bytes, upload);
    } catch (CudaException e) {
      gpuError(e);
      return null;
    }
    if (acquired.refused() != null) {
      fallback(acquired.refused(), null);
      if (form != null && acquired.refused().outOfBudget()) {
        demoteToCompactForms(segment, form);
      }
      return null;
    }
    return acquired.handle();
  }

  /** A GPU pass or upload failed: CUDA errors fall back (sticky ones switch the GPU off); bugs propagate. */
  private void gpuError(Throwable error) {
    if (closed && error instanceof IllegalStateException) {
      fallback(FallbackReason.CLOSED, null); // the node closed the device under a search in flight
      return;
    }
    if (error instanceof CudaException cuda) {
      if (cuda.sticky()) {
        if (failure == null) {
          failure = "GPU switched off after a sticky CUDA error: " + cuda.getMessage();
          LOG.log(System.Logger.Level.ERROR, "gpu-vectors: " + failure + "; searching on the CPU from now on", cuda);
        }
        fallback(FallbackReason.GPU_FAILED, null);
      } else if (cuda.code() == 2) { // CUDA_ERROR_OUT_OF_MEMORY
        fallback(FallbackReason.DEVICE_OUT_OF_MEMORY, cuda);
      } else {
        fallback(FallbackReason.CUDA_ERROR, cuda);
      }
      return;
    }
    if (error instanceof RuntimeException re) {
      throw re;
    }
    if (error instanceof Error err) {
      throw err;
    }
    throw new IllegalStateException(error);
  }

  /** Frees a closing segment's resident fields (now, or when the last search on them ends). */
  public void releaseSegment(Object segment) {
    residency.releaseSegment(segment);
  }

  private void fallback(FallbackReason reason, Throwable cause) {
    if (stats.recordFallback(reason)) {
      String detail = reason == FallbackReason.NO_GPU || reason == FallbackReason.GPU_FAILED
          ? ": " + unusableReason() : "";
      LOG.log(
          System.Logger.Level.WARNING,
          "gpu-vectors: searching on the CPU instead of the GPU: " + reason.description() + detail,
          cause);
    }
  }

  /** Frees every resident field no search holds, then the device (after the last search ends). */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    residency.close();
    if (backend != null) {
      backend.close();
    }
  }
}
