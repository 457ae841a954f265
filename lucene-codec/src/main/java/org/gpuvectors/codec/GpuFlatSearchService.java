package org.gpuvectors.codec;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.cuda.GpuDevice;
import org.gpuvectors.cuda.GpuFlatIndex;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchResult;

/**
 * Runs exact searches of {@code flat} fields on the GPU, for the whole process.
 *
 * <p>It is the one owner of the GPU device it opens and of every segment field resident there: a
 * segment field's vectors are uploaded on its first search (keyed by the segment's reader, which
 * Lucene shares by segment core), kept under a memory budget with least-recently-used eviction, and
 * freed when the segment's reader closes ({@link #release}). Whenever the GPU cannot serve a search
 * (no GPU, kernels not built, k too large, the segment does not fit, a CUDA error) the caller runs
 * the CPU path instead: {@link #search} returns null, the reason is counted in {@link #stats()} and
 * logged once. A search never fails because of the GPU.
 *
 * <p>Configuration, by system property (the Elasticsearch plugin sets them from node settings):
 * {@value #MODE_PROPERTY} = {@code auto} (default: use a GPU when one is usable) | {@code false};
 * {@value #DEVICE_PROPERTY} = device ordinal (default 0); {@value #BUDGET_PROPERTY} = fraction of
 * the device's memory that resident segments may take (default 0.8).
 *
 * <p>Threading: searches and uploads are serialised on this object (the device runs one search at
 * a time anyway); the statistics can be read concurrently.
 */
public final class GpuFlatSearchService implements Closeable {

  public static final String MODE_PROPERTY = "gpuvectors.gpu";
  public static final String DEVICE_PROPERTY = "gpuvectors.gpu.device";
  public static final String BUDGET_PROPERTY = "gpuvectors.gpu.memory_budget";

  /** Largest k the GPU k-selection kernels take. */
  public static final int MAX_GPU_K = 2048;

  private static final System.Logger LOG = System.getLogger(GpuFlatSearchService.class.getName());

  private static GpuFlatSearchService instance;
  private static Settings configured; // null: read the system properties

  /** How the service is set up: see the class Javadoc for the meaning of each value. */
  public record Settings(String mode, int deviceOrdinal, double memoryBudget) {
    public Settings {
      mode = mode.toLowerCase(Locale.ROOT);
      if (mode.equals("auto") == false && mode.equals("true") == false && mode.equals("false") == false) {
        throw new IllegalArgumentException("GPU mode must be [auto], [true] or [false] but was [" + mode + "]");
      }
      if (deviceOrdinal < 0) {
        throw new IllegalArgumentException("GPU device ordinal must be >= 0 but was [" + deviceOrdinal + "]");
      }
      if (memoryBudget <= 0 || memoryBudget > 1) {
        throw new IllegalArgumentException("GPU memory budget must be in (0, 1] but was [" + memoryBudget + "]");
      }
    }

    static Settings fromSystemProperties() {
      return new Settings(
          System.getProperty(MODE_PROPERTY, "auto"),
          Integer.getInteger(DEVICE_PROPERTY, 0),
          Double.parseDouble(System.getProperty(BUDGET_PROPERTY, "0.8")));
    }
  }

  /**
   * Sets up the process-wide service (the Elasticsearch plugin calls this with its node settings);
   * a service already running is closed and the next search starts one with these settings.
   */
  public static synchronized void configure(Settings settings) {
    shutdown();
    configured = settings;
  }

  private final GpuSearchStats stats = new GpuSearchStats();
  private final GpuDevice device; // null when no GPU is usable
  private final String unusableReason; // why device is null
  private final long budgetBytes;
  private volatile boolean enabled;
  private boolean closed;

  /** Resident segment fields, least recently used first. */
  private final LinkedHashMap<ResidentKey, GpuFlatIndex> resident =
      new LinkedHashMap<>(16, 0.75f, true);

  private long residentBytes;

  private record ResidentKey(Object segment, String field) {}

