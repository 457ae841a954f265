package org.gpuvectors.codec;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.IntStream;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LogDocMergePolicy;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.IOUtils;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.gpu.GpuSearchStats;

/**
 * Many concurrent single-query knn searches through Lucene (the way Elasticsearch sends them: one
 * {@link KnnFloatVectorQuery} per request, leaves run on a 16-thread search executor), against an
 * index left at several segments and then force-merged to one: how batching and one GPU pass over
 * all segments turn concurrency into throughput. Not a test: a program for docs/notes/BENCHMARKS.md.
 *
 * <pre>
 * java ... [-Dgv.bench.clients=1,16,64,256] [-Dgv.bench.layouts=natural,natural-per-segment,merged]
 *   [-Dgv.bench.profile=true: the measured searches inside the GPU profiler's range, for ncu --profile-from-start off]
 *     [-Dgv.bench.type=flat|ivf_flat|ivf_pq|graph] [-Dgv.bench.nc=NUM_CANDIDATES]
 *     org.gpuvectors.codec.ConcurrentSearchBenchmark N DIMS SEGMENTS OUT_DIR [SECONDS_PER_POINT] [K]
 * </pre>
 *
 * The field's index type defaults to {@code flat}; {@code gv.bench.nc} is the query's k as
 * Elasticsearch passes {@code num_candidates} to Lucene (default K), of which the top K are kept.
 *
 * Clustered data as {@link FlatSearchBenchmark} (same generator and seeds); k = 10; clients 1, 16,
 * 64, 256, unfiltered and with a 10 % term filter; recall@10 against a brute-force CPU oracle (200
 * queries); GPU batches and fallbacks from the service's stats. Writes {@code
 * OUT_DIR/concurrent-N-DIMS.csv}.
 */
public final class ConcurrentSearchBenchmark {

  private static int K = 10;
  private static final int[] CLIENTS =
      java.util.Arrays.stream(System.getProperty("gv.bench.clients", "1,16,64,256").split(",")).mapToInt(Integer::parseInt).toArray();
  private static final List<String> LAYOUTS =
      List.of(System.getProperty("gv.bench.layouts", "natural,natural-per-segment,merged").split(","));
  private static final int RECALL_QUERIES = 200;
  private static final IndexType TYPE = IndexType.fromName(System.getProperty("gv.bench.type", "flat"));
  /** -Dgv.bench.profile=true: the measured searches inside the GPU profiler's range (run under ncu / nsys). */
  private static final boolean PROFILE = Boolean.getBoolean("gv.bench.profile");
  /** Lucene's k: Elasticsearch's num_candidates; the top K of its hits are kept. */
  private static int numCandidates;

