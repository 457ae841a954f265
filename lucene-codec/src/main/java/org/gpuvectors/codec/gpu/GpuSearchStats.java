package org.gpuvectors.codec.gpu;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counters of the GPU search path: what ran on the GPU (searches, queries, batches), what fell back
 * to the CPU and why, residency and warm-up. Thread-safe; read by monitoring (the Elasticsearch
 * plugin's stats) and by tests, which count GPU searches exactly.
 */
public final class GpuSearchStats {

  private final LongAdder gpuSearches = new LongAdder();
  private final LongAdder gpuQueries = new LongAdder();
  private final LongAdder batches = new LongAdder();
  private final LongAdder batchSearches = new LongAdder();
  private final LongAdder batchGroups = new LongAdder();
  private final LongAdder gpuNanos = new LongAdder();
  private final LongAdder enqueueNanos = new LongAdder();
  private final LongAdder waitNanos = new LongAdder();
  private final LongAdder uploads = new LongAdder();
  private final LongAdder uploadNanos = new LongAdder();
  private final LongAdder evictions = new LongAdder();
  private final LongAdder warmups = new LongAdder();
  private final LongAdder speculativeHits = new LongAdder();
  private final LongAdder gpuAssignedVectors = new LongAdder();
  private final LongAdder cpuAssignedVectors = new LongAdder();
  private final LongAdder gpuKnnGraphVectors = new LongAdder();
  private final LongAdder cpuKnnGraphVectors = new LongAdder();
  private final LongAdder cpuMergedKnnGraphVectors = new LongAdder();
  private final LongAdder gpuPrunedVectors = new LongAdder();
  private final LongAdder cpuPrunedVectors = new LongAdder();
  private final LongAdder gpuReverseLinkedVectors = new LongAdder();
  private final LongAdder cpuReverseLinkedVectors = new LongAdder();
  private final LongAdder gpuEntryPointTraversals = new LongAdder();
  private final LongAdder cpuEntryPointTraversals = new LongAdder();
  private final LongAdder exhaustiveIvfSearches = new LongAdder();
  private final LongAdder graphExactSearches = new LongAdder();
  private final LongAdder deviceRerankQueries = new LongAdder();
  private final LongAdder hostRerankQueries = new LongAdder();
  private final LongAdder hostRerankCandidates = new LongAdder();
  private final LongAdder rerankCutCandidates = new LongAdder();
  private final LongAdder compactCopyQueries = new LongAdder();
  private final Map<FallbackReason, LongAdder> cpuFallbacks = new EnumMap<>(FallbackReason.class);
  private final Map<SpeculationMiss, LongAdder> speculativeMisses = new EnumMap<>(SpeculationMiss.class);

  public GpuSearchStats() {
    for (FallbackReason reason : FallbackReason.values()) {
      cpuFallbacks.put(reason, new LongAdder());
    }
    for (SpeculationMiss reason : SpeculationMiss.values()) {
      speculativeMisses.put(reason, new LongAdder());
    }
  }

  /** Segment searches answered on the GPU (one per segment and call; a call may hold many queries). */
  public long gpuSearches() {
    return gpuSearches.sum();
  }

  /** Queries answered on the GPU. */
  public long gpuQueries() {
    return gpuQueries.sum();
  }

  /** GPU passes run: each serves one or more searches, over one or more segments. */
  public long batches() {
    return batches.sum();
  }

  /** Searches served by those passes (batchSearches / batches = the mean batch size). */
  public long batchSearches() {
    return batchSearches.sum();
  }

  /** (pass, segment field) pairs: batchGroups / batches = segments searched per pass. */
  public long batchGroups() {
    return batchGroups.sum();
  }

  /** Wall time of the GPU passes (uploads excluded). */
  public long gpuNanos() {
    return gpuNanos.sum();
  }

  /** Of {@link #gpuNanos()}: host time enqueuing the passes' uploads and launches (the device lock held). */
  public long enqueueNanos() {
    return enqueueNanos.sum();
  }

  /** Of {@link #gpuNanos()}: time waiting for the device to finish the passes and for their downloads. */
  public long waitNanos() {
    return waitNanos.sum();
  }

  /** Segment fields uploaded to the GPU. */
  public long uploads() {
    return uploads.sum();
  }

  /** Wall time of those uploads. */
  public long uploadNanos() {
    return uploadNanos.sum();
  }

  /** Segment fields evicted to make room under the memory budget. */
  public long evictions() {
    return evictions.sum();
  }

  /** Segment fields made resident by a warm-up rather than by a search. */
  public long warmups() {
    return warmups.sum();
  }

  /**
   * GPU searches answered from a result computed ahead, in the pass of an earlier segment of the same
   * query (counted in {@link #gpuSearches()} too).
   */
  public long speculativeHits() {
    return speculativeHits.sum();
  }

  /** Searches that ran on the CPU instead, in total. */
  /** Vectors whose nearest centroid (k-means, IVF list assignment) the GPU computed. */
  public long gpuAssignedVectors() {
    return gpuAssignedVectors.sum();
  }

  /** Vectors whose nearest centroid the CPU computed (no GPU, or the GPU failed). */
  public long cpuAssignedVectors() {
    return cpuAssignedVectors.sum();
  }

  /** IVF searches whose filter made them scan every list (exact search over the accepted vectors). */
  public long exhaustiveIvfSearches() {
    return exhaustiveIvfSearches.sum();
  }

  /** Counts an IVF search that scans every list because of its filter. */
  public void recordExhaustiveIvfSearch() {
    exhaustiveIvfSearches.increment();
  }

  /**
   * Graph searches whose filter made them exact over the accepted vectors on the GPU (a walk would
   * have scored more vectors than the filter accepts).
   */
  public long graphExactSearches() {
    return graphExactSearches.sum();
  }

  /** Counts a graph search that runs exactly over the accepted vectors because of its filter. */
  public void recordGraphExactSearch() {
    graphExactSearches.increment();
  }

  /** ivf_pq queries (per segment) whose candidates the device re-ranked exactly from resident raw vectors. */
  public long deviceRerankQueries() {
    return deviceRerankQueries.sum();
  }

  /** ivf_pq queries (per segment) whose GPU candidates were re-ranked on the host (raw vectors not on the device). */
  public long hostRerankQueries() {
    return hostRerankQueries.sum();
  }

  /** Counts {@code queries} ivf_pq queries of one segment search, re-ranked on the device or on the host. */
  public void recordIvfPqRerank(int queries, boolean onDevice) {
    (onDevice ? deviceRerankQueries : hostRerankQueries).add(queries);
  }

  /**
   * ivf_pq candidates re-ranked on the host from the raw vectors, over all queries and segments: what the host re-rank
   * costs (a raw vector read and scored each), and what the cross-segment cut ({@link RerankCut}) saves.
   */
  public long hostRerankCandidates() {
    return hostRerankCandidates.sum();
  }

  /** Counts {@code candidates} ivf_pq candidates of one segment search re-ranked on the host. */
  public void recordHostRerankCandidates(long candidates) {
    hostRerankCandidates.add(candidates);
  }

  /**
   * ivf_pq candidates that a pass over several segments returned and the cross-segment cut dropped before the host
   * re-rank ({@link RerankCut}): worse by approximate distance than the best the query re-ranks over those segments.
   */
  public long rerankCutCandidates() {
    return rerankCutCandidates.sum();
  }

  /** Counts {@code candidates} dropped by one pass's cross-segment cut. */
  public void recordRerankCut(long candidates) {
    rerankCutCandidates.add(candidates);
  }

  /**
   * Flat float queries (per segment) answered from a compact copy on the device, their candidates re-ranked and
   * proven on the host (those that could not be proven count as {@link FallbackReason#UNCERTIFIED_CANDIDATES}).
   */
  public long compactCopyQueries() {
    return compactCopyQueries.sum();
  }

  /** Counts {@code queries} flat float queries of one segment answered from its compact copy. */
  public void recordCompactCopyQueries(int queries) {
    compactCopyQueries.add(queries);
  }

  /** Vectors whose graph build's k-NN graph the GPU computed. */
  public long gpuKnnGraphVectors() {
    return gpuKnnGraphVectors.sum();
  }

  /** Vectors whose graph build's k-NN graph the CPU computed (no GPU, or the GPU failed). */
  public long cpuKnnGraphVectors() {
    return cpuKnnGraphVectors.sum();
  }

  void recordKnnGraph(int count, boolean gpu) {
    (gpu ? gpuKnnGraphVectors : cpuKnnGraphVectors).add(count);
  }

  /**
   * Of {@link #cpuKnnGraphVectors}, the vectors of merges whose k-NN graph the CPU found from the merged segments'
   * graphs ({@code GraphMerge}) rather than from scratch.
   */
  public long cpuMergedKnnGraphVectors() {
    return cpuMergedKnnGraphVectors.sum();
  }

  void recordMergedKnnGraph(int count) {
    cpuKnnGraphVectors.add(count);
    cpuMergedKnnGraphVectors.add(count);
  }

  /** Vectors whose graph build's pruning step (step 2) ran on the GPU. */
  public long gpuPrunedVectors() {
    return gpuPrunedVectors.sum();
  }

  /** Vectors whose graph build's pruning step ran on the CPU (no GPU, or the GPU call failed). */
  public long cpuPrunedVectors() {
    return cpuPrunedVectors.sum();
  }

  void recordPruned(int count, boolean gpu) {
    (gpu ? gpuPrunedVectors : cpuPrunedVectors).add(count);
  }

  /** Vectors whose graph build's reverse links (step 3) were added on the GPU. */
  public long gpuReverseLinkedVectors() {
    return gpuReverseLinkedVectors.sum();
  }

  /** Vectors whose graph build's reverse links were added on the CPU (no GPU, or the GPU call failed). */
  public long cpuReverseLinkedVectors() {
    return cpuReverseLinkedVectors.sum();
  }

  void recordReverseLinked(int count, boolean gpu) {
    (gpu ? gpuReverseLinkedVectors : cpuReverseLinkedVectors).add(count);
  }

  /** Graph builds whose entry points' farthest-first traversal (step 4) ran on the GPU. */
  public long gpuEntryPointTraversals() {
    return gpuEntryPointTraversals.sum();
  }

  /** Graph builds whose traversal ran on the CPU (no GPU, or the GPU call failed). */
  public long cpuEntryPointTraversals() {
    return cpuEntryPointTraversals.sum();
  }

  void recordEntryPointTraversal(boolean gpu) {
    (gpu ? gpuEntryPointTraversals : cpuEntryPointTraversals).increment();
  }

  void recordAssigned(long count, boolean gpu) {
    (gpu ? gpuAssignedVectors : cpuAssignedVectors).add(count);
  }

  public long cpuFallbacks() {
    return cpuFallbacks.values().stream().mapToLong(LongAdder::sum).sum();
  }

  /** Searches that ran on the CPU for this reason. */
  public long cpuFallbacks(FallbackReason reason) {
    return cpuFallbacks.get(reason).sum();
  }

  /**
   * Segment searches that found their query's speculation but could not take its result, per reason (only
   * reasons seen): each then searched alone, outside the query's pass.
   */
  public Map<SpeculationMiss, Long> speculativeMissesByReason() {
    return seen(speculativeMisses, SpeculationMiss.class);
  }

  /** Searches that ran on the CPU instead, by reason (reasons never seen are left out). */
  public Map<FallbackReason, Long> cpuFallbacksByReason() {
    return seen(cpuFallbacks, FallbackReason.class);
  }

  /** The counts of {@code counters} above zero, in the enum's order. */
  private static <E extends Enum<E>> Map<E, Long> seen(Map<E, LongAdder> counters, Class<E> type) {
    Map<E, Long> out = new EnumMap<>(type);
    counters.forEach(
        (reason, count) -> {
          long n = count.sum();
          if (n > 0) {
            out.put(reason, n);
          }
        });
    return out;
  }

  void recordGpuSearch(int queries) {
    gpuSearches.increment();
    gpuQueries.add(queries);
  }

  void recordBatch(int searches, int groups, long nanos, long enqueue, long wait) {
    enqueueNanos.add(enqueue);
    waitNanos.add(wait);
    batches.increment();
    batchSearches.add(searches);
    batchGroups.add(groups);
    gpuNanos.add(nanos);
  }

  void recordUpload(long nanos) {
    uploads.increment();
    uploadNanos.add(nanos);
  }

  void recordEviction() {
    evictions.increment();
  }

  void recordSpeculativeHit() {
    speculativeHits.increment();
  }

  void recordSpeculativeMiss(SpeculationMiss reason) {
    speculativeMisses.get(reason).increment();
  }

  void recordWarmup() {
    warmups.increment();
  }

  /** Counts a fallback; returns true the first time this reason is seen (so it is logged once). */
  boolean recordFallback(FallbackReason reason) {
    LongAdder count = cpuFallbacks.get(reason);
    boolean first = count.sum() == 0;
    count.increment();
    return first;
  }

  @Override
  public String toString() {
    return "GpuSearchStats{gpuSearches="
        + gpuSearches()
        + ", gpuQueries="
        + gpuQueries()
        + ", batches="
        + batches()
        + ", uploads="
        + uploads()
        + ", evictions="
        + evictions()
        + ", cpuFallbacks="
        + cpuFallbacksByReason()
        + (speculativeMissesByReason().isEmpty() ? "" : ", speculativeMisses=" + speculativeMissesByReason())
        + "}";
  }
}
