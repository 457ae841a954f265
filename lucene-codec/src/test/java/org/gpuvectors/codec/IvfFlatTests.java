package org.gpuvectors.codec;

import static org.gpuvectors.codec.GpuVectorsFormatTests.Hit;
import static org.gpuvectors.codec.GpuVectorsFormatTests.assertSameHits;
import static org.gpuvectors.codec.GpuVectorsFormatTests.oracleTopK;
import static org.gpuvectors.codec.IvfTestSupport.FIELD;
import static org.gpuvectors.codec.IvfTestSupport.config;
import static org.gpuvectors.codec.IvfTestSupport.distance;
import static org.gpuvectors.codec.IvfTestSupport.doc;
import static org.gpuvectors.codec.IvfTestSupport.ids;
import static org.gpuvectors.codec.IvfTestSupport.index;
import static org.gpuvectors.codec.IvfTestSupport.overlap;
import static org.gpuvectors.codec.IvfTestSupport.search;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.IntPredicate;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.gpuvectors.codec.gpu.DeviceInputs;
import org.gpuvectors.codec.gpu.FakeBackend;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.ivf.IvfField;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.ivf.IvfLists;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code ivf_flat} fields through Lucene on the CPU (and through the service on a {@link FakeBackend}):
 * the lists' invariants after flush, index sorting and merges with deletions, exactness when every
 * list is probed, recall at the defaults, filters, thresholds, determinism and corruption.
 */
class IvfFlatTests {

  private static final int DIMS = 16;

  @TempDir Path tempDir;
  private final IvfTestSupport data = new IvfTestSupport(DIMS, 7, 0.15f);
  private final Random random = data.random;

  /**
   * On the GPU machine the lists were trained and searched on the GPU: the default service's stats
   * show GPU searches and GPU assignments, and no search fell back for a GPU failure.
   */
  @AfterEach
  void ranOnTheGpuWhenOneIsRequired() {
    try {
      if (GpuTestSupport.gpuRequired() && usedDefaultService) {
        var stats = GpuSearchServices.current().stats();
        assertTrue(stats.gpuSearches() > 0, () -> "GPU searches: " + stats);
        IvfTestSupport.assertTrainedOnTheGpu(stats);
      }
    } finally {
      GpuSearchServices.closeDefault();
    }
  }

  /** Whether the test searched through the default service (the real GPU on the GPU machine). */
  private boolean usedDefaultService = true;

  private float[] point(VectorSimilarityFunction sim) {
    return data.point(sim);
  }

  private List<float[]> points(int n, VectorSimilarityFunction sim) {
    return data.points(n, sim);
  }

  private FieldType ivfType(VectorSimilarityFunction sim, Map<String, Integer> params) {
    return data.fieldType(IndexType.IVF_FLAT, sim, params);
  }

  private static IvfField lists(LeafReader leaf) {
    return IvfTestSupport.reader(leaf).ivfField(FIELD);
  }

