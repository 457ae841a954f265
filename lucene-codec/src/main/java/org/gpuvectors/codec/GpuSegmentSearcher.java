package org.gpuvectors.codec;

import java.io.IOException;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.KnnCollector;
import org.apache.lucene.util.VectorUtil;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuGraph;
import org.gpuvectors.codec.gpu.GpuIvf;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuStructure;
import org.gpuvectors.codec.graph.GraphField;
import org.gpuvectors.codec.ivf.IvfField;
import org.gpuvectors.codec.ivf.IvfIndex;
import org.gpuvectors.codec.ivf.IvfPqField;
import org.gpuvectors.cuda.GpuGraphIndex;
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
 * runs its own exact search). {@code ivf_pq} fields: the device returns {@link
 * IvfPqField#rerankDepth} candidates per query by approximate (PQ) distance, which are re-ranked here
 * with the raw vectors (exact scores, as the CPU path does).
 */
final class GpuSegmentSearcher {

  private GpuSegmentSearcher() {}

  /**
   * One segment's share of a GPU search, ready to run: its queries as rows, the k to ask (the
   * collectors' k capped by the accepted count), the accept mask, and the collectors to fill.
   */
  record Prepared(
      Object segment,
      String field,
      FloatVectorValues vectors,
      VectorSimilarityFunction similarity,
      float[] rows,
      int numQueries,
      int k,
      int requestedK,
      AcceptMasks.Mask accepted,
      KnnCollector[] collectors,
      ApproximateIndex index,
      int effort,
      FlatVectorsScorer scorers) {

    /** The service's request for this share (the batch API sends several segments' in one pass). */
    GpuSearchService.Request request() {
      return new GpuSearchService.Request(
          segment, field, vectors, similarity, gpuStructure(index), effort, rows, numQueries, k, accepted.bits());
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
   * The lists (and for ivf_pq the codebooks and codes) or the graph as the service uploads them; null
   * for flat.
   */
  static GpuStructure gpuStructure(ApproximateIndex index) {
    return switch (index) {
      case null -> null;
      case IvfField lists -> new GpuIvf(lists.nlist(), lists::toLists);
      case IvfPqField pq -> new GpuIvf(
          pq.nlist(),
          pq.lists()::toLists,
          new GpuIvf.Pq(pq.pq().m(), pq.pq()::toCodebook, pq::codesInListOrder));
      case GraphField graph -> new GpuGraph(graph.degree(), graph::toAdjacency, graph.seeds());
      default -> throw new IllegalArgumentException("no GPU form for " + index.getClass().getName());
    };
  }

  /**
   * The effort of a search for k over {@code accepted} vectors: lists probed (IVF), the beam's width
   * (graph; at most the kernel's widest, so a num_candidates above it searches a 2,048-wide beam on the
   * GPU; or {@link GpuGraphIndex#EXACT} under a selective filter: {@link GraphField#exact}), 1 (flat).
   */
  static int effort(ApproximateIndex index, int k, long accepted) {
    if (index == null) {
      return 1;
    }
    int effort = index.effort(k, accepted);
    return index instanceof GraphField && effort != GpuGraphIndex.EXACT
        ? Math.min(effort, GpuGraphIndex.MAX_WIDTH)
        : effort;
  }

  /**
   * Results the device is asked for when a search wants k: for ivf_pq the candidates to re-rank (at
   * most the GPU's k), else k.
   */
  static int deviceK(ApproximateIndex index, int k, long accepted) {
    if (index instanceof IvfPqField) {
      return Math.min(GpuSearchService.MAX_GPU_K, IvfPqField.rerankDepth(k, accepted));
    }
    return k;
  }

  private static int maxK(KnnCollector[] collectors) {
    int k = 0;
    for (KnnCollector collector : collectors) {
      k = Math.max(k, collector.k());
    }
    return k;
  }

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
      ApproximateIndex index,
      FlatVectorsScorer scorers,
      float[][] queries,
      KnnCollector[] collectors,
      AcceptDocs accept,
      AcceptMasks masks)
      throws IOException {
    Prepared p = prepare(service, segment, field, vectors, similarity, index, scorers, queries, collectors, accept, masks);
    if (p == null) {
      return false;
    }
    if (p.k() == 0) {
      return true; // nothing accepted, or nothing asked for: no hits
    }
    // one unfiltered query: the service may search the index's other segments for it in the same pass
    boolean speculative = queries.length == 1 && p.accepted().standing();
    SearchResult result =
        service.search(
            segment, field, vectors, similarity, gpuStructure(index), p.effort(), p.rows(), queries.length, p.k(),
            p.accepted().bits(), speculative, p.accepted().token(), p.requestedK());
    if (result == null) {
      return false;
    }
    collect(p, result);
    return true;
  }

  /**
   * Prepares a GPU search of one segment, or returns null when the CPU must run it (the fallback is
   * counted); a prepared search with k 0 has nothing to collect.
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
      KnnCollector[] collectors,
      AcceptDocs accept,
      AcceptMasks masks)
      throws IOException {
    int k = maxK(collectors);
    int requestedK = k;
    if (service.canServe(k) == false) {
      return null; // before the mask: without a GPU, building it would be wasted work
    }
    AcceptMasks.Mask accepted = masks.of(field, accept, vectors);
    int effort = effort(index, k, accepted.count());
    if (index instanceof IvfIndex ivf && effort == ivf.nlist() && accepted.count() < vectors.size()) {
      service.stats().recordExhaustiveIvfSearch(); // the filter made this an exact search
    }
    long visited = visited(index, accepted.count(), effort);
    for (KnnCollector collector : collectors) {
      if (visited > collector.visitLimit()) {
        service.countFallback(FallbackReason.VISIT_LIMIT);
        return null;
      }
    }
    if (index instanceof IvfPqField && IvfPqField.rerankDepth(k, accepted.count()) > GpuSearchService.MAX_GPU_K) {
      service.countFallback(FallbackReason.K_TOO_LARGE); // the device cannot return all the candidates to re-rank
      return null;
    }
    if (index instanceof GraphField && effort == GpuGraphIndex.EXACT) {
      service.stats().recordGraphExactSearch(); // the filter made this an exact search, on the GPU
    }
    k = deviceK(index, Math.min(k, accepted.count()), accepted.count());
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
    return new Prepared(
        segment, field, vectors, similarity, rows, queries.length, k, requestedK, accepted, collectors, index, effort,
        scorers);
  }

  /**
   * Hands a GPU result to the prepared search's collectors, with Lucene's scores and doc ids; ivf_pq
   * candidates get their exact scores from the raw vectors first (the collector keeps the best k).
   */
  static void collect(Prepared p, SearchResult result) throws IOException {
    if (p.index() instanceof IvfPqField) {
      rerank(p, result);
      return;
    }
    for (int q = 0; q < p.numQueries(); q++) {
      KnnCollector collector = p.collectors()[q];
      collector.incVisitedCount((int) Math.min(Integer.MAX_VALUE, p.visited()));
      int hits = Math.min(result.count(q), collector.k());
      for (int i = 0; i < hits; i++) {
        int doc = p.vectors().ordToDoc(result.id(q, i));
        collector.collect(doc, score(p.similarity(), result.distance(q, i)));
      }
    }
  }

  /**
   * Queries of one batch whose ivf_pq candidates are re-ranked on the common fork-join pool rather than
   * one after another: the re-rank reads each candidate's raw vector (random reads) and costs ~24 us a
   * query for 40 candidates of 784 floats (H100 box, Fashion-MNIST: 240 ms of a 276 ms batch of 10k). A
   * single search (Elasticsearch's path: one query per search thread) stays on its thread.
   */
  static final int PARALLEL_RERANK_QUERIES = 64;

  /** ivf_pq: each query's candidates get their exact scores from the raw vectors; the collector keeps the best k. */
  private static void rerank(Prepared p, SearchResult result) throws IOException {
    java.util.stream.IntStream queries = java.util.stream.IntStream.range(0, p.numQueries());
    if (p.numQueries() >= PARALLEL_RERANK_QUERIES) {
      queries = queries.parallel(); // every query has its own collector and scorer
    }
    try {
      queries.forEach(q -> {
        try {
          rerank(p, result, q);
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
    } catch (java.io.UncheckedIOException e) {
      throw e.getCause();
    }
  }

  private static void rerank(Prepared p, SearchResult result, int q) throws IOException {
    int dims = p.vectors().dimension();
    KnnCollector collector = p.collectors()[q];
    collector.incVisitedCount((int) Math.min(Integer.MAX_VALUE, p.visited()));
    float[] query = java.util.Arrays.copyOfRange(p.rows(), q * dims, (q + 1) * dims);
    RandomVectorScorer exact = p.scorers().getRandomVectorScorer(p.similarity(), p.vectors().copy(), query);
    for (int i = 0; i < result.count(q); i++) {
      int ord = result.id(q, i);
      collector.collect(exact.ordToDoc(ord), exact.score(ord));
    }
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
