package org.gpuvectors.plugin.stats;

import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.common.io.stream.Writeable;
import org.elasticsearch.xcontent.ToXContentFragment;
import org.elasticsearch.xcontent.XContentBuilder;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchStats;
import org.gpuvectors.codec.gpu.SpeculationMiss;
import org.gpuvectors.cuda.MemoryPart;
import org.gpuvectors.cuda.rerank.RerankStats;
import org.gpuvectors.cuda.pass.PassGraphStats;

import java.io.IOException;

/**
 * One node's GPU search statistics, as its section of {@code GET _gpu_vectors/stats} shows them: whether a GPU is in
 * use (or why not) and its device, then the counters ({@code memory}, {@code searches}, {@code builds}). Made on the
 * node from its {@link GpuSearchService}, sent to the node that gathers them.
 */
public record GpuNodeStats(boolean gpuActive, String device, String unusableReason, StatsSection counters)
    implements Writeable, ToXContentFragment {

    public static GpuNodeStats readFrom(StreamInput in) throws IOException {
        return new GpuNodeStats(in.readBoolean(), in.readOptionalString(), in.readOptionalString(), StatsSection.readFrom(in));
    }

    @Override
    public void writeTo(StreamOutput out) throws IOException {
        out.writeBoolean(gpuActive);
        out.writeOptionalString(device);
        out.writeOptionalString(unusableReason);
        counters.writeTo(out);
    }

    @Override
    public XContentBuilder toXContent(XContentBuilder builder, Params params) throws IOException {
        builder.startObject("gpu");
        builder.field("active", gpuActive);
        builder.field("device", device);
        builder.field("unusable_reason", unusableReason);
        builder.endObject();
        return counters.toXContent(builder, params);
    }

    /** The statistics of the node whose service this is, now. */
    public static GpuNodeStats of(GpuSearchService service) {
        GpuSearchStats stats = service.stats();
        StatsSection memory = StatsSection.builder()
            .counter("resident_bytes", service.residentBytes())
            // what the resident bytes hold (vectors, their FP16 copy, norms, centroids, lists, PQ codes and codebooks,
            // graphs): every part, zeros included
            .countsByKey("resident_bytes_by_part", service.residentBytesByPart().asMap(), MemoryPart::key)
            .counter("budget_bytes", service.budgetBytes())
            .counter("resident_segment_fields", service.residentCount())
            .counter("uploads", stats.uploads())
            .counter("upload_time_in_millis", stats.uploadNanos() / 1_000_000)
            .counter("evictions", stats.evictions())
            .counter("warmups", stats.warmups())
            .build();
        // flat segment searches of small batches answered from the FP16 copy, and those whose certificate failed
        // (searched again in FP32)
        RerankStats half = service.halfScanStats();
        StatsSection halfScan = StatsSection.builder()
            .counter("queries", half.queries())
            .counter("rejected", half.fallbacks())
            .build();
        // passes of a shape seen before run as one CUDA graph launch (captured on the shape's second pass)
        PassGraphStats graphs = service.passGraphStats();
        StatsSection batches = StatsSection.builder()
            .counter("count", stats.batches())
            .counter("searches", stats.batchSearches())
            .counter("segment_groups", stats.batchGroups())
            .counter("enqueue_time_in_millis", stats.enqueueNanos() / 1_000_000)
            .counter("wait_time_in_millis", stats.waitNanos() / 1_000_000)
            .counter("graph_captures", graphs.captures())
            .counter("graph_launches", graphs.launches())
            .counter("graph_refusals", graphs.refusals())
            .counter("graphs_kept", graphs.graphs())
            .counter("graph_bytes", graphs.bytes())
            .build();
        StatsSection searches = StatsSection.builder()
            .counter("gpu", stats.gpuSearches())
            .counter("gpu_queries", stats.gpuQueries())
            .counter("gpu_time_in_millis", stats.gpuNanos() / 1_000_000)
            .counter("speculative_hits", stats.speculativeHits())
            // segments that found their query's pass but not a result they could take (each searched alone)
            .countsByKey("speculative_misses_by_reason", stats.speculativeMissesByReason(), SpeculationMiss::key)
            // IVF searches whose filter made them scan every list (exact search over the accepted vectors)
            .counter("ivf_exhaustive", stats.exhaustiveIvfSearches())
            // graph searches whose filter made them exact over the accepted vectors (on the GPU)
            .counter("graph_exact", stats.graphExactSearches())
            .counter("ivf_pq_device_rerank_queries", stats.deviceRerankQueries())
            .counter("ivf_pq_host_rerank_queries", stats.hostRerankQueries())
            // ivf_pq candidates re-ranked on the host from the raw vectors, and those a pass over several segments
            // resident as codes dropped first (the best rerank factor x k of all of them are re-ranked, not per segment)
            .counter("ivf_pq_host_rerank_candidates", stats.hostRerankCandidates())
            .counter("ivf_pq_rerank_cut_candidates", stats.rerankCutCandidates())
            // flat float queries answered from a compact (bfloat16) copy, re-ranked and proven on the host
            .counter("flat_compact_copy_queries", stats.compactCopyQueries())
            .section("flat_half_scan", halfScan)
            .section("batches", batches)
            .counter("cpu_fallbacks", stats.cpuFallbacks())
            .countsByKey("cpu_fallbacks_by_reason", stats.cpuFallbacksByReason(), FallbackReason::key)
            .build();
        // index builds: the nearest-centroid step of k-means and of IVF list assignment, and the k-NN graph, pruning,
        // reverse-link and entry-point steps of graph builds
        StatsSection builds = StatsSection.builder()
            .counter("gpu_assigned_vectors", stats.gpuAssignedVectors())
            .counter("cpu_assigned_vectors", stats.cpuAssignedVectors())
            .counter("gpu_knn_graph_vectors", stats.gpuKnnGraphVectors())
            .counter("cpu_knn_graph_vectors", stats.cpuKnnGraphVectors())
            .counter("cpu_merged_knn_graph_vectors", stats.cpuMergedKnnGraphVectors())
            .counter("gpu_pruned_vectors", stats.gpuPrunedVectors())
            .counter("cpu_pruned_vectors", stats.cpuPrunedVectors())
            .counter("gpu_reverse_linked_vectors", stats.gpuReverseLinkedVectors())
            .counter("cpu_reverse_linked_vectors", stats.cpuReverseLinkedVectors())
            .counter("gpu_entry_point_traversals", stats.gpuEntryPointTraversals())
            .counter("cpu_entry_point_traversals", stats.cpuEntryPointTraversals())
            .build();
        StatsSection counters = StatsSection.builder()
            .section("memory", memory)
            .section("searches", searches)
            .section("builds", builds)
            .build();
        return new GpuNodeStats(service.gpuActive(), service.deviceName(), service.unusableReason(), counters);
    }
}
