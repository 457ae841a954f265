package org.gpuvectors.codec;

import org.gpuvectors.codec.index.ApproximateIndex;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.codec.index.FloatViewVectors;
import org.gpuvectors.codec.index.HammingVectorsScorer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.stream.IntStream;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.KnnCollector;
import org.apache.lucene.util.VectorUtil;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.gpuvectors.codec.gpu.DeviceInputs;
import org.gpuvectors.codec.gpu.ElementVectors;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuGraph;
import org.gpuvectors.codec.gpu.GpuIvf;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuStructure;
import org.gpuvectors.codec.graph.GraphField;
import org.gpuvectors.codec.ivf.IvfField;
import org.gpuvectors.codec.ivf.IvfIndex;
import org.gpuvectors.codec.ivf.IvfPqField;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;

/**
 * k-NN search of one segment field on the GPU: exact for flat fields (the GPU counterpart of {@link
 * FlatExactSearcher}), over the nearest inverted lists for IVF fields (the counterpart of {@link
 * IvfField#search}, probing as many lists), by beam search for graph fields (the counterpart of {@link
 * GraphField#search}, with the same width). Same inputs and the same scores as the CPU paths
 * (Lucene's similarity formulas applied to the exact distances the kernels return).
 *
 * <p>Accepted documents (filters, deletions) become an accept mask over vector ordinals that the
 * kernels apply ({@link AcceptMasks}). A collector whose visit limit is below the number of accepted
 * vectors is left to the CPU path, which terminates early exactly as Lucene expects (Lucene then
 * runs its own exact search). {@code ivf_pq} fields: the {@link IvfPqField#rerankDepth} best
 * candidates per query by approximate (PQ) distance are re-ranked with the raw vectors (exact scores,
 * as the CPU path does): on the device when the raw vectors go up with the codes ({@link
 * GpuSearchService.Settings#ivfPqRerankOnGpu}; the device then returns the k best with exact distances), else here
 * on the host from the candidates the device returns (fewer when a pass over several segments cut them to the best
 * over all of them: {@link org.gpuvectors.codec.gpu.RerankCut}). Byte and bit structures are searched in their float view, and
 * each hit is scored here by the element type's scorer ({@link #scoresOnHost}).
 */
final class GpuSegmentSearcher {

  private GpuSegmentSearcher() {}

  /**
   * One segment's share of a GPU search, ready to run: its queries (the caller's arrays, not copied on
   * the host: the device layer stages them for each segment group's upload), the k to ask (the search's k capped by
   * the accepted count), and the accept mask.
   *
   * @param elements a flat field resident at its element type's own size (bfloat16), searched by that type's
   *     kernels; null for the float path (float vectors, or the float view of byte and bit structures)
   */
  record Prepared(
      Object segment,
      String field,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      float[][] queries,
      int k,
      int requestedK,
      AcceptMasks.Mask accepted,
      ApproximateIndex index,
      int effort,
      FlatVectorsScorer scorers,
      boolean rerankOnGpu,
      ElementVectors elements) {

    int numQueries() {
      return queries.length;
    }

    /**
     * This share searched at its element type's own size ({@code elements} of a flat field); its hits are scored as
     * the float path's ({@link #elementScore} of bfloat16 is {@link #score}).
     */
    Prepared atOwnSize(ElementVectors elements) {
      if (index != null || elements.type() != ElementType.BFLOAT16) {
        throw new IllegalArgumentException("only flat bfloat16 fields go through a float batch at their own size");
      }
      return new Prepared(segment, field, vectors, similarity, queries, k, requestedK, accepted, index, effort,
          scorers, rerankOnGpu, elements);
    }

    /**
     * This share of a flat float field searched in its compact copy ({@link #compactCopyCandidates} candidates a
     * query, re-ranked here: {@link #scoresOnHost}, then proven or searched again on the CPU).
     */
    Prepared atCompactCopy() {
      if (index != null || elements != null) {
        throw new IllegalArgumentException("only flat float fields have a compact copy");
      }
      return new Prepared(segment, field, vectors, similarity, queries,
          compactCopyCandidates(k, accepted.count()), requestedK, accepted, index, effort, scorers, rerankOnGpu,
          new ElementVectors(ElementType.FLOAT, vectors));
    }

    /** Whether this share searches a flat float field's compact copy ({@link #atCompactCopy}). */
    boolean compactCopy() {
      return elements != null && elements.type() == ElementType.FLOAT;
    }

    /** The service's request for this share (the batch API sends several segments' in one pass). */
    GpuSearchService.Request request() {
      if (elements != null) {
        return GpuSearchService.Request.ofElements(
            segment, field, elements, similarity, queries, queries.length, k, accepted.bits());
      }
      return new GpuSearchService.Request(
          segment, field, vectors, similarity, gpuStructure(index, rerankOnGpu), searchParams(index, effort), queries,
          queries.length, k,
          accepted.bits());
    }

    long visited() {
      return GpuSegmentSearcher.visited(index, accepted.count(), effort);
    }
  }

