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
import org.gpuvectors.cuda.pass.ResidentIndex;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.KernelModule;
import org.gpuvectors.cuda.select.KSelect;
import org.gpuvectors.cuda.select.SelectParams;
import java.io.IOException;
import java.util.List;
import java.util.Objects;
import jcuda.Pointer;

/**
 * IVF-Flat float32 k-NN over vectors resident in GPU memory: the vectors are partitioned into
 * {@code nlist} inverted lists ({@link IvfLists}, built on the host), and a search scans only the
 * {@code nprobe} lists whose centroids are nearest the query, computing the same exact distances as
 * {@link GpuFlatIndex} (squared L2, inner product, cosine as the inner product of normalised vectors).
 * With {@code nprobe = nlist} every vector is scanned: the result is the exact search's.
 *
 * <p>A search, per block of queries ({@link #enqueueSearch}), after Faiss's GPU IVFFlat:
 * <ol>
 *   <li>coarse: the centroids are a {@link GpuFlatIndex} of the same metric (the coarse quantizer),
 *       and its exact search with k = nprobe gives each query's lists, best first;
 *   <li>scan: each (query, probed list) pair's k best (distance, ordinal) pairs, the accept mask tested
 *       by ordinal; for a few queries per list {@code gv_ivf_flat_scan_kK} (ivf_kernels.cu), one block
 *       per pair; for many ({@link #scansGrouped}) the grouped scan (ivf_grouped.cu): the pairs
 *       counting-sorted by list on the device, then one block per tile of up to 32 pairs of a list,
 *       which reads the list's vectors once for all of them;
 *   <li>merge: BlockSelect over each query's nprobe * k candidates ({@link KSelect#mergeCandidates}).
 * </ol>
 *
 * <p>Device memory, owned here and returned by {@link #close()}: the vectors in list order (a list is
 * one contiguous range; cosine: normalised at upload), the ordinal at each position, the list
 * offsets, and the centroid index. Threading as {@link GpuFlatIndex}: every method takes the device
 * lock; an upload takes it one slab at a time. Many queries over many indexes (flat and IVF) run as
 * one pass through {@link BatchSearch}.
 */
public final class GpuIvfFlatIndex extends GpuIvfIndex {
  private static final String[] SCAN_KERNELS = KSelect.names("gv_ivf_flat_scan_k");
  /** Named per k bucket as {@link KSelect#kernel} reads them; built for the buckets up to {@link #GROUPED_MAX_K}. */
  private static final String[] GROUPED_SCAN_KERNELS = KSelect.names("gv_ivf_grouped_scan_k");
  /**
   * The grouped scan's largest k: it keeps two queues per warp (queries w and w + 16 of a tile) and is
   * built for the k buckets 32..128 only (at 256 nvcc spilled); a larger k scans per pair.
   */
  static final int GROUPED_MAX_K = 128;

  private final DeviceBuffer vectors; // n x dims, in list order

  private GpuIvfFlatIndex(GpuDevice device, int n, int dims, Metric metric, int nlist, GpuFlatIndex centroids,
                          DeviceBuffer vectors, DeviceBuffer ords, DeviceBuffer offsets) {
    super(device, n, dims, metric, nlist, centroids, ords, offsets);
    this.vectors = vectors;
  }

  /**
   * Uploads an IVF-Flat index: the centroids of {@code lists} (the coarse quantizer; cosine:
   * normalised), its ordinals and offsets, and the {@code lists.size()} vectors of {@code dims} floats
   * read from {@code rowsInListOrder} BY POSITION, in slabs of a few MB (row p is the vector of
   * ordinal {@code lists.ords()[p]}; cosine: normalised on the way).
   */
  public static GpuIvfFlatIndex upload(GpuDevice device, IvfLists lists, int dims, Metric metric,
                                       GpuFlatIndex.RowSource rowsInListOrder) throws IOException {
    Objects.requireNonNull(lists, "lists");
    Objects.requireNonNull(metric, "metric");
    Objects.requireNonNull(rowsInListOrder, "rowsInListOrder");
    if (dims < 1 || lists.dims() != dims) {
      throw new IllegalArgumentException("centroids of " + lists.dims() + " floats for dims " + dims);
    }
    int n = lists.size();
    GpuFlatIndex centroidIndex = null;
    DeviceBuffer vectors = null;
    DeviceBuffer ords = null;
    DeviceBuffer offsets = null;
    boolean ok = false;
    try {
      centroidIndex = GpuFlatIndex.upload(device, lists.centroids(), lists.nlist(), dims, metric);
      vectors = GpuFlatIndex.uploadRows(device, n, dims, metric == Metric.COSINE, rowsInListOrder);
      try (GpuDevice.Scope s = device.lock()) {
        ords = IvfSearch.uploadInts(device, lists.ords());
        offsets = IvfSearch.uploadInts(device, lists.offsets());
        ok = true;
        return new GpuIvfFlatIndex(device, n, dims, metric, lists.nlist(), centroidIndex, vectors, ords, offsets);
      }
    } finally {
      if (!ok) {
        free(device, centroidIndex, vectors, ords, offsets);
      }
    }
  }

  /** Device memory held by this index: vectors, ordinals, offsets and the centroid index. */
  @Override
  public DeviceBytes deviceBytesByPart() {
    return DeviceBytes.builder()
        .add(MemoryPart.CENTROIDS, centroids.deviceBytes())
        .add(MemoryPart.LISTS, ords.bytes() + offsets.bytes())
        .add(MemoryPart.VECTORS, vectors.bytes())
        .build();
  }

