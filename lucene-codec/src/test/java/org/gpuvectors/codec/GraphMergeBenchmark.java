package org.gpuvectors.codec;

import static org.gpuvectors.codec.IndexBuildBenchmark.median;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.TopDocs;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.LogDocMergePolicy;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.store.IOContext;
import org.apache.lucene.util.IOUtils;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;

/**
 * Issue 9's "build the merged graph from the merged vectors (use the hierarchical merge if it beats a rebuild; report
 * both times)": a force-merge of a {@code graph} field's segments, once starting from the segments' graphs ({@code
 * GraphMerge}, on the CPU: where it runs) and, when there is a GPU, once rebuilt from scratch there (a merge with the
 * GPU serving rebuilds, its k-NN step on the GPU), on the same segments (one index built, copied for each arm).
 *
 * <p>Per arm and repetition: the force-merge's wall clock, the writer's graph build (its per-build log line, with the
 * phases), recall@10 of 1,000 queries at the default search width (the merged segment's graph searched on the CPU),
 * against brute force. The arms alternate (rebuild, merge, rebuild, merge, ...); medians.
 *
 * <p>Lucene HNSW (m 16, beam 100) merges the same documents' segments in the same run as the peer (its merge
 * reuses the largest segment's graph and inserts the others' vectors into it), merge workers on every core.
 *
 * <p>Args: {@code DATA OUT [vectors=60000] [segments=4] [reps=2] [deleted=0] [hnsw=true]}: {@code DATA} a
 * Fashion-MNIST folder, or {@code synthetic:DIMS} for {@link FlatSearchBenchmark#clustered}'s Gaussian clusters; {@code segments}
 * a count of equal segments or their sizes ({@code 45000,5000,5000,5000}); {@code deleted} the share of documents deleted
 * before each merge (spread over all segments; the queries' truth is brute force over the live vectors). Output: a table on stdout and {@code
 * OUT/graph-merge.csv}.
 */
public final class GraphMergeBenchmark {

  private static final int K = 10;
  private static final int CORES = Runtime.getRuntime().availableProcessors();
  private static final int QUERIES = 1000;
  private static final Pattern TOTAL = Pattern.compile("\\((merge[^)]*)\\): total ([0-9.]+) s: (.*)$");

  /** The search width of the benchmark's mapping: narrow, so that recall shows the graph's quality. */
  private static final int NARROW_WIDTH = 16;
  /** The graph type's default search width, reached with num_candidates. */
  private static final int DEFAULT_WIDTH = 64;

  private record Merge(double seconds, double writerSeconds, String phases, double recallNarrow, double recall) {}

  /**
   * A way to merge: our graph rebuilt (on the GPU), or from the graphs; or Lucene HNSW's merge of the same documents'
   * HNSW segments (the peer).
   */
  private record Arm(String name, boolean hnsw, boolean fromGraphs) {}

