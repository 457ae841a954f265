package org.gpuvectors.cuda.pass;

import java.util.List;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.DeviceBuffer;

/**
 * One candidate selection and re-rank that several small groups of one index type share in a pass (the IVF-PQ
 * indexes' shared key selection): the members' probes, one selection of every member's rows, one re-rank. The pass
 * declares it; the index type implements it and hands out its {@link Planner} ({@link
 * ResidentIndex#sharedSelections}), so the pass knows no index type.
 */
public interface SharedSelection extends AutoCloseable {

  /** Plans the shared selection of a pass's groups. */
  @FunctionalInterface
  interface Planner {
    /**
     * The selection {@code groups} share (those in {@code walked}, when not null, are walked in the graph table
     * launch), or null when fewer than two groups may share one. Caller holds the device lock.
     */
    SharedSelection plan(GpuDevice device, List<SearchGroup> groups, boolean[] walked);
  }

  /** Whether group {@code g} of the pass shares the selection. */
  boolean member(int g);

  /** Whether member {@code g}'s coarse step is in the selection's table launch: it needs no lane of its own. */
  boolean coarseInTable(int g);

  /** The members whose coarse step is in the table launch ({@link #coarseInTable}). */
  int membersInTable();

  /** Prepares member {@code g}'s scan ({@code group} at {@code at} in the pass); members in group order. */
  void enqueueProbes(int g, SearchGroup group, GroupAddresses at);

  /** Enqueues what waits for the table launches and the selection of every row: after every member's probes. */
  void enqueueSelection();

  /**
   * Enqueues the members' re-rank into the results from the first member's {@code outAt} ({@code queries[g]}: device
   * address of group g's queries), after {@link #enqueueSelection}, on the same stream.
   */
  void enqueueRerank(long[] queries, DeviceBuffer outV, DeviceBuffer outI, long[] outAt, List<SearchGroup> groups);

  /** Returns the selection's device memory; takes the device lock. */
  @Override
  void close();
}
