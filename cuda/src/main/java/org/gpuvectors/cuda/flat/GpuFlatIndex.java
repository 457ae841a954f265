package org.gpuvectors.cuda.flat;

import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.FlatConfig;
import org.gpuvectors.cuda.MemoryPart;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.SelectConfig;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.device.HostRows;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.GroupAddresses;
import org.gpuvectors.cuda.pass.PassGraphs;
import org.gpuvectors.cuda.pass.QueryUploads;
import org.gpuvectors.cuda.pass.ResidentIndex;
import org.gpuvectors.cuda.pass.ScanTable;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.rerank.CandidateBound;
import org.gpuvectors.cuda.rerank.ExactRerank;
import org.gpuvectors.cuda.rerank.RerankStats;
import org.gpuvectors.cuda.runtime.Cublas;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.ParamTable;
import org.gpuvectors.cuda.select.ChunkedSelection;
import org.gpuvectors.cuda.select.KSelect;
import org.gpuvectors.cuda.select.SelectParams;
import java.io.IOException;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import jcuda.Pointer;

/**
 * Exact (brute-force) float32 k-NN over vectors resident in GPU memory: squared L2, inner product
 * or cosine (inner product over vectors normalised at upload; queries normalised per search).
 *
 * <p>Two strategies, chosen by batch size ({@link Strategy#AUTO}):
 * <ul>
 *   <li>{@link Strategy#SCAN} (small batches, up to {@link FlatConfig#scanMaxQueries} queries, k <= 256): one kernel
 *       (flat_scan.cu) reads the vectors once per block of 8 queries, coalesced through shared memory, and keeps a
 *       WarpSelect queue per (query, chunk of vectors); the chunks' k-lists are merged after. No distance matrix.
 *   <li>{@link Strategy#GEMM} (large batches): cuBLAS SGEMM on tiles of vectors (never the whole
 *       queries x vectors matrix), L2 as ||x||^2 - 2 x.q + ||q||^2 with precomputed norms, k-select
 *       per tile, then the tiles' k-lists are merged.
 * </ul>
 * Both rank by the same keys (the norms' form of L2, clamped at 0). Small batches over an index with an FP16 copy
 * ({@link #addHalfCopy}) take {@link Strategy#HALF_SCAN} instead of the scan: k' candidates from the copy on tensor
 * cores, their exact FP32 re-rank and a certificate per query ({@link CandidateBound#half}); a query without one is
 * searched again by the scan. {@link Strategy#FUSED} is the older one-query-
 * per-block kernel (each lane reads its own rows), kept for the coarse steps of small IVF segments.
 * The GEMM path runs in FP32 or, per index ({@link #setPrecision}), as a TF32 candidate pass with an exact FP32
 * re-rank ({@link Precision#TF32_RERANK}): the same results, tensor-core GEMMs.
 * An optional accept bitmask (bit {@code id % 64} of word {@code id / 64}) excludes vectors inside
 * the kernels (filters, deletions).
 *
 * <p>Owns its device buffers; {@link #close()} returns them to the device pool. Threading: every
 * method takes the device lock, so one index may be searched from several threads (searches run one
 * after another on the GPU). An upload takes the lock one slab at a time, so searches of other
 * indexes go on while a segment is being uploaded. Many queries over many indexes run as one pass
 * through {@link BatchSearch}.
 */
public final class GpuFlatIndex extends ResidentIndex {
  /** How {@link #search} computes distances. */
  public enum Strategy { AUTO, FUSED, SCAN, GEMM, HALF_SCAN }

  /**
   * How the GEMM path computes distances ({@link Strategy#FUSED} is always FP32).
   * <ul>
   *   <li>{@link #FP32}: cuBLAS SGEMM, FP32 throughout.
   *   <li>{@link #TF32_RERANK}: the tile GEMMs on TF32 tensor cores select k' = {@link CandidateBound#candidates}(k)
   *       candidates per query; their keys are recomputed in FP32 from the vectors and the k best kept. Per query a
   *       certificate (the k-th exact key plus TF32's error bound below the k'-th candidate's TF32 key; {@link
   *       CandidateBound}) proves that the candidates hold the exact k best; queries without one are searched again in
   *       FP32 (counted: {@link #rerankStats}). Results are the FP32 path's, up to FP32 near-ties. k above
   *       {@link CandidateBound#MAX_K} runs FP32. Costs one wait for the device per call (the certificates decide the
   *       re-runs) and k' row reads per query, so it pays where the GEMM dominates: large batches, k small
   *       against n.
   * </ul>
   */
  public enum Precision {
    /** FP32 GEMMs. */
    FP32,
    /** TF32 candidates, exact FP32 re-rank (results as FP32's: see {@link CandidateBound}). */
    TF32_RERANK,
    /**
     * TF32_RERANK for batches of at least {@link #TF32_AUTO_MIN_QUERIES} queries whose candidates are at
     * most 1/50 of the vectors, FP32 otherwise: the re-rank and its certificate cost an extra device wait
     * per search, which a large batch amortises (its GEMMs then dominate, and run several times faster on tensor
     * cores) and a small one does not. FP32 too once the certificate has rejected most of this index's queries
     * ({@link #autoTakesTf32}).
     */
    AUTO
  }

  /** Smallest batch that {@link Precision#AUTO} runs as TF32 candidates. */
  static final int TF32_AUTO_MIN_QUERIES = 1024;

  /**
   * Batches up to this many queries use the fused kernel under {@link Strategy#AUTO}: none. Each of its lanes reads
   * its own rows, so the tiled GEMM + select is as fast from one query and several times faster from 16 queries;
   * small batches take {@link Strategy#SCAN}, which reads the vectors coalesced and shares them across queries.
   */
  public static final int FUSED_MAX_QUERIES = 0;

  /** Queries a GEMM path's block holds (package-private for tests of several blocks). */
  public static final int MAX_QUERY_BLOCK = 4096;
  private static final long UPLOAD_SLAB_FLOATS = 4L << 20;

  private final DeviceBuffer vectors;
  private final DeviceBuffer norms; // L2 only
  private volatile Precision precision = Precision.FP32;
  private final AtomicLong scanQueries = new AtomicLong();
  private final AtomicLong smallScoredSearches = new AtomicLong();
  private final AtomicLong rerankQueries = new AtomicLong();
  private final AtomicLong rerankFallbacks = new AtomicLong();
  private CandidateBound bound; // made on the first TF32 search, under the device lock
  private float maxNorm2 = Float.NaN; // the largest ||x||^2 (maxNorm2()), read back once under the device lock
  // the FP16 copy of the small batches' candidate scan ({@link #addHalfCopy}), set once under the device lock and
  // read without it by a pass's layout (halfScans)
  private volatile FlatHalfCopy half;

  private GpuFlatIndex(GpuDevice device, int n, int dims, Metric metric, DeviceBuffer vectors, DeviceBuffer norms) {
    super(device, n, dims, metric);
    this.vectors = vectors;
    this.norms = norms;
  }

  /** Supplies the vectors to upload, a slab of consecutive rows at a time. */
  @FunctionalInterface
  public interface RowSource {
    /** Writes rows {@code [first, first + count)}, row-major, into {@code dst} from index 0. */
    void read(int first, int count, float[] dst) throws IOException;
  }

