package org.gpuvectors.codec;

import org.gpuvectors.codec.gpu.DeviceInputs;
import org.gpuvectors.codec.gpu.FakeBackend;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.index.VectorRows;
import org.gpuvectors.codec.ivf.IvfPqField;
import org.gpuvectors.codec.ivf.ProductQuantizer;
import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.MemoryPart;
import org.gpuvectors.cuda.ivf.IvfLists;
import static org.gpuvectors.codec.GpuVectorsFormatTests.Hit;
import static org.gpuvectors.codec.GpuVectorsFormatTests.assertSameHits;
import static org.gpuvectors.codec.GpuVectorsFormatTests.oracleTopK;
import static org.gpuvectors.codec.IvfTestSupport.FIELD;
import static org.gpuvectors.codec.IvfTestSupport.config;
import static org.gpuvectors.codec.IvfTestSupport.doc;
import static org.gpuvectors.codec.IvfTestSupport.ids;
import static org.gpuvectors.codec.IvfTestSupport.index;
import static org.gpuvectors.codec.IvfTestSupport.overlap;
import static org.gpuvectors.codec.IvfTestSupport.search;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.IntPredicate;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.index.CodecReader;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FloatVectorValues;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code ivf_pq} fields through Lucene on the CPU: the lists' and the codes' invariants after flush,
 * index sorting and merges with deletions, exactness when every list is probed and every candidate
 * re-ranked, recall at the defaults and with more candidates, filters, thresholds, determinism,
 * corruption, parameter checks, and (on a {@link FakeBackend}) training on the device with searches
 * left to the CPU.
 */
class IvfPqTests {

  private static final int DIMS = 16;

  @TempDir Path tempDir;
  private final IvfTestSupport data = new IvfTestSupport(DIMS, 13, 0.15f);
  private final Random random = data.random;

  /** Whether the test built through the default service (the real GPU on the GPU machine). */
  private boolean usedDefaultService = true;

  /** On the GPU machine the codebooks (and lists) were trained on the GPU, and nothing failed there. */
  @AfterEach
  void trainedOnTheGpuWhenOneIsRequired() {
    try {
      if (GpuTestSupport.gpuRequired() && usedDefaultService) {
        IvfTestSupport.assertTrainedOnTheGpu(GpuSearchServices.current().stats());
      }
    } finally {
      GpuSearchServices.closeDefault();
    }
  }

  private FieldType pqType(VectorSimilarityFunction sim, Map<String, Integer> params) {
    return data.fieldType(IndexType.IVF_PQ, sim, params);
  }

  private static IvfPqField pq(LeafReader leaf) {
    return IvfTestSupport.reader(leaf).ivfPqField(FIELD);
  }

  /**
   * The lists' invariants ({@link IvfTestSupport#assertListInvariants}), and each code is the nearest
   * codeword of its vector's residual sub-vectors: a code that did not follow its ordinal (index
   * sorting, merges) breaks it.
   */
  private static void assertInvariants(LeafReader leaf, VectorSimilarityFunction sim) throws IOException {
    IvfPqField field = pq(leaf);
    assertNotNull(field, "ivf_pq built");
    IvfLists lists = DeviceInputs.lists(field.lists());
    FloatVectorValues vectors = leaf.getFloatVectorValues(FIELD);
    IvfTestSupport.assertListInvariants(lists, vectors, sim);
    ProductQuantizer pq = field.pq();
    int sub = pq.subDims();
    for (int l = 0; l < lists.nlist(); l++) {
      float[] centroid = IvfTestSupport.centroid(lists, DIMS, l);
      for (int p = lists.offsets()[l]; p < lists.offsets()[l + 1]; p++) {
        float[] r = vectors.vectorValue(lists.ords()[p]).clone();
        if (sim == VectorSimilarityFunction.COSINE) {
          VectorRows.normalize(r);
        }
        for (int d = 0; d < DIMS; d++) {
          r[d] -= centroid[d];
        }
        byte[] code = field.code(p);
        for (int j = 0; j < pq.m(); j++) {
          float own = subDistance(r, j, pq.codeword(j, code[j] & 0xFF));
          for (int c = 0; c < pq.ksub(); c++) {
            float other = subDistance(r, j, pq.codeword(j, c));
            assertTrue(own <= other + 1e-5f * Math.max(1, other), "position " + p + " sub-quantizer " + j);
          }
        }
      }
    }
    assertEquals(sub * pq.m(), DIMS);
  }

