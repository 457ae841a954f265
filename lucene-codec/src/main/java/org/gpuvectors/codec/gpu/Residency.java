package org.gpuvectors.codec.gpu;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.MemoryPart;

/**
 * Segment fields resident on the device, under a memory budget.
 *
 * <p>Searches hold a {@link Handle} (a reference count) on what they search: a segment whose reader
 * closes mid-search, or that eviction picks, is freed when its last search ends, never under it.
 * {@link #acquire} is memory-gated: it reserves a field's bytes before uploading, evicting the least
 * recently used fields that no search holds, but only for a field searched half again as often as they are together
 * ({@link Admission}: a working set larger than the budget keeps a stable resident set instead of evicting and
 * uploading per search); when the budget is held by fields in use, or by fields searched as often, it says so (the
 * caller searches on the CPU) instead of waiting. Uploads run outside this object's lock, so
 * searches of resident fields go on while another field uploads; two searches of the same missing
 * field share one upload.
 *
 * <p>Threading: thread-safe. Lock order: this object's lock is never held while waiting for the
 * device; indexes are closed outside it.
 */
public final class Residency {

  /** A segment field: the segment's reader (Lucene shares it across reopens) and the field name. */
  public record Key(Object segment, String field) {}

  /** Produces a field's device index; called at most once per residency of the field. */
  @FunctionalInterface
  public interface Upload {
    DeviceIndex upload() throws IOException;
  }

  /** The outcome of {@link #acquire}: a handle, or the reason the field is not resident. */
  public record Acquired(Handle handle, FallbackReason refused) {}

  private final long budgetBytes;
  private final GpuSearchStats stats;
  private final LinkedHashMap<Key, Entry> entries = new LinkedHashMap<>(16, 0.75f, true); // LRU first
  private final Admission admission = new Admission();
  private long heldBytes; // reserved by entries loading, resident, or removed but still in use
  private boolean closed;

  public Residency(long budgetBytes, GpuSearchStats stats) {
    this.budgetBytes = budgetBytes;
    this.stats = stats;
  }

  /** One segment field's residency. Guarded by the Residency lock, except the immutable fields. */
  private final class Entry {
    final Key key;
    final ResidentForm form; // what of the field is resident (acquire's form), or null: the field's one form
    final long reservedBytes;
    final CompletableFuture<DeviceIndex> loaded = new CompletableFuture<>();
    DeviceIndex index; // set once loaded
    int refs;
    boolean removed; // out of the map (segment closed, evicted, failed): close at the last release

    Entry(Key key, ResidentForm form, long reservedBytes) {
      this.key = key;
      this.form = form;
      this.reservedBytes = reservedBytes;
    }
  }

  /** A search's reference on a resident field; close it when the search ends (exactly once). */
  public final class Handle implements AutoCloseable {
    private final Entry entry;
    private boolean released;

    private Handle(Entry entry) {
      this.entry = entry;
    }

    public DeviceIndex index() {
      return entry.index;
    }

    @Override
    public void close() {
      if (released == false) {
        released = true;
        release(entry);
      }
    }
  }

  /**
   * A handle on {@code key}'s device index, uploading it first if needed. The upload runs on this
   * thread outside the lock; a concurrent acquire of the same key waits for it. Errors of the upload
   * propagate (the reservation is undone).
   *
   * @param bytes device bytes the upload will take (reserved before it starts)
   */
  public Acquired acquire(Key key, long bytes, Upload upload) throws IOException {
    return acquire(key, null, bytes, upload);
  }

  /**
   * {@link #acquire(Key, long, Upload)} for one of the forms a field can be resident in: a field resident (or
   * uploading) in another form is refused ({@link FallbackReason#OTHER_FORM_RESIDENT}), since a search prepared for
   * one form cannot read the other's results. {@code form} null: any form (a field of one form).
   */
  public Acquired acquire(Key key, ResidentForm form, long bytes, Upload upload) throws IOException {
    Entry entry;
    boolean mine = false;
    List<DeviceIndex> toClose = new ArrayList<>();
    synchronized (this) {
      if (closed) {
        return new Acquired(null, FallbackReason.CLOSED);
      }
      entry = entries.get(key);
      admission.record(key);
      if (entry != null && form != null && form != entry.form) {
        return new Acquired(null, FallbackReason.OTHER_FORM_RESIDENT);
      }
      if (entry == null) {
        if (bytes > budgetBytes) {
          return new Acquired(null, FallbackReason.SEGMENT_OVER_BUDGET);
        }
        List<Entry> victims = victimsFor(bytes);
        long victimBytes = victims.stream().mapToLong(v -> v.reservedBytes).sum();
        if (heldBytes - victimBytes + bytes > budgetBytes) {
          return new Acquired(null, FallbackReason.BUDGET_IN_USE);
        }
        if (victims.isEmpty() == false && admission.admits(key, victims.stream().map(v -> v.key).toList()) == false) {
          return new Acquired(null, FallbackReason.NOT_ADMITTED);
        }
        evict(victims, toClose);
        entry = new Entry(key, form, bytes);
        entries.put(key, entry);
        heldBytes += bytes;
        mine = true;
      }
      entry.refs++;
    }
    closeAll(toClose);
    if (mine) {
      load(entry, upload);
    } else {
      awaitLoad(entry);
    }
    return new Acquired(new Handle(entry), null);
  }

