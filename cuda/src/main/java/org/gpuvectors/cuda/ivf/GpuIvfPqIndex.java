package org.gpuvectors.cuda.ivf;

import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.IvfConfig;
import org.gpuvectors.cuda.MemoryPart;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.GroupAddresses;
import org.gpuvectors.cuda.pass.QueryUploads;
import org.gpuvectors.cuda.pass.ResidentIndex;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.pass.SharedSelection;
import org.gpuvectors.cuda.rerank.ExactRerank;
import org.gpuvectors.cuda.rerank.RerankTable;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.KernelModule;
import org.gpuvectors.cuda.select.KSelect;
import org.gpuvectors.cuda.select.SelectParams;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import jcuda.Pointer;

/**
 * IVF-PQ (IVFADC) candidate search over product-quantized codes resident in GPU memory: the vectors are
 * partitioned into {@code nlist} inverted lists ({@link IvfLists}, built on the host) and stored as PQ codes
 * ({@link PqCodebook}: m bytes per vector, in list order). A search probes the {@code nprobe} lists whose
 * centroids are nearest the query and ranks their codes by asymmetric distance through a lookup table, as the
 * codec's CPU search does (lucene-codec {@code ProductQuantizer} / {@code IvfPqField}); the codec re-ranks
 * the candidates with the raw vectors.
 * <ul>
 *   <li>L2: the codes quantize residuals x - centroid_l; per (query, probed list l) table[j][c] =
 *       || (q - centroid_l)_j - codeword_{j,c} ||^2 and the approximate squared distance is
 *       sum_j table[j][code_j] (smallest first).
 *   <li>Inner product and cosine (queries normalised per search, the centroids already by the caller):
 *       table[j][c] = < q_j, codeword_{j,c} > (the same for every list) and the approximate score is
 *       {@code <q, centroid_l> + sum_j table[j][code_j]} (largest first), returned as the score.
 * </ul>
 *
 * <p>A search, per block of queries ({@link IvfSearch#enqueue}): the coarse step of {@link GpuIvfFlatIndex}
 * (the centroid {@link GpuFlatIndex}'s exact search with k = min(nprobe, nlist)); then one of two list scans,
 * each writing per (query, group of probes) the k best (value, ordinal) of its lists, which BlockSelect merges
 * per query, or, for small batches, a scan of every key and one selection:
 * <ul>
 *   <li>precomputed tables (ivf_pq_tables.cu; the default, when a query's table fits in shared memory): the
 *       decomposition of Faiss's IVFPQ, ||q - c - r||^2 = ||q - c||^2 + (||r||^2 + 2 <c, r>) - 2 <q, r>, with the
 *       middle term summed per stored vector at upload ({@code codeTerms}, L2 only), the last one a table of m x
 *       2^bits floats per query ({@code gv_ivf_pq_query_tables}, once per search), and the first per (query,
 *       list) in the scan; {@code gv_ivf_pq_table_scan_kK} loads a query's table into shared memory once for
 *       all its probed lists when the block of queries is large ({@link IvfConfig#groupedMinQueries}: one block per
 *       query, probesPerBlock = nprobe), or once per list for small batches (nprobe blocks per query, for
 *       parallelism). Values equal the full table's up to float rounding (other terms, other order);
 *   <li>small batches ({@link IvfConfig#keysMaxQueries}, {@link #keysRowWidth}): the precomputed tables, but no queue per
 *       (query, list): {@code gv_ivf_pq_table_keys} appends every accepted code's key to the query's row and a
 *       radix selection ({@link KSelect#radixSelect}) keeps the row's k best ({@link IvfSearch#enqueueKeys}); large
 *       batches at k past 512 the same, in blocks of queries, with a block per query that loads its table once for
 *       all its lists ({@code gv_ivf_pq_table_keys_grouped}, {@link #keysBlockQueries});
 *   <li>full tables ({@code gv_ivf_pq_scan_kK}, ivf_pq.cu; when the table does not fit in shared memory, or
 *       forced by {@link IvfConfig#fullTables}): one block per (query, probed list) builds the pair's whole table
 *       (in the CPU's order and float rounding, no FMA) in dynamic shared memory, or in global memory when it
 *       does not fit there (e.g. m = 256 x 256 codewords = 256 KB), then scans the list's codes.
 * </ul>
 *
 * <p>Exact re-rank on the device (when uploaded with the raw vectors: {@link #reranksOnDevice}): a search for k
 * takes the {@link #candidates}(k) = rerankFactor x k best by approximate distance as above, recomputes their
 * distances in FP32 from the raw vectors ({@code gv_rerank_exact_table}, rerank_kernels.cu, the kernel of {@link
 * GpuFlatIndex}'s TF32 candidate pass over a table of indexes: squared L2 as the sum of (x_i - q_i)^2, or the inner
 * product) and keeps the k best (BlockSelect over the candidates' ids): the codec's host re-rank (lucene-codec {@code
 * GpuSegmentSearcher}) done on the device, so a batch never waits on random host reads of raw vectors. Without the
 * raw vectors a search returns the approximate candidates and the caller re-ranks them.
 *
 * <p>Device memory, owned here and returned by {@link #close()}: the codes in list order (interleaved for the
 * scans' coalesced reads, {@link #deviceCodeBytes}), the ordinal at each position, the list offsets, the codebooks,
 * the code terms (L2), the centroid index and, when uploaded with them, the raw vectors by ordinal (normalised for
 * cosine). Threading as {@link GpuIvfFlatIndex}.
 */
