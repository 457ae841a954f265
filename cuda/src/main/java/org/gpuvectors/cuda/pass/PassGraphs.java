package org.gpuvectors.cuda.pass;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.device.GpuDevice;

/**
 * A device's captured search passes ({@link PassGraph}), by shape: the passes a search service repeats (one query
 * over the same segments with the same k and effort, the same few queries at a time) run as one graph launch each
 * after their second sighting. A shape seen once is only remembered; the second pass of it is captured (and then
 * launched); later ones launch an idle graph of it, or capture another while every graph of it is in a pass in
 * flight (at most {@link #PER_KEY}). A pass over several segments waits for its third sighting ({@link
 * #sightingsToCapture}).
 *
 * <p>Bounds: a pass is captured when it is small ({@link #eligible}) and its graph keeps at most {@link
 * #GRAPH_BYTES} of device memory; the graphs together keep at most {@link #TOTAL_BYTES} (the least recently
 * launched idle ones are closed first) and {@link #MAX_GRAPHS}. A shape whose capture failed (a pass with a
 * synchronous step) is not captured again.
 *
 * <p>Owned by its {@link GpuDevice}; every method runs under the device lock.
 */
public final class PassGraphs implements GpuDevice.Attachment {

  static final int MAX_GRAPHS = 64;
  static final int PER_KEY = 4;
  static final long GRAPH_BYTES = 32L << 20;
  static final long TOTAL_BYTES = 256L << 20;
  /** Shapes remembered (seen once, or refused): the least recently seen are forgotten first. */
  private static final int REMEMBERED = 1024;

  /** One group of a pass as far as its launches depend on it: the index searched and the search's shape. */
  record Shape(DeviceIndex index, int numQueries, int k, SearchParams params, int masks) {
    static final int NO_MASK = 0;
    static final int SHARED_MASK = 1;
    static final int QUERY_MASKS = 2;

    public static Shape of(SearchGroup group) {
      int masks = group.sharedMask() != null ? SHARED_MASK : group.queryMasks() != null ? QUERY_MASKS : NO_MASK;
      return new Shape(group.index(), group.numQueries(), group.k(), group.params(), masks);
    }
  }

  /**
   * A pass's shape: its groups' shapes in order and the lanes it may spread over. Two passes of one key enqueue
   * the same launches with the same arguments, up to the contents of their input block (the indexes' own buffers
   * are the same ones; {@link DeviceIndex} is compared by identity).
   */
  record Key(List<Shape> groups, int lanes) {
    boolean reads(DeviceIndex index) {
      for (Shape s : groups) {
        if (s.index() == index) {
          return true;
        }
      }
      return false;
    }
  }

  private final GpuDevice device;
  private final Map<Key, List<PassGraph>> graphs = new LinkedHashMap<>();
  private final Map<Key, Integer> remembered = new LinkedHashMap<>(16, 0.75f, true) { // sightings; REFUSED
    @Override
    protected boolean removeEldestEntry(Map.Entry<Key, Integer> eldest) {
      return size() > REMEMBERED;
    }
  };
  /** A remembered shape that is not captured again ({@link #refuse}). */
  private static final int REFUSED = -1;
  private int count;
  private long bytes;
  private long clock;
  private long captures;
  private long launches;
  private long refusals;

  private PassGraphs(GpuDevice device) {
    this.device = device;
  }

  /** The captured passes of {@code device}, made on first use; caller holds the device lock. */
  public static PassGraphs of(GpuDevice device) {
    device.checkLocked();
    return device.attachment(PassGraphs.class, PassGraphs::new);
  }

  /** What the captured search passes of {@code device} did since it opened, and what they hold ({@link PassGraph}). */
  public static PassGraphStats stats(GpuDevice device) {
    try (GpuDevice.Scope s = device.lock()) {
      return of(device).stats();
    }
  }

  /**
   * Whether a pass may be captured: capture is on, its inputs went up in the one staged copy (no group's queries
   * copied from its own array), and every group holds at most {@link #GROUP_QUERIES} queries (a pass of one group:
   * {@link #LONE_GROUP_QUERIES}): a few queries per segment, the passes whose launches outlast their kernels. Passes
   * of more queries are bound by their kernels, and under concurrent searches their shapes vary more: Elasticsearch
   * at 16 and 64 clients captured one pass in ten with groups of up to 64 queries eligible. A pass over one segment
   * has one shape per query count: at 16 clients its passes of 4-5 searches spent 70-95 us enqueuing while the device
   * idled. A pass over a field's segments has one per query count too since its groups come in a fixed order with a k
   * that does not depend on the segment that led (SearchBatcher, GpuSearchService.passK).
   */
  static boolean eligible(List<SearchGroup> groups, PassLayout layout) {
    if (!layout.staged || layout.anyDirect || groups.isEmpty()) {
      return false;
    }
    int most = groups.size() == 1 ? LONE_GROUP_QUERIES : GROUP_QUERIES;
    for (SearchGroup g : groups) {
      if (g.numQueries() > most) {
        return false;
      }
    }
    return true;
  }

