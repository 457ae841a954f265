package org.gpuvectors.codec;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.stream.IntStream;
import org.apache.lucene.codecs.KnnVectorsReader;
import org.apache.lucene.codecs.perfield.PerFieldKnnVectorsFormat;
import org.apache.lucene.index.CodecReader;
import org.apache.lucene.index.FilterLeafReader;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnCollector;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreMode;
import org.apache.lucene.search.Scorer;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopKnnCollector;
import org.apache.lucene.search.Weight;
import org.apache.lucene.util.BitSet;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.FixedBitSet;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.cuda.SearchResult;

/**
 * Searches many query vectors in one call over all segments of an index: the shape the GPU is best
 * at. All segments of a {@link GpuVectorsFormat} field answer the whole batch in one GPU pass
 * (segments the GPU cannot take, on the CPU); segments of other formats answer query by query. Per
 * query, the segments' hits are merged into the top {@code k} of the index, as Lucene merges them
 * ({@link TopDocs#merge(int, TopDocs[])}): the GPU's results go straight into each segment's hits
 * ({@link SegmentHits}), with no collector per query and no copy of the queries.
 *
 * <pre>{@code
 * TopDocs[] hits = KnnBatchSearcher.search(searcher, "embedding", queries, 10, null);
 * }</pre>
 */
public final class KnnBatchSearcher {

  private KnnBatchSearcher() {}

  /**
   * Returns the {@code k} nearest documents of each query, best first, with Lucene's scores.
   *
   * @param filter only documents matching it are returned; null for all (deleted documents never)
   */
  public static TopDocs[] search(
      IndexSearcher searcher, String field, float[][] queries, int k, Query filter)
      throws IOException {
    return search(searcher, field, queries, k, k, filter);
  }

  /**
   * Returns the {@code k} nearest documents of each query, found as Elasticsearch's {@code knn} finds them with
   * {@code num_candidates}: each segment is searched for its {@code numCandidates} nearest (the approximate index
   * types' effort: lists probed, candidates re-ranked, search width), and each query keeps the best {@code k} of all
   * segments. With {@code numCandidates == k} this is Lucene's search for k. Only each segment's first k hits become
   * {@link TopDocs}: the rest could not be among a query's k best.
   *
   * @param numCandidates at least {@code k}
   * @param filter only documents matching it are returned; null for all (deleted documents never)
   */
  public static TopDocs[] search(
      IndexSearcher searcher, String field, float[][] queries, int k, int numCandidates, Query filter)
      throws IOException {
    return search(searcher, field, new FloatTargets(queries), k, numCandidates, filter);
  }

  /**
   * As {@link #search(IndexSearcher, String, float[][], int, int, Query)} for a {@code byte} or {@code bit} field:
   * the segments where the field has an approximate structure answer the batch in one GPU pass (in the float view
   * the structure was built in, every candidate scored as the element type scores it); flat segments answer query by
   * query, as a single byte query is searched (on the GPU at the element type's size where one can serve it).
   */
  public static TopDocs[] search(
      IndexSearcher searcher, String field, byte[][] queries, int k, int numCandidates, Query filter)
      throws IOException {
    return search(searcher, field, new ByteTargets(queries), k, numCandidates, filter);
  }

