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
import java.util.Set;
import java.util.StringJoiner;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.codecs.FilterCodec;
import org.apache.lucene.codecs.KnnVectorsFormat;
import org.apache.lucene.codecs.lucene104.Lucene104Codec;
import org.apache.lucene.codecs.perfield.PerFieldKnnVectorsFormat;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LogDocMergePolicy;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.IOUtils;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.gpu.GpuSearchStats;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.ivf.IvfField;
import org.gpuvectors.codec.ivf.IvfPqField;
import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.ivf.IvfLists;
import org.gpuvectors.cuda.pass.PassGraphStats;

/**
 * {@code ivf_pq} at scale (issue 8's 10M x 128 and 768-d targets, and the Faiss paper's SIFT1M point on 1M x 128):
 * one {@code ivf_pq} segment built on the GPU, searched through {@link KnnBatchSearcher} at batch 10k and batch 1
 * for a sweep of {@code num_candidates}, against our exact GPU search ({@link GpuFlatIndex} on the same vectors,
 * timed the same way: wall clock of the call, transfers included) in the same run. Not a test: a program whose
 * output goes into docs/notes/BENCHMARKS.md.
 *
 * <pre>
 * java ... org.gpuvectors.codec.IvfPqScaleBenchmark N DIMS OUT_DIR
 * </pre>
 *
 * Phases, each printed with the seconds since the start:
 * <ol>
 *   <li><b>data</b>: {@link FlatSearchBenchmark#clustered} base (seed 42) and queries (seed 7), squared L2.
 *   <li><b>exact</b>: the ground truth, exact top 10 of every query ({@link GpuFlatIndex}, FP32, on its own device
 *       handle, closed before the build so that its memory is free); the peer's timings: FP32 and {@link
 *       GpuFlatIndex.Precision#TF32_RERANK} (TF32 candidates + exact FP32 re-rank: what the codec's {@code flat}
 *       fields run at large batches while its certificate holds; the faster of the two is the peer) at batch 10k (median of gv.scale.runs after gv.scale.warmups untimed runs), and one query at a time. Without a GPU the ground truth
 *       is a CPU brute force and the timings are skipped (said so).
 *   <li><b>build</b>: the vectors indexed by several threads into segments kept as they are (no merges; the
 *       flushed segments stay flat: the codec's threshold is set above their size, see below), then one {@code
 *       forceMerge(1)} whose merge trains and encodes all N vectors: the build. Reported apart: (a) indexing +
 *       flushes + commit, (b) the force-merge (the flat vectors' merge, the writer's copy of them, coarse k-means,
 *       assignment, PQ training, encoding, writing: the writer's phase line is printed), and the size of each
 *       file of the merged segment.
 *   <li><b>search</b>: the segment searched for the top 10 with {@code num_candidates} (the segment's k, as
 *       Elasticsearch's {@code knn} passes it to Lucene; {@link KnnBatchSearcher#search(IndexSearcher, String,
 *       float[][], int, int, org.apache.lucene.search.Query)} keeps each query's best 10, as the exact peer returns
 *       10) from the sweep; the codec has no query-time {@code nprobe}: {@code num_candidates} is the effort
 *       knob. Up to 100 it probes the mapping's {@code nprobe} (default about nlist / 16) and re-ranks 4 x
 *       num_candidates candidates exactly; above 100 the lists probed grow in proportion (IvfProbes). The row
 *       gives the lists probed and the re-rank depth. Batch 10k over all queries (median of gv.scale.runs after gv.scale.warmups
 *       untimed runs) and batch 1 (the first {@code gv.scale.single} queries one at a time, gv.scale.runs times: q/s =
 *       queries / the median run's wall; the exact peer's batch 1 likewise). Recall@10 (the 10 hits against the exact top 10) and R@1 (the Faiss paper's 1-recall@1:
 *       the fraction of queries whose true nearest neighbour is ranked first). Then the SIFT1M-style point (the
 *       fastest batch-10k row with R@1 >= 0.80, in us per query) and the fastest rows with recall@10 >= 0.95 against
 *       the exact peer. GPU bytes per vector: the residency service's resident bytes / N, split by the index's
 *       shape into codes + ids (pq_m + 4 bytes + 4 bytes of the precomputed-table term), the raw vectors kept for
 *       the device re-rank (4 x dims) and the rest (centroids, codebooks, offsets). Without a GPU: the CPU path
 *       on {@code gv.scale.cpuQueries} queries.
 *   <li><b>cpubuild</b>: the same build with the GPU switched off (k-means, assignment and encoding on the CPU) for
 *       the first {@code gv.scale.cpuBuildN} vectors (default min(N, 1M x 128 / DIMS)); no extrapolation.
 * </ol>
 * Why the flushed segments stay flat: a merge never reuses the merged segments' lists or codes (it trains on the
 * merged vectors), so their flush-time builds would be thrown away; the flushes are written with the codec's
 * small-segment threshold ({@link GpuVectorsFormat#GpuVectorsFormat(int)}) above their size, the same field and
 * mapping ({@code ivf_pq}, same parameters), and the merge with the default threshold. {@code
 * -Dgv.scale.flushBuilds=true} builds at flush too (what an Elasticsearch node does), to measure that cost.
 *
 * <p>System properties: {@code gv.scale.phases} (default {@code exact,build,search,cpubuild}; search needs exact
 * and build), {@code gv.scale.queries} (10000), {@code gv.scale.batch} (10000), {@code gv.scale.single} (1000), {@code gv.scale.profile} (false: true puts the batch-1 searches in the GPU profiler's range), {@code gv.scale.profileBatch} (false: true adds one batch search per candidates value in that range), {@code gv.scale.runs} (5 timed runs per batch row, the median reported), {@code gv.scale.warmups} (3 untimed runs before them),
 * {@code gv.scale.cpuQueries} (200), {@code gv.scale.candidates} (10,20,40,100,200,400,512: at most 512, the GPU's
 * re-rank depth 4 x 512 = its k-selection's 2048), {@code gv.scale.params} (mapping overrides, e.g. {@code
 * nlist=4096,nprobe=16,pq_m=32}), {@code gv.scale.threads} (indexing threads, default the cores), {@code
 * gv.scale.dir} (parent of the index directories, default /tmp), {@code gv.scale.cpuBuildN}, {@code
 * gv.scale.flushBuilds}, {@code gv.scale.dumpData} (true: the base and queries as raw float32 files under /tmp for
 * {@code lucene-codec/bench/torch_scale.py}, the PyTorch peer), {@code gv.scale.index} (a directory: with build, the index is built there and kept; with
 * search but not build, the index kept there is searched, e.g. by another build's kernels, an A/B on one index).
 * Writes {@code OUT_DIR/ivfpq-scale-N-DIMS.csv} (one row per search row, the exact peer
 * included) and {@code OUT_DIR/ivfpq-scale-N-DIMS-build.csv} (build times, file sizes, bytes per vector).
 */