  private GpuFlatSearchService(GpuDevice device, String unusableReason, double budgetFraction) {
    this.device = device;
    this.unusableReason = unusableReason;
    this.budgetBytes = device == null ? 0 : (long) (device.totalMemoryBytes() * budgetFraction);
    this.enabled = device != null;
  }

  /** The process-wide service, created on first use from the system properties. */
  public static synchronized GpuFlatSearchService get() {
    if (instance == null) {
      instance = create();
    }
    return instance;
  }

  /** Closes the process-wide service (frees all GPU memory); a later {@link #get()} starts anew. */
  public static synchronized void shutdown() {
    if (instance != null) {
      instance.close();
      instance = null;
    }
  }

  private static GpuFlatSearchService create() {
    Settings settings = configured != null ? configured : Settings.fromSystemProperties();
    double budget = settings.memoryBudget();
    if (settings.mode().equals("false")) {
      return new GpuFlatSearchService(null, "GPU disabled (mode=false)", budget);
    }
    GpuAvailability availability = GpuAvailability.get();
    if (availability.available() == false) {
      return new GpuFlatSearchService(null, "no usable GPU: " + availability.reason(), budget);
    }
    int ordinal = settings.deviceOrdinal();
    try {
      GpuDevice device = GpuDevice.open(ordinal);
      LOG.log(
          System.Logger.Level.INFO,
          "gpu-vectors: searching flat fields on GPU {0} ({1}), memory budget {2} MB",
          ordinal,
          device.name(),
          (long) (device.totalMemoryBytes() * budget) >> 20);
      return new GpuFlatSearchService(device, null, budget);
    } catch (RuntimeException e) {
      return new GpuFlatSearchService(
          null, "GPU " + ordinal + " could not be opened: " + e.getMessage(), budget);
    }
  }

  /** Counters of GPU searches, fallbacks and residency. */
  public GpuSearchStats stats() {
    return stats;
  }

  /** Whether searches currently go to the GPU. */
  public boolean gpuActive() {
    return enabled && device != null;
  }

  /** Why there is no GPU, or null when there is one. */
  public String unusableReason() {
    return unusableReason;
  }

  /** Name of the GPU in use, or null. */
  public String deviceName() {
    return device == null ? null : device.name();
  }

  /** Device memory that resident segment fields may take (0 without a GPU). */
  public long budgetBytes() {
    return budgetBytes;
  }

  /** Device memory taken by resident segment fields. */
  public synchronized long residentBytes() {
    return residentBytes;
  }

  /** Number of resident segment fields. */
  public synchronized int residentCount() {
    return resident.size();
  }

  /**
   * Turns the GPU path on or off at run time (when a GPU is usable); with it off every search runs
   * on the CPU and counts as a fallback. Used to compare both paths on the same index.
   */
  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  /**
   * Searches {@code numQueries} row-major queries against one segment field on the GPU.
   *
   * @param segment the key of the segment (its vectors reader); {@link #release} frees it
   * @param acceptBits bit {@code ord % 64} of word {@code ord / 64} set for accepted ordinals, or
   *     null for all
   * @return per query the k best (ordinal, raw distance) pairs, or null when the CPU must do it
   */
  SearchResult search(
      Object segment,
      String field,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      float[] queries,
      int numQueries,
      int k,
      long[] acceptBits)
      throws IOException {
    String reason = unsupported(k);
    if (reason != null) {
      fallback(reason, null);
      return null;
    }
    synchronized (this) {
      if (closed) {
        fallback("GPU search service closed", null);
        return null;
      }
      try {
        ResidentKey key = new ResidentKey(segment, field);
        GpuFlatIndex index = resident.get(key);
        if (index == null) {
          index = upload(key, vectors, similarity);
          if (index == null) {
            return null;
          }
        }
        long start = System.nanoTime();
        SearchResult result = index.search(queries, numQueries, k, acceptBits);
        stats.recordGpuSearch(numQueries, System.nanoTime() - start);
        return result;
      } catch (RuntimeException e) {
        // CUDA errors (out of memory included) must not fail the search: the CPU answers it.
        fallback("GPU error (" + e.getClass().getSimpleName() + ")", e);
        return null;
      }
    }
  }