  /** Vectors a search looks at per query: all accepted ones (flat), or about those its structure scores. */
  static long visited(ApproximateIndex index, long accepted, int effort) {
    return index == null ? accepted : index.visited(accepted, effort);
  }

  /**
   * The lists (and for ivf_pq the codebooks and codes, and the raw vectors when {@code rerankOnGpu}) or the graph
   * as the service uploads them; null for flat.
   */
  static GpuStructure gpuStructure(ApproximateIndex index, boolean rerankOnGpu) {
    return switch (index) {
      case null -> null;
      case IvfField lists -> new GpuIvf(lists.nlist(), () -> DeviceInputs.lists(lists));
      case IvfPqField pq -> new GpuIvf(
          pq.nlist(),
          () -> DeviceInputs.lists(pq.lists()),
          new GpuIvf.Pq(pq.pq().m(), () -> DeviceInputs.codebook(pq.pq()), pq::codesInListOrder,
              rerankOnGpu ? pq.rerankFactor() : 0));
      case GraphField graph -> new GpuGraph(graph.degree(), graph::toAdjacency, graph.seeds());
      default -> throw new IllegalArgumentException("no GPU form for " + index.getClass().getName());
    };
  }

  /**
   * The effort of a search for k over {@code accepted} vectors: lists probed (IVF), the beam's width
   * (graph; at most the kernel's widest, {@link org.gpuvectors.codec.graph.GraphFilterPlan#width}, as on the
   * CPU), 1 (flat).
   */
  static int effort(ApproximateIndex index, int k, long accepted) {
    return index == null ? 1 : index.effort(k, accepted);
  }

  /**
   * The device's search parameters at this effort ({@link #effort}): a flat field's search, the lists an IVF field
   * probes, a graph's beam width or its exact search. The effort is the codec's decision; here it becomes what the
   * GPU module executes.
   */
  static SearchParams searchParams(ApproximateIndex index, int effort) {
    return switch (index) {
      case null -> SearchParams.FLAT;
      case GraphField graph -> effort == GraphField.EXACT_EFFORT ? SearchParams.EXACT : new SearchParams.Graph(effort);
      case IvfIndex ivf -> new SearchParams.Ivf(effort);
      default -> throw new IllegalArgumentException("no device search for " + index.getClass().getName());
    };
  }

  /**
   * Whether a search of this field is prepared for its raw vectors on the device ({@link #reranksOnDevice}): for an
   * ivf_pq field, the form the service keeps it in, its codes with or without its raw vectors ({@link
   * GpuSearchService#ivfPqRerankOnGpu}); false for the other types, which have one form.
   */
  static boolean rerankOnGpu(
      GpuSearchService service, Object segment, String field, FloatVectorValues vectors,
      VectorSimilarityFunction similarity, ApproximateIndex index) {
    return index instanceof IvfPqField
        && service.ivfPqRerankOnGpu(segment, field, vectors, similarity, gpuStructure(index, true));
  }

