package org.gpuvectors.cuda;


/**
 * The ivf part of {@link GpuConfig}: the list scans' thresholds ({@code GpuIvfFlatIndex}, {@code GpuIvfPqIndex}),
 * which tests move to reach each scan on small data, and the flags that force a path for tests and benchmarks.
 * Production takes {@link #defaults()}; {@code withX} returns a copy with one field changed.
 *
 * @param groupedPairsPerList IVF-Flat: a search of nq queries probing nprobe lists each takes the grouped scan (each
 *     list's probing queries in tiles, the list read once per tile) from nq x nprobe >= this x nlist (and k up to
 *     {@code GpuIvfFlatIndex#GROUPED_MAX_K}), else a block per (query, list). Why 8, an estimate: a grouped tile
 *     computes its 32 queries whether or not its slots are filled (about 3 pairs' list reads) and a block of queries
 *     pays the grouping launches, so the grouped scan should win from about 4 pairs a list; 8 keeps it ahead should a
 *     tile cost twice the estimate. 0: always (tests), {@link Integer#MAX_VALUE}: never. At least 0.
 * @param groupedMinQueries IVF-PQ, precomputed tables: a block of at least this many queries scans all of a query's
 *     probed lists in one block (its table loaded once, not nprobe times); smaller ones a block per (query, list),
 *     for parallelism at small batches. Why 256: the per-query grid needs about two blocks per multiprocessor to fill
 *     the GPU. 0: always, {@link Integer#MAX_VALUE}: never. At least 0.
 * @param keysMaxQueries IVF-PQ: batches of at most this many queries take the small-batch scan (every accepted code of
 *     the probed lists appended to the query's row, then a radix selection) instead of a queue of k per (query,
 *     list) and their merge. Why 32: a few queries' queues and merge levels cost more than one radix selection over
 *     their keys, while a large batch's rows would outgrow their memory budget. 0: never. At least 0.
 * @param keysBatchMinK IVF-PQ: larger batches take the keys scan too, a block of queries at a time, from this k on.
 *     Why 513: past 512 (the queue's bucket of 1,024) a queue of k per query bounds the grouped table scan, while a
 *     row of keys and a radix selection cost about the same at any k. 1: always, {@link Integer#MAX_VALUE}: never.
 *     At least 1.
 * @param keysBatchMaxBlock IVF-PQ, for tests: the most queries a block of the large-batch keys scan holds (default
 *     {@link Integer#MAX_VALUE}: as many as the memory budget allows), which forces several blocks on small data. At
 *     least 1.
 * @param fullTables IVF-PQ, for tests and benchmarks: forces the full per-(query, list) table scan (ivf_pq.cu) instead
 *     of the precomputed tables (default false: the full tables remain only where a query's table does not fit in
 *     shared memory).
 * @param globalTables IVF-PQ, for tests: forces the full per-(query, list) table scan with its tables in global memory
 *     (implies {@code fullTables}; default false: global memory only where the table does not fit in shared memory).
 * @param coarseAlone IVF-PQ, for tests: forces each member of a shared selection ({@code SharedKeySelection}) to run
 *     its coarse step alone instead of as an entry of one table launch (default false).
 * @param skipDeviceRerank IVF-PQ, for tests: forces searches to return the approximate candidates even when the raw
 *     vectors are resident (the caller re-ranks them on the host; default false: re-ranked on the device).
 * @param fusedSelectMaxCandidates IVF-PQ re-rank: the most candidates a row may have for the re-rank kernel to select
 *     its k best itself (a few rows, {@code GpuIvfPqIndex#FUSED_SELECT_MAX_ROWS}) instead of a selection launch after
 *     it. Why 256: the row's last block ranks them with its 128 threads, count^2 / 128 compares each, which past about
 *     256 outlasts the launch it saves. Tests raise it to the kernel's limit. 1..{@link
 *     #MAX_FUSED_SELECT_CANDIDATES}.
 */
