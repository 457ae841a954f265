package org.gpuvectors.codec;

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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexFileNames;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.SegmentCommitInfo;
import org.apache.lucene.index.SegmentInfo;
import org.apache.lucene.index.SegmentInfos;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.IOUtils;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;

/**
 * The build targets of issues 8 and 9 on Fashion-MNIST (60k x 784): {@code ivf_flat}, {@code ivf_pq} (nprobe 16) and
 * {@code graph} at their defaults, each built {@code reps} times (one indexing thread, one flush that trains and encodes, force-merge), against
 * Lucene HNSW at its best on all cores (m 16, beam 100: documents added from every core, merged by every core) in the
 * same JVM; a {@code flat} field's build (indexing and the raw vectors alone, no training) as the floor.
 *
 * <p>Per system: the median build (indexing + flush + force-merge, wall clock), the median of the writer's own time
 * (train + encode + write, or the graph's k-NN step to its write: the {@code total} of its per-build log line, {@code GpuVectorsWriter#logBuild}) with that
 * build's phases, the ratio of HNSW's median build to each, and recall@10 of 1,000 queries searched on the last index
 * (a fast build that lost its lists shows here). The same builds on the CPU (the service disabled) once each.
 *
 * <p>Bytes a vector, of the last build of each system: on disk, the index structure ({@code our_disk_B/vec}: our
 * {@code .gvd} and {@code .gvm} files: lists and codes, or the graph's adjacency and entry points; HNSW's {@code .vex}
 * and {@code .vem}: its graph) apart from the raw vectors of Lucene's flat format ({@code .vec}, {@code .vemf}, read
 * by every type); on the GPU ({@code gpu_B/vec}), what the residency service holds for the segment once searched
 * (the raw vectors included where the type keeps them there).
 *
 * <p>Args: {@code FMNIST_DIR OUT [reps=5] [hnswReps=3] [types=flat,ivf_flat,ivf_pq,graph] [cpu=true]}. Output: a
 * table on stdout and {@code OUT/index-build.csv}.
 */
public final class IndexBuildBenchmark {

  private static final int K = 10;
  private static final int QUERIES = 1000;
  private static final int NPROBE = 16;
  private static final Pattern TOTAL = Pattern.compile("total ([0-9.]+) s: (.*)$");

  private record Build(double seconds, double writerSeconds, String phases) {}

  /** Bytes a vector of an index: its structure's files, the raw vectors' files, and on the GPU (NaN: not there). */
  private record Footprint(double structure, double raw, double gpu) {
    String[] cells() {
      return new String[] {fmtBytes(structure), fmtBytes(raw), fmtBytes(gpu)};
    }
  }

  /** Lucene's flat vector files (the raw vectors that every type reads): data and metadata. */
  private static final List<String> RAW_EXTENSIONS = List.of("vec", "vemf");
  /** Index structure files: ours (data and metadata), Lucene HNSW's graph (data and metadata). */
  private static final List<String> STRUCTURE_EXTENSIONS = List.of("gvd", "gvm", "vex", "vem");