public final class IvfPqScaleBenchmark {

  private static final int K = 10;
  /** -Dgv.scale.profile=true: the batch-1 searches inside the GPU profiler's range (run under ncu / nsys). */
  private static final boolean PROFILE = Boolean.getBoolean("gv.scale.profile");
  /** -Dgv.scale.profileBatch=true: one more batch search per candidates value inside the GPU profiler's range. */
  private static final boolean PROFILE_BATCH = Boolean.getBoolean("gv.scale.profileBatch");
  /**
   * -Dgv.scale.runs: timed runs of each batch row after a warm-up, ours and the exact peer's alike (default 5); a row
   * gives the median (before session 14: the best of 3 for ivf_pq rows, the median of 3 for the exact peer).
   */
  private static final int RUNS = Math.max(1, Integer.getInteger("gv.scale.runs", 5));
  /**
   * -Dgv.scale.warmups: untimed runs before each batch row's timed runs, both systems alike (default 3). With one, the
   * first rows of a sweep still paid the JIT's compilation of the hits' conversion and merge (session 15: 15-27 ms
   * outside the pass in the first two rows, 1-4 ms in the later ones).
   */
  private static final int WARMUPS = Math.max(1, Integer.getInteger("gv.scale.warmups", 3));
  private static final String FIELD = "vec";
  private static final long START = System.nanoTime();

  private final int n;
  private final int dims;
  private final String name;
  private final Set<String> phases;
  private final int batch;
  private final int single;
  private final int cpuQueries;
  private final int[] candidates;
  private final IndexParams params;
  private final int threads;
  private final Path tmpRoot;
  private final int cpuBuildN;
  private final boolean flushBuilds;
  private final List<String> rows = new ArrayList<>();
  private final Map<String, String> buildFacts = new LinkedHashMap<>();

  private float[][] base;
  private float[][] queries;
  private int[][] truth;
  /** The exact peer's q/s at batch {@link #batch} (the faster precision) and at batch 1; NaN: not measured. */
  private double exactBatchQps = Double.NaN;
  private double exactSingleQps = Double.NaN;