  /** Uploads {@code n} row-major vectors of {@code dims} floats (cosine: normalised on the way). */
  public static GpuFlatIndex upload(GpuDevice device, float[] vectorsRowMajor, int n, int dims, Metric metric) {
    if (n < 0 || dims < 1 || (long) n * dims > vectorsRowMajor.length) {
      throw new IllegalArgumentException("need n * dims floats: n=" + n + " dims=" + dims + " length=" + vectorsRowMajor.length);
    }
    try {
      return upload(device, n, dims, metric,
          (first, count, dst) -> System.arraycopy(vectorsRowMajor, first * dims, dst, 0, count * dims));
    } catch (IOException e) {
      throw new AssertionError("copying from an array does no I/O", e);
    }
  }

  /**
   * Uploads the first {@code n} of {@code rows} ({@code dims} floats each; cosine rows must come normalised), staged
   * side by side into pinned memory ({@link GpuDevice#uploadRows}): a build that holds its vectors as rows already.
   */
  public static GpuFlatIndex upload(GpuDevice device, float[][] rows, int n, int dims, Metric metric) {
    if (n < 1 || dims < 1 || n > rows.length) {
      throw new IllegalArgumentException("need 1 <= n <= rows: n=" + n + " dims=" + dims + " rows=" + rows.length);
    }
    DeviceBuffer v;
    try (GpuDevice.Scope s = device.lock()) {
      v = device.allocate(4L * n * dims);
      boolean ok = false;
      try {
        device.uploadRows(rows, n, dims, v, 0);
        ok = true;
      } finally {
        if (!ok) {
          v.close();
        }
      }
    }
    return withNorms(device, n, dims, metric, v);
  }

  /**
   * Uploads {@code n} vectors of {@code dims} floats read from {@code source} in slabs of a few MB, so
   * the host never holds more than one slab (a segment's vectors need not fit the Java heap).
   */
  public static GpuFlatIndex upload(GpuDevice device, int n, int dims, Metric metric, RowSource source) throws IOException {
    return withNorms(device, n, dims, metric, uploadRows(device, n, dims, metric == Metric.COSINE, source));
  }

  /** The index over uploaded vectors {@code v} (taken over: released on failure), with their norms for L2. */
  private static GpuFlatIndex withNorms(GpuDevice device, int n, int dims, Metric metric, DeviceBuffer v) {
    DeviceBuffer norms = null;
    boolean ok = false;
    try (GpuDevice.Scope s = device.lock()) {
      if (metric == Metric.L2) {
        norms = device.allocate(4L * Math.max(1, n));
        rowNorms(device, v.address(), n, dims, norms.address());
      }
      device.synchronize();
      ok = true;
      return new GpuFlatIndex(device, n, dims, metric, v, norms);
    } finally {
      if (!ok) {
        try (GpuDevice.Scope s = device.lock()) {
          v.close();
          if (norms != null) {
            norms.close();
          }
        }
      }
    }
  }

  /**
   * Copies {@code n} rows of {@code dims} floats from {@code source} into a new device buffer (the
   * caller owns it), a slab of a few MB at a time, normalising each row first when asked (cosine).
   * Reading and normalising happen outside the device lock, which is held for one slab's copy only:
   * searches of other indexes run in between. On failure the buffer is returned to the pool.
   */
  public static DeviceBuffer uploadRows(GpuDevice device, int n, int dims, boolean normalize, RowSource source)
      throws IOException {
    if (n < 0 || dims < 1) {
      throw new IllegalArgumentException("n=" + n + " dims=" + dims);
    }
    DeviceBuffer v;
    try (GpuDevice.Scope s = device.lock()) {
      v = device.allocate(4L * Math.max(1, n) * dims);
    }
    boolean ok = false;
    try {
      int slabRows = (int) Math.max(1, Math.min(n, UPLOAD_SLAB_FLOATS / dims));
      float[] slab = new float[slabRows * dims];
      for (int r = 0; r < n; r += slabRows) {
        int rows = Math.min(slabRows, n - r);
        source.read(r, rows, slab);
        if (normalize) {
          normalize(slab, rows, dims);
        }
        try (GpuDevice.Scope s = device.lock()) {
          device.uploadStaged(slab, rows, dims, v, 4L * r * dims); // synchronous: the slab can be reused
        }
      }
      ok = true;
      return v;
    } finally {
      if (!ok) {
        try (GpuDevice.Scope s = device.lock()) {
          v.close();
        }
      }
    }
  }

  static void normalize(float[] x, int rows, int dims) {
    HostRows.normalize(x, 0, rows, dims);
  }

  private static void rowNorms(GpuDevice device, long x, long rows, int dims, long out) {
    if (rows == 0) {
      return;
    }
    device.module().launch("gv_row_norms", (int) ((rows + 7) / 8), 1, 256, 0, device.stream(),
        Pointer.to(new long[] {x}), Pointer.to(new long[] {rows}), Pointer.to(new int[] {dims}),
        Pointer.to(new long[] {out}));
  }

  /**
   * Device address of the vectors (row-major, normalised for cosine): the IVF-PQ scan reads the coarse
   * index's centroids from here, a half scan table's re-rank ({@link FlatScanTable}) the vectors. Caller holds the
   * device lock.
   */
  public long vectorsAddress() {
    ensureOpen();
    return vectors.address();
  }

  /** Device memory held by this index: vectors, norms (L2) and the FP16 copy once made. */
  @Override
  public DeviceBytes deviceBytesByPart() {
    FlatHalfCopy h = half;
    return DeviceBytes.builder()
        .add(MemoryPart.VECTORS, vectors.bytes())
        .add(MemoryPart.NORMS, norms == null ? 0 : norms.bytes())
        .add(MemoryPart.COMPACT_VECTORS, h == null ? 0 : h.deviceBytes())
        .build();
  }

  /** The GEMM path's precision for the searches that start from now on (default {@link Precision#FP32}). */
  public void setPrecision(Precision precision) {
    this.precision = java.util.Objects.requireNonNull(precision);
  }

  public Precision precision() {
    return precision;
  }

  /** Counts of the TF32 candidate path since upload (for benchmarks and stats). */
  public RerankStats rerankStats() {
    return new RerankStats(rerankQueries.get(), rerankFallbacks.get());
  }

  /** The k best vectors per query; {@code acceptBits} null = all vectors. Synchronous. */
  public SearchResult search(float[] queriesRowMajor, int numQueries, int k, long[] acceptBits) {
    return search(queriesRowMajor, numQueries, k, acceptBits, Strategy.AUTO);
  }

