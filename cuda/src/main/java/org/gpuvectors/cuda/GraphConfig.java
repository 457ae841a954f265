package org.gpuvectors.cuda;


/**
 * The graph part of {@link GpuConfig}: the graph walk's launch shape ({@code GpuGraphIndex.SearchPlan}), which
 * tests and benchmarks fix to compare plans. Production takes {@link #defaults()}; {@code withX} returns a copy with
 * one field changed.
 *
 * @param parents nodes a walk expands per iteration, 1..{@value #MAX_PARENTS}, or 0 (the default): by the launch's
 *     batch size, {@code GpuGraphIndex#latencyParents}(width) below {@code GpuGraphIndex#LATENCY_BATCH} queries, else
 *     1. Why by batch size: a query's latency is about its iterations, which p parents cut about p-fold for a few
 *     percent more distances at the same recall; a batch that fills the GPU pays for those distances instead, so it
 *     expands one (the classic best-first search).
 * @param threads threads per walk block, 64..1024 and a multiple of 32, or 0 (the default): by the launch's batch
 *     size, {@code GpuGraphIndex#LATENCY_BATCH_THREADS} below {@code GpuGraphIndex#LATENCY_BATCH} queries (each query
 *     can have a whole multiprocessor), {@code GpuGraphIndex#SMALL_BATCH_THREADS} below {@code
 *     GpuGraphIndex#SMALL_BATCH} (more distance teams per block where few blocks leave the GPU idle), else 128 (the
 *     blocks fill the GPU and a smaller block pays less per barrier).
 */
public record GraphConfig(int parents, int threads) {
  /** The most parents per iteration (graph_search.cu's kGraphMaxParents). */
  public static final int MAX_PARENTS = 32;

  private static final GraphConfig DEFAULTS = new GraphConfig(0, 0);

  public GraphConfig {
    if (parents < 0 || parents > MAX_PARENTS) {
      throw new IllegalArgumentException(
          "parents must be 0 (by batch size) or in [1, " + MAX_PARENTS + "] but was [" + parents + "]");
    }
    if (threads != 0 && (threads < 64 || threads > 1024 || threads % 32 != 0)) {
      throw new IllegalArgumentException(
          "threads must be 0 (by batch size) or in [64, 1024] and a multiple of 32 but was [" + threads + "]");
    }
  }

  public static GraphConfig defaults() {
    return DEFAULTS;
  }

  public GraphConfig withParents(int value) {
    return new GraphConfig(value, threads);
  }

  public GraphConfig withThreads(int value) {
    return new GraphConfig(parents, value);
  }
}
