package org.gpuvectors.cuda.rerank;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import org.junit.jupiter.api.Test;
import org.gpuvectors.cuda.Metric;

/**
 * {@link ExactRerank} fills {@link RerankParams} byte for byte as each re-rank's own code did before it (the fills
 * below are those, kept here as the reference), for both metrics (no GPU needed).
 */
class ExactRerankTest {
  private static final long VECTORS = 0x1000_0000L;
  private static final long QUERIES = 0x2000_0000L;
  private static final long CAND_KEYS = 0x3000_0000L;
  private static final long CAND_IDS = 0x4000_0000L;
  private static final long EXACT = 0x5000_0000L;
  private static final long STATS = 0x6000_0000L;
  private static final long OUT_K = 0x7000_0040L;
  private static final long OUT_IDX = 0x8000_0040L;
  private static final long DONE = 0x9000_0000L;
  private static final long CHUNK_KEYS = 0xA000_0000L;

  private static void assertSame(RerankParams expected, ExactRerank actual, String what) {
    assertArrayEquals(expected.encode(), actual.params().encode(), what);
  }

  /** The TF32 candidate pass: exact keys, a merge, the stats launch ({@link ExactRerank#enqueueThenMerge}). */
  @Test
  void tf32CandidatePass() {
    for (Metric metric : Metric.values()) {
      boolean ip = metric != Metric.L2;
      RerankParams p = new RerankParams();
      p.vectors = VECTORS;
      p.queries = QUERIES;
      p.candIdx = CAND_IDS;
      p.candKeys = CAND_KEYS;
      p.exactKeys = EXACT;
      p.stats = STATS;
      p.outK = OUT_K;
      p.dims = 768;
      p.numQueries = 1000;
      p.candidates = 400;
      p.k = 10;
      p.metric = ip ? 1 : 0;
      p.outScale = ip ? -1f : 1f;
      ExactRerank r = new ExactRerank(metric, 768, 1000, 400, 10).vectors(VECTORS, QUERIES)
          .candidates(CAND_KEYS, CAND_IDS).stats(STATS).merging(EXACT, OUT_K);
      assertSame(p, r, "TF32 " + metric);
    }
  }

  /** The small scored search: every vector's key, no candidates, no output (the scale stays 1 for every metric). */
  @Test
  void smallScoredSearch() {
    for (Metric metric : Metric.values()) {
      RerankParams p = new RerankParams();
      p.vectors = VECTORS;
      p.queries = QUERIES;
      p.exactKeys = EXACT;
      p.dims = 128;
      p.numQueries = 3;
      p.candidates = 3162;
      p.k = 32;
      p.metric = metric != Metric.L2 ? 1 : 0;
      assertSame(p, new ExactRerank(metric, 128, 3, 3162, 32).vectors(VECTORS, QUERIES).exactKeys(EXACT),
          "small scored " + metric);
    }
  }

  /** IVF-PQ's device re-rank of a table: selecting itself (few rows), or followed by a merge. */
  @Test
  void ivfPqRerank() {
    for (Metric metric : Metric.values()) {
      for (boolean fused : new boolean[] {true, false}) {
        boolean ip = metric != Metric.L2;
        RerankParams p = new RerankParams();
        if (fused) {
          p.rowsDone = DONE;
          p.outIdx = OUT_IDX;
        }
        p.candIdx = CAND_IDS;
        p.candKeys = CAND_KEYS;
        p.exactKeys = EXACT;
        p.outK = OUT_K;
        p.dims = 96;
        p.numQueries = 7;
        p.candidates = 100;
        p.k = 10;
        p.metric = ip ? 1 : 0;
        p.outScale = ip ? -1f : 1f;
        ExactRerank r = new ExactRerank(metric, 96, 7, 100, 10).candidates(CAND_KEYS, CAND_IDS);
        if (fused) {
          r.output(OUT_K, OUT_IDX).selecting(EXACT, DONE);
        } else {
          r.merging(EXACT, OUT_K);
        }
        assertSame(p, r, "IVF-PQ " + metric + (fused ? " selecting" : " merged"));
      }
    }
  }

  /** The FP16 candidate pass's re-rank: selecting, with stats, with or without chunk keys, one index or a table. */
  @Test
  void halfScanRerank() {
    for (Metric metric : Metric.values()) {
      for (boolean table : new boolean[] {false, true}) {
        for (boolean chunked : new boolean[] {false, true}) {
          boolean ip = metric != Metric.L2;
          long vectors = table ? 0 : VECTORS;
          long queries = table ? 0 : QUERIES;
          ExactRerank.ChunkKeys chunkKeys = !chunked ? null
              : table ? new ExactRerank.ChunkKeys(CHUNK_KEYS, 1280, 0, 0)
              : new ExactRerank.ChunkKeys(CHUNK_KEYS, 640, 40, 16);
          RerankParams r = new RerankParams();
          r.vectors = vectors;
          r.queries = queries;
          r.candIdx = CAND_IDS;
          r.candKeys = CAND_KEYS;
          r.exactKeys = EXACT;
          r.stats = STATS;
          r.outK = OUT_K;
          r.outIdx = OUT_IDX;
          r.rowsDone = DONE;
          if (chunkKeys != null) {
            r.chunkKeys = chunkKeys.address();
            r.chunkRowStride = chunkKeys.rowStride();
            r.chunkK = chunkKeys.perChunk();
            r.chunks = chunkKeys.chunks();
          }
          r.dims = 384;
          r.numQueries = 12;
          r.candidates = 256;
          r.k = 100;
          r.metric = ip ? 1 : 0;
          r.outScale = ip ? -1f : 1f;
          ExactRerank e = new ExactRerank(metric, 384, 12, 256, 100).vectors(vectors, queries)
              .candidates(CAND_KEYS, CAND_IDS).stats(STATS).output(OUT_K, OUT_IDX).chunkKeys(chunkKeys)
              .selecting(EXACT, DONE);
          assertSame(r, e, "half scan " + metric + (table ? " table" : " one index") + (chunked ? " chunked" : ""));
        }
      }
    }
  }
}
