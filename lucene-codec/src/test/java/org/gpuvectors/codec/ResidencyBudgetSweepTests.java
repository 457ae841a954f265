package org.gpuvectors.codec;

import static org.gpuvectors.codec.GpuVectorsFormatTests.Hit;
import static org.gpuvectors.codec.GpuVectorsFormatTests.assertSameHits;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.tests.util.TestUtil;
import org.gpuvectors.codec.gpu.FakeBackend;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.gpu.GpuSearchStats;
import org.gpuvectors.codec.gpu.MemoryBudget;
import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.MemoryPart;
import org.gpuvectors.cuda.flat.GpuElementFlatIndex;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * One index of four segments searched on a fake device under memory budgets from 5 % to 100 % of what the index
 * takes whole: every budget gives the fully resident results (flat: the exact top k, also against a brute-force
 * oracle; ivf_pq: the same hits, since its whole form, its codes-only form and the CPU path re-rank the same
 * candidates), the resident set settles in the first round of queries (the second uploads and evicts nothing), the
 * resident bytes by part add up to the total within the budget, and every segment search left to the CPU is counted
 * with its reason.
 *
 * <p>Between the budgets, segments are resident whole, in their smaller form (flat: the compact copy; ivf_pq: the codes
 * without the raw vectors) or not at all, and one query's segments are searched in one speculative pass
 * ({@code CrossSegmentSpeculation}) as well as alone and in batches: each of these must give the hits the CPU would.
 * (This caught a speculative pass that chose an ivf_pq peer's lists for its candidate count instead of Lucene's k: a
 * peer resident as its codes scanned every list, and its hits differed from its own search's.)
 *
 * <p>Graph fields are not swept: they have one resident form, and the fake device searches them exactly (it checks
 * the codec's plumbing, not the graph search) while the CPU walks the graph, so a budget that leaves a graph segment
 * to the CPU may change its hits by design, not by a residency fault.
 */
class ResidencyBudgetSweepTests {

  private static final String FIELD = "vec";
  private static final int DIMS = 32;
  /** Segments of different sizes, so that budgets cut between them at different places. */
  private static final int[] SEGMENT_DOCS = {300, 700, 1200, 1800};
  /** Clusters of each segment's points (a segment's own: other segments' points are far from them). */
  private static final int CLUSTERS_PER_SEGMENT = 4;
  private static final double NOISE = 0.15;
  private static final int K = 10;
  private static final int QUERIES = 12;
  /** Segment searches a round makes per segment: each query alone, then all of them in one batch. */
  private static final int SEARCHES_PER_ROUND = QUERIES + 1;
  private static final int[] BUDGET_PERCENTS = {5, 10, 25, 50, 75, 100};
  private static final VectorSimilarityFunction SIM = VectorSimilarityFunction.EUCLIDEAN;
  /** The fallbacks a budget explains: the field did not fit, or (compact copies) its candidates were not proven. */
  private static final Set<FallbackReason> BUDGET_REASONS = EnumSet.of(FallbackReason.SEGMENT_OVER_BUDGET,
      FallbackReason.BUDGET_IN_USE, FallbackReason.NOT_ADMITTED, FallbackReason.UNCERTIFIED_CANDIDATES);

  @TempDir Path tempDir;

  /** The builds trained ivf_pq through the default service (the CPU here); closed as IvfPqTests closes it. */
  @AfterEach
  void closeDefaultService() {
    GpuSearchServices.closeDefault();
  }

  /** A round's hits: each query searched alone, and the same queries in one batch. */
  private record Round(List<List<Hit>> single, List<List<Hit>> batched) {}

  @ParameterizedTest
  @EnumSource(value = IndexType.class, names = {"FLAT", "IVF_PQ"})
  void everyBudgetFromFivePercentToTheWholeIndexGivesItsFullyResidentHits(IndexType type) throws IOException {
    Random random = new Random(61);
    float[][][] centers = new float[SEGMENT_DOCS.length][CLUSTERS_PER_SEGMENT][];
    List<float[]> vectors = new ArrayList<>();
    for (int s = 0; s < SEGMENT_DOCS.length; s++) {
      for (int c = 0; c < CLUSTERS_PER_SEGMENT; c++) {
        centers[s][c] = uniform(random);
      }
      vectors.addAll(segmentVectors(random, centers[s], SEGMENT_DOCS[s], type == IndexType.FLAT));
    }
    // each query near one segment's cluster: its hits come from that segment, whose own k-th hit is then a hit of
    // the query (the batch API asks each segment for k), so that a form that got a segment's top k wrong shows
    float[][] queries = new float[QUERIES][];
    for (int q = 0; q < QUERIES; q++) {
      queries[q] = near(random, centers[q % SEGMENT_DOCS.length][random.nextInt(CLUSTERS_PER_SEGMENT)]);
    }
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, vectors, type);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(SEGMENT_DOCS.length, reader.leaves().size(), "one segment per part, none merged");
        IndexSearcher searcher = new IndexSearcher(reader);
        List<GpuVectorsReader> segments = new ArrayList<>();
        long wholeBytes = 0; // the index whole, as the fake device counts it
        long smallestBytes = 0; // every segment in its smallest form (flat: compact copy; ivf_pq: codes only)
        for (int s = 0; s < SEGMENT_DOCS.length; s++) {
          LeafReader leaf = reader.leaves().get(s).reader();
          segments.add(gpuReader(leaf));
          assertEquals(SEGMENT_DOCS[s], leaf.getFloatVectorValues(FIELD).size());
          wholeBytes += formBytes(leaf, type, true);
          smallestBytes += formBytes(leaf, type, false);
        }
        assertTrue(smallestBytes < wholeBytes);

        // the reference: a budget with room to spare, the whole index resident; what it takes is the sweep's 100 %
        long[] indexBytes = new long[1];
        Round reference = onFakeDevice(4 * wholeBytes, (device, service) -> {
          Round round = round(searcher, queries);
          indexBytes[0] = service.residentBytes();
          assertEquals(SEGMENT_DOCS.length, service.residentCount(), "every segment resident");
          assertEquals(0, service.stats().cpuFallbacks(), service.stats()::toString);
          // the reference itself is right: the CPU path (flat: exact; ivf_pq: the same candidates) gives it too
          service.setEnabled(false);
          assertSameResults(type, round, round(searcher, queries), "CPU path");
          return round;
        });
        assertEquals(wholeBytes, indexBytes[0], "the service's resident bytes are the index whole");
        if (type == IndexType.FLAT) {
          // an expectation independent of the codec: brute force over the vectors (id = position)
          for (int q = 0; q < QUERIES; q++) {
            List<Hit> oracle = GpuVectorsFormatTests.oracleTopK(vectors, queries[q], SIM, K, id -> true);
            assertEquals(ids(oracle), ids(reference.single().get(q)), "oracle, query " + q);
            assertEquals(ids(oracle), ids(reference.batched().get(q)), "oracle, batched query " + q);
          }
        }

        boolean smallFormSearched = false;
        for (int percent : BUDGET_PERCENTS) {
          long budget = indexBytes[0] * percent / 100;
          String at = type + " at " + percent + " % (" + budget + " of " + indexBytes[0] + " bytes)";
          long smallest = smallestBytes;
          smallFormSearched |= onFakeDevice(budget, (device, service) -> {
            GpuSearchStats stats = service.stats();
            assertEquals(budget, service.budgetBytes(), at);

            assertResults(type, reference, stats, () -> round(searcher, queries), vectors, queries,
                at + ", first round");
            long uploads = stats.uploads();
            long evictions = stats.evictions();
            Map<FallbackReason, Long> fallbacks = stats.cpuFallbacksByReason();
            assertResults(type, reference, stats, () -> round(searcher, queries), vectors, queries,
                at + ", second round");

            // the resident set settled in the first round: nothing uploaded or evicted per query after it, and no
            // segment field went up more than twice (flat: whole, then its copy once the index was short of memory)
            assertEquals(uploads, stats.uploads(), () -> at + ": uploads in the second round: " + stats);
            assertEquals(evictions, stats.evictions(), () -> at + ": evictions in the second round: " + stats);
            assertEquals(device.uploads.get(), stats.uploads(), at);
            assertTrue(uploads <= 2L * SEGMENT_DOCS.length, () -> at + ": " + uploads + " uploads");

            // the bytes add up: by part to the total, the total within the budget and what the device holds
            DeviceBytes parts = service.residentBytesByPart();
            assertEquals(service.residentBytes(), parts.total(), () -> at + ": " + parts);
            assertTrue(service.residentBytes() <= budget, () -> at + ": " + service.residentBytes() + " resident");
            assertEquals(device.liveBytes.get(), service.residentBytes(), at + ": the device's live bytes");

            // every segment search the GPU did not serve in the second round is a counted fallback: each search of a
            // round (Lucene asks each segment once a query here) of each segment not resident; besides, at most one
            // per query and segment where a copy's candidates were not proven (searched again on the CPU); no other
            // reason
            int notResident = 0;
            for (GpuVectorsReader segment : segments) {
              notResident += service.isResident(segment, FIELD) ? 0 : 1;
            }
            assertEquals(SEGMENT_DOCS.length - notResident, service.residentCount(), at);
            Map<FallbackReason, Long> secondRound = minus(stats.cpuFallbacksByReason(), fallbacks);
            long uncertified = secondRound.getOrDefault(FallbackReason.UNCERTIFIED_CANDIDATES, 0L);
            long refused = stats.cpuFallbacks() - sum(fallbacks) - uncertified;
            assertEquals((long) notResident * SEARCHES_PER_ROUND, refused,
                () -> at + ": fallbacks of the second round " + secondRound + ", " + stats);
            assertTrue(BUDGET_REASONS.containsAll(stats.cpuFallbacksByReason().keySet()), () -> at + ": " + stats);
            assertTrue(uncertified <= 2L * QUERIES * SEGMENT_DOCS.length, () -> at + ": " + secondRound);
            if (budget < smallest) {
              // not even every segment in its smallest form fits: some must run on the CPU, and are counted
              assertTrue(notResident > 0 && refused > 0, () -> at + ": " + stats);
            } else {
              // an index short of memory turns to its smaller forms (GpuSearchService.demoteToCompactForms: flat
              // copies, ivf_pq codes): all of them fit
              assertEquals(0, notResident, () -> at + ": every segment fits in its smaller form: " + stats);
            }
            if (percent == 100) {
              // the whole index fits exactly: every segment whole, uploaded once, nothing on the CPU
              assertEquals(0, stats.cpuFallbacks(), () -> at + ": " + stats);
              assertEquals(SEGMENT_DOCS.length, uploads, at);
              assertEquals(0, stats.evictions(), at);
              assertEquals(indexBytes[0], service.residentBytes(), at);
              assertEquals(0, stats.compactCopyQueries() + stats.hostRerankQueries(), () -> at + ": " + stats);
              if (type == IndexType.FLAT) {
                assertEquals(DeviceBytes.builder().add(MemoryPart.VECTORS, indexBytes[0]).build(), parts, at);
              }
            }
            // whether a smaller form (compact copy, ivf_pq codes) served searches at this budget
            return stats.compactCopyQueries() + stats.hostRerankQueries() > 0;
          });
        }
        assertTrue(smallFormSearched, type + ": some budget searched the smaller form (copies or codes)");
      }
    }
  }

  /**
   * {@code n} points around the segment's own cluster centres. Flat: in threes, a point and two near twins, closer to
   * it than bfloat16 can tell apart (a compact copy's rounding), so that a segment's k-th and (k+1)-th hits are often
   * twins: a copy that kept its own order instead of re-ranking and proving its candidates would return the wrong
   * one.
   */
  private static List<float[]> segmentVectors(Random random, float[][] centers, int n, boolean twins) {
    List<float[]> vectors = new ArrayList<>();
    while (vectors.size() < n) {
      float[] p = near(random, centers[random.nextInt(centers.length)]);
      vectors.add(p);
      for (int t = 0; t < 2 && twins && vectors.size() < n; t++) {
        float[] twin = p.clone();
        for (int d = 0; d < DIMS; d++) {
          twin[d] += (float) (2e-4 * random.nextGaussian());
        }
        vectors.add(twin);
      }
    }
    return vectors;
  }

  /** A point in [-1, 1)^DIMS. */
  private static float[] uniform(Random random) {
    float[] v = new float[DIMS];
    for (int d = 0; d < DIMS; d++) {
      v[d] = random.nextFloat() * 2 - 1;
    }
    return v;
  }

  /** {@code center} plus Gaussian noise of deviation {@link #NOISE} a dimension. */
  private static float[] near(Random random, float[] center) {
    float[] v = center.clone();
    for (int d = 0; d < DIMS; d++) {
      v[d] += (float) (NOISE * random.nextGaussian());
    }
    return v;
  }

  /** Bytes of a segment field on the fake device whole (flat FP32, ivf_pq with its raw vectors) or at its smallest. */
  private static long formBytes(LeafReader leaf, IndexType type, boolean whole) throws IOException {
    int n = leaf.getFloatVectorValues(FIELD).size();
    if (type == IndexType.FLAT) {
      return whole
          ? FakeBackend.parts(n, DIMS, null).total()
          : GpuElementFlatIndex.deviceBytes(GpuElementFlatIndex.Element.BFLOAT16, n, DIMS);
    }
    return FakeBackend.parts(n, DIMS,
        GpuSegmentSearcher.gpuStructure(gpuReader(leaf).ivfPqField(FIELD), whole)).total();
  }

  /** The segment's reader of our format (the key its fields are resident under). */
  private static GpuVectorsReader gpuReader(LeafReader leaf) {
    GpuVectorsReader reader = KnnBatchSearcher.gpuVectorsReader(leaf, FIELD);
    assertNotNull(reader, "segment read by GpuVectorsReader");
    return reader;
  }

  /**
   * Every query alone (Lucene's kNN query over all segments), then all of them through the batch API. Each query alone
   * gets a fresh array, as Elasticsearch parses one per request: the speculative pass is keyed by the array, and the
   * same array again within a second would take the first execution's parked results (whatever is resident now)
   * instead of searching.
   */
  private static Round round(IndexSearcher searcher, float[][] queries) throws IOException {
    List<List<Hit>> single = new ArrayList<>();
    for (float[] query : queries) {
      TopDocs td = searcher.search(new KnnFloatVectorQuery(FIELD, query.clone(), K), K);
      single.add(GpuVectorsFormatTests.hits(searcher, td));
    }
    List<List<Hit>> batched = new ArrayList<>();
    for (TopDocs td : KnnBatchSearcher.search(searcher, FIELD, queries, K, null)) {
      batched.add(GpuVectorsFormatTests.hits(searcher, td));
    }
    return new Round(single, batched);
  }

  /**
   * Flat: the same ids (an exact search's top k as a set: the order of near ties is no part of it), each with its
   * score. ivf_pq: the same hits in the same order, with their scores: every form re-ranks the same candidates.
   */
  private static void assertSameResults(IndexType type, Round expected, Round actual, String what) {
    for (int q = 0; q < QUERIES; q++) {
      for (boolean batch : new boolean[] {false, true}) {
        List<Hit> want = (batch ? expected.batched() : expected.single()).get(q);
        List<Hit> got = (batch ? actual.batched() : actual.single()).get(q);
        String label = what + (batch ? ", batched" : "") + " query " + q;
        assertEquals(K, got.size(), label);
        if (type == IndexType.FLAT) {
          Map<Integer, Float> scores = new HashMap<>();
          want.forEach(h -> scores.put(h.id(), h.score()));
          assertEquals(ids(want), ids(got), () -> label + "\nexpected " + want + "\nactual   " + got);
          for (Hit h : got) {
            assertEquals(scores.get(h.id()), h.score(), 1e-5f, label + ": score of " + h.id());
          }
        } else {
          try {
            assertSameHits(want, got);
          } catch (AssertionError e) {
            throw new AssertionError(label + ": " + e.getMessage(), e);
          }
        }
      }
    }
  }

  /** A round of searches, run where {@link #assertResults} can see what the cut did during it. */
  @FunctionalInterface
  private interface RoundRun {
    Round run() throws IOException;
  }

  /**
   * A round's results against the fully resident reference: the same ({@link #assertSameResults}) unless the
   * cross-segment re-rank cut dropped candidates during it (ivf_pq segments resident as their codes alone, searched in
   * one pass: {@code RerankCut}). Then the codes-only segments re-rank the best candidates of all of them rather than
   * each its own, which the fully resident form, re-ranking on the device segment by segment, does not; the hits may
   * differ, so the invariant is what the cut promises: every hit with its exact score (re-ranked from the raw vectors,
   * never an approximate one), and recall@K against brute force within {@link #CUT_RECALL_MARGIN} of the reference's,
   * for single queries and batches alike.
   */
  private static void assertResults(IndexType type, Round reference, GpuSearchStats stats, RoundRun run,
                                    List<float[]> vectors, float[][] queries, String what) throws IOException {
    long cutBefore = stats.rerankCutCandidates();
    Round actual = run.run();
    if (stats.rerankCutCandidates() == cutBefore) {
      assertSameResults(type, reference, actual, what);
      return;
    }
    for (boolean batch : new boolean[] {false, true}) {
      double referenceRecall = 0;
      double recall = 0;
      for (int q = 0; q < QUERIES; q++) {
        List<Hit> got = (batch ? actual.batched() : actual.single()).get(q);
        String label = what + ", cut" + (batch ? ", batched" : "") + " query " + q;
        assertEquals(K, got.size(), label);
        for (Hit h : got) {
          assertEquals(SIM.compare(queries[q], vectors.get(h.id())), h.score(), 1e-5f, label + ": score of " + h.id());
        }
        Set<Integer> truth = ids(GpuVectorsFormatTests.oracleTopK(vectors, queries[q], SIM, K, id -> true));
        referenceRecall += overlap(truth, (batch ? reference.batched() : reference.single()).get(q));
        recall += overlap(truth, got);
      }
      double r = recall / (QUERIES * K);
      double ref = referenceRecall / (QUERIES * K);
      String label = what + ", cut" + (batch ? ", batched" : "");
      System.out.printf(java.util.Locale.ROOT, "[sweep] %s: recall@%d %.3f, reference %.3f%n", label, K, r, ref);
      assertTrue(r >= ref - CUT_RECALL_MARGIN, () -> label + ": recall " + r + " against the reference's " + ref);
    }
  }

  /**
   * How far recall@K may fall below the fully resident form's where the cut applied: the codes here are coarse on
   * purpose (4 bits for 8 dimensions), far coarser than any default, so that a cut that lost real neighbours shows;
   * one hit of the {@code QUERIES x K} is 1/120.
   */
  private static final double CUT_RECALL_MARGIN = 0.05;

  private static int overlap(Set<Integer> truth, List<Hit> hits) {
    int n = 0;
    for (Hit h : hits) {
      n += truth.contains(h.id()) ? 1 : 0;
    }
    return n;
  }

  private static Set<Integer> ids(List<Hit> hits) {
    Set<Integer> ids = new HashSet<>();
    hits.forEach(h -> ids.add(h.id()));
    return ids;
  }

  private static Map<FallbackReason, Long> minus(Map<FallbackReason, Long> now, Map<FallbackReason, Long> before) {
    Map<FallbackReason, Long> out = new HashMap<>();
    now.forEach((reason, n) -> {
      long d = n - before.getOrDefault(reason, 0L);
      if (d != 0) {
        out.put(reason, d);
      }
    });
    return out;
  }

  private static long sum(Map<FallbackReason, Long> counts) {
    return counts.values().stream().mapToLong(Long::longValue).sum();
  }

  /** What a test does with its fake device and the service installed over it. */
  @FunctionalInterface
  private interface OnDevice<T> {
    T run(FakeBackend device, GpuSearchService service) throws IOException;
  }

  /**
   * Runs {@code body} with a fresh service of {@code budget} bytes (a budget in bytes: exact whatever the device's
   * size) on a fake device with room to spare, installed as the current one.
   */
  private static <T> T onFakeDevice(long budget, OnDevice<T> body) throws IOException {
    FakeBackend device = new FakeBackend(1L << 30);
    GpuSearchService service = GpuSearchService.withBackend(
        device, GpuSearchService.Settings.builder().memoryBudget(MemoryBudget.ofBytes(budget)).build());
    GpuSearchServices.install(service);
    try {
      return body.run(device, service);
    } finally {
      GpuSearchServices.uninstall(service);
      service.close();
    }
  }

  /** One segment per entry of {@link #SEGMENT_DOCS} (committed in turn, never merged), id = position. */
  private static void index(Directory dir, List<float[]> vectors, IndexType type) throws IOException {
    Map<String, Integer> params = type == IndexType.IVF_PQ
        // coarse codes (4 bits for 8 dimensions): the approximate order is far from the exact one, so that a form
        // that re-ranked fewer candidates than another would return other hits
        ? Map.of(IndexParams.NLIST, 16, IndexParams.NPROBE, 4, IndexParams.PQ_M, 4, IndexParams.PQ_BITS, 4)
        : Map.of();
    FieldType fieldType = GpuVectorsFormat.markField(
        KnnFloatVectorField.createFieldType(DIMS, SIM), new IndexParams(type, params));
    IndexWriterConfig config = new IndexWriterConfig()
        .setCodec(TestUtil.alwaysKnnVectorsFormat(new GpuVectorsFormat(0))) // ivf_pq however small the segment
        .setMergePolicy(NoMergePolicy.INSTANCE);
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      int id = 0;
      for (int n : SEGMENT_DOCS) {
        for (int i = 0; i < n; i++, id++) {
          Document doc = new Document();
          doc.add(new StoredField("id", id));
          doc.add(new KnnFloatVectorField(FIELD, vectors.get(id), fieldType));
          writer.addDocument(doc);
        }
        writer.commit();
      }
    }
  }
}
