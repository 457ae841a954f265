package org.gpuvectors.codec.gpu;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.util.IOSupplier;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;

/**
 * Cross-segment speculation: Lucene searches an index's segments one by one, each with the same query vector; the
 * first of a field's segments to ask for an unfiltered query searches every resident segment of that field for it in
 * one GPU pass, and parks the other segments' results ({@link Speculations}) for when Lucene asks them. One pass over
 * all segments instead of one per segment, and each segment is asked for enough that Lucene's optimistic search
 * rarely needs a second pass ({@link #leafK}, {@link #fullK}). The pass holds the candidates of all its ivf_pq segments
 * resident as their codes alone, so those are cut to the best the query's k re-ranks over all of them ({@link
 * RerankCut}) before they are parked: the host re-ranks that many per query, not that many per segment.
 *
 * <p>Owns nothing on the device: the {@link GpuSearchService} that makes it lends it its residency (the resident
 * peers of a segment, and handles on them), its batcher, its stats, and two of its steps: {@code acquire} (a handle
 * on a segment field, uploaded if needed, or null with the fallback counted) and {@code gpuError} (a failed pass:
 * counted, sticky errors switch the GPU off). The service has decided that its GPU serves the search before asking.
 */
final class CrossSegmentSpeculation {

  private static final int MAX_GPU_K = GpuSearchService.MAX_GPU_K;

  /** The service's way to a handle on a segment field's device index (uploaded if needed), or null (fallback counted). */
  @FunctionalInterface
  interface Acquire {
    Residency.Handle acquire(
        Object segment, String field, FloatVectorValues vectors, VectorSimilarityFunction similarity,
        GpuStructure structure) throws IOException;
  }

  private final Residency residency;
  private final SearchBatcher batcher;
  private final GpuSearchStats stats;
  private final Acquire acquire;
  private final Consumer<Throwable> gpuError;
  private final Speculations speculations = new Speculations(1024);
  private volatile boolean enabled = true;

  CrossSegmentSpeculation(
      Residency residency, SearchBatcher batcher, GpuSearchStats stats, Acquire acquire,
      Consumer<Throwable> gpuError) {
    this.residency = residency;
    this.batcher = batcher;
    this.stats = stats;
    this.acquire = acquire;
    this.gpuError = gpuError;
  }

  /** Whether speculative searches go through the one-pass search of a query's segments (on by default). */
  boolean enabled() {
    return enabled;
  }

  /** Turns the one-pass search of a query's segments on or off (to measure both). */
  void setEnabled(boolean on) {
    this.enabled = on;
  }

  /**
   * One unfiltered query of a {@link GpuSegment} (the arguments of {@link GpuSearchService#search(Object, String,
   * FloatVectorValues, VectorSimilarityFunction, GpuStructure, int, float[][], int, int, long[], boolean, Object,
   * int)}): the result a pass that ran for the query before parked for this segment, or, when this segment is the
   * query's first to ask, the result of one pass over this segment and its resident peers, whose results it parks.
   *
   * @param alone this segment's search by itself, for a query whose pass did not compute it
   * @return the k best (ordinal, raw distance) pairs, or null when the CPU must do it (counted)
   */
  SearchResult search(
      GpuSegment segment,
      String field,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      GpuStructure structure,
      SearchParams params,
      float[][] queries,
      int k,
      long[] mask,
      Object token,
      int requestedK,
      IOSupplier<SearchResult> alone)
      throws IOException {
    Residency.Key key = new Residency.Key(segment, field);
    float[] query = queries[0];
    Speculations.Speculation mine = new Speculations.Speculation(query);
    Speculations.Speculation running = speculations.claim(query, mine);
    if (running != null) {
      Speculations.Taken parked = running.take(key, token, k, query, speculations.quiet());
      if (parked.result() != null) {
        stats.recordGpuSearch(1);
        stats.recordSpeculativeHit();
        return parked.result();
      }
      stats.recordSpeculativeMiss(parked.miss());
      // not computed for this segment (not resident then, a larger k, other deletions): search it now
      return alone.get();
    }
    try {
      return searchIndex(
          segment, key, vectors, similarity, structure, params, queries, k, mask, token, mine, requestedK);
    } finally {
      speculations.finish(mine); // whatever happened, segments waiting on it go on
    }
  }

