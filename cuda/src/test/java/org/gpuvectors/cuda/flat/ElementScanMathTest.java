package org.gpuvectors.cuda.flat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.flat.GpuElementFlatIndex.Element;
import org.junit.jupiter.api.Test;

/**
 * The arithmetic of element_scan.cu on the CPU ({@link ElementReference#kernelDistance}: packed words, dp4a of absolute
 * differences, signed dp4a, popcount of XOR, FP32 sums of widened bfloat16) against the definitions of the distances
 * ({@link ElementReference#distance}), the bfloat16 rounding of the upload, the rows' device size and the scan's
 * chunk plan. Runs without a GPU.
 */
class ElementScanMathTest {

  private static final int[] DIMS = {1, 3, 4, 5, 17, 64, 100, 768};

  /** Random bytes, a quarter of them the extremes -128 and 127 (|-128 - 127| = 255: the widest difference). */
  private static byte[] bytes(int count, Random r) {
    byte[] b = new byte[count];
    for (int i = 0; i < count; i++) {
      b[i] = r.nextInt(4) == 0 ? (r.nextBoolean() ? Byte.MIN_VALUE : Byte.MAX_VALUE) : (byte) r.nextInt(256);
    }
    return b;
  }

  /** Each stored byte as a float, as the codec passes byte and bit queries. */
  private static float[] asFloats(byte[] b) {
    float[] f = new float[b.length];
    for (int i = 0; i < b.length; i++) {
      f[i] = b[i];
    }
    return f;
  }

  @Test
  void byteAndBitKernelArithmeticIsExact() {
    Random r = new Random(38);
    for (int dims : DIMS) {
      int n = 40;
      byte[] rows = bytes(n * dims, r);
      float[] queries = asFloats(bytes(3 * dims, r));
      for (int row = 0; row < n; row++) {
        for (int q = 0; q < 3; q++) {
          for (Metric m : Metric.values()) {
            double want = ElementReference.distance(Element.BYTE, m, rows, null, row, dims, queries, q);
            double got = ElementReference.kernelDistance(Element.BYTE, m, rows, null, row, dims, queries, q);
            // integers exact, converted to float once (as Java's (float) int); cosine as Lucene divides
            assertEquals((float) want, got, 0.0, "byte " + m + " dims " + dims);
          }
          double hamming = ElementReference.distance(Element.BIT, Metric.L2, rows, null, row, dims, queries, q);
          assertEquals(hamming, ElementReference.kernelDistance(Element.BIT, Metric.L2, rows, null, row, dims,
              queries, q), 0.0, "bit dims " + dims);
        }
      }
    }
  }

  @Test
  void bitQueriesTakeUnsignedBytesToo() {
    // a bit vector's byte may reach the kernel as -1 (Java's signed byte) or 255: the same eight bits
    byte[] row = {(byte) 0xff, 0x0f};
    float[] signed = {-1f, 15f};
    float[] unsigned = {255f, 15f};
    assertEquals(0.0, ElementReference.kernelDistance(Element.BIT, Metric.L2, row, null, 0, 2, signed, 0));
    assertEquals(0.0, ElementReference.kernelDistance(Element.BIT, Metric.L2, row, null, 0, 2, unsigned, 0));
    float[] zeros = {0f, 0f};
    assertEquals(12.0, ElementReference.kernelDistance(Element.BIT, Metric.L2, row, null, 0, 2, zeros, 0));
  }

  @Test
  void bf16KernelArithmeticIsFp32Sums() {
    Random r = new Random(39);
    for (int dims : DIMS) {
      int n = 20;
      float[] rows = GpuFlatIndexGpuTest.random(n * dims, r);
      float[] queries = GpuFlatIndexGpuTest.random(2 * dims, r);
      for (int row = 0; row < n; row++) {
        for (int q = 0; q < 2; q++) {
          for (Metric m : Metric.values()) {
            double want = ElementReference.distance(Element.BFLOAT16, m, null, rows, row, dims, queries, q);
            double got = ElementReference.kernelDistance(Element.BFLOAT16, m, null, rows, row, dims, queries, q);
            double scale = m == Metric.COSINE ? 1 : m == Metric.L2 ? Math.max(1, want) : dims;
            assertEquals(want, got, 1e-5 * scale, "bf16 " + m + " dims " + dims);
          }
        }
      }
    }
  }

