package org.gpuvectors.cuda.flat;

import org.gpuvectors.cuda.FlatConfig;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.PassCounters;
import org.gpuvectors.cuda.pass.ScanTable;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.rerank.CandidateBound;
import org.gpuvectors.cuda.rerank.ExactRerank;
import org.gpuvectors.cuda.rerank.RerankTable;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.ParamTable;
import org.gpuvectors.cuda.select.ChunkedSelection;
import org.gpuvectors.cuda.select.SelectParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import jcuda.Pointer;

/**
 * The small flat searches of a pass ({@link GpuFlatIndex} groups that take the scan: a query or a few over a field's
 * segments) as one scan launch over a table of segments ({@code gv_flat_scan_table_*}, flat_scan.cu) and one
 * BlockSelect merge of all their rows, instead of a scan and a merge per segment: the host's launches, not the
 * kernels, bound a pass over many segments.
 *
 * <p>Members share dims and metric (the first eligible group's), at most {@link #MAX_ENTRIES}; their k may differ
 * (Lucene asks each segment for its own share of a query's k): the kernel takes the largest k's bucket, each member
 * selects its own k per chunk, and the merge keeps the largest k, {@link #stride()}, per row, of which a member's
 * results are the first k. Members are split into chunks of about the same length ({@link #chunkRows}), so a larger
 * segment has more; each row of the merge has room for the most chunks' lists, and the slots a member does not
 * write (fewer chunks, a smaller k) are filled empty first. The members' results lie one after another, rows
 * {@link #stride()} apart (BatchSearch.placeResults).
 *
 * <p>When every member's index has its FP16 copy and its k is one the half scan takes ({@link
 * GpuFlatIndex#halfTakes}), the table is a {@linkplain #half() half scan table}: one launch of {@code
 * gv_half_scan_table_kK} (flat_half_scan.cu; {@code _s_} for short rows) takes k' = {@link
 * CandidateBound#candidates} of the largest k for every member's rows from the copies, one merge keeps each row's k'
 * best, and one re-rank launch over a {@link RerankTable} of the members' FP32 vectors selects each row's largest-k
 * best and the certificate's inputs (4 floats a row, the rows one after another from the first member's {@code
 * statsAt}, PassLayout). A member's query whose candidates are not certified is searched again in FP32 after the pass,
 * as a lone half-scanned group's (BatchSearch). It reads half the bytes, and a pass over many segments costs about
 * the bytes it reads. When some member has no FP16 copy or a k the half scan does not take, the table scans the FP32
 * vectors ({@code gv_flat_scan_table_*}). Used under the device lock, within one pass.
 */
public final class FlatScanTable implements ScanTable {
  /**
   * The largest group in the table: past {@link FlatConfig#scanMaxQueries} a group alone would take the GEMM path,
   * which reads a segment once for many queries but costs a dozen host launches; in a pass over many segments (a
   * service's concurrent searches over a field's segments: several queries a segment) those launches bound the pass,
   * so a table member may hold up to four blocks of the scan's queries (each block reads its segment again).
   */
  static final int MAX_GROUP_QUERIES = 4 * FlatScanParams.QUERIES_PER_BLOCK;
  /** Entries of a {@code gv::FlatScanTable} (flat_scan.cu's kFlatScanTableEntries). */
  public static final int MAX_ENTRIES = 32;
  /** Bytes of the table argument (a {@link #half} table's: {@link #HALF_BYTES}). */
  public static final int BYTES = ParamTable.bytes(MAX_ENTRIES, FlatScanParams.BYTES);
  /** Bytes of a {@code gv::HalfScanTable} (flat_half_scan.cu, as many entries). */
  public static final int HALF_BYTES = ParamTable.bytes(MAX_ENTRIES, HalfScanParams.BYTES);

