package org.gpuvectors.cuda.pass;

import java.util.List;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.DeviceBuffer;

/**
 * A table launch of a pass that scans several small groups of one index type at once and merges their rows into the
 * pass's results (the flat indexes' scan table). The pass declares it; the index type that launches it implements it
 * and hands out its {@link Planner} ({@link ResidentIndex#scanTables}), so the pass knows no index type.
 */
public interface ScanTable {

  /** Plans the table of a pass's groups. */
  @FunctionalInterface
  interface Planner {
    /**
     * The table of {@code groups} (those in {@code walked}, when not null, are walked in the graph table launch), or
     * null when fewer than two groups may share it.
     */
    ScanTable plan(List<SearchGroup> groups, boolean[] walked);
  }

  /** Whether the members' candidates carry certificates: 4 floats a row after the pass's results. */
  boolean half();

  /** Rows of the merge: the members' queries. */
  int rows();

  /** Group {@code g}'s first row of the merge. */
  int firstRow(int g);

  /** Elements between the members' result rows: their largest k. */
  int stride();

  /** Whether group {@code g} of the pass is a member. */
  boolean member(int g);

  /** The members. */
  int members();

  /**
   * Enqueues the members' scan and the merge of their rows into the results from the first member's {@code outAt},
   * rows {@link #stride()} apart (arguments per group of the pass: device addresses of its queries and accept masks,
   * the masks' row words, and for a {@link #half} table the element offsets of the certificate inputs in {@code
   * outV}). Caller holds the device lock.
   */
  void enqueue(GpuDevice device, List<SearchGroup> groups, long[] queries, long[] accept, long[] acceptRowWords,
               DeviceBuffer outV, DeviceBuffer outI, long[] outAt, long[] statsAt);
}
