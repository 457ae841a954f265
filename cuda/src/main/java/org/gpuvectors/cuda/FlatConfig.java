package org.gpuvectors.cuda;


/**
 * The flat part of {@link GpuConfig}: how a device's {@code GpuFlatIndex}es (exact search; also the centroids of the
 * IVF indexes) search. Each field is validated here; {@code withX} returns a copy with one field changed (tests move a
 * bound to reach a path; production takes {@link #defaults()}).
 *
 * @param halfCopy whether {@code GpuFlatIndex#addHalfCopy} gives a flat index its FP16 copy: the vectors rounded to
 *     FP16 under one power-of-two scale, rows padded to {@code HalfScanParams#DIM_STEP} dimensions, {@code
 *     GpuFlatIndex#halfCopyBytes} (2 bytes a padded dimension a vector) of device memory on top of the FP32 vectors.
 *     Small batches then take their candidates from the copy on tensor cores and re-rank them exactly in FP32, with a
 *     certificate per query that sends a query it cannot vouch for back to the FP32 scan: the same results, half the
 *     bytes read. On by default because a small batch's search reads the whole index and so costs about the bytes it
 *     reads; off leaves the memory to more segments, and small batches then take the FP32 scan.
 * @param scanMaxQueries the largest batch that a flat index searched on its own answers by the FP32 scan ({@code
 *     GpuFlatIndex.Strategy#SCAN}: the vectors read once per block of 8 queries, {@code
 *     FlatScanParams#QUERIES_PER_BLOCK}, coalesced and shared by the block's queries) under {@code
 *     GpuFlatIndex.Strategy#AUTO}, where k, the dimensions and the precision allow it ({@code
 *     GpuFlatIndex#scanTakes}); larger batches take the GEMM path. 0: none does (a pass's scan table over several
 *     segments still scans its members, and queries the half scan's certificate rejects are still searched again by
 *     the scan). At least 0. Default {@value #DEFAULT_SCAN_MAX_QUERIES}, one block of queries: for a few queries the
 *     scan's one launch costs less than the GEMM path's GEMM, tile selection and merge, while each further block
 *     reads the vectors again where one GEMM reads them once for the whole batch.
 * @param halfMaxQueries the largest batch that a flat index with its FP16 copy, searched on its own, answers by the
 *     half scan ({@code GpuFlatIndex.Strategy#HALF_SCAN}) under {@code GpuFlatIndex.Strategy#AUTO} (k at most {@code
 *     GpuFlatIndex#HALF_MAX_K}, FP32 precision). 0: none does (the FP32 scan or the GEMM path answers them; a pass's
 *     scan table still takes its members' candidates from their copies). At least 0. Default {@value
 *     #DEFAULT_HALF_MAX_QUERIES}, two blocks of 8 queries ({@code HalfScanParams#QUERIES_PER_BLOCK}): each block
 *     reads the copy once, and two reads of the FP16 copy cost the bytes of one read of the FP32 vectors.
 * @param tileBudgetBytes bytes of one tile of the GEMM path's distance matrix (FP32, queries x the tile's vectors):
 *     the path computes the matrix a tile of vectors at a time, never whole, and selects each tile's k best before
 *     the next. At least 1 (a tile holds at least 1,024 vectors whatever the budget). Default 256 MiB: large enough
 *     that a tile's GEMM runs at full rate and few tiles' lists are merged, small against the device memory that the
 *     indexes need. Tests shrink it to search many tiles.
 */
public record FlatConfig(boolean halfCopy, int scanMaxQueries, int halfMaxQueries, long tileBudgetBytes) {
  static final int DEFAULT_SCAN_MAX_QUERIES = 8;
  static final int DEFAULT_HALF_MAX_QUERIES = 16;
  static final long DEFAULT_TILE_BUDGET_BYTES = 256L << 20;

  private static final FlatConfig DEFAULTS =
      new FlatConfig(true, DEFAULT_SCAN_MAX_QUERIES, DEFAULT_HALF_MAX_QUERIES, DEFAULT_TILE_BUDGET_BYTES);

  public FlatConfig {
    if (scanMaxQueries < 0) {
      throw new IllegalArgumentException("scan max queries must be at least 0 but was [" + scanMaxQueries + "]");
    }
    if (halfMaxQueries < 0) {
      throw new IllegalArgumentException("half max queries must be at least 0 but was [" + halfMaxQueries + "]");
    }
    if (tileBudgetBytes < 1) {
      throw new IllegalArgumentException("tile budget bytes must be at least 1 but was [" + tileBudgetBytes + "]");
    }
  }

  public static FlatConfig defaults() {
    return DEFAULTS;
  }

  public FlatConfig withHalfCopy(boolean value) {
    return new FlatConfig(value, scanMaxQueries, halfMaxQueries, tileBudgetBytes);
  }

  public FlatConfig withScanMaxQueries(int value) {
    return new FlatConfig(halfCopy, value, halfMaxQueries, tileBudgetBytes);
  }

  public FlatConfig withHalfMaxQueries(int value) {
    return new FlatConfig(halfCopy, scanMaxQueries, value, tileBudgetBytes);
  }

  public FlatConfig withTileBudgetBytes(long value) {
    return new FlatConfig(halfCopy, scanMaxQueries, halfMaxQueries, value);
  }
}