public final class GpuIvfPqIndex extends GpuIvfIndex {
  private static final String[] SCAN_KERNELS = KSelect.names("gv_ivf_pq_scan_k");
  private static final String[] TABLE_SCAN_KERNELS = KSelect.names("gv_ivf_pq_table_scan_k");
  private static final String[] TABLE_SCAN_SHORT_KERNELS = KSelect.names("gv_ivf_pq_table_scan_short_k");
  /**
   * Codes of at most this many 16-byte chunks (32 bytes: 128 dimensions at the default pq_m) take the table scans'
   * "_short" builds, which load two chunks of a code at a time instead of eight (ivf_pq_tables.cu's
   * kPqShortCodeChunks): the eight chunks' registers cost those scans blocks an SM.
   */
  public static final int SHORT_CODE_CHUNKS = 2;
  /** Positions per group and bytes per chunk of the device's interleaved code layout (common.cuh's pqCodeChunk). */
  public static final int CODE_GROUP = 32;
  public static final int CODE_CHUNK_BYTES = 16;
  /** Queries per block and threads of {@code gv_ivf_pq_query_tables} (ivf_pq_tables.cu's kPqTableQueries). */
  private static final int TABLE_QUERIES = 16;
  private static final int TABLE_THREADS = 256;
  /** Bytes of codes uploaded per slab (the device lock is held for one slab's copy). */
  private static final int UPLOAD_SLAB_BYTES = 16 << 20;
  /** The small-batch scan's rows (keys and ids, 8 bytes a vector) of one search at most. */
  static final long KEYS_BUDGET_BYTES = 64L << 20;
  private static final String KEYS_GROUPED_KERNEL = "gv_ivf_pq_table_keys_grouped";
  private static final String KEYS_KERNEL = "gv_ivf_pq_table_keys";
  /** Threads of {@code gv_ivf_pq_table_keys} (ivf_pq_tables.cu's kPqKeysThreads). */
  public static final int KEYS_THREADS = 256;
  /** Codes a block of {@code gv_ivf_pq_table_keys} scans at least (ivf_pq_tables.cu's kPqKeysMinCodes). */
  public static final int KEYS_MIN_CODES_PER_BLOCK = 1024;

  /**
   * Parts each probed list of the small-batch scan is split into (blocks of {@code gv_ivf_pq_table_keys} per
   * (query, probe)): enough for the largest list to take blocks of {@link #KEYS_MIN_CODES_PER_BLOCK} codes, as long
   * as the launch holds about four blocks per multiprocessor, at least one part a list, and the grid's y (probes x
   * parts) at most 65,535. A block per list left one query over 16 lists of 10M clustered vectors waiting 93 us
   * (ncu) on its largest list while most multiprocessors idled. The parts of a smaller list past its end return
   * at once.
   */
  static int keysPartsPerList(int nq, int probes, long largestList, int multiprocessors) {
    long bySize = (largestList + KEYS_MIN_CODES_PER_BLOCK - 1) / KEYS_MIN_CODES_PER_BLOCK;
    long byDevice = 4L * multiprocessors / ((long) nq * probes);
    long byGrid = 65_535 / probes;
    return (int) Math.max(1, Math.min(bySize, Math.min(byDevice, byGrid)));
  }
  /** Candidate slots (queries x candidates) re-ranked per launch group: bounds the temporaries (3 x 4 bytes each). */
  private static final long RERANK_BLOCK_SLOTS = 1L << 22;

  private final PqCodebook pq;
  private final DeviceBuffer codes; // n codes in list order, interleaved (deviceCodeBytes)
  private final DeviceBuffer codebooks; // m x 2^bits x subDims floats
  private final DeviceBuffer codeTerms; // L2: n floats, ||r||^2 + 2 <c, r> at each position; else null
  private final DeviceBuffer rawVectors; // n x dims floats by ordinal (cosine: normalised), or null: no device re-rank
  private final int rerankFactor; // candidates per result of the device re-rank; 0 without raw vectors
  private final long[] largestLists; // p -> the sum of the p largest list sizes (IvfLists.largestListsPrefix)

  private GpuIvfPqIndex(GpuDevice device, int n, int dims, Metric metric, int nlist, PqCodebook pq,
                        GpuFlatIndex centroids, DeviceBuffer codes, DeviceBuffer ords, DeviceBuffer offsets,
                        DeviceBuffer codebooks, DeviceBuffer codeTerms, DeviceBuffer rawVectors, int rerankFactor,
                        long[] largestLists) {
    super(device, n, dims, metric, nlist, centroids, ords, offsets);
    this.largestLists = largestLists;
    this.pq = pq;
    this.codes = codes;
    this.codebooks = codebooks;
    this.codeTerms = codeTerms;
    this.rawVectors = rawVectors;
    this.rerankFactor = rerankFactor;
  }

  /**
   * Uploads an IVF-PQ index. codes: n * m bytes in LIST ORDER (position p's code at codes[p * m ..]); lists as
   * for GpuIvfFlatIndex (centroids normalised for COSINE by the caller already, as the CPU builds them). Every
   * sub-code must be below 2^bits (checked when bits < 8).
   */
  public static GpuIvfPqIndex upload(GpuDevice device, IvfLists lists, PqCodebook pq, byte[] codesInListOrder,
                                     int dims, Metric metric) {
    try {
      return upload(device, lists, pq, codesInListOrder, dims, metric, null, 0);
    } catch (IOException e) {
      throw new AssertionError("no raw vectors to read", e);
    }
  }

