package org.gpuvectors.codec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.tests.util.TestUtil;
import org.gpuvectors.codec.GpuVectorsFormatTests.Hit;
import org.gpuvectors.codec.gpu.FakeBackend;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.MemoryPart;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An index of both forms' kinds (a field mapped {@code ivf_pq}: its large segments have lists and codes, its small
 * ones stay flat) under a budget that holds the flat segments whole beside the ivf_pq codes but not the ivf_pq raw
 * vectors too: the raw vectors go first (the host re-ranks from the index's files) and the flat segments stay whole
 * (searched with their peers in one pass), whether a warm-up plans it or the searches find it out. Against the
 * fully resident index: the flat segments' hits are exact either way, and every search stays on the GPU.
 */
class MixedFormsResidencyTests {

  private static final int DIMS = 16;
  private static final int[] SEGMENT_DOCS = {600, 600, 100, 100};
  /** Segments of fewer vectors than this stay flat. */
  private static final int IVF_MIN_VECTORS = 300;
  private static final int QUERIES = 8;

  @TempDir Path tempDir;

  @Test
  void aWarmUpGivesUpTheIvfPqRawVectorsBeforeTheWholeFlatSegments() throws IOException {
    check(true);
  }

  @Test
  void searchesWithoutAWarmUpGiveUpTheIvfPqRawVectorsBeforeTheWholeFlatSegments() throws IOException {
    check(false);
  }

  private void check(boolean warmUp) throws IOException {
    Random random = new Random(23);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, random);
      float[][] queries = new float[QUERIES][DIMS];
      for (float[] q : queries) {
        for (int d = 0; d < DIMS; d++) {
          q[d] = random.nextFloat() * 2 - 1;
        }
      }
      long[] sums = sums(dir); // flat whole, ivf_pq with raw vectors, ivf_pq codes
      assertTrue(sums[0] > 0 && sums[1] > sums[2] && sums[2] > 0,
          "both kinds of segments: " + List.of(sums[0], sums[1], sums[2]));
      // room for the flat segments whole and the codes, and for neither the raw vectors nor a second round of codes
      long budget = sums[0] + sums[2] + (sums[1] - sums[2]) / 4;
      FakeBackend device = new FakeBackend(budget);
      try (GpuSearchService service =
               GpuSearchService.withBackend(device, GpuSearchService.Settings.builder().memoryBudget(1.0).build());
           DirectoryReader reader = DirectoryReader.open(dir)) {
        GpuSearchServices.install(service);
        try {
          if (warmUp) {
            assertEquals(SEGMENT_DOCS.length, GpuWarmup.warm(reader, service).resident());
            assertEquals(SEGMENT_DOCS.length, device.uploads.get(), "each segment field once");
          }
          IndexSearcher searcher = new IndexSearcher(reader);
          for (int round = 0; round < 3; round++) {
            long uploads = device.uploads.get();
            long fallbacks = service.stats().cpuFallbacks();
            for (float[] q : queries) {
              searcher.search(new KnnFloatVectorQuery("vec", q, 10), 10);
            }
            if (round == 2 || (warmUp && round == 0)) {
              assertEquals(uploads, device.uploads.get(), () -> "settled: nothing uploaded: " + service.stats());
              assertEquals(fallbacks, service.stats().cpuFallbacks(), () -> "settled: all on the GPU: " + service.stats());
            }
          }
          DeviceBytes parts = service.residentBytesByPart();
          assertEquals(sums[0], parts.get(MemoryPart.VECTORS), () -> "the flat segments whole, no raw vectors: " + parts);
          assertEquals(0, parts.get(MemoryPart.COMPACT_VECTORS), parts::toString);
          assertTrue(parts.get(MemoryPart.PQ_CODES) > 0, parts::toString);
          assertEquals(SEGMENT_DOCS.length, service.residentCount());
          assertTrue(service.residentBytes() <= budget, () -> service.residentBytes() + " of " + budget);
          assertEquals(0, service.stats().compactCopyQueries(), "no flat segment as its copy");
          assertTrue(service.stats().hostRerankQueries() > 0, "the ivf_pq candidates re-ranked on the host");

          // the flat segments' hits, exact on both paths: the same as the CPU path's over those segments
          service.setEnabled(false);
          List<List<Hit>> cpu = search(searcher, queries);
          service.setEnabled(true);
          List<List<Hit>> gpu = search(searcher, queries);
          int flatFrom = SEGMENT_DOCS[0] + SEGMENT_DOCS[1];
          for (int q = 0; q < QUERIES; q++) {
            GpuVectorsFormatTests.assertSameHits(cpu.get(q).stream().filter(h -> h.id() >= flatFrom).limit(3).toList(),
                gpu.get(q).stream().filter(h -> h.id() >= flatFrom).limit(3).toList()); // scores within 1e-5
          }
        } finally {
          GpuSearchServices.uninstall(service);
        }
      }
    }
  }

  private static List<List<Hit>> search(IndexSearcher searcher, float[][] queries) throws IOException {
    return java.util.Arrays.stream(queries).map(q -> {
      try {
        return GpuVectorsFormatTests.hits(searcher, searcher.search(new KnnFloatVectorQuery("vec", q, 100), 100));
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }).toList();
  }

  /** The device bytes of the index's flat segments whole, its ivf_pq segments with raw vectors, and as codes. */
  private static long[] sums(Directory dir) throws IOException {
    long[] sums = new long[3];
    try (GpuSearchService service = GpuSearchService.withBackend(
             new FakeBackend(1L << 30), GpuSearchService.Settings.builder().memoryBudget(1.0).build());
         DirectoryReader reader = DirectoryReader.open(dir)) {
      int flat = 0;
      for (LeafReaderContext leaf : reader.leaves()) {
        GpuVectorsReader ours = KnnBatchSearcher.gpuVectorsReader(leaf.reader(), "vec");
        flat += ours.ivfPqField("vec") == null ? 1 : 0;
        sums[0] += ours.flatWholeBytes("vec", service);
        sums[1] += ours.ivfPqBytes("vec", service, true);
        sums[2] += ours.ivfPqBytes("vec", service, false);
      }
      assertEquals(2, flat, "two flat segments, two with lists and codes");
    }
    return sums;
  }

  private static void index(Directory dir, Random random) throws IOException {
    IndexWriterConfig config = new IndexWriterConfig()
        .setCodec(TestUtil.alwaysKnnVectorsFormat(new GpuVectorsFormat(IVF_MIN_VECTORS)))
        .setMergePolicy(NoMergePolicy.INSTANCE);
    var type = GpuVectorsFormat.markField(KnnFloatVectorField.createFieldType(DIMS, VectorSimilarityFunction.EUCLIDEAN),
        new IndexParams(IndexType.IVF_PQ, Map.of(IndexParams.NLIST, 4, IndexParams.PQ_M, 4)));
    int id = 0;
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (int docs : SEGMENT_DOCS) {
        for (int i = 0; i < docs; i++, id++) {
          float[] v = new float[DIMS];
          for (int d = 0; d < DIMS; d++) {
            v[d] = random.nextFloat() * 2 - 1;
          }
          Document doc = new Document();
          doc.add(new StoredField("id", id));
          doc.add(new KnnFloatVectorField("vec", v, type));
          writer.addDocument(doc);
        }
        writer.commit();
      }
    }
  }
}