  /** Whether the device re-ranks this field's candidates (ivf_pq whose raw vectors go up with the codes). */
  static boolean reranksOnDevice(ApproximateIndex index, boolean rerankOnGpu) {
    return index instanceof IvfPqField && rerankOnGpu;
  }

  /** Whether the candidates the device returns for this field are re-ranked here (ivf_pq, host re-rank). */
  static boolean reranksOnHost(ApproximateIndex index, boolean rerankOnGpu) {
    return index instanceof IvfPqField && rerankOnGpu == false;
  }

  /**
   * Whether each hit the device returns is scored here by the field's scorer rather than from its device distance:
   * candidates re-ranked on the host, and the float view of byte and bit vectors ({@link FloatViewVectors}), whose
   * device distances order the hits as the element type's score does but are not that score (Lucene's byte
   * formulas, Elasticsearch's Hamming score).
   */
  static boolean scoresOnHost(Prepared p) {
    return reranksOnHost(p.index(), p.rerankOnGpu()) || p.vectors() instanceof FloatViewVectors || p.compactCopy();
  }

  /**
   * Candidates a search of k asks of a flat float field's compact copy: four a result (room below the k-th for the
   * copy's rounding, {@link CompactCopyBound}), at most the GPU's k and the accepted vectors.
   */
  static int compactCopyCandidates(int k, long accepted) {
    return (int) Math.max(k, Math.min(Math.min(accepted, GpuSearchService.MAX_GPU_K), 4L * k));
  }

  /**
   * Results the device is asked for when a search wants k: for ivf_pq re-ranked on the host the
   * candidates to re-rank (at most the GPU's k), else k (the device re-rank scans the candidates
   * itself: {@link IvfPqField#rerankDepth} of them).
   */
  static int deviceK(ApproximateIndex index, int k, long accepted, boolean rerankOnGpu) {
    if (reranksOnHost(index, rerankOnGpu)) {
      return ((IvfPqField) index).rerankDepth(k, accepted); // at most the GPU's k
    }
    return k;
  }

  /**
   * Searches one query on the GPU (batched there with concurrent searches, and perhaps answered by a
   * pass that another segment of its index ran for it).
   *
   * @return false when the CPU must run this search instead (nothing was collected)
   */
  static boolean search(
      GpuSearchService service,
      Object segment,
      String field,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      ApproximateIndex index,
      FlatVectorsScorer scorers,
      float[] query,
      KnnCollector collector,
      AcceptDocs accept,
      AcceptMasks masks)
      throws IOException {
    float[][] queries = {query};
    Prepared p = prepare(
        service, segment, field, vectors, similarity, index, scorers, queries, collector.k(), collector.visitLimit(),
        accept, masks);
    if (p == null) {
      return false;
    }
    if (p.k() == 0) {
      return true; // nothing accepted, or nothing asked for: no hits
    }
    // unfiltered: the service may search the index's other segments for this query in the same pass
    boolean speculative = p.accepted().standing();
    SearchResult result =
        service.search(
            segment, field, vectors, similarity, gpuStructure(index, p.rerankOnGpu()), searchParams(index, p.effort()),
            queries, 1, p.k(),
            p.accepted().bits(), speculative, p.accepted().token(), p.requestedK());
    if (result == null) {
      return false;
    }
    recordServed(service, p, result);
    collect(p, result, collector);
    return true;
  }

