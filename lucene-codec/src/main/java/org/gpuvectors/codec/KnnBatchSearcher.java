package org.gpuvectors.codec;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
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
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.ScoreMode;
import org.apache.lucene.search.Scorer;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopKnnCollector;
import org.apache.lucene.search.Weight;
import org.apache.lucene.util.BitSet;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.FixedBitSet;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.cuda.SearchResult;

/**
 * Searches many query vectors in one call over all segments of an index: the shape the GPU is best
 * at. All segments of a {@link GpuVectorsFormat} field answer the whole batch in one GPU pass
 * (segments the GPU cannot take, on the CPU); segments of other formats answer query by query. Per
 * query, the segments' hits are merged into the top {@code k} of the index.
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
    Objects.requireNonNull(field, "field");
    if (k < 1) {
      throw new IllegalArgumentException("k must be at least 1 but was [" + k + "]");
    }
    Weight filterWeight =
        filter == null
            ? null
            : searcher.createWeight(searcher.rewrite(filter), ScoreMode.COMPLETE_NO_SCORES, 1f);
    var leaves = searcher.getIndexReader().leaves();
    TopDocs[][] perLeaf = new TopDocs[queries.length][leaves.size()];
    KnnCollector[][] collectors = new KnnCollector[leaves.size()][queries.length];
    GpuSearchService service = GpuSearchServices.current();
    // our segments' GPU shares go in one pass together; the others (and any the GPU cannot take) run here
    List<GpuSegmentSearcher.Prepared> prepared = new ArrayList<>();
    List<Integer> preparedLeaf = new ArrayList<>();
    List<GpuVectorsReader> preparedReader = new ArrayList<>();
    List<AcceptDocs> accepts = new ArrayList<>();
    for (int l = 0; l < leaves.size(); l++) {
      LeafReaderContext leaf = leaves.get(l);
      for (int q = 0; q < queries.length; q++) {
        collectors[l][q] = new TopKnnCollector(k, Integer.MAX_VALUE);
      }
      AcceptDocs accept = acceptDocs(leaf, filterWeight);
      accepts.add(accept);
      if (accept == null) {
        continue;
      }
      GpuVectorsReader ours = gpuVectorsReader(leaf.reader(), field);
      if (ours == null) {
        for (int q = 0; q < queries.length; q++) {
          leaf.reader().searchNearestVectors(field, queries[q], collectors[l][q], accept);
        }
        continue;
      }
      GpuSegmentSearcher.Prepared p = ours.prepareBatch(service, field, queries, collectors[l], accept);
      if (p == null) {
        ours.searchBatchOnCpu(field, queries, collectors[l], accept);
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
      for (int i = 0; i < prepared.size(); i++) {
        int l = preparedLeaf.get(i);
        if (results[i] != null) {
          GpuSegmentSearcher.collect(prepared.get(i), results[i]);
        } else {
          preparedReader.get(i).searchBatchOnCpu(field, queries, collectors[l], accepts.get(l));
        }
      }
    }
    for (int l = 0; l < leaves.size(); l++) {
      LeafReaderContext leaf = leaves.get(l);
      for (int q = 0; q < queries.length; q++) {
        TopDocs topDocs = collectors[l][q].topDocs();
        for (ScoreDoc scoreDoc : topDocs.scoreDocs) {
          scoreDoc.doc += leaf.docBase;
        }
        perLeaf[q][l] = topDocs;
      }
    }
    TopDocs[] results = new TopDocs[queries.length];
    for (int q = 0; q < queries.length; q++) {
      results[q] = TopDocs.merge(k, perLeaf[q]);
    }
    return results;
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
