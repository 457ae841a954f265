package org.gpuvectors.cuda.flat;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import jcuda.Pointer;
import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.MemoryPart;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.GroupAddresses;
import org.gpuvectors.cuda.pass.ResidentIndex;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.select.ChunkedSelection;
import org.gpuvectors.cuda.select.KSelect;
import org.gpuvectors.cuda.select.SelectParams;

/**
 * Exact (brute-force) k-NN over byte, bit or bfloat16 vectors resident in GPU memory at their own size ({@link
 * Element}): a byte a dimension, a bit a dimension, two bytes a dimension, instead of the four of {@link GpuFlatIndex}.
 * Scored in the arithmetic of the element (element_scan.cu): int8 products with 32-bit integer sums ({@code __dp4a}),
 * popcount of XOR for bits (Hamming distance, the squared L2 of 0/1 vectors: bit indexes take {@link Metric#L2} only),
 * bfloat16 rows widened to FP32 and summed in FP32. Cosine is computed from the raw query and row (dot product over both
 * norms; nothing is normalised, so byte queries stay integers), the norms summed in the kernel: no norms are stored.
 *
 * <p>Queries are floats, one a stored value ({@link #dims}): byte and bit queries hold each stored byte as a float
 * (exact; a bit vector's bytes, so {@link #dims} of a bit index is its bytes a vector, dims / 8 bits), which the kernel
 * packs as the rows are packed; bfloat16 queries are the query's floats, not rounded. Distances come out raw: squared L2
 * (bit: the Hamming distance) smallest first, inner product or cosine largest first; integer distances are exact
 * integers converted to float once (Java's {@code (float) int}), so the codec's Lucene scores from them are the CPU's.
 *
 * <p>Searches go through {@link BatchSearch} like every {@link ResidentIndex} (checks {@link SearchParams.Flat} and
 * {@link SearchParams.Exact}): one launch of {@code gv_element_scan_<element>_kK} per group, a block per (query, chunk
 * of rows), and a merge of the chunks' k-lists; k up to {@link KSelect#MAX_K}, any accept masks (shared or per query).
 * Owns its device buffer; {@link #close()} returns it to the device pool. Threading: as {@link GpuFlatIndex}.
 */
public final class GpuElementFlatIndex extends ResidentIndex {

  /** What one stored value of a row is, and so how many bytes a row takes on the device. */
  public enum Element {
    /** A signed byte a dimension. */
    BYTE("byte"),
    /** Eight dimensions a byte: a row of {@code dims} bytes holds 8 x dims bits. */
    BIT("bit"),
    /** A bfloat16 a dimension (the high half of a float, rounded to nearest even). */
    BFLOAT16("bf16");

    private final String kernelName;

    Element(String kernelName) {
      this.kernelName = kernelName;
    }

    /** Bytes of a row of {@code dims} values as given (byte, bit: dims bytes; bfloat16: 2 x dims). */
    public long rowBytes(int dims) {
      return this == BFLOAT16 ? 2L * dims : dims;
    }

    /** 32-bit words of a row on the device: {@link #rowBytes} rounded up to whole words (zero-padded). */
    public int rowWords(int dims) {
      return (int) ((rowBytes(dims) + 3) / 4);
    }

    /** The kernel of this element for k's bucket. */
    String kernel(int k) {
      return "gv_element_scan_" + kernelName + "_k" + KSelect.bucket(k);
    }
  }

  /** Supplies byte or bit rows to upload, a slab of consecutive rows at a time. */
  @FunctionalInterface
  public interface ByteRowSource {
    /** Writes rows {@code [first, first + count)}, {@code dims} bytes each, row-major into {@code dst} from 0. */
    void read(int first, int count, byte[] dst) throws IOException;
  }

  /** Bytes of host rows staged per copy to the device during an upload (the host never holds more). */
  private static final int UPLOAD_SLAB_BYTES = 4 << 20;

  /**
   * Rows a chunk of the scan holds at least: a block's queue start-up and its k-list written and merged against the
   * rows it scores (as the fused float search plans its chunks).
   */
  static final int MIN_CHUNK_ROWS = 1024;

  private final Element element;
  private final int rowWords;
  private final DeviceBuffer rows;
  private final AtomicLong scannedQueries = new AtomicLong();

