package org.gpuvectors.plugin;

import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchStats;
import org.gpuvectors.codec.gpu.SpeculationMiss;
import org.gpuvectors.cuda.pass.PassGraphStats;
import org.gpuvectors.cuda.rerank.RerankStats;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * {@code GET _gpu_vectors/stats}: the GPU search statistics of the node that receives the request — whether a GPU
 * is in use (or why not), device memory used and budgeted, resident segment fields, searches that ran on the GPU,
 * and searches that fell back to the CPU, by reason.
 */
final class RestGpuVectorsStatsAction extends BaseRestHandler {

    private final Supplier<GpuSearchService> service;

    RestGpuVectorsStatsAction(Supplier<GpuSearchService> service) {
        this.service = service;
    }

    @Override
    public String getName() {
        return "gpu_vectors_stats";
    }

    @Override
    public List<Route> routes() {
        return List.of(new Route(RestRequest.Method.GET, "/_gpu_vectors/stats"));
    }

    @Override
    protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
        GpuSearchService service = this.service.get();
        return channel -> {
            XContentBuilder builder = channel.newBuilder();
            GpuSearchStats stats = service.stats();
            builder.startObject();
            builder.startObject("gpu");
            builder.field("active", service.gpuActive());
            builder.field("device", service.deviceName());
            builder.field("unusable_reason", service.unusableReason());
            builder.endObject();
            builder.startObject("memory");
            builder.field("resident_bytes", service.residentBytes());
            builder.field("budget_bytes", service.budgetBytes());
            builder.field("resident_segment_fields", service.residentCount());
            builder.field("uploads", stats.uploads());
            builder.field("upload_time_in_millis", stats.uploadNanos() / 1_000_000);
            builder.field("evictions", stats.evictions());
            builder.field("warmups", stats.warmups());
            builder.endObject();
            builder.startObject("searches");
            builder.field("gpu", stats.gpuSearches());
            builder.field("gpu_queries", stats.gpuQueries());
            builder.field("gpu_time_in_millis", stats.gpuNanos() / 1_000_000);
            builder.field("speculative_hits", stats.speculativeHits());
            // segments that found their query's pass but not a result they could take (each searched alone)
            countsByReason(builder, "speculative_misses_by_reason", stats.speculativeMissesByReason(), SpeculationMiss::key);
            // IVF searches whose filter made them scan every list (exact search over the accepted vectors)
            builder.field("ivf_exhaustive", stats.exhaustiveIvfSearches());
            // graph searches whose filter made them exact over the accepted vectors (on the GPU)
            builder.field("graph_exact", stats.graphExactSearches());
            builder.field("ivf_pq_device_rerank_queries", stats.deviceRerankQueries());
            builder.field("ivf_pq_host_rerank_queries", stats.hostRerankQueries());
            // flat segment searches of small batches answered from the FP16 copy, and those whose certificate
            // failed (searched again in FP32)
            RerankStats half = service.halfScanStats();
            builder.startObject("flat_half_scan");
            builder.field("queries", half.queries());
            builder.field("rejected", half.fallbacks());
            builder.endObject();
            builder.startObject("batches");
            builder.field("count", stats.batches());
            builder.field("searches", stats.batchSearches());
            builder.field("segment_groups", stats.batchGroups());
            builder.field("enqueue_time_in_millis", stats.enqueueNanos() / 1_000_000);
            builder.field("wait_time_in_millis", stats.waitNanos() / 1_000_000);
            // passes of a shape seen before run as one CUDA graph launch (captured on the shape's second pass)
            PassGraphStats graphs = service.passGraphStats();
            builder.field("graph_captures", graphs.captures());
            builder.field("graph_launches", graphs.launches());
            builder.field("graph_refusals", graphs.refusals());
            builder.field("graphs_kept", graphs.graphs());
            builder.field("graph_bytes", graphs.bytes());
            builder.endObject();
            builder.field("cpu_fallbacks", stats.cpuFallbacks());
            countsByReason(builder, "cpu_fallbacks_by_reason", stats.cpuFallbacksByReason(), FallbackReason::key);
            builder.endObject();
            // index builds: the nearest-centroid step of k-means and of IVF list assignment, and the
            // k-NN graph, pruning, reverse-link and entry-point steps of graph builds
            builder.startObject("builds");
            builder.field("gpu_assigned_vectors", stats.gpuAssignedVectors());
            builder.field("cpu_assigned_vectors", stats.cpuAssignedVectors());
            builder.field("gpu_knn_graph_vectors", stats.gpuKnnGraphVectors());
            builder.field("cpu_knn_graph_vectors", stats.cpuKnnGraphVectors());
            builder.field("cpu_merged_knn_graph_vectors", stats.cpuMergedKnnGraphVectors());
            builder.field("gpu_pruned_vectors", stats.gpuPrunedVectors());
            builder.field("cpu_pruned_vectors", stats.cpuPrunedVectors());
            builder.field("gpu_reverse_linked_vectors", stats.gpuReverseLinkedVectors());
            builder.field("cpu_reverse_linked_vectors", stats.cpuReverseLinkedVectors());
            builder.field("gpu_entry_point_traversals", stats.gpuEntryPointTraversals());
            builder.field("cpu_entry_point_traversals", stats.cpuEntryPointTraversals());
            builder.endObject();
            builder.endObject();
            channel.sendResponse(new RestResponse(RestStatus.OK, builder));
        };
    }

    /** An object {@code name} of the counts by reason, each under its reason's stats key. */
    private static <E extends Enum<E>> void countsByReason(XContentBuilder builder, String name, Map<E, Long> counts,
                                                           Function<E, String> key) throws IOException {
        builder.startObject(name);
        for (Map.Entry<E, Long> entry : counts.entrySet()) {
            builder.field(key.apply(entry.getKey()), entry.getValue());
        }
        builder.endObject();
    }
}
