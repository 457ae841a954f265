package org.gpuvectors.cuda.pass;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.rerank.RerankStats;

/**
 * What the search passes on one device did since it opened, for the node's stats, the tests that check which path a
 * pass took, and benchmarks. Kept apart from {@link GpuDevice}, which owns the device's resources: the device holds
 * one as an attachment it knows nothing of ({@link #of}). Passes count under the device lock; the FP16 scan's certificates are checked
 * after a pass, off the lock; anyone may read at any time.
 */
public final class PassCounters implements GpuDevice.Attachment {
  private final AtomicLong lanePasses = new AtomicLong(); // passes spread over two lanes or more
  private final AtomicLong sharedSelections = new AtomicLong(); // passes whose ivf_pq groups shared one selection
  private final AtomicLong flatScanTables = new AtomicLong(); // passes whose flat groups shared one scan launch
  private final AtomicLong overlappedPasses = new AtomicLong(); // passes begun while another was in flight
  private final LongAdder halfScanQueries = new LongAdder();
  private final LongAdder halfScanRejected = new LongAdder();
  private PassCounters() {}

  /** What the search passes on {@code device} did since it opened; any thread, with or without the lock. */
  public static PassCounters of(GpuDevice device) {
    return device.attachment(PassCounters.class, d -> new PassCounters());
  }

  /** Passes spread over two lanes or more. */
  public long lanePasses() {
    return lanePasses.get();
  }

  /** Passes whose small {@code ivf_pq} groups shared one candidate selection ({@code SharedKeySelection}). */
  public long sharedSelections() {
    return sharedSelections.get();
  }

  /** Passes whose small flat groups shared one scan launch ({@code FlatScanTable}). */
  public long flatScanTables() {
    return flatScanTables.get();
  }

  /** Passes begun while another pass was in flight. */
  public long overlappedPasses() {
    return overlappedPasses.get();
  }

  /**
   * Queries the flat indexes' FP16 candidate scan answered, and those its certificate rejected (searched again in
   * FP32): {@code GpuFlatIndex#halfStats} summed over the device's indexes, closed ones included.
   */
  public RerankStats halfScanStats() {
    return new RerankStats(halfScanQueries.sum(), halfScanRejected.sum());
  }

  void countLanePass() {
    lanePasses.incrementAndGet();
  }

  public void countSharedSelection() {
    sharedSelections.incrementAndGet();
  }

  public void countFlatScanTable() {
    flatScanTables.incrementAndGet();
  }

  void countOverlappedPass() {
    overlappedPasses.incrementAndGet();
  }

  /** Counts one certificate check of the half scan ({@code GpuFlatIndex#uncertifiedHalf}). */
  public void countHalfScan(int queries, int rejected) {
    halfScanQueries.add(queries);
    halfScanRejected.add(rejected);
  }

  /**
   * The counters a search pass moves (lane passes, shared selections, flat scan tables), for {@link PassGraph}: a
   * launch of a captured pass counts what the pass counted when it was captured. Under the device lock.
   */
  long[] passCounts() {
    return new long[] {lanePasses.get(), sharedSelections.get(), flatScanTables.get()};
  }

  /** Adds {@code delta} (as {@link #passCounts} orders them); under the device lock. */
  void addPassCounts(long[] delta) {
    lanePasses.addAndGet(delta[0]);
    sharedSelections.addAndGet(delta[1]);
    flatScanTables.addAndGet(delta[2]);
  }

  /** Sets the pass counts back to {@code values} ({@link #passCounts}); under the device lock. */
  void restorePassCounts(long[] values) {
    lanePasses.set(values[0]);
    sharedSelections.set(values[1]);
    flatScanTables.set(values[2]);
  }
}
