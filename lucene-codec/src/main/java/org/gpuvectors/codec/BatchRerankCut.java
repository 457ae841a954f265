package org.gpuvectors.codec;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.gpuvectors.codec.gpu.DeviceMetric;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.RerankCut;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.ivf.IvfPqField;
import org.gpuvectors.cuda.SearchResult;

/**
 * The batch API's side of the cross-segment re-rank cut ({@link RerankCut}): one pass ({@link
 * GpuSearchService#searchAll}) holds the candidates of all of a field's segments for every query of the batch, so
 * the ivf_pq segments resident as their codes alone re-rank on the host only the best candidates over all of them
 * that a search of {@code numCandidates} re-ranks in one segment, and each at least its {@code numCandidates} best,
 * instead of that many each.
 */
final class BatchRerankCut {

  private BatchRerankCut() {}

  /**
   * Replaces, in {@code results}, those of the shares that the host re-ranks (ivf_pq resident as codes alone) by
   * their cut across segments, when there are at least two. The caller applies it to unfiltered batches only: a
   * filtered batch re-ranks each segment's own candidates, as a filtered query alone does.
   *
   * @param results per share its pass result (null: left to the CPU), in the order of {@code prepared}
   */
  static void apply(
      GpuSearchService service, List<GpuSegmentSearcher.Prepared> prepared, SearchResult[] results,
      int numCandidates) {
    List<Integer> codesOnly = new ArrayList<>();
    int factor = 0;
    for (int i = 0; i < prepared.size(); i++) {
      GpuSegmentSearcher.Prepared p = prepared.get(i);
      if (results[i] != null && GpuSegmentSearcher.reranksOnHost(p.index(), p.rerankOnGpu())) {
        codesOnly.add(i);
        // one field's segments have one factor; the largest, should a mapping have changed it, cuts least
        factor = Math.max(factor, ((IvfPqField) p.index()).rerankFactor());
      }
    }
    if (codesOnly.size() < 2) {
      return;
    }
    boolean largestFirst = DeviceMetric.of(Metric.of(prepared.get(codesOnly.get(0)).similarity())).largestFirst();
    // a view of the array: the cut writes the shares' new results through it
    service.stats().recordRerankCut(RerankCut.cutAt(Arrays.asList(results), codesOnly,
        IvfPqField.rerankCandidates(factor, numCandidates), numCandidates, largestFirst));
  }
}
