package org.gpuvectors.codec;

import static org.gpuvectors.codec.IndexBuildBenchmark.median;

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
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopKnnCollector;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.IOUtils;
import org.gpuvectors.codec.gpu.GpuSearchServices;

/**
 * The CPU search of a {@code graph} field, one thread, one query at a time (a walk starts from the entry layer: a few
 * heads and the entry points grouped under the best of them): microseconds a query, vectors scored a query (the
 * collector's visited count) and recall@10 against brute force, on Fashion-MNIST (60k x 784, the first 2,000 test
 * images as queries), one index per search width (built once, on the GPU when there is one), {@code reps} rounds;
 * medians. The peer: Lucene HNSW (m 16, beam 100, built from every core) searched the same way in the same
 * JVM, its candidates (ef) set to each width.
 *
 * <p>Args: {@code FMNIST_DIR OUT [widths=16,64] [reps=3]}. Output: a table on stdout and {@code
 * OUT/graph-cpu-search.csv}.
 */
public final class GraphCpuSearchBenchmark {

  private static final int K = 10;
  private static final int QUERIES = 2000;

  public static void main(String[] args) throws Exception {
    Path data = Path.of(args[0]);
    Path out = Path.of(args[1]);
    int[] widths = Arrays.stream((args.length > 2 ? args[2] : "16,64").split(",")).mapToInt(Integer::parseInt).toArray();
    int reps = args.length > 3 ? Integer.parseInt(args[3]) : 3;
    Files.createDirectories(out);
    float[][] train = FashionMnistBenchmark.readImages(data.resolve("train-images-idx3-ubyte.gz"));
    float[][] queries =
        Arrays.copyOf(FashionMnistBenchmark.readImages(data.resolve("t10k-images-idx3-ubyte.gz")), QUERIES);
    int[][] truth = FashionMnistBenchmark.groundTruth(train, queries);
    // the searches run on the CPU whatever the machine has
    GpuSearchServices.current().setEnabled(false);
    List<String> rows = new ArrayList<>();
    for (int width : widths) {
      Path path = Files.createTempDirectory("gv-graph-cpu-search");
      try (Directory dir = FSDirectory.open(path)) {
        GpuSearchServices.current().setEnabled(true); // the build on the GPU when there is one
        build(dir, train, width);
        GpuSearchServices.current().setEnabled(false);
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          LeafReader leaf = reader.leaves().get(0).reader();
          double[] micros = new double[reps];
          double scored = 0;
          double recall = 0;
          for (int r = 0; r < reps; r++) {
            TopDocs[] results = new TopDocs[QUERIES];
            long visited = 0;
            long start = System.nanoTime();
            for (int q = 0; q < QUERIES; q++) {
              TopKnnCollector collector = new TopKnnCollector(K, Integer.MAX_VALUE);
              leaf.searchNearestVectors("vec", queries[q], collector, AcceptDocs.fromLiveDocs(null, leaf.maxDoc()));
              visited += collector.visitedCount();
              results[q] = collector.topDocs();
            }
            micros[r] = (System.nanoTime() - start) / 1e3 / QUERIES;
            scored = visited / (double) QUERIES;
            recall = FashionMnistBenchmark.recall(results, truth);
            System.out.printf(Locale.ROOT, "width %d, round %d: %.1f us a query, %.0f vectors scored, recall@10 %.4f%n",
                width, r + 1, micros[r], scored, recall);
          }
          rows.add(String.format(Locale.ROOT, "%d,%s,%.1f,%.0f,%.4f", width, "entry-layer", median(micros), scored,
              recall));
        }
      } finally {
        IOUtils.rm(path);
      }
    }
    rows.addAll(hnsw(train, queries, truth, widths, reps));
    String header = "width,start,us_per_query,vectors_scored,recall@10";
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("graph-cpu-search.csv")))) {
      w.println(header);
      rows.forEach(w::println);
    }
    System.out.println();
    System.out.println(header);
    rows.forEach(System.out::println);
    GpuSearchServices.closeDefault();
  }

  /** Lucene HNSW's rows: one index, searched one query at a time on one thread at ef = each width, medians. */
  private static List<String> hnsw(float[][] train, float[][] queries, int[][] truth, int[] widths, int reps)
      throws Exception {
    List<String> rows = new ArrayList<>();
    int threads = Runtime.getRuntime().availableProcessors();
    Path path = Files.createTempDirectory("gv-graph-cpu-search-hnsw");
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try (Directory dir = FSDirectory.open(path)) {
      Codec codec = KnnGraphBenchmark.hnswCodec(threads, pool);
      FieldType type = KnnFloatVectorField.createFieldType(train[0].length, VectorSimilarityFunction.EUCLIDEAN);
      System.out.printf(Locale.ROOT, "Lucene HNSW built in %.1f s%n",
          KnnGraphBenchmark.buildConcurrently(dir, codec, type, train, threads));
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        LeafReader leaf = reader.leaves().get(0).reader();
        // documents were added from several threads: the "id" doc value is the vector's position
        int[] idOf = new int[leaf.maxDoc()];
        NumericDocValues ids = leaf.getNumericDocValues("id");
        for (int doc = ids.nextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = ids.nextDoc()) {
          idOf[doc] = (int) ids.longValue();
        }
        for (int width : widths) {
          double[] micros = new double[reps];
          double scored = 0;
          double recall = 0;
          for (int r = 0; r < reps; r++) {
            TopDocs[] results = new TopDocs[queries.length];
            long visited = 0;
            long start = System.nanoTime();
            for (int q = 0; q < queries.length; q++) {
              TopKnnCollector collector = new TopKnnCollector(width, Integer.MAX_VALUE);
              leaf.searchNearestVectors("vec", queries[q], collector, AcceptDocs.fromLiveDocs(null, leaf.maxDoc()));
              visited += collector.visitedCount();
              TopDocs hits = collector.topDocs();
              ScoreDoc[] top = Arrays.copyOf(hits.scoreDocs, Math.min(K, hits.scoreDocs.length));
              for (int i = 0; i < top.length; i++) {
                top[i] = new ScoreDoc(idOf[top[i].doc], top[i].score);
              }
              results[q] = new TopDocs(hits.totalHits, top);
            }
            micros[r] = (System.nanoTime() - start) / 1e3 / queries.length;
            scored = visited / (double) queries.length;
            recall = FashionMnistBenchmark.recall(results, truth);
            System.out.printf(Locale.ROOT, "Lucene HNSW ef %d, round %d: %.1f us a query, %.0f vectors scored, "
                + "recall@10 %.4f%n", width, r + 1, micros[r], scored, recall);
          }
          rows.add(String.format(Locale.ROOT, "%d,lucene-hnsw-ef,%.1f,%.0f,%.4f", width, median(micros), scored, recall));
        }
      }
    } finally {
      pool.shutdown();
      IOUtils.rm(path);
    }
    return rows;
  }

  /** One graph segment of the vectors: one flush (the RAM buffer holds them all), search width {@code width}. */
  private static void build(Directory dir, float[][] vectors, int width) throws Exception {
    FieldType type = GpuVectorsFormat.markField(
        KnnFloatVectorField.createFieldType(vectors[0].length, VectorSimilarityFunction.EUCLIDEAN),
        new IndexParams(IndexType.GRAPH, Map.of(IndexParams.SEARCH_WIDTH, width)));
    long start = System.nanoTime();
    try (IndexWriter writer = new IndexWriter(dir, new IndexWriterConfig().setCodec(new GpuVectorsCodec())
        .setRAMBufferSizeMB(1024))) {
      for (float[] v : vectors) {
        Document doc = new Document();
        doc.add(new KnnFloatVectorField("vec", v, type));
        writer.addDocument(doc);
      }
      writer.forceMerge(1);
    }
    System.out.printf(Locale.ROOT, "graph of search width %d built in %.1f s%n", width, (System.nanoTime() - start) / 1e9);
  }
}