  /**
   * Uploads an IVF-PQ index as {@link #upload(GpuDevice, IvfLists, PqCodebook, byte[], int, Metric)} and, when
   * {@code rawVectors} is not null, the raw vectors by ordinal (read a slab at a time; normalised for cosine), so
   * that a search re-ranks {@code rerankFactor} x k approximate candidates exactly on the device.
   *
   * @param rawVectors the n vectors by ordinal, or null: searches return the approximate candidates
   * @param rerankFactor approximate candidates per result (>= 1) when rawVectors is given, else ignored
   */
  public static GpuIvfPqIndex upload(GpuDevice device, IvfLists lists, PqCodebook pq, byte[] codesInListOrder,
                                     int dims, Metric metric, GpuFlatIndex.RowSource rawVectors, int rerankFactor)
      throws IOException {
    Objects.requireNonNull(device, "device");
    if (rawVectors != null && (rerankFactor < 1 || rerankFactor > KSelect.MAX_K)) {
      throw new IllegalArgumentException("rerankFactor must be in [1, " + KSelect.MAX_K + "]: " + rerankFactor);
    }
    Objects.requireNonNull(lists, "lists");
    Objects.requireNonNull(pq, "pq");
    Objects.requireNonNull(codesInListOrder, "codesInListOrder");
    Objects.requireNonNull(metric, "metric");
    if (dims < 1 || lists.dims() != dims) {
      throw new IllegalArgumentException("centroids of " + lists.dims() + " floats for dims " + dims);
    }
    if (pq.dims() != dims) {
      throw new IllegalArgumentException("codebooks of m * subDims = " + pq.m() + " * " + pq.subDims()
          + " floats for dims " + dims);
    }
    int n = lists.size();
    long codeBytes = (long) n * pq.m();
    if (codesInListOrder.length != codeBytes) {
      throw new IllegalArgumentException("codes must hold n * m = " + codeBytes + " bytes, got "
          + codesInListOrder.length);
    }
    if (pq.bits() < 8) {
      for (int i = 0; i < codesInListOrder.length; i++) {
        if ((codesInListOrder[i] & 0xFF) >= pq.ksub()) {
          throw new IllegalArgumentException("code byte " + i + " = " + (codesInListOrder[i] & 0xFF)
              + " is not a codeword of " + pq.bits() + " bits");
        }
      }
    }
    GpuFlatIndex centroidIndex = null;
    DeviceBuffer codes = null;
    DeviceBuffer ords = null;
    DeviceBuffer offsets = null;
    DeviceBuffer codebooks = null;
    DeviceBuffer codeTerms = null;
    DeviceBuffer raw = null;
    boolean ok = false;
    try {
      if (rawVectors != null) {
        raw = GpuFlatIndex.uploadRows(device, n, dims, metric == Metric.COSINE, rawVectors);
      }
      centroidIndex = GpuFlatIndex.upload(device, lists.centroids(), lists.nlist(), dims, metric);
      try (GpuDevice.Scope s = device.lock()) {
        codes = device.allocate(Math.max(CODE_CHUNK_BYTES, deviceCodeBytes(n, pq.m())));
      }
      int groupBytes = codeChunks(pq.m()) * CODE_GROUP * CODE_CHUNK_BYTES;
      int groupsPerSlab = Math.max(1, UPLOAD_SLAB_BYTES / groupBytes);
      int groups = (n + CODE_GROUP - 1) / CODE_GROUP;
      byte[] slab = new byte[Math.min(groups, groupsPerSlab) * groupBytes];
      for (int g0 = 0; g0 < groups; g0 += groupsPerSlab) {
        int count = Math.min(groupsPerSlab, groups - g0);
        interleave(codesInListOrder, n, pq.m(), g0, count, slab);
        try (GpuDevice.Scope s = device.lock()) {
          device.upload(slab, 0, count * groupBytes, codes, (long) g0 * groupBytes);
        }
      }
      try (GpuDevice.Scope s = device.lock()) {
        ords = IvfSearch.uploadInts(device, lists.ords());
        offsets = IvfSearch.uploadInts(device, lists.offsets());
        codebooks = device.allocate(4L * pq.codebooks().length);
        device.upload(pq.codebooks(), 0, pq.codebooks().length, codebooks, 0);
        if (metric == Metric.L2) {
          codeTerms = device.allocate(4L * Math.max(1, n));
          computeCodeTerms(device, lists.nlist(), dims, pq, centroidIndex, codes, offsets, codebooks, codeTerms);
        }
        ok = true;
        return new GpuIvfPqIndex(device, n, dims, metric, lists.nlist(), pq, centroidIndex, codes, ords, offsets,
            codebooks, codeTerms, raw, raw == null ? 0 : rerankFactor, lists.largestListsPrefix());
      }
    } finally {
      if (!ok) {
        free(device, centroidIndex, codes, ords, offsets, codebooks, codeTerms, raw);
      }
    }
  }

  private static int codeChunks(int m) {
    return (m + CODE_CHUNK_BYTES - 1) / CODE_CHUNK_BYTES;
  }

  /**
   * Device bytes of n codes of m bytes in the interleaved layout: whole groups of 32 positions, each code padded to
   * whole 16-byte chunks (96-byte codes take 96 bytes; Fashion-MNIST's 196 take 208).
   */
  public static long deviceCodeBytes(int n, int m) {
    return (long) ((n + CODE_GROUP - 1) / CODE_GROUP) * codeChunks(m) * CODE_GROUP * CODE_CHUNK_BYTES;
  }

  /**
   * Writes groups [g0, g0 + count) of the n position-major codes (m bytes each) in the device's interleaved layout
   * into out from offset 0: chunk c of position v (its bytes 16 c .. 16 c + 15, zero past m) at byte
   * ((g * chunks + c) * 32 + v % 32) * 16 of its group g = v / 32, counted from g0; positions past n are zero. So a
   * warp of the list scans, 32 consecutive positions, reads a chunk of all its codes as 512 contiguous bytes.
   * Written here rather than by a kernel: it runs once per upload, beside the slab copies it feeds.
   */
  static void interleave(byte[] codes, int n, int m, int g0, int count, byte[] out) {
    int chunks = codeChunks(m);
    Arrays.fill(out, 0, count * chunks * CODE_GROUP * CODE_CHUNK_BYTES, (byte) 0);
    for (int g = 0; g < count; g++) {
      for (int lane = 0; lane < CODE_GROUP; lane++) {
        long v = (long) (g0 + g) * CODE_GROUP + lane;
        if (v >= n) {
          return;
        }
        for (int c = 0; c < chunks; c++) {
          int from = c * CODE_CHUNK_BYTES;
          int dst = ((g * chunks + c) * CODE_GROUP + lane) * CODE_CHUNK_BYTES;
          System.arraycopy(codes, (int) (v * m) + from, out, dst, Math.min(CODE_CHUNK_BYTES, m - from));
        }
      }
    }
  }

  /**
   * Enqueues {@code gv_ivf_pq_code_terms}: at each position of list l, ||r||^2 + 2 <centroid_l, r> of its code's
   * reconstruction r (the precomputed-table scan's per-vector term, L2). Caller holds the lock; the stream orders
   * it before every search.
   */
  private static void computeCodeTerms(GpuDevice device, int nlist, int dims, PqCodebook pq, GpuFlatIndex centroids,
                                       DeviceBuffer codes, DeviceBuffer offsets, DeviceBuffer codebooks,
                                       DeviceBuffer codeTerms) {
    if (nlist == 0) {
      return;
    }
    IvfPqScanParams p = new IvfPqScanParams();
    p.codes = codes.address();
    p.listOffsets = offsets.address();
    p.centroids = centroids.vectorsAddress();
    p.codebooks = codebooks.address();
    p.codeTerms = codeTerms.address();
    p.dims = dims;
    p.m = pq.m();
    p.bits = pq.bits();
    device.module().launch("gv_ivf_pq_code_terms", nlist, 1, 128, 0, device.stream(), Pointer.to(p.encode()));
  }