  public static void main(String[] args) throws Exception {
    Path data = Path.of(args[0]);
    Path out = Path.of(args[1]);
    int reps = args.length > 2 ? Integer.parseInt(args[2]) : 5;
    int hnswReps = args.length > 3 ? Integer.parseInt(args[3]) : 3;
    List<IndexType> types = Arrays.stream((args.length > 4 ? args[4] : "flat,ivf_flat,ivf_pq,graph").split(","))
        .map(IndexType::fromName).toList();
    boolean cpuToo = args.length <= 5 || Boolean.parseBoolean(args[5]);
    Files.createDirectories(out);
    int threads = Runtime.getRuntime().availableProcessors();
    float[][] train = FashionMnistBenchmark.readImages(data.resolve("train-images-idx3-ubyte.gz"));
    float[][] queries =
        Arrays.copyOf(FashionMnistBenchmark.readImages(data.resolve("t10k-images-idx3-ubyte.gz")), QUERIES);
    int[][] truth = FashionMnistBenchmark.groundTruth(train, queries);
    GpuSearchService service = GpuSearchServices.current();
    System.out.printf(Locale.ROOT, "fashion-mnist: %d x %d, %d threads, %d builds each; GPU: %s%n", train.length,
        train[0].length, threads, reps, service.gpuActive() ? service.deviceName() : service.unusableReason());

    List<String[]> rows = new ArrayList<>();
    Footprint[] hnswFootprint = new Footprint[1];
    double hnsw = median(hnswBuilds(train, threads, hnswReps, hnswFootprint));
    rows.add(row(new String[] {"lucene-hnsw", "cpu-" + threads + "-threads", fmt(hnsw), "", "1.00", "", ""},
        hnswFootprint[0]));
    for (IndexType type : types) {
      for (boolean gpu : service.gpuActive() ? new boolean[] {true, false} : new boolean[] {false}) {
        if (!gpu && service.gpuActive() && (type == IndexType.FLAT || !cpuToo)) {
          continue; // flat: no training, the same build either way
        }
        service.setEnabled(gpu);
        int runs = gpu ? reps : 1;
        List<Build> builds = new ArrayList<>();
        double recall = Double.NaN;
        Footprint footprint = null;
        for (int r = 0; r < runs; r++) {
          Path path = Files.createTempDirectory("gv-index-build");
          try (Directory dir = FSDirectory.open(path)) {
            builds.add(build(dir, type, train));
            System.out.printf(Locale.ROOT, "%s (%s) build %d/%d: %.3f s, writer %.3f s: %s%n", type.typeName(),
                gpu ? "gpu" : "cpu", r + 1, runs, builds.getLast().seconds(), builds.getLast().writerSeconds(),
                builds.getLast().phases());
            if (r == runs - 1) {
              service.setEnabled(true);
              long residentBefore = service.residentBytes();
              try (DirectoryReader reader = DirectoryReader.open(dir)) {
                recall = recall(reader, queries, truth);
                // what the searches made resident (the reader still open: closing it frees the segment's memory)
                double gpuBytes = service.gpuActive()
                    ? (service.residentBytes() - residentBefore) / (double) train.length : Double.NaN;
                footprint = footprint(dir, train.length, gpuBytes);
              }
            }
          } finally {
            IOUtils.rm(path);
          }
        }
        double seconds = median(builds.stream().mapToDouble(Build::seconds).toArray());
        double writer = median(builds.stream().mapToDouble(Build::writerSeconds).toArray());
        Build typical = builds.stream().min((a, b) -> Double.compare(Math.abs(a.writerSeconds() - writer),
            Math.abs(b.writerSeconds() - writer))).orElseThrow();
        rows.add(row(new String[] {type.typeName(), gpu ? "gpu" : "cpu-" + threads + "-threads", fmt(seconds),
            Double.isNaN(writer) ? "" : fmt(writer), String.format(Locale.ROOT, "%.2f", hnsw / seconds),
            Double.isNaN(writer) ? "" : String.format(Locale.ROOT, "%.2f", hnsw / writer),
            String.format(Locale.ROOT, "%.4f", recall) + (typical.phases().isEmpty() ? "" : " | " + typical.phases())},
            footprint));
      }
    }
    service.setEnabled(true);

    String[] header = {"system", "path", "build_s", "writer_s", "hnsw/build", "hnsw/writer", "our_disk_B/vec",
        "raw_disk_B/vec", "gpu_B/vec", "recall@10 | phases"};
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("index-build.csv")))) {
      w.println(String.join(",", header));
      rows.forEach(r -> w.println(String.join(",", Arrays.stream(r).map(c -> c.replace(',', ';')).toList())));
    }
    String format = "%-11s %-16s %8s %9s %11s %12s %15s %15s %10s  %s%n";
    System.out.printf(Locale.ROOT, "%n" + format, (Object[]) header);
    for (String[] r : rows) {
      System.out.printf(Locale.ROOT, format, (Object[]) r);
    }
    GpuSearchServices.closeDefault();
  }

  /** One indexing thread, one flush (the RAM buffer holds every vector), force-merge; the writer's log line. */
  private static Build build(Directory dir, IndexType type, float[][] vectors) throws IOException {
    FieldType fieldType = GpuVectorsFormat.markField(
        KnnFloatVectorField.createFieldType(vectors[0].length, VectorSimilarityFunction.EUCLIDEAN),
        type == IndexType.IVF_FLAT || type == IndexType.IVF_PQ
            ? new IndexParams(type, Map.of(IndexParams.NPROBE, NPROBE))
            : new IndexParams(type, Map.of()));
    try (BuildPhaseLog log = new BuildPhaseLog()) {
      long start = System.nanoTime();
      IndexWriterConfig config = new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setRAMBufferSizeMB(1024);
      try (IndexWriter writer = new IndexWriter(dir, config)) {
        for (float[] v : vectors) {
          Document doc = new Document();
          doc.add(new KnnFloatVectorField("vec", v, fieldType));
          writer.addDocument(doc);
        }
        writer.forceMerge(1);
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      double writer = 0;
      String phases = "";
      int matched = 0;
      for (String line : log.lines()) {
        Matcher m = TOTAL.matcher(line);
        if (m.find()) {
          writer += Double.parseDouble(m.group(1));
          phases = m.group(2);
          matched++;
        }
      }
      return new Build(seconds, matched == 0 ? Double.NaN : writer, matched > 1 ? matched + " builds, last: " + phases : phases);
    }
  }

  /** Lucene HNSW at its best on all cores ({@link KnnGraphBenchmark#buildConcurrently}), {@code reps} times. */
  private static double[] hnswBuilds(float[][] vectors, int threads, int reps, Footprint[] footprint)
      throws IOException {
    double[] seconds = new double[reps];
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int r = 0; r < reps; r++) {
        Path path = Files.createTempDirectory("gv-index-build-hnsw");
        try (Directory dir = FSDirectory.open(path)) {
          Codec codec = KnnGraphBenchmark.hnswCodec(threads, pool);
          FieldType type = KnnFloatVectorField.createFieldType(vectors[0].length, VectorSimilarityFunction.EUCLIDEAN);
          seconds[r] = KnnGraphBenchmark.buildConcurrently(dir, codec, type, vectors, threads);
          System.out.printf(Locale.ROOT, "Lucene HNSW build %d/%d (%d indexing threads, %d merge threads): %.2f s%n",
              r + 1, reps, threads, threads, seconds[r]);
          footprint[0] = footprint(dir, vectors.length, Double.NaN);
        } finally {
          IOUtils.rm(path);
        }
      }
    } finally {
      pool.shutdown();
    }
    return seconds;
  }

  /** Recall@10 of the queries on the index {@code reader} reads (one segment: doc ids are the vectors' positions). */
  private static double recall(DirectoryReader reader, float[][] queries, int[][] truth) throws IOException {
    return FashionMnistBenchmark.recall(KnnBatchSearcher.search(new IndexSearcher(reader), "vec", queries, K, null),
        truth);
  }

  /**
   * The index's structure and raw-vector files in {@code dir} (one field: every such file is the field's), in bytes a
   * vector, looked up inside compound files too (our one-flush builds leave one); {@code gpuBytes} as measured.
   */
  private static Footprint footprint(Directory dir, int n, double gpuBytes) throws IOException {
    long[] structureAndRaw = new long[2];
    for (SegmentCommitInfo segment : SegmentInfos.readLatestCommit(dir)) {
      SegmentInfo info = segment.info;
      if (info.getUseCompoundFile()) {
        try (Directory compound = info.getCodec().compoundFormat().getCompoundReader(dir, info)) {
          addSizes(compound, structureAndRaw);
        }
      } else {
        for (String file : segment.files()) {
          addSize(dir, file, structureAndRaw);
        }
      }
    }
    return new Footprint(structureAndRaw[0] / (double) n, structureAndRaw[1] / (double) n, gpuBytes);
  }

  private static void addSizes(Directory dir, long[] structureAndRaw) throws IOException {
    for (String file : dir.listAll()) {
      addSize(dir, file, structureAndRaw);
    }
  }

  private static void addSize(Directory dir, String file, long[] structureAndRaw) throws IOException {
    String extension = IndexFileNames.getExtension(file);
    if (STRUCTURE_EXTENSIONS.contains(extension)) {
      structureAndRaw[0] += dir.fileLength(file);
    } else if (RAW_EXTENSIONS.contains(extension)) {
      structureAndRaw[1] += dir.fileLength(file);
    }
  }

  private static String[] row(String[] cells, Footprint footprint) {
    String[] sizes = footprint == null ? new String[] {"", "", ""} : footprint.cells();
    String[] row = Arrays.copyOf(cells, cells.length + sizes.length);
    // the sizes go before the last cell (recall and phases, the longest)
    System.arraycopy(sizes, 0, row, cells.length - 1, sizes.length);
    row[row.length - 1] = cells[cells.length - 1];
    return row;
  }

  private static String fmtBytes(double bytes) {
    return Double.isNaN(bytes) ? "" : String.format(Locale.ROOT, "%.1f", bytes);
  }

  /** The median of the values that are not NaN (NaN when none is): the benchmarks' medians of repeated runs. */
  static double median(double[] values) {
    double[] v = Arrays.stream(values).filter(x -> !Double.isNaN(x)).sorted().toArray();
    return v.length == 0 ? Double.NaN : v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  private static String fmt(double seconds) {
    return String.format(Locale.ROOT, "%.3f", seconds);
  }
}