  private void load(Entry entry, Upload upload) throws IOException {
    long start = System.nanoTime();
    DeviceIndex index;
    try {
      index = upload.upload();
    } catch (Throwable t) {
      synchronized (this) {
        entry.refs--;
        drop(entry);
        heldBytes -= entry.reservedBytes;
      }
      entry.loaded.completeExceptionally(t);
      throw t;
    }
    stats.recordUpload(System.nanoTime() - start);
    synchronized (this) {
      entry.index = index;
    }
    entry.loaded.complete(index);
  }

  private void awaitLoad(Entry entry) throws IOException {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          entry.loaded.get();
          return;
        } catch (InterruptedException e) {
          interrupted = true; // the search goes on; the caller sees the flag
        } catch (ExecutionException e) {
          synchronized (this) {
            entry.refs--;
          }
          Throwable cause = e.getCause();
          if (cause instanceof IOException io) {
            throw io;
          }
          if (cause instanceof RuntimeException re) {
            throw re;
          }
          if (cause instanceof Error err) {
            throw err;
          }
          throw new IllegalStateException(cause);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * The resident fields to evict for {@code bytes} more (all there are when they are not enough; evicts nothing): those
   * no search holds, the least searched per byte first (ties: the least recently used first), until enough is freed. By searches per byte, not by recency alone: a large
   * field searched rarely gives way before small ones searched often, so that the memory serves the most searches
   * ({@link Admission} then decides whether the newcomer is worth them).
   */
  private List<Entry> victimsFor(long bytes) {
    if (heldBytes + bytes <= budgetBytes) {
      return List.of();
    }
    List<Entry> evictable = new ArrayList<>();
    for (Entry candidate : entries.values()) { // least recently used first
      if (candidate.refs == 0 && candidate.index != null) {
        evictable.add(candidate);
      }
    }
    // a stable sort: equal densities keep the least recently used first
    evictable.sort(Comparator.comparingDouble(e -> admission.count(e.key) / (double) Math.max(1, e.reservedBytes)));
    List<Entry> victims = new ArrayList<>();
    long freed = 0;
    Iterator<Entry> it = evictable.iterator();
    while (heldBytes - freed + bytes > budgetBytes && it.hasNext()) {
      Entry victim = it.next();
      victims.add(victim);
      freed += victim.reservedBytes;
    }
    return victims;
  }

  private void evict(List<Entry> victims, List<DeviceIndex> toClose) {
    for (Entry victim : victims) {
      entries.remove(victim.key);
      victim.removed = true;
      heldBytes -= victim.reservedBytes;
      toClose.add(victim.index);
      stats.recordEviction();
    }
  }

  private void release(Entry entry) {
    DeviceIndex toClose = null;
    synchronized (this) {
      entry.refs--;
      assert entry.refs >= 0 : entry.key;
      if (entry.refs == 0 && entry.removed && entry.index != null) {
        heldBytes -= entry.reservedBytes;
        toClose = entry.index;
      }
    }
    if (toClose != null) {
      toClose.close();
    }
  }

  /** Takes an entry out of the map (its memory is accounted until its last release). */
  private void drop(Entry entry) {
    if (entries.get(entry.key) == entry) {
      entries.remove(entry.key);
    }
    entry.removed = true;
  }

  /**
   * Frees every field of a closing segment: at once when no search holds it, else when the last
   * search holding it ends.
   */
  public void releaseSegment(Object segment) {
    List<DeviceIndex> toClose = new ArrayList<>();
    synchronized (this) {
      admission.forget(segment);
      Iterator<Map.Entry<Key, Entry>> it = entries.entrySet().iterator();
      while (it.hasNext()) {
        Entry entry = it.next().getValue();
        if (entry.key.segment() == segment) {
          it.remove();
          entry.removed = true;
          if (entry.refs == 0 && entry.index != null) {
            heldBytes -= entry.reservedBytes;
            toClose.add(entry.index);
          }
        }
      }
    }
    closeAll(toClose);
  }

  /**
   * Resident fields named {@code field} of the other segments of {@code segment}'s group (its index), in a form that
   * other segments' passes may search ({@link ResidentForm#searchedForPeers}), most recently used first.
   */
  public synchronized java.util.List<Key> residentPeers(GpuSegment segment, String field) {
    java.util.ArrayList<Key> peers = new java.util.ArrayList<>();
    Object group = segment.group();
    for (Entry entry : entries.values()) {
      if (entry.index != null
          && entry.key.segment() != segment
          && entry.key.field().equals(field)
          && (entry.form == null || entry.form.searchedForPeers())
          && entry.key.segment() instanceof GpuSegment other
          && other.group() == group) {
        peers.add(entry.key);
      }
    }
    java.util.Collections.reverse(peers);
    return peers;
  }

  /** A handle on {@code key} if it is resident now (never uploads), else null. */
  public Handle acquireResident(Key key) {
    synchronized (this) {
      Entry entry = entries.get(key);
      if (entry == null || entry.index == null || closed) {
        return null;
      }
      admission.record(key); // a search of it, run ahead in another segment's pass
      entry.refs++;
      return new Handle(entry);
    }
  }

  /**
   * Evicts the loaded fields in {@code form} whose keys {@code which} accepts and that no search holds (counted as
   * evictions); the others stay.
   */
  public void evict(ResidentForm form, java.util.function.Predicate<Key> which) {
    List<DeviceIndex> toClose = new ArrayList<>();
    synchronized (this) {
      List<Entry> victims = new ArrayList<>();
      for (Entry entry : entries.values()) {
        if (entry.form == form && entry.refs == 0 && entry.index != null && which.test(entry.key)) {
          victims.add(entry);
        }
      }
      evict(victims, toClose);
    }
    closeAll(toClose);
  }

  /** Whether any segment field that {@code which} picks is resident (or uploading) in {@code form}. */
  public synchronized boolean holdsAny(ResidentForm form, java.util.function.Predicate<Key> which) {
    for (Entry entry : entries.values()) {
      if (entry.form == form && which.test(entry.key)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The form {@code key} is resident (or uploading) in ({@link #acquire(Key, ResidentForm, long, Upload)}), or null
   * (not resident, or a field of one form).
   */
  public synchronized ResidentForm formOf(Key key) {
    Entry entry = entries.get(key);
    return entry == null ? null : entry.form;
  }

  /** Whether {@code bytes} more fit the budget beside what is held now, evicting nothing. */
  public synchronized boolean fitsFree(long bytes) {
    return heldBytes + bytes <= budgetBytes;
  }

  /** Whether {@code key} is resident now (loaded and not removed). */
  public synchronized boolean isResident(Key key) {
    Entry entry = entries.get(key);
    return entry != null && entry.index != null;
  }

  /** Device bytes held by resident fields (and by removed ones that searches still use). */
  public synchronized long heldBytes() {
    return heldBytes;
  }

  /**
   * Device memory of the resident fields by part ({@link MemoryPart}): {@link #heldBytes} by what it holds, less the
   * fields still uploading and those removed but still searched.
   */
  public synchronized DeviceBytes residentBytesByPart() {
    DeviceBytes sum = DeviceBytes.NONE;
    for (Entry entry : entries.values()) {
      if (entry.index != null) {
        // a compact copy's rows are the field's compact vectors, whatever the index that holds them calls them
        sum = sum.plus(entry.form == ResidentForm.COMPACT_COPY
            ? DeviceBytes.builder().add(MemoryPart.COMPACT_VECTORS, entry.index.deviceBytes()).build()
            : entry.index.deviceBytesByPart());
      }
    }
    return sum;
  }

  /** Resident (or loading) segment fields. */
  public synchronized int size() {
    return entries.size();
  }

  public long budgetBytes() {
    return budgetBytes;
  }

  /** Frees every field no search holds; the rest are freed by their last release. */
  public void close() {
    List<DeviceIndex> toClose = new ArrayList<>();
    synchronized (this) {
      closed = true;
      for (Entry entry : entries.values()) {
        entry.removed = true;
        if (entry.refs == 0 && entry.index != null) {
          heldBytes -= entry.reservedBytes;
          toClose.add(entry.index);
        }
      }
      entries.clear();
    }
    closeAll(toClose);
  }

  private static void closeAll(List<DeviceIndex> indexes) {
    for (DeviceIndex index : indexes) {
      index.close();
    }
  }
}
