package org.gpuvectors.cuda;

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
 * The tables' entries and the sums over j are computed in the CPU's order and float rounding (no FMA), so
 * only {@code <q, centroid>} (a float dot product in another order) and the query normalisation differ from the
 * CPU's by rounding.
 *
 * <p>A search, per block of queries ({@link IvfSearch#enqueue}): the coarse step of {@link GpuIvfFlatIndex}
 * (the centroid {@link GpuFlatIndex}'s exact search with k = min(nprobe, nlist)); then {@code gv_ivf_pq_scan_kK}
 * (ivf_pq.cu), one block per (query, probed list): the lookup table of {@code m * 2^bits} floats in dynamic
 * shared memory (opted in past 48 KB up to the device's per-block maximum), or, when it does not fit there
 * (e.g. m = 256 x 256 codewords = 256 KB), in global memory, one table per pair allocated with the block's
 * temporaries; the list's codes one vector per lane into per-warp WarpSelect queues, merged per block to the
 * pair's k best (value, ordinal); then BlockSelect merges each query's nprobe * k candidates.
 *
 * <p>Device memory, owned here and returned by {@link #close()}: the codes in list order, the ordinal at each
 * position, the list offsets, the codebooks and the centroid index. Threading as {@link GpuIvfFlatIndex}.
 */
public final class GpuIvfPqIndex implements DeviceIndex {
  private static final String[] SCAN_KERNELS = KSelect.names("gv_ivf_pq_scan_k");
  /** Bytes of codes uploaded per slab (the device lock is held for one slab's copy). */
  private static final int UPLOAD_SLAB_BYTES = 16 << 20;
  /** Tests: keep the lookup tables in global memory even when they fit in shared memory. */
  static volatile boolean forceGlobalTables;

  private final GpuDevice device;
  private final int n;
  private final int dims;
  private final Metric metric;
  private final int nlist;
  private final PqCodebook pq;
  private final GpuFlatIndex centroids;
  private final DeviceBuffer codes; // n x m bytes, in list order
  private final DeviceBuffer ords; // n: the ordinal at each position
  private final DeviceBuffer offsets; // nlist + 1
  private final DeviceBuffer codebooks; // m x 2^bits x subDims floats
  private boolean closed;

  private GpuIvfPqIndex(GpuDevice device, int n, int dims, Metric metric, int nlist, PqCodebook pq,
                        GpuFlatIndex centroids, DeviceBuffer codes, DeviceBuffer ords, DeviceBuffer offsets,
                        DeviceBuffer codebooks) {
    this.device = device;
    this.n = n;
    this.dims = dims;
    this.metric = metric;
    this.nlist = nlist;
    this.pq = pq;
    this.centroids = centroids;
    this.codes = codes;
    this.ords = ords;
    this.offsets = offsets;
    this.codebooks = codebooks;
  }

  /**
   * Uploads an IVF-PQ index. codes: n * m bytes in LIST ORDER (position p's code at codes[p * m ..]); lists as
   * for GpuIvfFlatIndex (centroids normalised for COSINE by the caller already, as the CPU builds them). Every
   * sub-code must be below 2^bits (checked when bits < 8).
   */
  public static GpuIvfPqIndex upload(GpuDevice device, IvfLists lists, PqCodebook pq, byte[] codesInListOrder,
                                     int dims, Metric metric) {
    Objects.requireNonNull(device, "device");
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
    boolean ok = false;
    try {
      centroidIndex = GpuFlatIndex.upload(device, lists.centroids(), lists.nlist(), dims, metric);
      try (GpuDevice.Scope s = device.lock()) {
        codes = device.allocate(Math.max(4, codeBytes));
      }
      for (int from = 0; from < codesInListOrder.length; from += UPLOAD_SLAB_BYTES) {
        int count = Math.min(UPLOAD_SLAB_BYTES, codesInListOrder.length - from);
        try (GpuDevice.Scope s = device.lock()) {
          device.upload(codesInListOrder, from, count, codes, from);
        }
      }
      try (GpuDevice.Scope s = device.lock()) {
        ords = IvfSearch.uploadInts(device, lists.ords());
        offsets = IvfSearch.uploadInts(device, lists.offsets());
        codebooks = device.allocate(4L * pq.codebooks().length);
        device.upload(pq.codebooks(), 0, pq.codebooks().length, codebooks, 0);
        ok = true;
        return new GpuIvfPqIndex(device, n, dims, metric, lists.nlist(), pq, centroidIndex, codes, ords, offsets,
            codebooks);
      }
    } finally {
      if (!ok) {
        IvfSearch.release(device, centroidIndex, codes, ords, offsets, codebooks);
      }
    }
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
  public Metric metric() {
    return metric;
  }

  /** Inverted lists (centroids). */
  public int nlist() {
    return nlist;
  }

  /** The product quantizer the codes were made with. */
  public PqCodebook codebook() {
    return pq;
  }

  /** Device memory held by this index: codes, ordinals, offsets, codebooks and the centroid index. */
  @Override
  public long deviceBytes() {
    return centroids.deviceBytes() + codes.bytes() + ords.bytes() + offsets.bytes() + codebooks.bytes();
  }

  /**
   * Per query the k best vectors (approximate squared L2 distance, or approximate score for inner product /
   * cosine; ids are ordinals) among those of its {@code nprobe} nearest lists (nprobe capped at nlist);
   * {@code acceptBits} null = all vectors, else by ordinal. Synchronous.
   */
  public SearchResult search(float[] queries, int numQueries, int k, int nprobe, long[] acceptBits) {
    try (GpuDevice.Scope s = device.lock()) {
      ensureOpen();
      return BatchSearch.run(device,
          List.of(new SearchGroup(this, queries, numQueries, k, nprobe, acceptBits, null)))[0];
    }
  }

  /** Lists a search with {@code nprobe} scans: as {@link GpuIvfFlatIndex#probes}. */
  int probes(int nprobe) {
    return IvfSearch.probes(nprobe, nlist);
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
    return !forceGlobalTables
        && sharedBytes(true) <= device.module().maxDynamicSharedBytes(KSelect.kernel(SCAN_KERNELS, k));
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
    ensureOpen();
    int probes = probes(nprobe);
    String kernel = KSelect.kernel(SCAN_KERNELS, k);
    boolean inShared = tableInShared(k);
    int shared = sharedBytes(inShared);
    device.module().allowDynamicShared(kernel, shared);
    long tableBytes = inShared ? 0 : 4L * pq.tableFloats();
    IvfSearch.enqueue(device, centroids, dims, metric.largestFirst(), queries, queryNorms, nq, k, probes,
        8L * k + tableBytes, acceptAddress, acceptRowWords, outV, outI, outElement,
        b -> scanBlock(b, kernel, shared, tableBytes));
  }

  /** One block's list scan: {@code tableBytes} per pair of global-memory tables, 0 when they are in shared memory. */
  private void scanBlock(IvfSearch.Block b, String kernel, int shared, long tableBytes) {
    try (DeviceBuffer tables = tableBytes == 0 ? null : device.allocate(tableBytes * b.nq() * b.probes())) {
      IvfPqScanParams p = new IvfPqScanParams();
      p.codes = codes.address();
      p.ords = ords.address();
      p.listOffsets = offsets.address();
      p.queries = b.queries();
      p.centroids = centroids.vectorsAddress();
      p.codebooks = codebooks.address();
      p.probes = b.probeLists();
      p.acceptBits = b.accept();
      p.tables = tables == null ? 0 : tables.address();
      p.outK = b.candValues();
      p.outIdx = b.candIds();
      p.acceptRowWords = b.acceptRowWords();
      p.outRowStride = (long) b.probes() * b.k();
      p.dims = dims;
      p.k = b.k();
      p.nprobe = b.probes();
      p.metric = metric == Metric.L2 ? 0 : 1;
      p.m = pq.m();
      p.bits = pq.bits();
      device.module().launch(kernel, b.nq(), b.probes(), KSelect.blockSelectThreads(b.k()), shared, device.stream(),
          Pointer.to(p.encode()));
    }
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("GpuIvfPqIndex closed");
    }
  }

  /** Returns the index's device memory to the pool. */
  @Override
  public void close() {
    if (device.isClosed()) {
      closed = true; // the device went first (node shutdown): its context took the memory with it
      return;
    }
    try (GpuDevice.Scope s = device.lock()) {
      if (!closed) {
        closed = true;
        IvfSearch.release(device, centroids, codes, ords, offsets, codebooks);
      }
    }
  }
}