  /**
   * Whether the GPU is on at all; if not, counts (and logs once) the fallback. Callers ask before
   * preparing a GPU search, so that a CPU-only search does no GPU-only work.
   */
  boolean gpuAvailableOrCountFallback() {
    String reason = unsupported(0);
    if (reason != null) {
      fallback(reason, null);
      return false;
    }
    return true;
  }

  private String unsupported(int k) {
    if (device == null) {
      return unusableReason;
    }
    if (enabled == false) {
      return "GPU path switched off";
    }
    if (k > MAX_GPU_K) {
      return "k > " + MAX_GPU_K;
    }
    return null;
  }

  /** Uploads a segment field, evicting least recently used ones to stay under the budget. */
  private GpuFlatIndex upload(
      ResidentKey key, FloatVectorValues vectors, VectorSimilarityFunction similarity)
      throws IOException {
    int size = vectors.size();
    int dims = vectors.dimension();
    Metric metric = metric(similarity);
    long bytes = 4L * size * dims + (metric == Metric.L2 ? 4L * size : 0);
    if (bytes > budgetBytes) {
      fallback("segment larger than the GPU memory budget", null);
      return null;
    }
    while (residentBytes + bytes > budgetBytes && resident.isEmpty() == false) {
      Iterator<Map.Entry<ResidentKey, GpuFlatIndex>> eldest = resident.entrySet().iterator();
      GpuFlatIndex evicted = eldest.next().getValue();
      eldest.remove();
      residentBytes -= evicted.deviceBytes();
      evicted.close();
      stats.recordEviction();
    }
    // streamed a slab at a time: the segment's vectors never sit whole on the Java heap
    GpuFlatIndex index =
        GpuFlatIndex.upload(
            device,
            size,
            dims,
            metric,
            (first, count, dst) -> {
              for (int i = 0; i < count; i++) {
                System.arraycopy(vectors.vectorValue(first + i), 0, dst, i * dims, dims);
              }
            });
    resident.put(key, index);
    residentBytes += index.deviceBytes();
    stats.recordUpload();
    return index;
  }

  /** Frees a closing segment's resident fields, without starting the service if it never ran. */
  static void releaseSegment(Object segment) {
    GpuFlatSearchService service;
    synchronized (GpuFlatSearchService.class) {
      service = instance;
    }
    if (service != null) {
      service.release(segment);
    }
  }

  /** Frees every field of a segment that is resident (called when the segment's reader closes). */
  synchronized void release(Object segment) {
    List<GpuFlatIndex> freed = new ArrayList<>();
    Iterator<Map.Entry<ResidentKey, GpuFlatIndex>> it = resident.entrySet().iterator();
    while (it.hasNext()) {
      Map.Entry<ResidentKey, GpuFlatIndex> entry = it.next();
      if (entry.getKey().segment() == segment) {
        freed.add(entry.getValue());
        it.remove();
      }
    }
    for (GpuFlatIndex index : freed) {
      residentBytes -= index.deviceBytes();
      index.close();
    }
  }

  private void fallback(String reason, Throwable cause) {
    if (stats.recordFallback(reason)) {
      LOG.log(
          System.Logger.Level.WARNING,
          "gpu-vectors: searching on the CPU instead of the GPU: " + reason,
          cause);
    }
  }

  /** The GPU distance for a Lucene similarity (cosine: the kernels normalise vectors). */
  static Metric metric(VectorSimilarityFunction similarity) {
    return switch (similarity) {
      case EUCLIDEAN -> Metric.L2;
      case DOT_PRODUCT, MAXIMUM_INNER_PRODUCT -> Metric.INNER_PRODUCT;
      case COSINE -> Metric.COSINE;
    };
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (GpuFlatIndex index : resident.values()) {
      index.close();
    }
    resident.clear();
    residentBytes = 0;
    if (device != null) {
      device.close();
    }
  }
}