  /**
   * One query over this segment and every resident peer of its index, in one pass. Every segment's
   * result is parked with the k the query may ask of any segment (see {@link #fullK}), this one's
   * too: Lucene's optimistic search asks some segments again with the full k.
   */
  private SearchResult searchIndex(
      GpuSegment segment,
      Residency.Key key,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      GpuStructure structure,
      SearchParams params,
      float[][] query,
      int k,
      long[] mask,
      Object token,
      Speculations.Speculation speculation,
      int requestedK)
      throws IOException {
    List<Residency.Handle> handles = new ArrayList<>();
    try {
      Residency.Handle own = acquire.acquire(key.segment(), key.field(), vectors, similarity, structure);
      if (own == null) {
        return null;
      }
      handles.add(own);
      List<Residency.Key> keys = new ArrayList<>();
      List<Object> tokens = new ArrayList<>();
      List<long[]> masks = new ArrayList<>();
      List<GpuSegment> segments = new ArrayList<>();
      keys.add(key);
      tokens.add(token);
      masks.add(mask);
      segments.add(segment);
      long totalDocs = segment.maxDoc();
      for (Residency.Key peer : residency.residentPeers(segment, key.field())) {
        Residency.Handle handle = residency.acquireResident(peer);
        if (handle == null) {
          continue;
        }
        handles.add(handle);
        GpuSegment peerSegment = (GpuSegment) peer.segment();
        GpuSegment.Standing standing = peerSegment.standing(peer.field());
        keys.add(peer);
        tokens.add(standing.token());
        masks.add(standing.mask());
        segments.add(peerSegment);
        totalDocs += peerSegment.maxDoc();
      }
      int queryK = Math.min(MAX_GPU_K, fullK(requestedK, segment.maxDoc() / (double) totalDocs));
      int parkK = Math.max(k, queryK);
      List<SearchBatcher.Search> searches = new ArrayList<>(keys.size());
      List<Integer> skipped = new ArrayList<>(); // peers the GPU cannot search with their own parameters
      for (int i = 0; i < keys.size(); i++) {
        DeviceIndex index = handles.get(i).index();
        // this segment's k as the caller chose it (or the query's, when more); a peer's for what Lucene asks of it,
        // first (leafK: more than the query's k for a peer larger than a third of the documents) or again (the query's
        // k), in the peer's device terms (ivf_pq resident as codes alone: candidates); with peers, rounded up (passK)
        int wanted = parkK;
        int peerK = 0;
        if (i > 0) {
          peerK = Math.min(MAX_GPU_K, Math.max(queryK, leafK(queryK, segments.get(i).maxDoc() / (double) totalDocs)));
          wanted = Math.min(MAX_GPU_K, segments.get(i).deviceK(keys.get(i).field(), peerK, index.reranksOnDevice()));
        }
        if (keys.size() > 1) {
          wanted = passK(wanted);
        }
        int searchK = Math.max(1, Math.min(wanted, index.size()));
        // this segment's lists as the caller chose them; a peer's as its own search would choose them for the parked k
        // in Lucene's terms (peerK), unfiltered. Not from searchK: for an ivf_pq field resident as its codes that counts
        // the candidates to re-rank (rerank factor x k), and the lists grow with k above IvfProbes.BASE_CANDIDATES, so
        // the peer scanned up to every list and its hits differed from its own search's, the CPU's and the whole form's
        SearchParams searchParams = i == 0 ? params : segments.get(i).searchParams(keys.get(i).field(), peerK);
        if (i > 0 && !GpuSearchService.servesParams(searchParams)) { // the caller checked its own (prepare)
          skipped.add(i); // its own search goes to the CPU; in the pass it would fail every search of the pass
          continue;
        }
        searches.add(new SearchBatcher.Search(index, query, 1, searchK, masks.get(i), searchParams));
      }
      for (int s = skipped.size() - 1; s >= 0; s--) {
        int i = skipped.get(s);
        keys.remove(i);
        tokens.remove(i);
        masks.remove(i);
        segments.remove(i);
        handles.remove(i).close();
      }
      batcher.run(searches);
      SearchBatcher.Search mine = searches.get(0);
      if (mine.error() != null) {
        gpuError.accept(mine.error());
        return null;
      }
      List<SearchResult> results = new ArrayList<>(searches.size());
      for (SearchBatcher.Search search : searches) {
        results.add(search.result());
      }
      results = cutCodesOnly(keys, handles, results, segment.rerankCandidates(key.field(), queryK), queryK);
      for (int i = 0; i < keys.size(); i++) {
        speculation.park(keys.get(i), tokens.get(i), results.get(i));
      }
      stats.recordGpuSearch(1);
      SearchResult first = results.get(0);
      return Speculations.firstK(first, Math.min(k, first.k()));
    } finally {
      for (Residency.Handle handle : handles) {
        handle.close();
      }
    }
  }