  public static void main(String[] args) throws Exception {
    int n = Integer.parseInt(args[0]);
    int dims = Integer.parseInt(args[1]);
    int segments = Integer.parseInt(args[2]);
    Path out = Path.of(args[3]);
    double seconds = args.length > 4 ? Double.parseDouble(args[4]) : 3;
    K = args.length > 5 ? Integer.parseInt(args[5]) : 10;
    numCandidates = Integer.getInteger("gv.bench.nc", K);
    System.out.printf(Locale.ROOT, "type %s, k %d, num_candidates %d%n", TYPE, K, numCandidates);
    Files.createDirectories(out);
    long t0 = System.nanoTime();
    float[][] base = FlatSearchBenchmark.clustered(n, dims, 42);
    float[][] queries = FlatSearchBenchmark.clustered(4096, dims, 7);
    System.out.printf(Locale.ROOT, "data %d x %d: %.1f s%n", n, dims, (System.nanoTime() - t0) / 1e9);
    t0 = System.nanoTime();
    int[][] truth = truth(base, queries, false);
    int[][] truthFiltered = truth(base, queries, true);
    System.out.printf(Locale.ROOT, "brute-force oracle (%d queries, CPU): %.1f s%n", RECALL_QUERIES, (System.nanoTime() - t0) / 1e9);

    GpuSearchService service = GpuSearchServices.current();
    System.out.println("GPU: " + (service.gpuActive() ? service.deviceName() : service.unusableReason()));
    List<String> rows = new ArrayList<>();
    rows.add("type,nc,layout,segments,filter,clients,queries_per_s,p50_ms,p99_ms,recall,gpu_searches,batches,mean_batch,segments_per_pass,fallbacks,pass_us,enqueue_us,wait_us");
    Path indexPath = Files.createTempDirectory("gv-concurrent");
    ExecutorService leafPool = Executors.newFixedThreadPool(16);
    try (Directory dir = FSDirectory.open(indexPath)) {
      long build = index(dir, base, segments);
      System.out.printf(Locale.ROOT, "index (%d segments): %.1f s%n", segments, build / 1e9);
      // natural segments with and without the one-pass search of a query's segments, then merged
      for (String layout : new String[] {"natural", "natural-per-segment", "merged"}) {
        if (LAYOUTS.contains(layout) == false && layout.equals("merged") == false) {
          continue;
        }
        service.setSpeculation(layout.equals("natural-per-segment") == false);
        if (layout.equals("merged")) {
          long m = System.nanoTime();
          // a log merge policy keeps the segments' order, so doc ids stay the vectors' positions
          try (IndexWriter w = new IndexWriter(dir, new IndexWriterConfig().setCodec(new GpuVectorsCodec())
              .setMergePolicy(new LogDocMergePolicy()))) {
            w.forceMerge(1);
          }
          System.out.printf(Locale.ROOT, "force-merge to 1 segment: %.1f s%n", (System.nanoTime() - m) / 1e9);
        }
        if (LAYOUTS.contains(layout) == false) {
          continue;
        }
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = new IndexSearcher(reader, leafPool);
          GpuWarmup.Result warm = GpuWarmup.warm(reader, service);
          System.out.printf(Locale.ROOT, "%s: %d segments, warm-up %d/%d resident in %.1f ms%n", layout,
              reader.leaves().size(), warm.resident(), warm.fields(), warm.nanos() / 1e6);
          long first = System.nanoTime();
          searcher.search(new KnnFloatVectorQuery("vec", queries[0], numCandidates), K);
          System.out.printf(Locale.ROOT, "  first query after warm-up: %.3f ms%n", (System.nanoTime() - first) / 1e6);
          for (boolean filtered : new boolean[] {false, true}) {
            Query filter = filtered ? new TermQuery(new Term("bucket", "3")) : null;
            double recall = recall(searcher, queries, filter, filtered ? truthFiltered : truth);
            for (int clients : CLIENTS) {
              GpuSearchStats s = service.stats();
              long gpu0 = s.gpuSearches(), b0 = s.batches(), bs0 = s.batchSearches(), g0 = s.batchGroups(), f0 = s.cpuFallbacks();
              long n0 = s.gpuNanos(), e0 = s.enqueueNanos(), w0 = s.waitNanos();
              if (PROFILE) {
                service.profilerRange(true); // under ncu --profile-from-start off: these searches only
              }
              double[] r = run(searcher, queries, filter, clients, seconds);
              if (PROFILE) {
                service.profilerRange(false);
              }
              long batches = s.batches() - b0;
              double perPass = Math.max(1, batches) * 1e3;
              String row = String.format(Locale.ROOT, "%s,%d,%s,%d,%.0f,%.3f,%.3f,%.4f,%d,%d,%.2f,%.2f,%d,%.1f,%.1f,%.1f", layout,
                  reader.leaves().size(), filtered ? "10%" : "none", clients, r[0], r[1], r[2], recall, s.gpuSearches() - gpu0,
                  batches, batches == 0 ? 0 : (s.batchSearches() - bs0) / (double) batches,
                  batches == 0 ? 0 : (s.batchGroups() - g0) / (double) batches, s.cpuFallbacks() - f0,
                  (s.gpuNanos() - n0) / perPass, (s.enqueueNanos() - e0) / perPass, (s.waitNanos() - w0) / perPass);
              row = TYPE + "," + numCandidates + "," + row;
              rows.add(row);
              System.out.println("  " + row);
            }
          }
        }
      }
    } finally {
      leafPool.shutdownNow();
      IOUtils.rm(indexPath);
    }
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("concurrent-" + n + "-" + dims + ".csv")))) {
      rows.forEach(w::println);
    }
    System.out.println("GPU stats: " + service.stats());
    GpuSearchServices.closeDefault();
  }

  private static long index(Directory dir, float[][] base, int segments) throws Exception {
    FieldType type = GpuVectorsFormat.markField(
        KnnFloatVectorField.createFieldType(base[0].length, VectorSimilarityFunction.EUCLIDEAN), TYPE);
    IndexWriterConfig config = new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setRAMBufferSizeMB(2048)
        .setMergePolicy(NoMergePolicy.INSTANCE);
    long start = System.nanoTime();
    int perSegment = (base.length + segments - 1) / segments;
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (int i = 0; i < base.length; i++) {
        Document doc = new Document();
        doc.add(new KnnFloatVectorField("vec", base[i], type));
        doc.add(new StringField("bucket", Integer.toString(i % 10), Field.Store.NO));
        writer.addDocument(doc);
        if ((i + 1) % perSegment == 0 || i + 1 == base.length) {
          writer.flush(); // one segment per slice, as a bulk load leaves them
          System.out.printf(Locale.ROOT, "  indexed %d / %d (%.0f s)%n", i + 1, base.length, (System.nanoTime() - start) / 1e9);
        }
      }
      writer.commit();
    }
    return System.nanoTime() - start;
  }

  /** Exact top-K doc ids (= vector positions) by squared L2, on all cores; the filter keeps i % 10 == 3. */
  private static int[][] truth(float[][] base, float[][] queries, boolean filtered) {
    int[][] out = new int[RECALL_QUERIES][];
    IntStream.range(0, RECALL_QUERIES).parallel().forEach(q -> {
      float[] query = queries[q];
      long[] best = new long[K]; // (distance bits << 32 | id), distances >= 0 so bits order as floats
      Arrays.fill(best, Long.MAX_VALUE);
      for (int i = 0; i < base.length; i++) {
        if (filtered && i % 10 != 3) {
          continue;
        }
        double d = 0;
        float[] v = base[i];
        for (int j = 0; j < v.length; j++) {
          double t = v[j] - query[j];
          d += t * t;
        }
        long key = ((long) Float.floatToIntBits((float) d) << 32) | i;
        if (key < best[K - 1]) {
          int at = K - 1;
          while (at > 0 && best[at - 1] > key) {
            best[at] = best[at - 1];
            at--;
          }
          best[at] = key;
        }
      }
      out[q] = Arrays.stream(best).mapToInt(x -> (int) x).toArray();
    });
    return out;
  }

  private static double recall(IndexSearcher searcher, float[][] queries, Query filter, int[][] truth) throws Exception {
    long hit = 0;
    for (int q = 0; q < RECALL_QUERIES; q++) {
      TopDocs td = searcher.search(new KnnFloatVectorQuery("vec", queries[q], numCandidates, filter), K);
      Set<Integer> expected = new HashSet<>();
      for (int id : truth[q]) {
        expected.add(id);
      }
      for (ScoreDoc sd : td.scoreDocs) {
        if (expected.contains(sd.doc)) { // doc ids = insertion order: one thread, no deletions, merges keep order
          hit++;
        }
      }
    }
    return hit / (double) (RECALL_QUERIES * K);
  }

  /** {queries/s, p50 ms, p99 ms} of {@code clients} threads searching back to back for {@code seconds}. */
  private static double[] run(IndexSearcher searcher, float[][] queries, Query filter, int clients, double seconds)
      throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    List<long[]> latencies = new ArrayList<>();
    long[] counts = new long[clients];
    Thread[] threads = new Thread[clients];
    for (int c = 0; c < clients; c++) {
      int client = c;
      long[] lat = new long[1 << 20];
      latencies.add(lat);
      threads[c] = new Thread(() -> {
        int i = client * 131;
        try {
          while (stop.get() == false) {
            long s = System.nanoTime();
            // a fresh array per search, as Elasticsearch parses one per request (the GPU service ties a
            // query's segments together by the array: a reused array must not look like one query)
            float[] q = queries[i % queries.length].clone();
            searcher.search(new KnnFloatVectorQuery("vec", q, numCandidates, filter), K);
            long e = System.nanoTime() - s;
            if (counts[client] < lat.length) {
              lat[(int) counts[client]] = e;
            }
            counts[client]++;
            i++;
          }
        } catch (Exception ex) {
          throw new RuntimeException(ex);
        }
      });
    }
    long start = System.nanoTime();
    for (Thread t : threads) {
      t.start();
    }
    Thread.sleep((long) (seconds * 1000));
    stop.set(true);
    for (Thread t : threads) {
      t.join(TimeUnit.SECONDS.toMillis(30));
    }
    double elapsed = (System.nanoTime() - start) / 1e9;
    long total = Arrays.stream(counts).sum();
    long[] all = new long[(int) Math.min(total, Integer.MAX_VALUE - 8)];
    int at = 0;
    for (int c = 0; c < clients; c++) {
      int m = (int) Math.min(counts[c], latencies.get(c).length);
      System.arraycopy(latencies.get(c), 0, all, at, m);
      at += m;
    }
    long[] sorted = Arrays.copyOf(all, at);
    Arrays.sort(sorted);
    return new double[] {total / elapsed, sorted[sorted.length / 2] / 1e6, sorted[(int) (sorted.length * 0.99)] / 1e6};
  }
}