  /**
   * Searches one byte or bit query of a flat byte or bit field exactly on the GPU (batched there with concurrent
   * searches): the counterpart of {@link #search} for {@code byte[]} targets. The query's bytes go to the device as
   * floats (exact), the device ranks by the exact integer distance (bit: Hamming), and the collector gets Lucene's
   * scores from those integers ({@link #elementScore}): the CPU's scores.
   *
   * @param type {@link ElementType#BYTE} or {@link ElementType#BIT}
   * @return false when the CPU must run this search instead (nothing was collected)
   */
  static boolean searchBytes(
      GpuSearchService service,
      Object segment,
      String field,
      ElementType type,
      ByteVectorValues vectors,
      VectorSimilarityFunction similarity,
      byte[] query,
      KnnCollector collector,
      AcceptDocs accept,
      AcceptMasks masks)
      throws IOException {
    float[] asFloats = new float[query.length];
    for (int d = 0; d < query.length; d++) {
      asFloats[d] = query[d];
    }
    return searchElements(service, segment, field, new ElementVectors(type, vectors), similarity, asFloats, collector,
        accept, masks);
  }

  /**
   * Searches one float query of a flat bfloat16 field exactly on the GPU, the rows at two bytes a dimension there and
   * summed in FP32 against the query's floats; scores as the float path's ({@link #score}).
   *
   * @return false when the CPU must run this search instead (nothing was collected)
   */
  static boolean searchBf16(
      GpuSearchService service,
      Object segment,
      String field,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      float[] query,
      KnnCollector collector,
      AcceptDocs accept,
      AcceptMasks masks)
      throws IOException {
    return searchElements(service, segment, field, new ElementVectors(ElementType.BFLOAT16, vectors), similarity,
        query, collector, accept, masks);
  }

  /**
   * Searches one query of a flat float field in its compact copy on the GPU ({@link GpuSearchService#flatCompactCopy}:
   * its vectors as bfloat16 there): the device returns {@link #compactCopyCandidates} candidates by their copy
   * distances, batched with concurrent searches; here each gets its exact score from the raw vectors, and the k best
   * go to the collector when the candidates provably hold the exact top k ({@link CompactCopyBound}); else the CPU
   * searches (counted as {@link FallbackReason#UNCERTIFIED_CANDIDATES}).
   *
   * @param maxNorm the largest norm of the field's vectors in this segment
   * @return false when the CPU must run this search instead (nothing was collected)
   */
  static boolean searchCompactCopy(
      GpuSearchService service,
      Object segment,
      String field,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      FlatVectorsScorer scorers,
      double maxNorm,
      float[] query,
      KnnCollector collector,
      AcceptDocs accept,
      AcceptMasks masks)
      throws IOException {
    AcceptMasks.Mask accepted =
        exactSearchMask(service, field, vectors, vectors.dimension(), query, collector, accept, masks);
    if (accepted == null) {
      return false;
    }
    int k = Math.min(collector.k(), accepted.count());
    if (k == 0) {
      return true; // nothing accepted, or nothing asked for: no hits
    }
    SearchResult result = service.searchElements(segment, field, new ElementVectors(ElementType.FLOAT, vectors),
        similarity, new float[][] {query}, 1, compactCopyCandidates(k, accepted.count()), accepted.bits());
    if (result == null) {
      return false;
    }
    int returned = result.count(0);
    int[] docs = new int[returned];
    float[] scores = new float[returned];
    RandomVectorScorer exact = scorers.getRandomVectorScorer(similarity, vectors.copy(), query);
    int[] ords = candidateOrds(result, 0, null);
    exact.bulkScore(ords, scores, returned);
    for (int i = 0; i < returned; i++) {
      docs[i] = exact.ordToDoc(ords[i]);
    }
    float kth = returned < k ? Float.NEGATIVE_INFINITY : kthLargest(scores, k);
    if (CompactCopyBound.holdsTopK(similarity, maxNorm, query, accepted.count(), result, 0, k, kth) == false) {
      service.countFallback(FallbackReason.UNCERTIFIED_CANDIDATES);
      return false;
    }
    collector.incVisitedCount(accepted.count());
    for (int i = 0; i < returned; i++) {
      collector.collect(docs[i], scores[i]); // the collector keeps the k best, equal scores by the lower doc
    }
    service.stats().recordCompactCopyQueries(1);
    return true;
  }