  /** The product quantizer the codes were made with. */
  public PqCodebook codebook() {
    return pq;
  }

  /**
   * Device memory held by this index: codes, ordinals, offsets, codebooks, code terms, the centroid index and the
   * raw vectors when resident.
   */
  @Override
  public DeviceBytes deviceBytesByPart() {
    return DeviceBytes.builder()
        .add(MemoryPart.CENTROIDS, centroids.deviceBytes())
        .add(MemoryPart.LISTS, ords.bytes() + offsets.bytes())
        .add(MemoryPart.PQ_CODES, codes.bytes())
        .add(MemoryPart.PQ_CODEBOOKS, codebooks.bytes() + (codeTerms == null ? 0 : codeTerms.bytes()))
        .add(MemoryPart.VECTORS, rawVectors == null ? 0 : rawVectors.bytes())
        .build();
  }

  /**
   * Whether searches re-rank their approximate candidates exactly on the device (the raw vectors are resident):
   * results are then the exact k best of the candidates, with exact distances; else the approximate candidates.
   */
  @Override
  public boolean reranksOnDevice() {
    return rawVectors != null;
  }

  /** Approximate candidates per result of the device re-rank (0 when {@link #reranksOnDevice} is false). */
  public int rerankFactor() {
    return rerankFactor;
  }

  /** Approximate candidates a device re-rank for k scans for: {@link #candidates(int, int)} at this index's factor. */
  public int candidates(int k) {
    return candidates(rerankFactor, k);
  }

  /**
   * Approximate candidates a re-rank for k takes at {@code factor} candidates per result: factor x k, at most {@link
   * KSelect#MAX_K} (what the device selects), but at least k. The codec's host re-rank takes as many (its
   * IvfPqField.rerankDepth), so that both re-rank the same candidates.
   */
  public static int candidates(int factor, int k) {
    return (int) Math.max(k, Math.min(KSelect.MAX_K, (long) factor * k));
  }

  /** A group's search in a pass: its queries in their {@link SearchParams.Ivf#nprobe} nearest lists. */
  @Override
  protected void enqueue(SearchGroup group, GroupAddresses at) {
    enqueueSearch(at.queries(), at.norms(), group.numQueries(), group.k(), IvfSearch.nprobe(this, group.params()),
        at.accept(), at.acceptRowWords(), at.outV(), at.outI(), at.outAt(), at.feed());
  }

  @Override
  protected SharedSelection.Planner sharedSelections() {
    return SharedKeySelection::plan;
  }

  @Override
  protected boolean readsQueriesBlockByBlock() {
    return true;
  }

  /**
   * Dynamic shared memory of a scan block: the query or residual (dims rounded up to 4 floats), 32 floats of
   * block-sum scratch, and the lookup table when it is kept there (ivf_pq.cu's pqTableOffset).
   */
  int sharedBytes(boolean tableInShared) {
    return 4 * ((dims + 3) / 4 * 4 + 32) + (tableInShared ? 4 * pq.tableFloats() : 0);
  }

  /**
   * Whether the scan for k keeps the lookup table in shared memory: when it fits in what the device lets the
   * kernel's blocks opt into, beside the kernel's static shared memory (the warp merge). Caller holds the lock.
   */
  boolean tableInShared(int k) {
    return !ivf().globalTables()
        && sharedBytes(true) <= device.module().maxDynamicSharedBytes(KSelect.kernel(SCAN_KERNELS, k));
  }

  /** Threads of a table-scan block for k: 8 warps up to the 128 bucket, else the bucket's (ivf_pq_tables.cu's PqScanWarps). */
  static int tableScanThreads(int k) {
    return KSelect.bucket(k) <= 128 ? 256 : KSelect.blockSelectThreads(k);
  }

  /** Dynamic shared memory of a table-scan block: the query's table (rounded up to 4 floats) and term 1 per probe. */
  int tableScanSharedBytes(int probesPerBlock) {
    return 4 * ((pq.tableFloats() + 3) / 4 * 4 + probesPerBlock);
  }

  /**
   * Whether the scans through precomputed query tables may run: not forced off (tests), and m within a grid
   * dimension (the query-table kernel's grid.y is m).
   */
  private boolean precomputedTablesAllowed() {
    IvfConfig ivf = ivf();
    return !ivf.fullTables() && !ivf.globalTables() && pq.m() <= 65535;
  }

  /**
   * Probes per table-scan block for a block of {@code nq} queries probing {@code probes} lists each, for k: all
   * (from {@link IvfConfig#groupedMinQueries} queries) or 1; 0 when the precomputed tables are not used (forced off, or
   * the table does not fit in shared memory, or m is past a grid dimension). Caller holds the lock.
   */
  int probesPerBlock(int nq, int probes, int k) {
    if (!precomputedTablesAllowed()) {
      return 0;
    }
    int max = device.module().maxDynamicSharedBytes(tableScanKernel(k));
    if (nq >= ivf().groupedMinQueries() && tableScanSharedBytes(probes) <= max) {
      return probes;
    }
    return tableScanSharedBytes(1) <= max ? 1 : 0;
  }

  /**
   * Enqueues the search of {@code nq} queries at device address {@code queries} (row-major, already normalised
   * for cosine; {@code queryNorms}: their ||q||^2 for L2, or 0: for the coarse step) in their {@code nprobe}
   * nearest lists without waiting: per query the k best (approximate distance or score, ordinal) pairs at
   * {@code outV / outI + 4 * (outElement + q * k)}, empty slots id -1. Accept masks by ordinal: see {@link
   * SelectParams#acceptBits(long, long)}. Caller holds the device lock; temporaries return to the pool.
   */
  void enqueueSearch(long queries, long queryNorms, int nq, int k, int nprobe, long acceptAddress, long acceptRowWords,
                     DeviceBuffer outV, DeviceBuffer outI, long outElement) {
    enqueueSearch(queries, queryNorms, nq, k, nprobe, acceptAddress, acceptRowWords, outV, outI, outElement, null);
  }

