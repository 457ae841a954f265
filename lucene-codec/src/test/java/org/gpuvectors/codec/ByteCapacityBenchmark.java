package org.gpuvectors.codec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnByteVectorField;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LogDocMergePolicy;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.codec.index.FloatView;
import org.gpuvectors.codec.ivf.CoarseCoverage;
import org.gpuvectors.codec.ivf.IvfPqField;
import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuFlatIndex;

/**
 * Capacity: one Lucene index of {@code N} x {@code DIMS} {@code byte} vectors (the embedding-like data of {@link
 * EmbeddingLikeData}, scaled and rounded to bytes), one {@code ivf_pq} segment resident on the GPU as its codes only
 * (the raw vectors stay in the index's files, read through the page cache to re-rank each query's candidates
 * exactly), searched at batch {@code gv.cap.batch} and one query at a time for a sweep of {@code num_candidates},
 * against exact search on the GPU over the same vectors (FP32, {@link GpuFlatIndex}) in the same run. Not a test: a
 * program whose output goes into docs/RESULTS.md.
 *
 * <pre>
 * java -Xmx80g ... org.gpuvectors.codec.ByteCapacityBenchmark N DIMS OUT_DIR
 * </pre>
 *
 * Phases, each line with the seconds since the start:
 * <ol>
 *   <li><b>data</b>: N base vectors and {@code gv.cap.queries} queries (other draws of the same data set), unit
 *       length, scaled so that the largest coordinate of a sample is 127 and rounded: squared L2 on the bytes.
 *   <li><b>exact</b>: the ground truth (exact top 10 of every query, FP32 on the GPU over the float view of the
 *       bytes, whose squared distances are integers and exact in FP32) and the exact peer's time at the batch and one
 *       query at a time; on its own device handle, closed before the build. Then, untimed, each query's tie set: the
 *       ids at most at its true 10th distance among its 64 nearest (fact {@code tie_sets_truncated}: queries whose 64
 *       were all at most there). Without a GPU: a CPU brute force (complete tie sets).
 *   <li><b>build</b>: the documents indexed by every core into flushed segments kept flat, then {@code forceMerge(1)}
 *       whose merge trains the lists and codes and encodes all N vectors on the GPU: the index's build time is the
 *       two together, each reported.
 *   <li><b>search</b>: the one segment searched through {@link KnnBatchSearcher} for the top 10, per {@code
 *       num_candidates}: batch rows (median of {@code gv.cap.runs} after one untimed run) and {@code gv.cap.single}
 *       queries one at a time. Recall@10 counts a hit right when its exact distance is at most the true 10th
 *       distance (integer distances tie often); R@1 when the first hit's distance is the true nearest's.
 *       GPU bytes a vector: the residency service's resident bytes / N, by part. Host bytes a vector: the index's
 *       files / N (what the page cache holds for the re-rank and the merge).
 *       <br>Coarse coverage ({@code coarse_recall_at_10}, last column of each row): the share of the row's queries'
 *       true neighbours (tie sets, counted as recall counts them) whose list is among the row's {@code nprobe}
 *       nearest centroids ({@link CoarseCoverage}, on the host from the segment's centroids and lists): the recall
 *       an exact scan of the probed lists would reach. Recall below it is lost by the scan (PQ ranking, re-rank
 *       depth); coverage below 1 by the coarse step. The same share at the {@code gv.cap.coverage.nprobes} lists,
 *       without searching, goes to {@code OUT_DIR/capacity-N-DIMS-coarse.csv}.
 * </ol>
 *
 * <p>nprobe: a row's lists are the segment's (the mapping's {@code nprobe}, else nlist / 16) scaled by {@code
 * num_candidates} ({@link org.gpuvectors.codec.ivf.IvfProbes}); a search cannot be given its own nprobe (the codec
 * decides its effort from num_candidates), so other nprobe values are measured by the coarse table alone, or by
 * another build with another nprobe in the mapping. A row whose lists pass the device's selection ({@link
 * GpuSearchService#MAX_GPU_K}, 2,048) is skipped on the GPU: such a search fails there.
 *
 * <p>nlist: one build per nlist (mapping parameter, up to 65,536: the mapping's bound; the writer's default of
 * sqrt(N) is capped at 65,536 too, a given nlist only at N), e.g. {@code -Dgv.cap.params=nlist=65536,pq_m=16,nprobe=128
 * -Dgv.cap.dir=/tmp/gv-capacity-65536}. {@code gv.cap.params} replaces the default whole: without {@code nprobe}
 * the lists are nlist / 16 (4,096 at 65,536 lists, past the device's 2,048: every row skipped on the GPU). The coarse
 * quantizer trains on 64-256 points a list ({@link org.gpuvectors.codec.ivf.TrainingSampleSize}: at 100M vectors and
 * 65,536 lists, N / 15 iterations = 6.7M points, about 100 a list, within -Xmx72g's sixteenth).
 * Peers: the exact GPU search in the same run, and the seed paper's SIFT1B point on one GPU (R@10 0.376 at 17.7 us a
 * query with 8-byte codes), published. Lucene HNSW is not built at this size (its build alone would take hours here).
 *
 * <p>System properties: {@code gv.cap.queries} (10000), {@code gv.cap.batch} (10000), {@code gv.cap.single} (200),
 * {@code gv.cap.runs} (3), {@code gv.cap.candidates} (10,20,50,100,200,400), {@code gv.cap.params} (mapping, default
 * {@code pq_m=16,nprobe=32}: 16-byte codes fit one segment's code array at 100M vectors), {@code
 * gv.cap.coverage.nprobes} (8,16,32,64,128,256,512,1024,2048: the coarse table's lists), {@code gv.cap.dir} (index
 * directory, default /tmp/gv-capacity; kept), {@code gv.cap.phases} (default {@code exact,build,search}; without
 * build the index kept in {@code gv.cap.dir} is searched). Writes {@code OUT_DIR/capacity-N-DIMS.csv} and {@code
 * OUT_DIR/capacity-N-DIMS-build.csv}, again after every row, and {@code OUT_DIR/capacity-N-DIMS-coarse.csv} once
 * the index is opened for the search.
 */
