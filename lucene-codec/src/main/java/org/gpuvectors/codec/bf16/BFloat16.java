package org.gpuvectors.codec.bf16;

import java.lang.invoke.VarHandle;
import org.apache.lucene.util.BitUtil;

/**
 * Conversions between {@code float} and bfloat16 ("brain float"): the upper 16 bits of an IEEE 754
 * single (1 sign bit, 8 exponent bits, 7 fraction bits), so a bfloat16 keeps a float's range and
 * about 3 significant decimal digits. Stored little-endian, two bytes a value.
 *
 * <p>Written by hand because neither the JDK nor Lucene has it: {@link Float#floatToFloat16} is IEEE
 * binary16 (5 exponent bits, 10 fraction bits, largest finite 65504), a different format, and
 * Elasticsearch's helper lives in its SIMD library, which this module must not depend on. The
 * rounding is Elasticsearch's, so a vector stored here decodes to the floats a bfloat16 {@code
 * dense_vector} holds: round to nearest, ties to even, on the bits.
 */
public final class BFloat16 {

  /** Bytes a bfloat16 value takes on disk. */
  public static final int BYTES = Short.BYTES;

  /** The bfloat16 bits every NaN becomes: the canonical quiet NaN's upper half. */
  static final short NAN_BITS = (short) 0x7FC0;

  private static final VarHandle LE_SHORT = BitUtil.VH_LE_SHORT;

  private BFloat16() {}

  /**
   * The bfloat16 nearest to {@code value}, ties to the one whose lowest bit is 0 (even). Finite
   * values beyond the largest bfloat16 (about 3.3895e38) by half a step or more round to infinity,
   * as IEEE rounding does; infinities stay infinities and every NaN becomes a quiet NaN.
   */
  public static short fromFloat(float value) {
    if (Float.isNaN(value)) {
      // a NaN's payload may sit in the dropped bits only (what is left reads as infinity), and rounding the
      // largest payloads carries into the sign: every NaN becomes the one quiet NaN instead
      return NAN_BITS;
    }
    int bits = Float.floatToRawIntBits(value);
    // 0x7FFF rounds up anything above half of the dropped 16 bits; the kept part's lowest bit adds the
    // last 1 exactly at a tie when that bit is odd, so ties go to even. A carry out of the fraction
    // correctly bumps the exponent (and turns the largest values into infinity).
    int roundingBias = 0x7FFF + ((bits >>> 16) & 1);
    return (short) ((bits + roundingBias) >>> 16);
  }

  /** The float a bfloat16 stands for; exact (every bfloat16 is a float). */
  public static float toFloat(short bits) {
    return Float.intBitsToFloat((bits & 0xFFFF) << 16);
  }

  /** {@code value} rounded to bfloat16 precision, as a float: what storing and reading it gives. */
  public static float round(float value) {
    return toFloat(fromFloat(value));
  }

  /** Rounds each of {@code values} to bfloat16 precision, in place. */
  public static void roundInPlace(float[] values) {
    for (int i = 0; i < values.length; i++) {
      values[i] = round(values[i]);
    }
  }

  /** Encodes {@code values} little-endian into {@code dst}, two bytes each from offset 0. */
  public static void encode(float[] values, byte[] dst) {
    checkLengths(values.length, dst.length);
    for (int i = 0; i < values.length; i++) {
      LE_SHORT.set(dst, i * BYTES, fromFloat(values[i]));
    }
  }

  /** Decodes the little-endian bfloat16 values in {@code src} into {@code dst}. */
  public static void decode(byte[] src, float[] dst) {
    checkLengths(dst.length, src.length);
    for (int i = 0; i < dst.length; i++) {
      dst[i] = toFloat((short) LE_SHORT.get(src, i * BYTES));
    }
  }

  private static void checkLengths(int values, int bytes) {
    if ((long) values * BYTES != bytes) {
      throw new IllegalArgumentException(
          values + " bfloat16 values take " + (long) values * BYTES + " bytes, not " + bytes);
    }
  }
}