  private GpuElementFlatIndex(GpuDevice device, Element element, int n, int dims, Metric metric, DeviceBuffer rows) {
    super(device, n, dims, metric);
    this.element = element;
    this.rowWords = element.rowWords(dims);
    this.rows = rows;
  }

  /** Uploads {@code n} byte or bit rows of {@code dims} bytes, row-major in {@code rowsRowMajor}. */
  public static GpuElementFlatIndex upload(GpuDevice device, Element element, byte[] rowsRowMajor, int n, int dims,
                                           Metric metric) {
    if (n < 0 || dims < 1 || (long) n * dims > rowsRowMajor.length) {
      throw new IllegalArgumentException("need n * dims bytes: n=" + n + " dims=" + dims + " length="
          + rowsRowMajor.length);
    }
    try {
      return upload(device, element, n, dims, metric,
          (first, count, dst) -> System.arraycopy(rowsRowMajor, first * dims, dst, 0, count * dims));
    } catch (IOException e) {
      throw new AssertionError("copying from an array does no I/O", e);
    }
  }

  /**
   * Uploads {@code n} byte or bit rows of {@code dims} bytes read from {@code source} in slabs of a few MB (a segment's
   * vectors need not fit the Java heap).
   */
  public static GpuElementFlatIndex upload(GpuDevice device, Element element, int n, int dims, Metric metric,
                                           ByteRowSource source) throws IOException {
    if (element == Element.BFLOAT16) {
      throw new IllegalArgumentException("bfloat16 rows are uploaded from floats: uploadBf16");
    }
    check(element, n, dims, metric);
    return stage(device, element, n, dims, metric, (first, count, packed, pitch) -> {
      byte[] raw = new byte[count * dims];
      source.read(first, count, raw);
      for (int r = 0; r < count; r++) {
        System.arraycopy(raw, r * dims, packed, r * pitch, dims);
      }
    });
  }

  /** Uploads {@code n} rows of {@code dims} floats, row-major, as bfloat16 (rounded to nearest even). */
  public static GpuElementFlatIndex uploadBf16(GpuDevice device, float[] rowsRowMajor, int n, int dims,
                                               Metric metric) {
    if (n < 0 || dims < 1 || (long) n * dims > rowsRowMajor.length) {
      throw new IllegalArgumentException("need n * dims floats: n=" + n + " dims=" + dims + " length="
          + rowsRowMajor.length);
    }
    try {
      return uploadBf16(device, n, dims, metric,
          (first, count, dst) -> System.arraycopy(rowsRowMajor, first * dims, dst, 0, count * dims));
    } catch (IOException e) {
      throw new AssertionError("copying from an array does no I/O", e);
    }
  }

  /**
   * Uploads {@code n} rows of {@code dims} floats read from {@code source} in slabs, as bfloat16 (rounded to nearest
   * even: a value that is a bfloat16 already, as a bfloat16 field's values read back are, is kept exactly).
   */
  public static GpuElementFlatIndex uploadBf16(GpuDevice device, int n, int dims, Metric metric,
                                               GpuFlatIndex.RowSource source) throws IOException {
    check(Element.BFLOAT16, n, dims, metric);
    return stage(device, Element.BFLOAT16, n, dims, metric, (first, count, packed, pitch) -> {
      float[] raw = new float[count * dims];
      source.read(first, count, raw);
      for (int r = 0; r < count; r++) {
        for (int d = 0; d < dims; d++) {
          short h = Bf16.fromFloat(raw[r * dims + d]);
          packed[r * pitch + 2 * d] = (byte) h; // little-endian, as the device reads a __nv_bfloat16
          packed[r * pitch + 2 * d + 1] = (byte) (h >>> 8);
        }
      }
    });
  }

  private static void check(Element element, int n, int dims, Metric metric) {
    if (n < 0 || dims < 1) {
      throw new IllegalArgumentException("n=" + n + " dims=" + dims);
    }
    if (element == Element.BIT && metric != Metric.L2) {
      throw new IllegalArgumentException("bit vectors are searched by Hamming distance (Metric.L2), not " + metric);
    }
  }

  /** Writes rows {@code [first, first + count)} packed, {@code pitch} bytes apart (zero past a row's bytes). */
  @FunctionalInterface
  private interface PackedRows {
    void read(int first, int count, byte[] packed, int pitch) throws IOException;
  }