  /**
   * The pass's results with the candidates of its segments resident as codes alone cut across those segments to the
   * {@code depth} best by approximate distance per query ({@link RerankCut}): those are what the host re-ranks when
   * each segment takes its result. Only among segments with the same metric (one field's segments have one); a pass
   * with fewer than two such segments is as it was.
   *
   * @param depth the candidates a search of the query's k re-ranks over the whole index
   * @param floor the candidates each segment keeps at least: the query's k
   */
  private List<SearchResult> cutCodesOnly(
      List<Residency.Key> keys, List<Residency.Handle> handles, List<SearchResult> results, int depth, int floor) {
    List<Integer> codesOnly = new ArrayList<>();
    Metric metric = null;
    for (int i = 0; i < keys.size(); i++) {
      if (results.get(i) == null || residency.formOf(keys.get(i)) != ResidentForm.CODES) {
        continue;
      }
      Metric its = handles.get(i).index().metric();
      if (metric != null && its != metric) {
        return results; // not comparable: each segment re-ranks its own candidates
      }
      metric = its;
      codesOnly.add(i);
    }
    if (codesOnly.size() < 2) {
      return results;
    }
    List<SearchResult> out = new ArrayList<>(results);
    stats.recordRerankCut(RerankCut.cutAt(out, codesOnly, depth, floor, metric.largestFirst()));
    return out;
  }

  /**
   * The k a speculative pass searches a segment for, {@code k} rounded up to a multiple of {@link #PASS_K_STEP} (at
   * most {@link GpuSearchService#MAX_GPU_K}): a segment's k then does not depend on which segment of the query asked
   * first (the query's k that {@link #fullK} recovers from the leading segment's ask may differ by a few), so that the
   * passes over a field's segments repeat their shapes and run as captured CUDA graphs. A few more results than asked for
   * cost little; a multiple of 16 never crosses the k of 128 up to which the FP16 scan answers.
   */
  static int passK(int k) {
    return Math.min(MAX_GPU_K, (k + PASS_K_STEP - 1) / PASS_K_STEP * PASS_K_STEP);
  }

  /** See {@link #passK}. */
  static final int PASS_K_STEP = 16;

  /**
   * The largest k of a query whose per-segment k, for a segment holding {@code share} of the index's
   * documents, is {@code leafK}: Lucene's optimistic knn search asks each segment for {@code
   * max(1, k p + 16 sqrt(k p (1 - p)))} first ({@link #leafK}), and the segments it must revisit for the
   * full k. Solving x + 16 sqrt(x (1 - p)) = leafK + 1 for x = k p gives that k (rounded up).
   */
  static int fullK(int leafK, double share) {
    if (share >= 1 || share <= 0) {
      return leafK;
    }
    double c = 16 * Math.sqrt(1 - share);
    double root = (-c + Math.sqrt(c * c + 4.0 * (leafK + 1))) / 2;
    return (int) Math.min(Integer.MAX_VALUE, Math.max(leafK, Math.ceil(root * root / share)));
  }

  /**
   * What Lucene's optimistic knn search (Lucene 10.5, {@code AbstractKnnVectorQuery}) asks first of a segment
   * holding {@code share} of the index's documents, for a query of k: {@code max(1, k p + 16 sqrt(k p (1 - p)))},
   * plus one for its float arithmetic. Not capped at k: a segment holding more than about a third of the documents
   * is asked for more than k. A query's pass parks at least this for every peer; parking only the k of the
   * segment that asked first (a small one) would send the largest segment of an uneven index to a second pass on
   * every query.
   */
  static int leafK(int k, double share) {
    if (share >= 1 || share <= 0) {
      return k;
    }
    double kp = k * share;
    return (int) Math.min(Integer.MAX_VALUE, Math.max(1, kp + 16 * Math.sqrt(kp * (1 - share))) + 1);
  }
}
