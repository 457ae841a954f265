package org.gpuvectors.codec.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.MemoryPart;
import org.gpuvectors.cuda.SearchResult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The search service's batching, residency and fault handling, on a {@link FakeBackend}: these run
 * on every machine (CI has no GPU); the real device runs the same service in the GPU bundle.
 */
class GpuSearchServiceTests {

  private static final int DIMS = 8;
  private static final VectorSimilarityFunction SIM = VectorSimilarityFunction.EUCLIDEAN;

  private final Random random = new Random(42);
  private final List<GpuSearchService> services = new ArrayList<>();

  @AfterEach
  void closeServices() {
    services.forEach(GpuSearchService::close);
  }

  private GpuSearchService service(FakeBackend backend, double budget) {
    GpuSearchService service =
        GpuSearchService.withBackend(backend, new GpuSearchService.Settings(GpuSearchService.Mode.AUTO, 0, budget, 1024));
    services.add(service);
    return service;
  }

  /** A segment: its key object and its vectors. */
  private record Segment(Object key, List<float[]> vectors) {
    FloatVectorValues values() {
      return FloatVectorValues.fromFloats(vectors, DIMS);
    }
  }

  private Segment segment(int size) {
    List<float[]> vectors = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      vectors.add(vector());
    }
    return new Segment(new Object(), vectors);
  }

  private float[] vector() {
    float[] v = new float[DIMS];
    for (int d = 0; d < DIMS; d++) {
      v[d] = random.nextFloat() * 2 - 1;
    }
    return v;
  }

  private long[] randomMask(int size, Random r) {
    long[] mask = new long[(size + 63) / 64];
    for (int i = 0; i < size; i++) {
      if (r.nextInt(3) == 0) {
        mask[i >>> 6] |= 1L << i;
      }
    }
    return mask;
  }

  private static SearchResult search(GpuSearchService service, Segment s, float[] query, int k, long[] mask)
      throws IOException {
    return service.search(s.key(), "vec", s.values(), SIM, query, 1, k, mask);
  }

  /** One planned search: its segment, query, k and mask. */
  private record Planned(int segment, float[] query, int k, long[] mask) {}

  @Test
  void batchedSearchesGetExactlyTheirOwnResults() throws Exception {
    batchedSearchesGetExactlyTheirOwnResults(1);
  }

  /** As above with two passes in flight at once (the CUDA backend's default): never more than two, and two at times. */
  @Test
  void passesInFlightTogetherGiveEachSearchItsOwnResults() throws Exception {
    FakeBackend backend = batchedSearchesGetExactlyTheirOwnResults(2);
    assertEquals(2, backend.maxPassesInFlight.get(), "two passes ran at once, never more");
  }

  private FakeBackend batchedSearchesGetExactlyTheirOwnResults(int passesAtOnce) throws Exception {
    FakeBackend backend = new FakeBackend(1L << 30);
    backend.concurrentPasses = passesAtOnce;
    backend.passMillis = 3; // searches queue up behind a running pass
    GpuSearchService service = service(backend, 1.0);
    List<Segment> segments = new ArrayList<>();
    List<long[]> liveMasks = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      segments.add(segment(150 + 40 * i));
      liveMasks.add(randomMask(segments.get(i).vectors().size(), random));
    }
    List<Planned> plan = new ArrayList<>();
    for (int i = 0; i < 240; i++) {
      int seg = random.nextInt(segments.size());
      int size = segments.get(seg).vectors().size();
      long[] mask = switch (random.nextInt(3)) {
        case 0 -> null;
        case 1 -> liveMasks.get(seg); // shared by every search of the segment, like cached live docs
        default -> randomMask(size, random); // a filter of its own
      };
      plan.add(new Planned(seg, vector(), new int[] {1, 5, 17, 40}[random.nextInt(4)], mask));
    }
    SearchResult[] batched = new SearchResult[plan.size()];
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int i = 0; i < plan.size(); i++) {
        int at = i;
        futures.add(pool.submit(() -> {
          Planned p = plan.get(at);
          batched[at] = search(service, segments.get(p.segment()), p.query(), p.k(), p.mask());
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    GpuSearchStats stats = service.stats();
    assertEquals(plan.size(), stats.gpuSearches(), () -> "every search on the (fake) GPU: " + stats);
    assertEquals(0, stats.cpuFallbacks());
    assertTrue(stats.batches() < plan.size(), () -> "searches were batched: " + stats);
    assertTrue(backend.maxGroupsPerPass.get() > 1, "a pass searched several segments");
    backend.passMillis = 0;
    for (int i = 0; i < plan.size(); i++) {
      Planned p = plan.get(i);
      SearchResult alone = search(service, segments.get(p.segment()), p.query(), p.k(), p.mask());
      assertEquals(p.k(), batched[i].k(), "its own k");
      assertEquals(alone.count(0), batched[i].count(0));
      for (int j = 0; j < alone.count(0); j++) {
        assertEquals(alone.id(0, j), batched[i].id(0, j), "search " + i + " rank " + j);
        assertEquals(alone.distance(0, j), batched[i].distance(0, j));
        int id = batched[i].id(0, j);
        assertTrue(p.mask() == null || ((p.mask()[id >>> 6] >>> id) & 1) == 1, "id passes its own filter");
      }
    }
    assertTrue(backend.maxPassesInFlight.get() <= passesAtOnce, "at most " + passesAtOnce + " passes at once");
    return backend;
  }

  @Test
  void aLoneSearchRunsAtOnceOnItsOwnThread() throws IOException {
    FakeBackend backend = new FakeBackend(1L << 30);
    GpuSearchService service = service(backend, 1.0);
    Segment s = segment(100);
    assertNotNull(search(service, s, vector(), 3, null));
    assertEquals(List.of(Thread.currentThread()), backend.passThreads, "no dispatcher thread, no waiting for one");
    assertEquals(1, service.stats().batches());
    assertEquals(1, service.stats().batchSearches());
  }

  @Test
  void aSegmentClosedMidSearchIsFreedWhenTheSearchEnds() throws Exception {
    FakeBackend backend = new FakeBackend(1L << 30);
    GpuSearchService service = service(backend, 1.0);
    Segment s = segment(64);
    assertTrue(service.warm(s.key(), "vec", s.values(), SIM, null));
    FakeBackend.FakeIndex index = backend.indexes.get(0);
    backend.passMillis = 300;
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      Future<SearchResult> running = pool.submit(() -> search(service, s, vector(), 5, null));
      while (backend.passes.get() == 0) {
        Thread.sleep(1);
      }
      service.releaseSegment(s.key()); // the segment's reader closes while its search runs
      assertFalse(index.isClosed(), "not freed under a running search");
      assertFalse(service.isResident(s.key(), "vec"));
      assertEquals(5, running.get(10, TimeUnit.SECONDS).count(0));
    } finally {
      pool.shutdownNow();
    }
    assertTrue(index.isClosed(), "freed when the search ended");
    assertEquals(0, backend.liveBytes.get());
    assertEquals(0, service.residentBytes());
  }

  @Test
  void theBudgetHoldsUnderLoad() throws Exception {
    FakeBackend backend = new FakeBackend(1L << 20);
    List<Segment> segments = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      segments.add(segment(200)); // 6.4 KB each
    }
    double budget = 3.5 * 200 * DIMS * 4 / (1 << 20); // room for 3 segments
    GpuSearchService service = service(backend, budget);
    backend.passMillis = 1;
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<Boolean>> futures = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        long seed = t;
        futures.add(pool.submit(() -> {
          Random r = new Random(seed);
          for (int i = 0; i < 40; i++) {
            Segment s = segments.get(r.nextInt(segments.size()));
            SearchResult result = search(service, s, s.vectors().get(0), 1, null);
            if (result != null && result.id(0, 0) != 0) {
              return false; // the nearest neighbour of a segment's vector 0 is itself
            }
          }
          return true;
        }));
      }
      for (Future<Boolean> f : futures) {
        assertTrue(f.get(60, TimeUnit.SECONDS));
      }
    } finally {
      pool.shutdownNow();
    }
    GpuSearchStats stats = service.stats();
    // what the GPU did not serve was refused for memory: held by searches, or by segments searched as often
    assertEquals(320, stats.gpuSearches() + stats.cpuFallbacks(FallbackReason.BUDGET_IN_USE)
        + stats.cpuFallbacks(FallbackReason.NOT_ADMITTED), stats::toString);
    assertTrue(stats.cpuFallbacks(FallbackReason.NOT_ADMITTED) > 0, stats::toString);
    assertTrue(stats.uploads() < 320 / 4, () -> "a stable resident set, not an upload a search: " + stats);
    assertTrue(backend.peakLiveBytes.get() <= service.budgetBytes(),
        () -> "device memory peak " + backend.peakLiveBytes + " within budget " + service.budgetBytes());
    assertEquals(backend.liveBytes.get(), service.residentBytes(), "accounting matches the device");
    assertEquals(service.residentBytes(), service.residentBytesByPart().total(), "the stats' parts add up");
    for (Segment s : segments) {
      service.releaseSegment(s.key());
    }
    assertEquals(0, backend.liveBytes.get());
    assertEquals(0, service.residentBytes());
    assertEquals(DeviceBytes.NONE, service.residentBytesByPart());
  }

  @Test
  void deviceOutOfMemoryOnUploadFallsBackAndLeaksNothing() throws IOException {
    FakeBackend backend = new FakeBackend(1L << 30);
    GpuSearchService service = service(backend, 1.0);
    Segment s = segment(50);
    backend.uploadFault = FakeBackend::outOfMemory;
    assertNull(search(service, s, vector(), 3, null));
    assertEquals(1, service.stats().cpuFallbacks(FallbackReason.DEVICE_OUT_OF_MEMORY));
    assertEquals(0, service.residentBytes());
    assertEquals(0, service.residentCount());
    assertTrue(service.gpuActive(), "out of memory is not a reason to give up the GPU");
    backend.uploadFault = null;
    assertNotNull(search(service, s, vector(), 3, null), "the next search uploads and runs");
  }

  @Test
  void aFailingLaunchFallsBackForThatBatchOnly() throws IOException {
    FakeBackend backend = new FakeBackend(1L << 30);
    GpuSearchService service = service(backend, 1.0);
    Segment s = segment(50);
    backend.passFault = FakeBackend::launchFailure;
    assertNull(search(service, s, vector(), 3, null));
    assertEquals(1, service.stats().cpuFallbacks(FallbackReason.CUDA_ERROR));
    backend.passFault = null;
    assertNotNull(search(service, s, vector(), 3, null));
    assertTrue(service.gpuActive());
  }

  @Test
  void aStickyErrorSwitchesTheGpuOff() throws IOException {
    FakeBackend backend = new FakeBackend(1L << 30);
    GpuSearchService service = service(backend, 1.0);
    Segment s = segment(50);
    backend.passFault = FakeBackend::sticky;
    assertNull(search(service, s, vector(), 3, null));
    assertFalse(service.gpuActive());
    assertTrue(service.unusableReason().contains("sticky"), service.unusableReason());
    int passes = backend.passes.get();
    for (int i = 0; i < 5; i++) {
      assertNull(search(service, s, vector(), 3, null));
    }
    assertEquals(passes, backend.passes.get(), "no retries on a poisoned context");
    assertEquals(6, service.stats().cpuFallbacks(FallbackReason.GPU_FAILED));
  }

  @Test
  void ourOwnBugsAreNotSwallowed() {
    FakeBackend backend = new FakeBackend(1L << 30);
    GpuSearchService service = service(backend, 1.0);
    Segment s = segment(50);
    IllegalArgumentException bug = new IllegalArgumentException("a bug");
    backend.passFault = () -> bug;
    assertSame(bug, assertThrows(IllegalArgumentException.class, () -> search(service, s, vector(), 3, null)));
    assertEquals(0, service.stats().cpuFallbacks());
  }

  @Test
  void kOverTheGpuLimitAndClosedServiceFallBackWithTheirReasons() throws IOException {
    FakeBackend backend = new FakeBackend(1L << 30);
    GpuSearchService service = service(backend, 1.0);
    Segment s = segment(50);
    assertNull(search(service, s, vector(), GpuSearchService.MAX_GPU_K + 1, null));
    assertEquals(1, service.stats().cpuFallbacks(FallbackReason.K_TOO_LARGE));
    service.close();
    assertNull(search(service, s, vector(), 3, null));
    assertEquals(1, service.stats().cpuFallbacks(FallbackReason.CLOSED));
    assertEquals(0, backend.liveBytes.get());
  }

  @Test
  void warmUpMakesSegmentsResidentOnce() throws IOException {
    FakeBackend backend = new FakeBackend(1L << 30);
    GpuSearchService service = service(backend, 1.0);
    Segment s = segment(50);
    assertTrue(service.warm(s.key(), "vec", s.values(), SIM, null));
    assertTrue(service.warm(s.key(), "vec", s.values(), SIM, null));
    assertEquals(1, backend.uploads.get());
    assertEquals(1, service.stats().warmups());
    assertNotNull(search(service, s, vector(), 3, null));
    assertEquals(1, backend.uploads.get(), "the search found it resident");
    assertEquals(50L * DIMS * Float.BYTES, service.residentBytes(), "the segment's bytes are accounted");
    // a flat field holds its vectors alone (this double's device keeps no norms or FP16 copy)
    assertEquals(DeviceBytes.builder().add(MemoryPart.VECTORS, 50L * DIMS * Float.BYTES).build(),
        service.residentBytesByPart());
  }

  /**
   * A speculative pass's k per segment is rounded up to a multiple of 16 (passes then repeat their shapes): never
   * less than asked, at most 15 more, never past 128 from at most 128 (the FP16 scan's largest k), capped at the
   * GPU's largest k.
   */
  @Test
  void passKRoundsUpToSixteens() {
    for (int k = 1; k <= GpuSearchService.MAX_GPU_K; k++) {
      int p = CrossSegmentSpeculation.passK(k);
      assertTrue(p >= k && p - k < 16 && p % 16 == 0, k + " -> " + p);
      assertTrue(k > 128 || p <= 128, k + " -> " + p);
    }
    assertEquals(112, CrossSegmentSpeculation.passK(101));
    assertEquals(112, CrossSegmentSpeculation.passK(105));
    assertEquals(GpuSearchService.MAX_GPU_K, CrossSegmentSpeculation.passK(GpuSearchService.MAX_GPU_K + 5));
  }

  /** The k parked for a query's segments covers the largest k Lucene's optimistic search may ask. */
  @Test
  void fullKCoversEveryKThatGivesThisLeafK() {
    for (double share : new double[] {0.01, 1 / 12.0, 0.2, 1 / 3.0, 0.5, 0.9}) {
      for (int k = 1; k <= 2000; k++) {
        int formula = (int) Math.max(1, k * share + 16 * Math.sqrt(k * share * (1 - share)));
        for (int leafK : new int[] {formula, Math.min(k, formula)}) {
          int full = CrossSegmentSpeculation.fullK(leafK, share);
          assertTrue(full >= k, "share " + share + " k " + k + " leafK " + leafK + " -> " + full);
          assertTrue(full <= 2 * k + 64 || leafK > k, "not far above k: share " + share + " k " + k + " -> " + full);
        }
      }
    }
  }

  /**
   * The k parked for a peer covers what Lucene's optimistic search asks of it first, computed as Lucene 10.5 does (in
   * float): for a segment holding a large share of the index, more than the query's k.
   */
  @Test
  void leafKCoversLucenesFirstAskOfEverySegment() {
    boolean aboveK = false;
    for (float share : new float[] {0.001f, 0.01f, 1 / 12f, 0.2f, 1 / 3f, 0.5f, 0.77f, 0.9f, 0.999f}) {
      for (int k = 1; k <= 2000; k++) {
        int lucene = (int) Math.max(1.0, k * share + 16.0 * Math.sqrt(k * share * (1 - share)));
        int ours = CrossSegmentSpeculation.leafK(k, share);
        assertTrue(ours >= lucene, "share " + share + " k " + k + ": " + ours + " < " + lucene);
        assertTrue(ours <= lucene + 2, "share " + share + " k " + k + ": " + ours + " far above " + lucene);
        aboveK |= lucene > k;
      }
    }
    assertTrue(aboveK, "Lucene asks a large segment for more than k");
  }

  /** A query's speculation serves that query only: same array and contents, within its lifetime. */
  @Test
  void aSpeculationServesOneExecutionOfAQuery() throws InterruptedException {
    Speculations speculations = new Speculations(4);
    float[] query = vector();
    Speculations.Speculation first = new Speculations.Speculation(query);
    assertNull(speculations.claim(query, first), "the first segment runs it");
    assertSame(first, speculations.claim(query, new Speculations.Speculation(query)), "the others find it");
    assertNull(speculations.claim(query.clone(), new Speculations.Speculation(query)), "another array is another query");
    query[0] += 1; // the caller reuses its array for another vector
    assertNull(speculations.claim(query, new Speculations.Speculation(query)), "other contents: a new speculation");
    float[] other = vector();
    Speculations.Speculation old = new Speculations.Speculation(other);
    assertNull(speculations.claim(other, old));
    Thread.sleep(Speculations.LIFETIME_NANOS / 1_000_000 + 50);
    assertNull(speculations.claim(other, new Speculations.Speculation(other)), "expired: not a result cache");
  }

  /**
   * A segment waiting on a speculation gets the parked result whether the pass ends while it spins or after its spin
   * (then it parks); it spins only while that speculation is the only one running.
   */
  @Test
  void aWaitingSegmentSpinsOnlyWhileItsSpeculationRunsAlone() throws Exception {
    Speculations speculations = new Speculations(4);
    float[] query = vector();
    Speculations.Speculation mine = new Speculations.Speculation(query);
    assertNull(speculations.claim(query, mine));
    assertTrue(speculations.quiet(), "one speculation running");
    float[] other = vector();
    Speculations.Speculation second = new Speculations.Speculation(other);
    assertNull(speculations.claim(other, second));
    assertFalse(speculations.quiet(), "two running: park");
    speculations.finish(second);
    assertTrue(speculations.quiet());
    Residency.Key key = new Residency.Key("segment", "field");
    SearchResult result = new SearchResult(1, 2, new int[] {7, 3}, new float[] {0.5f, 0.25f});
    for (long finishAfterMillis : new long[] {0, 2 * Speculations.SPIN_NANOS / 1_000_000 + 20}) {
      Speculations.Speculation s = new Speculations.Speculation(query);
      float[] q = query.clone();
      assertNull(speculations.claim(q, s));
      var waiter = java.util.concurrent.Executors.newSingleThreadExecutor();
      try {
        var taken = waiter.submit(() -> s.take(key, null, 1, q, true));
        Thread.sleep(finishAfterMillis);
        s.park(key, null, result);
        speculations.finish(s);
        SearchResult got = taken.get(10, java.util.concurrent.TimeUnit.SECONDS).result();
        assertEquals(1, got.k(), "cut to the k asked for");
        assertEquals(7, got.id(0, 0));
      } finally {
        waiter.shutdownNow();
      }
    }
    speculations.finish(mine);
  }

  /**
   * Every segment waiting on a speculation wakes when it finishes and gets its own parked result; one interrupted
   * while it waits goes on waiting for the pass and keeps its interrupt flag.
   */
  @Test
  void everyWaitingSegmentWakesWhenItsPassEnds() throws Exception {
    Speculations speculations = new Speculations(4);
    float[] query = vector();
    Speculations.Speculation s = new Speculations.Speculation(query);
    assertNull(speculations.claim(query, s));
    int waiting = 7;
    var pool = Executors.newFixedThreadPool(waiting);
    try {
      List<Future<Integer>> taken = new ArrayList<>();
      java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(waiting);
      for (int i = 0; i < waiting; i++) {
        Residency.Key key = new Residency.Key("segment" + i, "field");
        s.park(key, null, new SearchResult(1, 1, new int[] {100 + i}, new float[] {i}));
        boolean interrupt = i == 0;
        taken.add(pool.submit(() -> {
          started.countDown();
          if (interrupt) {
            Thread.currentThread().interrupt();
          }
          Speculations.Taken t = s.take(key, null, 1, query, false);
          return Thread.interrupted() == interrupt ? t.result().id(0, 0) : -1;
        }));
      }
      assertTrue(started.await(10, TimeUnit.SECONDS));
      Thread.sleep(50); // let them park
      for (var f : taken) {
        assertFalse(f.isDone(), "waits for the pass");
      }
      speculations.finish(s);
      for (int i = 0; i < waiting; i++) {
        assertEquals(100 + i, taken.get(i).get(10, TimeUnit.SECONDS),
            "segment " + i + " takes its own result (and keeps its interrupt flag)");
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** A segment that cannot take its parked result learns why: the four reasons the stats count. */
  @Test
  void aMissedSpeculationSaysWhy() {
    Speculations speculations = new Speculations(4);
    float[] query = vector();
    Speculations.Speculation s = new Speculations.Speculation(query);
    assertNull(speculations.claim(query, s));
    Residency.Key parkedKey = new Residency.Key("segment", "field");
    Object liveDocs = new Object();
    s.park(parkedKey, liveDocs, new SearchResult(1, 2, new int[] {7, 3}, new float[] {0.5f, 0.25f}));
    speculations.finish(s);
    assertEquals(3, s.take(parkedKey, liveDocs, 2, query, false).result().id(0, 1), "taken");
    assertEquals(SpeculationMiss.NOT_IN_PASS, s.take(new Residency.Key("other", "field"), liveDocs, 2, query, false).miss());
    assertEquals(SpeculationMiss.OTHER_LIVE_DOCS, s.take(parkedKey, new Object(), 2, query, false).miss());
    assertEquals(SpeculationMiss.LARGER_K, s.take(parkedKey, liveDocs, 3, query, false).miss());
    float[] other = query.clone();
    other[0] += 1;
    assertEquals(SpeculationMiss.OTHER_VECTOR, s.take(parkedKey, liveDocs, 2, other, false).miss());
    assertNull(s.take(parkedKey, liveDocs, 2, query, false).miss(), "a hit has no reason");
  }
}