  private IvfPqScaleBenchmark(int n, int dims) {
    this.n = n;
    this.dims = dims;
    this.name = n + "x" + dims;
    this.phases = Set.of(System.getProperty("gv.scale.phases", "exact,build,search,cpubuild").split(","));
    for (String phase : phases) {
      if (Set.of("exact", "build", "search", "cpubuild").contains(phase) == false) {
        throw new IllegalArgumentException("gv.scale.phases: unknown phase [" + phase + "]; phases are exact, build, search, cpubuild");
      }
    }
    if (phases.contains("search") && (phases.contains("exact") == false
        || (phases.contains("build") == false && System.getProperty("gv.scale.index") == null))) {
      throw new IllegalArgumentException("gv.scale.phases: search needs the exact phase (ground truth) and the build phase");
    }
    this.batch = Integer.getInteger("gv.scale.batch", 10_000);
    this.single = Integer.getInteger("gv.scale.single", 1000);
    this.cpuQueries = Integer.getInteger("gv.scale.cpuQueries", 200);
    this.candidates =
        Arrays.stream(System.getProperty("gv.scale.candidates", "10,20,40,100,200,400,512").split(","))
            .mapToInt(Integer::parseInt)
            .toArray();
    for (int c : candidates) {
      if (c < K || c > 512) {
        throw new IllegalArgumentException("gv.scale.candidates: num_candidates must be in [" + K + ", 512] but was [" + c + "]");
      }
    }
    this.params = new IndexParams(IndexType.IVF_PQ, parseParams(System.getProperty("gv.scale.params", "")));
    params.checkDimension(dims);
    this.threads = Integer.getInteger("gv.scale.threads", Runtime.getRuntime().availableProcessors());
    this.tmpRoot = Path.of(System.getProperty("gv.scale.dir", "/tmp"));
    this.cpuBuildN = Integer.getInteger("gv.scale.cpuBuildN", (int) Math.min(n, 1_000_000L * 128 / dims));
    this.flushBuilds = Boolean.getBoolean("gv.scale.flushBuilds");
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      throw new IllegalArgumentException("usage: IvfPqScaleBenchmark N DIMS OUT_DIR");
    }
    IvfPqScaleBenchmark bench = new IvfPqScaleBenchmark(Integer.parseInt(args[0]), Integer.parseInt(args[1]));
    Path out = Path.of(args[2]);
    Files.createDirectories(out);
    try {
      bench.run();
    } finally {
      GpuSearchServices.closeDefault();
      bench.report(out);
    }
  }

  /** {@code nlist=4096,pq_m=32} as a parameter map (checked by {@link IndexParams}). */
  static Map<String, Integer> parseParams(String spec) {
    Map<String, Integer> values = new TreeMap<>();
    for (String pair : spec.split(",")) {
      if (pair.isBlank()) {
        continue;
      }
      String[] kv = pair.split("=");
      if (kv.length != 2) {
        throw new IllegalArgumentException("gv.scale.params: expected name=value but got [" + pair + "]");
      }
      values.put(kv[0].trim(), Integer.parseInt(kv[1].trim()));
    }
    return values;
  }

  private void run() throws Exception {
    int nq = Integer.getInteger("gv.scale.queries", 10_000);
    progress("data: generating %d x %d base and %d queries (%d threads)", n, dims, nq, Runtime.getRuntime().availableProcessors());
    base = FlatSearchBenchmark.clustered(n, dims, 42);
    queries = FlatSearchBenchmark.clustered(nq, dims, 7);
    if (Boolean.getBoolean("gv.scale.dumpData")) { // for the PyTorch peer (lucene-codec/bench/torch_scale.py)
      String name = n + "-" + dims;
      FlatSearchBenchmark.writeRaw(Path.of("/tmp/gv-bench-" + name + ".base.f32"), base);
      FlatSearchBenchmark.writeRaw(Path.of("/tmp/gv-bench-" + name + ".queries.f32"), queries);
      progress("data: written to /tmp/gv-bench-%s.{base,queries}.f32 for the PyTorch peer", name);
    }
    progress("data: done; mapping %s, indexing threads %d, max heap %d MB", params, threads, Runtime.getRuntime().maxMemory() >> 20);

    if (phases.contains("exact")) {
      GpuAvailability gpu = GpuAvailability.get();
      if (gpu.available()) {
        exactOnGpu();
      } else {
        progress("exact: GPU timings skipped (%s); ground truth by CPU brute force", gpu.reason());
        truth = FashionMnistBenchmark.groundTruth(base, queries); // exact on the CPU, all cores
        progress("exact: CPU ground truth of %d queries done", queries.length);
      }
    }
    GpuSearchService service = GpuSearchServices.current();
    progress("GPU: %s", service.gpuActive() ? service.deviceName() : "none (" + service.unusableReason() + ")");
    String kept = System.getProperty("gv.scale.index");
    if (kept != null && phases.contains("build") == false && phases.contains("search")) {
      search(Path.of(kept), service);  // an index an earlier run kept: another build's kernels on the same index
    } else if (phases.contains("build")) {
      Path path = kept != null
          ? Files.createDirectories(Path.of(kept))
          : Files.createTempDirectory(tmpRoot, "gv-ivfpq-scale");
      try {
        build(path, n, service.gpuActive() ? "build-gpu" : "build-no-gpu", service);
        if (phases.contains("search")) {
          search(path, service);
        }
      } finally {
        if (kept == null) {
          IOUtils.rm(path);
        }
      }
    }
    if (phases.contains("cpubuild")) {
      Path path = Files.createTempDirectory(tmpRoot, "gv-ivfpq-scale-cpu");
      service.setEnabled(false);
      try {
        build(path, cpuBuildN, "build-cpu", service);
      } finally {
        service.setEnabled(true);
        IOUtils.rm(path);
      }
    }
    progress("done");
  }

  // ---- exact: ground truth and the exact peer ----

  /**
   * The ground truth (FP32, batch {@link #batch}) and the exact peer's timings, on a device handle of our own,
   * closed (its memory freed) before the build.
   */
  private void exactOnGpu() throws IOException {
    float[] flatQueries = flatten(queries);
    int nq = queries.length;
    try (GpuDevice device = GpuDevice.open(0)) {
      long t = System.nanoTime();
      try (GpuFlatIndex index = GpuFlatIndex.upload(device, n, dims, org.gpuvectors.cuda.Metric.L2,
          (first, count, dst) -> {
            for (int i = 0; i < count; i++) {
              System.arraycopy(base[first + i], 0, dst, i * dims, dims);
            }
          })) {
        progress("exact: uploaded %d x %d to %s in %.1f s (%.0f MB on the device)", n, dims, device.name(),
            seconds(t), index.deviceBytes() / 1e6);
        settleHeap();
        index.setPrecision(GpuFlatIndex.Precision.FP32);
        SearchResult[] fp32 = new SearchResult[1];
        double fp32Ms = timeBatches(() -> fp32[0] = exactBatches(index, flatQueries, nq));
        truth = new int[nq][];
        for (int q = 0; q < nq; q++) {
          truth[q] = new int[Math.min(K, fp32[0].count(q))];
          for (int i = 0; i < truth[q].length; i++) {
            truth[q][i] = fp32[0].id(q, i);
          }
        }
        addRow("exact-gpu-fp32", batch, 0, 0, 0, 1, 1, nq / (fp32Ms / 1e3), Double.NaN);
        progress("exact: FP32 batch %d: %.1f ms for %d queries (ground truth taken from it)", batch, fp32Ms, nq);

        // TF32 forced (AUTO leaves it on an index whose certificate rejects most queries, GpuFlatIndex.autoTakesTf32)
        index.setPrecision(GpuFlatIndex.Precision.TF32_RERANK);
        SearchResult[] auto = new SearchResult[1];
        double autoMs = timeBatches(() -> auto[0] = exactBatches(index, flatQueries, nq));
        double[] autoRecall = recall(auto[0], nq);
        addRow("exact-gpu-tf32-rerank", batch, 0, 0, 0, autoRecall[0], autoRecall[1], nq / (autoMs / 1e3), Double.NaN);
        progress("exact: TF32 candidates + FP32 re-rank batch %d: %.1f ms (recall@10 vs FP32 %.5f; fallbacks %s)",
            batch, autoMs, autoRecall[0], index.rerankStats());
        exactBatchQps = nq / (Math.min(fp32Ms, autoMs) / 1e3);

        index.setPrecision(GpuFlatIndex.Precision.FP32); // AUTO is FP32 at batch 1 anyway
        int count = Math.min(single, nq);
        float[] q = new float[dims];
        for (int r = 0; r < 5; r++) { // warm-up
          System.arraycopy(flatQueries, r % nq * dims, q, 0, dims);
          index.search(q, 1, K, null);
        }
        double[] walls = new double[RUNS];
        for (int run = 0; run < RUNS; run++) {
          long s = System.nanoTime();
          for (int r = 0; r < count; r++) {
            System.arraycopy(flatQueries, r * dims, q, 0, dims);
            index.search(q, 1, K, null);
          }
          walls[run] = seconds(s);
        }
        double total = walls[medianRun(walls)];
        exactSingleQps = count / total;
        addRow("exact-gpu-fp32", 1, 0, 0, 0, 1, 1, exactSingleQps, Double.NaN);
        progress("exact: batch 1: %d queries, median of %d runs %.2f s (%.1f us a query; runs %s us)", count, RUNS,
            total, total * 1e6 / count, perQuery(walls, count));
      }
    }
    progress("exact: device handle closed");
  }

  /** All queries through the exact index, {@link #batch} at a time, as one result of K per query. */
  private SearchResult exactBatches(GpuFlatIndex index, float[] flatQueries, int nq) {
    int[] ids = new int[nq * K];
    float[] distances = new float[nq * K];
    Arrays.fill(ids, -1);
    for (int from = 0; from < nq; from += batch) {
      int count = Math.min(batch, nq - from);
      SearchResult part = index.search(Arrays.copyOfRange(flatQueries, from * dims, (from + count) * dims), count, K, null);
      for (int q = 0; q < count; q++) {
        for (int i = 0; i < part.count(q); i++) {
          ids[(from + q) * K + i] = part.id(q, i);
          distances[(from + q) * K + i] = part.distance(q, i);
        }
      }
    }
    return new SearchResult(nq, K, ids, distances);
  }

  // ---- build ----

  /**
   * Indexes the first {@code count} vectors into segments kept as flushed, then force-merges them into one
   * {@code ivf_pq} segment; records (a) indexing + flushes and (b) the force-merge, the writer's build lines and
   * the merged segment's files.
   */
  private void build(Path path, int count, String label, GpuSearchService service) throws IOException {
    FieldType type =
        GpuVectorsFormat.markField(KnnFloatVectorField.createFieldType(dims, VectorSimilarityFunction.EUCLIDEAN), params);
    int minVectors = Integer.getInteger("gv.scale.ivfMinVectors", GpuVectorsFormat.DEFAULT_IVF_MIN_VECTORS);
    long assignedGpu = service.stats().gpuAssignedVectors();
    long assignedCpu = service.stats().cpuAssignedVectors();
    int segmentDocs = Math.max(1000, (count + 15) / 16); // several segments even from one thread
    progress("build[%s]: indexing %d vectors, %d threads, segments of up to %d docs%s", label, count, threads, segmentDocs,
        flushBuilds ? ", ivf_pq built at every flush" : ", flushed segments flat (threshold above their size)");
    double indexSeconds;
    double mergeSeconds;
    int segments;
    List<String> log;
    try (Directory dir = FSDirectory.open(path); BuildPhaseLog buildLog = new BuildPhaseLog()) {
      long t = System.nanoTime();
      IndexWriterConfig config = new IndexWriterConfig()
          .setCodec(codec(flushBuilds ? minVectors : count + 1))
          .setUseCompoundFile(false)
          .setMergePolicy(NoMergePolicy.INSTANCE)
          .setMaxBufferedDocs(segmentDocs)
          .setRAMBufferSizeMB(Math.max(256, Math.min(8192, (Runtime.getRuntime().maxMemory() >> 20) / 4)));
      try (IndexWriter writer = new IndexWriter(dir, config)) {
        addDocuments(writer, count, type, t, label);
        writer.commit();
      }
      indexSeconds = seconds(t);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        segments = reader.leaves().size();
      }
      progress("build[%s]: (a) indexing + flushes + commit: %.1f s, %d segments", label, indexSeconds, segments);

      t = System.nanoTime();
      LogDocMergePolicy mergePolicy = new LogDocMergePolicy();
      mergePolicy.setMergeFactor(Math.max(10, segments + 1)); // one merge of all segments, no intermediate ones
      mergePolicy.setNoCFSRatio(0);
      try (IndexWriter writer = new IndexWriter(dir, new IndexWriterConfig().setCodec(codec(minVectors))
          .setUseCompoundFile(false).setMergePolicy(mergePolicy))) {
        writer.forceMerge(1);
        writer.commit();
      }
      mergeSeconds = seconds(t);
      log = buildLog.lines();
    }
    progress("build[%s]: (b) force-merge of %d segments into one (the build: train + encode + write): %.1f s",
        label, segments, mergeSeconds);
    log.forEach(line -> System.out.println("    " + line));
    long gpuAssigned = service.stats().gpuAssignedVectors() - assignedGpu;
    long cpuAssigned = service.stats().cpuAssignedVectors() - assignedCpu;
    progress("build[%s]: nearest-centroid assignments: %d on the GPU, %d on the CPU; GPU passes so far captured as CUDA"
        + " graphs / launched from one: %s", label, gpuAssigned, cpuAssigned, service.passGraphStats());
    buildFacts.put(label + "_build_n", Integer.toString(count));
    buildFacts.put(label + "_index_flush_s", fmt(indexSeconds));
    buildFacts.put(label + "_force_merge_s", fmt(mergeSeconds));
    buildFacts.put(label + "_segments_merged", Integer.toString(segments));
    buildFacts.put(label + "_assigned_gpu", Long.toString(gpuAssigned));
    buildFacts.put(label + "_assigned_cpu", Long.toString(cpuAssigned));
    for (String line : log) {
      if (line.contains("(merge,")) {
        buildFacts.put(label + "_merge_phases", '"' + line.replaceAll(".*\\): ", "") + '"');
      }
    }
    long total = 0;
    try (Stream<Path> files = Files.list(path)) {
      for (Path f : files.sorted().toList()) {
        long size = Files.size(f);
        total += size;
        if (size > 0) {
          System.out.printf(Locale.ROOT, "    %-28s %,16d bytes  (%.1f bytes a vector)%n", f.getFileName(), size, size / (double) count);
          buildFacts.put(label + "_file_" + f.getFileName(), Long.toString(size));
        }
      }
    }
    progress("build[%s]: index on disk %.1f MB (%.1f bytes a vector)", label, total / 1e6, total / (double) count);
  }

  /** Adds documents {@code [0, count)} (the vector and its position as an "id" doc value) from {@link #threads} threads. */
  private void addDocuments(IndexWriter writer, int count, FieldType type, long start, String label) throws IOException {
    int chunk = 4096;
    AtomicInteger next = new AtomicInteger();
    AtomicInteger done = new AtomicInteger();
    int step = Math.max(chunk, count / 10);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        futures.add(pool.submit(() -> {
          for (int from = next.getAndAdd(chunk); from < count; from = next.getAndAdd(chunk)) {
            int to = Math.min(count, from + chunk);
            for (int i = from; i < to; i++) {
              Document doc = new Document();
              doc.add(new KnnFloatVectorField(FIELD, base[i], type));
              doc.add(new NumericDocValuesField("id", i));
              writer.addDocument(doc);
            }
            int before = done.getAndAdd(to - from);
            if ((before + to - from) / step > before / step) {
              progress("build[%s]:   indexed %d / %d (%.0f s)", label, before + to - from, count, seconds(start));
            }
          }
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("indexing interrupted", e);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IOException("indexing failed", e.getCause());
    } finally {
      pool.shutdown();
    }
  }

  /**
   * The standalone codec's shape (Lucene's default codec, our format for marked fields) with the IVF threshold
   * given: segments of fewer vectors stay flat. Named as {@link GpuVectorsCodec}, so the index reads back
   * through it. The other scale benchmarks build with it too.
   */
  static Codec codec(int ivfMinVectors) {
    Codec delegate = new Lucene104Codec();
    PerFieldKnnVectorsFormat perField = (PerFieldKnnVectorsFormat) delegate.knnVectorsFormat();
    KnnVectorsFormat routing =
        new GpuVectorsRoutingFormat(new GpuVectorsFormat(ivfMinVectors), perField::getKnnVectorsFormatForField);
    return new FilterCodec(GpuVectorsCodec.NAME, delegate) {
      @Override
      public KnnVectorsFormat knnVectorsFormat() {
        return routing;
      }
    };
  }

  // ---- search ----

  private void search(Path path, GpuSearchService service) throws IOException {
    try (Directory dir = FSDirectory.open(path); DirectoryReader reader = DirectoryReader.open(dir)) {
      if (reader.leaves().size() != 1) {
        throw new IllegalStateException("expected one segment after forceMerge(1), got " + reader.leaves().size());
      }
      LeafReader leaf = reader.leaves().get(0).reader();
      int[] docToId = docToId(leaf);
      IvfPqField field = KnnBatchSearcher.gpuVectorsReader(leaf, FIELD).ivfPqField(FIELD);
      if (field == null) {
        throw new IllegalStateException("the merged segment has no ivf_pq structure (flat): " + n + " vectors");
      }
      int nlist = field.nlist();
      int m = field.pq().m();
      progress("search: one segment, nlist %d, pq_m %d x %d bits, default nprobe %d", nlist, m, field.pq().bits(),
          field.lists().defaultProbes());
      logListSizes(field.lists());
      buildFacts.put("nlist", Integer.toString(nlist));
      buildFacts.put("pq_m", Integer.toString(m));
      buildFacts.put("pq_bits", Integer.toString(field.pq().bits()));
      buildFacts.put("default_nprobe", Integer.toString(field.lists().defaultProbes()));
      IndexSearcher searcher = new IndexSearcher(reader);
      boolean gpu = service.gpuActive();
      if (gpu) {
        long t = System.nanoTime();
        KnnBatchSearcher.search(searcher, FIELD, new float[][] {queries[0]}, K, null); // upload + warm-up
        progress("search: first GPU search (upload of codes, lists and raw vectors): %.1f s", seconds(t));
        settleHeap();
        memory(service, m);
        warmUp(searcher);
      } else {
        progress("search: GPU rows skipped (%s); the CPU path on %d queries", service.unusableReason(), cpuQueries);
      }
      for (int c : candidates) {
        int probes = field.probes(c, n);
        int rerank = field.rerankDepth(c, n);
        if (gpu) {
          int nq = queries.length;
          TopDocs[] all = new TopDocs[nq];
          double[] walls = new double[RUNS];
          String[] breakdowns = new String[RUNS];
          for (int run = -WARMUPS; run < RUNS; run++) {
            PassCounters before = PassCounters.of(service.stats());
            long s = System.nanoTime();
            for (int from = 0; from < nq; from += batch) {
              TopDocs[] part = KnnBatchSearcher.search(searcher, FIELD, Arrays.copyOfRange(queries, from, Math.min(nq, from + batch)), K, c, null);
              System.arraycopy(part, 0, all, from, part.length);
            }
            double wall = seconds(s);
            if (run >= 0) {
              walls[run] = wall;
              breakdowns[run] = String.format(Locale.ROOT, "%.1f ms wall, ", wall * 1e3)
                  + before.split(service.stats(), wall, 1e6, "ms");
            }
          }
          int mid = medianRun(walls);
          double median = walls[mid];
          double best = Arrays.stream(walls).min().orElseThrow();
          progress("search: candidates %d, batch %d, median of %d (best %.1f ms): %s", c, batch, RUNS, best * 1e3,
              breakdowns[mid]);
          if (PROFILE_BATCH) { // one more batch, alone in the profiler's range
            service.profilerRange(true);
            KnnBatchSearcher.search(searcher, FIELD, Arrays.copyOf(queries, Math.min(nq, batch)), K, c, null);
            service.profilerRange(false);
          }
          double[] r = recall(all, docToId, nq);
          addRow("ivf_pq-gpu", batch, c, probes, rerank, r[0], r[1], nq / median, exactBatchQps);
          int count = Math.min(single, nq);
          TopDocs[] one = new TopDocs[count];
          for (int q = 0; q < Math.min(5, count); q++) { // warm-up
            KnnBatchSearcher.search(searcher, FIELD, new float[][] {queries[q]}, K, c, null);
          }
          if (PROFILE) {
            service.profilerRange(true); // under ncu / nsys --profile-from-start off: the batch-1 searches only
          }
          // RUNS runs of the same queries, the median reported (as the batch rows and the exact peer's batch 1)
          int singleRuns = PROFILE ? 1 : RUNS;
          double[] singleWalls = new double[singleRuns];
          String[] singleBreakdowns = new String[singleRuns];
          for (int run = 0; run < singleRuns; run++) {
            PassCounters before = PassCounters.of(service.stats());
            PassGraphStats graphsBefore = service.passGraphStats();
            long s = System.nanoTime();
            for (int q = 0; q < count; q++) {
              one[q] = KnnBatchSearcher.search(searcher, FIELD, new float[][] {queries[q]}, K, c, null)[0];
            }
            double runWall = seconds(s);
            PassGraphStats graphs = service.passGraphStats();
            singleWalls[run] = runWall;
            singleBreakdowns[run] = String.format(Locale.ROOT, "%s; passes captured as CUDA graphs %d, launched from "
                    + "one %d, refused %d", before.split(service.stats(), runWall, 1e3 * count, "us"),
                graphs.captures() - graphsBefore.captures(), graphs.launches() - graphsBefore.launches(),
                graphs.refusals() - graphsBefore.refusals());
          }
          if (PROFILE) {
            service.profilerRange(false);
          }
          int singleMid = medianRun(singleWalls);
          double wall = singleWalls[singleMid];
          progress("search: candidates %d, batch 1, %d queries, median of %d runs: %.1f us a query (runs %s us), per "
              + "query %s", c, count, singleRuns, wall * 1e6 / count, perQuery(singleWalls, count),
              singleBreakdowns[singleMid]);
          double[] r1 = recall(one, docToId, count);
          addRow("ivf_pq-gpu", 1, c, probes, rerank, r1[0], r1[1], count / wall, exactSingleQps);
        } else {
          int count = Math.min(cpuQueries, queries.length);
          long s = System.nanoTime();
          TopDocs[] cpu = KnnBatchSearcher.search(searcher, FIELD, Arrays.copyOf(queries, count), K, c, null);
          double wall = seconds(s);
          double[] r = recall(cpu, docToId, count);
          addRow("ivf_pq-cpu-1-thread", count, c, probes, rerank, r[0], r[1], count / wall, Double.NaN);
        }
      }
    }
  }

  /** Each run's microseconds a query, in run order. */
  private static String perQuery(double[] walls, int count) {
    StringJoiner out = new StringJoiner(" / ");
    for (double w : walls) {
      out.add(String.format(Locale.ROOT, "%.1f", w * 1e6 / count));
    }
    return out.toString();
  }

  /**
   * The lists' sizes: what a query's keys row holds at the default nprobe (about nprobe x the mean) and the row
   * capacity the GPU sizes for it (the nprobe largest lists, {@code GpuIvfPqIndex.keysRowWidth}), which decides the
   * radix selection's path.
   */
  private void logListSizes(IvfField lists) {
    int nlist = lists.nlist();
    int[] offsets = lists.listOffsets();
    int[] sizes = new int[nlist];
    for (int l = 0; l < nlist; l++) {
      sizes[l] = offsets[l + 1] - offsets[l];
    }
    Arrays.sort(sizes);
    int probes = lists.defaultProbes();
    long largest = IvfLists.largestListsPrefix(offsets)[Math.min(probes, nlist)];
    progress("search: list sizes: smallest %d, median %d, largest %d, mean %.0f; at nprobe %d a row of about %.0f keys,"
            + " capacity (the %d largest lists) %d", sizes[0], sizes[nlist / 2], sizes[nlist - 1], n / (double) nlist,
        probes, probes * n / (double) nlist, probes, largest);
    buildFacts.put("largest_list", Integer.toString(sizes[nlist - 1]));
    buildFacts.put("keys_row_capacity", Long.toString(largest));
  }

  /**
   * The service's pass counters at one moment ({@link GpuSearchStats} is live): a timed span's wall clock split into
   * the time in passes (host enqueue, device wait) and the time outside them, for the batch rows and the batch-1 rows
   * alike.
   */
  private record PassCounters(long passes, long gpuNanos, long enqueueNanos, long waitNanos) {
    static PassCounters of(GpuSearchStats stats) {
      return new PassCounters(stats.batches(), stats.gpuNanos(), stats.enqueueNanos(), stats.waitNanos());
    }

    /** Since this moment, {@code wallSeconds} split in units of {@code nanosPerUnit} nanoseconds, named {@code unit}. */
    String split(GpuSearchStats now, double wallSeconds, double nanosPerUnit, String unit) {
      double inPasses = (now.gpuNanos() - gpuNanos) / nanosPerUnit;
      return String.format(Locale.ROOT, "%.1f %s in passes (host enqueue %.1f, device wait %.1f), %.1f %s outside"
              + " (KnnBatchSearcher and Lucene around the passes); %d passes", inPasses, unit,
          (now.enqueueNanos() - enqueueNanos) / nanosPerUnit, (now.waitNanos() - waitNanos) / nanosPerUnit,
          wallSeconds * 1e9 / nanosPerUnit - inPasses, unit, now.batches() - passes);
    }
  }

  /**
   * Every row's searches, untimed, before the first timed row: batches of {@link #batch} and 200 single queries at
   * each num_candidates. Without it the sweep's first rows (and a row after a deoptimization) ran the hits'
   * conversion and merge before the JIT had compiled them: session 15 measured 15-29 ms of a 30 ms batch outside the
   * pass there, against 1-2 ms in the other rows and in the same row measured again at the end of the sweep (a
   * Flight Recorder profile put the difference in GpuSegmentSearcher.convert and SegmentHits.merge on the pool), and
   * single queries slowing from 230 to 540 us.
   */
  private void warmUp(IndexSearcher searcher) throws IOException {
    long t = System.nanoTime();
    float[][] first = Arrays.copyOf(queries, Math.min(queries.length, batch));
    for (int c : candidates) {
      for (int w = 0; w < WARMUPS; w++) {
        KnnBatchSearcher.search(searcher, FIELD, first, K, c, null);
      }
      for (int q = 0; q < Math.min(200, queries.length); q++) {
        KnnBatchSearcher.search(searcher, FIELD, new float[][] {queries[q]}, K, c, null);
      }
    }
    progress("search: warm-up of every row: %.1f s", seconds(t));
  }

  /**
   * A full GC after an upload, before timed searches: an upload leaves gigabytes of staging arrays behind (2M x 768:
   * the raw vectors and interleaved codes), and the collector's pauses on them (30-190 ms each in a session 15
   * profile) should not land in a timed row.
   */
  private static void settleHeap() {
    System.gc();
  }

  /** Resident device bytes per vector, and their split by the index's shape. */
  private void memory(GpuSearchService service, int m) {
    long resident = service.residentBytes();
    long codesAndIds = (long) n * (m + 4 + 4); // codes, the ordinal at each position, the L2 table term
    long raw = (long) n * dims * 4; // kept for the device re-rank
    long rest = resident - codesAndIds - raw;
    progress("search: GPU memory %.1f MB resident = %.2f bytes a vector: codes + ids %d (pq_m %d + id 4 + L2 term 4),"
            + " raw vectors for the device re-rank %d, centroids/codebooks/offsets %.2f",
        resident / 1e6, resident / (double) n, m + 8, m, dims * 4, rest / (double) n);
    buildFacts.put("gpu_resident_bytes", Long.toString(resident));
    buildFacts.put("gpu_bytes_per_vector", fmt(resident / (double) n));
    buildFacts.put("gpu_codes_ids_bytes_per_vector", Integer.toString(m + 8));
    buildFacts.put("gpu_raw_bytes_per_vector", Integer.toString(dims * 4));
    buildFacts.put("gpu_other_bytes_per_vector", fmt(rest / (double) n));
  }

  /** Vector position (the "id" doc value) by doc id of the merged segment. */
  static int[] docToId(LeafReader leaf) throws IOException {
    int[] ids = new int[leaf.maxDoc()];
    Arrays.fill(ids, -1);
    NumericDocValues values = leaf.getNumericDocValues("id");
    for (int doc = values.nextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = values.nextDoc()) {
      ids[doc] = (int) values.longValue();
    }
    return ids;
  }

  // ---- recall, rows, report ----

  /** {recall@10, R@1} of the first {@code count} results (doc ids mapped to positions) against the truth. */
  private double[] recall(TopDocs[] results, int[] docToId, int count) {
    long found = 0;
    long expected = 0;
    long firstRight = 0;
    for (int q = 0; q < count; q++) {
      ScoreDoc[] hits = results[q].scoreDocs;
      int[] ids = new int[Math.min(K, hits.length)];
      for (int i = 0; i < ids.length; i++) {
        ids[i] = docToId[hits[i].doc];
      }
      found += overlap(truth[q], ids);
      expected += truth[q].length;
      firstRight += ids.length > 0 && truth[q].length > 0 && ids[0] == truth[q][0] ? 1 : 0;
    }
    return new double[] {expected == 0 ? 1 : found / (double) expected, count == 0 ? 1 : firstRight / (double) count};
  }

  /** {recall@10, R@1} of an exact result (ids are positions) against the truth. */
  private double[] recall(SearchResult res, int count) {
    long found = 0;
    long expected = 0;
    long firstRight = 0;
    for (int q = 0; q < count; q++) {
      int[] ids = new int[Math.min(K, res.count(q))];
      for (int i = 0; i < ids.length; i++) {
        ids[i] = res.id(q, i);
      }
      found += overlap(truth[q], ids);
      expected += truth[q].length;
      firstRight += ids.length > 0 && truth[q].length > 0 && ids[0] == truth[q][0] ? 1 : 0;
    }
    return new double[] {expected == 0 ? 1 : found / (double) expected, count == 0 ? 1 : firstRight / (double) count};
  }

  private static int overlap(int[] truth, int[] ids) {
    int found = 0;
    for (int t : truth) {
      for (int id : ids) {
        if (id == t) {
          found++;
          break;
        }
      }
    }
    return found;
  }

  private void addRow(String system, int batchSize, int numCandidates, int nprobe, int rerank, double recall10,
                      double r1, double qps, double exactQps) {
    String row = String.format(Locale.ROOT, "%s,%d,%d,%s,%d,%d,%d,%d,%.4f,%.4f,%.1f,%.3f,%.2f", name, n, dims, system,
        batchSize, numCandidates, nprobe, rerank, recall10, r1, qps, 1e6 / qps, qps / exactQps);
    rows.add(row);
    System.out.println("  row: " + line(row.split(",")));
  }

  private static String line(String[] c) {
    return String.format(Locale.ROOT, "%-22s %6s %6s %6s %6s %9s %7s %13.0f %11s %9s", c[3], c[4], c[5], c[6], c[7], c[8], c[9],
        Double.parseDouble(c[10]), c[11], c[12]);
  }

  private void report(Path out) throws IOException {
    String header = "dataset,n,dims,system,batch,num_candidates,nprobe,rerank,recall_at_10,r_at_1,queries_per_s,us_per_query,x_exact";
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("ivfpq-scale-" + n + "-" + dims + ".csv")))) {
      w.println(header);
      rows.forEach(w::println);
    }
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("ivfpq-scale-" + n + "-" + dims + "-build.csv")))) {
      w.println("key,value");
      buildFacts.forEach((k, v) -> w.println(k + "," + v));
    }
    System.out.println();
    System.out.printf(Locale.ROOT, "%s  (x exact: q/s over the exact GPU peer's at the same batch, the faster precision)%n", name);
    System.out.printf(Locale.ROOT, "%-22s %6s %6s %6s %6s %9s %7s %13s %11s %9s%n", "system", "batch", "cands", "nprobe",
        "rerank", "recall@10", "R@1", "queries/s", "us/query", "x exact");
    rows.forEach(r -> System.out.println(line(r.split(","))));
    buildFacts.forEach((k, v) -> System.out.println("  " + k + " = " + v));
    summary();
  }

  /** The target rows: the SIFT1M-style point and the fastest recall@10 >= 0.95 at each batch. */
  private void summary() {
    String sift = best(r -> r[3].equals("ivf_pq-gpu") && Integer.parseInt(r[4]) > 1 && Double.parseDouble(r[9]) >= 0.80);
    System.out.println("SIFT1M-style point (fastest batch-" + batch + " row with R@1 >= 0.80; bar <= 2 us a query): "
        + (sift == null ? "none" : line(sift.split(","))));
    for (boolean one : new boolean[] {false, true}) {
      String row = best(r -> r[3].equals("ivf_pq-gpu") && (Integer.parseInt(r[4]) == 1) == one && Double.parseDouble(r[8]) >= 0.95);
      System.out.println("fastest recall@10 >= 0.95 at batch " + (one ? 1 : batch) + " (target >= 20 x exact): "
          + (row == null ? "none" : line(row.split(","))));
    }
  }

  private String best(java.util.function.Predicate<String[]> accept) {
    String best = null;
    double bestQps = -1;
    for (String row : rows) {
      String[] c = row.split(",");
      if (accept.test(c) && Double.parseDouble(c[10]) > bestQps) {
        bestQps = Double.parseDouble(c[10]);
        best = row;
      }
    }
    return best;
  }

  // ---- helpers ----

  /** Median wall ms of {@link #RUNS} runs after {@link #WARMUPS} (the batch rows of both systems are timed this way). */
  private static double timeBatches(Runnable search) {
    for (int w = 0; w < WARMUPS; w++) {
      search.run();
    }
    double[] ms = new double[RUNS];
    for (int r = 0; r < ms.length; r++) {
      long s = System.nanoTime();
      search.run();
      ms[r] = (System.nanoTime() - s) / 1e6;
    }
    return ms[medianRun(ms)];
  }

  /** The index of the median of times (the lower middle one for an even count). */
  private static int medianRun(double[] times) {
    Integer[] order = new Integer[times.length];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Double.compare(times[a], times[b]));
    return order[(times.length - 1) / 2];
  }

  private static float[] flatten(float[][] rows) {
    int dims = rows[0].length;
    float[] flat = new float[rows.length * dims];
    for (int i = 0; i < rows.length; i++) {
      System.arraycopy(rows[i], 0, flat, i * dims, dims);
    }
    return flat;
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