  public SearchResult search(float[] queriesRowMajor, int numQueries, int k, long[] acceptBits, Strategy strategy) {
    if (k < 1 || k > KSelect.MAX_K) {
      throw new IllegalArgumentException("k must be in [1, " + KSelect.MAX_K + "]: " + k);
    }
    if (numQueries < 0 || (long) numQueries * dims > queriesRowMajor.length) {
      throw new IllegalArgumentException("need numQueries * dims query floats");
    }
    if (acceptBits != null && acceptBits.length < (n + 63) / 64) {
      throw new IllegalArgumentException("acceptBits needs " + (n + 63) / 64 + " words, got " + acceptBits.length);
    }
    if (strategy == Strategy.SCAN && !FlatScanParams.supports(k, dims)) {
      throw new IllegalArgumentException("the scan takes k <= " + FlatScanParams.MAX_K + " and dims <= "
          + FlatScanParams.MAX_DIMS + ": k=" + k + " dims=" + dims);
    }
    if (strategy == Strategy.HALF_SCAN && !halfTakes(k)) {
      throw new IllegalArgumentException("the half scan needs the index's FP16 copy (" + hasHalfCopy()
          + "), k <= " + HALF_MAX_K + " and dims <= " + HalfScanParams.MAX_DIMS + ": k=" + k + " dims=" + dims);
    }
    boolean direct = strategy != Strategy.AUTO || numQueries <= FUSED_MAX_QUERIES;
    if (!direct) {
      try (GpuDevice.Scope s = device.lock()) {
        ensureOpen();
        return BatchSearch.run(device, java.util.List.of(
            new SearchGroup(this, queriesRowMajor, numQueries, k, acceptBits, null)))[0];
      }
    }
    int[] ids = new int[numQueries * k];
    float[] dist = new float[numQueries * k];
    if (numQueries == 0) {
      return new SearchResult(0, k, ids, dist);
    }
    float[] queries = queriesRowMajor;
    if (metric == Metric.COSINE) {
      queries = java.util.Arrays.copyOf(queriesRowMajor, numQueries * dims);
      normalize(queries, numQueries, dims);
    }
    try (GpuDevice.Scope s = device.lock()) {
      ensureOpen();
      DeviceBuffer bits = null;
      try {
        if (acceptBits != null && n > 0) {
          bits = device.allocate(8L * ((n + 63) / 64));
          device.upload(java.util.Arrays.copyOf(acceptBits, (n + 63) / 64), bits);
        }
        try (DeviceBuffer q = device.allocate(4L * numQueries * dims);
             DeviceBuffer outV = device.allocate(4L * numQueries * k);
             DeviceBuffer outI = device.allocate(4L * numQueries * k)) {
          device.upload(queries, 0, numQueries * dims, q, 0);
          if (n == 0) {
            java.util.Arrays.fill(ids, -1);
          } else {
            enqueueStrategy(strategy, q.address(), numQueries, k, bits == null ? 0 : bits.address(), outV, outI);
            device.download(outV, 0, dist, 0, numQueries * k);
            device.download(outI, 0, ids, 0, numQueries * k);
          }
        }
      } finally {
        if (bits != null) {
          bits.close();
        }
      }
    }
    return new SearchResult(numQueries, k, ids, dist);
  }

  /**
   * Enqueues {@code strategy} (not {@link Strategy#AUTO}) for {@code nq} queries at device address {@code queries}
   * (row-major, already normalised for cosine) and the accept mask shared by them at {@code accept} (0: none), results
   * from element 0 as {@link #enqueueSearch} writes them: the direct searches of {@link #search(float[], int, int,
   * long[], Strategy)}, and benchmarks that time one path against another on the same index. Asynchronous, but for
   * {@link Strategy#HALF_SCAN}, which waits for its certificates and searches the queries they reject again. Caller
   * holds the device lock.
   */
  void enqueueStrategy(Strategy strategy, long queries, int nq, int k, long accept, DeviceBuffer outV,
                       DeviceBuffer outI) {
    ensureOpen();
    switch (strategy) {
      case SCAN -> enqueueScan(queries, nq, k, accept, 0, outV, outI, 0);
      case HALF_SCAN -> searchHalf(queries, nq, k, accept, 0, outV, outI);
      case GEMM -> enqueueGemm(queries, 0, nq, k, accept, 0, outV, outI, 0, null);
      case FUSED -> searchFused(queries, nq, k, accept, outV, outI);
      case AUTO -> throw new IllegalArgumentException("AUTO chooses per search: enqueueSearch");
    }
  }

  /**
   * Enqueues the search of {@code nq} queries at device address {@code queries} (row-major, already normalised for
   * cosine) without waiting: per query the k best (distance, id) pairs at {@code out + 4 * (outElement + q * k)}, by
   * {@link Strategy#SCAN} for small batches ({@link #scans}), else the GEMM path. Accept masks: see {@link
   * SelectParams#acceptBits(long, long)}. Caller holds the device lock; temporaries return to the pool, reused in
   * stream order.
   */
  public void enqueueSearch(long queries, long queryNorms, int nq, int k, long acceptAddress, long acceptRowWords,
                     DeviceBuffer outV, DeviceBuffer outI, long outElement) {
    enqueueSearch(queries, queryNorms, nq, k, acceptAddress, acceptRowWords, outV, outI, outElement, null);
  }

  /**
   * As {@link #enqueueSearch(long, long, int, int, long, long, DeviceBuffer, DeviceBuffer, long)}, for queries still
   * on their way to the device when {@code arriving} is not null: the GEMM path asks for each block of queries just
   * before it enqueues the block's kernels, so the next block is copied while this one is searched.
   */
  void enqueueSearch(long queries, long queryNorms, int nq, int k, long acceptAddress, long acceptRowWords,
                     DeviceBuffer outV, DeviceBuffer outI, long outElement, QueryUploads.Feed arriving) {
    ensureOpen();
    if (scans(nq, k)) {
      if (arriving != null) {
        arriving.awaitAll();
      }
      enqueueScan(queries, nq, k, acceptAddress, acceptRowWords, outV, outI, outElement);
    } else {
      enqueueGemm(queries, queryNorms, nq, k, acceptAddress, acceptRowWords, outV, outI, outElement, arriving);
    }
  }

  /**
   * The {@code k} nearest of this index's vectors to each of its vectors {@code [first, first + count)}, ids only, k
   * per vector best first (ties as the search breaks them), itself normally among them: the brute force of a k-NN
   * graph. The queries are the index's own rows, read where they lie on the device (with their norms), never copied.
   * Takes the device lock; synchronous.
   */
  public int[] searchOwnVectors(int first, int count, int k) {
    if (first < 0 || count < 1 || (long) first + count > n || k < 1 || (long) count * k > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("vectors [" + first + ", " + first + " + " + count + ") of " + n + ", k " + k);
    }
    int[] ids = new int[count * k];
    try (GpuDevice.Scope s = device.lock();
         DeviceBuffer outV = device.allocate(4L * count * k);
         DeviceBuffer outI = device.allocate(4L * count * k)) {
      enqueueSearch(vectorsAddress() + 4L * first * dims, norms == null ? 0 : norms.address() + 4L * first, count, k,
          0, 0, outV, outI, 0);
      device.downloadStaged(outI, 0, ids, 0, ids.length);
    }
    return ids;
  }

  /** The largest k of the half scan: its k' = {@link CandidateBound#candidates}(k) must fit the 256 bucket. */
  static final int HALF_MAX_K = 128;

  /**
   * Device bytes of the FP16 copy that {@link #addHalfCopy} would add to an index of n vectors on {@code device} (0:
   * none, {@link FlatConfig#halfCopy} off or too many dimensions).
   */
  public static long halfCopyBytes(GpuDevice device, long n, int dims) {
    return device.config().flat().halfCopy() && n > 0 && dims <= HalfScanParams.MAX_DIMS ? FlatHalfCopy.bytes(n, dims)
        : 0;
  }

