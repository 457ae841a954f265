package org.gpuvectors.plugin.warmup;

import org.elasticsearch.action.support.DefaultShardOperationFailedException;
import org.elasticsearch.action.support.broadcast.BroadcastResponse;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.xcontent.XContentBuilder;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The answer of {@code POST <index>/_gpu_vectors/warmup}: {@code _shards} (every shard copy of the indices: total,
 * successful, failed with the failures), then per index what the copies that were warmed did, summed over them:
 * {@code shards} (copies warmed), {@code gpu_shards} (of those, copies on a node with a usable GPU),
 * {@code segment_fields}, {@code resident_segment_fields} and {@code time_in_millis} (summed over copies; nodes warm
 * their copies in parallel).
 */
public final class GpuVectorsWarmupResponse extends BroadcastResponse {

    private final List<ShardWarmup> shards;

    public GpuVectorsWarmupResponse(
        int totalShards,
        int successfulShards,
        int failedShards,
        List<ShardWarmup> shards,
        List<DefaultShardOperationFailedException> failures
    ) {
        super(totalShards, successfulShards, failedShards, failures);
        this.shards = List.copyOf(shards);
    }

    public GpuVectorsWarmupResponse(StreamInput in) throws IOException {
        super(in);
        this.shards = in.readCollectionAsList(ShardWarmup::readFrom);
    }

    public List<ShardWarmup> shards() {
        return shards;
    }

    @Override
    public void writeTo(StreamOutput out) throws IOException {
        super.writeTo(out);
        out.writeCollection(shards);
    }

    /** The copies' results summed per index (by name, in name order). */
    public Map<String, IndexWarmup> byIndex() {
        Map<String, IndexWarmup> indices = new TreeMap<>();
        for (ShardWarmup shard : shards) {
            indices.merge(shard.index(), IndexWarmup.of(shard), IndexWarmup::plus);
        }
        return indices;
    }

    @Override
    protected void addCustomXContentFields(XContentBuilder builder, Params params) throws IOException {
        builder.startObject("indices");
        for (Map.Entry<String, IndexWarmup> entry : byIndex().entrySet()) {
            IndexWarmup index = entry.getValue();
            builder.startObject(entry.getKey());
            builder.field("shards", index.shards());
            builder.field("gpu_shards", index.gpuShards());
            builder.field("segment_fields", index.segmentFields());
            builder.field("resident_segment_fields", index.residentSegmentFields());
            builder.field("time_in_millis", index.nanos() / 1_000_000);
            builder.endObject();
        }
        builder.endObject();
    }

    /** One index's warmed copies, summed. */
    public record IndexWarmup(int shards, int gpuShards, long segmentFields, long residentSegmentFields, long nanos) {

        static IndexWarmup of(ShardWarmup shard) {
            return new IndexWarmup(1, shard.gpuActive() ? 1 : 0, shard.segmentFields(), shard.residentSegmentFields(), shard.nanos());
        }

        IndexWarmup plus(IndexWarmup other) {
            return new IndexWarmup(shards + other.shards, gpuShards + other.gpuShards, segmentFields + other.segmentFields,
                residentSegmentFields + other.residentSegmentFields, nanos + other.nanos);
        }
    }
}
