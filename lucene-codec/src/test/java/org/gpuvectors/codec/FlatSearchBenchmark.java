package org.gpuvectors.codec;

import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.IOUtils;

/**
 * Exact search of a {@code flat} field through the Lucene codec: the GPU path against the CPU path
 * on the same index, in the same run, with {@link KnnBatchSearcher}. Not a test: a program whose
 * output goes into docs/notes/BENCHMARKS.md.
 *
 * <pre>
 * java ... org.gpuvectors.codec.FlatSearchBenchmark N DIMS OUT_DIR [CPU_QUERIES]
 * </pre>
 *
 * Synthetic clustered data (fixed seed). The vectors and queries are also written as raw
 * little-endian float32 files ({@code /tmp/gv-bench-N-DIMS.{base,queries}.f32}) so that
 * bench/torch_flat.py measures PyTorch on exactly the same data. Prints progress while indexing,
 * a table at the end, and writes {@code OUT_DIR/flat-N-DIMS.csv}. Timings are medians of repeated
 * calls after a warm-up (the first GPU call uploads the segment; its time is reported apart).
 */
public final class FlatSearchBenchmark {

  private static final int[] BATCHES = {1, 16, 1024, 10_000};
  private static final int[] KS = {10, 100};

  public static void main(String[] args) throws Exception {
    int n = Integer.parseInt(args[0]);
    int dims = Integer.parseInt(args[1]);
    Path out = Path.of(args[2]);
    int cpuQueries = args.length > 3 ? Integer.parseInt(args[3]) : 16;
    Files.createDirectories(out);
    String name = n + "-" + dims;

    long t0 = System.nanoTime();
    float[][] base = clustered(n, dims, 42);
    float[][] queries = clustered(BATCHES[BATCHES.length - 1], dims, 7);
    writeRaw(Path.of("/tmp/gv-bench-" + name + ".base.f32"), base);
    writeRaw(Path.of("/tmp/gv-bench-" + name + ".queries.f32"), queries);
    System.out.printf(Locale.ROOT, "data %s: %.1f s%n", name, seconds(t0));

    Path indexPath = Files.createTempDirectory("gv-bench-index");
    GpuSearchService service = GpuSearchServices.current();
    System.out.println("GPU: " + (service.gpuActive() ? service.deviceName() : service.unusableReason()));
    List<String> rows = new ArrayList<>();
    rows.add("dataset,k,batch,path,queries_per_s,median_ms,recall_vs_cpu");
    try (Directory dir = FSDirectory.open(indexPath)) {
      long indexNanos = index(dir, base);
      System.out.printf(Locale.ROOT, "index build (flush + force-merge): %.1f s%n", indexNanos / 1e9);
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        long up = System.nanoTime();
        KnnBatchSearcher.search(searcher, "vec", slice(queries, 0, 1), 10, null); // upload + warm-up
        System.out.printf(Locale.ROOT, "first GPU call (upload %d x %d): %.1f ms%n", n, dims, (System.nanoTime() - up) / 1e6);
        for (int k : KS) {
          // CPU reference on a few queries: timing and the ground truth for the GPU's recall
          service.setEnabled(false);
          float[][] cpuBatch = slice(queries, 0, cpuQueries);
          long c0 = System.nanoTime();
          TopDocs[] cpu = KnnBatchSearcher.search(searcher, "vec", cpuBatch, k, null);
          double cpuMs = (System.nanoTime() - c0) / 1e6;
          service.setEnabled(true);
          rows.add(row(name, k, cpuQueries, "cpu-codec", cpuQueries / (cpuMs / 1e3), cpuMs, 1.0));
          if (service.gpuActive() == false) {
            continue; // no GPU: the CPU row above is all there is to measure
          }
          for (int batch : BATCHES) {
            float[][] b = slice(queries, 0, batch);
            int reps = batch <= 16 ? 30 : batch <= 1024 ? 7 : 3;
            double[] ms = new double[reps];
            TopDocs[] gpu = null;
            KnnBatchSearcher.search(searcher, "vec", b, k, null); // warm-up
            for (int r = 0; r < reps; r++) {
              // rotate the single-query batches over different queries
              float[][] qs = batch == 1 ? slice(queries, r, 1) : b;
              long s = System.nanoTime();
              TopDocs[] res = KnnBatchSearcher.search(searcher, "vec", qs, k, null);
              ms[r] = (System.nanoTime() - s) / 1e6;
              if (r == 0 && batch != 1) {
                gpu = res;
              }
            }
            Arrays.sort(ms);
            double median = ms[reps / 2];
            double recall = gpu == null ? Double.NaN : recall(cpu, gpu, Math.min(cpuQueries, batch), k);
            rows.add(row(name, k, batch, "gpu-codec", batch / (median / 1e3), median, recall));
          }
        }
      }
    } finally {
      IOUtils.rm(indexPath);
    }
    System.out.println("GPU stats: " + service.stats());
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("flat-" + name + ".csv")))) {
      rows.forEach(w::println);
    }
    System.out.println();
    System.out.printf(Locale.ROOT, "%-12s %4s %6s %-10s %14s %12s %8s%n", "dataset", "k", "batch", "path", "queries/s", "median ms", "recall");
    for (String r : rows.subList(1, rows.size())) {
      String[] c = r.split(",");
      System.out.printf(
          Locale.ROOT, "%-12s %4s %6s %-10s %14.0f %12.3f %8s%n", c[0], c[1], c[2], c[3], Double.parseDouble(c[4]), Double.parseDouble(c[5]), c[6]);
    }
    GpuSearchServices.closeDefault();
  }

  private static String row(String name, int k, int batch, String path, double qps, double ms, double recall) {
    return String.format(Locale.ROOT, "%s,%d,%d,%s,%.1f,%.4f,%.4f", name, k, batch, path, qps, ms, recall);
  }

  /** Fraction of the CPU's top-k documents that the GPU returned, over the first queries. */
  private static double recall(TopDocs[] cpu, TopDocs[] gpu, int queries, int k) {
    long found = 0, total = 0;
    for (int q = 0; q < queries; q++) {
      Set<Integer> expected = new HashSet<>();
      for (ScoreDoc sd : cpu[q].scoreDocs) {
        expected.add(sd.doc);
      }
      for (ScoreDoc sd : gpu[q].scoreDocs) {
        if (expected.contains(sd.doc)) {
          found++;
        }
      }
      total += Math.min(k, cpu[q].scoreDocs.length);
    }
    return total == 0 ? 1.0 : (double) found / total;
  }

  private static long index(Directory dir, float[][] base) throws IOException {
    FieldType type =
        GpuVectorsFormat.markField(
            KnnFloatVectorField.createFieldType(base[0].length, VectorSimilarityFunction.EUCLIDEAN), IndexType.FLAT);
    IndexWriterConfig config = new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setRAMBufferSizeMB(1024);
    long start = System.nanoTime();
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      int step = Math.max(1, base.length / 10);
      for (int i = 0; i < base.length; i++) {
        Document doc = new Document();
        doc.add(new KnnFloatVectorField("vec", base[i], type));
        writer.addDocument(doc);
        if ((i + 1) % step == 0) {
          System.out.printf(Locale.ROOT, "  indexed %d / %d (%.0f s)%n", i + 1, base.length, seconds(start));
        }
      }
      writer.forceMerge(1);
    }
    return System.nanoTime() - start;
  }

  /** Rows generated per random stream by {@link #clustered} (the unit of its parallelism). */
  private static final int CLUSTERED_BLOCK_ROWS = 16_384;

  /**
   * Gaussian clusters: 1000 centres in [-1, 1]^dims (fixed), points at sigma 0.15 around them. Blocks of
   * {@link #CLUSTERED_BLOCK_ROWS} rows are generated in parallel, each from its own random stream seeded by
   * {@code seed} and the block's number, so the data depend on {@code seed} alone, not on the thread count
   * (10M x 128 in a few seconds on 16 cores).
   */
  static float[][] clustered(int count, int dims, long seed) {
    Random centresRandom = new Random(1234);
    int clusters = 1000;
    float[][] centres = new float[clusters][dims];
    for (float[] c : centres) {
      for (int d = 0; d < dims; d++) {
        c[d] = centresRandom.nextFloat() * 2 - 1;
      }
    }
    float[][] out = new float[count][];
    int blocks = (int) ((count + (long) CLUSTERED_BLOCK_ROWS - 1) / CLUSTERED_BLOCK_ROWS);
    IntStream.range(0, blocks).parallel().forEach(b -> {
      SplittableRandom random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + b);
      int end = (int) Math.min(count, (long) (b + 1) * CLUSTERED_BLOCK_ROWS);
      for (int i = b * CLUSTERED_BLOCK_ROWS; i < end; i++) {
        float[] c = centres[random.nextInt(clusters)];
        float[] v = new float[dims];
        for (int d = 0; d < dims; d++) {
          v[d] = c[d] + (float) random.nextGaussian() * 0.15f;
        }
        out[i] = v;
      }
    });
    return out;
  }

  static void writeRaw(Path path, float[][] rows) throws IOException {
    int dims = rows[0].length;
    ByteBuffer buffer = ByteBuffer.allocate(4 * dims * 4096).order(ByteOrder.LITTLE_ENDIAN);
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
      for (float[] row : rows) {
        if (buffer.remaining() < 4 * dims) {
          buffer.flip();
          while (buffer.hasRemaining()) {
            ch.write(buffer);
          }
          buffer.clear();
        }
        buffer.asFloatBuffer().put(row);
        buffer.position(buffer.position() + 4 * dims);
      }
      buffer.flip();
      while (buffer.hasRemaining()) {
        ch.write(buffer);
      }
    }
  }

  private static float[][] slice(float[][] rows, int from, int count) {
    return Arrays.copyOfRange(rows, from, from + count);
  }

  private static double seconds(long startNanos) {
    return (System.nanoTime() - startNanos) / 1e9;
  }
}