  /**
   * Adds the FP16 copy that the small batches' candidate scan reads ({@link Strategy#HALF_SCAN}): the vectors times
   * one power of two (their largest magnitude below 2^14), rounded to FP16, rows padded to {@link
   * HalfScanParams#DIM_STEP} dimensions: {@link #halfCopyBytes} more device memory, half the bytes a scan reads. Does
   * nothing when the device's configuration has no FP16 copies ({@link FlatConfig#halfCopy}), for more than {@link
   * HalfScanParams#MAX_DIMS} dimensions or vectors with an infinite component. Waits for the device (two reads of a few
   * bytes).
   */
  public void addHalfCopy() {
    if (halfCopyBytes(device, n, dims) == 0) {
      return;
    }
    try (GpuDevice.Scope s = device.lock()) {
      ensureOpen();
      if (half == null) {
        half = FlatHalfCopy.make(device, vectors.address(), n, dims, metric, maxNorm2()); // null: FP32 only
      }
    }
  }

  /** Whether this index has its FP16 copy ({@link #addHalfCopy}). */
  public boolean hasHalfCopy() {
    return half != null;
  }

  /** Whether the half scan may answer k results (the FP16 copy, k', dims), whatever the batch. */
  boolean halfTakes(int k) {
    return half != null && k >= 1 && k <= HALF_MAX_K;
  }

  /**
   * Whether {@link Strategy#AUTO} answers {@code nq} queries for k results by the half scan: small batches (at most
   * {@link FlatConfig#halfMaxQueries}) of an index with its FP16 copy. Depends on nothing that changes after {@link
   * #addHalfCopy}, so that a pass's layout (which reserves the certificate's inputs) and its enqueue agree.
   */
  boolean halfScans(int nq, int k) {
    return nq >= 1 && nq <= device.config().flat().halfMaxQueries() && halfTakes(k) && !usesTf32(nq, k);
  }

  /**
   * Queries the half scan answered (whose certificates were checked), and those its certificate sent back to the
   * FP32 scan, since upload.
   */
  public RerankStats halfStats() {
    FlatHalfCopy h = half;
    return h == null ? new RerankStats(0, 0) : h.stats();
  }

  /**
   * Enqueues {@link Strategy#HALF_SCAN} (arguments as {@link #enqueueSearch}, plus {@code stats}: the device address
   * of 4 floats per query for the certificate, {@link #uncertifiedHalf}): k' candidates per query from the FP16 copy
   * (one scan launch, a BlockSelect merge of its chunks), their exact FP32 keys and the k best of them into the
   * output (one re-rank launch that selects too), and the certificate's inputs. Caller holds the lock; the results
   * are final only for the queries the certificate then accepts.
   */
  void enqueueHalfSearch(long queries, int nq, int k, long acceptAddress, long acceptRowWords, DeviceBuffer outV,
                         DeviceBuffer outI, long outElement, long stats) {
    ensureOpen();
    if (!halfTakes(k) || nq < 1) {
      throw new IllegalStateException("the half scan cannot answer " + nq + " queries for k = " + k);
    }
    half.enqueueSearch(this, vectors.address(), norms == null ? 0 : norms.address(), queries, nq, k, acceptAddress,
        acceptRowWords, outV, outI, outElement, stats);
  }

  /**
   * Candidates each of {@code chunks} chunks of a half scan of this index keeps ({@link
   * FlatHalfCopy#chunkCandidates}).
   */
  int halfChunkCandidates(int kc, int chunks, long chunkLen) {
    return half.chunkCandidates(kc, size(), chunks, chunkLen);
  }

  /**
   * The half scan's parameters for {@code nq} queries and {@code kc} candidates (arguments as {@link #enqueueSearch}),
   * without the chunks and the output, which the caller plans ({@link FlatScanTable}; benchmarks time the scan
   * alone). Caller holds the lock; the index has its FP16 copy.
   */
  HalfScanParams halfScanParams(long queries, int nq, int kc, long acceptAddress, long acceptRowWords) {
    return half.params(this, norms == null ? 0 : norms.address(), queries, nq, kc, acceptAddress, acceptRowWords);
  }

  /**
   * The queries (ascending, 0-based within the search) whose half-scan candidates are not certified to hold their
   * exact k best ({@link FlatHalfCopy#uncertified}; counted in {@link #halfStats}): each must be searched again on the
   * FP32 path.
   */
  int[] uncertifiedHalf(float[] stats, int from, int nq) {
    boolean chunkLimited = half.chunkLimited();
    int[] out = half.uncertified(stats, from, nq);
    if (!chunkLimited && half.chunkLimited()) { // the captured passes keep the chunks' smaller count: retired
      try (GpuDevice.Scope s = device.lock()) {
        PassGraphs.of(device).evict(this);
      }
    }
    return out;
  }

  /** {@link Strategy#HALF_SCAN} of a direct search: the half search, its certificate, the FP32 scan for the rest. */
  private void searchHalf(long queries, int nq, int k, long accept, long acceptRowWords, DeviceBuffer outV,
                          DeviceBuffer outI) {
    float[] stats = new float[4 * nq];
    try (DeviceBuffer dStats = device.allocate(16L * nq)) {
      enqueueHalfSearch(queries, nq, k, accept, acceptRowWords, outV, outI, 0, dStats.address());
      device.download(dStats, 0, stats, 0, stats.length);
    }
    for (int q : uncertifiedHalf(stats, 0, nq)) {
      long mask = accept != 0 && acceptRowWords > 0 ? accept + 8L * q * acceptRowWords : accept;
      enqueueScan(queries + 4L * q * dims, 1, k, mask, acceptRowWords, outV, outI, (long) q * k);
    }
  }

  /**
   * Query {@code q} of {@code group} (a group of this index) searched alone by the FP32 scan, synchronously: a query
   * the half scan's certificate rejected in a pass ({@link BatchSearch}). Takes the device lock.
   */
  SearchResult searchAgainFp32(SearchGroup group, int q) {
    float[] query = new float[dims];
    group.copyQueries(q, 1, query, 0);
    long[] mask = group.sharedMask() != null ? group.sharedMask()
        : group.queryMasks() != null ? group.queryMasks()[q] : null;
    return search(query, 1, group.k(), mask, FlatScanParams.supports(group.k(), dims) ? Strategy.SCAN : Strategy.GEMM);
  }

  /** A flat search has no knob: {@link SearchParams#FLAT} only. */
  @Override
  public void checkSearch(SearchParams params, int k) {
    if (!(params instanceof SearchParams.Flat)) {
      throw refused("Flat", params);
    }
  }

  /**
   * A group's search in a pass: the half scan when the pass reserved its certificate's inputs ({@link
   * #writesCertificates}: a few queries, FP16 candidates re-ranked), else the FP32 search, which asks for the
   * group's arriving queries block by block.
   */
  @Override
  protected void enqueue(SearchGroup group, GroupAddresses at) {
    if (at.statsAt() >= 0) {
      at.awaitQueries();
      enqueueHalfSearch(at.queries(), group.numQueries(), group.k(), at.accept(), at.acceptRowWords(), at.outV(),
          at.outI(), at.outAt(), at.outV().address() + 4L * at.statsAt());
    } else {
      enqueueSearch(at.queries(), at.norms(), group.numQueries(), group.k(), at.accept(), at.acceptRowWords(),
          at.outV(), at.outI(), at.outAt(), at.feed());
    }
  }

