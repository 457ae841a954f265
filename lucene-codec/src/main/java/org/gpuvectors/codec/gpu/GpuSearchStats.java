package org.gpuvectors.codec;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counters of the GPU search path: what ran on the GPU, what fell back to the CPU and why, and what
 * is resident. Thread-safe; read by monitoring (the Elasticsearch plugin's stats) and by tests.
 */
public final class GpuSearchStats {

  private final LongAdder gpuSearches = new LongAdder();
  private final LongAdder gpuQueries = new LongAdder();
  private final LongAdder gpuNanos = new LongAdder();
  private final LongAdder uploads = new LongAdder();
  private final LongAdder evictions = new LongAdder();
  private final Map<String, LongAdder> cpuFallbacks = new ConcurrentHashMap<>();

  /** Calls that ran on the GPU (a batch of queries counts once). */
  public long gpuSearches() {
    return gpuSearches.sum();
  }

  /** Queries answered on the GPU. */
  public long gpuQueries() {
    return gpuQueries.sum();
  }

  /** Wall time spent in GPU searches, uploads excluded. */
  public long gpuNanos() {
    return gpuNanos.sum();
  }

  /** Segment fields uploaded to the GPU. */
  public long uploads() {
    return uploads.sum();
  }

  /** Segment fields evicted to make room under the memory budget. */
  public long evictions() {
    return evictions.sum();
  }

  /** Searches that ran on the CPU instead, in total. */
  public long cpuFallbacks() {
    return cpuFallbacks.values().stream().mapToLong(LongAdder::sum).sum();
  }

  /** Searches that ran on the CPU instead, by reason. */
  public Map<String, Long> cpuFallbacksByReason() {
    Map<String, Long> out = new TreeMap<>();
    cpuFallbacks.forEach((reason, count) -> out.put(reason, count.sum()));
    return out;
  }

  void recordGpuSearch(int queries, long nanos) {
    gpuSearches.increment();
    gpuQueries.add(queries);
    gpuNanos.add(nanos);
  }

  void recordUpload() {
    uploads.increment();
  }

  void recordEviction() {
    evictions.increment();
  }

  /** Counts a fallback; returns true the first time this reason is seen (so it is logged once). */
  boolean recordFallback(String reason) {
    boolean[] first = {false};
    cpuFallbacks
        .computeIfAbsent(
            reason,
            r -> {
              first[0] = true;
              return new LongAdder();
            })
        .increment();
    return first[0];
  }

  @Override
  public String toString() {
    return "GpuSearchStats{gpuSearches="
        + gpuSearches()
        + ", gpuQueries="
        + gpuQueries()
        + ", uploads="
        + uploads()
        + ", evictions="
        + evictions()
        + ", cpuFallbacks="
        + cpuFallbacksByReason()
        + "}";
  }
}
