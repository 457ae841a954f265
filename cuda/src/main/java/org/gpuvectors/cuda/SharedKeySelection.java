package org.gpuvectors.cuda;

import java.util.List;

/**
 * The small {@link GpuIvfPqIndex} groups of one pass (a query or a few over each segment of an index) that share
 * one candidate selection ({@link BatchSearch}): each group's keys scan writes its queries' rows into one buffer of
 * rows ({@link GpuIvfPqIndex#enqueueKeyRows}, on the lanes), one radix selection takes every row's candidates (on
 * lane 0, after the lanes joined it), and each group re-ranks its own rows ({@link GpuIvfPqIndex#enqueueRerank},
 * on the lanes again). Alone, every segment paid its own radix selection: six of the host's ~13 launches and
 * memsets per segment, and a GPU chain of five kernels.
 *
 * <p>Members share the re-rank depth ({@link GpuIvfPqIndex#candidates}) and the metric's order: the selection
 * takes one k and one output scale. The first eligible group sets them; other eligible groups join while the rows
 * stay within {@link #BUDGET_BYTES}; the rest search alone. Rows are as wide as the widest member's.
 *
 * <p>Owns its device buffers (pool blocks, returned by {@link #close}); used under the device lock.
 */
final class SharedKeySelection implements AutoCloseable {
  /** Bytes of keys and ids (8 a vector) of all members' rows at most. */
  static final long BUDGET_BYTES = 4 * GpuIvfPqIndex.KEYS_BUDGET_BYTES;

  private final GpuDevice device;
  private final int[] firstRow; // per group of the pass, its first row, or -1 for a group that is not a member
  private final int members;
  private final int candidates;
  private final boolean largestFirst;
  private final IvfSearch.KeyBuffers keys;
  private final DeviceBuffer candValues;
  private final DeviceBuffer candIds;

  private SharedKeySelection(GpuDevice device, int[] firstRow, int members, int rows, long rowWidth, int candidates,
                             boolean largestFirst) {
    this.device = device;
    this.firstRow = firstRow;
    this.members = members;
    this.candidates = candidates;
    this.largestFirst = largestFirst;
    IvfSearch.KeyBuffers k = new IvfSearch.KeyBuffers(device, rows, rowWidth);
    DeviceBuffer v = null;
    boolean ok = false;
    try {
      v = device.allocate(4L * rows * candidates);
      candIds = device.allocate(4L * rows * candidates);
      ok = true;
    } finally {
      if (!ok) {
        k.close();
        if (v != null) {
          v.close();
        }
      }
    }
    keys = k;
    candValues = v;
    device.countSharedSelection();
  }

  /**
   * The shared selection of the pass's groups, or null when fewer than two groups may share one. Eligible: an
   * {@code ivf_pq} group not walked in the graph table launch, with queries and vectors, that takes the small-batch
   * keys path with the device re-rank ({@link GpuIvfPqIndex#sharedKeysRowWidth}). Caller holds the lock.
   */
  static SharedKeySelection plan(GpuDevice device, List<SearchGroup> groups, boolean[] walked) {
    int[] firstRow = new int[groups.size()];
    java.util.Arrays.fill(firstRow, -1);
    int members = 0;
    int rows = 0;
    long width = 0;
    int candidates = 0;
    boolean largestFirst = false;
    for (int g = 0; g < groups.size(); g++) {
      SearchGroup group = groups.get(g);
      if (!(group.index() instanceof GpuIvfPqIndex pq) || (walked != null && walked[g]) || group.numQueries() == 0
          || pq.size() == 0) {
        continue;
      }
      long w = pq.sharedKeysRowWidth(group.numQueries(), group.nprobe());
      if (w == 0) {
        continue;
      }
      int kc = pq.candidates(group.k());
      boolean largest = pq.metric().largestFirst();
      if (members == 0) {
        candidates = kc;
        largestFirst = largest;
      } else if (kc != candidates || largest != largestFirst) {
        continue;
      }
      long wider = Math.max(width, w);
      if (8L * (rows + group.numQueries()) * wider > BUDGET_BYTES) {
        continue;
      }
      firstRow[g] = rows;
      rows += group.numQueries();
      width = wider;
      members++;
    }
    return members < 2 ? null : new SharedKeySelection(device, firstRow, members, rows, width, candidates, largestFirst);
  }

  /** Groups sharing the selection. */
  int members() {
    return members;
  }

  /** Whether group {@code g} of the pass shares the selection. */
  boolean member(int g) {
    return firstRow[g] >= 0;
  }

  /** Where member {@code g}'s scan appends its rows. */
  IvfSearch.RowsAt rowsOf(int g) {
    return keys.at(firstRow[g]);
  }

  /** Enqueues the radix selection of every row's candidates (after every member's scan, on the same stream). */
  void select() {
    keys.select(candidates, largestFirst, candValues, candIds, 0);
  }

  /** Device address of member {@code g}'s candidate values (row q of the group at q x candidates). */
  long candValues(int g) {
    return candValues.address() + 4L * firstRow[g] * candidates;
  }

  /** Device address of member {@code g}'s candidate ids. */
  long candIds(int g) {
    return candIds.address() + 4L * firstRow[g] * candidates;
  }

  @Override
  public void close() {
    try (GpuDevice.Scope s = device.lock()) {
      keys.close();
      candValues.close();
      candIds.close();
    }
  }
}
