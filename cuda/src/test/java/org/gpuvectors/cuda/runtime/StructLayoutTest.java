package org.gpuvectors.cuda.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.gpuvectors.cuda.runtime.StructLayout.Member;
import org.gpuvectors.cuda.runtime.StructLayout.Type;
import org.junit.jupiter.api.Test;

/** Offsets and sizes as nvcc lays a struct out, and the little-endian encoding. */
class StructLayoutTest {

  private record Value(int a, long b, float c) {}

  private static final StructLayout<Value> LAYOUT = StructLayout.<Value>struct("Value")
      .i32("a", Value::a)
      .i64("b", Value::b)
      .f32("c", Value::c)
      .build();

  @Test
  void membersAreNaturallyAlignedAndTheSizeTailPadded() {
    assertEquals("Value", LAYOUT.name());
    assertEquals(List.of(new Member("a", Type.I32, 0), new Member("b", Type.I64, 8), new Member("c", Type.F32, 16)),
        LAYOUT.members(), "b skips 4 bytes to its 8-byte alignment");
    assertEquals(24, LAYOUT.bytes(), "the size rounded up to the largest member");
    StructLayout<Value> ints = StructLayout.<Value>struct("Ints").i32("a", Value::a).pad32("pad").i32("x", v -> 7)
        .build();
    assertEquals(12, ints.bytes(), "4-byte members only: 4-byte alignment");
  }

  @Test
  void encodesLittleEndianAtTheOffsetsWithZeroPadding() {
    byte[] bytes = LAYOUT.encode(new Value(-2, 0x0102030405060708L, 1.5f));
    ByteBuffer expected = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
    expected.putInt(0, -2).putLong(8, 0x0102030405060708L).putFloat(16, 1.5f);
    assertArrayEquals(expected.array(), bytes);
  }

  @Test
  void encodesIntoAnArrayAtAnOffset() {
    byte[] out = new byte[4 + LAYOUT.bytes()];
    LAYOUT.encodeInto(new Value(3, 4, 5f), out, 4);
    ByteBuffer b = ByteBuffer.wrap(out).order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(3, b.getInt(4));
    assertEquals(4L, b.getLong(12));
    assertEquals(5f, b.getFloat(20));
  }

  @Test
  void padsAreZero() {
    StructLayout<Value> padded = StructLayout.<Value>struct("Padded").i32("a", Value::a).pad32("pad").build();
    assertArrayEquals(new byte[] {9, 0, 0, 0, 0, 0, 0, 0}, padded.encode(new Value(9, 0, 0)));
  }

  @Test
  void refusesAMemberTwiceAndAnEmptyStruct() {
    assertThrows(IllegalArgumentException.class,
        () -> StructLayout.<Value>struct("Twice").i32("a", Value::a).i64("a", Value::b));
    assertThrows(IllegalStateException.class, () -> StructLayout.<Value>struct("Empty").build());
  }
}
