package org.gpuvectors.cuda.ivf;

import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.GroupAddresses;
import org.gpuvectors.cuda.pass.PassCounters;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.pass.SharedSelection;
import org.gpuvectors.cuda.rerank.RerankTable;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The small {@link GpuIvfPqIndex} groups of one pass (a query or a few over each segment of an index) that share
 * one scan, one candidate selection and one re-rank ({@link BatchSearch}): on lane 0, after the pass's other
 * groups were spread over the lanes, one table launch runs every member's coarse step (a member whose coarse step
 * does not fit one block per query runs its own, {@link GpuIvfPqIndex#enqueueProbes}), one builds every member's
 * query tables and one scans every member's lists into its rows of one buffer ({@link
 * GpuIvfPqIndex#enqueueKeysTable}), one radix selection takes every row's candidates, and one table launch
 * re-ranks them over each member's raw vectors, with one merge into the members' results ({@link
 * GpuIvfPqIndex#enqueueRerank(GpuDevice, RerankTable, int, int, int, int, Metric, long, long, DeviceBuffer,
 * DeviceBuffer, long)}). Alone, every segment paid its own ~13 launches and memsets: the host's launches bounded a
 * pass over many small segments.
 *
 * <p>Members share k, the re-rank depth ({@link GpuIvfPqIndex#candidates}), the metric and the dimensions: the
 * selection takes one k and one output scale, the re-rank one key. The first eligible group sets them; other
 * eligible groups join while the rows stay within {@link #BUDGET_BYTES} and the re-rank table has room; the rest
 * search alone. Rows are as wide as the widest member's. The members' results must lie one after another, in
 * member order ({@link BatchSearch#placeResults}): the merge writes all rows at once.
 *
 * <p>Owns its device buffers (pool blocks, returned by {@link #close}); used under the device lock.
 */
public final class SharedKeySelection implements SharedSelection {
  /** Bytes of keys and ids (8 a vector) of all members' rows at most. */
  static final long BUDGET_BYTES = 4 * GpuIvfPqIndex.KEYS_BUDGET_BYTES;

  private final GpuDevice device;
  private final int[] firstRow; // per group of the pass, its first row, or -1 for a group that is not a member
  private final boolean[] coarseInTable; // per group of the pass: a member whose coarse step is in the table launch
  private final int rows;
  private final int k;
  private final int dims;
  private final Metric metric;
  private final int candidates;
  private final IvfSearch.KeyBuffers keys;
  private final DeviceBuffer candValues;
  private final DeviceBuffer candIds;
  private final List<GpuIvfPqIndex.KeysScan> scans = new ArrayList<>(); // the members' coarse steps, in member order

  private SharedKeySelection(GpuDevice device, int[] firstRow, boolean[] coarseInTable, int rows, long rowWidth,
                             long typicalRow, int k, int candidates, int dims, Metric metric) {
    this.device = device;
    this.firstRow = firstRow;
    this.coarseInTable = coarseInTable;
    this.rows = rows;
    this.k = k;
    this.dims = dims;
    this.metric = metric;
    this.candidates = candidates;
    IvfSearch.KeyBuffers buffers = new IvfSearch.KeyBuffers(device, rows, rowWidth, typicalRow);
    DeviceBuffer v = null;
    boolean ok = false;
    try {
      v = device.allocate(4L * rows * candidates);
      candIds = device.allocate(4L * rows * candidates);
      ok = true;
    } finally {
      if (!ok) {
        buffers.close();
        if (v != null) {
          v.close();
        }
      }
    }
    keys = buffers;
    candValues = v;
    PassCounters.of(device).countSharedSelection();
  }

  /**
   * The shared selection of the pass's groups, or null when fewer than two groups may share one. Eligible: an
   * {@code ivf_pq} group not walked in the graph table launch, with queries and vectors, that takes the small-batch
   * keys path with the device re-rank ({@link GpuIvfPqIndex#sharedKeysRowWidth}). Caller holds the lock.
   */
  static SharedKeySelection plan(GpuDevice device, List<SearchGroup> groups, boolean[] walked) {
    int[] firstRow = new int[groups.size()];
    java.util.Arrays.fill(firstRow, -1);
    boolean[] coarseInTable = new boolean[groups.size()];
    int members = 0;
    int rows = 0;
    long width = 0;
    long typical = 0; // the longest of the members' typical rows
    SearchGroup first = null;
    for (int g = 0; g < groups.size() && members < RerankTable.MAX_ENTRIES; g++) {
      SearchGroup group = groups.get(g);
      if (!(group.index() instanceof GpuIvfPqIndex pq) || (walked != null && walked[g]) || group.numQueries() == 0
          || pq.size() == 0) {
        continue;
      }
      int nprobe = IvfSearch.nprobe(pq, group.params());
      long w = pq.sharedKeysRowWidth(group.numQueries(), nprobe);
      if (w == 0) {
        continue;
      }
      if (first != null) {
        GpuIvfPqIndex lead = (GpuIvfPqIndex) first.index();
        if (group.k() != first.k() || pq.candidates(group.k()) != lead.candidates(first.k())
            || pq.metric() != lead.metric() || pq.dims() != lead.dims()) {
          continue;
        }
      }
      long wider = Math.max(width, w);
      if (8L * (rows + group.numQueries()) * wider > BUDGET_BYTES) {
        continue;
      }
      first = first == null ? group : first;
      firstRow[g] = rows;
      rows += group.numQueries();
      width = wider;
      typical = Math.max(typical, pq.typicalKeysRow(pq.probes(nprobe)));
      members++;
      coarseInTable[g] = pq.coarseFitsTable(group.numQueries(), nprobe);
    }
    if (members < 2) {
      return null;
    }
    GpuIvfPqIndex lead = (GpuIvfPqIndex) first.index();
    return new SharedKeySelection(device, firstRow, coarseInTable, rows, width, typical, first.k(),
        lead.candidates(first.k()), lead.dims(), lead.metric());
  }

  /** Whether group {@code g} of the pass shares the selection. */
  @Override
  public boolean member(int g) {
    return firstRow[g] >= 0;
  }

  /**
   * Whether group {@code g} is a member whose coarse step is in {@link #enqueueSelection}'s table launch: its {@link
   * #enqueueProbes} enqueues nothing, so it needs no lane of its own (the other members' coarse steps do).
   */
  @Override
  public boolean coarseInTable(int g) {
    return coarseInTable[g];
  }

  /** The members whose coarse step is in the table launch ({@link #coarseInTable}). */
  @Override
  public int membersInTable() {
    int n = 0;
    for (boolean inTable : coarseInTable) {
      n += inTable ? 1 : 0;
    }
    return n;
  }

  /**
   * Prepares member {@code g}'s scan ({@code group}, an {@code ivf_pq} group as {@link #plan} took it, at {@code at}
   * in the pass): its coarse step is enqueued now when it cannot join the others' table launch; the rest follows in
   * {@link #enqueueSelection}, with the other members'. Members are given in group order.
   */
  @Override
  public void enqueueProbes(int g, SearchGroup group, GroupAddresses at) {
    GpuIvfPqIndex index = (GpuIvfPqIndex) group.index(); // a member: plan took only ivf_pq groups
    scans.add(index.enqueueProbes(at.queries(), at.norms(), group.numQueries(), IvfSearch.nprobe(index, group.params()),
        at.accept(), at.acceptRowWords(), keys.at(firstRow[g])));
  }

  /**
   * Enqueues the coarse steps that wait for a table launch, every member's scan into its rows (table launches) and
   * the radix selection of every row's candidates: after every member's {@link #enqueueProbes}, on the same stream.
   */
  @Override
  public void enqueueSelection() {
    GpuIvfPqIndex.enqueueCoarseTable(device, scans);
    GpuIvfPqIndex.enqueueKeysTable(device, scans);
    keys.select(candidates, metric.largestFirst(), candValues, candIds, 0);
  }

  /**
   * Enqueues the members' re-rank: every row's candidates over its member's raw vectors against its member's queries
   * ({@code queries[g]}: device address of group g's), the k best into the results from the first member's
   * {@code outAt}. After {@link #enqueueSelection}, on the same stream.
   */
  @Override
  public void enqueueRerank(long[] queries, DeviceBuffer outV, DeviceBuffer outI, long[] outAt, List<SearchGroup> groups) {
    RerankTable table = new RerankTable();
    long out = BatchSearch.membersOut(firstRow, outAt, k);
    for (int g = 0; g < firstRow.length; g++) {
      if (member(g)) {
        table.add(firstRow[g], ((GpuIvfPqIndex) groups.get(g).index()).rawVectorsAddress(), queries[g]);
      }
    }
    GpuIvfPqIndex.enqueueRerank(device, table, rows, k, candidates, dims, metric, candValues.address(),
        candIds.address(), outV, outI, out);
  }

  @Override
  public void close() {
    try (GpuDevice.Scope s = device.lock()) {
      for (GpuIvfPqIndex.KeysScan scan : scans) {
        scan.close();
      }
      keys.close();
      candValues.close();
      candIds.close();
    }
  }
}