public final class ByteCapacityBenchmark {

  private static final int K = 10;
  /** Nearest the exact GPU search returns for the tie set of each query's true 10th distance (not timed). */
  private static final int TIE_DEPTH = 64;
  private static final String FIELD = "vec";
  private static final int CHUNK = 1 << 20;
  private static final long START = System.nanoTime();
  private static final String ROWS_HEADER =
      "n,dims,system,batch,num_candidates,nprobe,rerank,recall_at_10,r_at_1,queries_per_s,us_per_query,coarse_recall_at_10";
  private static final String COVERAGE_HEADER = "n,dims,nlist,nprobe,queries,coarse_recall_at_10";

  private final int n;
  private final int dims;
  private final int nq;
  private final int batch;
  private final int single;
  private final int runs;
  private final int[] candidates;
  private final int[] coverageProbes;
  private final IndexParams params;
  private final Path indexDir;
  private final Path out;
  private final List<String> phases;
  private final List<String> rows = new ArrayList<>();
  private final List<String> coverageRows = new ArrayList<>();
  private final Map<String, String> facts = new LinkedHashMap<>();

  /** The base vectors in chunks of {@link #CHUNK} rows of {@code dims} bytes. */
  private byte[][] base;
  private byte[][] queries;
  /** Per query the exact squared distances of its 10 nearest, ascending. */
  private int[][] truth;
  /** Per query the ids of every vector at most at its true 10th distance (ties included; {@link #TIE_DEPTH}). */
  private int[][] neighbours;
  /** Queries whose tie set may go on past the {@link #TIE_DEPTH} nearest the exact GPU search returned. */
  private int truncatedTieSets;