  @Override
  protected ScanTable.Planner scanTables() {
    return FlatScanTable::plan;
  }

  @Override
  protected boolean readsQueriesBlockByBlock() {
    return true;
  }

  @Override
  protected boolean writesCertificates(SearchGroup group) {
    return n > 0 && halfScans(group.numQueries(), group.k());
  }

  @Override
  protected void searchUncertifiedAgain(SearchGroup group, float[] distances, int[] ids, int statsAt, long outAt, int stride) {
    int k = group.k();
    float empty = metric == Metric.L2 ? Float.POSITIVE_INFINITY : Float.NEGATIVE_INFINITY;
    for (int q : uncertifiedHalf(distances, statsAt, group.numQueries())) {
      SearchResult again = searchAgainFp32(group, q);
      int row = (int) (outAt + (long) q * stride);
      for (int i = 0; i < k; i++) {
        boolean present = i < again.count(0);
        ids[row + i] = present ? again.id(0, i) : -1;
        distances[row + i] = present ? again.distance(0, i) : empty;
      }
    }
  }

  /** Queries answered by {@link Strategy#SCAN} so far (tests and benchmarks tell the paths apart by it). */
  public long scanQueries() {
    return scanQueries.get();
  }

  /** Whether {@link Strategy#AUTO} searches {@code nq} queries for k results with the scan: small FP32 batches. */
  boolean scans(int nq, int k) {
    return nq <= device.config().flat().scanMaxQueries() && scanTakes(nq, k);
  }

  /** Whether the scan may answer {@code nq} queries for k results at all (FP32, its k and dims), whatever the batch. */
  boolean scanTakes(int nq, int k) {
    return FlatScanParams.supports(k, dims) && !usesTf32(nq, k);
  }

  /**
   * Enqueues {@link Strategy#SCAN} (arguments as {@link #enqueueSearch}): one launch of the scan over chunks of the
   * vectors; with several chunks, their k-lists in temporaries and one BlockSelect merge into the output.
   */
  private void enqueueScan(long queries, int nq, int k, long acceptAddress, long acceptRowWords, DeviceBuffer outV,
                           DeviceBuffer outI, long outElement) {
    FlatScanParams p = scanParams(queries, nq, k, acceptAddress, acceptRowWords).planChunks(device.multiprocessorCount());
    ChunkedSelection.enqueue(device, nq, p.chunks, k,
        new SelectParams().k(k).largest(metric != Metric.L2).output(outV, outI, k, outElement),
        (keys, ids, stride) -> {
          p.outK = keys;
          p.outIdx = ids;
          p.outRowStride = stride;
          p.enqueue(device);
        });
  }

  /**
   * The scan's parameters for {@code nq} queries of this index (arguments as {@link #enqueueSearch}), without the
   * chunks and the output, which the caller plans ({@link #enqueueScan}, {@link FlatScanTable}); counts the queries
   * as scanned ({@link #scanQueries}).
   */
  FlatScanParams scanParams(long queries, int nq, int k, long acceptAddress, long acceptRowWords) {
    ensureOpen();
    FlatScanParams p = new FlatScanParams();
    boolean l2 = metric == Metric.L2;
    p.vectors = vectors.address();
    p.norms = l2 ? norms.address() : 0;
    p.queries = queries;
    p.acceptBits = acceptAddress;
    p.acceptRowWords = acceptRowWords;
    p.n = n;
    p.dims = dims;
    p.numQueries = nq;
    p.k = k;
    p.metric = l2 ? 0 : 1;
    scanQueries.addAndGet(nq);
    return p;
  }

  /** Enqueues the GEMM path (arguments as {@link #enqueueSearch}): FP32, or the TF32 candidate pass. */
  private void enqueueGemm(long queries, long queryNorms, int nq, int k, long acceptAddress, long acceptRowWords,
                           DeviceBuffer outV, DeviceBuffer outI, long outElement, QueryUploads.Feed arriving) {
    if (usesTf32(nq, k)) {
      searchTf32Rerank(queries, queryNorms, nq, k, acceptAddress, acceptRowWords, outV, outI, outElement, arriving);
      return;
    }
    QueryUploads.forEachBlock(queryBlocks(nq), dims, queries, queryNorms, acceptAddress, acceptRowWords, arriving,
        b -> searchGemm(b.queries(), b.norms(), b.count(), k, b.accept(), acceptRowWords, outV, outI,
            outElement + (long) b.first() * k, false));
  }

  /**
   * Where the GEMM path's blocks of queries start, and nq at the end: {@link QueryUploads#blocks} with a first
   * block of at most {@link #FIRST_QUERY_BLOCK} and blocks of at most {@link #MAX_QUERY_BLOCK}. Fashion-MNIST's 10k x
   * 784 queries went up in 12.8 MB blocks, and the first one's staging and copy were most of the ~2 ms by which the
   * pass outlasted its kernels.
   */
  public static int[] queryBlocks(int nq) {
    return QueryUploads.blocks(nq, FIRST_QUERY_BLOCK, MAX_QUERY_BLOCK);
  }

  /** The largest first block of {@link #queryBlocks}. */
  public static final int FIRST_QUERY_BLOCK = 1024;

  /** Whether a search of nq queries for k results takes the TF32 candidate pass. */
  boolean usesTf32(int nq, int k) {
    boolean wanted = switch (precision) {
      case FP32 -> false;
      case TF32_RERANK -> true;
      case AUTO -> autoTakesTf32(nq, k, n, rerankQueries.get(), rerankFallbacks.get());
    };
    return wanted && nq > 0 && CandidateBound.applies(k, dims);
  }

  /**
   * {@link Precision#AUTO}'s choice for a search of {@code nq} queries for k over {@code n} vectors, after the TF32
   * pass's certificate checked {@code checked} queries of this index and rejected {@code rejected}: TF32 for large
   * batches whose candidates are at most 1/50 of the vectors, unless the certificate has rejected more than {@link
   * #TF32_AUTO_MAX_REJECTED} of at least {@link #TF32_AUTO_MIN_QUERIES} queries. Each rejected query is searched again
   * in FP32, so past some share of rejections the TF32 pass costs more than it saves: on clustered sets where the
   * certificate rejected nearly every query it lost to FP32, where it rejected about a third it still won, and the
   * break-even lay between a half and three quarters rejected.
   */
  public static boolean autoTakesTf32(int nq, int k, long n, long checked, long rejected) {
    boolean failing = checked >= TF32_AUTO_MIN_QUERIES && rejected > TF32_AUTO_MAX_REJECTED * checked;
    return nq >= TF32_AUTO_MIN_QUERIES && CandidateBound.candidates(k) * 50L <= n && !failing;
  }

  /** The share of rejected queries past which {@link Precision#AUTO} leaves the TF32 pass for an index. */
  static final double TF32_AUTO_MAX_REJECTED = 0.5;

