package org.gpuvectors.codec.gpu;

import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.gpuvectors.cuda.SearchResult;

/**
 * Results computed ahead for the other segments of a query's index.
 *
 * <p>Lucene asks each segment separately, with the same query vector (the same array) and, without
 * a filter, the segment's own live docs. When the first segment of a query arrives, the service
 * searches every resident segment of that index for it in the same pass (one GPU pass per query,
 * not one per segment) and parks the other segments' results here, keyed by the query array's
 * identity; their own calls, arriving at once or later, take them instead of searching. A result is
 * taken only by the segment and field it was computed for, for a k no larger than it holds, and only
 * if the segment's accepted documents are the instance it was computed with. It can be taken again:
 * Lucene's optimistic knn search asks some segments a second time, with the query's full k.
 *
 * <p>Bounded: a query's results are kept for {@link #LIFETIME_NANOS} and at most {@code capacity}
 * queries at once (beyond, the oldest are dropped: their segments then search for themselves).
 * Thread-safe.
 */
final class Speculations {

  /** One query's speculation: who runs it, when it is done, what it produced. */
  static final class Speculation {
    private final CountDownLatch done = new CountDownLatch(1);
    private final float[] vector; // a copy: the caller's array may be reused for another query
    private final long startNanos = System.nanoTime();
    private final Map<Residency.Key, Parked> parked = new HashMap<>(); // guarded by this

    private record Parked(Object token, SearchResult result) {}

    Speculation(float[] query) {
      this.vector = query.clone();
    }

    boolean expired(long now) {
      return now - startNanos >= LIFETIME_NANOS;
    }

    synchronized void park(Residency.Key key, Object token, SearchResult result) {
      parked.put(key, new Parked(token, result));
    }

    /**
     * Waits for the speculation to finish and takes the result for {@code key}: its first {@code
     * k} per query, or why there is none for this key, token and k.
     *
     * @param spin whether to spin (up to {@link #SPIN_NANOS}) before parking: see {@link Speculations#quiet}
     */
    Taken take(Residency.Key key, Object token, int k, float[] query, boolean spin) {
      if (Arrays.equals(vector, query) == false) {
        return new Taken(null, SpeculationMiss.OTHER_VECTOR); // the same array now holds another vector
      }
      if (spin) {
        for (long end = System.nanoTime() + SPIN_NANOS; done.getCount() != 0 && System.nanoTime() < end; ) {
          Thread.onSpinWait();
        }
      }
      boolean interrupted = false;
      while (true) {
        try {
          done.await();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
      Parked p;
      synchronized (this) {
        p = parked.get(key);
      }
      if (p == null) {
        return new Taken(null, SpeculationMiss.NOT_IN_PASS);
      }
      if (p.token() != token) {
        return new Taken(null, SpeculationMiss.OTHER_LIVE_DOCS);
      }
      if (p.result().k() < k) {
        return new Taken(null, SpeculationMiss.LARGER_K);
      }
      return new Taken(firstK(p.result(), k), null);
    }
  }

  /** What {@link Speculation#take} found: the parked result cut to the k asked for, or why it could not be used. */
  record Taken(SearchResult result, SpeculationMiss miss) {}

  private final Map<Object, Speculation> byQuery;
  private final AtomicInteger running = new AtomicInteger(); // registered and not finished

  Speculations(int capacity) {
    // identity of the query array: equal vectors of different queries never share results
    this.byQuery = new LinkedHashMap<>(16, 0.75f, false) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<Object, Speculation> eldest) {
        return size() > capacity;
      }
    };
  }

  /**
   * The query's speculation, or null after registering {@code mine} as it (the caller runs it). A
   * speculation older than {@link #LIFETIME_NANOS}, or for other vector contents, is replaced: it
   * serves one execution of a query (and Lucene's second round right after), not as a result cache.
   */
  synchronized Speculation claim(float[] query, Speculation mine) {
    long now = System.nanoTime();
    // insertion order is age order: drop the expired ones (their results are held on the heap)
    for (var it = byQuery.values().iterator(); it.hasNext() && it.next().expired(now); ) {
      it.remove();
    }
    IdentityKey key = new IdentityKey(query);
    Speculation existing = byQuery.get(key);
    if (existing != null && existing.expired(now) == false && Arrays.equals(existing.vector, query)) {
      return existing;
    }
    byQuery.remove(key); // re-inserted at the young end
    byQuery.put(key, mine);
    running.incrementAndGet();
    return null;
  }

  /** Ends a speculation that {@link #claim} registered: the segments waiting on it go on. */
  void finish(Speculation mine) {
    mine.done.countDown();
    running.decrementAndGet();
  }

  /**
   * Whether a segment waiting for a speculation should spin rather than park: when it is the only one running. A
   * query alone over an index of many segments waits on the thread that runs the pass in every other segment's task
   * (Lucene's searcher runs the leaves on its executor), and the caller waits on all of them: parked, each task
   * wakes up only after the pass ends, and the caller after the last of them. Spinning takes one wake-up off a lone
   * query's latency; under load (several speculations running) the cores are better spent on other queries.
   */
  boolean quiet() {
    return running.get() <= 1;
  }

  /** How long a waiting segment spins at most ({@link #quiet}): a lone pass over an index's segments is ~0.2 ms. */
  static final long SPIN_NANOS = 500_000L;

  /** How long a query's parked results may be taken (its segments ask within milliseconds). */
  static final long LIFETIME_NANOS = 1_000_000_000L;

  /** Every row cut to its first k entries. */
  static SearchResult firstK(SearchResult all, int k) {
    return all.slice(0, all.numQueries(), k);
  }

  /** A map key by identity (the query array's equals would be identity too, but say it). */
  private record IdentityKey(Object ref) {
    @Override
    public boolean equals(Object o) {
      return o instanceof IdentityKey other && other.ref == ref;
    }

    @Override
    public int hashCode() {
      return System.identityHashCode(ref);
    }
  }

}
