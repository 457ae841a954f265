package org.gpuvectors.cuda.flat;

/**
 * bfloat16, the high 16 bits of an IEEE float: the conversions the upload of bfloat16 rows makes on the host ({@link
 * GpuElementFlatIndex#uploadBf16}) and the device undoes ({@code __bfloat162float}).
 */
public final class Bf16 {
  private Bf16() {}

  /**
   * The bfloat16 nearest {@code f} (ties to even), as Elasticsearch's bfloat16 vectors round; NaN stays a (quiet) NaN,
   * infinities stay infinite. A float that is a bfloat16 already comes back unchanged.
   */
  public static short fromFloat(float f) {
    int bits = Float.floatToRawIntBits(f);
    if (Float.isNaN(f)) {
      return (short) ((bits >>> 16) | 0x40); // keep it a NaN whatever its low bits were
    }
    return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
  }

  /** The float a bfloat16 stands for (exact). */
  public static float toFloat(short h) {
    return Float.intBitsToFloat((h & 0xffff) << 16);
  }

  /** {@code f} rounded to the nearest bfloat16, as a float. */
  public static float round(float f) {
    return toFloat(fromFloat(f));
  }
}