  @Test
  void bf16RoundsToNearestEven() {
    assertEquals(1f, Bf16.round(1f));
    float ulp = 0x1p-7f; // a bfloat16's ulp at 1: 7 stored mantissa bits
    assertEquals(1f, Bf16.round(1f + ulp / 2)); // a tie: to the even neighbour, 1
    assertEquals(1f + 2 * ulp, Bf16.round(1f + 3 * ulp / 2)); // a tie: to the even neighbour, 1 + 2 ulp
    assertEquals(1f + ulp, Bf16.round(1f + ulp / 2 + 0x1p-20f)); // above the tie: up
    assertEquals(-3.140625f, Bf16.round(-3.14159f));
    assertEquals(Float.POSITIVE_INFINITY, Bf16.round(Float.MAX_VALUE)); // past the largest bfloat16
    assertEquals(Float.NEGATIVE_INFINITY, Bf16.round(Float.NEGATIVE_INFINITY));
    assertTrue(Float.isNaN(Bf16.round(Float.intBitsToFloat(0x7f800001)))); // a NaN whose payload lies below 16 bits
    Random r = new Random(40);
    for (int i = 0; i < 10_000; i++) {
      float f = (float) r.nextGaussian() * 100;
      float b = Bf16.round(f);
      assertEquals(b, Bf16.round(b), "a bfloat16 is kept exactly");
      assertTrue(Math.abs(f - b) <= Math.ulp(b) * 0x1p16f / 2 * 1.0001, f + " -> " + b);
    }
  }

  @Test
  void rowsTakeTheirOwnSize() {
    assertEquals(768, Element.BYTE.rowBytes(768));
    assertEquals(96, Element.BIT.rowBytes(96)); // 768 bits
    assertEquals(1536, Element.BFLOAT16.rowBytes(768));
    assertEquals(2, Element.BYTE.rowWords(5)); // zero-padded to whole words
    assertEquals(3, Element.BFLOAT16.rowWords(5));
    long n = 1_000_000;
    long floatBytes = 4L * n * 768; // GpuFlatIndex's vectors, without the norms of L2 or an FP16 copy
    assertTrue(GpuElementFlatIndex.deviceBytes(Element.BYTE, n, 768) <= floatBytes / 4);
    assertEquals(floatBytes / 32, GpuElementFlatIndex.deviceBytes(Element.BIT, n, 96));
    assertEquals(floatBytes / 2, GpuElementFlatIndex.deviceBytes(Element.BFLOAT16, n, 768));
  }

  @Test
  void chunksSpreadAFewQueriesOverTheDevice() {
    assertEquals(1, GpuElementFlatIndex.chunks(132, 100, 1, 10)); // too few rows to split
    assertEquals(528, GpuElementFlatIndex.chunks(132, 1_000_000, 1, 10)); // about four blocks a multiprocessor
    assertEquals(1, GpuElementFlatIndex.chunks(132, 1_000_000, 10_000, 10)); // the queries fill the device alone
    assertEquals(1_000_000 / (4 * 2048), GpuElementFlatIndex.chunks(132, 1_000_000, 1, 2048)); // chunks of 4 k
    assertTrue(GpuElementFlatIndex.chunks(100_000, Integer.MAX_VALUE, 1, 1) <= 65535); // the grid's y
  }

  @Test
  void bitIndexesRankByHammingOnly() {
    // refused before any device is touched
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> GpuElementFlatIndex.upload(null, Element.BIT, new byte[8], 1, 8, Metric.INNER_PRODUCT));
    assertTrue(e.getMessage().contains("Hamming"), e.getMessage());
  }
}