  /**
   * The queries of a batch's share in a compact copy ({@link Prepared#atCompactCopy}) whose candidates, re-ranked into
   * {@code hits} (the best {@code k} a query), cannot be proven to hold the exact top k: the caller searches them on
   * the CPU.
   */
  static int[] uncertifiedQueries(Prepared p, SearchResult result, SegmentHits hits, int k, double maxNorm) {
    long accepted = p.accepted().count();
    int kk = (int) Math.min(k, accepted);
    return IntStream.range(0, p.numQueries()).filter(q -> {
      float kth = hits.count(q) < kk || kk == 0 ? Float.NEGATIVE_INFINITY : hits.score(q, kk - 1);
      return kk > 0
          && CompactCopyBound.holdsTopK(p.similarity(), maxNorm, p.queries()[q], accepted, result, q, kk, kth) == false;
    }).toArray();
  }

  /**
   * What a one-query exact search of a flat field checks before the GPU: the GPU's k limit, the query's dimension
   * (a mismatch is the caller's error), and the accept mask, whose accepted vectors the collector's visit limit must
   * allow (else the CPU, which stops early as Lucene expects). Null: the CPU must run the search (counted).
   */
  private static AcceptMasks.Mask exactSearchMask(
      GpuSearchService service, String field, KnnVectorValues values, int dims, float[] query, KnnCollector collector,
      AcceptDocs accept, AcceptMasks masks) throws IOException {
    if (service.canServe(collector.k()) == false) {
      return null; // before the mask: without a GPU, building it would be wasted work
    }
    if (query.length != dims) {
      throw new IllegalArgumentException("vector query dimension: " + query.length
          + " differs from field dimension: " + dims + " (field [" + field + "])");
    }
    AcceptMasks.Mask accepted = masks.of(field, accept, values);
    if (accepted.count() > collector.visitLimit()) {
      service.countFallback(FallbackReason.VISIT_LIMIT);
      return null;
    }
    return accepted;
  }

  /** The k-th largest of {@code scores} (k <= its length). */
  private static float kthLargest(float[] scores, int k) {
    float[] sorted = scores.clone();
    java.util.Arrays.sort(sorted);
    return sorted[sorted.length - k];
  }

  /**
   * The exact search of one query of a byte, bit or bfloat16 field (its values as floats) on the GPU, as the float
   * entry does it for a flat field: the GPU's k limit, the accept mask, a collector whose visit limit is below the
   * accepted count left to the CPU (which stops early as Lucene expects), k capped by the accepted count.
   */
  private static boolean searchElements(
      GpuSearchService service,
      Object segment,
      String field,
      ElementVectors vectors,
      VectorSimilarityFunction similarity,
      float[] query,
      KnnCollector collector,
      AcceptDocs accept,
      AcceptMasks masks)
      throws IOException {
    AcceptMasks.Mask accepted =
        exactSearchMask(service, field, vectors.values(), vectors.dims(), query, collector, accept, masks);
    if (accepted == null) {
      return false;
    }
    int k = Math.min(collector.k(), accepted.count());
    if (k == 0) {
      return true; // nothing accepted, or nothing asked for: no hits
    }
    SearchResult result =
        service.searchElements(segment, field, vectors, similarity, new float[][] {query}, 1, k, accepted.bits());
    if (result == null) {
      return false;
    }
    collector.incVisitedCount(accepted.count());
    KnnVectorValues values = vectors.values();
    for (int i = 0; i < result.count(0); i++) {
      collector.collect(values.ordToDoc(result.id(0, i)),
          elementScore(vectors.type(), similarity, result.distance(0, i), vectors.dims()));
    }
    return true;
  }

