package org.gpuvectors.codec.bf16;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link BFloat16}'s rounding against an independent oracle: the two bfloat16 values around a float are found from
 * its bits, their distances to it compared exactly (BigDecimal), the nearer taken and a tie given to the one with
 * an even last bit; rounding beyond the largest bfloat16 by half a step or more gives infinity (IEEE 754).
 */
class BFloat16Tests {

  /** 2^128: where the step above the largest bfloat16 would land; reaching half-way to it overflows. */
  private static final BigDecimal OVERFLOW = new BigDecimal(2).pow(128);

  /** The oracle: the bfloat16 bits nearest to finite or infinite {@code value}, ties to even. */
  private static short nearest(float value) {
    int bits = Float.floatToRawIntBits(value);
    if (Float.isInfinite(value)) {
      return (short) (bits >>> 16);
    }
    int towardZero = bits >>> 16; // drops the low 16 bits: the bfloat16 at or below |value|
    int awayFromZero = towardZero + 1; // the next bfloat16 above |value| in magnitude (carries into the exponent)
    BigDecimal x = new BigDecimal(Math.abs(value));
    BigDecimal below = magnitude(towardZero);
    BigDecimal above = magnitude(awayFromZero);
    int cmp = x.subtract(below).compareTo(above.subtract(x));
    if (cmp < 0) {
      return (short) towardZero;
    }
    if (cmp > 0) {
      return (short) awayFromZero;
    }
    return (short) ((towardZero & 1) == 0 ? towardZero : awayFromZero);
  }

  private static BigDecimal magnitude(int bfloat16) {
    if ((bfloat16 & 0x7FFF) == 0x7F80) {
      return OVERFLOW; // infinity, as a rounding target
    }
    return new BigDecimal(Math.abs(Float.intBitsToFloat(bfloat16 << 16)));
  }

  private static void assertRoundsLikeTheOracle(float value) {
    assertEquals(nearest(value), BFloat16.fromFloat(value),
        () -> "bits 0x" + Integer.toHexString(Float.floatToRawIntBits(value)) + " (" + value + ")");
  }

  @Test
  void everyExponentAndFractionAtTheRoundingBoundaries() {
    // each of the 65536 upper halves (every sign, exponent and kept fraction), with the dropped half just above
    // zero, just below half, exactly half, just above half and all ones
    int[] droppedHalves = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
    for (int upper = 0; upper < 1 << 16; upper++) {
      for (int dropped : droppedHalves) {
        float value = Float.intBitsToFloat(upper << 16 | dropped);
        if (Float.isNaN(value) == false) {
          assertRoundsLikeTheOracle(value);
        }
      }
    }
  }

  @Test
  void randomFloats() {
    Random random = new Random(0x5EEDBF16L);
    for (int i = 0; i < 200_000; i++) {
      float value = Float.intBitsToFloat(random.nextInt());
      if (Float.isNaN(value) == false) {
        assertRoundsLikeTheOracle(value);
      }
      assertRoundsLikeTheOracle(random.nextFloat() * 2 - 1);
    }
  }

  @Test
  void exactHalvesGoToTheEvenNeighbour() {
    // 1 + 2^-8 lies half-way between 1 (bits 0x3F80, even) and 1 + 2^-7 (0x3F81): down to 1
    assertEquals(1f, BFloat16.round(1f + 0x1p-8f));
    // 1 + 3 * 2^-8 lies half-way between 0x3F81 (odd) and 1 + 2^-6 (0x3F82, even): up
    assertEquals(1f + 0x1p-6f, BFloat16.round(1f + 3 * 0x1p-8f));
    assertEquals(-1f, BFloat16.round(-(1f + 0x1p-8f)));
    // just off the half-way point the nearer neighbour wins either way
    assertEquals(1f + 0x1p-7f, BFloat16.round(Math.nextUp(1f + 0x1p-8f)));
    assertEquals(1f, BFloat16.round(Math.nextDown(1f + 0x1p-8f)));
  }

  @Test
  void infinitiesZerosAndOverflow() {
    assertEquals(Float.POSITIVE_INFINITY, BFloat16.round(Float.POSITIVE_INFINITY));
    assertEquals(Float.NEGATIVE_INFINITY, BFloat16.round(Float.NEGATIVE_INFINITY));
    assertEquals(0x0000, BFloat16.fromFloat(0f));
    assertEquals((short) 0x8000, BFloat16.fromFloat(-0f));
    // the largest float is beyond the largest bfloat16 (0x7F7F) by more than half a step
    assertEquals(Float.POSITIVE_INFINITY, BFloat16.round(Float.MAX_VALUE));
    assertEquals(Float.NEGATIVE_INFINITY, BFloat16.round(-Float.MAX_VALUE));
    // just under half a step above the largest bfloat16 stays finite
    assertEquals(Float.intBitsToFloat(0x7F7F0000), BFloat16.round(Float.intBitsToFloat(0x7F7F7FFF)));
    // the smallest subnormal is nearer zero than the smallest bfloat16 subnormal (2^-133)
    assertEquals(0f, BFloat16.round(Float.MIN_VALUE));
    assertEquals(0x1p-133f, BFloat16.round(0x1p-133f));
  }

  @Test
  void nanStaysNan() {
    int[] nans = {0x7FC00000, 0x7F800001, 0x7FBFFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0xFF800001, 0x7F80FFFF};
    for (int bits : nans) {
      float nan = Float.intBitsToFloat(bits);
      assertTrue(Float.isNaN(BFloat16.round(nan)), () -> "0x" + Integer.toHexString(bits));
    }
  }

  @Test
  void everyBFloat16DecodesExactlyAndIsItsOwnRounding() {
    for (int bits = 0; bits < 1 << 16; bits++) {
      float value = BFloat16.toFloat((short) bits);
      assertEquals(bits << 16, Float.floatToRawIntBits(value));
      if (Float.isNaN(value) == false) {
        assertEquals((short) bits, BFloat16.fromFloat(value));
      }
    }
  }

  @Test
  void relativeErrorOfNormalValuesIsAtMostHalfAStep() {
    Random random = new Random(42);
    for (int i = 0; i < 100_000; i++) {
      float value = (float) (random.nextGaussian() * Math.pow(10, random.nextInt(60) - 30));
      if (Math.abs(value) >= Float.MIN_NORMAL) {
        // 7 fraction bits: a step is 2^-7 of the value's power of two, and the error at most half of that
        double powerOfTwo = Math.scalb(1.0, Math.getExponent(value));
        assertTrue(Math.abs(BFloat16.round(value) - (double) value) <= powerOfTwo * 0x1p-8, () -> "" + value);
      }
    }
  }

  @Test
  void encodesLittleEndianAndDecodesBack() {
    float[] values = {1f, -2f, 0.333f};
    byte[] bytes = new byte[values.length * BFloat16.BYTES];
    BFloat16.encode(values, bytes);
    assertEquals((byte) 0x80, bytes[0]); // 1.0f is 0x3F80: low byte first
    assertEquals((byte) 0x3F, bytes[1]);
    float[] decoded = new float[values.length];
    BFloat16.decode(bytes, decoded);
    assertArrayEquals(new float[] {1f, -2f, BFloat16.round(0.333f)}, decoded);
    float[] inPlace = values.clone();
    BFloat16.roundInPlace(inPlace);
    assertArrayEquals(decoded, inPlace);
  }

  @Test
  void mismatchedLengthsAreRefused() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> BFloat16.encode(new float[3], new byte[5]));
    assertEquals("3 bfloat16 values take 6 bytes, not 5", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> BFloat16.decode(new byte[4], new float[3]));
  }
}
