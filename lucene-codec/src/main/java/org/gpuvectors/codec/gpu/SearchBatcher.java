package org.gpuvectors.codec.gpu;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.pass.SearchGroup;

/**
 * Gathers concurrent searches into batches that the device runs as one pass.
 *
 * <p>Lucene calls a segment's reader once per query and leaf, on the searcher's worker threads, and
 * each call must return its own hits. So the calling threads meet here: a thread that finds the
 * device idle runs at once whatever is queued (its own search at least: a lone query never waits),
 * and searches that arrive while a pass runs queue up and go together in the next one, run by one
 * of their threads. Batches thus grow with the load, with no thread of our own. Up to {@code
 * maxPasses} passes run at once (the device enqueues the next while the last one runs: {@link
 * GpuBackend#concurrentPasses}); a thread starts a pass when its search is queued, fewer are running and the newest
 * running pass is expected to end within the new pass's host enqueue ({@link #startsIn}). A pass
 * takes queued searches in arrival order up to {@code maxBatchQueries} queries (at least one
 * search), groups them by device index (many segments, one pass: see {@link
 * org.gpuvectors.cuda.pass.BatchSearch}), and hands each search exactly its own k results; each caller
 * then fills its own collector on its own thread.
 *
 * <p>Threading: thread-safe; at most {@code maxPasses} passes run at a time.
 */
public final class SearchBatcher {

  /** Runs one pass over a list of groups (the backend); see {@link GpuBackend#search}. */
  @FunctionalInterface
  public interface Pass {
    SearchResult[] run(List<SearchGroup> groups, long[] timing);
  }

  /**
   * One caller's search of one resident index: its queries (one array per query, read only), its k, its accepted vectors
   * ({@code mask} for all its queries, null = all) and its search parameters (the index's kind: lists scanned,
   * a graph's width or exact search). Filled by the pass that runs it.
   */
  public static final class Search {
    final DeviceIndex index;
    final float[][] queries;
    final int numQueries;
    final int k;
    final long[] mask;
    final SearchParams params;
    private SearchResult result;
    private Throwable error;
    private boolean taken; // by a pass; guarded by the batcher's lock
    private boolean done; // guarded by the batcher's lock

    public Search(DeviceIndex index, float[][] queries, int numQueries, int k, long[] mask, SearchParams params) {
      this.index = index;
      this.queries = queries;
      this.numQueries = numQueries;
      this.k = k;
      this.mask = mask;
      this.params = params;
    }

    /** A search of a flat index. */
    public Search(DeviceIndex index, float[][] queries, int numQueries, int k, long[] mask) {
      this(index, queries, numQueries, k, mask, SearchParams.FLAT);
    }

    /** The k best per query, once run without error. */
    public SearchResult result() {
      return result;
    }

    /** What failed the pass that ran this search, or null. */
    public Throwable error() {
      return error;
    }
  }

  private final Pass pass;
  private final int maxBatchQueries;
  private final int maxPasses;
  private final GpuSearchStats stats;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition passEnded = lock.newCondition();
  private final ArrayDeque<Search> queue = new ArrayDeque<>();
  private int running; // passes on the device
  // Pipelining (maxPasses >= 2), guarded by the lock: the newest running pass's start and moving averages of a
  // pass's duration and of its host enqueue, in nanoseconds (0 until a pass has run).
  private long newestStart;
  private long passNanos;
  private long enqueueNanos;

  public SearchBatcher(Pass pass, int maxBatchQueries, int maxPasses, GpuSearchStats stats) {
    if (maxBatchQueries < 1) {
      throw new IllegalArgumentException("maxBatchQueries must be >= 1 but was [" + maxBatchQueries + "]");
    }
    if (maxPasses < 1) {
      throw new IllegalArgumentException("maxPasses must be >= 1 but was [" + maxPasses + "]");
    }
    this.pass = pass;
    this.maxBatchQueries = maxBatchQueries;
    this.maxPasses = maxPasses;
    this.stats = stats;
  }