  private static float subDistance(float[] r, int j, float[] codeword) {
    float s = 0;
    for (int d = 0; d < codeword.length; d++) {
      float diff = r[j * codeword.length + d] - codeword[d];
      s += diff * diff;
    }
    return s;
  }

  /**
   * A search that re-ranks every accepted vector of the probed lists: Lucene's k for the segment (and
   * so the re-ranking depth, at least k) covers them; its top {@code k} are compared with the oracle.
   */
  private static List<Hit> deepSearch(IndexSearcher searcher, float[] query, int k, int accepted, org.apache.lucene.search.Query filter)
      throws IOException {
    int segmentK = Math.max(k, accepted); // a re-rank depth is at least k
    List<Hit> hits = search(searcher, query, segmentK, filter);
    return hits.subList(0, Math.min(k, hits.size()));
  }

  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void probingEveryListAndRerankingEveryCandidateIsExact(VectorSimilarityFunction sim) throws IOException {
    List<float[]> vectors = data.points(3000, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 5000), vectors, pqType(sim, Map.of(IndexParams.NLIST, 30, IndexParams.NPROBE, 30)));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(1, reader.leaves().size());
        LeafReader leaf = reader.leaves().get(0).reader();
        assertEquals(30, pq(leaf).nlist());
        assertEquals(ProductQuantizer.defaultM(DIMS), pq(leaf).pq().m(), "default pq_m");
        assertEquals(ProductQuantizer.DEFAULT_BITS, pq(leaf).pq().bits(), "default pq_bits");
        assertInvariants(leaf, sim);
        IndexSearcher searcher = new IndexSearcher(reader);
        for (int q = 0; q < 10; q++) {
          float[] query = data.point(sim);
          int k = 1 + random.nextInt(30);
          assertSameHits(oracleTopK(vectors, query, sim, k, id -> true), deepSearch(searcher, query, k, vectors.size(), null));
        }
      }
    }
  }

  /**
   * Recall@10 against exact search: at the defaults (the lists ivf_flat probes, 4 x k candidates
   * re-ranked) most true neighbours are found; 400 candidates (more lists, deeper re-ranking) find
   * nearly all. The scores of what is found are exact.
   */
  @Test
  void defaultsFindMostNeighboursAndNumCandidatesFindsMore() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(8000, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 10_000), vectors, pqType(sim, Map.of()));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IvfPqField field = pq(reader.leaves().get(0).reader());
        assertEquals(Math.round(Math.sqrt(8000)), field.nlist(), "default nlist: about sqrt(n), as ivf_flat");
        IndexSearcher searcher = new IndexSearcher(reader);
        double atDefault = 0;
        double atMoreCandidates = 0;
        int queries = 100;
        for (int q = 0; q < queries; q++) {
          float[] query = data.point(sim);
          List<Hit> exact = oracleTopK(vectors, query, sim, 10, id -> true);
          Set<Integer> truth = ids(exact);
          List<Hit> found = search(searcher, query, 10, null);
          atDefault += overlap(truth, found) / 10.0;
          atMoreCandidates += overlap(truth, search(searcher, query, 400, null).subList(0, 10)) / 10.0;
          for (Hit h : found) {
            assertEquals(GpuVectorsFormatTests.oracleScore(sim, vectors.get(h.id()), query), h.score(), 1e-5f, "exact score");
          }
        }
        atDefault /= queries;
        atMoreCandidates /= queries;
        System.out.println("[ivf_pq] recall@10 at the defaults " + atDefault + ", at 400 candidates " + atMoreCandidates);
        assertTrue(atDefault >= 0.9, "recall@10 at the defaults: " + atDefault);
        assertTrue(atMoreCandidates >= atDefault && atMoreCandidates >= 0.97, "recall@10 at 400 candidates: " + atMoreCandidates);
      }
    }
  }

  @Test
  void selectiveFilterScansEveryListAndOnlyAcceptedVectors() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.DOT_PRODUCT;
    List<float[]> vectors = data.points(5000, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 10_000), vectors, pqType(sim, Map.of(IndexParams.NLIST, 64, IndexParams.NPROBE, 2)));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        IntPredicate rare = id -> id % 50 == 0; // 2 %: 2 lists / 0.02 > 64 lists, so all are scanned
        TermQuery filter = new TermQuery(new Term("rare", "yes"));
        for (int q = 0; q < 10; q++) {
          float[] query = data.point(sim);
          // 100 accepted vectors: k 10 re-ranks 40 of them (hits all accepted), k 25 all of them (exact)
          for (Hit h : search(searcher, query, 10, filter)) {
            assertTrue(rare.test(h.id()), "accepted: " + h.id());
          }
          assertSameHits(oracleTopK(vectors, query, sim, 10, rare), deepSearch(searcher, query, 10, 100, filter));
        }
      }
    }
  }

  @Test
  void indexSortingRenumbersTheListsAndTheCodes() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.COSINE;
    List<float[]> vectors = data.points(3000, sim);
    for (int i = 0; i < vectors.size(); i += 9) {
      vectors.set(i, null); // documents without a vector: ordinals differ from doc ids
    }
    IndexWriterConfig config = config(0, 5000).setIndexSort(new Sort(new SortField("sortkey", SortField.Type.LONG, true)));
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config, vectors, pqType(sim, Map.of(IndexParams.NLIST, 25, IndexParams.NPROBE, 25, IndexParams.PQ_M, 4)));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        LeafReader leaf = reader.leaves().get(0).reader();
        assertEquals(4, pq(leaf).pq().m());
        assertInvariants(leaf, sim);
        IndexSearcher searcher = new IndexSearcher(reader);
        int withVectors = leaf.getFloatVectorValues(FIELD).size();
        for (int q = 0; q < 10; q++) {
          float[] query = data.point(sim);
          assertSameHits(oracleTopK(vectors, query, sim, 10, id -> true), deepSearch(searcher, query, 10, withVectors, null));
        }
      }
    }
  }

  @Test
  void mergesRebuildTheListsAndCodesWithoutDeletedDocuments() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT;
    List<float[]> vectors = data.points(4000, sim);
    FieldType type = pqType(sim, Map.of(IndexParams.NLIST, 20, IndexParams.NPROBE, 20, IndexParams.PQ_BITS, 6));
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
        int live = vectors.size() - (vectors.size() + 2) / 3;
        assertEquals(live, leaf.getFloatVectorValues(FIELD).size());
        assertEquals(6, pq(leaf).pq().bits());
        assertInvariants(leaf, sim);
        IndexSearcher searcher = new IndexSearcher(reader);
        for (int q = 0; q < 10; q++) {
          float[] query = data.point(sim);
          assertSameHits(oracleTopK(vectors, query, sim, 10, id -> id % 3 != 0), deepSearch(searcher, query, 10, live, null));
        }
      }
    }
  }

  /**
   * Every build logs one line with its phases (GpuVectorsWriter#logBuild): a flush's without a copy of the
   * vectors, a merge's with one; the phases add up to the total, and the merge's coarse k-means, assignment,
   * PQ training and encoding took time.
   */
  @Test
  void buildsLogTheirPhases() throws IOException {
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(3000, sim);
    FieldType type = pqType(sim, Map.of(IndexParams.NLIST, 16));
    List<String> lines;
    try (Directory dir = FSDirectory.open(tempDir); BuildPhaseLog log = new BuildPhaseLog()) {
      try (IndexWriter writer = new IndexWriter(dir, config(0, 1000))) {
        for (int id = 0; id < vectors.size(); id++) {
          writer.addDocument(doc(id, vectors.get(id), type));
        }
        writer.commit();
        writer.forceMerge(1);
      }
      lines = log.lines();
    }
    List<String> flushes = lines.stream().filter(l -> l.contains("ivf_pq of field [" + FIELD + "]") && l.contains("(flush,")).toList();
    List<String> merges = lines.stream().filter(l -> l.contains("ivf_pq of field [" + FIELD + "]") && l.contains("(merge,")).toList();
    assertEquals(3, flushes.size(), "one line per flushed segment: " + lines);
    assertEquals(1, merges.size(), "one line for the merge: " + lines);
    for (String line : flushes) {
      assertEquals(0.0, phaseSeconds(line, "copy"), "a flush copies nothing: " + line);
    }
    String merge = merges.get(0);
    for (String phase : List.of("copy", "coarse-kmeans", "assign", "pq-train", "encode", "write")) {
      assertTrue(phaseSeconds(merge, phase) >= 0, phase + " in " + merge);
    }
    // the compute phases are timed (each alone may round to 0.000 s on a GPU: 3,000 vectors assign in < 0.5 ms)
    double compute = 0;
    for (String phase : List.of("coarse-kmeans", "assign", "pq-train", "encode")) {
      compute += phaseSeconds(merge, phase);
    }
    assertTrue(compute > 0, "the compute phases took time: " + merge);
    double sum = 0;
    for (String phase : List.of("copy", "coarse-kmeans", "assign", "pq-train", "encode", "write")) {
      sum += phaseSeconds(merge, phase);
    }
    double total = Double.parseDouble(merge.replaceAll(".*: total ([0-9.]+) s:.*", "$1"));
    assertEquals(total, sum, 0.004, "the phases add up to the total (3 decimals each): " + merge);
  }

  /** The seconds a build line gives {@code phase} ({@code ... phase 0.123 ...}). */
  private static double phaseSeconds(String line, String phase) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile(" " + phase + " ([0-9.]+)").matcher(line);
    assertTrue(m.find(), "no phase " + phase + " in " + line);
    return Double.parseDouble(m.group(1));
  }

  @Test
  void segmentsBelowTheThresholdStayFlat() throws IOException {
    usedDefaultService = false; // flat segments: nothing trained
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(600, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(500, 400), vectors, pqType(sim, Map.of(IndexParams.NLIST, 8, IndexParams.NPROBE, 1)));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(2, reader.leaves().size());
        for (LeafReaderContext leaf : reader.leaves()) {
          assertNull(pq(leaf.reader()), "a segment of " + leaf.reader().maxDoc() + " docs stays flat");
        }
        IndexSearcher searcher = new IndexSearcher(reader);
        float[] query = data.point(sim);
        assertSameHits(oracleTopK(vectors, query, sim, 10, id -> true), search(searcher, query, 10, null));
      }
    }
  }

  @Test
  void buildsAreDeterministic() throws IOException {
    usedDefaultService = false; // builds only
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(3000, sim);
    IvfLists[] lists = new IvfLists[2];
    byte[][] codes = new byte[2][];
    float[][] codewords = new float[2][];
    for (int run = 0; run < 2; run++) {
      try (Directory dir = FSDirectory.open(tempDir.resolve("run" + run))) {
        index(dir, config(0, 5000), vectors, pqType(sim, Map.of(IndexParams.NLIST, 30)));
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IvfPqField field = pq(reader.leaves().get(0).reader());
          lists[run] = DeviceInputs.lists(field.lists());
          int m = field.pq().m();
          codes[run] = new byte[vectors.size() * m];
          for (int p = 0; p < vectors.size(); p++) {
            System.arraycopy(field.code(p), 0, codes[run], p * m, m);
          }
          codewords[run] = new float[field.pq().ksub() * DIMS];
          for (int j = 0; j < m; j++) {
            for (int c = 0; c < field.pq().ksub(); c++) {
              System.arraycopy(field.pq().codeword(j, c), 0, codewords[run], (j * field.pq().ksub() + c) * field.pq().subDims(), field.pq().subDims());
            }
          }
        }
      }
    }
    assertArrayEquals(lists[0].centroids(), lists[1].centroids());
    assertArrayEquals(lists[0].ords(), lists[1].ords());
    assertArrayEquals(codewords[0], codewords[1]);
    assertArrayEquals(codes[0], codes[1]);
  }

  @Test
  void corruptCodesFailIntegrityChecks() throws IOException {
    usedDefaultService = false; // builds only
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 5000), data.points(2000, sim), pqType(sim, Map.of(IndexParams.NLIST, 16)));
    }
    Path gvd;
    try (var files = Files.list(tempDir)) {
      gvd = files.filter(p -> p.toString().endsWith(".gvd")).findFirst().orElseThrow();
    }
    try (RandomAccessFile raf = new RandomAccessFile(gvd.toFile(), "rw")) {
      long pos = raf.length() - 64; // inside the codes, the field's last part (2 bytes x 2000 vectors)
      raf.seek(pos);
      int b = raf.read();
      raf.seek(pos);
      raf.write(b ^ 0x5A);
    }
    try (Directory dir = FSDirectory.open(tempDir);
         DirectoryReader reader = DirectoryReader.open(dir)) {
      LeafReader leaf = reader.leaves().get(0).reader();
      assertNotNull(pq(leaf), "the structure still parses: only the checksum sees a flipped code");
      assertThrows(CorruptIndexException.class, () -> ((CodecReader) leaf).checkIntegrity());
    }
  }

  @Test
  void pqMThatDoesNotDivideTheDimensionIsRefused() throws IOException {
    usedDefaultService = false; // nothing built
    IllegalArgumentException marked =
        assertThrows(
            IllegalArgumentException.class,
            () -> pqType(VectorSimilarityFunction.EUCLIDEAN, Map.of(IndexParams.PQ_M, 3)));
    assertEquals("[pq_m] must divide the vector dimension [16] but was [3]", marked.getMessage());

    // parameters that arrive as attributes (no mapping layer) are checked by the writer: the document fails
    FieldType attributes = new FieldType(KnnFloatVectorField.createFieldType(DIMS, VectorSimilarityFunction.EUCLIDEAN));
    attributes.putAttribute(GpuVectorsFormat.INDEX_TYPE_ATTRIBUTE, "ivf_pq");
    attributes.putAttribute(IndexParams.ATTRIBUTE_PREFIX + IndexParams.PQ_M, "5");
    try (Directory dir = FSDirectory.open(tempDir);
         IndexWriter writer = new IndexWriter(dir, config(0, 100))) {
      Document doc = doc(1, data.point(VectorSimilarityFunction.EUCLIDEAN), attributes);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> writer.addDocument(doc));
      assertTrue(
          e.getMessage().contains("field [" + FIELD + "]: [pq_m] must divide the vector dimension [16] but was [5]"),
          e.getMessage());
      assertNull(writer.getTragicException(), "a document failure, not a tragedy for the writer");
    }
  }

  /**
   * A device that fails in the middle of a build's k-means (its launches fail from the fifth step on) hands the rest
   * of the build to the CPU: the build completes, the failure and the CPU's assignments are counted, and the index
   * searches like one built on the CPU alone (the same exact top 10 with every list probed).
   */
  @Test
  void aDeviceFailingMidBuildHandsTheRestToTheCpu() throws IOException {
    usedDefaultService = false; // a fake device of its own
    FakeBackend device = new FakeBackend(1L << 30);
    device.assignFailsFrom = 5;
    GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.defaults());
    GpuSearchServices.install(service);
    try {
      VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
      List<float[]> vectors = data.points(3000, sim);
      try (Directory dir = FSDirectory.open(tempDir)) {
        index(dir, config(0, 5000), vectors, pqType(sim, Map.of(IndexParams.NLIST, 20, IndexParams.NPROBE, 20)));
        assertTrue(service.stats().gpuAssignedVectors() > 0, "the first steps ran on the device: " + service.stats());
        assertTrue(service.stats().cpuAssignedVectors() > 0, "the CPU took over: " + service.stats());
        assertTrue(service.stats().cpuFallbacks(FallbackReason.CUDA_ERROR) > 0, "the failure is counted: " + service.stats());
        service.setEnabled(false); // search on the CPU: the device keeps failing
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          assertInvariants(reader.leaves().get(0).reader(), sim);
          IndexSearcher searcher = new IndexSearcher(reader);
          for (int q = 0; q < 5; q++) {
            float[] query = data.point(sim);
            assertSameHits(oracleTopK(vectors, query, sim, 10, id -> true), search(searcher, query, 500, null).subList(0, 10));
          }
        }
      }
    } finally {
      GpuSearchServices.uninstall(service);
      service.close();
    }
  }

  /**
   * With a device, k-means of the lists and of the codebooks runs there (the service's assigner), the
   * lists and codes are uploaded, and searches run there: the device returns candidates, which the
   * segment re-ranks with the raw vectors (with every list probed and enough candidates, the exact top
   * k). Warm-up makes the field resident. A k beyond the device's stays on the CPU.
   */
  @Test
  void trainsAndSearchesOnTheDevice() throws IOException {
    usedDefaultService = false; // a fake device of its own
    FakeBackend device = new FakeBackend(1L << 30);
    GpuSearchService service = GpuSearchService.withBackend(device, GpuSearchService.Settings.defaults());
    GpuSearchServices.install(service);
    try {
      VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
      List<float[]> vectors = data.points(4000, sim);
      try (Directory dir = FSDirectory.open(tempDir)) {
        index(dir, config(0, 5000), vectors, pqType(sim, Map.of(IndexParams.NLIST, 50, IndexParams.NPROBE, 50)));
        assertTrue(device.nearestCalls.get() > 0, "k-means assignment ran on the device");
        assertEquals(0, service.stats().cpuAssignedVectors());
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          assertInvariants(reader.leaves().get(0).reader(), sim);
          assertEquals(1, GpuWarmup.warm(reader, service).resident(), "lists and codes resident");
          IndexSearcher searcher = new IndexSearcher(reader);
          int searches = 20;
          for (int q = 0; q < searches; q++) {
            float[] query = data.point(sim);
            // 500 candidates x 4 = 2,000 re-ranked: the device's limit is 2,048
            List<Hit> hits = search(searcher, query, 500, null).subList(0, 10);
            assertSameHits(oracleTopK(vectors, query, sim, 10, id -> true), hits);
          }
          float[][] batch = {data.point(sim), data.point(sim)};
          TopDocs[] batched = KnnBatchSearcher.search(searcher, FIELD, batch, 500, null);
          for (int q = 0; q < batch.length; q++) {
            assertSameHits(
                oracleTopK(vectors, batch[q], sim, 10, id -> true),
                GpuVectorsFormatTests.hits(searcher, batched[q]).subList(0, 10));
          }
          assertEquals(searches + 1, service.stats().gpuSearches(), "one search per query, one for the batch");
          assertEquals(searches + batch.length, service.stats().gpuQueries());
          assertEquals(1, device.uploads.get(), "uploaded once");
          assertEquals(0, service.stats().cpuFallbacks(), "no fallback");
          float[] deep = data.point(sim);
          // 1,000 x 4 candidates, capped at the device's 2,048 (the CPU re-ranks as many): still the GPU's
          assertEquals(1000, search(searcher, deep, 1000, null).size());
          assertEquals(0, service.stats().cpuFallbacks(), "a re-rank depth past the device's k is capped, not refused");
          assertEquals(2048, pq(reader.leaves().get(0).reader()).rerankDepth(1000, vectors.size()));
          search(searcher, deep, GpuSearchService.MAX_GPU_K + 1, null); // k itself past the device's: the CPU
          assertEquals(1, service.stats().cpuFallbacks(FallbackReason.K_TOO_LARGE));
          // a batch large enough to re-rank in parallel answers as the same queries one at a time
          float[][] many = new float[GpuSegmentSearcher.PARALLEL_RERANK_QUERIES + 7][];
          for (int q = 0; q < many.length; q++) {
            many[q] = data.point(sim);
          }
          TopDocs[] together = KnnBatchSearcher.search(searcher, FIELD, many, 10, null);
          for (int q = 0; q < many.length; q++) {
            assertEquals(
                GpuVectorsFormatTests.hits(searcher, KnnBatchSearcher.search(searcher, FIELD, new float[][] {many[q]}, 10, null)[0]),
                GpuVectorsFormatTests.hits(searcher, together[q]),
                "query " + q);
          }
        }
      }
    } finally {
      GpuSearchServices.uninstall(service);
      service.close();
    }
  }

  /**
   * Compressed residency: under a budget that holds one segment's codes with its raw vectors and the other's codes
   * alone, the first segment searched goes up whole (the device re-ranks its candidates) and the second as its codes
   * (its candidates re-ranked on the host), instead of one of them on the CPU; every search stays on the GPU with the
   * CPU path's hits and scores, the stats' parts show raw vectors for the first segment only, and the segments stay in
   * their forms (one upload each).
   */
  @Test
  void aSegmentWhoseRawVectorsDoNotFitGoesUpAsItsCodes() throws IOException {
    usedDefaultService = false; // a fake device of its own
    VectorSimilarityFunction sim = VectorSimilarityFunction.EUCLIDEAN;
    List<float[]> vectors = data.points(3000, sim);
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 1500), vectors, pqType(sim, Map.of(IndexParams.NLIST, 30, IndexParams.NPROBE, 30)));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        assertEquals(2, reader.leaves().size(), "two segments");
        long[] whole = new long[2];
        long[] codes = new long[2];
        for (int s = 0; s < 2; s++) {
          LeafReader leaf = reader.leaves().get(s).reader();
          IvfPqField field = pq(leaf);
          int n = leaf.getFloatVectorValues(FIELD).size();
          whole[s] = FakeBackend.parts(n, DIMS, GpuSegmentSearcher.gpuStructure(field, true)).total();
          codes[s] = FakeBackend.parts(n, DIMS, GpuSegmentSearcher.gpuStructure(field, false)).total();
          assertTrue(codes[s] < whole[s]);
        }
        long budget = whole[0] + codes[1] + (whole[1] - codes[1]) / 2; // the second whole does not fit, its codes do
        FakeBackend device = new FakeBackend(budget);
        GpuSearchService service = GpuSearchService.withBackend(
            device, GpuSearchService.Settings.builder().memoryBudget(1.0).build());
        GpuSearchServices.install(service);
        try {
          IndexSearcher searcher = new IndexSearcher(reader);
          float[][] queries = new float[6][];
          List<List<Hit>> gpu = new java.util.ArrayList<>();
          for (int q = 0; q < queries.length; q++) {
            queries[q] = data.point(sim);
            gpu.add(search(searcher, queries[q], 10, null));
          }
          TopDocs[] batched = KnnBatchSearcher.search(searcher, FIELD, queries, 10, null);
          assertEquals(0, service.stats().cpuFallbacks(), () -> "every search on the GPU: " + service.stats());
          assertEquals(2, device.uploads.get(), "each segment uploaded once");
          assertTrue(device.indexes.get(0).reranksOnDevice(), "the first segment with its raw vectors");
          assertFalse(device.indexes.get(1).reranksOnDevice(), "the second as its codes");
          assertTrue(service.stats().deviceRerankQueries() > 0 && service.stats().hostRerankQueries() > 0,
              service.stats()::toString);
          assertTrue(service.residentBytes() <= budget);
          DeviceBytes parts = service.residentBytesByPart();
          assertEquals(service.residentBytes(), parts.total());
          assertEquals(4L * reader.leaves().get(0).reader().getFloatVectorValues(FIELD).size() * DIMS,
              parts.get(MemoryPart.VECTORS), "raw vectors of the first segment only: " + parts);
          service.setEnabled(false); // the CPU path
          for (int q = 0; q < queries.length; q++) {
            List<Hit> cpu = search(searcher, queries[q], 10, null);
            assertSameHits(cpu, gpu.get(q));
            assertSameHits(cpu, GpuVectorsFormatTests.hits(searcher, batched[q]));
          }
        } finally {
          GpuSearchServices.uninstall(service);
          service.close();
        }
      }
    }
  }

  /**
   * The GPU path (a {@link FakeBackend} playing the device: the ADC candidates of the probed lists,
   * then either those candidates re-ranked here on the host, or the device's own exact re-rank of
   * them) answers as the CPU path does: the same hits and scores, one query at a time, in a batch
   * large enough to re-rank in parallel, and with a filter; the searcher asks the device for 4 x k
   * candidates (host re-rank) or k results (device re-rank), the field goes up with or without its
   * raw vectors, and the choice is counted.
   */
  @ParameterizedTest
  @EnumSource(VectorSimilarityFunction.class)
  void gpuHitsEqualTheCpuPathWithAndWithoutDeviceRerank(VectorSimilarityFunction sim) throws IOException {
    usedDefaultService = false; // fake devices of its own
    List<float[]> vectors = data.points(3000, sim);
    float[][] queries = new float[GpuSegmentSearcher.PARALLEL_RERANK_QUERIES + 5][];
    for (int q = 0; q < queries.length; q++) {
      queries[q] = data.point(sim);
    }
    try (Directory dir = FSDirectory.open(tempDir)) {
      index(dir, config(0, 5000), vectors, pqType(sim, Map.of(IndexParams.NLIST, 40, IndexParams.NPROBE, 6)));
      for (boolean onDevice : new boolean[] {false, true}) {
        FakeBackend device = new FakeBackend(1L << 30);
        GpuSearchService service = GpuSearchService.withBackend(
            device, GpuSearchService.Settings.builder().ivfPqRerankOnGpu(onDevice).build());
        GpuSearchServices.install(service);
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader);
          String mode = onDevice ? "device re-rank" : "host re-rank";
          IvfPqField field = pq(reader.leaves().get(0).reader());
          assertEquals(onDevice ? 10 : 40, GpuSegmentSearcher.deviceK(field, 10, vectors.size(), onDevice), mode + ": device k");
          for (org.apache.lucene.search.Query filter : new org.apache.lucene.search.Query[] {
              null, new TermQuery(new Term("rare", "no"))}) {
            List<List<Hit>> gpu = new java.util.ArrayList<>();
            for (int q = 0; q < 5; q++) {
              gpu.add(search(searcher, queries[q], 10, filter));
            }
            TopDocs[] batched = KnnBatchSearcher.search(searcher, FIELD, queries, 10, filter);
            service.setEnabled(false); // the CPU path
            for (int q = 0; q < queries.length; q++) {
              List<Hit> cpu = search(searcher, queries[q], 10, filter);
              assertEquals(10, cpu.size());
              if (q < gpu.size()) {
                assertSameHits(cpu, gpu.get(q));
              }
              assertSameHits(cpu, GpuVectorsFormatTests.hits(searcher, batched[q]));
            }
            service.setEnabled(true);
          }
          assertEquals(1, device.uploads.get(), mode + ": uploaded once");
          assertEquals(onDevice, device.indexes.get(0).reranksOnDevice(), mode + ": raw vectors on the device");
          // the stats' parts: codes, codebook-side terms, centroids and lists, and the raw vectors only when they went up
          DeviceBytes parts = service.residentBytesByPart();
          assertEquals(service.residentBytes(), parts.total(), mode + ": the parts add up to the resident bytes");
          for (MemoryPart part : new MemoryPart[] {MemoryPart.PQ_CODES, MemoryPart.CENTROIDS, MemoryPart.LISTS}) {
            assertTrue(parts.get(part) > 0, mode + ": " + part + " in " + parts);
          }
          assertEquals(onDevice, parts.get(MemoryPart.VECTORS) > 0, mode + ": raw vectors in " + parts);
          assertEquals(0, parts.get(MemoryPart.GRAPH), mode);
          assertEquals(2L * queries.length, service.stats().cpuFallbacks(), mode + ": only the CPU path's own searches");
          assertEquals(2L * queries.length, service.stats().cpuFallbacks(FallbackReason.GPU_OFF), mode);
          long gpuQueries = 2L * (5 + queries.length);
          assertEquals(gpuQueries, service.stats().gpuQueries(), mode);
          assertEquals(onDevice ? gpuQueries : 0, service.stats().deviceRerankQueries(), mode);
          assertEquals(onDevice ? 0 : gpuQueries, service.stats().hostRerankQueries(), mode);
        } finally {
          GpuSearchServices.uninstall(service);
          service.close();
        }
      }
    }
  }
}
