package org.gpuvectors.codec;

import static org.gpuvectors.codec.GpuVectorsFormatTests.Hit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.gpuvectors.codec.gpu.FakeBackend;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.MemoryPart;
import org.gpuvectors.cuda.flat.Bf16;
import org.gpuvectors.cuda.flat.GpuElementFlatIndex;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Flat float fields resident as their compact copy (bfloat16 rows, candidates re-ranked and proven on the host) when
 * the whole field does not fit the free budget: the bound the proof rests on, checked against rounded vectors, and
 * searches through Lucene (one query at a time and in batches) against the CPU path on a fake device.
 */
class CompactCopyTests {

  private static final int DIMS = 24;
  private static final int SEGMENT_DOCS = 1000;
  /** GPU bytes of one segment whole (FP32, no norms or FP16 copy on the fake device) and as its compact copy. */
  private static final long WHOLE = 4L * SEGMENT_DOCS * DIMS;
  private static final long COPY =
      GpuElementFlatIndex.deviceBytes(GpuElementFlatIndex.Element.BFLOAT16, SEGMENT_DOCS, DIMS);

  @TempDir Path tempDir;

  /**
   * The bound holds for every vector: its exact score (Lucene's scorer on the raw vector) is at most the best score
   * the bound allows from its copy's distance (the raw vector rounded to bfloat16, summed as the device does), so a
   * vector whose copy distance is no better than the worst candidate's is no better than that bound.
   */
  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void theBoundHoldsForEveryRoundedVector(VectorSimilarityFunction sim) {
    Random r = new Random(40);
    int dims = 96;
    for (int round = 0; round < 20; round++) {
      float[] query = vector(r, dims, sim, 1 + round % 3);
      List<float[]> rows = new ArrayList<>();
      double maxNorm = 0;
      for (int i = 0; i < 500; i++) {
        float[] x = vector(r, dims, sim, 0.5 + r.nextDouble() * (1 + round % 4));
        rows.add(x);
        maxNorm = Math.max(maxNorm, CompactCopyBound.norm(x));
      }
      maxNorm *= 1 + CompactCopyBound.sumError(dims);
      for (float[] x : rows) {
        float copyDistance = copyDistance(sim, x, query);
        float bound =
            CompactCopyBound.bestScoreOutside(sim, dims, maxNorm, CompactCopyBound.norm(query), copyDistance);
        float exact = sim.compare(x, query);
        assertTrue(exact <= bound, sim + ": exact score " + exact + " above its bound " + bound);
      }
    }
  }

  /** A vector just past another by less than the copy's rounding can be is never proven out. */
  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void candidatesTooCloseToCallAreNotProven(VectorSimilarityFunction sim) {
    float[] query = unit(new float[] {1, 0, 0, 0});
    float[] near = unit(new float[] {1, 0.1f, 0, 0});
    float worst = copyDistance(sim, near, query);
    float kth = sim.compare(near, query); // the k-th candidate is as good as the worst
    assertFalse(CompactCopyBound.holdsTopK(sim, 4, 1.0, 1.0, 100, 40, worst, 10, kth));
    assertTrue(CompactCopyBound.holdsTopK(sim, 4, 1.0, 1.0, 40, 40, worst, 10, kth), "every accepted vector returned");
    assertFalse(CompactCopyBound.holdsTopK(sim, 4, 1.0, 1.0, 100, 5, worst, 10, kth), "fewer than k returned");
  }

