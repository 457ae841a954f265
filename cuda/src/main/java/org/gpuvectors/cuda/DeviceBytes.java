package org.gpuvectors.cuda;

import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;

/**
 * Device memory by {@link MemoryPart}: what a {@link DeviceIndex} holds, or a sum of such. Immutable; made with {@link
 * #builder()} and {@link #plus}.
 */
public final class DeviceBytes {

  /** No device memory. */
  public static final DeviceBytes NONE = new DeviceBytes(new long[MemoryPart.values().length]);

  private final long[] bytes; // by MemoryPart ordinal

  private DeviceBytes(long[] bytes) {
    this.bytes = bytes;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Bytes of one part. */
  public long get(MemoryPart part) {
    return bytes[part.ordinal()];
  }

  /** Bytes of every part together. */
  public long total() {
    long sum = 0;
    for (long b : bytes) {
      sum += b;
    }
    return sum;
  }

  /** These bytes and {@code other}'s, part by part. */
  public DeviceBytes plus(DeviceBytes other) {
    long[] sum = bytes.clone();
    for (int i = 0; i < sum.length; i++) {
      sum[i] += other.bytes[i];
    }
    return new DeviceBytes(sum);
  }

  /** Every part's bytes, zeros included, in {@link MemoryPart} order. */
  public Map<MemoryPart, Long> asMap() {
    EnumMap<MemoryPart, Long> map = new EnumMap<>(MemoryPart.class);
    for (MemoryPart part : MemoryPart.values()) {
      map.put(part, bytes[part.ordinal()]);
    }
    return Collections.unmodifiableMap(map);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof DeviceBytes other && Arrays.equals(bytes, other.bytes);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(bytes);
  }

  @Override
  public String toString() {
    StringBuilder s = new StringBuilder("DeviceBytes{");
    String sep = "";
    for (MemoryPart part : MemoryPart.values()) {
      if (bytes[part.ordinal()] != 0) {
        s.append(sep).append(part.key()).append('=').append(bytes[part.ordinal()]);
        sep = ", ";
      }
    }
    return s.append('}').toString();
  }

  /** Adds bytes to parts. */
  public static final class Builder {
    private final long[] bytes = new long[MemoryPart.values().length];

    private Builder() {}

    /** Adds {@code count} bytes to {@code part}. */
    public Builder add(MemoryPart part, long count) {
      if (count < 0) {
        throw new IllegalArgumentException(part.key() + ": negative bytes " + count);
      }
      bytes[part.ordinal()] += count;
      return this;
    }

    /** Adds every part of {@code other} (an index this one holds, such as a graph's vectors). */
    public Builder add(DeviceBytes other) {
      for (int i = 0; i < bytes.length; i++) {
        bytes[i] += other.bytes[i];
      }
      return this;
    }

    public DeviceBytes build() {
      return new DeviceBytes(bytes.clone());
    }
  }
}