  private ByteCapacityBenchmark(int n, int dims, Path out) {
    this.n = n;
    this.dims = dims;
    this.out = out;
    this.nq = Integer.getInteger("gv.cap.queries", 10_000);
    this.batch = Integer.getInteger("gv.cap.batch", 10_000);
    this.single = Integer.getInteger("gv.cap.single", 200);
    this.runs = Math.max(1, Integer.getInteger("gv.cap.runs", 3));
    this.candidates = Arrays.stream(System.getProperty("gv.cap.candidates", "10,20,50,100,200,400").split(","))
        .mapToInt(Integer::parseInt).toArray();
    this.coverageProbes = Arrays.stream(
        System.getProperty("gv.cap.coverage.nprobes", "8,16,32,64,128,256,512,1024,2048").split(","))
        .mapToInt(Integer::parseInt).toArray();
    this.params = new IndexParams(
        IndexType.IVF_PQ, IvfPqScaleBenchmark.parseParams(System.getProperty("gv.cap.params", "pq_m=16,nprobe=32")));
    params.checkDimension(dims);
    this.indexDir = Path.of(System.getProperty("gv.cap.dir", "/tmp/gv-capacity"));
    this.phases = List.of(System.getProperty("gv.cap.phases", "exact,build,search").split(","));
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      throw new IllegalArgumentException("usage: ByteCapacityBenchmark N DIMS OUT_DIR");
    }
    ByteCapacityBenchmark bench = new ByteCapacityBenchmark(
        Integer.parseInt(args[0]), Integer.parseInt(args[1]), Files.createDirectories(Path.of(args[2])));
    // codes only on the device: the raw vectors are re-ranked from the host, whatever the budget would allow
    GpuSearchService service = GpuSearchService.create(GpuSearchService.Settings.builder().ivfPqRerankOnGpu(false).build());
    GpuSearchServices.install(service);
    try {
      bench.run(service);
    } finally {
      bench.report();
      GpuSearchServices.uninstall(service);
      service.close();
    }
  }

  private void run(GpuSearchService service) throws IOException {
    progress("data: %d x %d bytes and %d queries, %d threads", n, dims, nq, Runtime.getRuntime().availableProcessors());
    generate();
    progress("GPU: %s; mapping %s; max heap %d MB", service.gpuActive() ? service.deviceName()
        : "none (" + service.unusableReason() + ")", params, Runtime.getRuntime().maxMemory() >> 20);
    if (phases.contains("exact")) {
      if (GpuAvailability.get().available()) {
        exactOnGpu();
      } else {
        exactOnCpu();
      }
    }
    if (phases.contains("build")) {
      build(service);
    }
    if (phases.contains("search")) {
      search(service);
    }
    progress("done");
  }

  // ---- data ----

  /** The base and the queries, drawn in parallel from one data set (each chunk its own generator: reproducible). */
  private void generate() {
    EmbeddingLikeData data = new EmbeddingLikeData(n, dims, 42);
    float scale = scale(data);
    facts.put("byte_scale", fmt(scale));
    int chunks = (n + CHUNK - 1) / CHUNK;
    base = new byte[chunks][];
    AtomicInteger done = new AtomicInteger();
    IntStream.range(0, chunks).parallel().forEach(c -> {
      int rowsHere = Math.min(CHUNK, n - c * CHUNK);
      byte[] chunk = new byte[rowsHere * dims];
      SplittableRandom draws = new SplittableRandom(1_000_003L * c + 11);
      for (int r = 0; r < rowsHere; r++) {
        toBytes(data.next(draws), scale, chunk, r * dims);
      }
      base[c] = chunk;
      int finished = done.incrementAndGet();
      if (finished % 10 == 0 || finished == chunks) {
        progress("data:   %d / %d chunks of %d rows", finished, chunks, CHUNK);
      }
    });
    SplittableRandom draws = new SplittableRandom(7);
    queries = new byte[nq][dims];
    for (byte[] q : queries) {
      toBytes(data.next(draws), scale, q, 0);
    }
    progress("data: done (scale %.1f)", scale);
  }

  /** 127 over the largest coordinate of a sample: the bytes use their range without clipping (almost) any vector. */
  private static float scale(EmbeddingLikeData data) {
    SplittableRandom draws = new SplittableRandom(3);
    float max = 0;
    for (int i = 0; i < 10_000; i++) {
      for (float x : data.next(draws)) {
        max = Math.max(max, Math.abs(x));
      }
    }
    return 127f / max;
  }

  private static void toBytes(float[] v, float scale, byte[] dst, int at) {
    for (int d = 0; d < v.length; d++) {
      dst[at + d] = (byte) Math.max(-128, Math.min(127, Math.round(v[d] * scale)));
    }
  }

  private byte[] row(int i, byte[] dst) {
    System.arraycopy(base[i / CHUNK], (i % CHUNK) * dims, dst, 0, dims);
    return dst;
  }

  private int squaredDistance(byte[] query, int i) {
    byte[] chunk = base[i / CHUNK];
    int at = (i % CHUNK) * dims;
    int sum = 0;
    for (int d = 0; d < dims; d++) {
      int diff = query[d] - chunk[at + d];
      sum += diff * diff;
    }
    return sum;
  }

  // ---- exact ----

  private void exactOnGpu() throws IOException {
    float[] flatQueries = new float[nq * dims];
    for (int q = 0; q < nq; q++) {
      for (int d = 0; d < dims; d++) {
        flatQueries[q * dims + d] = queries[q][d];
      }
    }
    truth = new int[nq][];
    try (GpuDevice device = GpuDevice.open(0)) {
      long t = System.nanoTime();
      try (GpuFlatIndex index = GpuFlatIndex.upload(device, n, dims, Metric.L2, (first, count, dst) -> {
        for (int i = 0; i < count; i++) {
          byte[] chunk = base[(first + i) / CHUNK];
          int at = ((first + i) % CHUNK) * dims;
          for (int d = 0; d < dims; d++) {
            dst[i * dims + d] = chunk[at + d];
          }
        }
      })) {
        progress("exact: %d x %d floats uploaded in %.1f s (%.0f MB on %s)", n, dims, seconds(t),
            index.deviceBytes() / 1e6, device.name());
        index.setPrecision(GpuFlatIndex.Precision.FP32);
        long s = System.nanoTime();
        for (int from = 0; from < nq; from += batch) {
          int count = Math.min(batch, nq - from);
          SearchResult part = index.search(Arrays.copyOfRange(flatQueries, from * dims, (from + count) * dims), count, K, null);
          for (int q = 0; q < count; q++) {
            int[] d = new int[Math.min(K, part.count(q))];
            for (int i = 0; i < d.length; i++) {
              d[i] = squaredDistance(queries[from + q], part.id(q, i)); // exact, from the bytes
            }
            Arrays.sort(d);
            truth[from + q] = d;
          }
        }
        double batchSeconds = seconds(s);
        addRow("exact-gpu-fp32", batch, 0, 0, 0, 1, 1, nq / batchSeconds, 1);
        progress("exact: FP32, %d queries in batches of %d: %.2f s (%.1f us a query)", nq, batch, batchSeconds,
            batchSeconds * 1e6 / nq);
        tieSetsOnGpu(index, flatQueries);
        int count = Math.min(20, nq);
        float[] q = new float[dims];
        index.search(Arrays.copyOf(flatQueries, dims), 1, K, null); // warm-up
        s = System.nanoTime();
        for (int r = 0; r < count; r++) {
          System.arraycopy(flatQueries, r * dims, q, 0, dims);
          index.search(q, 1, K, null);
        }
        double each = seconds(s) / count;
        addRow("exact-gpu-fp32", 1, 0, 0, 0, 1, 1, 1 / each, 1);
        progress("exact: one query at a time: %.0f us a query (%d queries)", each * 1e6, count);
      }
    }
  }

  /**
   * The ids at most at each query's true 10th distance among its {@link #TIE_DEPTH} nearest (FP32, distances again
   * from the bytes): an untimed pass after the timed one, which asks for 10.
   */
  private void tieSetsOnGpu(GpuFlatIndex index, float[] flatQueries) {
    long s = System.nanoTime();
    neighbours = new int[nq][];
    for (int from = 0; from < nq; from += batch) {
      int count = Math.min(batch, nq - from);
      SearchResult part = index.search(
          Arrays.copyOfRange(flatQueries, from * dims, (from + count) * dims), count, Math.min(TIE_DEPTH, n), null);
      for (int q = 0; q < count; q++) {
        int[] t = truth[from + q];
        int[] ids = new int[part.count(q)];
        int kept = 0;
        for (int i = 0; i < ids.length; i++) {
          int id = part.id(q, i);
          if (squaredDistance(queries[from + q], id) <= t[t.length - 1]) {
            ids[kept++] = id;
          }
        }
        truncatedTieSets += kept == TIE_DEPTH ? 1 : 0;
        neighbours[from + q] = Arrays.copyOf(ids, kept);
      }
    }
    progress("exact: tie sets from the %d nearest in %.1f s", TIE_DEPTH, seconds(s));
    reportTieSets();
  }

  private void exactOnCpu() {
    progress("exact: no GPU (%s): CPU brute force", GpuAvailability.get().reason());
    truth = new int[nq][];
    neighbours = new int[nq][];
    IntStream.range(0, nq).parallel().forEach(q -> {
      int[] all = new int[n];
      for (int i = 0; i < n; i++) {
        all[i] = squaredDistance(queries[q], i);
      }
      int[] sorted = all.clone();
      Arrays.sort(sorted);
      truth[q] = Arrays.copyOf(sorted, Math.min(K, n));
      int tenth = truth[q][truth[q].length - 1];
      neighbours[q] = IntStream.range(0, n).filter(i -> all[i] <= tenth).toArray();
    });
    reportTieSets();
  }

  private void reportTieSets() {
    double ids = Arrays.stream(neighbours).mapToInt(a -> a.length).average().orElse(0);
    facts.put("tie_set_ids_per_query", fmt(ids));
    facts.put("tie_sets_truncated", Integer.toString(truncatedTieSets));
    progress("exact: %.2f ids a query at most at its true 10th distance; %d tie sets may go on past the %d nearest",
        ids, truncatedTieSets, TIE_DEPTH);
  }

  // ---- build ----

  private void build(GpuSearchService service) throws IOException {
    FieldType type = GpuVectorsFormat.markField(
        KnnByteVectorField.createFieldType(dims, VectorSimilarityFunction.EUCLIDEAN), params, ElementType.BYTE);
    org.apache.lucene.util.IOUtils.rm(indexDir);
    try (Directory dir = FSDirectory.open(indexDir); BuildPhaseLog log = new BuildPhaseLog()) {
      long t = System.nanoTime();
      IndexWriterConfig config = new IndexWriterConfig()
          .setCodec(IvfPqScaleBenchmark.codec(n + 1)) // flushed segments stay flat: the merge builds from all vectors
          .setUseCompoundFile(false)
          .setMergePolicy(NoMergePolicy.INSTANCE)
          .setRAMBufferSizeMB(16 * 1024);
      try (IndexWriter writer = new IndexWriter(dir, config)) {
        AtomicInteger indexed = new AtomicInteger();
        int step = Math.max(CHUNK, n / 10);
        IntStream.range(0, (n + 4095) / 4096).parallel().forEach(block -> {
          byte[] v = new byte[dims];
          try {
            for (int i = block * 4096; i < Math.min(n, (block + 1) * 4096); i++) {
              Document doc = new Document();
              doc.add(new KnnByteVectorField(FIELD, row(i, v), type)); // the writer copies the value
              doc.add(new NumericDocValuesField("id", i));
              writer.addDocument(doc);
            }
          } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
          int before = indexed.getAndAdd(Math.min(4096, n - block * 4096));
          if ((before + 4096) / step > before / step) {
            progress("build:   indexed %d / %d", before + 4096, n);
          }
        });
        writer.commit();
      }
      double indexSeconds = seconds(t);
      int segments;
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        segments = reader.leaves().size();
      }
      progress("build: (a) indexing + flushes + commit: %.1f s, %d segments", indexSeconds, segments);
      t = System.nanoTime();
      LogDocMergePolicy merges = new LogDocMergePolicy();
      merges.setMergeFactor(Math.max(10, segments + 1));
      merges.setNoCFSRatio(0);
      IndexWriterConfig mergeConfig = new IndexWriterConfig()
          .setCodec(IvfPqScaleBenchmark.codec(GpuVectorsFormat.DEFAULT_IVF_MIN_VECTORS))
          .setUseCompoundFile(false)
          .setMergePolicy(merges);
      try (IndexWriter writer = new IndexWriter(dir, mergeConfig)) {
        writer.forceMerge(1);
        writer.commit();
      }
      double mergeSeconds = seconds(t);
      progress("build: (b) force-merge into one ivf_pq segment (train, assign, encode, write): %.1f s", mergeSeconds);
      log.lines().forEach(line -> System.out.println("    " + line));
      facts.put("index_flush_s", fmt(indexSeconds));
      facts.put("force_merge_s", fmt(mergeSeconds));
      facts.put("build_total_s", fmt(indexSeconds + mergeSeconds));
      facts.put("segments_merged", Integer.toString(segments));
      facts.put("build_assigned_on_gpu", Long.toString(service.stats().gpuAssignedVectors()));
      facts.put("build_assigned_on_cpu", Long.toString(service.stats().cpuAssignedVectors()));
    }
  }

  // ---- search ----

  private void search(GpuSearchService service) throws IOException {
    long files = 0;
    try (Stream<Path> list = Files.list(indexDir)) {
      for (Path f : list.sorted().toList()) {
        long size = Files.size(f);
        files += size;
        facts.put("file_" + f.getFileName(), Long.toString(size));
      }
    }
    facts.put("host_index_bytes_per_vector", fmt(files / (double) n));
    progress("search: the index's files %.2f GB, %.1f bytes a vector", files / 1e9, files / (double) n);
    try (Directory dir = FSDirectory.open(indexDir); DirectoryReader reader = DirectoryReader.open(dir)) {
      if (reader.leaves().size() != 1) {
        throw new IllegalStateException("expected one segment, got " + reader.leaves().size());
      }
      LeafReader leaf = reader.leaves().get(0).reader();
      int[] docToId = IvfPqScaleBenchmark.docToId(leaf);
      IvfPqField field = KnnBatchSearcher.gpuVectorsReader(leaf, FIELD).ivfPqField(FIELD);
      if (field == null) {
        throw new IllegalStateException("the merged segment has no ivf_pq structure");
      }
      facts.put("nlist", Integer.toString(field.nlist()));
      facts.put("pq_m", Integer.toString(field.pq().m()));
      facts.put("default_nprobe", Integer.toString(field.lists().defaultProbes()));
      progress("search: nlist %d, pq_m %d, nprobe %d, re-rank factor %d", field.nlist(), field.pq().m(),
          field.lists().defaultProbes(), field.rerankFactor());
      CoarseCoverage coverage = coarseCoverage(leaf, field, docToId);
      IndexSearcher searcher = new IndexSearcher(reader);
      long t = System.nanoTime();
      long fallbacks = service.stats().cpuFallbacks();
      KnnBatchSearcher.search(searcher, FIELD, new byte[][] {queries[0]}, K, K, null);
      progress("search: first search (upload): %.1f s", seconds(t));
      long resident = service.residentBytes();
      facts.put("gpu_resident_bytes", Long.toString(resident));
      facts.put("gpu_bytes_per_vector", fmt(resident / (double) n));
      progress("search: GPU %.1f MB resident, %.2f bytes a vector; by part %s", resident / 1e6, resident / (double) n,
          service.residentBytesByPart());
      String system = service.gpuActive() ? "ivf_pq-codes-gpu" : "ivf_pq-cpu";
      for (int c : candidates) {
        int probes = field.probes(c, n);
        int depth = field.rerankDepth(c, n);
        if (service.gpuActive() && probes > GpuSearchService.MAX_GPU_K) {
          // the device's coarse selection takes at most this many lists; such a search fails instead of falling back
          progress("search: num_candidates %d skipped: %d lists, more than the device selects (%d)", c, probes,
              GpuSearchService.MAX_GPU_K);
          continue;
        }
        double[] walls = new double[runs];
        TopDocs[] all = new TopDocs[nq];
        for (int run = -1; run < runs; run++) {
          long s = System.nanoTime();
          for (int from = 0; from < nq; from += batch) {
            TopDocs[] part = KnnBatchSearcher.search(
                searcher, FIELD, Arrays.copyOfRange(queries, from, Math.min(nq, from + batch)), K, c, null);
            System.arraycopy(part, 0, all, from, part.length);
          }
          if (run >= 0) {
            walls[run] = seconds(s);
          }
        }
        double wall = median(walls);
        double[] r = recall(all, docToId, nq);
        addRow(system, batch, c, probes, depth, r[0], r[1], nq / wall, coverage.at(probes));
        int count = Math.min(single, nq);
        TopDocs[] one = new TopDocs[count];
        double[] singleWalls = new double[runs];
        for (int run = -1; run < runs; run++) {
          long s = System.nanoTime();
          for (int q = 0; q < count; q++) {
            one[q] = KnnBatchSearcher.search(searcher, FIELD, new byte[][] {queries[q]}, K, c, null)[0];
          }
          if (run >= 0) {
            singleWalls[run] = seconds(s);
          }
        }
        double[] r1 = recall(one, docToId, count);
        addRow(system, 1, c, probes, depth, r1[0], r1[1], count / median(singleWalls), coverage.at(probes, count));
      }
      facts.put("cpu_fallbacks", Long.toString(service.stats().cpuFallbacks() - fallbacks));
      facts.put("host_reranked_queries", Long.toString(service.stats().hostRerankQueries()));
      progress("search: CPU fallbacks %d; stats %s", service.stats().cpuFallbacks() - fallbacks, service.stats());
    }
  }

  /**
   * The coarse coverage of the queries' true neighbours in this segment's lists ({@link CoarseCoverage}), and its
   * table at {@code gv.cap.coverage.nprobes} lists (at most nlist): what the coarse step alone allows at nprobe values
   * the search does not take.
   */
  private CoarseCoverage coarseCoverage(LeafReader leaf, IvfPqField field, int[] docToId) throws IOException {
    long t = System.nanoTime();
    if (leaf.getByteVectorValues(FIELD).size() != leaf.maxDoc()) {
      throw new IllegalStateException("every document has a vector: ordinal = document"); // dense field
    }
    int[] idToOrd = new int[n];
    for (int doc = 0; doc < docToId.length; doc++) {
      idToOrd[docToId[doc]] = doc;
    }
    float[][] viewQueries = new float[nq][];
    int[][] neighbourOrds = new int[nq][];
    int[] wanted = new int[nq];
    for (int q = 0; q < nq; q++) {
      viewQueries[q] = FloatView.toFloats(ElementType.BYTE, queries[q]);
      neighbourOrds[q] = Arrays.stream(neighbours[q]).map(id -> idToOrd[id]).toArray();
      wanted[q] = truth[q].length;
    }
    CoarseCoverage coverage = CoarseCoverage.of(field.lists(), viewQueries, neighbourOrds, wanted);
    coverageRows.clear();
    StringBuilder line = new StringBuilder();
    for (int probes : Arrays.stream(coverageProbes).map(p -> Math.min(p, field.nlist())).distinct().toArray()) {
      double share = coverage.at(probes);
      coverageRows.add(String.format(Locale.ROOT, "%d,%d,%d,%d,%d,%.4f", n, dims, field.nlist(), probes, nq, share));
      line.append(String.format(Locale.ROOT, " %d:%.4f", probes, share));
    }
    progress("search: coarse coverage of %d queries' true neighbours (%.1f s), nprobe:share%s", nq, seconds(t), line);
    return coverage;
  }

  /**
   * {recall@10, R@1}: a hit is right when its exact squared distance is at most the true 10th (ties at the 10th
   * distance are frequent with integer distances; any of them is a right answer); R@1 when the first hit is at the
   * true nearest distance.
   */
  private double[] recall(TopDocs[] results, int[] docToId, int count) {
    long right = 0;
    long expected = 0;
    long first = 0;
    for (int q = 0; q < count; q++) {
      int[] t = truth[q];
      ScoreDoc[] hits = results[q].scoreDocs;
      for (int i = 0; i < Math.min(K, hits.length); i++) {
        int d = squaredDistance(queries[q], docToId[hits[i].doc]);
        right += d <= t[t.length - 1] ? 1 : 0;
        first += i == 0 && d == t[0] ? 1 : 0;
      }
      expected += t.length;
    }
    return new double[] {right / (double) expected, first / (double) count};
  }

  // ---- rows and report ----

  private void addRow(String system, int batchSize, int numCandidates, int nprobe, int rerank, double recall10,
                      double r1, double qps, double coarseRecall10) {
    String row = String.format(Locale.ROOT, "%d,%d,%s,%d,%d,%d,%d,%.4f,%.4f,%.1f,%.3f,%.4f", n, dims, system,
        batchSize, numCandidates, nprobe, rerank, recall10, r1, qps, 1e6 / qps, coarseRecall10);
    rows.add(row);
    progress("row: %s", row);
    try {
      writeFiles(); // each row as it comes: a run stopped at a call's limit keeps the rows it measured
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private void report() throws IOException {
    writeFiles();
    System.out.println(ROWS_HEADER);
    rows.forEach(System.out::println);
    System.out.println(COVERAGE_HEADER);
    coverageRows.forEach(System.out::println);
    facts.forEach((k, v) -> System.out.println("  " + k + " = " + v));
  }

  private void writeFiles() throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("capacity-" + n + "-" + dims + ".csv")))) {
      w.println(ROWS_HEADER);
      rows.forEach(w::println);
    }
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("capacity-" + n + "-" + dims + "-coarse.csv")))) {
      w.println(COVERAGE_HEADER);
      coverageRows.forEach(w::println);
    }
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("capacity-" + n + "-" + dims + "-build.csv")))) {
      w.println("key,value");
      facts.forEach((k, v) -> w.println(k + "," + v));
    }
  }

  private static double median(double[] values) {
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[(sorted.length - 1) / 2];
  }

  private static void progress(String format, Object... args) {
    System.out.printf(Locale.ROOT, "[%7.1f s] %s%n", seconds(START), String.format(Locale.ROOT, format, args));
  }

  private static String fmt(double v) {
    return String.format(Locale.ROOT, "%.3f", v);
  }

  private static double seconds(long startNanos) {
    return (System.nanoTime() - startNanos) / 1e9;
  }
}