  /**
   * Two flat segments under a budget that holds the first whole and the second's copy only: the second goes up as
   * its copy (two bytes a dimension, counted as compact vectors), every search and batch gives the CPU path's hits and
   * scores, each segment is uploaded once, and what the copy could not prove went to the CPU and was counted.
   */
  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void aFlatSegmentThatDoesNotFitWholeIsSearchedInItsCompactCopy(VectorSimilarityFunction sim) throws IOException {
    Random r = new Random(38);
    List<float[]> vectors = vectors(r, 2 * SEGMENT_DOCS, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, vectors, sim);
      long budget = WHOLE + COPY + (WHOLE - COPY) / 2; // the second segment whole does not fit, its copy does
      onFakeDevice(budget, (device, service) -> {
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          assertEquals(2, reader.leaves().size());
          IndexSearcher searcher = new IndexSearcher(reader);
          float[][] queries = new float[12][];
          List<List<Hit>> single = new ArrayList<>();
          for (int q = 0; q < queries.length; q++) {
            queries[q] = vector(r, DIMS, sim, 1);
            single.add(search(searcher, queries[q], 10));
        }
        TopDocs[] batched = KnnBatchSearcher.search(searcher, "vec", queries, 10, 40, null);
        assertEquals(2, device.uploads.get(), "each segment uploaded once");
        assertEquals(1, device.elementUploads.get(), "the second as its copy");
        assertEquals(DeviceBytes.builder().add(MemoryPart.VECTORS, WHOLE).add(MemoryPart.COMPACT_VECTORS, COPY).build(),
            service.residentBytesByPart());
        long uncertified = service.stats().cpuFallbacks(FallbackReason.UNCERTIFIED_CANDIDATES);
        assertEquals(uncertified, service.stats().cpuFallbacks(), () -> "only unproven candidates on the CPU: "
            + service.stats());
        assertTrue(uncertified <= 4, () -> "random data, 40 candidates for 10: proven nearly always: " + uncertified);
        // the second segment's share of each single search and batch query, less those sent to the CPU
        assertEquals(2L * queries.length - uncertified, service.stats().compactCopyQueries());
        service.setEnabled(false); // the CPU path
        for (int q = 0; q < queries.length; q++) {
          List<Hit> cpu = search(searcher, queries[q], 10);
          GpuVectorsFormatTests.assertSameHits(cpu, single.get(q));
          GpuVectorsFormatTests.assertSameHits(cpu, GpuVectorsFormatTests.hits(searcher, batched[q]));
        }
        }
      });
    }
  }

  /**
   * A warm-up adds up the index's flat segments first: under the budget of the test above (the first segment whole
   * and the second's copy) it takes both as their copies, so that no search uploads anything; with room for both
   * whole, it takes them whole. The searches that follow give the CPU path's hits.
   */
  @ParameterizedTest
  @EnumSource(value = VectorSimilarityFunction.class, names = {"EUCLIDEAN", "COSINE"})
  void aWarmUpOfAnIndexTooLargeWholeTakesEveryFlatSegmentAsItsCopy(VectorSimilarityFunction sim) throws IOException {
    Random r = new Random(39);
    List<float[]> vectors = vectors(r, 2 * SEGMENT_DOCS, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, vectors, sim);
      for (long budget : new long[] {WHOLE + COPY + (WHOLE - COPY) / 2, 2 * WHOLE}) {
        boolean fitsWhole = budget >= 2 * WHOLE;
        onFakeDevice(budget, (device, service) -> {
          try (DirectoryReader reader = DirectoryReader.open(dir)) {
            assertEquals(2, GpuWarmup.warm(reader, service).resident());
            assertEquals(fitsWhole ? 0 : 2, device.elementUploads.get(), "copies warmed, budget " + budget);
            assertEquals(fitsWhole
                    ? DeviceBytes.builder().add(MemoryPart.VECTORS, 2 * WHOLE).build()
                    : DeviceBytes.builder().add(MemoryPart.COMPACT_VECTORS, 2 * COPY).build(),
                service.residentBytesByPart());
            IndexSearcher searcher = new IndexSearcher(reader);
            float[] query = vector(r, DIMS, sim, 1);
            List<Hit> gpu = search(searcher, query, 10);
            assertEquals(2, device.uploads.get(), "the searches found both resident");
            assertEquals(fitsWhole ? 0 : 2, service.stats().compactCopyQueries()
                + service.stats().cpuFallbacks(FallbackReason.UNCERTIFIED_CANDIDATES));
            service.setEnabled(false);
            GpuVectorsFormatTests.assertSameHits(search(searcher, query, 10), gpu);
          }
        });
      }
    }
  }

  /**
   * An index short of memory without a warm-up: the first search takes the first segment whole, the second fits in
   * neither form beside it (the CPU searches it, counted), and its index turns to copies: the whole segment is
   * evicted, and the next search takes both as copies. From then on every search stays on the GPU, with the CPU path's
   * hits.
   */
  @ParameterizedTest
  @EnumSource(value = VectorSimilarityFunction.class, names = {"EUCLIDEAN", "DOT_PRODUCT"})
  void anIndexShortOfMemoryTurnsItsWholeFlatSegmentsIntoCopies(VectorSimilarityFunction sim) throws IOException {
    Random r = new Random(42);
    List<float[]> vectors = vectors(r, 2 * SEGMENT_DOCS, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, vectors, sim);
      onFakeDevice(WHOLE + COPY / 2, (device, service) -> { // one segment whole, or both as copies
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader);
          float[][] queries = new float[6][];
          List<List<Hit>> gpu = new ArrayList<>();
          for (int q = 0; q < queries.length; q++) {
            queries[q] = vector(r, DIMS, sim, 1);
            gpu.add(search(searcher, queries[q], 10));
            if (q == 0) {
              assertEquals(1, device.uploads.get(), "the first segment whole; the second refused in both forms");
              assertEquals(1, service.stats().evictions(), "the whole segment evicted for its copy");
              assertEquals(DeviceBytes.NONE, service.residentBytesByPart());
            }
          }
          assertEquals(3, device.uploads.get(), "then both as copies, once each");
          assertEquals(2, device.elementUploads.get());
          assertEquals(DeviceBytes.builder().add(MemoryPart.COMPACT_VECTORS, 2 * COPY).build(),
              service.residentBytesByPart());
          long budgetRefusals = service.stats().cpuFallbacks(FallbackReason.NOT_ADMITTED)
              + service.stats().cpuFallbacks(FallbackReason.BUDGET_IN_USE);
          assertTrue(budgetRefusals >= 1 && budgetRefusals <= 2, service.stats()::toString);
          assertEquals(2L * (queries.length - 1), service.stats().compactCopyQueries()
              + service.stats().cpuFallbacks(FallbackReason.UNCERTIFIED_CANDIDATES), "later searches: copies");
          service.setEnabled(false);
          for (int q = 0; q < queries.length; q++) {
            GpuVectorsFormatTests.assertSameHits(search(searcher, queries[q], 10), gpu.get(q));
          }
        }
      });
    }
  }

  /**
   * A segment of vectors that differ from each other by less than the copy's rounding can tell apart: the candidates
   * cannot be proven, so each search runs on the CPU, counted, with the CPU path's hits.
   */
  @ParameterizedTest
  @EnumSource(value = VectorSimilarityFunction.class, names = {"EUCLIDEAN", "COSINE"})
  void nearTiesTheCopyCannotSeparateAreSearchedOnTheCpu(VectorSimilarityFunction sim) throws IOException {
    Random r = new Random(41);
    float[] centre = vector(r, DIMS, sim, 1);
    List<float[]> vectors = new ArrayList<>();
    for (int i = 0; i < SEGMENT_DOCS; i++) {
      float[] v = centre.clone();
      for (int d = 0; d < DIMS; d++) {
        v[d] += (float) (1e-4 * r.nextGaussian()); // far below bfloat16's resolution of the centre's values
      }
      vectors.add(v);
    }
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, vectors, sim);
      // less than the segment whole: its copy
      long budget = COPY + 64;
      onFakeDevice(budget, (device, service) -> {
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader);
          float[][] queries = {centre, vector(r, DIMS, sim, 1)};
          List<List<Hit>> single = new ArrayList<>();
          for (float[] query : queries) {
            single.add(search(searcher, query, 10));
          }
          TopDocs[] batched = KnnBatchSearcher.search(searcher, "vec", queries, 10, 10, null);
          assertEquals(1, device.elementUploads.get(), "the segment as its copy");
          assertEquals(2L * queries.length, service.stats().cpuFallbacks(FallbackReason.UNCERTIFIED_CANDIDATES),
              () -> "every search and batch query went to the CPU: " + service.stats());
          assertEquals(service.stats().cpuFallbacks(FallbackReason.UNCERTIFIED_CANDIDATES),
              service.stats().cpuFallbacks());
          service.setEnabled(false);
          for (int q = 0; q < queries.length; q++) {
            List<Hit> cpu = search(searcher, queries[q], 10);
            GpuVectorsFormatTests.assertSameHits(cpu, single.get(q));
            GpuVectorsFormatTests.assertSameHits(cpu, GpuVectorsFormatTests.hits(searcher, batched[q]));
          }
        }
      });
    }
  }

  /** What a test does with its fake device and the service installed over it. */
  @FunctionalInterface
  private interface OnDevice {
    void run(FakeBackend device, GpuSearchService service) throws IOException;
  }

  /** Runs {@code body} with a fake device whose whole memory is {@code budget}, its service the current one. */
  private static void onFakeDevice(long budget, OnDevice body) throws IOException {
    FakeBackend device = new FakeBackend(budget);
    GpuSearchService service =
        GpuSearchService.withBackend(device, GpuSearchService.Settings.builder().memoryBudget(1.0).build());
    GpuSearchServices.install(service);
    try {
      body.run(device, service);
    } finally {
      GpuSearchServices.uninstall(service);
      service.close();
    }
  }

  /** SEGMENT_DOCS documents a segment, flat (id = position). */
  private static void index(Directory dir, List<float[]> vectors, VectorSimilarityFunction sim) throws IOException {
    IndexWriterConfig config =
        new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setMergePolicy(NoMergePolicy.INSTANCE);
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (int id = 0; id < vectors.size(); id++) {
        Document doc = new Document();
        doc.add(new StoredField("id", id));
        doc.add(new KnnFloatVectorField("vec", vectors.get(id),
            GpuVectorsFormat.markField(KnnFloatVectorField.createFieldType(DIMS, sim), IndexType.FLAT)));
        writer.addDocument(doc);
        if (id % SEGMENT_DOCS == SEGMENT_DOCS - 1) {
          writer.commit();
        }
      }
    }
  }

  private static List<Hit> search(IndexSearcher searcher, float[] query, int k) throws IOException {
    return GpuVectorsFormatTests.hits(searcher, searcher.search(new KnnFloatVectorQuery("vec", query, k), k));
  }

  /** {@code n} vectors of {@link #vector}, norm about 1. */
  private static List<float[]> vectors(Random r, int n, VectorSimilarityFunction sim) {
    List<float[]> vectors = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      vectors.add(vector(r, DIMS, sim, 1));
    }
    return vectors;
  }

  /** A gaussian vector of norm about {@code scale}; unit length where the similarity asks for it. */
  private static float[] vector(Random r, int dims, VectorSimilarityFunction sim, double scale) {
    float[] v = new float[dims];
    for (int d = 0; d < dims; d++) {
      v[d] = (float) (r.nextGaussian() * scale / Math.sqrt(dims));
    }
    return sim == VectorSimilarityFunction.DOT_PRODUCT ? unit(v) : v;
  }

  private static float[] unit(float[] v) {
    return org.apache.lucene.util.VectorUtil.l2normalize(v.clone());
  }

  /** The distance the device computes from the copy: the row rounded to bfloat16, FP32 sums, raw (as returned). */
  private static float copyDistance(VectorSimilarityFunction sim, float[] x, float[] q) {
    float dot = 0;
    float xx = 0;
    float qq = 0;
    float sq = 0;
    for (int d = 0; d < x.length; d++) {
      float c = Bf16.round(x[d]);
      dot += c * q[d];
      xx += c * c;
      qq += q[d] * q[d];
      sq += (c - q[d]) * (c - q[d]);
    }
    return switch (sim) {
      case EUCLIDEAN -> sq;
      case DOT_PRODUCT, MAXIMUM_INNER_PRODUCT -> dot;
      case COSINE -> (float) (dot / Math.sqrt((double) xx * qq));
    };
  }
}