  /**
   * Lucene's score of a byte, bit or bfloat16 field for the raw distance the device returns ({@code dims}: values a
   * vector as Lucene stores it, bit: bytes). Byte: Lucene's byte formulas, on the exact integers (squared distance,
   * dot product) or the cosine the device divides as {@code VectorUtil.cosine(byte[], byte[])} does; bit: {@code
   * dense_vector}'s Hamming score, (bits - hamming) / bits, whatever the similarity; bfloat16: the float formulas
   * ({@link #score}).
   */
  static float elementScore(ElementType type, VectorSimilarityFunction similarity, float distance, int dims) {
    return switch (type) {
      case BIT -> HammingVectorsScorer.score((int) distance, dims * Byte.SIZE);
      case BYTE -> switch (similarity) {
        case EUCLIDEAN -> VectorUtil.normalizeDistanceToUnitInterval(distance);
        case DOT_PRODUCT -> 0.5f + distance / (float) (dims * (1 << 15));
        case COSINE -> VectorUtil.normalizeToUnitInterval(distance);
        case MAXIMUM_INNER_PRODUCT -> VectorUtil.scaleMaxInnerProductScore(distance);
      };
      case BFLOAT16, FLOAT -> score(similarity, distance);
    };
  }

  /**
   * Prepares a GPU search of one segment for {@code k} results per query, or returns null when the
   * CPU must run it (the fallback is counted): also when it would visit more than {@code visitLimit}
   * vectors (the lowest of the collectors'). A prepared search with k 0 has nothing to collect.
   */
  static Prepared prepare(
      GpuSearchService service,
      Object segment,
      String field,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      ApproximateIndex index,
      FlatVectorsScorer scorers,
      float[][] queries,
      int k,
      long visitLimit,
      AcceptDocs accept,
      AcceptMasks masks)
      throws IOException {
    int requestedK = k;
    if (service.canServe(k) == false) {
      return null; // before the mask: without a GPU, building it would be wasted work
    }
    AcceptMasks.Mask accepted = masks.of(field, accept, vectors);
    int effort = effort(index, k, accepted.count());
    if (!GpuSearchService.servesParams(searchParams(index, effort))) {
      service.countFallback(FallbackReason.PROBES_TOO_MANY);
      return null;
    }
    if (visited(index, accepted.count(), effort) > visitLimit) {
      service.countFallback(FallbackReason.VISIT_LIMIT);
      return null;
    }
    boolean rerankOnGpu = rerankOnGpu(service, segment, field, vectors, similarity, index);
    k = deviceK(index, Math.min(k, accepted.count()), accepted.count(), rerankOnGpu);
    int dims = vectors.dimension();
    for (int q = 0; q < queries.length; q++) {
      if (queries[q].length != dims) {
        throw new IllegalArgumentException("vector query dimension: " + queries[q].length
            + " differs from field dimension: " + dims + " (query " + q + " of field [" + field + "])");
      }
    }
    return new Prepared(
        segment, field, vectors, similarity, queries, k, requestedK, accepted, index, effort, scorers, rerankOnGpu,
        null);
  }

  /**
   * Counts what the GPU did for a prepared search that it served (called once its result is in, so
   * that a search the CPU ran instead is not counted as the GPU's): an IVF search that a filter made
   * scan every list ({@code ivf_exhaustive}), a graph search that a filter made exact over the accepted
   * vectors ({@code graph_exact}), and where ivf_pq candidates were re-ranked (on the host: how many, as {@code
   * result} holds them, after any cut across segments).
   */
  static void recordServed(GpuSearchService service, Prepared p, SearchResult result) {
    if (p.index() instanceof IvfIndex ivf && p.effort() == ivf.nlist() && p.accepted().count() < p.vectors().size()) {
      service.stats().recordExhaustiveIvfSearch(); // the filter made this an exact search
    }
    if (p.index() instanceof GraphField && p.effort() == GraphField.EXACT_EFFORT) {
      service.stats().recordGraphExactSearch(); // the filter made this an exact search, on the GPU
    }
    if (p.index() instanceof IvfPqField) {
      service.stats().recordIvfPqRerank(p.numQueries(), reranksOnDevice(p.index(), p.rerankOnGpu()));
    }
    if (reranksOnHost(p.index(), p.rerankOnGpu())) {
      long candidates = 0;
      for (int q = 0; q < result.numQueries(); q++) {
        candidates += result.count(q);
      }
      service.stats().recordHostRerankCandidates(candidates);
    }
  }