  public static void main(String[] args) throws Exception {
    String data = args[0];
    Path out = Path.of(args[1]);
    int n = args.length > 2 ? Integer.parseInt(args[2]) : 60_000;
    int[] sizes = segmentSizes(n, args.length > 3 ? args[3] : "4");
    int segments = sizes.length;
    int reps = args.length > 4 ? Integer.parseInt(args[4]) : 2;
    double deleted = args.length > 5 ? Double.parseDouble(args[5]) : 0;
    boolean hnswToo = args.length <= 6 || Boolean.parseBoolean(args[6]);
    Files.createDirectories(out);
    float[][] base;
    float[][] queries;
    if (data.startsWith("synthetic:")) {
      int dims = Integer.parseInt(data.substring("synthetic:".length()));
      float[][] all = FlatSearchBenchmark.clustered(n + QUERIES, dims, 7);
      base = Arrays.copyOf(all, n);
      queries = Arrays.copyOfRange(all, n, n + QUERIES);
    } else {
      base = Arrays.copyOf(FashionMnistBenchmark.readImages(Path.of(data, "train-images-idx3-ubyte.gz")), n);
      queries = Arrays.copyOf(FashionMnistBenchmark.readImages(Path.of(data, "t10k-images-idx3-ubyte.gz")), QUERIES);
    }
    // the merged segment's documents: the live vectors in order (LogDocMergePolicy keeps the segments' order)
    boolean[] deletes = new boolean[base.length];
    List<float[]> live = new ArrayList<>();
    for (int i = 0; i < base.length; i++) {
      deletes[i] = Math.floorMod(i * 2654435761L, 1000) < deleted * 1000;
      if (deletes[i] == false) {
        live.add(base[i]);
      }
    }
    int[][] truth = FashionMnistBenchmark.groundTruth(live.toArray(new float[0][]), queries);
    GpuSearchService service = GpuSearchServices.current();
    String device = service.gpuActive() ? service.deviceName() : "CPU (" + service.unusableReason() + ")";
    System.out.printf(Locale.ROOT, "%s: %d x %d in %d segments %s, %d deleted before the merge, %d cores, %d merges "
            + "per arm; device: %s%n", data, base.length, base[0].length, segments, Arrays.toString(sizes),
        base.length - live.size(), Runtime.getRuntime().availableProcessors(), reps, device);

    List<Arm> arms = new ArrayList<>();
    if (hnswToo) {
      arms.add(new Arm("lucene-hnsw", true, false));
    }
    // without a GPU every merge of these segments starts from their graphs: no rebuild to compare
    int rebuildArm = service.gpuActive() ? arms.size() : -1;
    if (rebuildArm >= 0) {
      arms.add(new Arm("rebuild", false, false));
    }
    arms.add(new Arm("from-graphs", false, true));
    List<List<Merge>> results = new ArrayList<>();
    arms.forEach(a -> results.add(new ArrayList<>()));
    Path segmentsPath = Files.createTempDirectory("gv-graph-merge-segments");
    Path hnswSegmentsPath = Files.createTempDirectory("gv-graph-merge-hnsw-segments");
    ExecutorService mergeWorkers = Executors.newFixedThreadPool(CORES);
    try (Directory segmentsDir = FSDirectory.open(segmentsPath);
         Directory hnswSegmentsDir = FSDirectory.open(hnswSegmentsPath)) {
      long start = System.nanoTime();
      writeSegments(segmentsDir, new GpuVectorsCodec(), base, sizes, fieldType(base[0].length));
      System.out.printf(Locale.ROOT, "%d segments built in %.1f s%n", segments, (System.nanoTime() - start) / 1e9);
      if (hnswToo) {
        start = System.nanoTime();
        writeSegments(hnswSegmentsDir, hnswCodec(mergeWorkers), base, sizes,
            KnnFloatVectorField.createFieldType(base[0].length, VectorSimilarityFunction.EUCLIDEAN));
        System.out.printf(Locale.ROOT, "%d HNSW segments built in %.1f s%n", segments,
            (System.nanoTime() - start) / 1e9);
      }
      for (int r = 0; r < reps; r++) {
        for (int a = 0; a < arms.size(); a++) {
          Arm arm = arms.get(a);
          Merge merge = arm.hnsw()
              ? forceMerge(hnswSegmentsDir, () -> hnswCodec(mergeWorkers), arm, deletes, queries, truth)
              : forceMerge(segmentsDir, GpuVectorsCodec::new, arm, deletes, queries, truth);
          results.get(a).add(merge);
          System.out.printf(Locale.ROOT, "%s %d/%d: force-merge %.2f s, graph %.2f s, recall@10 %.4f (width %d) / "
                  + "%.4f (width %d) | %s%n", arm.name(), r + 1, reps, merge.seconds(), merge.writerSeconds(),
              merge.recallNarrow(), NARROW_WIDTH, merge.recall(), DEFAULT_WIDTH, merge.phases());
        }
      }
    } finally {
      mergeWorkers.shutdown();
      IOUtils.rm(segmentsPath, hnswSegmentsPath);
    }
    String[] header = {"arm", "force_merge_s", "graph_s", "rebuild/merge", "rebuild/graph", "recall@10_w16",
        "recall@10_w64", "phases"};
    double rebuildMerge = rebuildArm < 0 ? Double.NaN
        : median(results.get(rebuildArm).stream().mapToDouble(Merge::seconds).toArray());
    double rebuildGraph = rebuildArm < 0 ? Double.NaN
        : median(results.get(rebuildArm).stream().mapToDouble(Merge::writerSeconds).toArray());
    List<String[]> rows = new ArrayList<>();
    for (int a = 0; a < arms.size(); a++) {
      List<Merge> arm = results.get(a);
      double merge = median(arm.stream().mapToDouble(Merge::seconds).toArray());
      double graph = median(arm.stream().mapToDouble(Merge::writerSeconds).toArray());
      Merge typical = arm.stream().min((x, y) -> Double.compare(Math.abs(x.seconds() - merge),
          Math.abs(y.seconds() - merge))).orElseThrow();
      rows.add(new String[] {arms.get(a).name(), fmt(merge), Double.isNaN(graph) ? "" : fmt(graph),
          Double.isNaN(rebuildMerge) ? "" : String.format(Locale.ROOT, "%.2f", rebuildMerge / merge),
          Double.isNaN(graph) || Double.isNaN(rebuildGraph) ? "" : String.format(Locale.ROOT, "%.2f", rebuildGraph / graph),
          String.format(Locale.ROOT, "%.4f", median(arm.stream().mapToDouble(Merge::recallNarrow).toArray())),
          String.format(Locale.ROOT, "%.4f", median(arm.stream().mapToDouble(Merge::recall).toArray())),
          typical.phases()});
    }
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("graph-merge.csv")))) {
      w.println(String.join(",", header));
      rows.forEach(r -> w.println(String.join(",", Arrays.stream(r).map(c -> c.replace(',', ';')).toList())));
    }
    String format = "%-16s %13s %8s %13s %13s %13s %13s  %s%n";
    System.out.printf(Locale.ROOT, "%n" + format, (Object[]) header);
    for (String[] r : rows) {
      System.out.printf(Locale.ROOT, format, (Object[]) r);
    }
    GpuSearchServices.closeDefault();
  }

  /**
   * Segment sizes: {@code spec} is a count of about equal segments, or the sizes themselves, comma separated (the
   * vectors of segments below {@code gpuvectors.ivf.min_vectors} stay flat).
   */
  private static int[] segmentSizes(int n, String spec) {
    if (spec.contains(",")) {
      int[] sizes = Arrays.stream(spec.split(",")).mapToInt(Integer::parseInt).toArray();
      if (Arrays.stream(sizes).sum() != n) {
        throw new IllegalArgumentException("segment sizes " + spec + " do not add up to " + n);
      }
      return sizes;
    }
    int segments = Integer.parseInt(spec);
    int[] sizes = new int[segments];
    for (int s = 0; s < segments; s++) {
      sizes[s] = (int) ((long) n * (s + 1) / segments - (long) n * s / segments);
    }
    return sizes;
  }

  /** One segment per size, in order, each one flush that builds its graph (or stays flat); no merges. */
  private static void writeSegments(Directory dir, Codec codec, float[][] vectors, int[] sizes, FieldType type)
      throws IOException {
    IndexWriterConfig config = new IndexWriterConfig().setCodec(codec).setRAMBufferSizeMB(4096)
        .setMergePolicy(NoMergePolicy.INSTANCE).setUseCompoundFile(false);
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      int i = 0;
      for (int s = 0; s < sizes.length; s++) {
        for (int end = i + sizes[s]; i < end; i++) {
          Document doc = new Document();
          doc.add(new KnnFloatVectorField("vec", vectors[i], type));
          doc.add(new StringField("id", Integer.toString(i), Field.Store.NO));
          writer.addDocument(doc);
        }
        writer.flush();
        System.out.printf(Locale.ROOT, "  segment %d of %d flushed (%d vectors)%n", s + 1, sizes.length, sizes[s]);
      }
      writer.commit();
    }
  }

  private static FieldType fieldType(int dims) {
    return GpuVectorsFormat.markField(KnnFloatVectorField.createFieldType(dims, VectorSimilarityFunction.EUCLIDEAN),
        new IndexParams(IndexType.GRAPH, Map.of(IndexParams.SEARCH_WIDTH, NARROW_WIDTH)));
  }

  /** A copy of the segments force-merged into one, the graph from the segments' graphs or rebuilt. */
  /** Lucene HNSW at Elasticsearch's defaults (m 16, beam 100), its merges on {@link #CORES} workers. */
  private static Codec hnswCodec(ExecutorService mergeWorkers) {
    return KnnGraphBenchmark.hnswCodec(CORES, mergeWorkers);
  }

  private static Merge forceMerge(Directory segments, Supplier<Codec> codec, Arm arm, boolean[] deletes,
                                  float[][] queries, int[][] truth) throws IOException {
    Path path = Files.createTempDirectory("gv-graph-merge");
    // a GPU rebuilds; the merge from graphs is the CPU's (no GPU, or a GPU that stopped serving): measured there
    GpuSearchService service = GpuSearchServices.current();
    service.setEnabled(arm.fromGraphs() == false);
    try (Directory dir = FSDirectory.open(path); BuildPhaseLog log = new BuildPhaseLog()) {
      for (String file : segments.listAll()) {
        dir.copyFrom(segments, file, file, IOContext.DEFAULT);
      }
      long start = System.nanoTime();
      // LogDocMergePolicy merges the segments in their order: doc ids stay the vectors' positions
      IndexWriterConfig config = new IndexWriterConfig().setCodec(codec.get())
          .setMergePolicy(new LogDocMergePolicy()).setUseCompoundFile(false);
      try (IndexWriter writer = new IndexWriter(dir, config)) {
        for (int i = 0; i < deletes.length; i++) {
          if (deletes[i]) {
            writer.deleteDocuments(new Term("id", Integer.toString(i)));
          }
        }
        writer.forceMerge(1);
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      double writer = Double.NaN;
      String phases = "";
      for (String line : log.lines()) {
        Matcher m = TOTAL.matcher(line);
        if (m.find()) {
          writer = Double.parseDouble(m.group(2));
          phases = m.group(3);
        }
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        if (reader.leaves().size() != 1) {
          throw new IllegalStateException("force-merge left " + reader.leaves().size() + " segments");
        }
        IndexSearcher searcher = new IndexSearcher(reader);
        double narrow = FashionMnistBenchmark.recall(search(searcher, queries, NARROW_WIDTH), truth);
        double recall = FashionMnistBenchmark.recall(search(searcher, queries, DEFAULT_WIDTH), truth);
        return new Merge(seconds, writer, phases, narrow, recall);
      }
    } finally {
      service.setEnabled(true);
      IOUtils.rm(path);
    }
  }

  /**
   * The top {@link #K} of each query's knn query for {@code numCandidates} (ours: a walk of that width; HNSW: its
   * beam), one query at a time.
   */
  private static TopDocs[] search(IndexSearcher searcher, float[][] queries, int numCandidates) throws IOException {
    TopDocs[] results = new TopDocs[queries.length];
    for (int q = 0; q < queries.length; q++) {
      TopDocs hits = searcher.search(new KnnFloatVectorQuery("vec", queries[q], numCandidates), numCandidates);
      results[q] = new TopDocs(hits.totalHits, Arrays.copyOf(hits.scoreDocs, Math.min(K, hits.scoreDocs.length)));
    }
    return results;
  }

  private static String fmt(double seconds) {
    return String.format(Locale.ROOT, "%.3f", seconds);
  }
}
