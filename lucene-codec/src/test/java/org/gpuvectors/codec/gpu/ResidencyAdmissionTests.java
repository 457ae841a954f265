package org.gpuvectors.codec.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.junit.jupiter.api.Test;

/**
 * {@link Residency} with a budget smaller than the fields searched: it keeps a stable resident set (no
 * evict-and-upload per search), lets a field in only when it is searched half again as often as those it would evict,
 * and lets a field no longer searched give way. The device indexes are stand-ins that count their uploads and closes.
 */
class ResidencyAdmissionTests {

  private static final long FIELD_BYTES = 100;

  private final AtomicInteger uploads = new AtomicInteger();
  private final AtomicInteger open = new AtomicInteger();
  private final GpuSearchStats stats = new GpuSearchStats();

  /** A device index that only counts: bytes, and whether it is open. */
  private final class CountedIndex implements DeviceIndex {
    private boolean closed;

    CountedIndex() {
      uploads.incrementAndGet();
      open.incrementAndGet();
    }

    @Override
    public int size() {
      return 1;
    }

    @Override
    public int dims() {
      return 1;
    }

    @Override
    public Metric metric() {
      return Metric.L2;
    }

    @Override
    public org.gpuvectors.cuda.DeviceBytes deviceBytesByPart() {
      return org.gpuvectors.cuda.DeviceBytes.builder()
          .add(org.gpuvectors.cuda.MemoryPart.VECTORS, FIELD_BYTES)
          .build();
    }

    @Override
    public void checkSearch(SearchParams params, int k) {}

    @Override
    public void close() {
      if (closed == false) {
        closed = true;
        open.decrementAndGet();
      }
    }
  }

  /** Searches {@code key} once: acquires and releases it; returns the refusal, null when it was resident. */
  private FallbackReason search(Residency residency, Residency.Key key) throws IOException {
    Residency.Acquired acquired = residency.acquire(key, FIELD_BYTES, CountedIndex::new);
    if (acquired.handle() == null) {
      return acquired.refused();
    }
    acquired.handle().close();
    return null;
  }

  /** Searches {@code key} {@code times} times, each resident. */
  private void searchTimes(Residency residency, Residency.Key key, int times) throws IOException {
    for (int i = 0; i < times; i++) {
      assertNull(search(residency, key), "search " + (i + 1));
    }
  }