  /**
   * Hands a one-query GPU result to its collector, with Lucene's scores and doc ids; ivf_pq candidates
   * re-ranked on the host get their exact scores from the raw vectors first (the collector keeps the
   * best k).
   */
  static void collect(Prepared p, SearchResult result, KnnCollector collector) throws IOException {
    int visited = (int) Math.min(Integer.MAX_VALUE, p.visited());
    HitSink sink = new HitSink() {
      @Override
      public int start(int q) {
        collector.incVisitedCount(visited);
        return collector.k();
      }

      @Override
      public void add(int q, int doc, float score) {
        collector.collect(doc, score);
      }
    };
    convert(p, result, sink, false);
  }

  /**
   * A GPU result as the batch's hits in this segment: per query the best {@code k}, kept and ordered
   * as a {@link org.apache.lucene.search.TopKnnCollector} of that k (with no visit limit) would keep
   * them from {@link #collect}, with no collector per query. Large batches are converted on the
   * common fork-join pool.
   */
  static SegmentHits hits(Prepared p, SearchResult result, int k) throws IOException {
    SegmentHits hits = new SegmentHits(p.numQueries(), k);
    long visited = Math.min(Integer.MAX_VALUE, p.visited());
    HitSink sink = new HitSink() {
      @Override
      public int start(int q) {
        hits.visited(q, visited, Integer.MAX_VALUE);
        return k;
      }

      @Override
      public void add(int q, int doc, float score) {
        hits.add(q, doc, score);
      }
    };
    if (reranksOnHost(p.index(), p.rerankOnGpu())
        && p.numQueries() >= ORDINAL_ORDER_RERANK_QUERIES
        && p.vectors().size() >= ORDINAL_ORDER_VECTORS_PER_QUERY * (long) p.numQueries()) {
      OrdinalOrderRerank.rerank(p, result, hits, visited);
      return hits;
    }
    int parallelFrom = scoresOnHost(p) ? PARALLEL_RERANK_QUERIES : PARALLEL_CONVERT_QUERIES;
    convert(p, result, sink, p.numQueries() >= parallelFrom);
    return hits;
  }

  /**
   * Batches of at least this many ivf_pq queries re-rank their candidates in ordinal order ({@link
   * OrdinalOrderRerank}) in segments of at least {@link #ORDINAL_ORDER_VECTORS_PER_QUERY} vectors a
   * query: the random reads then go to the queries instead of the larger set of raw vectors, and a
   * vector that is a candidate of several queries is read once. Measured on Fashion-MNIST batches of
   * 10k (2-core box, process CPU per batch): 60k vectors in one segment 112-120 ms vs 162-167 query
   * by query; 2 segments of 30k 211-213 vs 246-266; 4 segments of 15k 412-431 vs 361-392 (there the
   * queries are the larger set).
   */
  static final int ORDINAL_ORDER_RERANK_QUERIES = 1024;

  /** See {@link #ORDINAL_ORDER_RERANK_QUERIES}: between the 1.5 (loses) and 3 (wins) vectors a query measured. */
  static final int ORDINAL_ORDER_VECTORS_PER_QUERY = 2;

  /** Receives a GPU result's hits query by query (queries may come from several threads). */
  private interface HitSink {
    /** Starts query q (counts what it visited); returns the most of its hits that can be kept. */
    int start(int q);

    void add(int q, int doc, float score);
  }