  /** A group's search in a pass: its queries in their {@link SearchParams.Ivf#nprobe} nearest lists. */
  @Override
  protected void enqueue(SearchGroup group, GroupAddresses at) {
    enqueueSearch(at.queries(), at.norms(), group.numQueries(), group.k(), IvfSearch.nprobe(this, group.params()),
        at.accept(), at.acceptRowWords(), at.outV(), at.outI(), at.outAt());
  }

  /**
   * Enqueues the search of {@code nq} queries at device address {@code queries} (row-major, already
   * normalised for cosine; {@code queryNorms}: their ||q||^2 for L2, or 0) in their {@code nprobe}
   * nearest lists without waiting: per query the k best (distance, ordinal) pairs at
   * {@code out + 4 * (outElement + q * k)}, as {@link GpuFlatIndex#enqueueSearch} writes them. Accept
   * masks by ordinal: see {@link SelectParams#acceptBits(long, long)}. Caller holds the device lock;
   * temporaries return to the pool, reused in stream order ({@link IvfSearch#enqueue}: coarse, scan, merge per
   * block of queries).
   */
  void enqueueSearch(long queries, long queryNorms, int nq, int k, int nprobe, long acceptAddress, long acceptRowWords,
                     DeviceBuffer outV, DeviceBuffer outI, long outElement) {
    ensureOpen();
    int probes = probes(nprobe);
    IvfSearch.enqueue(device, centroids, dims, metric.largestFirst(), queries, queryNorms, nq, k, probes, probes, 0,
        acceptAddress, acceptRowWords, outV, outI, outElement, this::scanBlock);
  }

  /**
   * Whether a block of {@code nq} queries probing {@code probes} lists each, for k, is scanned grouped: from {@link
   * IvfConfig#groupedPairsPerList} (query, probe) pairs per list on average, k up to {@link #GROUPED_MAX_K}.
   */
  boolean scansGrouped(int nq, int probes, int k) {
    return k <= GROUPED_MAX_K
        && (long) nq * probes >= (long) device.config().ivf().groupedPairsPerList() * nlist;
  }

  /** One block's list scan, per pair or grouped ({@link #scansGrouped}). */
  private void scanBlock(IvfSearch.Block b) {
    IvfScanParams p = new IvfScanParams();
    p.vectors = vectors.address();
    p.ords = ords.address();
    p.listOffsets = offsets.address();
    p.queries = b.queries();
    p.probes = b.probeLists();
    p.acceptBits = b.accept();
    p.outK = b.candValues();
    p.outIdx = b.candIds();
    p.acceptRowWords = b.acceptRowWords();
    p.outRowStride = (long) b.probes() * b.k();
    p.dims = dims;
    p.k = b.k();
    p.nprobe = b.probes();
    p.metric = metric == Metric.L2 ? 0 : 1;
    if (scansGrouped(b.nq(), b.probes(), b.k())) {
      enqueueGroupedScan(p, b.nq());
    } else {
      int shared = 4 * ((dims + 3) / 4 * 4); // the query, read as float4
      device.module().launch(KSelect.kernel(SCAN_KERNELS, b.k()), b.nq(), b.probes(), KSelect.blockSelectThreads(b.k()),
          shared, device.stream(), Pointer.to(p.encode()));
    }
  }

  /**
   * The scan {@code p} describes, for {@code nq} queries, grouped (ivf_grouped.cu): the pairs counted per
   * list (pairs without a list get their empty slots there), their pair and tile offsets summed, the
   * pairs scattered into list order, then one block per tile of up to {@link IvfGroupParams#TILE_QUERIES}
   * pairs of a list. The tile count is known only on the device: the grid is its upper bound,
   * sum over lists of ceil(pairs / 32) <= (pairs + min(nlist, pairs) * 31) / 32, and the blocks past the
   * last tile return at once. Temporaries return to the pool, reused in stream order.
   */
  private void enqueueGroupedScan(IvfScanParams p, int nq) {
    int pairs = nq * p.nprobe; // nq * nprobe * k candidates fit IvfSearch.BLOCK_BUDGET_BYTES: far below 2^31
    int tile = IvfGroupParams.TILE_QUERIES;
    int maxTiles = (int) ((pairs + (long) Math.min(nlist, pairs) * (tile - 1)) / tile);
    int pairBlocks = (pairs + 255) / 256;
    try (DeviceBuffer counts = device.allocate(4L * nlist);
         DeviceBuffer ranks = device.allocate(4L * pairs);
         DeviceBuffer sorted = device.allocate(4L * pairs);
         DeviceBuffer pairOffsets = device.allocate(4L * (nlist + 1));
         DeviceBuffer tileOffsets = device.allocate(4L * (nlist + 1))) {
      IvfGroupParams g = new IvfGroupParams();
      g.counts = counts.address();
      g.ranks = ranks.address();
      g.pairs = sorted.address();
      g.pairOffsets = pairOffsets.address();
      g.tileOffsets = tileOffsets.address();
      g.numQueries = nq;
      g.nlist = nlist;
      Pointer scan = Pointer.to(p.encode());
      Pointer group = Pointer.to(g.encode());
      KernelModule m = device.module();
      device.clear(counts);
      m.launch("gv_ivf_group_count", pairBlocks, 1, 256, 0, device.stream(), scan, group);
      m.launch("gv_ivf_group_offsets", 1, 1, 1024, 0, device.stream(), group);
      m.launch("gv_ivf_group_scatter", pairBlocks, 1, 256, 0, device.stream(), scan, group);
      m.launch(KSelect.kernel(GROUPED_SCAN_KERNELS, p.k), maxTiles, 1, IvfGroupParams.THREADS,
          IvfGroupParams.SHARED_BYTES, device.stream(), scan, group);
    }
  }

  @Override
  protected void freeDeviceMemory() {
    free(device, centroids, vectors, ords, offsets);
  }
}
