package org.gpuvectors.codec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopKnnCollector;
import org.apache.lucene.util.FixedBitSet;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.codec.gpu.FakeBackend;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.cuda.flat.Bf16;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The exact GPU search of byte, bit and bfloat16 fields through {@link GpuSegmentSearcher}'s entries ({@link
 * GpuSegmentSearcher#searchBytes}, {@link GpuSegmentSearcher#searchBf16}): Lucene's scores from the device's raw
 * distances (on the CPU), the same documents and scores as a brute force with Lucene's own similarity (bit: {@code
 * dense_vector}'s Hamming score) on the GPU, with and without a filter, for several k, each search served by the GPU
 * (counted, no fallback); and the CPU fallbacks (no GPU, a collector's visit limit).
 */
class ElementSearchTests {

  private static byte[] randomBytes(int dims, Random r) {
    byte[] b = new byte[dims];
    for (int i = 0; i < dims; i++) {
      b[i] = r.nextInt(8) == 0 ? (byte) r.nextInt(256) : (byte) (r.nextInt(21) - 10);
    }
    return b;
  }

  /** dense_vector's score of a bit vector: (bits - Hamming distance) / bits. */
  private static float hammingScore(byte[] a, byte[] b) {
    int bits = a.length * Byte.SIZE;
    return (bits - VectorUtil.xorBitCount(a, b)) / (float) bits;
  }

  /** The device's raw distances turned into scores are Lucene's scores of the same byte vectors, exactly. */
  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void byteScoresAreLucenes(VectorSimilarityFunction sim) {
    Random r = new Random(38);
    for (int dims : new int[] {1, 7, 64, 768, 4096}) {
      for (int i = 0; i < 200; i++) {
        byte[] a = randomBytes(dims, r);
        byte[] b = randomBytes(dims, r);
        if (i == 0) {
          java.util.Arrays.fill(a, Byte.MIN_VALUE); // the extremes: the largest distance and products
          java.util.Arrays.fill(b, Byte.MAX_VALUE);
        }
        // what element_scan.cu writes: the exact integer as a float, or the cosine divided in double
        float distance = switch (sim) {
          case EUCLIDEAN -> (float) VectorUtil.squareDistance(a, b);
          case DOT_PRODUCT, MAXIMUM_INNER_PRODUCT -> (float) VectorUtil.dotProduct(a, b);
          case COSINE -> VectorUtil.cosine(a, b);
        };
        assertEquals(sim.compare(a, b), GpuSegmentSearcher.elementScore(ElementType.BYTE, sim, distance, dims), 0f,
            sim + " dims " + dims);
        float hamming = VectorUtil.xorBitCount(a, b);
        assertEquals(hammingScore(a, b), GpuSegmentSearcher.elementScore(ElementType.BIT, sim, hamming, dims), 0f);
      }
    }
  }

  /** bfloat16 fields score as float fields do. */
  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void bf16ScoresAreTheFloatPaths(VectorSimilarityFunction sim) {
    for (float d : new float[] {-3.5f, -1f, 0f, 0.25f, 1f, 17f}) {
      assertEquals(GpuSegmentSearcher.score(sim, d), GpuSegmentSearcher.elementScore(ElementType.BFLOAT16, sim, d, 8));
    }
  }

  /** Without a GPU the entry returns false (the CPU runs the search) and counts why. */
  @Test
  void withoutAGpuTheCpuSearches() throws IOException {
    try (GpuSearchService service = GpuSearchService.create(
        GpuSearchService.Settings.builder().mode(GpuSearchService.Mode.FALSE).build())) {
      ByteVectorValues vectors = ByteVectorValues.fromBytes(List.of(new byte[] {1, 2}, new byte[] {3, 4}), 2);
      TopKnnCollector collector = new TopKnnCollector(1, Integer.MAX_VALUE);
      assertFalse(GpuSegmentSearcher.searchBytes(service, new Object(), "f", ElementType.BYTE, vectors,
          VectorSimilarityFunction.EUCLIDEAN, new byte[] {1, 2}, collector, null, new AcceptMasks()));
      assertEquals(1, service.stats().cpuFallbacks(FallbackReason.NO_GPU));
      assertEquals(0, collector.numCollected());
    }
  }

  /** A collector that may visit fewer vectors than the filter accepts is left to the CPU, which stops early. */
  @Test
  void visitLimitLeavesTheSearchToTheCpu() throws IOException {
    try (GpuSearchService service = GpuSearchService.withBackend(new FakeBackend(1L << 30),
        GpuSearchService.Settings.defaults())) {
      List<byte[]> rows = new ArrayList<>();
      Random r = new Random(1);
      for (int i = 0; i < 100; i++) {
        rows.add(randomBytes(8, r));
      }
      TopKnnCollector collector = new TopKnnCollector(5, 50);
      assertFalse(GpuSegmentSearcher.searchBytes(service, new Object(), "f", ElementType.BYTE,
          ByteVectorValues.fromBytes(rows, 8), VectorSimilarityFunction.EUCLIDEAN, randomBytes(8, r), collector, null,
          new AcceptMasks()));
      assertEquals(1, service.stats().cpuFallbacks(FallbackReason.VISIT_LIMIT));
      assertEquals(0, service.residentCount(), "nothing uploaded for a search the CPU runs");
    }
  }

  /** A document and its score, ranked as Lucene's collectors rank them (score descending, then doc ascending). */
  private record Hit(int doc, float score) {}

  private static final Comparator<Hit> RANK =
      Comparator.comparingDouble((Hit h) -> h.score()).reversed().thenComparingInt(Hit::doc);

  /**
   * Byte (every similarity), bit (Hamming) and bfloat16 (every similarity) fields searched on the GPU against a brute
   * force with Lucene's similarity: per rank the brute force's score (exactly for byte and bit, whose distances are
   * integers; bfloat16 within FP32 summation error), each document at its own score, every document scoring strictly
   * above the k-th present, byte and bit the brute force's documents exactly (of those tied at the k-th score the
   * lowest, as Lucene keeps them), and each search run on the GPU.
   */
  @Test
  void gpuSearchesAsBruteForce() throws IOException {
    GpuTestSupport.assumeGpuOrFail(GpuAvailability.get());
    GpuSearchService service = GpuSearchServices.current();
    assertTrue(service.gpuActive(), () -> "GPU usable but the GPU path is not active: " + service.unusableReason());
    Random r = new Random(39);
    int n = 3000;
    FixedBitSet thirds = new FixedBitSet(n);
    for (int doc = 0; doc < n; doc += 3) {
      thirds.set(doc);
    }
    List<String> failures = new ArrayList<>();
    for (ElementType type : new ElementType[] {ElementType.BYTE, ElementType.BIT, ElementType.BFLOAT16}) {
      for (VectorSimilarityFunction sim : VectorSimilarityFunction.values()) {
        if (type == ElementType.BIT && sim != VectorSimilarityFunction.EUCLIDEAN) {
          continue; // a bit field scores by Hamming distance whatever it is told
        }
        int dims = type == ElementType.BIT ? 16 : 48;
        List<byte[]> byteRows = new ArrayList<>();
        List<float[]> floatRows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          byteRows.add(randomBytes(dims, r));
          float[] f = new float[dims];
          for (int d = 0; d < dims; d++) {
            f[d] = Bf16.round((float) r.nextGaussian()); // a bfloat16 field's values as the format reads them back
          }
          if (sim == VectorSimilarityFunction.DOT_PRODUCT) {
            VectorUtil.l2normalize(f); // Lucene's dot_product takes unit vectors
            for (int d = 0; d < dims; d++) {
              f[d] = Bf16.round(f[d]);
            }
          }
          floatRows.add(f);
        }
        Object segment = new Object();
        for (int q = 0; q < 3; q++) {
          byte[] byteQuery = randomBytes(dims, r);
          float[] floatQuery = floatRows.get(r.nextInt(n)).clone();
          floatQuery[0] += 0.01f;
          if (sim == VectorSimilarityFunction.DOT_PRODUCT) {
            VectorUtil.l2normalize(floatQuery);
          }
          for (int k : new int[] {1, 10, 100}) {
            for (FixedBitSet filter : new FixedBitSet[] {null, thirds}) {
              List<Hit> truth = new ArrayList<>();
              for (int doc = 0; doc < n; doc++) {
                if (filter == null || filter.get(doc)) {
                  float score = switch (type) {
                    case BIT -> hammingScore(byteRows.get(doc), byteQuery);
                    case BYTE -> sim.compare(byteRows.get(doc), byteQuery);
                    default -> sim.compare(floatRows.get(doc), floatQuery);
                  };
                  truth.add(new Hit(doc, score));
                }
              }
              truth.sort(RANK);
              TopKnnCollector collector = new TopKnnCollector(k, Integer.MAX_VALUE);
              AcceptDocs accept = filter == null ? null : AcceptDocs.fromLiveDocs(filter, n);
              long gpuBefore = service.stats().gpuSearches();
              long fallbacksBefore = service.stats().cpuFallbacks();
              boolean served = type == ElementType.BFLOAT16
                  ? GpuSegmentSearcher.searchBf16(service, segment, "f", FloatVectorValues.fromFloats(floatRows, dims),
                      sim, floatQuery, collector, accept, new AcceptMasks())
                  : GpuSegmentSearcher.searchBytes(service, segment, "f", type,
                      ByteVectorValues.fromBytes(byteRows, dims), sim, byteQuery, collector, accept, new AcceptMasks());
              String where = type + " " + sim + " query " + q + " k " + k + (filter == null ? "" : " filtered");
              if (!served || service.stats().gpuSearches() != gpuBefore + 1
                  || service.stats().cpuFallbacks() != fallbacksBefore) {
                failures.add(where + ": not served by the GPU (" + service.stats() + ")");
                continue;
              }
              String f = compare(collector.topDocs(), truth, k, type);
              if (f != null) {
                failures.add(where + ": " + f);
              }
            }
          }
        }
        service.releaseSegment(segment);
      }
    }
    assertTrue(failures.isEmpty(), failures.size() + " failed, first: "
        + failures.subList(0, Math.min(5, failures.size())));
    assertEquals(0, service.residentCount(), "GPU memory freed with the segments");
  }

  /** The collected hits against the brute force (best first): see {@link #gpuSearchesAsBruteForce}. */
  private static String compare(TopDocs got, List<Hit> truth, int k, ElementType type) {
    int want = Math.min(k, truth.size());
    if (got.scoreDocs.length != want) {
      return got.scoreDocs.length + " hits, expected " + want;
    }
    // bfloat16: FP32 sums in another order than Lucene's (relative error a few ulps of the largest score)
    float tolerance = type == ElementType.BFLOAT16 ? 1e-5f * Math.max(1, Math.abs(truth.get(0).score())) : 0f;
    Set<Integer> docs = new HashSet<>();
    java.util.Map<Integer, Float> scoreOf = new java.util.HashMap<>();
    for (Hit h : truth) {
      scoreOf.put(h.doc(), h.score());
    }
    for (int i = 0; i < want; i++) {
      ScoreDoc sd = got.scoreDocs[i];
      if (Math.abs(sd.score - truth.get(i).score()) > tolerance) {
        return "rank " + i + " score " + sd.score + ", expected " + truth.get(i).score();
      }
      Float own = scoreOf.get(sd.doc);
      if (own == null || !docs.add(sd.doc) || Math.abs(own - sd.score) > tolerance) {
        return "rank " + i + " doc " + sd.doc + " at " + sd.score + ": not accepted, repeated, or scoring " + own;
      }
    }
    if (type != ElementType.BFLOAT16) { // integer distances: the docs tied at the k-th score are the lowest
      Set<Integer> expected = new HashSet<>();
      for (Hit h : truth.subList(0, want)) {
        expected.add(h.doc());
      }
      if (!expected.equals(docs)) {
        return "docs " + docs + ", expected " + expected;
      }
    }
    float kth = truth.get(want - 1).score();
    for (Hit h : truth.subList(0, want)) {
      if (h.score() > kth + tolerance && !docs.contains(h.doc())) {
        return "doc " + h.doc() + " at " + h.score() + " (above the k-th, " + kth + ") missing";
      }
    }
    return null;
  }
}