  /**
   * Queries of one batch whose ivf_pq candidates are re-ranked on the common fork-join pool rather than
   * one after another: the re-rank reads each candidate's raw vector (random reads) and costs ~24 us a
   * query for 40 candidates of 784 floats (Fashion-MNIST: 240 ms of a 276 ms batch of 10k). A
   * single search (Elasticsearch's path: one query per search thread) stays on its thread.
   */
  static final int PARALLEL_RERANK_QUERIES = 64;

  /**
   * Queries of one batch whose flat or ivf_flat results are converted to hits on the common pool: a
   * query costs ~0.1 us a hit (doc id, score, ordered insert), so only large batches gain from it.
   */
  static final int PARALLEL_CONVERT_QUERIES = 2048;

  /** Queries a task of a parallel conversion takes. */
  private static final int QUERIES_PER_TASK = 256;

  private static void convert(Prepared p, SearchResult result, HitSink sink, boolean parallel) throws IOException {
    if (parallel == false) {
      convert(p, result, sink, 0, p.numQueries());
      return;
    }
    int tasks = (p.numQueries() + QUERIES_PER_TASK - 1) / QUERIES_PER_TASK;
    try {
      IntStream.range(0, tasks).parallel().forEach(t -> {
        try {
          convert(p, result, sink, t * QUERIES_PER_TASK, Math.min(p.numQueries(), (t + 1) * QUERIES_PER_TASK));
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  /** Queries {@code [from, to)} of a result into the sink, on one thread (its own copy of the vectors). */
  private static void convert(Prepared p, SearchResult result, HitSink sink, int from, int to) throws IOException {
    FloatVectorValues vectors = p.vectors().copy(); // ordToDoc and raw reads: one reader per thread
    if (scoresOnHost(p)) {
      // each query's candidates get their exact scores from the raw vectors; the sink keeps the best k
      int[] ords = null;
      float[] scores = new float[result.k()];
      for (int q = from; q < to; q++) {
        sink.start(q);
        RandomVectorScorer exact = p.scorers().getRandomVectorScorer(p.similarity(), vectors, p.queries()[q]);
        ords = candidateOrds(result, q, ords);
        exact.bulkScore(ords, scores, result.count(q));
        for (int i = 0; i < result.count(q); i++) {
          sink.add(q, exact.ordToDoc(ords[i]), scores[i]);
        }
      }
      return;
    }
    for (int q = from; q < to; q++) {
      int hits = Math.min(result.count(q), sink.start(q));
      for (int i = 0; i < hits; i++) {
        sink.add(q, vectors.ordToDoc(result.id(q, i)), score(p.similarity(), result.distance(q, i)));
      }
    }
  }

  /**
   * Query q's candidate ordinals in {@code into} (reused when large enough), for one {@link
   * RandomVectorScorer#bulkScore} call: Lucene's off-heap scorers prefetch and score several raw vectors at a time,
   * about 2.5x faster per candidate than {@code score(ord)} on the random reads of a re-rank (768 dimensions). Its
   * scores can differ from {@code score(ord)}'s in the last bit (another summation order); both are exact FP32 scores.
   */
  private static int[] candidateOrds(SearchResult result, int q, int[] into) {
    int[] ords = into != null && into.length >= result.k() ? into : new int[result.k()];
    for (int i = 0; i < result.count(q); i++) {
      ords[i] = result.id(q, i);
    }
    return ords;
  }

  /** Lucene's score for a raw kernel distance (squared L2, or inner product). */
  static float score(VectorSimilarityFunction similarity, float distance) {
    return switch (similarity) {
      case EUCLIDEAN -> VectorUtil.normalizeDistanceToUnitInterval(Math.max(distance, 0f));
      case DOT_PRODUCT, COSINE -> VectorUtil.normalizeToUnitInterval(distance);
      case MAXIMUM_INNER_PRODUCT -> VectorUtil.scaleMaxInnerProductScore(distance);
    };
  }
}
