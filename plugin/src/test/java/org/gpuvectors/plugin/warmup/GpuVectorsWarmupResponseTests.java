package org.gpuvectors.plugin.warmup;

import org.elasticsearch.action.support.DefaultShardOperationFailedException;
import org.elasticsearch.common.Strings;
import org.elasticsearch.common.io.stream.BytesStreamOutput;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.xcontent.ToXContent;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.json.JsonXContent;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GpuVectorsWarmupResponseTests {

    @BeforeAll
    static void elasticsearchLogging() {
        LogConfigurator.configureESLogging();
    }

    static GpuVectorsWarmupResponse response() {
        return new GpuVectorsWarmupResponse(5, 3, 1,
            List.of(new ShardWarmup("b", true, 4, 4, 2_000_000), new ShardWarmup("a", false, 3, 0, 1_000_000),
                new ShardWarmup("b", false, 2, 0, 5_000_000)),
            List.of(new DefaultShardOperationFailedException("a", 1, new IllegalStateException("node left"))));
    }

    @Test
    void sumsTheWarmedCopiesPerIndex() {
        var byIndex = response().byIndex();
        assertEquals(List.of("a", "b"), List.copyOf(byIndex.keySet()));
        assertEquals(new GpuVectorsWarmupResponse.IndexWarmup(2, 1, 6, 4, 7_000_000), byIndex.get("b"));
        assertEquals(new GpuVectorsWarmupResponse.IndexWarmup(1, 0, 3, 0, 1_000_000), byIndex.get("a"));
    }

    @Test
    void roundTripsThroughTheTransport() throws IOException {
        GpuVectorsWarmupResponse response = response();
        GpuVectorsWarmupResponse copy;
        try (BytesStreamOutput out = new BytesStreamOutput()) {
            response.writeTo(out);
            try (StreamInput in = out.bytes().streamInput()) {
                copy = new GpuVectorsWarmupResponse(in);
            }
        }
        assertEquals(response.shards(), copy.shards());
        assertEquals(5, copy.getTotalShards());
        assertEquals(3, copy.getSuccessfulShards());
        assertEquals(1, copy.getFailedShards());
        assertEquals(1, copy.getShardFailures().length);
        assertEquals(json(response), json(copy));
    }

    @Test
    void requestRoundTripsThroughTheTransport() throws IOException {
        GpuVectorsWarmupRequest request = new GpuVectorsWarmupRequest("a", "b*");
        try (BytesStreamOutput out = new BytesStreamOutput()) {
            request.writeTo(out);
            try (StreamInput in = out.bytes().streamInput()) {
                GpuVectorsWarmupRequest copy = new GpuVectorsWarmupRequest(in);
                assertEquals(List.of("a", "b*"), List.of(copy.indices()));
                assertEquals(request.indicesOptions(), copy.indicesOptions());
            }
        }
    }

    @Test
    void showsShardsAndIndices() throws IOException {
        String json = json(response());
        assertTrue(json.startsWith("{\"_shards\":{\"total\":5,\"successful\":3,\"failed\":1,\"failures\":[{\"shard\":1,\"index\":\"a\""), json);
        assertTrue(json.endsWith("\"indices\":{\"a\":{\"shards\":1,\"gpu_shards\":0,\"segment_fields\":3,\"resident_segment_fields\":0,"
            + "\"time_in_millis\":1},\"b\":{\"shards\":2,\"gpu_shards\":1,\"segment_fields\":6,\"resident_segment_fields\":4,"
            + "\"time_in_millis\":7}}}"), json);
    }

    static String json(GpuVectorsWarmupResponse response) throws IOException {
        XContentBuilder builder = JsonXContent.contentBuilder();
        response.toXContent(builder, ToXContent.EMPTY_PARAMS);
        return Strings.toString(builder);
    }
}