public record IvfConfig(int groupedPairsPerList, int groupedMinQueries, int keysMaxQueries, int keysBatchMinK,
                        int keysBatchMaxBlock, boolean fullTables, boolean globalTables, boolean coarseAlone,
                        boolean skipDeviceRerank, int fusedSelectMaxCandidates) {

  /**
   * The re-rank kernel's limit on the candidates it selects from itself ({@code RerankParams.SELECT_MAX_CANDIDATES},
   * rerank_kernels.cu's kRerankSelectMax; RerankParamsTest holds the two equal): the configuration is checked against
   * it without depending on the re-rank.
   */
  public static final int MAX_FUSED_SELECT_CANDIDATES = 512;

  private static final IvfConfig DEFAULTS =
      new IvfConfig(8, 256, 32, 513, Integer.MAX_VALUE, false, false, false, false, 256);

  public IvfConfig {
    atLeast("groupedPairsPerList", groupedPairsPerList, 0);
    atLeast("groupedMinQueries", groupedMinQueries, 0);
    atLeast("keysMaxQueries", keysMaxQueries, 0);
    atLeast("keysBatchMinK", keysBatchMinK, 1);
    atLeast("keysBatchMaxBlock", keysBatchMaxBlock, 1);
    if (fusedSelectMaxCandidates < 1 || fusedSelectMaxCandidates > MAX_FUSED_SELECT_CANDIDATES) {
      throw new IllegalArgumentException("fusedSelectMaxCandidates must be in [1, " + MAX_FUSED_SELECT_CANDIDATES
          + "] but was [" + fusedSelectMaxCandidates + "]");
    }
  }

  private static void atLeast(String name, int value, int min) {
    if (value < min) {
      throw new IllegalArgumentException(name + " must be at least " + min + " but was [" + value + "]");
    }
  }

  public static IvfConfig defaults() {
    return DEFAULTS;
  }

  public IvfConfig withGroupedPairsPerList(int value) {
    return new IvfConfig(value, groupedMinQueries, keysMaxQueries, keysBatchMinK, keysBatchMaxBlock, fullTables,
        globalTables, coarseAlone, skipDeviceRerank, fusedSelectMaxCandidates);
  }

  public IvfConfig withGroupedMinQueries(int value) {
    return new IvfConfig(groupedPairsPerList, value, keysMaxQueries, keysBatchMinK, keysBatchMaxBlock, fullTables,
        globalTables, coarseAlone, skipDeviceRerank, fusedSelectMaxCandidates);
  }

  public IvfConfig withKeysMaxQueries(int value) {
    return new IvfConfig(groupedPairsPerList, groupedMinQueries, value, keysBatchMinK, keysBatchMaxBlock, fullTables,
        globalTables, coarseAlone, skipDeviceRerank, fusedSelectMaxCandidates);
  }

  public IvfConfig withKeysBatchMinK(int value) {
    return new IvfConfig(groupedPairsPerList, groupedMinQueries, keysMaxQueries, value, keysBatchMaxBlock, fullTables,
        globalTables, coarseAlone, skipDeviceRerank, fusedSelectMaxCandidates);
  }

  public IvfConfig withKeysBatchMaxBlock(int value) {
    return new IvfConfig(groupedPairsPerList, groupedMinQueries, keysMaxQueries, keysBatchMinK, value, fullTables,
        globalTables, coarseAlone, skipDeviceRerank, fusedSelectMaxCandidates);
  }

  public IvfConfig withFullTables(boolean value) {
    return new IvfConfig(groupedPairsPerList, groupedMinQueries, keysMaxQueries, keysBatchMinK, keysBatchMaxBlock,
        value, globalTables, coarseAlone, skipDeviceRerank, fusedSelectMaxCandidates);
  }

  public IvfConfig withGlobalTables(boolean value) {
    return new IvfConfig(groupedPairsPerList, groupedMinQueries, keysMaxQueries, keysBatchMinK, keysBatchMaxBlock,
        fullTables, value, coarseAlone, skipDeviceRerank, fusedSelectMaxCandidates);
  }

  public IvfConfig withCoarseAlone(boolean value) {
    return new IvfConfig(groupedPairsPerList, groupedMinQueries, keysMaxQueries, keysBatchMinK, keysBatchMaxBlock,
        fullTables, globalTables, value, skipDeviceRerank, fusedSelectMaxCandidates);
  }

  public IvfConfig withSkipDeviceRerank(boolean value) {
    return new IvfConfig(groupedPairsPerList, groupedMinQueries, keysMaxQueries, keysBatchMinK, keysBatchMaxBlock,
        fullTables, globalTables, coarseAlone, value, fusedSelectMaxCandidates);
  }

  public IvfConfig withFusedSelectMaxCandidates(int value) {
    return new IvfConfig(groupedPairsPerList, groupedMinQueries, keysMaxQueries, keysBatchMinK, keysBatchMaxBlock,
        fullTables, globalTables, coarseAlone, skipDeviceRerank, value);
  }
}
