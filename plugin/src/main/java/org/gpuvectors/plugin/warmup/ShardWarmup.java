package org.gpuvectors.plugin.warmup;

import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.common.io.stream.Writeable;

import java.io.IOException;

/**
 * What warming one shard copy did: its index, whether its node has a usable GPU, the {@code gpu_vector} segment fields
 * it found and those now resident on the GPU, and the time it took.
 */
public record ShardWarmup(String index, boolean gpuActive, int segmentFields, int residentSegmentFields, long nanos)
    implements Writeable {

    public static ShardWarmup readFrom(StreamInput in) throws IOException {
        return new ShardWarmup(in.readString(), in.readBoolean(), in.readVInt(), in.readVInt(), in.readVLong());
    }

    @Override
    public void writeTo(StreamOutput out) throws IOException {
        out.writeString(index);
        out.writeBoolean(gpuActive);
        out.writeVInt(segmentFields);
        out.writeVInt(residentSegmentFields);
        out.writeVLong(nanos);
    }
}
