package org.gpuvectors.codec;

import static org.gpuvectors.codec.GpuVectorsFormatTests.Hit;
import static org.gpuvectors.codec.GpuVectorsFormatTests.assertSameHits;
import static org.gpuvectors.codec.GpuVectorsFormatTests.oracleTopK;
import static org.gpuvectors.codec.IvfTestSupport.FIELD;
import static org.gpuvectors.codec.IvfTestSupport.config;
import static org.gpuvectors.codec.IvfTestSupport.ids;
import static org.gpuvectors.codec.IvfTestSupport.index;
import static org.gpuvectors.codec.IvfTestSupport.overlap;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.gpuvectors.codec.gpu.FakeBackend;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.gpu.GpuSearchStats;
import org.gpuvectors.codec.ivf.IvfPqField;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cross-segment re-rank cut ({@link org.gpuvectors.codec.gpu.RerankCut}) on a fake device, over an ivf_pq index
 * of several segments resident as their codes alone (the service keeps no raw vectors on the device: the host
 * re-ranks every candidate): an unfiltered query's pass over all segments (the speculative pass, the batch API) has
 * the host re-rank about the rerank factor x num_candidates best candidates of all segments instead of that many in
 * each, recall@10 at num_candidates 100 against brute force stays at the repository's floor, and every returned
 * score is the exact one; a filtered query and a single segment re-rank what they did before (the CPU path's
 * candidates, as the GPU tests hold the codes-only form to).
 */
class CrossSegmentRerankCutTests {

  private static final int DIMS = 128;
  private static final int SEGMENTS = 6;
  private static final int SEGMENT_DOCS = 2500;
  private static final int K = 10;
  private static final int NUM_CANDIDATES = 100;
  private static final int QUERIES = 40;
  private static final double FLOOR = 0.97; // DefaultRecallTests' floor
  private static final VectorSimilarityFunction SIM = VectorSimilarityFunction.COSINE;
  private static final Query FILTER = new TermQuery(new Term("rare", "no")); // 98 % of the documents

  @TempDir static Path tempDir;

  private static Directory dir;
  private static DirectoryReader reader;
  private static IndexSearcher searcher;
  private static List<float[]> vectors;
  private static float[][] queries;
  /** Candidates one segment holding the whole index re-ranks for num_candidates: the cut's depth. */
  private static int depth;

  @BeforeAll
  static void buildIndex() throws IOException {
    EmbeddingLikeData data = new EmbeddingLikeData(500_000, DIMS, 41);
    vectors = new ArrayList<>();
    for (int i = 0; i < SEGMENTS * SEGMENT_DOCS; i++) {
      vectors.add(data.next());
    }
    queries = new float[QUERIES][];
    for (int q = 0; q < QUERIES; q++) {
      queries[q] = data.next();
    }
    IvfTestSupport support = new IvfTestSupport(DIMS, 7, 0.6f);
    dir = FSDirectory.open(tempDir);
    index(dir, config(0, SEGMENT_DOCS), vectors, support.fieldType(IndexType.IVF_PQ, SIM, Map.of(IndexParams.PQ_M, DIMS / 8)));
    reader = DirectoryReader.open(dir);
    assertEquals(SEGMENTS, reader.leaves().size(), "one segment per " + SEGMENT_DOCS + " documents");
    searcher = new IndexSearcher(reader);
    IvfPqField pq = IvfTestSupport.reader(reader.leaves().get(0).reader()).ivfPqField(FIELD);
    depth = IvfPqField.rerankCandidates(pq.rerankFactor(), NUM_CANDIDATES);
  }

  @AfterAll
  static void close() throws IOException {
    reader.close();
    dir.close();
    GpuSearchServices.closeDefault(); // the build trained ivf_pq through the default service (the CPU here)
  }

  @Test
  void anUnfilteredQueryReRanksTheBestCandidatesOfAllSegmentsAtTheRecallFloor() throws IOException {
    onCodesOnly(service -> {
      GpuSearchStats stats = service.stats();
      // each segment alone (no pass over several): every segment re-ranks its own candidates, today's cost
      service.setSpeculation(false);
      Measured alone = measure(stats, () -> singleQueries(null), "each segment alone");
      service.setSpeculation(true);
      Measured pass = measure(stats, () -> singleQueries(null), "one pass over the segments");
      Measured batch = measure(stats, () -> batchQueries(null), "batch API");

      assertEquals(0, alone.cut(), "a segment searched alone is not cut");
      assertTrue(alone.perQuery() > 2.0 * depth, () -> "alone: " + alone);
      for (Measured m : new Measured[] {pass, batch}) {
        assertTrue(m.recall() >= FLOOR, () -> "recall@10 at the floor: " + m);
        assertTrue(m.cut() > 0, () -> "the pass cut candidates: " + m);
      }
      // the batch asks each segment for num_candidates: its pass re-ranks exactly the depth (every segment has more)
      assertEquals(depth, batch.perQuery(), 1e-9, () -> "batch: " + batch);
      // the pass cuts at the depth of the query's k as it recovers it from the first segment's ask (CrossSegment-
      // Speculation.fullK: rounded up, 102 here, so 816 for 800); Lucene may ask a segment again for the full k, which
      // re-ranks that segment's kept candidates again (none did here)
      assertTrue(pass.perQuery() <= 1.25 * depth, () -> "pass: " + pass + ", depth " + depth);
      assertTrue(pass.perQuery() < alone.perQuery() / 2, () -> pass + " vs " + alone);
    });
  }