  /**
   * {@link Precision#TF32_RERANK} (arguments as {@link #enqueueSearch}): every block of queries gets its TF32
   * candidates, their FP32 re-rank into the output and the certificate's inputs; then one wait for the stats, and
   * the queries without a certificate are searched again on the FP32 path, their results written over theirs.
   */
  private void searchTf32Rerank(long queries, long queryNorms, int nq, int k, long acceptAddress, long acceptRowWords,
                                DeviceBuffer outV, DeviceBuffer outI, long outElement, QueryUploads.Feed arriving) {
    CandidateBound b = bound();
    float[] stats = new float[4 * nq];
    try (DeviceBuffer dStats = device.allocate(16L * nq)) {
      QueryUploads.forEachBlock(queryBlocks(nq), dims, queries, queryNorms, acceptAddress, acceptRowWords, arriving,
          bl -> searchCandidates(bl.queries(), bl.norms(), bl.count(), k, bl.accept(), acceptRowWords, outV, outI,
              outElement + (long) bl.first() * k, dStats.address() + 16L * bl.first()));
      device.download(dStats, 0, stats, 0, stats.length); // waits for the pass
    }
    int[] rejected = b.uncertified(stats, nq);
    rerankQueries.addAndGet(nq);
    rerankFallbacks.addAndGet(rejected.length);
    if (rejected.length > 0) {
      searchAgainFp32(rejected, queries, queryNorms, k, acceptAddress, acceptRowWords, outV, outI, outElement);
    }
  }

  /**
   * One block of queries' TF32 candidate pass: k' candidates by TF32 keys, their FP32 keys (gv_rerank_exact), the
   * k best of those into the output (BlockSelect over the candidates' ids), and per query at {@code stats} the
   * certificate's inputs (k-th exact key, k'-th TF32 key, ||q||^2). Asynchronous.
   */
  private void searchCandidates(long q, long hostNorms, int nq, int k, long accept, long acceptRowWords,
                                DeviceBuffer outV, DeviceBuffer outI, long outElement, long stats) {
    int kc = CandidateBound.candidates(k);
    try (DeviceBuffer candV = device.allocate(4L * nq * kc);
         DeviceBuffer candI = device.allocate(4L * nq * kc);
         DeviceBuffer exact = device.allocate(4L * nq * kc)) {
      searchGemm(q, hostNorms, nq, kc, accept, acceptRowWords, candV, candI, 0, true);
      ExactRerank rerank = new ExactRerank(metric, dims, nq, kc, k).vectors(vectors.address(), q)
          .candidates(candV.address(), candI.address()).stats(stats);
      rerank.enqueueThenMerge(device, null, exact, outV, outI, outElement);
      rerank.enqueueStats(device); // the stats read the merged k-th value
    }
  }

  /**
   * Searches the queries {@code rejected} (indexes into the call's queries, ascending) again on the FP32 path, in
   * blocks: their rows (queries, norms, per-query masks) gathered, their results scattered over the TF32 path's.
   */
  private void searchAgainFp32(int[] rejected, long queries, long queryNorms, int k, long acceptAddress,
                               long acceptRowWords, DeviceBuffer outV, DeviceBuffer outI, long outElement) {
    boolean rowMasks = acceptAddress != 0 && acceptRowWords > 0;
    for (int f0 = 0; f0 < rejected.length; f0 += MAX_QUERY_BLOCK) {
      int m = Math.min(MAX_QUERY_BLOCK, rejected.length - f0);
      try (DeviceBuffer rows = device.allocate(4L * m);
           DeviceBuffer q = device.allocate(4L * m * dims);
           DeviceBuffer qn = device.allocate(4L * m);
           DeviceBuffer masks = device.allocate(rowMasks ? 8L * m * acceptRowWords : 8);
           DeviceBuffer v = device.allocate(4L * m * k);
           DeviceBuffer ids = device.allocate(4L * m * k)) {
        device.upload(Arrays.copyOfRange(rejected, f0, f0 + m), rows);
        copyRows(queries, dims, rows.address(), q.address(), dims, 0, m, dims);
        if (queryNorms != 0) {
          copyRows(queryNorms, 1, rows.address(), qn.address(), 1, 0, m, 1);
        }
        if (rowMasks) {
          copyRows(acceptAddress, 2 * acceptRowWords, rows.address(), masks.address(), 2 * acceptRowWords, 0, m,
              2 * acceptRowWords);
        }
        searchGemm(q.address(), queryNorms == 0 ? 0 : qn.address(), m, k, rowMasks ? masks.address() : acceptAddress,
            acceptRowWords, v, ids, 0, false);
        long out = outElement * 4L;
        copyRows(v.address(), k, 0, outV.address() + out, k, rows.address(), m, k);
        copyRows(ids.address(), k, 0, outI.address() + out, k, rows.address(), m, k);
      }
    }
  }

  /**
   * Copies {@code rows} rows of {@code width} 4-byte words: destination row (dstRows ? dstRows[r] : r) = source
   * row (srcRows ? srcRows[r] : r); strides in words, row lists at device addresses (0: none). Asynchronous.
   */
  private void copyRows(long src, long srcStride, long srcRows, long dst, long dstStride, long dstRows, int rows,
                        long width) {
    device.module().launch("gv_copy_rows", rows, 1, 128, 0, device.stream(), Pointer.to(new long[] {src}),
        Pointer.to(new long[] {srcStride}), Pointer.to(new long[] {srcRows}), Pointer.to(new long[] {dst}),
        Pointer.to(new long[] {dstStride}), Pointer.to(new long[] {dstRows}), Pointer.to(new long[] {width}));
  }

  /**
   * The TF32 bound of this index, made on first use: it needs the largest ||x||^2 of the vectors (the L2 norms, or
   * norms computed for the purpose), read back once. Caller holds the device lock.
   */
  private CandidateBound bound() {
    if (bound == null) {
      bound = CandidateBound.tf32(metric, dims, maxNorm2());
    }
    return bound;
  }

  /**
   * The largest FP32 ||x||^2 of the vectors (NaN norms skipped: such vectors are never found), read back once (the
   * FP16 copy's bound and the TF32 pass's both need it); waits the first time. Caller holds the device lock.
   */
  private float maxNorm2() {
    if (Float.isNaN(maxNorm2)) {
      maxNorm2 = readMaxNorm2();
    }
    return maxNorm2;
  }

  private float readMaxNorm2() {
    if (n == 0) {
      return 0f;
    }
    DeviceBuffer computed = norms == null ? device.allocate(4L * n) : null;
    try {
      DeviceBuffer src = norms;
      if (computed != null) {
        rowNorms(device, vectors.address(), n, dims, computed.address());
        src = computed;
      }
      float max = 0f;
      float[] slab = new float[Math.min(n, 1 << 20)];
      for (int first = 0; first < n; first += slab.length) {
        int count = Math.min(slab.length, n - first);
        device.download(src, 4L * first, slab, 0, count);
        for (int i = 0; i < count; i++) {
          if (slab[i] > max) {
            max = slab[i];
          }
        }
      }
      return max;
    } finally {
      if (computed != null) {
        computed.close();
      }
    }
  }

  /**
   * The most queries, and floats of vectors, that {@link #enqueueSmall} searches in one launch: each query reads
   * the whole index (split over chunks when the queries are few), so 8 MB (the 3,162 centroids x 128 of a 10M
   * index and the 1,414 x 768 of a 2M one: the GEMM path's cuBLAS call, tile selection and merge cost more for a
   * few queries).
   */
  static final int SMALL_QUERIES = 32;
  static final long SMALL_FLOATS = 1L << 21;