  private static void assertListInvariants(LeafReader leaf, VectorSimilarityFunction sim) throws IOException {
    IvfField ivf = lists(leaf);
    assertNotNull(ivf, "IVF lists built");
    IvfTestSupport.assertListInvariants(DeviceInputs.lists(ivf), leaf.getFloatVectorValues(FIELD), sim);
  }

  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void probingEveryListIsExact(VectorSimilarityFunction sim) throws IOException {
    List<float[]> vectors = points(3000, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 5000), vectors, ivfType(sim, Map.of(IndexParams.NLIST, 30, IndexParams.NPROBE, 30)));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(1, reader.leaves().size());
        assertEquals(30, lists(reader.leaves().get(0).reader()).nlist());
        assertTrue(lists(reader.leaves().get(0).reader()).ramBytesUsed() >= 30L * DIMS * Float.BYTES,
            "the centroids are accounted for on the heap");
        assertListInvariants(reader.leaves().get(0).reader(), sim);
        IndexSearcher searcher = new IndexSearcher(reader);
        for (int q = 0; q < 10; q++) {
          float[] query = point(sim);
          int k = 1 + random.nextInt(30);
          assertSameHits(oracleTopK(vectors, query, sim, k, id -> true), search(searcher, query, k, null));
        }
      }
    }
  }

  @Test
  void defaultProbesFindMostNeighboursAndNumCandidatesFindsMore() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = points(8000, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 10_000), vectors, ivfType(sim, Map.of()));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IvfField ivf = lists(reader.leaves().get(0).reader());
        assertEquals(Math.round(Math.sqrt(8000)), ivf.nlist(), "default nlist: about sqrt(n)");
        assertEquals(Math.round(ivf.nlist() / 16f), ivf.defaultProbes(), "default nprobe: about nlist / 16");
        IndexSearcher searcher = new IndexSearcher(reader);
        double atDefault = 0;
        double atMoreCandidates = 0;
        int queries = 100;
        for (int q = 0; q < queries; q++) {
          float[] query = point(sim);
          Set<Integer> truth = ids(oracleTopK(vectors, query, sim, 10, id -> true));
          atDefault += overlap(truth, search(searcher, query, 10, null)) / 10.0;
          // num_candidates 400: Lucene's k for the segment; the top 10 of those
          atMoreCandidates += overlap(truth, search(searcher, query, 400, null).subList(0, 10)) / 10.0;
        }
        atDefault /= queries;
        atMoreCandidates /= queries;
        assertTrue(atDefault >= 0.8, "recall@10 at the defaults: " + atDefault);
        assertTrue(atMoreCandidates >= atDefault && atMoreCandidates >= 0.97, "recall@10 at 400 candidates: " + atMoreCandidates);
      }
    }
  }

  /**
   * Concurrent searches of one reader on the CPU path, on a directory whose inputs are buffered
   * (NIOFS: a shared input would mix up the threads' positions), answer as the same searches one after
   * another: each search reads the lists through its own clone.
   */
  @Test
  void concurrentCpuSearchesShareTheReader() throws Exception {
    usedDefaultService = false; // CPU path only
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = points(4000, sim);
    try (Directory dir = new org.apache.lucene.store.NIOFSDirectory(tempDir)) {
      index(dir, config(0, 10_000), vectors, ivfType(sim, Map.of(IndexParams.NLIST, 40, IndexParams.NPROBE, 4)));
      GpuSearchServices.current().setEnabled(false);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        float[][] queries = new float[64][];
        List<List<Hit>> expected = new java.util.ArrayList<>();
        for (int q = 0; q < queries.length; q++) {
          queries[q] = point(sim);
          expected.add(search(searcher, queries[q], 10, null));
        }
        var pool = java.util.concurrent.Executors.newFixedThreadPool(8);
        try {
          List<java.util.concurrent.Future<List<Hit>>> answers = new java.util.ArrayList<>();
          for (int round = 0; round < 4; round++) {
            for (float[] query : queries) {
              answers.add(pool.submit(() -> search(searcher, query, 10, null)));
            }
          }
          for (int i = 0; i < answers.size(); i++) {
            assertEquals(expected.get(i % queries.length), answers.get(i).get(), "query " + (i % queries.length));
          }
        } finally {
          pool.shutdown();
        }
      } finally {
        GpuSearchServices.current().setEnabled(true);
      }
    }
  }

  @Test
  void selectiveFilterScansEveryList() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = points(5000, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 10_000), vectors, ivfType(sim, Map.of(IndexParams.NLIST, 64, IndexParams.NPROBE, 2)));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        IntPredicate rare = id -> id % 50 == 0; // 2 %: 2 lists / 0.02 > 64 lists, so all are scanned
        for (int q = 0; q < 10; q++) {
          float[] query = point(sim);
          assertSameHits(
              oracleTopK(vectors, query, sim, 10, rare),
              search(searcher, query, 10, new TermQuery(new Term("rare", "yes"))));
        }
      }
    }
  }

  @Test
  void indexSortingRenumbersTheLists() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.COSINE;
    List<float[]> vectors = points(3000, sim);
    for (int i = 0; i < vectors.size(); i += 9) {
      vectors.set(i, null); // documents without a vector: ordinals differ from doc ids
    }
    IndexWriterConfig config = config(0, 5000).setIndexSort(new Sort(new SortField("sortkey", SortField.Type.LONG, true)));
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config, vectors, ivfType(sim, Map.of(IndexParams.NLIST, 25, IndexParams.NPROBE, 25)));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertListInvariants(reader.leaves().get(0).reader(), sim);
        IndexSearcher searcher = new IndexSearcher(reader);
        for (int q = 0; q < 10; q++) {
          float[] query = point(sim);
          assertSameHits(oracleTopK(vectors, query, sim, 10, id -> true), search(searcher, query, 10, null));
        }
      }
    }
  }

  @Test
  void mergesRebuildTheListsWithoutDeletedDocuments() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT;
    List<float[]> vectors = points(4000, sim);
    FieldType type = ivfType(sim, Map.of(IndexParams.NLIST, 20, IndexParams.NPROBE, 20));
    try (Directory dir = FSDirectory.open(tempDir)) {
      try (IndexWriter writer = new IndexWriter(dir, config(0, 1000))) {
        for (int id = 0; id < vectors.size(); id++) {
          writer.addDocument(doc(id, vectors.get(id), type));
        }
        writer.commit();
        for (int id = 0; id < vectors.size(); id += 3) {
          writer.deleteDocuments(new Term("sid", Integer.toString(id)));
        }
        writer.forceMerge(1);
        writer.commit();
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(1, reader.leaves().size());
        LeafReader leaf = reader.leaves().get(0).reader();
        assertEquals(vectors.size() - (vectors.size() + 2) / 3, leaf.getFloatVectorValues(FIELD).size());
        assertListInvariants(leaf, sim);
        IndexSearcher searcher = new IndexSearcher(reader);
        for (int q = 0; q < 10; q++) {
          float[] query = point(sim);
          assertSameHits(oracleTopK(vectors, query, sim, 10, id -> id % 3 != 0), search(searcher, query, 10, null));
        }
      }
    }
  }

  /**
   * The GPU probes the same lists as the CPU and scans them exactly: the same hits, except where the
   * list ranking has a near tie at the last probed list (GEMM and SIMD distances round differently),
   * which is checked rather than assumed.
   */
  @Test
  void gpuAndCpuProbeTheSameLists() throws IOException {
    GpuTestSupport.assumeGpuOrFail(org.gpuvectors.cuda.GpuAvailability.get());
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = points(20_000, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 30_000), vectors, ivfType(sim, Map.of(IndexParams.NLIST, 100, IndexParams.NPROBE, 5)));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IvfLists lists = DeviceInputs.lists(lists(reader.leaves().get(0).reader()));
        IndexSearcher searcher = new IndexSearcher(reader);
        GpuSearchService service = GpuSearchServices.current();
        int differing = 0;
        for (int q = 0; q < 200; q++) {
          float[] query = point(sim);
          long before = service.stats().gpuSearches();
          List<Hit> gpu = search(searcher, query, 10, null);
          assertEquals(before + 1, service.stats().gpuSearches(), "searched on the GPU");
          service.setEnabled(false);
          List<Hit> cpu = search(searcher, query, 10, null);
          service.setEnabled(true);
          if (gpu.stream().map(Hit::id).toList().equals(cpu.stream().map(Hit::id).toList()) == false) {
            differing++;
            float[] d = new float[lists.nlist()];
            for (int l = 0; l < d.length; l++) {
              d[l] = distance(lists, DIMS, l, query, true);
            }
            Arrays.sort(d);
            assertEquals(d[4], d[5], 1e-4f * Math.max(1, d[4]), "hits differ without a near tie at the 5th list: query " + q);
          }
        }
        assertTrue(differing <= 4, "queries with differing hits: " + differing);
      }
    }
  }

  @Test
  void segmentsBelowTheThresholdStayFlat() throws IOException {
    usedDefaultService = false; // flat segments: nothing trained
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = points(600, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(500, 400), vectors, ivfType(sim, Map.of(IndexParams.NLIST, 8, IndexParams.NPROBE, 1)));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(2, reader.leaves().size());
        for (LeafReaderContext leaf : reader.leaves()) {
          assertNull(lists(leaf.reader()), "a segment of " + leaf.reader().maxDoc() + " docs stays flat");
        }
        IndexSearcher searcher = new IndexSearcher(reader);
        float[] query = point(sim);
        assertSameHits(oracleTopK(vectors, query, sim, 10, id -> true), search(searcher, query, 10, null));
      }
    }
  }

  @Test
  void buildsAreDeterministic() throws IOException {
    usedDefaultService = false; // builds only
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = points(3000, sim);
    IvfLists[] built = new IvfLists[2];
    for (int run = 0; run < 2; run++) {
      try (Directory dir = FSDirectory.open(tempDir.resolve("run" + run))) {
        index(dir, config(0, 5000), vectors, ivfType(sim, Map.of(IndexParams.NLIST, 30)));
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          built[run] = DeviceInputs.lists(lists(reader.leaves().get(0).reader()));
        }
      }
    }
    assertArrayEquals(built[0].centroids(), built[1].centroids());
    assertArrayEquals(built[0].offsets(), built[1].offsets());
    assertArrayEquals(built[0].ords(), built[1].ords());
  }

  @Test
  void corruptListsFailIntegrityChecks() throws IOException {
    usedDefaultService = false; // builds only
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 5000), points(2000, sim), ivfType(sim, Map.of(IndexParams.NLIST, 16)));
    }
    Path gvd;
    try (var files = Files.list(tempDir)) {
      gvd = files.filter(p -> p.toString().endsWith(".gvd")).findFirst().orElseThrow();
    }
    try (RandomAccessFile raf = new RandomAccessFile(gvd.toFile(), "rw")) {
      long pos = raf.length() - 64; // inside the ordinals
      raf.seek(pos);
      int b = raf.read();
      raf.seek(pos);
      raf.write(b ^ 0x5A);
    }
    try (Directory dir = FSDirectory.open(tempDir);
         DirectoryReader reader = DirectoryReader.open(dir)) {
      LeafReader leaf = reader.leaves().get(0).reader();
      assertThrows(CorruptIndexException.class, () -> ((org.apache.lucene.index.CodecReader) leaf).checkIntegrity());
    }
  }

  @Test
  void listsTrainOnTheDeviceAndSearchesProbeTheSameListsThere() throws IOException {
    usedDefaultService = false; // a fake device of its own
    FakeBackend device = new FakeBackend(1L << 30);
    GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.defaults());
    GpuSearchServices.install(service);
    try {
      VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
      List<float[]> vectors = points(4000, sim);
      try (Directory dir = FSDirectory.open(tempDir)) {
        index(dir, config(0, 5000), vectors, ivfType(sim, Map.of(IndexParams.NLIST, 50, IndexParams.NPROBE, 3)));
        assertTrue(device.nearestCalls.get() > 0, "k-means assignment ran on the device");
        assertEquals(0, service.stats().cpuAssignedVectors());
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          assertListInvariants(reader.leaves().get(0).reader(), sim);
          IndexSearcher searcher = new IndexSearcher(reader);
          for (int q = 0; q < 20; q++) {
            float[] query = point(sim);
            long before = service.stats().gpuSearches();
            List<Hit> onDevice = search(searcher, query, 10, null);
            assertEquals(before + 1, service.stats().gpuSearches(), "searched on the device");
            service.setEnabled(false);
            List<Hit> onCpu = search(searcher, query, 10, null);
            service.setEnabled(true);
            // the same 3 lists probed on both paths: the same hits (the fake scores in double: ids)
            assertEquals(onCpu.stream().map(Hit::id).toList(), onDevice.stream().map(Hit::id).toList());
          }
        }
      }
    } finally {
      GpuSearchServices.uninstall(service);
      service.close();
    }
  }

  @Test
  void aSearchProbingMoreListsThanTheDeviceSelectsRunsOnTheCpuWithoutFailingItsPeers() throws IOException {
    usedDefaultService = false; // a fake device of its own, which refuses probes past the device's coarse step
    FakeBackend device = new FakeBackend(1L << 30);
    GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.defaults());
    GpuSearchServices.install(service);
    try {
      VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
      int lists = GpuSearchService.MAX_GPU_PROBES + 52;
      // segment 0: lists vectors more than the device probes, all probed (nprobe = nlist); segment 1: 1,000 vectors,
      // 1,000 lists (nlist at most one list a vector), all probed too, within the device's limit
      List<float[]> vectors = points(lists + 1000, sim);
      try (Directory dir = FSDirectory.open(tempDir)) {
        index(dir, config(0, lists), vectors,
            ivfType(sim, Map.of(IndexParams.NLIST, lists, IndexParams.NPROBE, lists)));
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          assertEquals(2, reader.leaves().size());
          assertEquals(2, GpuWarmup.warm(reader, service).resident(), "both segments resident: peers of one pass");
          IndexSearcher searcher = new IndexSearcher(reader);
          for (int q = 0; q < 5; q++) {
            float[] query = point(sim);
            // every list probed in both segments: exact
            assertSameHits(oracleTopK(vectors, query, sim, 10, id -> true), search(searcher, query, 10, null));
          }
          assertEquals(5, service.stats().cpuFallbacks(FallbackReason.PROBES_TOO_MANY), "the large segment: the CPU");
          assertEquals(5, service.stats().gpuSearches(), "the small segment: the GPU, its pass without the large one");
          // the batch API: one pass for the small segment's share, the large one's on the CPU
          float[][] batch = {point(sim), point(sim), point(sim)};
          TopDocs[] batched = KnnBatchSearcher.search(searcher, FIELD, batch, 10, null);
          for (int q = 0; q < batch.length; q++) {
            assertSameHits(oracleTopK(vectors, batch[q], sim, 10, id -> true),
                GpuVectorsFormatTests.hits(searcher, batched[q]));
          }
          assertEquals(6, service.stats().cpuFallbacks(FallbackReason.PROBES_TOO_MANY), "the large segment's share");
          assertEquals(6, service.stats().gpuSearches(), "the small segment's share in one pass");
          for (SearchParams params : device.groupParams) {
            assertTrue(((SearchParams.Ivf) params).nprobe() <= GpuSearchService.MAX_GPU_PROBES, params.toString());
          }
        }
      }
    } finally {
      GpuSearchServices.uninstall(service);
      service.close();
    }
  }
}
