package org.gpuvectors.codec;

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
import java.util.concurrent.Future;
import java.util.stream.IntStream;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.SegmentReader;
import org.apache.lucene.index.TieredMergePolicy;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.gpuvectors.codec.graph.GraphField;

/**
 * Recall of a {@code graph} field at an index's natural segments and after a force-merge, on the CPU, and of each
 * segment alone (its own top 10 by brute force, at k = 10, 30, 64, 100) with its size, origin and entry points: how
 * the recall loss at Elasticsearch's natural segments was found (docs/notes/BENCHMARKS.md). Not a test: a program.
 *
 * <pre>
 * java ... org.gpuvectors.codec.NaturalSegmentsRecallProbe N THREADS RAM_MB CLUSTERS [es|uniform-centres] [SIZES]
 * </pre>
 *
 * N vectors of 128 dimensions in CLUSTERS Gaussian clusters ({@code es}: bench_es.py's shape, centres N(0, 1) and
 * 0.35 noise; else FlatSearchBenchmark's, centres uniform in [-1, 1] and 0.15 noise), 200 queries from the same
 * clusters, k = 10 of num_candidates 100. Without SIZES: THREADS indexing threads, a RAM buffer of RAM_MB and
 * Lucene's TieredMergePolicy (Elasticsearch's way of loading); with SIZES (comma separated): one flushed segment per
 * size, no merges. Each document stores its vector's position for the ground truth.
 */