  @Test
  void aFilteredQueryReRanksEachSegmentsOwnCandidates() throws IOException {
    List<List<Hit>> onCpuSingle = new ArrayList<>();
    List<List<Hit>> onCpuBatch = new ArrayList<>();
    onCodesOnly(service -> {
      service.setEnabled(false); // the CPU path: the same candidates as the codes-only form, re-ranked the same way
      onCpuSingle.addAll(singleQueries(FILTER));
      onCpuBatch.addAll(batchQueries(FILTER));
    });
    onCodesOnly(service -> {
      GpuSearchStats stats = service.stats();
      List<List<Hit>> single = singleQueries(FILTER);
      List<List<Hit>> batch = batchQueries(FILTER);
      assertEquals(0, stats.cpuFallbacks(), stats::toString);
      assertEquals(0, stats.rerankCutCandidates(), "filtered queries are not cut");
      assertTrue(stats.hostRerankCandidates() > 0, stats::toString);
      for (int q = 0; q < QUERIES; q++) {
        assertSameHits(onCpuSingle.get(q), single.get(q));
        assertSameHits(onCpuBatch.get(q), batch.get(q));
      }
    });
  }

  @Test
  void aSingleSegmentReRanksItsOwnCandidates() throws IOException {
    try (DirectoryReader one = DirectoryReader.open(dir)) {
      // the first segment alone: its own searcher, nothing to cut against
      IndexSearcher alone = new IndexSearcher(one.leaves().get(0).reader());
      List<List<Hit>> onCpu = new ArrayList<>();
      onCodesOnly(service -> {
        service.setEnabled(false);
        for (float[] query : queries) {
          onCpu.add(IvfTestSupport.search(alone, query.clone(), NUM_CANDIDATES, null));
        }
      });
      onCodesOnly(service -> {
        GpuSearchStats stats = service.stats();
        for (int q = 0; q < QUERIES; q++) {
          assertSameHits(onCpu.get(q), IvfTestSupport.search(alone, queries[q].clone(), NUM_CANDIDATES, null));
        }
        assertEquals(0, stats.rerankCutCandidates(), stats::toString);
        assertEquals((long) QUERIES * depth, stats.hostRerankCandidates(), "its whole depth re-ranked, per query");
      });
    }
  }

  /** Recall@10, host re-ranked candidates per query, candidates cut per query, over the queries. */
  private record Measured(String what, double recall, double perQuery, double cut) {}

  @FunctionalInterface
  private interface Searches {
    List<List<Hit>> run() throws IOException;
  }

  private static Measured measure(GpuSearchStats stats, Searches searches, String what) throws IOException {
    long reranked = stats.hostRerankCandidates();
    long cut = stats.rerankCutCandidates();
    long fallbacks = stats.cpuFallbacks();
    List<List<Hit>> hits = searches.run();
    assertEquals(fallbacks, stats.cpuFallbacks(), () -> what + ": everything on the device, " + stats);
    double recall = 0;
    for (int q = 0; q < QUERIES; q++) {
      List<Hit> got = hits.get(q);
      assertEquals(K, got.size(), what);
      for (Hit h : got) {
        // every score is the exact one: the host re-ranked it from the raw vector
        assertEquals(SIM.compare(queries[q], vectors.get(h.id())), h.score(), 1e-5f, what + ": score of " + h.id());
      }
      recall += overlap(ids(oracleTopK(vectors, queries[q], SIM, K, id -> true)), got) / (double) K;
    }
    Measured m = new Measured(what, recall / QUERIES, (stats.hostRerankCandidates() - reranked) / (double) QUERIES,
        (stats.rerankCutCandidates() - cut) / (double) QUERIES);
    System.out.printf(Locale.ROOT, "[rerank cut] %s: recall@10 %.3f, %.1f candidates re-ranked a query, %.1f cut%n",
        what, m.recall(), m.perQuery(), m.cut());
    return m;
  }

  /**
   * Each query through Lucene's kNN query for num_candidates (its top 10 kept), each in a fresh array, as
   * Elasticsearch parses one per request (the speculative pass is keyed by the array).
   */
  private static List<List<Hit>> singleQueries(Query filter) throws IOException {
    List<List<Hit>> out = new ArrayList<>();
    for (float[] query : queries) {
      TopDocs td = searcher.search(new KnnFloatVectorQuery(FIELD, query.clone(), NUM_CANDIDATES, filter), K);
      out.add(GpuVectorsFormatTests.hits(searcher, td));
    }
    return out;
  }

  /** The queries in one call of the batch API for the top 10 of num_candidates a segment. */
  private static List<List<Hit>> batchQueries(Query filter) throws IOException {
    List<List<Hit>> out = new ArrayList<>();
    for (TopDocs td : KnnBatchSearcher.search(searcher, FIELD, queries, K, NUM_CANDIDATES, filter)) {
      out.add(GpuVectorsFormatTests.hits(searcher, td));
    }
    return out;
  }

  @FunctionalInterface
  private interface OnService {
    void run(GpuSearchService service) throws IOException;
  }

  /** Runs {@code body} with a fresh service on a fake device that keeps ivf_pq fields as their codes alone. */
  private static void onCodesOnly(OnService body) throws IOException {
    GpuSearchService service = GpuSearchService.withBackend(
        new FakeBackend(1L << 30), GpuSearchService.Settings.builder().ivfPqRerankOnGpu(false).build());
    GpuSearchServices.install(service);
    try {
      body.run(service);
    } finally {
      GpuSearchServices.uninstall(service);
      service.close();
    }
  }
}