  /**
   * {@link #enqueueSearch(long, long, int, int, int, long, long, DeviceBuffer, DeviceBuffer, long)} of queries that
   * may still be {@code arriving} (null: all on the device): the batch is searched in blocks ({@link #queryBlocks}),
   * each after its queries are on the device, so that the next block is staged and copied while this one is
   * searched. Before, a 10k x 768 batch's 31 MB were staged and copied before the first kernel (2M x 768: the
   * host's enqueue of the pass 3-5 ms, the GPU idle meanwhile).
   */
  void enqueueSearch(long queries, long queryNorms, int nq, int k, int nprobe, long acceptAddress, long acceptRowWords,
                     DeviceBuffer outV, DeviceBuffer outI, long outElement, QueryUploads.Feed arriving) {
    ensureOpen();
    boolean rerank = rawVectors != null && !ivf().skipDeviceRerank();
    int kc = rerank ? candidates(k) : k;
    QueryUploads.forEachBlock(queryBlocks(nq, kc, rerank, arriving != null), dims, queries, queryNorms, acceptAddress,
        acceptRowWords, arriving, b -> {
          long out = outElement + (long) b.first() * k;
          if (rerank) {
            enqueueReranked(b.queries(), b.norms(), b.count(), k, kc, nprobe, b.accept(), acceptRowWords, outV, outI,
                out);
          } else {
            enqueueAdc(b.queries(), b.norms(), b.count(), k, nprobe, b.accept(), acceptRowWords, outV, outI, out);
          }
        });
  }

  /**
   * Where the blocks of a search of {@code nq} queries for {@code kc} candidates each start, and nq at the end:
   * with the device re-rank, blocks of at most {@link #RERANK_BLOCK_SLOTS} / kc queries (its temporaries), else one
   * block (the approximate search blocks itself); queries still arriving start with a block of at most {@link
   * GpuFlatIndex#FIRST_QUERY_BLOCK} ({@link QueryUploads#blocks}).
   */
  static int[] queryBlocks(int nq, int kc, boolean rerank, boolean arriving) {
    int max = rerank ? (int) Math.max(1, RERANK_BLOCK_SLOTS / kc) : Integer.MAX_VALUE;
    return QueryUploads.blocks(nq, arriving ? GpuFlatIndex.FIRST_QUERY_BLOCK : max, max);
  }

  /**
   * The device re-rank of {@code nq} queries (arguments as {@link #enqueueSearch}): their {@code kc} best by
   * approximate distance ({@link #enqueueAdc}), then their exact re-rank into the k best ({@link #enqueueRerank}).
   * Asynchronous; the temporaries return to the pool (reuse is ordered on the stream).
   */
  private void enqueueReranked(long queries, long queryNorms, int nq, int k, int kc, int nprobe, long acceptAddress,
                               long acceptRowWords, DeviceBuffer outV, DeviceBuffer outI, long outElement) {
    try (DeviceBuffer candV = device.allocate(4L * nq * kc);
         DeviceBuffer candI = device.allocate(4L * nq * kc)) {
      enqueueAdc(queries, queryNorms, nq, kc, nprobe, acceptAddress, acceptRowWords, candV, candI, 0);
      enqueueRerank(queries, nq, k, candV.address(), candI.address(), outV, outI, outElement);
    }
  }

  /**
   * The device re-rank's second half (arguments as {@link #enqueueSearch}): the {@link #candidates}(k) approximate
   * candidates per query at device addresses {@code candValues} / {@code candIds} (row q at q x candidates(k)) re-ranked
   * into the k best ({@link #enqueueRerank(GpuDevice, RerankTable, int, int, int, int, Metric, long, long, DeviceBuffer,
   * DeviceBuffer, long)} with this index alone in the table).
   */
  void enqueueRerank(long queries, int nq, int k, long candValues, long candIds, DeviceBuffer outV, DeviceBuffer outI,
                     long outElement) {
    RerankTable table = new RerankTable();
    table.add(0, rawVectors.address(), queries);
    enqueueRerank(device, table, nq, k, candidates(k), dims, metric, candValues, candIds, outV, outI, outElement);
  }

  /**
   * The exact re-rank of {@code rows} rows of {@code kc} approximate candidates (device addresses {@code candValues} /
   * {@code candIds}, row r at r x kc) of the indexes of {@code table} (their raw vectors, their queries; one metric
   * and dims): the candidates' exact FP32 keys ({@code gv_rerank_exact_table}: squared L2, or -x.q; an empty slot's
   * key is +inf), then each row's k best keys into the output from element {@code outElement}, k per row (inner
   * product back to +x.q): selected by the re-rank kernel itself for at most {@link #FUSED_SELECT_MAX_ROWS} rows of
   * at most {@link IvfConfig#fusedSelectMaxCandidates} candidates (one launch fewer), else, where that kernel cannot
   * run, by a selection launch over the candidates' ids ({@link KSelect#mergeCandidates}). Asynchronous; the
   * temporaries return to the pool (reuse is ordered on the stream). Caller holds the lock.
   */
  static void enqueueRerank(GpuDevice device, RerankTable table, int rows, int k, int kc, int dims, Metric metric,
                            long candValues, long candIds, DeviceBuffer outV, DeviceBuffer outI, long outElement) {
    boolean fused = rows <= FUSED_SELECT_MAX_ROWS && kc <= device.config().ivf().fusedSelectMaxCandidates();
    // no stats: the TF32 certificate's inputs are not needed here
    ExactRerank rerank = new ExactRerank(metric, dims, rows, kc, k).candidates(candValues, candIds);
    if (fused) {
      rerank.output(outV.address() + 4L * outElement, outI.address() + 4L * outElement).enqueueSelecting(device, table);
      return;
    }
    try (DeviceBuffer exact = device.allocate(4L * rows * kc)) {
      rerank.enqueueThenMerge(device, table, exact, outV, outI, outElement);
    }
  }

  /**
   * The most rows whose re-rank selects itself: a one-query pass, or a few queries' (the small batches of
   * concurrent searches); a batch keeps the BlockSelect launch, whose rows fill the GPU anyway.
   */
  static final int FUSED_SELECT_MAX_ROWS = 64;

  /** The ivf part of this index's device's configuration. */
  private IvfConfig ivf() {
    return device.config().ivf();
  }

  /** Device address of the raw vectors (the device re-rank's); caller holds the lock. */
  long rawVectorsAddress() {
    ensureOpen();
    return rawVectors.address();
  }

