package org.gpuvectors.cuda.runtime;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.ToIntFunction;
import java.util.function.ToLongFunction;

/**
 * The layout of a CUDA parameter struct that a kernel takes by value, declared once on the Java side: its members
 * in the struct's order, by the struct's member names, each with the accessor that reads its value from a {@code T}.
 * Offsets follow natural alignment as nvcc lays a struct out (each member at a multiple of its size, the size
 * rounded up to the largest member's), so the declaration is the whole description: {@link #encode} writes the
 * little-endian bytes a launch passes, and a test compares {@link #members} with the struct in the .cuh source.
 *
 * <p>Hand-written because no library here maps Java fields to a C struct's layout without reflection or {@code
 * Unsafe}, and encoding runs on every kernel launch: one accessor call per member, no reflection.
 *
 * <p>Immutable and thread-safe (as far as the accessors are).
 */
public final class StructLayout<T> {

  /** A member's C type: {@code int}, {@code long long} or a device pointer, {@code float}. */
  public enum Type {
    I32(4),
    I64(8),
    F32(4);

    /** Size and alignment in bytes. */
    public final int bytes;

    Type(int bytes) {
      this.bytes = bytes;
    }
  }

  /** A member: its name in the CUDA struct, its type, its byte offset. */
  public record Member(String name, Type type, int offset) {}

  /** Reads a float member's value from a {@code T}. */
  @FunctionalInterface
  public interface ToFloatFunction<T> {
    float applyAsFloat(T value);
  }

  /** Writes one member of a {@code T} at an absolute position. */
  private interface Writer<T> {
    void write(ByteBuffer to, int at, T value);
  }

  private final String name;
  private final List<Member> members;
  private final int[] offsets;
  private final Writer<T>[] writers;
  private final int bytes;

  @SuppressWarnings("unchecked") // an array of the one generic Writer type: plain array access on the hot path
  private StructLayout(String name, List<Member> members, List<Writer<T>> writers) {
    this.name = name;
    this.members = List.copyOf(members);
    this.writers = writers.toArray(new Writer[0]);
    this.offsets = members.stream().mapToInt(Member::offset).toArray();
    int align = members.stream().mapToInt(m -> m.type().bytes).max().orElse(1);
    Member last = members.get(members.size() - 1);
    this.bytes = alignUp(last.offset() + last.type().bytes, align);
  }

  /** Starts the layout of the CUDA struct {@code name} (as common.cuh spells it). */
  public static <T> Builder<T> struct(String name) {
    return new Builder<>(name);
  }

  /** The CUDA struct's name. */
  public String name() {
    return name;
  }

  /** The members in the struct's order, with their offsets. */
  public List<Member> members() {
    return members;
  }

  /** {@code sizeof} the struct: past its last member, rounded up to its alignment. */
  public int bytes() {
    return bytes;
  }

  /** {@code value}'s members at their offsets, padding zero: {@link #bytes} little-endian bytes. */
  public byte[] encode(T value) {
    byte[] out = new byte[bytes];
    encodeInto(value, out, 0);
    return out;
  }

  /** Writes {@code value}'s members into {@code out} from {@code at} on (padding left as it is). */
  public void encodeInto(T value, byte[] out, int at) {
    ByteBuffer b = ByteBuffer.wrap(out).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < offsets.length; i++) {
      writers[i].write(b, at + offsets[i], value);
    }
  }

  private static int alignUp(int offset, int align) {
    return (offset + align - 1) / align * align;
  }

  /** Adds members in the struct's order; not thread-safe (used once, in a static initialiser). */
  public static final class Builder<T> {
    private final String name;
    private final List<Member> members = new ArrayList<>();
    private final List<Writer<T>> writers = new ArrayList<>();
    private final Set<String> names = new HashSet<>();
    private int end;

    private Builder(String name) {
      this.name = name;
    }

    /** An {@code int} member. */
    public Builder<T> i32(String member, ToIntFunction<T> value) {
      return add(member, Type.I32, (b, at, v) -> b.putInt(at, value.applyAsInt(v)));
    }

    /** A {@code long long} or device-pointer member. */
    public Builder<T> i64(String member, ToLongFunction<T> value) {
      return add(member, Type.I64, (b, at, v) -> b.putLong(at, value.applyAsLong(v)));
    }

    /** A {@code float} member. */
    public Builder<T> f32(String member, ToFloatFunction<T> value) {
      return add(member, Type.F32, (b, at, v) -> b.putFloat(at, value.applyAsFloat(v)));
    }

    /** An {@code int} member that is always zero: a pad the struct declares to reach its alignment. */
    public Builder<T> pad32(String member) {
      return add(member, Type.I32, (b, at, v) -> b.putInt(at, 0));
    }

    /** The layout; at least one member. */
    public StructLayout<T> build() {
      if (members.isEmpty()) {
        throw new IllegalStateException(name + " has no members");
      }
      return new StructLayout<>(name, members, writers);
    }

    private Builder<T> add(String member, Type type, Writer<T> writer) {
      if (!names.add(member)) {
        throw new IllegalArgumentException(name + "." + member + " declared twice");
      }
      int offset = alignUp(end, type.bytes);
      members.add(new Member(member, type, offset));
      writers.add(writer);
      end = offset + type.bytes;
      return this;
    }
  }
}
