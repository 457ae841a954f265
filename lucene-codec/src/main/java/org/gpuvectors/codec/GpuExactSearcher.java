package org.gpuvectors.codec;

import java.io.IOException;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.KnnCollector;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.cuda.SearchResult;

/**
 * Exact k-NN search of one segment field on the GPU: the GPU counterpart of {@link
 * FlatExactSearcher}, with the same inputs and the same scores (Lucene's similarity formulas
 * applied to the distances the kernels return).
 *
 * <p>Accepted documents (filters, deletions) become an accept mask over vector ordinals that the
 * kernels apply ({@link AcceptMasks}). A collector whose visit limit is below the number of accepted
 * vectors is left to the CPU path, which terminates early exactly as Lucene expects (Lucene then
 * runs its own exact search).
 */
final class GpuExactSearcher {

  private GpuExactSearcher() {}

  /**
   * Searches a batch of queries on the GPU (batched there with concurrent searches).
   *
   * @return false when the CPU must run this search instead (nothing was collected)
   */
  static boolean search(
      GpuSearchService service,
      Object segment,
      String field,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      float[][] queries,
      KnnCollector[] collectors,
      AcceptDocs accept,
      AcceptMasks masks)
      throws IOException {
    int k = 0;
    for (KnnCollector collector : collectors) {
      k = Math.max(k, collector.k());
    }
    int requestedK = k;
    if (service.canServe(k) == false) {
      return false; // before the mask: without a GPU, building it would be wasted work
    }
    AcceptMasks.Mask accepted = masks.of(field, accept, vectors);
    for (KnnCollector collector : collectors) {
      if (accepted.count() > collector.visitLimit()) {
        service.countFallback(FallbackReason.VISIT_LIMIT);
        return false;
      }
    }
    k = Math.min(k, accepted.count());
    if (k == 0) {
      return true; // nothing accepted, or nothing asked for: no hits
    }
    int dims = vectors.dimension();
    float[] rows;
    if (queries.length == 1) {
      rows = queries[0]; // read, never written: the batch copies what it sends
    } else {
      rows = new float[queries.length * dims];
      for (int q = 0; q < queries.length; q++) {
        System.arraycopy(queries[q], 0, rows, q * dims, dims);
      }
    }
    // one unfiltered query: the service may search the index's other segments for it in the same pass
    boolean speculative = queries.length == 1 && accepted.standing();
    SearchResult result =
        service.search(
            segment, field, vectors, similarity, rows, queries.length, k, accepted.bits(), speculative,
            accepted.token(), requestedK);
    if (result == null) {
      return false;
    }
    for (int q = 0; q < queries.length; q++) {
      KnnCollector collector = collectors[q];
      collector.incVisitedCount(accepted.count());
      int hits = Math.min(result.count(q), collector.k());
      for (int i = 0; i < hits; i++) {
        int doc = vectors.ordToDoc(result.id(q, i));
        collector.collect(doc, score(similarity, result.distance(q, i)));
      }
    }
    return true;
  }

  /** Lucene's score for a raw kernel distance (squared L2, or inner product). */
  static float score(VectorSimilarityFunction similarity, float distance) {
    return switch (similarity) {
      case EUCLIDEAN -> 1 / (1 + Math.max(distance, 0f));
      case DOT_PRODUCT, COSINE -> Math.max((1 + distance) / 2, 0);
      case MAXIMUM_INNER_PRODUCT -> VectorUtil.scaleMaxInnerProductScore(distance);
    };
  }
}