  /**
   * Enqueues the k best of a few queries over a small index (an IVF index's coarse quantizer: a query or a few
   * per segment against the segment's list centroids) as one launch of the fused kernel, one block per query or,
   * for a few queries, per (query, chunk) with a BlockSelect merge of the chunks ({@link #smallChunks}); at most
   * {@link #SCORED_QUERIES} queries over a few thousand vectors as every vector's key and a radix selection
   * ({@link #enqueueSmallScored}); false, with nothing enqueued, when the batch or the index is too large ({@link
   * #SMALL_QUERIES}, {@link #SMALL_FLOATS}) or k exceeds the largest bucket. The GEMM path would take a cuBLAS
   * call, a tile selection and a merge for work that fits one block per query: on a pass over many small segments
   * the host cost of those three calls per segment, not the GPU, bounded the rate. Output as {@link
   * #enqueueSearch} writes it (distances computed directly, not from norms: the same up to rounding). Caller holds
   * the lock.
   */
  public boolean enqueueSmall(long queries, int nq, int k, DeviceBuffer outV, DeviceBuffer outI, long outElement) {
    ensureOpen();
    if (nq < 1 || nq > SMALL_QUERIES || n < 1 || (long) n * dims > SMALL_FLOATS || k > KSelect.MAX_K) {
      return false;
    }
    boolean ip = metric != Metric.L2;
    if (nq <= SCORED_QUERIES && n <= device.config().select().radixBlockMaxLen()) {
      enqueueSmallScored(queries, nq, k, outV, outI, outElement);
      smallScoredSearches.incrementAndGet();
      return true;
    }
    int planned = smallChunks(nq, k);
    int chunkLen = (int) ((n + planned - 1) / planned); // one chunk: the whole index
    int chunks = (int) ((n + chunkLen - 1) / chunkLen);
    SelectParams merge = new SelectParams().k(k).largest(ip).output(outV, outI, k, outElement);
    ChunkedSelection.enqueue(device, nq, chunks, k, merge,
        (keys, ids, stride) -> launchFused(queries, nq, k, 0, keys, ids, stride, chunks, chunkLen, ip));
    return true;
  }

  /**
   * {@link #enqueueSmall} for at most {@link #SCORED_QUERIES} queries over at most {@link SelectConfig#radixBlockMaxLen}
   * vectors: every vector's exact key ({@code gv_rerank_exact} over all rows: a warp per vector, the lanes over the
   * dimensions, the rows spread over about four blocks a multiprocessor) into a row per query, then one radix
   * selection of the rows (a block per row, the row in shared memory). The fused kernel's chunks walk their vectors a
   * lane per vector (a lane reads a whole row alone) and need a BlockSelect merge after; here a warp reads each row
   * coalesced and one selection ends the search: less device time for a one-query coarse step over a few thousand
   * centroids, less than half for rows of hundreds of floats (ShortRowBench times both). Same keys as the fused
   * kernel's (squared L2 or -x.q, summed in another order), same output.
   */
  private void enqueueSmallScored(long queries, int nq, int k, DeviceBuffer outV, DeviceBuffer outI, long outElement) {
    boolean ip = metric != Metric.L2;
    try (DeviceBuffer keys = device.allocate(4L * nq * n)) {
      // no candidates, stats or output: every vector's key, no certificate
      new ExactRerank(metric, dims, nq, (int) n, k).vectors(vectors.address(), queries).exactKeys(keys.address())
          .enqueue(device);
      KSelect.radixSelect(device, new SelectParams().input(keys, nq, (int) n, n).k(k).scales(1f, ip ? -1f : 1f)
          .output(outV, outI, k, outElement));
    }
  }

  /** The most queries {@link #enqueueSmallScored} takes: a one-query pass, the few queries of concurrent searches. */
  static final int SCORED_QUERIES = 4;

  /**
   * Searches of this index that {@link #enqueueSmall} answered by {@link #enqueueSmallScored} (tests: the path they
   * checked).
   */
  long smallScoredSearches() {
    return smallScoredSearches.get();
  }

  /**
   * Floats a block of {@link #enqueueSmall} reads at least when the index is split over several blocks: 128 vectors
   * at 128 dimensions, 22 at 768. Counted in floats, not vectors: a bound in vectors gave long rows few blocks (128
   * centroids of 768 floats a block left a one-query coarse step over 1,414 centroids on 11 blocks of a GPU of over a
   * hundred multiprocessors).
   */
  static final int SMALL_CHUNK_FLOATS = 128 * 128;

  /**
   * Blocks per query of {@link #enqueueSmall}: one query alone on one block leaves the other multiprocessors idle
   * while that block walks the whole index; so a few queries split the index into chunks of at least max({@link
   * #SMALL_CHUNK_FLOATS} / dims, 2k) vectors, about four blocks per multiprocessor in all (when that makes 4 chunks or
   * more), and one BlockSelect launch merges the chunks' k-lists.
   */
  int smallChunks(int nq, int k) {
    long wanted = (4L * device.multiprocessorCount() + nq - 1) / nq;
    long minChunk = Math.max((SMALL_CHUNK_FLOATS + dims - 1) / dims, 2L * k);
    long byLen = n / Math.max(1, minChunk);
    long chunks = Math.min(wanted, byLen);
    // below 4 chunks the merge's launch (host time on a pass over many small segments) buys too little
    return chunks < 4 ? 1 : (int) chunks;
  }

  private void searchFused(long q, int nq, int k, long bits, DeviceBuffer outV, DeviceBuffer outI) {
    int kb = KSelect.bucket(k);
    long target = 4L * device.multiprocessorCount();
    long maxByLen = Math.max(1, n / Math.max(1024, 4L * kb));
    int planned = (int) Math.max(1, Math.min(Math.min((target + nq - 1) / nq, maxByLen), 65535));
    int chunkLen = (int) ((n + (long) planned - 1) / planned);
    int chunks = (int) ((n + (long) chunkLen - 1) / chunkLen);
    boolean ip = metric != Metric.L2;
    ChunkedSelection.enqueue(device, nq, chunks, k, new SelectParams().k(k).largest(ip).output(outV, outI, k),
        (keys, ids, stride) -> launchFused(q, nq, k, bits, keys, ids, stride, chunks, chunkLen, ip),
        (d, merge) -> KSelect.select(d, KSelect.Algorithm.BLOCK_SELECT, merge)); // FUSED: BlockSelect, not a choice
  }

  /** One launch of {@code gv_fused_search_kK}; {@code bits}: the accept mask's device address, or 0. */
  private void launchFused(long q, int nq, int k, long bits, long outV, long outI, long outStride, int chunks,
                           int chunkLen, boolean ip) {
    int shared = 4 * ((dims + 3) / 4 * 4);
    String kernel = "gv_fused_search_k" + KSelect.bucket(k);
    device.module().allowDynamicShared(kernel, shared); // past 48 KB only for dims > 12,288
    device.module().launch(kernel, nq, chunks, KSelect.blockSelectThreads(k), shared, device.stream(),
        Pointer.to(fusedParams(q, nq, k, bits, outV, outI, outStride, chunks, chunkLen, ip)));
  }

