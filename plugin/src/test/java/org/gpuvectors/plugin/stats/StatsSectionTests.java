package org.gpuvectors.plugin.stats;

import org.elasticsearch.common.Strings;
import org.elasticsearch.common.io.stream.BytesStreamOutput;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.xcontent.ToXContent;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.json.JsonXContent;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

class StatsSectionTests {

    static StatsSection node(long uploads, long fallbacks, Map<String, Long> reasons) {
        StatsSection.Builder byReason = StatsSection.builder();
        reasons.forEach(byReason::counter);
        return StatsSection.builder()
            .section("memory", StatsSection.builder().counter("uploads", uploads).build())
            .section("searches", StatsSection.builder()
                .counter("cpu_fallbacks", fallbacks)
                .section("cpu_fallbacks_by_reason", byReason.build())
                .build())
            .build();
    }

    @Test
    void plusAddsCountersOfTheSameNameAndKeepsNamesOfEitherSide() {
        StatsSection a = node(2, 5, Map.of("no_gpu", 5L));
        StatsSection b = node(3, 7, Map.of("k_too_large", 4L));
        StatsSection sum = a.plus(b);
        assertEquals(5L, sum.counter("memory.uploads"));
        assertEquals(12L, sum.counter("searches.cpu_fallbacks"));
        assertEquals(5L, sum.counter("searches.cpu_fallbacks_by_reason.no_gpu"), "a reason seen on one node only");
        assertEquals(4L, sum.counter("searches.cpu_fallbacks_by_reason.k_too_large"));
        assertEquals(List.of("memory", "searches"), List.copyOf(sum.entries().keySet()), "the nodes' order");
        assertEquals(a, StatsSection.EMPTY.plus(a), "the empty section is the sum of no nodes");
        assertNull(sum.counter("memory.no_such_counter"));
    }

    @Test
    void aCounterAndASectionOfTheSameNameDoNotAdd() {
        StatsSection counter = StatsSection.builder().counter("memory", 1).build();
        StatsSection section = StatsSection.builder().section("memory", StatsSection.EMPTY).build();
        assertThrows(IllegalArgumentException.class, () -> counter.plus(section));
        assertThrows(IllegalArgumentException.class, () -> StatsSection.builder().counter("a", 1).counter("a", 2));
    }

    @Test
    void roundTripsThroughTheTransportKeepingOrderAndEmptySections() throws IOException {
        StatsSection section = node(Long.MAX_VALUE, 0, Map.of()).plus(node(0, 3, Map.of("no_gpu", 3L)));
        StatsSection copy = roundTrip(section);
        assertEquals(section, copy);
        assertEquals(json(section), json(copy));
    }

    @Test
    void emptySectionsShowAsEmptyObjects() throws IOException {
        assertEquals("{\"memory\":{\"uploads\":1},\"searches\":{\"cpu_fallbacks\":0,\"cpu_fallbacks_by_reason\":{}}}",
            json(node(1, 0, Map.of())));
    }

    static StatsSection roundTrip(StatsSection section) throws IOException {
        try (BytesStreamOutput out = new BytesStreamOutput()) {
            section.writeTo(out);
            try (StreamInput in = out.bytes().streamInput()) {
                return StatsSection.readFrom(in);
            }
        }
    }

    static String json(ToXContent fragment) throws IOException {
        XContentBuilder builder = JsonXContent.contentBuilder();
        builder.startObject();
        fragment.toXContent(builder, ToXContent.EMPTY_PARAMS);
        builder.endObject();
        return Strings.toString(builder);
    }
}
