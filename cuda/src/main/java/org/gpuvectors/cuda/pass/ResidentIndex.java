package org.gpuvectors.cuda.pass;

import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.DeviceBuffer;

/**
 * What every {@link DeviceIndex} shares: its device, its shape (vectors, floats per vector, metric) and
 * its closing. {@link #close} returns the index's device memory once, under the device lock, or
 * nothing when the device went first (node shutdown: its context took the memory with it); searches
 * after it fail ({@link #ensureOpen}).
 */
public abstract class ResidentIndex implements DeviceIndex {

  protected final GpuDevice device;
  protected final int n;
  protected final int dims;
  protected final Metric metric;
  private boolean closed;

  protected ResidentIndex(GpuDevice device, int n, int dims, Metric metric) {
    this.device = device;
    this.n = n;
    this.dims = dims;
    this.metric = metric;
  }

  /** The device that holds this index. */
  public final GpuDevice device() {
    return device;
  }

  @Override
  public final int size() {
    return n;
  }

  @Override
  public final int dims() {
    return dims;
  }

  @Override
  public final Metric metric() {
    return metric;
  }

  /** Throws when the index was closed; callers hold the device lock. */
  protected final void ensureOpen() {
    if (closed) {
      throw new IllegalStateException(getClass().getSimpleName() + " closed");
    }
  }

  /** Returns the index's device memory to the pool. */
  @Override
  public final void close() {
    if (device.isClosed()) {
      closed = true; // the device went first (node shutdown): its context took the memory with it
      return;
    }
    try (GpuDevice.Scope s = device.lock()) {
      if (!closed) {
        closed = true;
        PassGraphs.of(device).evict(this); // captured passes read the index's buffers
        freeDeviceMemory();
      }
    }
  }

  /**
   * The index of a group of a pass: every index the pass runs is resident here; another implementation of {@link
   * DeviceIndex} (a host-only test double) has no batched search.
   */
  static ResidentIndex of(DeviceIndex index) {
    if (index instanceof ResidentIndex resident) {
      return resident;
    }
    throw new IllegalArgumentException("no batched search for " + index.getClass().getSimpleName());
  }

  /**
   * Enqueues this index's search of {@code group} (its {@link SearchParams} checked by {@link #checkSearch}) in a
   * pass, without waiting: per query the group's k best (distance, ordinal) pairs at {@code at.outAt() + q * k} of
   * the pass's results. Caller holds the device lock; the group has queries and this index vectors.
   */
  protected abstract void enqueue(SearchGroup group, GroupAddresses at);

  /**
   * Whether this index's lone search of a group asks for the group's arriving queries block by block ({@link
   * QueryUploads.Feed#await}): else the pass waits for all of them before its first kernel.
   */
  protected boolean readsQueriesBlockByBlock() {
    return false;
  }

  /**
   * Whether a pass normalises this index's queries when its metric is {@link Metric#COSINE} (the float indexes, whose
   * vectors were normalised at upload); false for an index that computes the cosine from the raw query itself.
   */
  protected boolean normalisesCosineQueries() {
    return true;
  }

  /** Whether a pass hands {@code index} its queries normalised ({@link #normalisesCosineQueries}). */
  static boolean takesNormalisedQueries(DeviceIndex index) {
    return index.metric() == Metric.COSINE
        && (!(index instanceof ResidentIndex resident) || resident.normalisesCosineQueries());
  }

  /**
   * Whether {@code params} ask for a graph walk, which a pass of several small walks runs as one table launch
   * ({@link BatchSearch#tableWalks}).
   */
  protected boolean walks(SearchParams params) {
    return false;
  }

  /**
   * Whether this index's lone search of {@code group} writes certificate inputs after the pass's results (4 floats
   * a query, {@link GroupAddresses#statsAt}): its queries not certified are then searched again after the pass
   * ({@link #searchUncertifiedAgain}).
   */
  protected boolean writesCertificates(SearchGroup group) {
    return false;
  }

  /**
   * After the pass: searches again each query of {@code group} whose certificate (at element {@code statsAt} of
   * {@code distances}) does not hold, and writes its results over the pass's (rows {@code stride} elements apart
   * from {@code outAt}). Only for a group whose search wrote certificates ({@link #writesCertificates}, or a member of
   * a half scan table).
   */
  protected void searchUncertifiedAgain(SearchGroup group, float[] distances, int[] ids, int statsAt, long outAt, int stride) {
    throw new IllegalStateException(getClass().getSimpleName() + " writes no certificates");
  }

  /** The planner of the scan table this index type's small groups share in a pass ({@link ScanTable}), or null. */
  protected ScanTable.Planner scanTables() {
    return null;
  }

  /** The planner of the selection this index type's small groups share in a pass ({@link SharedSelection}), or null. */
  protected SharedSelection.Planner sharedSelections() {
    return null;
  }

  /** The table launch of this index type's walks ({@link #walks}), or null when it does not walk. */
  protected WalkTable walkTable() {
    return null;
  }

  /** What {@link #checkSearch} throws for another kind's parameters: the kind this index searches with. */
  public final IllegalArgumentException refused(String wanted, SearchParams params) {
    return new IllegalArgumentException(getClass().getSimpleName() + " searches with SearchParams." + wanted
        + ", not " + params);
  }

  /** Frees what the index holds on the device; called once, by {@link #close}, under the device lock. */
  protected abstract void freeDeviceMemory();

  /**
   * Frees a flat index and device buffers (nulls skipped): what an index owns, also when its upload
   * fails half way.
   */
  protected static void free(GpuDevice device, ResidentIndex flat, DeviceBuffer... buffers) {
    if (flat != null) {
      flat.close();
    }
    try (GpuDevice.Scope s = device.lock()) {
      for (DeviceBuffer b : buffers) {
        if (b != null) {
          b.close();
        }
      }
    }
  }
}