  /**
   * The row width of the small-batch scan when this index's search of {@code nq} queries for k may share its
   * selection with other segments' (BatchSearch, {@link SharedKeySelection}): the keys path with the re-rank on
   * the device, so that the selection's output (the candidates) is what {@link #enqueueRerank} reads; 0 otherwise.
   * Caller holds the lock.
   */
  long sharedKeysRowWidth(int nq, int nprobe) {
    ensureOpen();
    if (rawVectors == null || ivf().skipDeviceRerank() || nq < 1) {
      return 0;
    }
    return keysRowWidth(nq, probes(nprobe));
  }

  /**
   * Whether the coarse step of {@code nq} queries joins the other members' table launch in a scan over several
   * indexes ({@link #enqueueCoarseTable}) rather than running alone from {@link #enqueueProbes}.
   */
  boolean coarseFitsTable(int nq, int nprobe) {
    return !ivf().coarseAlone() && centroids.fitsSmallTable(nq, probes(nprobe));
  }

  /**
   * One index's share of a small-batch scan over several indexes ({@link #enqueueKeysTable}): its queries' probe
   * lists (the coarse step's output, owned here until {@link #close}), where its keys go, and its coarse step as an
   * entry of a table launch ({@link GpuFlatIndex#enqueueSmallTable}), or null when it was enqueued alone.
   */
  record KeysScan(GpuIvfPqIndex index, DeviceBuffer probeDistances, DeviceBuffer probeLists, IvfSearch.KeyRows rows,
                  byte[] coarseEntry) implements AutoCloseable {
    @Override
    public void close() {
      probeDistances.close();
      probeLists.close();
    }
  }

  /**
   * The small-batch scan of {@code nq} queries (arguments as {@link #enqueueSearch}) without its selection, as part
   * of a scan over several indexes: the coarse step (now, or as an entry of one table launch for all, {@link
   * #enqueueCoarseTable}), then every accepted code's key appended to the query's row at {@code rows} in one table
   * launch for all ({@link #enqueueKeysTable}); the caller selects the candidates ({@link
   * IvfSearch.KeyBuffers#select}) and re-ranks them ({@link #enqueueRerank}). Caller holds the lock.
   */
  KeysScan enqueueProbes(long queries, long queryNorms, int nq, int nprobe, long acceptAddress, long acceptRowWords,
                         IvfSearch.RowsAt rows) {
    ensureOpen();
    int probes = probes(nprobe);
    DeviceBuffer probeDistances = device.allocate(4L * nq * probes);
    DeviceBuffer probeLists = null;
    boolean ok = false;
    try {
      probeLists = device.allocate(4L * nq * probes);
      byte[] entry = coarseFitsTable(nq, nprobe)
          ? centroids.smallTableEntry(queries, nq, probes, probeDistances, probeLists) : null;
      if (entry == null) {
        IvfSearch.coarse(centroids, queries, queryNorms, nq, probes, probeDistances, probeLists);
      }
      KeysScan scan = new KeysScan(this, probeDistances, probeLists, IvfSearch.KeyRows.at(rows, queries, nq, probes,
          probeLists.address(), acceptAddress, acceptRowWords), entry);
      ok = true;
      return scan;
    } finally {
      if (!ok) {
        probeDistances.close();
        if (probeLists != null) {
          probeLists.close();
        }
      }
    }
  }

  /**
   * The coarse steps of {@code scans} that wait for a table launch ({@link KeysScan#coarseEntry}), in {@link
   * GpuFlatIndex#enqueueSmallTable} launches. Asynchronous; caller holds the lock.
   */
  static void enqueueCoarseTable(GpuDevice device, List<KeysScan> scans) {
    List<byte[]> entries = new java.util.ArrayList<>();
    int maxNq = 0, maxK = 0, dims = 0;
    for (KeysScan s : scans) {
      if (s.coarseEntry() != null) {
        if (dims != 0 && s.index().dims != dims) {
          throw new IllegalArgumentException("coarse steps of one table launch must share dims: " + dims + ", "
              + s.index().dims);
        }
        entries.add(s.coarseEntry());
        maxNq = Math.max(maxNq, s.rows().nq());
        maxK = Math.max(maxK, s.rows().probes());
        dims = s.index().dims;
      }
    }
    if (!entries.isEmpty()) {
      GpuFlatIndex.enqueueSmallTable(device, entries, maxNq, maxK, dims);
    }
  }

  /**
   * The small-batch scans of several indexes, {@link IvfPqScanTable#MAX_ENTRIES} a launch: their query tables
   * ({@code gv_ivf_pq_query_tables_table}) and their keys scans ({@code gv_ivf_pq_table_keys_table}), each a launch
   * over a table of the indexes' parameters instead of two launches per index. Asynchronous; caller holds the lock.
   */
  static void enqueueKeysTable(GpuDevice device, List<KeysScan> scans) {
    for (int from = 0; from < scans.size(); from += IvfPqScanTable.MAX_ENTRIES) {
      List<KeysScan> part = scans.subList(from, Math.min(scans.size(), from + IvfPqScanTable.MAX_ENTRIES));
      long tableFloats = 0;
      for (KeysScan s : part) {
        tableFloats += (long) s.index().pq.tableFloats() * s.rows().nq();
      }
      try (DeviceBuffer tables = device.allocate(4L * Math.max(1, tableFloats))) {
        List<IvfPqScanParams> entries = new java.util.ArrayList<>();
        long at = tables.address();
        int rows = 0, maxNq = 0, maxM = 0, maxProbes = 0, shared = 0;
        long largest = 0;
        boolean allShort = true; // the short build when every entry's codes are short (both score any length)
        for (KeysScan s : part) {
          GpuIvfPqIndex index = s.index();
          IvfSearch.KeyRows r = s.rows();
          entries.add(index.keysParams(r, at));
          at += 4L * index.pq.tableFloats() * r.nq();
          rows += r.nq();
          maxNq = Math.max(maxNq, r.nq());
          maxM = Math.max(maxM, index.pq.m());
          maxProbes = Math.max(maxProbes, r.probes());
          shared = Math.max(shared, index.tableScanSharedBytes(1));
          largest = Math.max(largest, index.largestLists[1]);
          allShort &= index.shortCodes();
        }
        Pointer args = Pointer.to(IvfPqScanTable.encode(entries));
        KernelModule module = device.module();
        module.launch3d("gv_ivf_pq_query_tables_table", (maxNq + TABLE_QUERIES - 1) / TABLE_QUERIES, maxM,
            entries.size(), TABLE_THREADS, 0, device.stream(), args);
        int parts = keysPartsPerList(rows, maxProbes, largest, device.multiprocessorCount());
        String kernel = allShort ? KEYS_TABLE_KERNEL + SHORT_SUFFIX : KEYS_TABLE_KERNEL;
        module.allowDynamicShared(kernel, shared);
        module.launch3d(kernel, maxNq, maxProbes * parts, entries.size(), KEYS_THREADS, shared,
            device.stream(), args, Pointer.to(new int[] {parts}));
      }
    }
  }