  private static TopDocs[] search(
      IndexSearcher searcher, String field, Targets queries, int k, int numCandidates, Query filter)
      throws IOException {
    Objects.requireNonNull(field, "field");
    if (k < 1) {
      throw new IllegalArgumentException("k must be at least 1 but was [" + k + "]");
    }
    if (numCandidates < k) {
      throw new IllegalArgumentException(
          "numCandidates must be at least k [" + k + "] but was [" + numCandidates + "]");
    }
    Weight filterWeight =
        filter == null
            ? null
            : searcher.createWeight(searcher.rewrite(filter), ScoreMode.COMPLETE_NO_SCORES, 1f);
    var leaves = searcher.getIndexReader().leaves();
    int numQueries = queries.count();
    // per leaf the batch's hits there (null: nothing to search); no collector per query where the GPU answers
    SegmentHits[] perLeaf = new SegmentHits[leaves.size()];
    int[] docBases = new int[leaves.size()];
    GpuSearchService service = GpuSearchServices.current();
    // our segments' GPU shares go in one pass together; the others (and any the GPU cannot take) run here
    List<GpuSegmentSearcher.Prepared> prepared = new ArrayList<>();
    List<Integer> preparedLeaf = new ArrayList<>();
    List<GpuVectorsReader> preparedReader = new ArrayList<>();
    AcceptDocs[] accepts = new AcceptDocs[leaves.size()];
    for (int l = 0; l < leaves.size(); l++) {
      LeafReaderContext leaf = leaves.get(l);
      docBases[l] = leaf.docBase;
      AcceptDocs accept = acceptDocs(leaf, filterWeight);
      accepts[l] = accept;
      if (accept == null) {
        continue;
      }
      GpuVectorsReader ours = gpuVectorsReader(leaf.reader(), field);
      if (ours == null) {
        TopKnnCollector[] collectors = collectors(numQueries, numCandidates);
        for (int q = 0; q < numQueries; q++) {
          queries.searchLeaf(leaf.reader(), field, q, collectors[q], accept);
        }
        perLeaf[l] = SegmentHits.of(collectors, k);
        continue;
      }
      // the queries as they are: every segment's share reads the caller's arrays, none copies them
      GpuSegmentSearcher.Prepared p = queries.prepare(ours, service, field, numCandidates, accept);
      if (p == null) {
        perLeaf[l] = searchWithoutPass(ours, field, queries, numCandidates, k, accept);
      } else if (p.k() > 0) {
        prepared.add(p);
        preparedLeaf.add(l);
        preparedReader.add(ours);
      }
    }
    if (prepared.isEmpty() == false) {
      List<GpuSearchService.Request> requests = new ArrayList<>(prepared.size());
      for (GpuSegmentSearcher.Prepared p : prepared) {
        requests.add(p.request());
      }
      SearchResult[] results = service.searchAll(requests);
      if (filter == null) {
        BatchRerankCut.apply(service, prepared, results, numCandidates);
      }
      for (int i = 0; i < prepared.size(); i++) {
        int l = preparedLeaf.get(i);
        if (results[i] != null) {
          GpuSegmentSearcher.Prepared p = prepared.get(i);
          GpuSegmentSearcher.recordServed(service, p, results[i]);
          perLeaf[l] = GpuSegmentSearcher.hits(p, results[i], k);
          if (p.compactCopy()) {
            redoUncertified(service, preparedReader.get(i), field, p, results[i], perLeaf[l], numCandidates, k,
                accepts[l]);
          }
        } else {
          perLeaf[l] = searchWithoutPass(preparedReader.get(i), field, queries, numCandidates, k, accepts[l]);
        }
      }
    }
    return merge(perLeaf, docBases, numQueries, k);
  }

  /** A batch's query vectors of one encoding, and how each step searches them. */
  private sealed interface Targets permits FloatTargets, ByteTargets {
    int count();

    /** Query {@code q} through another format's reader. */
    void searchLeaf(LeafReader reader, String field, int q, KnnCollector collector, AcceptDocs accept)
        throws IOException;

    /** Our segment's GPU share of the batch, or null (nothing to search, or the CPU's). */
    GpuSegmentSearcher.Prepared prepare(
        GpuVectorsReader reader, GpuSearchService service, String field, int numCandidates, AcceptDocs accept)
        throws IOException;

    /** The batch over our segment outside the shared pass (float queries on the CPU; byte queries one by one). */
    void searchWithoutPass(GpuVectorsReader reader, String field, KnnCollector[] collectors, AcceptDocs accept)
        throws IOException;
  }

  private record FloatTargets(float[][] queries) implements Targets {
    @Override
    public int count() {
      return queries.length;
    }

    @Override
    public void searchLeaf(LeafReader reader, String field, int q, KnnCollector collector, AcceptDocs accept)
        throws IOException {
      reader.searchNearestVectors(field, queries[q], collector, accept);
    }

    @Override
    public GpuSegmentSearcher.Prepared prepare(
        GpuVectorsReader reader, GpuSearchService service, String field, int numCandidates, AcceptDocs accept)
        throws IOException {
      return reader.prepareBatch(service, field, queries, numCandidates, accept);
    }

    @Override
    public void searchWithoutPass(GpuVectorsReader reader, String field, KnnCollector[] collectors, AcceptDocs accept)
        throws IOException {
      reader.searchBatchOnCpu(field, queries, collectors, accept);
    }
  }

  private record ByteTargets(byte[][] queries) implements Targets {
    @Override
    public int count() {
      return queries.length;
    }

    @Override
    public void searchLeaf(LeafReader reader, String field, int q, KnnCollector collector, AcceptDocs accept)
        throws IOException {
      reader.searchNearestVectors(field, queries[q], collector, accept);
    }

    @Override
    public GpuSegmentSearcher.Prepared prepare(
        GpuVectorsReader reader, GpuSearchService service, String field, int numCandidates, AcceptDocs accept)
        throws IOException {
      return reader.prepareByteBatch(service, field, queries, numCandidates, accept);
    }

    @Override
    public void searchWithoutPass(GpuVectorsReader reader, String field, KnnCollector[] collectors, AcceptDocs accept)
        throws IOException {
      reader.searchByteBatch(field, queries, collectors, accept);
    }
  }

  /**
   * Batches of at least this many queries merge their segments' hits on the common fork-join pool
   * (a query's merge builds its TopDocs: ~0.2 us a hit).
   */
  static final int PARALLEL_MERGE_QUERIES = 2048;