  /**
   * Runs {@code searches} (queued together, in order) in the next passes, perhaps run by this
   * thread, and returns when all are done.
   */
  public void run(List<Search> searches) {
    lock.lock();
    try {
      queue.addAll(searches);
      boolean interrupted = false;
      while (searches.get(searches.size() - 1).done == false || anyPending(searches)) {
        long now = System.nanoTime();
        long wait = queued(searches) ? startsIn(now) : -1;
        if (wait == 0) {
          running++;
          newestStart = now;
          List<Search> batch = take();
          long[] timing = new long[2];
          lock.unlock();
          try {
            runPass(batch, timing);
          } finally {
            lock.lock();
            for (Search s : batch) {
              s.done = true;
            }
            running--;
            recordPass(System.nanoTime() - now, timing[0]);
            passEnded.signalAll();
          }
        } else {
          try {
            if (wait > 0) {
              passEnded.awaitNanos(wait); // or earlier, when a pass ends
            } else {
              passEnded.await();
            }
          } catch (InterruptedException e) {
            interrupted = true; // our search is queued or running: wait for it, keep the flag
          }
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * When a thread with queued searches may start a pass: now (0), in that many nanoseconds, or when a pass ends (-1).
   * Now when none runs (a lone query never waits). With fewer than {@code maxPasses} running, once the newest of them
   * is expected to end within a pass's host enqueue: a pass begun at once would take the few searches queued so far
   * and read the vectors again (two passes at once halved a one-segment rate), while one begun after the last ends
   * leaves the device idle during its enqueue (90-200 us of a 270-700 us flat pass through Elasticsearch). Caller
   * holds the lock.
   */
  private long startsIn(long now) {
    if (running == 0) {
      return 0;
    }
    if (running >= maxPasses) {
      return -1;
    }
    return Math.max(0, newestStart + passNanos - enqueueNanos - now);
  }

  /** Folds an ended pass's duration and host enqueue into the moving averages (weight 1/8). Caller holds the lock. */
  private void recordPass(long duration, long enqueue) {
    if (passNanos == 0) {
      passNanos = duration;
      enqueueNanos = enqueue;
    } else {
      passNanos += (duration - passNanos) / 8;
      enqueueNanos += (enqueue - enqueueNanos) / 8;
    }
  }

  /** Whether some of {@code searches} still wait in the queue (not taken by a pass). */
  private boolean queued(List<Search> searches) {
    for (Search s : searches) {
      if (s.done == false && s.taken == false) {
        return true;
      }
    }
    return false;
  }

  private static boolean anyPending(List<Search> searches) {
    for (Search s : searches) {
      if (s.done == false) {
        return true;
      }
    }
    return false;
  }

  /** Queued searches in arrival order, up to maxBatchQueries queries (at least one search). */
  private List<Search> take() {
    List<Search> batch = new ArrayList<>();
    int queries = 0;
    while (queue.isEmpty() == false) {
      Search next = queue.peek();
      if (batch.isEmpty() == false && queries + next.numQueries > maxBatchQueries) {
        break;
      }
      batch.add(queue.poll());
      next.taken = true;
      queries += next.numQueries;
    }
    return batch;
  }

  /** The searches that go into one group: one device index, exact or not (device indexes compare by identity). */
  private record GroupKey(DeviceIndex index, boolean exact) {}

  /**
   * The groups of a pass in an order that does not depend on which search came first: a pass's shape (its groups'
   * indexes, query counts and k, in order) is what the device captures and launches again as a CUDA graph, and a
   * query's searches over a field's segments arrive led by whichever segment Lucene asked first (Elasticsearch, 7
   * segments, 16 clients: 567-2,246 captures against 617-1,749 launches a point while the leading segment set the
   * order). By the indexes' identity hash codes (stable while they live; two equal ones keep their order of
   * appearance, a sort being stable), walks before exact searches.
   */
  private static final Comparator<GroupKey> GROUP_ORDER = Comparator
      .comparingInt((GroupKey k) -> System.identityHashCode(k.index()))
      .thenComparing(GroupKey::exact);

  private void runPass(List<Search> batch, long[] timing) {
    long start = System.nanoTime();
    // one group per device index; a graph's exact searches (selective filters) apart from its walks, which would
    // otherwise all run at the group's largest effort: exact
    Map<GroupKey, List<Search>> byKey = new HashMap<>();
    List<GroupKey> order = new ArrayList<>();
    for (Search s : batch) {
      byKey.computeIfAbsent(new GroupKey(s.index, SearchParams.EXACT.equals(s.params)), key -> {
        order.add(key);
        return new ArrayList<>();
      }).add(s);
    }
    order.sort(GROUP_ORDER);
    List<SearchGroup> groups = new ArrayList<>(order.size());
    for (GroupKey key : order) {
      groups.add(group(key.index(), byKey.get(key)));
    }
    SearchResult[] results;
    try {
      results = pass.run(groups, timing);
    } catch (Throwable t) {
      for (Search s : batch) {
        s.error = t; // each caller decides: CPU fallback for CUDA errors, rethrow for bugs
      }
      return;
    }
    for (int g = 0; g < order.size(); g++) {
      int row = 0;
      for (Search s : byKey.get(order.get(g))) {
        s.result = results[g].slice(row, s.numQueries, s.k);
        row += s.numQueries;
      }
    }
    stats.recordBatch(batch.size(), groups.size(), System.nanoTime() - start, timing[0], timing[1]);
  }

  /**
   * The searches of one index as one group: query rows stacked (the arrays, not their contents), the largest k and
   * the widest parameters ({@link SearchParams#widest}: more lists or a wider walk only add candidates: each search
   * gets at least the hits it asked for; a graph's exact searches are a group of their own), masks shared if equal.
   */
  private static SearchGroup group(DeviceIndex index, List<Search> searches) {
    if (searches.size() == 1) {
      Search s = searches.get(0);
      return SearchGroup.ofRows(index, s.queries, s.numQueries, s.k, s.params, s.mask, null);
    }
    int numQueries = 0;
    int k = 0;
    SearchParams params = searches.get(0).params;
    boolean oneMask = true;
    for (Search s : searches) {
      numQueries += s.numQueries;
      k = Math.max(k, s.k);
      params = params.widest(s.params);
      oneMask &= s.mask == searches.get(0).mask; // the same array: a segment's cached live docs, or none
    }
    float[][] queries = new float[numQueries][];
    long[][] masks = oneMask ? null : new long[numQueries][];
    int row = 0;
    for (Search s : searches) {
      System.arraycopy(s.queries, 0, queries, row, s.numQueries);
      for (int q = 0; masks != null && q < s.numQueries; q++) {
        masks[row + q] = s.mask;
      }
      row += s.numQueries;
    }
    return SearchGroup.ofRows(index, queries, numQueries, k, params, oneMask ? searches.get(0).mask : null, masks);
  }
}