  /** {@code gv::FusedParams} of a fused search of this index. */
  private byte[] fusedParams(long q, int nq, int k, long bits, long outV, long outI, long outStride, int chunks,
                             int chunkLen, boolean ip) {
    FusedParams p = new FusedParams();
    p.vectors = vectors.address();
    p.queries = q;
    p.acceptBits = bits;
    p.outK = outV;
    p.outIdx = outI;
    p.n = n;
    p.outRowStride = outStride;
    p.dims = dims;
    p.numQueries = nq;
    p.k = k;
    p.chunks = chunks;
    p.chunkLen = chunkLen;
    p.metric = ip ? 1 : 0;
    return p.encode();
  }

  /** The largest k bucket of {@code gv_fused_search_table_kK} (exact_kernels.cu): a coarse step's nprobe. */
  public static final int TABLE_MAX_BUCKET = 128;
  /** Entries of a {@code gv::FusedTable} (exact_kernels.cu's kFusedTableEntries). */
  public static final int TABLE_ENTRIES = 48;

  /** Whether a search of nq queries for k neighbours is one {@link #smallTableEntry} (a block per query). */
  public boolean fitsSmallTable(int nq, int k) {
    return nq >= 1 && nq <= SMALL_QUERIES && n >= 1 && (long) n * dims <= SMALL_FLOATS && k <= KSelect.MAX_K
        && KSelect.bucket(k) <= TABLE_MAX_BUCKET && smallChunks(nq, k) == 1;
  }

  /**
   * This index's small search of {@code nq} queries for k ({@link #enqueueSmall}'s output) as an entry of a table
   * launch ({@link #enqueueSmallTable}), or null when it is not a single block per query of a k bucket the table
   * kernels have: then {@link #enqueueSmall} or the GEMM path runs it alone. Caller holds the lock.
   */
  public byte[] smallTableEntry(long queries, int nq, int k, DeviceBuffer outV, DeviceBuffer outI) {
    ensureOpen();
    if (!fitsSmallTable(nq, k)) {
      return null;
    }
    return fusedParams(queries, nq, k, 0, outV.address(), outI.address(), k, 1, (int) n, metric != Metric.L2);
  }

  /**
   * The small searches of several indexes of {@code dims} dimensions ({@link #smallTableEntry}: up to {@code maxNq}
   * queries, k up to {@code maxK}) as {@code gv_fused_search_table_kK} launches of {@link #TABLE_ENTRIES} entries:
   * the coarse steps of a pass's segments in one launch instead of one each. Asynchronous; caller holds the lock.
   */
  public static void enqueueSmallTable(GpuDevice device, java.util.List<byte[]> entries, int maxNq, int maxK, int dims) {
    String kernel = "gv_fused_search_table_k" + KSelect.bucket(maxK);
    int shared = 4 * ((dims + 3) / 4 * 4);
    device.module().allowDynamicShared(kernel, shared);
    for (int from = 0; from < entries.size(); from += TABLE_ENTRIES) {
      java.util.List<byte[]> part = entries.subList(from, Math.min(entries.size(), from + TABLE_ENTRIES));
      device.module().launch3d(kernel, maxNq, 1, part.size(), KSelect.blockSelectThreads(maxK), shared,
          device.stream(), Pointer.to(ParamTable.encode("small search", TABLE_ENTRIES, FusedParams.BYTES, part)));
    }
  }

  /**
   * @param hostNorms ||q||^2 of the queries at this device address (L2), or 0 to compute them here
   * @param tf32 the TF32 candidate pass: GEMMs on TF32 tensor cores, and keys (smaller = better) stored for every
   *     metric (-x.q for inner product and cosine) instead of distances
   */
  private void searchGemm(long q, long hostNorms, int nq, int k, long accept, long acceptRowWords, DeviceBuffer outV,
                          DeviceBuffer outI, long outElement, boolean tf32) {
    boolean l2 = metric == Metric.L2;
    long tileN = Math.min(n, Math.max(1024, device.config().flat().tileBudgetBytes() / (4L * nq)));
    if (tileN < n) {
      tileN = tileN / 128 * 128;
    }
    int tiles = (int) ((n + tileN - 1) / tileN);
    // Per tile: WarpSelect once the queries alone fill a wave of warps (one warp keeps one queue over
    // a whole tile row, where BlockSelect's four warps each pay a queue's start-up on a quarter), BlockSelect
    // below that (its queue's threshold, shared by the block, filters more of clustered data's keys)
    KSelect.Algorithm tileSelect = KSelect.warpsFillGpu(device, nq, k) ? KSelect.Algorithm.WARP_SELECT
        : KSelect.Algorithm.BLOCK_SELECT;
    int chunksPerTile = KSelect.chunksFor(device, tileSelect, nq, (int) tileN, k);
    long width = (long) tiles * chunksPerTile * k;
    DeviceBuffer qNorms = null;
    try (DeviceBuffer tile = device.allocate(4L * nq * tileN);
         ChunkedSelection lists = ChunkedSelection.allocate(device, nq, width)) {
      long qNormsAddress = hostNorms;
      if (l2 && hostNorms == 0) {
        qNorms = device.allocate(4L * nq);
        rowNorms(device, q, nq, dims, qNorms.address());
        qNormsAddress = qNorms.address();
      }
      Cublas.Handle blas = device.cublas();
      for (int t = 0; t < tiles; t++) {
        long start = t * tileN;
        int len = (int) Math.min(tileN, n - start);
        // column-major: C(len x nq) = X_tile^T(len x dims) * Q(dims x nq); column q of C = row q of the tile
        if (tf32) {
          blas.sgemmTf32(Cublas.OP_T, Cublas.OP_N, len, nq, dims, 1f, vectors.address() + 4L * start * dims, dims,
              q, dims, 0f, tile.address(), len);
        } else {
          blas.sgemm(Cublas.OP_T, Cublas.OP_N, len, nq, dims, 1f, vectors.address() + 4L * start * dims, dims,
              q, dims, 0f, tile.address(), len);
        }
        int chunkLen = ((len + chunksPerTile - 1) / chunksPerTile + 3) / 4 * 4;
        SelectParams p = new SelectParams().input(tile, nq, len, len).idOffset(start).k(k)
            .acceptBits(accept, acceptRowWords)
            .output(lists.keys(), lists.ids(), width, (long) t * chunksPerTile * k).chunks(chunksPerTile,
                Math.max(1, chunkLen));
        if (l2) {
          p.scales(-2f, 1f).norms(norms.address(), qNormsAddress).clampZero(true);
        } else if (tf32) {
          p.scales(-1f, 1f); // keys: -x.q, kept as they are
        } else {
          p.largest(true);
        }
        KSelect.run(device, tileSelect, p);
      }
      lists.merge(device, new SelectParams().k(k).largest(!l2 && !tf32).output(outV, outI, k, outElement));
    } finally {
      if (qNorms != null) {
        qNorms.close();
      }
    }
  }

  @Override
  protected void freeDeviceMemory() {
    vectors.close();
    if (norms != null) {
      norms.close();
    }
    if (half != null) {
      half.close();
    }
  }
}