  private static final String KEYS_TABLE_KERNEL = "gv_ivf_pq_table_keys_table";
  private static final String SHORT_SUFFIX = "_short";

  /** Whether this index's codes take the scans' short builds ({@link #SHORT_CODE_CHUNKS}). */
  private boolean shortCodes() {
    return codeChunks(pq.m()) <= SHORT_CODE_CHUNKS;
  }

  /** The build of keys-scan kernel {@code name} for this index's codes. */
  private String forCodes(String name) {
    return shortCodes() ? name + SHORT_SUFFIX : name;
  }

  /** The table-scan kernel of k's bucket for this index's codes. */
  private String tableScanKernel(int k) {
    return KSelect.kernel(shortCodes() ? TABLE_SCAN_SHORT_KERNELS : TABLE_SCAN_KERNELS, k);
  }

  /**
   * The approximate search (arguments as {@link #enqueueSearch}): per query the k best by approximate distance or
   * score. Caller holds the device lock.
   */
  private void enqueueAdc(long queries, long queryNorms, int nq, int k, int nprobe, long acceptAddress,
                          long acceptRowWords, DeviceBuffer outV, DeviceBuffer outI, long outElement) {
    int probes = probes(nprobe);
    long rowWidth = keysRowWidth(nq, probes);
    if (rowWidth > 0) {
      IvfSearch.enqueueKeys(device, centroids, metric.largestFirst(), queries, queryNorms, nq, k, probes, rowWidth,
          typicalKeysRow(probes), acceptAddress, acceptRowWords, outV, outI, outElement, this::keysScan);
      return;
    }
    int keysBlock = keysBlockQueries(nq, k, probes);
    if (keysBlock > 0) {
      long width = Math.max(1, largestLists[Math.min(probes, nlist)]);
      for (int q0 = 0; q0 < nq; q0 += keysBlock) {
        int count = Math.min(keysBlock, nq - q0);
        IvfSearch.enqueueKeys(device, centroids, metric.largestFirst(), queries + 4L * q0 * dims,
            queryNorms == 0 ? 0 : queryNorms + 4L * q0, count, k, probes, width, 0, // many rows: the passes
            acceptAddress == 0 ? 0 : acceptAddress + 8L * q0 * acceptRowWords, acceptRowWords, outV, outI,
            outElement + (long) q0 * k, this::keysScanGrouped);
      }
      return;
    }
    int perBlock = probesPerBlock(nq, probes, k);
    if (perBlock > 0) {
      String kernel = tableScanKernel(k);
      int shared = tableScanSharedBytes(perBlock);
      device.module().allowDynamicShared(kernel, shared);
      IvfSearch.enqueue(device, centroids, dims, metric.largestFirst(), queries, queryNorms, nq, k, probes,
          probes / perBlock, 4L * pq.tableFloats(), acceptAddress, acceptRowWords, outV, outI, outElement,
          b -> tableScanBlock(b, kernel, shared, perBlock));
      return;
    }
    String kernel = KSelect.kernel(SCAN_KERNELS, k);
    boolean inShared = tableInShared(k);
    int shared = sharedBytes(inShared);
    device.module().allowDynamicShared(kernel, shared);
    long tableBytes = inShared ? 0 : 4L * pq.tableFloats();
    IvfSearch.enqueue(device, centroids, dims, metric.largestFirst(), queries, queryNorms, nq, k, probes, probes,
        probes * tableBytes, acceptAddress, acceptRowWords, outV, outI, outElement,
        b -> scanBlock(b, kernel, shared, tableBytes));
  }

  /**
   * The keys a query's row of the small-batch scan typically holds: {@code probes} x the mean list (its width, {@link
   * #keysRowWidth}, is the sum of the largest lists: at 10M x 128 and nprobe 8, 81k keys for ~25k), what the radix
   * selection's path is chosen by ({@link SelectParams#typicalLen}).
   */
  long typicalKeysRow(int probes) {
    return (long) Math.ceil(Math.min(probes, nlist) * (double) size() / nlist);
  }

  /**
   * The row width of the small-batch scan of {@code nq} queries probing {@code probes} lists each: the sum of the
   * {@code probes} largest lists (no query's lists hold more), or 0 when that scan is not taken: more than {@link
   * IvfConfig#keysMaxQueries} queries, rows past {@link #KEYS_BUDGET_BYTES}, the full tables forced, or the table past the
   * kernel's shared memory. Caller holds the lock.
   */
  long keysRowWidth(int nq, int probes) {
    if (nq > ivf().keysMaxQueries() || !precomputedTablesAllowed()) {
      return 0;
    }
    long width = Math.max(1, largestLists[Math.min(probes, nlist)]);
    if (8L * nq * width > KEYS_BUDGET_BYTES || width > Integer.MAX_VALUE
        || tableScanSharedBytes(1) > device.module().maxDynamicSharedBytes(forCodes(KEYS_KERNEL))) {
      return 0;
    }
    return width;
  }

  /**
   * Queries per block of the keys scan of a batch past {@link IvfConfig#keysMaxQueries} at k >= {@link
   * IvfConfig#keysBatchMinK}: as
   * many as {@link IvfSearch#BLOCK_BUDGET_BYTES} of rows (8 bytes a key) and query tables hold, at least one; or 0
   * when that scan is not taken (smaller k, the small-batch scan's batch, the full tables forced, or a query's table
   * and terms past the kernel's shared memory). Caller holds the lock.
   */
  int keysBlockQueries(int nq, int k, int probes) {
    IvfConfig ivf = ivf();
    if (nq <= ivf.keysMaxQueries() || k < ivf.keysBatchMinK() || !precomputedTablesAllowed()
        || tableScanSharedBytes(probes) > device.module().maxDynamicSharedBytes(forCodes(KEYS_GROUPED_KERNEL))) {
      return 0;
    }
    long width = Math.max(1, largestLists[Math.min(probes, nlist)]);
    if (width > Integer.MAX_VALUE) {
      return 0;
    }
    long block = Math.min(ivf.keysBatchMaxBlock(), IvfSearch.BLOCK_BUDGET_BYTES / (8L * width + 4L * pq.tableFloats()));
    return (int) Math.max(1, Math.min(nq, block));
  }