  /**
   * The most queries of a group in a pass of several groups that is captured ({@link #eligible}): a block of the flat
   * scans' queries. Elasticsearch at 64 clients over 8 segments gathered 7.5 queries a segment a pass.
   */
  static final int GROUP_QUERIES = 8;
  /** The most queries of the group of a one-group pass that is captured ({@link #eligible}). */
  public static final int LONE_GROUP_QUERIES = 16;
  /**
   * Sightings of a shape before its pass is captured: two for a pass of one group; three for a pass of several, whose
   * shapes vary more (Elasticsearch, 7 segments, 16 clients: 567-2,246 captures against 617-1,749 launches a point
   * when the second sighting captured): a capture costs about what a few launches save.
   */
  static int sightingsToCapture(int groups) {
    return groups == 1 ? 2 : 3;
  }

  static Key key(List<SearchGroup> groups, int lanes) {
    List<Shape> shapes = new ArrayList<>(groups.size());
    for (SearchGroup g : groups) {
      shapes.add(Shape.of(g));
    }
    return new Key(List.copyOf(shapes), lanes);
  }

  /** An idle graph of {@code key}, now busy, or null. */
  PassGraph take(Key key) {
    List<PassGraph> list = graphs.get(key);
    if (list != null) {
      for (PassGraph g : list) {
        if (!g.busy) {
          g.busy = true;
          g.lastUsed = ++clock;
          launches++;
          return g;
        }
      }
    }
    return null;
  }

  /**
   * Whether a pass of {@code key} (with no idle graph) should be captured now: seen {@link #sightingsToCapture}
   * times with this one, not refused, fewer than {@link #PER_KEY} graphs of it. Counts the sighting.
   */
  boolean shouldCapture(Key key) {
    int seen = remembered.getOrDefault(key, 0);
    if (seen == REFUSED) {
      return false;
    }
    seen = Math.min(seen + 1, Integer.MAX_VALUE - 1);
    remembered.put(key, seen);
    if (seen < sightingsToCapture(key.groups().size())) {
      return false;
    }
    List<PassGraph> list = graphs.get(key);
    return list == null || list.size() < PER_KEY;
  }

  /** A shape that cannot be captured (its capture failed): its passes run uncaptured from now on. */
  void refuse(Key key) {
    remembered.put(key, REFUSED);
    refusals++;
  }

  /**
   * Takes a graph just captured (busy: its pass launches it). Kept for later passes when it is small enough and
   * room is made within the bounds by closing idle graphs least recently launched; else closed when its pass ends,
   * and its key refused when the graph alone is too large.
   */
  void add(PassGraph g) {
    captures++;
    g.busy = true;
    g.lastUsed = ++clock;
    if (g.bytes() > GRAPH_BYTES) {
      g.evicted = true;
      refuse(g.key);
      return;
    }
    while ((count >= MAX_GRAPHS || bytes + g.bytes() > TOTAL_BYTES) && closeLeastRecent()) {
      // made room
    }
    if (count >= MAX_GRAPHS || bytes + g.bytes() > TOTAL_BYTES) {
      g.evicted = true; // every graph kept is in a pass: use this one once
      return;
    }
    graphs.computeIfAbsent(g.key, k -> new ArrayList<>()).add(g);
    count++;
    bytes += g.bytes();
  }

  /** The pass that launched {@code g} ended: the graph is idle again (or closed, when it was evicted meanwhile). */
  void release(PassGraph g) {
    g.busy = false;
    if (g.evicted) {
      remove(g);
    }
  }

  /** Closes the graphs that read {@code index} (closing): those in a pass when the pass ends. */
  public void evict(DeviceIndex index) {
    remembered.keySet().removeIf(k -> k.reads(index));
    List<PassGraph> doomed = new ArrayList<>();
    for (Map.Entry<Key, List<PassGraph>> e : graphs.entrySet()) {
      if (e.getKey().reads(index)) {
        doomed.addAll(e.getValue());
      }
    }
    for (PassGraph g : doomed) {
      g.evicted = true;
      if (!g.busy) {
        remove(g);
      }
    }
  }

  private boolean closeLeastRecent() {
    PassGraph oldest = null;
    for (List<PassGraph> list : graphs.values()) {
      for (PassGraph g : list) {
        if (!g.busy && (oldest == null || g.lastUsed < oldest.lastUsed)) {
          oldest = g;
        }
      }
    }
    if (oldest == null) {
      return false;
    }
    remove(oldest);
    return true;
  }

  /** Closes {@code g} and forgets it (it may be kept or, evicted before it was kept, not). */
  private void remove(PassGraph g) {
    List<PassGraph> list = graphs.get(g.key);
    if (list != null && list.remove(g)) {
      count--;
      bytes -= g.bytes();
      if (list.isEmpty()) {
        graphs.remove(g.key);
      }
    }
    g.close(device);
  }

  /** Closes every graph (the device closes: no pass is in flight). */
  @Override
  public void close() {
    for (Iterator<List<PassGraph>> it = graphs.values().iterator(); it.hasNext(); ) {
      List<PassGraph> list = it.next();
      it.remove();
      for (PassGraph g : list) {
        g.close(device);
      }
    }
    count = 0;
    bytes = 0;
    remembered.clear();
  }

  /** What the device's pass graphs did and hold: for stats, tests and benchmarks. */
  PassGraphStats stats() {
    return new PassGraphStats(captures, launches, refusals, count, bytes);
  }
}