public final class NaturalSegmentsRecallProbe {
  public static void main(String[] args) throws Exception {
    int n = Integer.parseInt(args[0]);
    int threads = Integer.parseInt(args[1]);
    double ramMb = Double.parseDouble(args[2]);
    Path dirPath = Files.createTempDirectory("natrecall");
    int clusters = Integer.parseInt(args[3]);
    boolean es = args.length > 4 && args[4].equals("es");
    int[] sizes = args.length > 5 ? Arrays.stream(args[5].split(",")).mapToInt(Integer::parseInt).toArray() : null;
    float[][] base = clustered(n, clusters, 1, es);
    float[][] queries = clustered(200, clusters, 2, es);
    FieldType type = GpuVectorsFormat.markField(
        KnnFloatVectorField.createFieldType(128, VectorSimilarityFunction.EUCLIDEAN), IndexType.GRAPH);
    try (Directory dir = FSDirectory.open(dirPath)) {
      IndexWriterConfig config = new IndexWriterConfig().setCodec(new GpuVectorsCodec()).setRAMBufferSizeMB(ramMb)
          .setMergePolicy(sizes != null ? org.apache.lucene.index.NoMergePolicy.INSTANCE : new TieredMergePolicy());
      if (sizes != null) {
        try (IndexWriter writer = new IndexWriter(dir, config.setRAMBufferSizeMB(4096))) {
          int i = 0;
          for (int size : sizes) {
            for (int end = i + size; i < end; i++) {
              Document doc = new Document();
              doc.add(new KnnFloatVectorField("v", base[i], type));
              doc.add(new NumericDocValuesField("pos", i));
              writer.addDocument(doc);
            }
            writer.flush();
          }
          writer.commit();
          report("natural", dir, base, queries);
          writer.getConfig().setMergePolicy(new TieredMergePolicy());
          writer.forceMerge(1);
          writer.commit();
          report("merged", dir, base, queries);
        }
        return;
      }
      long t0 = System.nanoTime();
      try (IndexWriter writer = new IndexWriter(dir, config)) {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<?>> fs = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          int tt = t;
          fs.add(pool.submit(() -> {
            for (int i = tt; i < n; i += threads) {
              Document doc = new Document();
              doc.add(new KnnFloatVectorField("v", base[i], type));
              doc.add(new NumericDocValuesField("pos", i));
              writer.addDocument(doc);
            }
            return null;
          }));
        }
        for (Future<?> f : fs) {
          f.get();
        }
        pool.shutdown();
        writer.commit();
        System.out.printf(Locale.ROOT, "indexed in %.1f s%n", (System.nanoTime() - t0) / 1e9);
        report("natural", dir, base, queries);
        writer.forceMerge(1);
        writer.commit();
        report("merged", dir, base, queries);
      }
    }
  }

  static void report(String label, Directory dir, float[][] base, float[][] queries) throws Exception {
    try (DirectoryReader reader = DirectoryReader.open(dir)) {
      IndexSearcher searcher = new IndexSearcher(reader);
      int[] pos = new int[reader.maxDoc()];
      for (LeafReaderContext leaf : reader.leaves()) {
        NumericDocValues dv = leaf.reader().getNumericDocValues("pos");
        for (int d = dv.nextDoc(); d != NumericDocValues.NO_MORE_DOCS; d = dv.nextDoc()) {
          pos[leaf.docBase + d] = (int) dv.longValue();
        }
      }
      for (int nc : new int[] {100}) {
        System.out.printf(Locale.ROOT, "%s: %d segments, nc %d recall@10 %.4f%n", label, reader.leaves().size(), nc,
            recallAt10(searcher, nc, base, queries, pos, null));
      }
      // each leaf alone, k = 10 and k = 100 direct, against the leaf's own brute force
      for (LeafReaderContext leaf : reader.leaves()) {
        SegmentReader sr = (SegmentReader) leaf.reader();
        GraphField g = IvfTestSupport.reader(sr).graphField("v");
        int[] leafPos = new int[sr.maxDoc()];
        for (int d = 0; d < sr.maxDoc(); d++) leafPos[d] = pos[leaf.docBase + d];
        IndexSearcher one = new IndexSearcher(sr);
        StringBuilder sb = new StringBuilder();
        for (int k : new int[] {10, 30, 64, 100}) {
          sb.append(String.format(Locale.ROOT, " k%d=%.4f", k, recallAt10(one, k, base, queries, leafPos, leafPos)));
        }
        System.out.printf(Locale.ROOT, "  leaf %s size %d source %s graph %s seeds %d:%s%n", sr.getSegmentName(), sr.maxDoc(),
            sr.getSegmentInfo().info.getDiagnostics().get("source"), g == null ? "flat" : "graph",
            g == null ? 0 : g.seeds().length, sb);
      }
    }
  }

  /**
   * 128-d points around {@code clusters} centres: {@code es} as bench_es.py's generator (centres N(0, 1), points
   * centre + 0.35 N(0, 1)), else as FlatSearchBenchmark.clustered (centres uniform in [-1, 1), points centre +
   * 0.15 N(0, 1)).
   */
  static float[][] clustered(int count, int clusters, long seed, boolean es) {
    int dims = 128;
    java.util.Random centresRandom = new java.util.Random(es ? 7 : 1234);
    float[][] centres = new float[clusters][dims];
    for (float[] c : centres) {
      for (int d = 0; d < dims; d++) {
        c[d] = es ? (float) centresRandom.nextGaussian() : centresRandom.nextFloat() * 2 - 1;
      }
    }
    float noise = es ? 0.35f : 0.15f;
    java.util.Random random = new java.util.Random(seed);
    float[][] out = new float[count][dims];
    for (float[] v : out) {
      float[] c = centres[random.nextInt(clusters)];
      for (int d = 0; d < dims; d++) {
        v[d] = c[d] + (float) random.nextGaussian() * noise;
      }
    }
    return out;
  }

  /**
   * Mean recall@10 of {@code searcher}'s knn search at {@code k} over {@code queries}: its docs map to base positions
   * by {@code pos}, the truth is the brute force over {@code subset} of the base (null: all of it).
   */
  static double recallAt10(IndexSearcher searcher, int k, float[][] base, float[][] queries, int[] pos, int[] subset)
      throws java.io.IOException {
    double sum = 0;
    for (float[] q : queries) {
      Set<Integer> truth = truth(base, q, subset, 10);
      TopDocs td = searcher.search(new KnnFloatVectorQuery("v", q, k), k);
      int hit = 0;
      for (int i = 0; i < Math.min(10, td.scoreDocs.length); i++) {
        if (truth.contains(pos[td.scoreDocs[i].doc])) hit++;
      }
      sum += hit / 10.0;
    }
    return sum / queries.length;
  }

  static Set<Integer> truth(float[][] base, float[] q, int[] subset, int k) {
    int m = subset == null ? base.length : subset.length;
    long[] all = new long[m];
    for (int i = 0; i < m; i++) {
      int p = subset == null ? i : subset[i];
      float d = 0;
      for (int j = 0; j < q.length; j++) {
        float t = base[p][j] - q[j];
        d += t * t;
      }
      all[i] = ((long) Float.floatToIntBits(d) << 32) | p;
    }
    Arrays.sort(all);
    Set<Integer> s = new HashSet<>();
    for (int i = 0; i < k; i++) s.add((int) all[i]);
    return s;
  }
}
