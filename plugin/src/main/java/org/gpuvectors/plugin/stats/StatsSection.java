package org.gpuvectors.plugin.stats;

import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.common.io.stream.Writeable;
import org.elasticsearch.xcontent.ToXContentFragment;
import org.elasticsearch.xcontent.XContentBuilder;

import java.io.IOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * An immutable, ordered tree of named counters ({@code memory.uploads}, {@code searches.cpu_fallbacks_by_reason.no_gpu},
 * ...): the numbers of one node's {@code GET _gpu_vectors/stats} section. One shape serves a node and the sum of
 * nodes: {@link #plus} adds counters of the same name and keeps names that only one side has (a fallback reason seen
 * on one node only), so the sum needs no list of fields that could drift from the node's. Empty sections are kept:
 * "no reason yet" shows as {@code {}}, as it did before the stats went cluster-wide.
 */
public final class StatsSection implements Writeable, ToXContentFragment {

    public static final StatsSection EMPTY = new StatsSection(Map.of());

    /** name -> {@link Long} or {@link StatsSection}, in the order they were added. */
    private final Map<String, Object> entries;

    private StatsSection(Map<String, Object> entries) {
        this.entries = entries;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Adds, name by name, the counters of {@code other}: the sum of two nodes' sections. */
    public StatsSection plus(StatsSection other) {
        Map<String, Object> sum = new LinkedHashMap<>(entries);
        for (Map.Entry<String, Object> entry : other.entries.entrySet()) {
            sum.merge(entry.getKey(), entry.getValue(), (a, b) -> add(entry.getKey(), a, b));
        }
        return new StatsSection(Collections.unmodifiableMap(sum));
    }

    private static Object add(String name, Object a, Object b) {
        if (a instanceof Long x && b instanceof Long y) {
            return x + y;
        }
        if (a instanceof StatsSection x && b instanceof StatsSection y) {
            return x.plus(y);
        }
        throw new IllegalArgumentException("[" + name + "] is a counter on one side and a section on the other");
    }

    /** The counter at a dotted path ({@code searches.batches.count}), or null when there is none. */
    public Long counter(String path) {
        Object cur = this;
        for (String part : path.split("\\.")) {
            if (cur instanceof StatsSection section) {
                cur = section.entries.get(part);
            } else {
                return null;
            }
        }
        return cur instanceof Long value ? value : null;
    }

    /** The section at a dotted path, or null. */
    public StatsSection section(String path) {
        Object cur = this;
        for (String part : path.split("\\.")) {
            cur = cur instanceof StatsSection section ? section.entries.get(part) : null;
        }
        return cur instanceof StatsSection section ? section : null;
    }

    public Map<String, Object> entries() {
        return entries;
    }

    public static StatsSection readFrom(StreamInput in) throws IOException {
        int size = in.readVInt();
        Map<String, Object> entries = new LinkedHashMap<>();
        for (int i = 0; i < size; i++) {
            String name = in.readString();
            entries.put(name, in.readBoolean() ? readFrom(in) : (Object) in.readZLong());
        }
        return new StatsSection(Collections.unmodifiableMap(entries));
    }

    @Override
    public void writeTo(StreamOutput out) throws IOException {
        out.writeVInt(entries.size());
        for (Map.Entry<String, Object> entry : entries.entrySet()) {
            out.writeString(entry.getKey());
            if (entry.getValue() instanceof StatsSection section) {
                out.writeBoolean(true);
                section.writeTo(out);
            } else {
                out.writeBoolean(false);
                out.writeZLong((Long) entry.getValue());
            }
        }
    }

    @Override
    public XContentBuilder toXContent(XContentBuilder builder, Params params) throws IOException {
        for (Map.Entry<String, Object> entry : entries.entrySet()) {
            if (entry.getValue() instanceof StatsSection section) {
                builder.startObject(entry.getKey());
                section.toXContent(builder, params);
                builder.endObject();
            } else {
                builder.field(entry.getKey(), (long) (Long) entry.getValue());
            }
        }
        return builder;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StatsSection other && entries.equals(other.entries);
    }

    @Override
    public int hashCode() {
        return Objects.hash(entries);
    }

    @Override
    public String toString() {
        return entries.toString();
    }

    /** Builds a section in the order its counters should be shown. */
    public static final class Builder {
        private final Map<String, Object> entries = new LinkedHashMap<>();

        public Builder counter(String name, long value) {
            put(name, value);
            return this;
        }

        public Builder section(String name, StatsSection section) {
            put(name, section);
            return this;
        }

        /** A section of counts by reason, each under its key (only the reasons seen; may be empty). */
        public <E> Builder countsByKey(String name, Map<E, Long> counts, java.util.function.Function<E, String> key) {
            Builder reasons = new Builder();
            counts.forEach((reason, count) -> reasons.counter(key.apply(reason), count));
            return section(name, reasons.build());
        }

        private void put(String name, Object value) {
            if (entries.putIfAbsent(name, value) != null) {
                throw new IllegalArgumentException("[" + name + "] added twice");
            }
        }

        public StatsSection build() {
            return new StatsSection(Collections.unmodifiableMap(new LinkedHashMap<>(entries)));
        }
    }
}