  /**
   * Copies the rows to a new device buffer a slab at a time (reading and packing outside the device lock, which is
   * held for one slab's copy only), and makes the index; on failure the buffer goes back to the pool.
   */
  private static GpuElementFlatIndex stage(GpuDevice device, Element element, int n, int dims, Metric metric,
                                           PackedRows source) throws IOException {
    int pitch = 4 * element.rowWords(dims);
    DeviceBuffer v;
    try (GpuDevice.Scope s = device.lock()) {
      v = device.allocate((long) pitch * Math.max(1, n));
    }
    boolean ok = false;
    try {
      int slabRows = Math.max(1, Math.min(n, UPLOAD_SLAB_BYTES / pitch));
      byte[] slab = new byte[slabRows * pitch]; // zeros past each row's bytes stay zero: rows keep their length
      for (int r = 0; r < n; r += slabRows) {
        int count = Math.min(slabRows, n - r);
        source.read(r, count, slab, pitch);
        try (GpuDevice.Scope s = device.lock()) {
          device.upload(slab, 0, count * pitch, v, (long) pitch * r); // synchronous: the slab can be reused
        }
      }
      ok = true;
      return new GpuElementFlatIndex(device, element, n, dims, metric, v);
    } finally {
      if (!ok) {
        try (GpuDevice.Scope s = device.lock()) {
          v.close();
        }
      }
    }
  }

  /** What one stored value of this index's rows is. */
  public Element element() {
    return element;
  }

  /** Device memory held by this index: its rows alone (no norms: the kernel sums them). */
  @Override
  public DeviceBytes deviceBytesByPart() {
    return DeviceBytes.builder().add(MemoryPart.VECTORS, rows.bytes()).build();
  }

  /** Device bytes an index of {@code n} rows of {@code dims} values of {@code element} takes ({@link #deviceBytes}). */
  public static long deviceBytes(Element element, long n, int dims) {
    return 4L * element.rowWords(dims) * Math.max(1, n);
  }

  /** Queries this index's scan answered since upload (tests tell a GPU search from a CPU one by it). */
  public long scannedQueries() {
    return scannedQueries.get();
  }

  /** An exact search: {@link SearchParams#FLAT}, or {@link SearchParams#EXACT} (the same here). */
  @Override
  public void checkSearch(SearchParams params, int k) {
    if (!(params instanceof SearchParams.Flat) && !(params instanceof SearchParams.Exact)) {
      throw refused("Flat or SearchParams.Exact", params);
    }
  }

  /** Cosine is computed from the raw queries (byte queries must stay integers): the pass leaves them as they are. */
  @Override
  protected boolean normalisesCosineQueries() {
    return false;
  }

  /** The k best rows for each of {@code numQueries} row-major queries; {@code acceptBits} null = all. Synchronous. */
  public SearchResult search(float[] queriesRowMajor, int numQueries, int k, long[] acceptBits) {
    return BatchSearch.run(device, List.of(new SearchGroup(this, queriesRowMajor, numQueries, k, acceptBits, null)))[0];
  }

  @Override
  protected void enqueue(SearchGroup group, GroupAddresses at) {
    at.awaitQueries();
    enqueueSearch(at.queries(), group.numQueries(), group.k(), at.accept(), at.acceptRowWords(), at.outV(), at.outI(),
        at.outAt());
  }