  private final int[] firstRow; // per group of the pass, its first row of the merge, or -1 for a group that is not a member
  private final int members;
  private final int rows;
  private final int k; // the members' largest k: the merge's
  private final boolean mixedK; // some member's k is smaller
  private final Metric metric;
  private final boolean half; // every member scans its FP16 copy

  private FlatScanTable(int[] firstRow, int members, int rows, int k, boolean mixedK, Metric metric, boolean half) {
    this.firstRow = firstRow;
    this.members = members;
    this.rows = rows;
    this.k = k;
    this.mixedK = mixedK;
    this.metric = metric;
    this.half = half;
  }

  /**
   * The table of the pass's groups, or null when fewer than two groups may share it. Eligible: a flat group with
   * queries (at most {@link #MAX_GROUP_QUERIES}) and vectors that the scan takes ({@link GpuFlatIndex#scanTakes}),
   * not walked in the graph table launch, with the first eligible group's dims and metric.
   */
  static FlatScanTable plan(List<SearchGroup> groups, boolean[] walked) {
    int[] firstRow = new int[groups.size()];
    Arrays.fill(firstRow, -1);
    int members = 0;
    int rows = 0;
    int minK = Integer.MAX_VALUE;
    int maxK = 0;
    boolean half = true;
    SearchGroup first = null;
    for (int g = 0; g < groups.size() && members < MAX_ENTRIES; g++) {
      SearchGroup group = groups.get(g);
      if (!(group.index() instanceof GpuFlatIndex flat) || (walked != null && walked[g]) || group.numQueries() == 0
          || group.numQueries() > MAX_GROUP_QUERIES || flat.size() == 0
          || !flat.scanTakes(group.numQueries(), group.k())) {
        continue;
      }
      if (first != null && (flat.dims() != first.index().dims() || flat.metric() != first.index().metric())) {
        continue;
      }
      first = first == null ? group : first;
      firstRow[g] = rows;
      rows += group.numQueries();
      members++;
      minK = Math.min(minK, group.k());
      maxK = Math.max(maxK, group.k());
      half &= flat.halfTakes(group.k());
    }
    return members < 2 ? null
        : new FlatScanTable(firstRow, members, rows, maxK, minK < maxK, first.index().metric(), half);
  }

  /** Whether the members' candidates come from their FP16 copies and carry certificates (the class comment). */
  @Override
  public boolean half() {
    return half;
  }

  /** The members' queries, whose result rows (and, for a half table, certificate inputs) lie one after another. */
  @Override
  public int rows() {
    return rows;
  }

  /** Group g's first row among the members' rows ({@link #member} g). */
  @Override
  public int firstRow(int g) {
    return firstRow[g];
  }

  /** Elements between a member's result rows: the members' largest k (a member's results are a row's first k). */
  @Override
  public int stride() {
    return k;
  }

  /** Whether group {@code g} of the pass is in the table. */
  @Override
  public boolean member(int g) {
    return firstRow[g] >= 0;
  }

  /** The groups in the table. */
  @Override
  public int members() {
    return members;
  }