  private static List<Residency.Key> fields(int n) {
    List<Residency.Key> keys = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      keys.add(new Residency.Key(new Object(), "vec"));
    }
    return keys;
  }

  /**
   * A field is resident in one form at a time: a search prepared for another form of it is refused (it could not read
   * that form's results), one that takes any form is not, and the form is known while the field uploads and after.
   */
  @Test
  void aFieldResidentInOneFormRefusesSearchesPreparedForAnother() throws IOException {
    Residency residency = new Residency(4 * FIELD_BYTES, stats);
    Residency.Key key = fields(1).get(0);
    assertNull(residency.formOf(key));
    assertTrue(residency.fitsFree(4 * FIELD_BYTES));
    Residency.Acquired codes = residency.acquire(key, ResidentForm.CODES, FIELD_BYTES, CountedIndex::new);
    assertEquals(ResidentForm.CODES, residency.formOf(key));
    assertTrue(residency.fitsFree(3 * FIELD_BYTES));
    assertFalse(residency.fitsFree(3 * FIELD_BYTES + 1), "the field's bytes are held");
    Residency.Acquired whole = residency.acquire(key, ResidentForm.CODES_WITH_VECTORS, 2 * FIELD_BYTES, CountedIndex::new);
    assertNull(whole.handle());
    assertEquals(FallbackReason.OTHER_FORM_RESIDENT, whole.refused());
    Residency.Acquired same = residency.acquire(key, ResidentForm.CODES, FIELD_BYTES, CountedIndex::new);
    Residency.Acquired any = residency.acquire(key, FIELD_BYTES, CountedIndex::new);
    assertSame(codes.handle().index(), same.handle().index());
    assertSame(codes.handle().index(), any.handle().index());
    assertEquals(1, uploads.get(), "one upload, in the first form asked for");
    codes.handle().close();
    same.handle().close();
    any.handle().close();
    residency.releaseSegment(key.segment());
    assertNull(residency.formOf(key));
    assertEquals(0, open.get());
  }

  @Test
  void aWorkingSetLargerThanTheBudgetStaysResidentInsteadOfThrashing() throws IOException {
    Residency residency = new Residency(10 * FIELD_BYTES, stats);
    List<Residency.Key> keys = fields(15); // every search visits every segment, as a knn query does: round robin
    int refused = 0;
    for (int round = 0; round < 200; round++) {
      for (Residency.Key key : keys) {
        FallbackReason reason = search(residency, key);
        if (reason != null) {
          assertEquals(FallbackReason.NOT_ADMITTED, reason);
          refused++;
        }
      }
    }
    // least recently used eviction would upload on every one of the 3,000 searches; admission uploads the first ten
    assertEquals(10, uploads.get(), "uploads");
    assertEquals(0, stats.evictions(), "evictions");
    assertEquals(200 * 5, refused, "the five fields that do not fit are searched on the CPU, every time");
    assertEquals(10 * FIELD_BYTES, residency.heldBytes());
    residency.close();
    assertEquals(0, open.get(), "every index closed");
  }

  @Test
  void aFieldSearchedMoreOftenThanTheOneItWouldEvictTakesItsPlace() throws IOException {
    Residency residency = new Residency(2 * FIELD_BYTES, stats);
    List<Residency.Key> keys = fields(3);
    Residency.Key a = keys.get(0);
    Residency.Key b = keys.get(1);
    Residency.Key c = keys.get(2);
    assertNull(search(residency, a));
    assertNull(search(residency, b));
    assertEquals(FallbackReason.NOT_ADMITTED, search(residency, c), "searched once, as often as a: not in");
    assertTrue(residency.isResident(a) && residency.isResident(b));
    assertNull(search(residency, c), "searched twice, half again as often as a (the least recently used): in");
    assertTrue(residency.isResident(c));
    assertFalse(residency.isResident(a), "a evicted");
    assertTrue(residency.isResident(b));
    assertEquals(1, stats.evictions());
    assertEquals(2, open.get(), "a's index closed, b's and c's open");
  }

  @Test
  void aFieldIsAdmittedOnlyWhenSearchedMoreThanAllItWouldEvictTogether() throws IOException {
    Residency residency = new Residency(2 * FIELD_BYTES, stats);
    List<Residency.Key> keys = fields(2);
    for (Residency.Key key : keys) {
      searchTimes(residency, key, 3);
    }
    Residency.Key big = new Residency.Key(new Object(), "vec");
    for (int i = 0; i < 9; i++) { // 9 searches against 3 + 3: not half again as many as both together
      Residency.Acquired acquired = residency.acquire(big, 2 * FIELD_BYTES, CountedIndex::new);
      assertNull(acquired.handle(), "search " + (i + 1));
      assertEquals(FallbackReason.NOT_ADMITTED, acquired.refused());
    }
    Residency.Acquired acquired = residency.acquire(big, 2 * FIELD_BYTES, CountedIndex::new);
    assertNotNull(acquired.handle(), "10 searches against 6: in, in place of both");
    acquired.handle().close();
    assertEquals(2, stats.evictions());
    assertFalse(residency.isResident(keys.get(0)) || residency.isResident(keys.get(1)));
  }

  /**
   * The fields a newcomer would evict are those searched least per byte, not the least recently used: a large field
   * searched a few times gives way before a small one searched often, so that the swap serves more searches.
   */
  @Test
  void aLargeFieldSearchedRarelyGivesWayBeforeASmallOneSearchedOften() throws IOException {
    Residency residency = new Residency(4 * FIELD_BYTES, stats);
    Residency.Key small = fields(1).get(0);
    searchTimes(residency, small, 10); // 10 searches in 100 bytes, the least recently used
    Residency.Key large = new Residency.Key(new Object(), "vec");
    for (int i = 0; i < 3; i++) { // 3 searches in 300 bytes, the most recently used
      Residency.Acquired acquired = residency.acquire(large, 3 * FIELD_BYTES, CountedIndex::new);
      assertNotNull(acquired.handle(), "search " + (i + 1));
      acquired.handle().close();
    }
    Residency.Key newcomer = new Residency.Key(new Object(), "vec");
    for (int i = 0; i < 4; i++) { // 4 searches: not half again as many as the large field's 3
      assertEquals(FallbackReason.NOT_ADMITTED, search(residency, newcomer), "search " + (i + 1));
    }
    // 5 against the large field's 3: in, in its place (least recently used first, the small field would have been
    // the victim, and 5 searches are far from half again its 10)
    assertNull(search(residency, newcomer));
    assertFalse(residency.isResident(large), "the large field evicted");
    assertTrue(residency.isResident(small) && residency.isResident(newcomer));
    assertEquals(2 * FIELD_BYTES, residency.heldBytes());
  }

  @Test
  void aFieldNoLongerSearchedGivesWayWithinAFewHalvings() throws IOException {
    Residency residency = new Residency(FIELD_BYTES, stats);
    Residency.Key old = fields(1).get(0);
    searchTimes(residency, old, 500);
    Residency.Key now = new Residency.Key(new Object(), "vec");
    int searches = 0;
    while (residency.isResident(now) == false) {
      search(residency, now);
      searches++;
      assertTrue(searches <= 4 * 1024, "still refused after " + searches + " searches");
    }
    assertTrue(searches > 1, "not at once: " + searches);
    assertFalse(residency.isResident(old));
  }

  @Test
  void freeMemoryIsTakenWithoutAsking() throws IOException {
    Residency residency = new Residency(3 * FIELD_BYTES, stats);
    Residency.Key hot = fields(1).get(0);
    searchTimes(residency, hot, 100);
    for (Residency.Key cold : fields(2)) {
      assertNull(search(residency, cold), "room left: admitted on its first search");
    }
    assertEquals(3, uploads.get());
  }

  @Test
  void aClosedSegmentIsForgotten() throws IOException {
    Residency residency = new Residency(FIELD_BYTES, stats);
    Residency.Key gone = fields(1).get(0);
    searchTimes(residency, gone, 100);
    residency.releaseSegment(gone.segment());
    assertEquals(0, residency.heldBytes());
    Residency.Key next = fields(1).get(0);
    assertNull(search(residency, next), "the memory and the counts of the closed segment are free");
  }
}