  /**
   * Enqueues the scan of {@code nq} queries at device address {@code queries} (row-major floats) without waiting: per
   * query the k best (distance, id) pairs at {@code out + 4 * (outElement + q * k)}; with several chunks of rows, their
   * k-lists in temporaries and one merge. Accept masks: see {@link SelectParams#acceptBits(long, long)}. Caller holds
   * the device lock.
   */
  void enqueueSearch(long queries, int nq, int k, long acceptAddress, long acceptRowWords, DeviceBuffer outV,
                     DeviceBuffer outI, long outElement) {
    ensureOpen();
    if (nq == 0 || n == 0) {
      return;
    }
    int chunks = chunks(device.multiprocessorCount(), n, nq, k);
    int chunkLen = (int) ((n + (long) chunks - 1) / chunks);
    int used = (int) ((n + (long) chunkLen - 1) / chunkLen);
    ElementScanParams p = new ElementScanParams();
    p.vectors = rows.address();
    p.queries = queries;
    p.acceptBits = acceptAddress;
    p.acceptRowWords = acceptRowWords;
    p.n = n;
    p.dims = dims;
    p.rowWords = rowWords;
    p.numQueries = nq;
    p.k = k;
    p.chunks = used;
    p.chunkLen = chunkLen;
    p.metric = switch (metric) {
      case L2 -> 0;
      case INNER_PRODUCT -> 1;
      case COSINE -> 2;
    };
    String kernel = element.kernel(k);
    int shared = 4 * rowWords * (element == Element.BFLOAT16 ? 2 : 1);
    device.module().allowDynamicShared(kernel, shared);
    ChunkedSelection.enqueue(device, nq, used, k,
        new SelectParams().k(k).largest(metric.largestFirst()).output(outV, outI, k, outElement),
        (keys, ids, stride) -> launch(kernel, p, keys, ids, stride, shared));
    if (ordersTiesById()) {
      enqueueTieOrder(kernel, p, shared, outV.address() + 4L * outElement, outI.address() + 4L * outElement);
    }
    scannedQueries.addAndGet(nq);
  }

  /**
   * Whether searches of this index give the rows tied at the k-th distance by lowest id, as Lucene's collectors keep
   * the lowest doc ids of equal scores: byte and bit rows, whose integer distances tie often (bfloat16 ones, FP32 sums
   * of widened values, rarely). Costs a second scan of the rows (the tie scan) and a splice.
   */
  boolean ordersTiesById() {
    return element != Element.BFLOAT16;
  }

  /**
   * Enqueues the tie scan (the k lowest ids of the rows at exactly each query's k-th distance, per chunk, then
   * merged) and the splice that puts the lowest of them into the tied slots of the results at {@code bestK} /
   * {@code bestIdx} (k a query). {@code p} as the search's scan, its output replaced.
   */
  private void enqueueTieOrder(String kernel, ElementScanParams p, int shared, long bestK, long bestIdx) {
    int nq = p.numQueries;
    int k = p.k;
    p.bestK = bestK;
    p.bestIdx = bestIdx;
    p.bestRowStride = k;
    try (DeviceBuffer tieIds = device.allocate(8L * nq * k)) { // k lowest ids a query: keys, then ids
      DeviceBuffer keys = tieIds.slice(0, 4L * nq * k);
      DeviceBuffer ids = tieIds.slice(4L * nq * k, 4L * nq * k);
      ChunkedSelection.enqueue(device, nq, p.chunks, k, new SelectParams().k(k).largest(false).output(keys, ids, k, 0),
          (chunkKeys, chunkIds, stride) -> launch(kernel, p, chunkKeys, chunkIds, stride, shared));
      p.outK = keys.address();
      p.outIdx = ids.address();
      p.outRowStride = k;
      device.module().launch("gv_element_splice", nq, 1, 128, 0, device.stream(), Pointer.to(p.encode()));
    }
  }

  /** One launch of the scan {@code kernel} of {@code p}, writing its chunks' k-lists at {@code outK} / {@code outIdx}. */
  private void launch(String kernel, ElementScanParams p, long outK, long outIdx, long outRowStride, int shared) {
    p.outK = outK;
    p.outIdx = outIdx;
    p.outRowStride = outRowStride;
    device.module().launch(kernel, p.numQueries, p.chunks, KSelect.blockSelectThreads(p.k), shared, device.stream(),
        Pointer.to(p.encode()));
  }

  /**
   * Chunks of rows per query: about four blocks per multiprocessor over the batch (one query alone would leave all
   * but one idle), each chunk at least max({@link #MIN_CHUNK_ROWS}, 4 x k's bucket) rows, at most the grid's 65,535.
   */
  static int chunks(int multiprocessors, long n, int nq, int k) {
    long target = 4L * multiprocessors;
    long byLen = Math.max(1, n / Math.max(MIN_CHUNK_ROWS, 4L * KSelect.bucket(k)));
    return (int) Math.max(1, Math.min(Math.min((target + nq - 1) / nq, byLen), 65535));
  }

  @Override
  protected void freeDeviceMemory() {
    rows.close();
  }
}