  private static final int QUERIES_PER_TASK = 512;

  /** Per query the top k of all segments, as {@link TopDocs#merge(int, TopDocs[])} would merge them. */
  private static TopDocs[] merge(SegmentHits[] perLeaf, int[] docBases, int numQueries, int k) {
    TopDocs[] results = new TopDocs[numQueries];
    if (numQueries < PARALLEL_MERGE_QUERIES) {
      for (int q = 0; q < numQueries; q++) {
        results[q] = SegmentHits.merge(perLeaf, docBases, q, k);
      }
      return results;
    }
    IntStream.range(0, (numQueries + QUERIES_PER_TASK - 1) / QUERIES_PER_TASK).parallel().forEach(t -> {
      for (int q = t * QUERIES_PER_TASK; q < Math.min(numQueries, (t + 1) * QUERIES_PER_TASK); q++) {
        results[q] = SegmentHits.merge(perLeaf, docBases, q, k);
      }
    });
    return results;
  }

  /**
   * The queries of a compact copy's share whose candidates could not be proven to hold the exact top k, searched
   * again on the CPU, their hits replaced (each counted as a fallback).
   */
  private static void redoUncertified(
      GpuSearchService service, GpuVectorsReader reader, String field, GpuSegmentSearcher.Prepared p,
      SearchResult result, SegmentHits hits, int numCandidates, int k, AcceptDocs accept) throws IOException {
    int[] redo = GpuSegmentSearcher.uncertifiedQueries(p, result, hits, k, reader.maxNorm(field));
    service.stats().recordCompactCopyQueries(p.numQueries() - redo.length);
    if (redo.length == 0) {
      return;
    }
    float[][] queries = new float[redo.length][];
    for (int i = 0; i < redo.length; i++) {
      queries[i] = p.queries()[redo[i]];
    }
    TopKnnCollector[] collectors = collectors(redo.length, numCandidates);
    reader.searchBatchOnCpu(field, queries, collectors, accept);
    for (int i = 0; i < redo.length; i++) {
      hits.replace(redo[i], collectors[i]);
      service.countFallback(FallbackReason.UNCERTIFIED_CANDIDATES);
    }
  }

  /** The batch over one of our segments outside the shared pass, through one collector of numCandidates per query. */
  private static SegmentHits searchWithoutPass(GpuVectorsReader reader, String field, Targets queries,
                                               int numCandidates, int k, AcceptDocs accept) throws IOException {
    TopKnnCollector[] collectors = collectors(queries.count(), numCandidates);
    queries.searchWithoutPass(reader, field, collectors, accept);
    return SegmentHits.of(collectors, k);
  }

  private static TopKnnCollector[] collectors(int numQueries, int k) {
    TopKnnCollector[] collectors = new TopKnnCollector[numQueries];
    for (int q = 0; q < numQueries; q++) {
      collectors[q] = new TopKnnCollector(k, Integer.MAX_VALUE);
    }
    return collectors;
  }

  /** Live documents that match the filter, or null when none can match in this segment. */
  private static AcceptDocs acceptDocs(LeafReaderContext leaf, Weight filterWeight)
      throws IOException {
    Bits liveDocs = leaf.reader().getLiveDocs();
    int maxDoc = leaf.reader().maxDoc();
    if (filterWeight == null) {
      return AcceptDocs.fromLiveDocs(liveDocs, maxDoc);
    }
    Scorer scorer = filterWeight.scorer(leaf);
    if (scorer == null) {
      return null;
    }
    BitSet matching = BitSet.of(scorer.iterator(), maxDoc);
    if (liveDocs != null) {
      FixedBitSet live = new FixedBitSet(maxDoc);
      for (int doc = matching.nextSetBit(0);
          doc != DocIdSetIterator.NO_MORE_DOCS;
          doc = doc + 1 < maxDoc ? matching.nextSetBit(doc + 1) : DocIdSetIterator.NO_MORE_DOCS) {
        if (liveDocs.get(doc)) {
          live.set(doc);
        }
      }
      matching = live;
    }
    return AcceptDocs.fromLiveDocs(matching, maxDoc);
  }

  /** Our reader of {@code field} in this segment, or null if another format holds it. */
  static GpuVectorsReader gpuVectorsReader(LeafReader reader, String field) {
    LeafReader unwrapped = FilterLeafReader.unwrap(reader);
    if (!(unwrapped instanceof CodecReader codecReader)) {
      return null;
    }
    KnnVectorsReader vectors = codecReader.getVectorReader();
    if (vectors instanceof PerFieldKnnVectorsFormat.FieldsReader perField) {
      vectors = perField.getFieldReader(field);
    }
    return vectors instanceof GpuVectorsReader ours ? ours : null;
  }
}