  /**
   * The keys scan of a block of a large batch: the rows' query tables (term 3), then {@code
   * gv_ivf_pq_table_keys_grouped}, a block per query over all its lists (the table loaded once).
   */
  private void keysScanGrouped(IvfSearch.KeyRows r) {
    try (DeviceBuffer tables = device.allocate(4L * pq.tableFloats() * r.nq())) {
      IvfPqScanParams p = keysParams(r, tables.address());
      p.probesPerBlock = r.probes();
      Pointer args = Pointer.to(p.encode());
      KernelModule module = device.module();
      int shared = tableScanSharedBytes(r.probes());
      String kernel = forCodes(KEYS_GROUPED_KERNEL);
      module.allowDynamicShared(kernel, shared);
      module.launch("gv_ivf_pq_query_tables", (r.nq() + TABLE_QUERIES - 1) / TABLE_QUERIES, pq.m(), TABLE_THREADS, 0,
          device.stream(), args);
      module.launch(kernel, r.nq(), 1, KEYS_THREADS, shared, device.stream(), args);
    }
  }

  /**
   * The small-batch scan: the rows' query tables (term 3), then {@code gv_ivf_pq_table_keys}, grid (query, probe x
   * {@link #keysPartsPerList}): every accepted code's key and ordinal appended to its query's row.
   */
  private void keysScan(IvfSearch.KeyRows r) {
    try (DeviceBuffer tables = device.allocate(4L * pq.tableFloats() * r.nq())) {
      IvfPqScanParams p = keysParams(r, tables.address());
      Pointer args = Pointer.to(p.encode());
      KernelModule module = device.module();
      int shared = tableScanSharedBytes(1);
      String kernel = forCodes(KEYS_KERNEL);
      module.allowDynamicShared(kernel, shared);
      module.launch("gv_ivf_pq_query_tables", (r.nq() + TABLE_QUERIES - 1) / TABLE_QUERIES, pq.m(), TABLE_THREADS, 0,
          device.stream(), args);
      int parts = keysPartsPerList(r.nq(), r.probes(), largestLists[1], device.multiprocessorCount());
      module.launch(kernel, r.nq(), r.probes() * parts, KEYS_THREADS, shared, device.stream(), args,
          Pointer.to(new int[] {parts}));
    }
  }

  /** The small-batch scan's parameters for rows {@code r}, its queries' tables at device address {@code tables}. */
  private IvfPqScanParams keysParams(IvfSearch.KeyRows r, long tables) {
    IvfPqScanParams p = params(r.queries(), r.nq(), r.probes(), r.probeLists(), r.accept(), r.acceptRowWords());
    p.outK = r.keys();
    p.outIdx = r.ids();
    p.outRowStride = r.rowWidth();
    p.rowLengths = r.rowLengths();
    p.k = 1; // unused: every accepted code is written
    p.probesPerBlock = 1;
    p.tables = tables;
    p.codeTerms = codeTerms == null ? 0 : codeTerms.address();
    return p;
  }

  /** The parameters both scans share, for block {@code b}. */
  private IvfPqScanParams params(IvfSearch.Block b) {
    IvfPqScanParams p = params(b.queries(), b.nq(), b.probes(), b.probeLists(), b.accept(), b.acceptRowWords());
    p.outK = b.candValues();
    p.outIdx = b.candIds();
    p.outRowStride = (long) b.slots() * b.k();
    p.k = b.k();
    return p;
  }

  /** The parameters every scan shares: the index, the queries and their lists and masks. */
  private IvfPqScanParams params(long queries, int nq, int probes, long probeLists, long accept, long acceptRowWords) {
    IvfPqScanParams p = new IvfPqScanParams();
    p.codes = codes.address();
    p.ords = ords.address();
    p.listOffsets = offsets.address();
    p.queries = queries;
    p.centroids = centroids.vectorsAddress();
    p.codebooks = codebooks.address();
    p.probes = probeLists;
    p.acceptBits = accept;
    p.acceptRowWords = acceptRowWords;
    p.dims = dims;
    p.nprobe = probes;
    p.metric = metric == Metric.L2 ? 0 : 1;
    p.m = pq.m();
    p.bits = pq.bits();
    p.numQueries = nq;
    return p;
  }

  /**
   * One block's precomputed-table scan: the block's query tables (term 3, {@code gv_ivf_pq_query_tables}: grid
   * x = groups of 16 queries, y = sub-quantizer), then {@code gv_ivf_pq_table_scan_kK}, grid (query, probe group).
   */
  private void tableScanBlock(IvfSearch.Block b, String kernel, int shared, int perBlock) {
    try (DeviceBuffer tables = device.allocate(4L * pq.tableFloats() * b.nq())) {
      IvfPqScanParams p = params(b);
      p.tables = tables.address();
      p.codeTerms = codeTerms == null ? 0 : codeTerms.address();
      p.probesPerBlock = perBlock;
      Pointer args = Pointer.to(p.encode());
      KernelModule module = device.module();
      module.launch("gv_ivf_pq_query_tables", (b.nq() + TABLE_QUERIES - 1) / TABLE_QUERIES, pq.m(), TABLE_THREADS, 0,
          device.stream(), args);
      module.launch(kernel, b.nq(), b.slots(), tableScanThreads(b.k()), shared, device.stream(), args);
    }
  }

  /** One block's full-table scan: {@code tableBytes} per pair of global-memory tables, 0 when they are in shared memory. */
  private void scanBlock(IvfSearch.Block b, String kernel, int shared, long tableBytes) {
    try (DeviceBuffer tables = tableBytes == 0 ? null : device.allocate(tableBytes * b.nq() * b.probes())) {
      IvfPqScanParams p = params(b);
      p.tables = tables == null ? 0 : tables.address();
      device.module().launch(kernel, b.nq(), b.probes(), KSelect.blockSelectThreads(b.k()), shared, device.stream(),
          Pointer.to(p.encode()));
    }
  }

  @Override
  protected void freeDeviceMemory() {
    free(device, centroids, codes, ords, offsets, codebooks, codeTerms, rawVectors);
  }
}
