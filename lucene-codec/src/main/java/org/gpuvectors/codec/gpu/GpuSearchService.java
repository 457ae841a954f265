package org.gpuvectors.codec.gpu;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.gpuvectors.cuda.runtime.CudaException;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.GpuDevice;
import org.gpuvectors.cuda.KSelect;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.GpuFlatIndex;
import org.gpuvectors.cuda.PassGraphStats;
import org.gpuvectors.cuda.SearchResult;

/**
 * Searches segment fields on one GPU: the owner of the device ({@link GpuBackend}), of what is
 * resident there ({@link Residency}) and of the batching of concurrent searches ({@link
 * SearchBatcher}). One per node (the Elasticsearch plugin makes it in {@code createComponents} and
 * closes it with the node) or per process for plain Lucene ({@link GpuSearchServices}).
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
   * @param memoryBudget fraction of the device's memory that resident segment fields may take
   * @param maxBatchQueries queries one GPU pass takes at most (a search with more runs alone)
   * @param ivfPqRerankOnGpu whether ivf_pq fields upload their raw vectors with the codes, so that the device
   *     re-ranks their candidates exactly and a batch never waits on random host reads of raw vectors (the default);
   *     false keeps the raw vectors on the host (4 x dims bytes a vector less GPU memory), which re-ranks the
   *     candidates the device returns: the same results
   * @param gpu how the device searches ({@link GpuConfig}: lanes, passes in flight, per-index tuning)
   */
  public record Settings(
      Mode mode, int deviceOrdinal, double memoryBudget, int maxBatchQueries, boolean ivfPqRerankOnGpu,
      GpuConfig gpu) {
    public static final int DEFAULT_MAX_BATCH_QUERIES = 1024;
    public static final double DEFAULT_MEMORY_BUDGET = 0.8;

    public Settings {
      java.util.Objects.requireNonNull(mode, "mode");
      java.util.Objects.requireNonNull(gpu, "gpu");
      if (deviceOrdinal < 0) {
        throw new IllegalArgumentException("GPU device ordinal must be >= 0 but was [" + deviceOrdinal + "]");
      }
      if (memoryBudget <= 0 || memoryBudget > 1) {
        throw new IllegalArgumentException("GPU memory budget must be in (0, 1] but was [" + memoryBudget + "]");
      }
      if (maxBatchQueries < 1) {
        throw new IllegalArgumentException("max batch queries must be >= 1 but was [" + maxBatchQueries + "]");
      }
    }

    /** The four choices tests and benchmarks vary most, the rest as {@link #defaults()}. */
    public Settings(Mode mode, int deviceOrdinal, double memoryBudget, int maxBatchQueries) {
      this(mode, deviceOrdinal, memoryBudget, maxBatchQueries, true, GpuConfig.defaults());
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
      private double memoryBudget = DEFAULT_MEMORY_BUDGET;
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

      public Builder memoryBudget(double value) {
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
  private final SearchBatcher batcher;
  private final GpuBuildAcceleration buildAcceleration;
  private final Speculations speculations = new Speculations(1024);
  private volatile boolean enabled;
  private volatile boolean speculate = true;
  private volatile String failure; // the sticky error that switched the GPU off
  private volatile boolean closed;

  private GpuSearchService(GpuBackend backend, String unusableReason, Settings settings) {
    this.settings = settings;
    this.backend = backend;
    this.unusableReason = unusableReason;
    long budget = backend == null ? 0 : (long) (backend.totalMemoryBytes() * settings.memoryBudget());
    this.residency = new Residency(budget, stats);
    this.batcher =
        backend == null
            ? null
            : new SearchBatcher(backend::search, settings.maxBatchQueries(), backend.concurrentPasses(), stats);
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
        (long) (device.totalMemoryBytes() * settings.memoryBudget()) >> 20,
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
  public GpuFlatIndex.RerankStats halfScanStats() {
    return backend == null || closed ? new GpuFlatIndex.RerankStats(0, 0) : backend.halfScans();
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
    return search(segment, field, vectors, similarity, null, 1, rows, numQueries, k, mask, false, null, k);
  }

  /**
   * As {@link #search(Object, String, FloatVectorValues, VectorSimilarityFunction, float[], int, int,
   * long[])}, for one unfiltered query of a {@link GpuSegment}: the first of the index's segments to
   * ask searches every resident segment of the index for this query in the same pass, and the others
   * take their results when they ask ({@link Speculations}).
   *
   * @param queries the queries, one array per query (read, never written; not copied: the device
   *     layer stages them for the copy to the device)
   * @param structure the field's inverted lists or graph, or null for a flat field
   * @param nprobe lists to scan (IVF) or the beam's width (graph); ignored for flat fields
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
      int nprobe,
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
    if (speculate && speculative && numQueries == 1 && segment instanceof GpuSegment gpuSegment) {
      Residency.Key key = new Residency.Key(segment, field);
      float[] query = queries[0];
      Speculations.Speculation mine = new Speculations.Speculation(query);
      Speculations.Speculation running = speculations.claim(query, mine);
      if (running != null) {
        Speculations.Taken parked = running.take(key, token, k, query, speculations.quiet());
        if (parked.result() != null) {
          stats.recordGpuSearch(1);
          stats.recordSpeculativeHit();
          return parked.result();
        }
        stats.recordSpeculativeMiss(parked.miss());
        // not computed for this segment (not resident then, a larger k, other deletions): search it now
      } else {
        try {
          return searchIndex(gpuSegment, key, vectors, similarity, structure, nprobe, queries, k, mask, token, mine, requestedK);
        } finally {
          speculations.finish(mine); // whatever happened, segments waiting on it go on
        }
      }
    }
    return run(List.of(new Request(segment, field, vectors, similarity, structure, nprobe, queries, numQueries, k, mask)))[0];
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
      int nprobe,
      float[][] queries,
      int numQueries,
      int k,
      long[] mask) {

    /** A flat field's request. */
    public Request(
        Object segment, String field, FloatVectorValues vectors, VectorSimilarityFunction similarity,
        float[][] queries, int numQueries, int k, long[] mask) {
      this(segment, field, vectors, similarity, null, 1, queries, numQueries, k, mask);
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
        Residency.Handle handle = acquire(r.segment(), r.field(), r.vectors(), r.similarity(), r.structure());
        if (handle == null) {
          continue; // counted; this one runs on the CPU
        }
        handles.add(handle);
        searches.add(
            new SearchBatcher.Search(handle.index(), r.queries(), r.numQueries(), r.k(), r.mask(), r.nprobe()));
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
   * One query over this segment and every resident peer of its index, in one pass. Every segment's
   * result is parked with the k the query may ask of any segment (see {@link #fullK}), this one's
   * too: Lucene's optimistic search asks some segments again with the full k.
   */
  private SearchResult searchIndex(
      GpuSegment segment,
      Residency.Key key,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      GpuStructure structure,
      int nprobe,
      float[][] query,
      int k,
      long[] mask,
      Object token,
      Speculations.Speculation speculation,
      int requestedK)
      throws IOException {
    List<Residency.Handle> handles = new ArrayList<>();
    try {
      Residency.Handle own = acquire(key.segment(), key.field(), vectors, similarity, structure);
      if (own == null) {
        return null;
      }
      handles.add(own);
      List<Residency.Key> keys = new ArrayList<>();
      List<Object> tokens = new ArrayList<>();
      List<long[]> masks = new ArrayList<>();
      List<GpuSegment> segments = new ArrayList<>();
      keys.add(key);
      tokens.add(token);
      masks.add(mask);
      segments.add(segment);
      long totalDocs = segment.maxDoc();
      for (Residency.Key peer : residency.residentPeers(segment, key.field())) {
        Residency.Handle handle = residency.acquireResident(peer);
        if (handle == null) {
          continue;
        }
        handles.add(handle);
        GpuSegment peerSegment = (GpuSegment) peer.segment();
        GpuSegment.Standing standing = peerSegment.standing(peer.field());
        keys.add(peer);
        tokens.add(standing.token());
        masks.add(standing.mask());
        segments.add(peerSegment);
        totalDocs += peerSegment.maxDoc();
      }
      int queryK = Math.min(MAX_GPU_K, fullK(requestedK, segment.maxDoc() / (double) totalDocs));
      int parkK = Math.max(k, queryK);
      List<SearchBatcher.Search> searches = new ArrayList<>(keys.size());
      for (int i = 0; i < keys.size(); i++) {
        DeviceIndex index = handles.get(i).index();
        // this segment's k as the caller chose it (or the query's, when more); a peer's for what Lucene asks of it,
        // first (leafK: more than the query's k for a peer larger than a third of the documents) or again (the query's
        // k), in the peer's device terms (ivf_pq: candidates); with peers, rounded up (passK)
        int wanted = parkK;
        if (i > 0) {
          int peerK = Math.min(MAX_GPU_K, Math.max(queryK, leafK(queryK, segments.get(i).maxDoc() / (double) totalDocs)));
          wanted = Math.min(MAX_GPU_K, segments.get(i).deviceK(keys.get(i).field(), peerK, settings.ivfPqRerankOnGpu()));
        }
        if (keys.size() > 1) {
          wanted = passK(wanted);
        }
        int searchK = Math.max(1, Math.min(wanted, index.size()));
        // this segment's lists as the caller chose them; a peer's as it would for the parked k, unfiltered
        int probes = i == 0 ? nprobe : segments.get(i).probes(keys.get(i).field(), searchK);
        searches.add(new SearchBatcher.Search(index, query, 1, searchK, masks.get(i), probes));
      }
      batcher.run(searches);
      SearchBatcher.Search mine = searches.get(0);
      if (mine.error() != null) {
        gpuError(mine.error());
        return null;
      }
      for (int i = 0; i < keys.size(); i++) {
        speculation.park(keys.get(i), tokens.get(i), searches.get(i).result());
      }
      stats.recordGpuSearch(1);
      return Speculations.firstK(mine.result(), Math.min(k, mine.result().k()));
    } finally {
      for (Residency.Handle handle : handles) {
        handle.close();
      }
    }
  }

  /**
   * The k a speculative pass searches a segment for, {@code k} rounded up to a multiple of {@link #PASS_K_STEP} (at
   * most {@link #MAX_GPU_K}): a segment's k then does not depend on which segment of the query asked first (the
   * query's k that {@link #fullK} recovers from the leading segment's ask may differ by a few), so that the passes
   * over a field's segments repeat their shapes and run as captured CUDA graphs. A few more results than asked for
   * cost little; a multiple of 16 never crosses the k of 128 up to which the FP16 scan answers.
   */
  static int passK(int k) {
    return Math.min(MAX_GPU_K, (k + PASS_K_STEP - 1) / PASS_K_STEP * PASS_K_STEP);
  }

  /** See {@link #passK}. */
  static final int PASS_K_STEP = 16;

  /**
   * The largest k of a query whose per-segment k, for a segment holding {@code share} of the index's
   * documents, is {@code leafK}: Lucene's optimistic knn search asks each segment for {@code
   * max(1, k p + 16 sqrt(k p (1 - p)))} first ({@link #leafK}), and the segments it must revisit for the
   * full k. Solving x + 16 sqrt(x (1 - p)) = leafK + 1 for x = k p gives that k (rounded up).
   */
  static int fullK(int leafK, double share) {
    if (share >= 1 || share <= 0) {
      return leafK;
    }
    double c = 16 * Math.sqrt(1 - share);
    double root = (-c + Math.sqrt(c * c + 4.0 * (leafK + 1))) / 2;
    return (int) Math.min(Integer.MAX_VALUE, Math.max(leafK, Math.ceil(root * root / share)));
  }

  /**
   * What Lucene's optimistic knn search (Lucene 10.5, {@code AbstractKnnVectorQuery}) asks first of a segment
   * holding {@code share} of the index's documents, for a query of k: {@code max(1, k p + 16 sqrt(k p (1 - p)))},
   * plus one for its float arithmetic. Not capped at k: a segment holding more than about a third of the documents
   * is asked for more than k. A query's pass parks at least this for every peer; parking only the k of the
   * segment that asked first (a small one) sent the largest segment of an uneven index to a second pass on every
   * query (docs/BENCHMARKS.md section 15b).
   */
  static int leafK(int k, double share) {
    if (share >= 1 || share <= 0) {
      return k;
    }
    double kp = k * share;
    return (int) Math.min(Integer.MAX_VALUE, Math.max(1, kp + 16 * Math.sqrt(kp * (1 - share))) + 1);
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
    this.speculate = on;
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

  /** A handle on the segment field's device index (uploaded if needed), or null (fallback counted). */
  private Residency.Handle acquire(
      Object segment, String field, FloatVectorValues vectors, VectorSimilarityFunction similarity, GpuStructure structure)
      throws IOException {
    Metric metric = metric(similarity);
    long bytes = backend.estimateBytes(vectors.size(), vectors.dimension(), metric, structure);
    Residency.Acquired acquired;
    try {
      acquired =
          residency.acquire(
              new Residency.Key(segment, field), bytes, () -> backend.upload(vectors.copy(), metric, structure));
    } catch (CudaException e) {
      gpuError(e);
      return null;
    }
    if (acquired.refused() != null) {
      fallback(acquired.refused(), null);
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

  /** The GPU distance for a Lucene similarity (cosine: the kernels normalise vectors). */
  public static Metric metric(VectorSimilarityFunction similarity) {
    return switch (similarity) {
      case EUCLIDEAN -> Metric.L2;
      case DOT_PRODUCT, MAXIMUM_INNER_PRODUCT -> Metric.INNER_PRODUCT;
      case COSINE -> Metric.COSINE;
    };
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
