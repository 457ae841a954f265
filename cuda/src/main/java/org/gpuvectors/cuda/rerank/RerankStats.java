package org.gpuvectors.cuda.rerank;

/**
 * Queries a candidate path answered and those of them its certificate sent back to the exact search: the TF32
 * candidates of a flat index ({@code GpuFlatIndex.rerankStats}), its FP16 scan ({@code GpuFlatIndex.halfStats}, summed
 * over a device by {@code PassCounters.halfScanStats}).
 */
public record RerankStats(long queries, long fallbacks) {}