  /**
   * Rows a block scans, for members of {@code rows[i]} rows and {@code queryBlocks[i]} blocks of queries each: whole
   * tiles, about the members' work (rows x blocks of queries, summed) over {@link FlatScanParams#BLOCKS_PER_SM} blocks
   * per multiprocessor, and the fewest tiles for which the members' blocks (each member's {@link #chunks} times its
   * blocks of queries) fit that one wave, when any length does. Every member's chunks are about this long, so that
   * the blocks of a large segment do not outlast the others' (a pass over segments of different sizes takes as long
   * as its longest block). The length from the work alone, each member rounding its chunks up, could overflow the
   * wave by a block or two, which then ran as a second wave as long as the first (7 members of 125k rows: 38 chunks
   * each, 266 blocks for 264 slots, a slower scan than 8 such members in 264 blocks). When no length fits one wave
   * (more blocks of queries than slots), one chunk a member: the fewest blocks there are.
   */
  static long chunkRows(int sms, long[] rows, int[] queryBlocks) {
    long slots = (long) FlatScanParams.BLOCKS_PER_SM * sms;
    long work = 0;
    long longest = 0;
    for (int i = 0; i < rows.length; i++) {
      work += rows[i] * queryBlocks[i];
      longest = Math.max(longest, rows[i]);
    }
    long tile = FlatScanParams.ROWS;
    long lo = Math.max(1, ((work + slots - 1) / slots + tile - 1) / tile); // in tiles
    if (blocks(rows, queryBlocks, lo * tile) <= slots) {
      return lo * tile;
    }
    long hi = Math.max(lo, (longest + tile - 1) / tile); // one chunk a member: the fewest blocks there are
    while (lo < hi) { // the fewest tiles whose blocks fit (blocks only fall as chunks lengthen)
      long mid = (lo + hi) >>> 1;
      if (blocks(rows, queryBlocks, mid * tile) <= slots) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo * tile;
  }

  /** {@link #chunkRows} for this table's members among the pass's {@code groups}, blocks of {@code queriesPerBlock}. */
  private long membersChunkRows(GpuDevice device, List<SearchGroup> groups, int queriesPerBlock) {
    long[] memberRows = new long[members];
    int[] queryBlocks = new int[members];
    int m = 0;
    for (int g = 0; g < firstRow.length; g++) {
      if (member(g)) {
        SearchGroup group = groups.get(g);
        memberRows[m] = group.index().size();
        queryBlocks[m++] = (group.numQueries() + queriesPerBlock - 1) / queriesPerBlock;
      }
    }
    return chunkRows(device.multiprocessorCount(), memberRows, queryBlocks);
  }

  /** The blocks of members of {@code rows[i]} rows and {@code queryBlocks[i]} blocks of queries, chunks of chunkRows. */
  static long blocks(long[] rows, int[] queryBlocks, long chunkRows) {
    long blocks = 0;
    for (int i = 0; i < rows.length; i++) {
      blocks += (long) queryBlocks[i] * chunks(rows[i], chunkRows);
    }
    return blocks;
  }

  /** Chunks of a member of {@code n} rows for chunks of about {@code chunkRows} rows: at least one. */
  static int chunks(long n, long chunkRows) {
    return (int) Math.max(1, Math.min(65535, (n + chunkRows - 1) / chunkRows));
  }

  /**
   * Enqueues the members' scan (one table launch) and the merge of their rows into the results from the first
   * member's {@code outAt}, rows {@link #stride()} apart (arguments per group of the pass: device addresses of its
   * queries and accept masks, the masks' row words, and for a {@link #half} table the element offsets of the
   * certificate inputs in {@code outV}). Caller holds the device lock.
   */
  @Override
  public void enqueue(GpuDevice device, List<SearchGroup> groups, long[] queries, long[] accept, long[] acceptRowWords,
                      DeviceBuffer outV, DeviceBuffer outI, long[] outAt, long[] statsAt) {
    if (half) {
      enqueueHalf(device, groups, queries, accept, acceptRowWords, outV, outI, outAt, statsAt);
    } else {
      enqueueFp32(device, groups, queries, accept, acceptRowWords, outV, outI, outAt);
    }
    PassCounters.of(device).countFlatScanTable();
  }

  private void enqueueFp32(GpuDevice device, List<SearchGroup> groups, long[] queries, long[] accept,
                           long[] acceptRowWords, DeviceBuffer outV, DeviceBuffer outI, long[] outAt) {
    List<FlatScanParams> entries = new ArrayList<>();
    long out = BatchSearch.membersOut(firstRow, outAt, k);
    for (int g = 0; g < firstRow.length; g++) {
      if (member(g)) {
        SearchGroup group = groups.get(g);
        GpuFlatIndex flat = (GpuFlatIndex) group.index();
        entries.add(flat.scanParams(queries[g], group.numQueries(), group.k(), accept[g], acceptRowWords[g]));
      }
    }
    long chunkRows = membersChunkRows(device, groups, FlatScanParams.QUERIES_PER_BLOCK);
    int mostChunks = 0;
    boolean gaps = mixedK;
    for (FlatScanParams p : entries) {
      p.chunks = chunks(p.n, chunkRows);
      p.chunkLen = (int) ((p.n + p.chunks - 1) / p.chunks);
      gaps |= mostChunks > 0 && p.chunks != mostChunks;
      mostChunks = Math.max(mostChunks, p.chunks);
    }
    // even one chunk a member goes through the merge: the members' rows come out at the pass's output rows
    try (ChunkedSelection lists = ChunkedSelection.allocate(device, rows, mostChunks, k)) {
      long width = lists.width();
      if (gaps) { // fewer chunks or a smaller k leave slots past a member's lists: empty ones, as the kernel writes them
        device.fill32(lists.keys(),
            Float.floatToRawIntBits(metric == Metric.L2 ? Float.POSITIVE_INFINITY : Float.NEGATIVE_INFINITY));
        device.fill32(lists.ids(), -1);
      }
      List<byte[]> encoded = new ArrayList<>();
      int gridX = 0;
      int row = 0;
      for (FlatScanParams p : entries) {
        p.outK = lists.keys().address() + 4L * row * width;
        p.outIdx = lists.ids().address() + 4L * row * width;
        p.outRowStride = width;
        row += p.numQueries;
        gridX = Math.max(gridX, (p.numQueries + FlatScanParams.QUERIES_PER_BLOCK - 1) / FlatScanParams.QUERIES_PER_BLOCK);
        encoded.add(p.encode());
      }
      FlatScanParams lead = entries.get(0);
      String kernel = lead.kernel("gv_flat_scan_table_", k); // the largest k's bucket: every member's queue holds it
      int shared = lead.sharedBytes();
      device.module().allowDynamicShared(kernel, shared);
      device.module().launch3d(kernel, gridX, mostChunks, entries.size(), FlatScanParams.THREADS, shared, device.stream(),
          Pointer.to(ParamTable.encode("flat scan", MAX_ENTRIES, FlatScanParams.BYTES, encoded)));
      lists.merge(device, new SelectParams().k(k).largest(metric != Metric.L2).output(outV, outI, k, out));
    }
  }

  /**
   * The {@link #half} table's enqueue: the members' candidates from their FP16 copies (one table launch; each
   * member's chunks keep {@link FlatHalfCopy#chunkCandidates} of k'), each row's k' best of its chunks (one merge,
   * unless every member is one chunk), the rows' FP32 re-rank into the results and the certificate inputs (one re-rank
   * launch over the members' vectors, {@link ExactRerank#enqueueSelecting}, which also takes the last key of every
   * chunk that kept fewer than k').
   */
  private void enqueueHalf(GpuDevice device, List<SearchGroup> groups, long[] queries, long[] accept,
                           long[] acceptRowWords, DeviceBuffer outV, DeviceBuffer outI, long[] outAt, long[] statsAt) {
    int kc = CandidateBound.candidates(k); // every member keeps the largest k's candidates: certified for it
    List<HalfScanParams> entries = new ArrayList<>();
    List<GpuFlatIndex> flats = new ArrayList<>();
    List<Integer> firstRows = new ArrayList<>();
    for (int g = 0; g < firstRow.length; g++) {
      if (member(g)) {
        SearchGroup group = groups.get(g);
        GpuFlatIndex flat = (GpuFlatIndex) group.index();
        entries.add(flat.halfScanParams(queries[g], group.numQueries(), kc, accept[g], acceptRowWords[g]));
        flats.add(flat);
        firstRows.add(firstRow[g]);
      }
    }
    long chunkRows = membersChunkRows(device, groups, HalfScanParams.QUERIES_PER_BLOCK);
    long width = 0; // the widest member's chunks x kept
    int mostChunks = 0;
    int mostKept = 0;
    boolean fewer = false; // some member's chunks keep fewer than k'
    RerankTable vectors = new RerankTable();
    for (int e = 0; e < entries.size(); e++) {
      HalfScanParams p = entries.get(e);
      p.chunks = chunks(p.n, chunkRows);
      p.chunkLen = (int) (((p.n + p.chunks - 1) / p.chunks + HalfScanParams.ROWS - 1) / HalfScanParams.ROWS
          * HalfScanParams.ROWS); // whole tiles
      p.chunks = (int) ((p.n + p.chunkLen - 1) / p.chunkLen);
      p.k = flats.get(e).halfChunkCandidates(kc, p.chunks, p.chunkLen);
      fewer |= p.k < kc;
      width = Math.max(width, (long) p.chunks * p.k);
      mostChunks = Math.max(mostChunks, p.chunks);
      mostKept = Math.max(mostKept, p.k);
      // a member whose chunks keep k' is certified by its merged k'-th key alone: no chunk keys for it
      vectors.add(firstRows.get(e), flats.get(e).vectorsAddress(), p.queries, p.k < kc ? p.k : 0,
          p.k < kc ? p.chunks : 0);
    }
    boolean gaps = false;
    for (HalfScanParams p : entries) {
      gaps |= (long) p.chunks * p.k != width;
    }
    // one chunk a member: the scan writes the candidates themselves, no merge
    try (DeviceBuffer candV = device.allocate(4L * rows * kc); DeviceBuffer candI = device.allocate(4L * rows * kc);
         ChunkedSelection lists = mostChunks > 1 ? ChunkedSelection.allocate(device, rows, width) : null) {
      DeviceBuffer scanV = lists != null ? lists.keys() : candV;
      DeviceBuffer scanI = lists != null ? lists.ids() : candI;
      if (gaps) { // the slots past a member's chunks: empty ones, as the kernel writes them (keys ascending)
        device.fill32(scanV, Float.floatToRawIntBits(Float.POSITIVE_INFINITY));
        device.fill32(scanI, -1);
      }
      List<byte[]> encoded = new ArrayList<>();
      int gridX = 0;
      int row = 0;
      for (HalfScanParams p : entries) {
        p.outK = scanV.address() + 4L * row * width;
        p.outIdx = scanI.address() + 4L * row * width;
        p.outRowStride = width;
        row += p.numQueries;
        gridX = Math.max(gridX, (p.numQueries + HalfScanParams.QUERIES_PER_BLOCK - 1) / HalfScanParams.QUERIES_PER_BLOCK);
        p.check();
        encoded.add(p.encode());
      }
      HalfScanParams lead = entries.get(0);
      String kernel = lead.kernel("gv_half_scan_table_", mostKept); // every member's queue holds the most kept
      int shared = lead.sharedBytes();
      device.module().allowDynamicShared(kernel, shared);
      device.module().launch3d(kernel, gridX, mostChunks, entries.size(), HalfScanParams.THREADS, shared,
          device.stream(), Pointer.to(ParamTable.encode("half scan", MAX_ENTRIES, HalfScanParams.BYTES, encoded)));
      if (lists != null) {
        lists.merge(device, new SelectParams().k(kc).output(candV, candI, kc, 0));
      }
      long out = BatchSearch.membersOut(firstRow, outAt, k);
      long stats = BatchSearch.membersOut(firstRow, statsAt, 4);
      // the chunks' keys per chunk and chunks a row are the table entries' (their members' own)
      ExactRerank.ChunkKeys chunkKeys = fewer ? new ExactRerank.ChunkKeys(lists.keys().address(), width, 0, 0) : null;
      new ExactRerank(metric, lead.dims, rows, kc, k).candidates(candV.address(), candI.address())
          .stats(outV.address() + 4L * stats).output(outV.address() + 4L * out, outI.address() + 4L * out)
          .chunkKeys(chunkKeys).enqueueSelecting(device, vectors);
    }
  }
}
