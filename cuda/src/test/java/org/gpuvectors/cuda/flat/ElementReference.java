package org.gpuvectors.cuda.flat;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.flat.GpuElementFlatIndex.Element;

/**
 * The distances of byte, bit and bfloat16 rows, two ways: {@link #distance} straight from the definitions (exact
 * integers in longs, doubles for bfloat16), and {@link #kernelDistance} as element_scan.cu computes them (values
 * packed four or two to a 32-bit word, zero-padded to whole words; dp4a of per-byte absolute differences, signed dp4a,
 * popcount of XOR, FP32 sums of widened bfloat16), so that a test can hold the kernel's arithmetic against the
 * definitions on the CPU, and the GPU's results against {@link #exact} (brute force).
 */
final class ElementReference {
  private ElementReference() {}

  /** A row's distance as the kernel reports it: squared L2 (bit: Hamming), inner product or cosine. */
  record Hit(int id, double distance) {}

  /**
   * The definition: byte rows and queries as signed integers (squared L2, dot, cosine = dot / sqrt(|x|^2 |q|^2) in
   * double, rounded to float as Lucene's VectorUtil.cosine); bit rows by the bits set in x XOR q; bfloat16 rows as
   * the floats they stand for, in double.
   */
  static double distance(Element element, Metric metric, byte[] rows, float[] bf16Rows, int row, int dims,
                         float[] queries, int q) {
    if (element == Element.BIT) {
      long h = 0;
      for (int d = 0; d < dims; d++) {
        h += Integer.bitCount((rows[row * dims + d] ^ (int) queries[q * dims + d]) & 0xff);
      }
      return h;
    }
    double s = 0, xx = 0, qq = 0;
    for (int d = 0; d < dims; d++) {
      double x = element == Element.BYTE ? rows[row * dims + d] : Bf16.round(bf16Rows[row * dims + d]);
      double y = queries[q * dims + d];
      if (metric == Metric.L2) {
        s += (x - y) * (x - y);
      } else {
        s += x * y;
        xx += x * x;
        qq += y * y;
      }
    }
    return metric == Metric.COSINE ? (float) (s / Math.sqrt(xx * qq)) : s;
  }

  /** Values a 32-bit word holds. */
  private static int perWord(Element element) {
    return element == Element.BFLOAT16 ? 2 : 4;
  }

  /** Row {@code row} packed as the device holds it: {@link Element#rowWords} words, zero past its values. */
  static int[] packRow(Element element, byte[] rows, float[] bf16Rows, int row, int dims) {
    int[] w = new int[element.rowWords(dims)];
    for (int d = 0; d < dims; d++) {
      int v = element == Element.BFLOAT16 ? Bf16.fromFloat(bf16Rows[row * dims + d]) & 0xffff
          : rows[row * dims + d] & 0xff;
      int shift = (d % perWord(element)) * (32 / perWord(element));
      w[d / perWord(element)] |= v << shift;
    }
    return w;
  }

  /** A byte or bit query packed as packQuery does: each float's integer, its low 8 bits, four to a word. */
  static int[] packQuery(float[] queries, int q, int dims, int words) {
    int[] w = new int[words];
    for (int d = 0; d < dims; d++) {
      w[d / 4] |= (Math.round(queries[q * dims + d]) & 0xff) << (8 * (d % 4));
    }
    return w;
  }

  /** __dp4a(signed): the sum of the four signed byte products, plus c. */
  static int dp4aSigned(int a, int b, int c) {
    for (int i = 0; i < 4; i++) {
      c += (byte) (a >>> (8 * i)) * (byte) (b >>> (8 * i));
    }
    return c;
  }

  /** __vabsdiffs4: per byte |a - b| of the signed bytes, as unsigned bytes. */
  static int absDiffs4(int a, int b) {
    int out = 0;
    for (int i = 0; i < 4; i++) {
      out |= (Math.abs((byte) (a >>> (8 * i)) - (byte) (b >>> (8 * i))) & 0xff) << (8 * i);
    }
    return out;
  }

  /** __dp4a(unsigned): the sum of the four unsigned byte products, plus c (mod 2^32). */
  static int dp4aUnsigned(int a, int b, int c) {
    for (int i = 0; i < 4; i++) {
      c += ((a >>> (8 * i)) & 0xff) * ((b >>> (8 * i)) & 0xff);
    }
    return c;
  }

  /** The kernel's arithmetic (element_scan.cu's rowKey, as the distance it writes): see the class comment. */
  static double kernelDistance(Element element, Metric metric, byte[] rows, float[] bf16Rows, int row, int dims,
                               float[] queries, int q) {
    int[] x = packRow(element, rows, bf16Rows, row, dims);
    if (element == Element.BFLOAT16) {
      float[] qf = new float[2 * x.length];
      System.arraycopy(queries, q * dims, qf, 0, dims);
      float sq = 0, dot = 0, xx = 0, qq = 0;
      for (int d = 0; d < qf.length; d++) {
        qq = Math.fma(qf[d], qf[d], qq);
      }
      for (int w = 0; w < x.length; w++) {
        for (int h = 0; h < 2; h++) {
          float v = Bf16.toFloat((short) (x[w] >>> (16 * h)));
          float t = v - qf[2 * w + h];
          sq = Math.fma(t, t, sq);
          dot = Math.fma(v, qf[2 * w + h], dot);
          xx = Math.fma(v, v, xx);
        }
      }
      return switch (metric) {
        case L2 -> sq;
        case INNER_PRODUCT -> dot;
        case COSINE -> (float) (dot / Math.sqrt((double) xx * qq));
      };
    }
    int[] y = packQuery(queries, q, dims, x.length);
    if (element == Element.BIT) {
      int h = 0;
      for (int w = 0; w < x.length; w++) {
        h += Integer.bitCount(x[w] ^ y[w]);
      }
      return (float) h;
    }
    int sq = 0, dot = 0, xx = 0, qq = 0;
    for (int w = 0; w < x.length; w++) {
      int d = absDiffs4(x[w], y[w]);
      sq = dp4aUnsigned(d, d, sq);
      dot = dp4aSigned(x[w], y[w], dot);
      xx = dp4aSigned(x[w], x[w], xx);
      qq = dp4aSigned(y[w], y[w], qq);
    }
    return switch (metric) {
      case L2 -> (float) Integer.toUnsignedLong(sq);
      case INNER_PRODUCT -> (float) dot;
      case COSINE -> (float) (dot / Math.sqrt((double) xx * (double) qq));
    };
  }

  /**
   * Brute force: query q's accepted rows ({@code accept} null: all; bit {@code id % 64} of word {@code id / 64}) by
   * {@link #distance} (byte and bit: rounded to float, as reported), best first (smallest for L2, largest otherwise;
   * ties by id, as Lucene keeps the lowest docs), NaN distances left out.
   */
  static List<Hit> exact(Element element, Metric metric, byte[] rows, float[] bf16Rows, int n, int dims,
                         float[] queries, int q, long[] accept) {
    List<Hit> all = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      if (accept != null && (accept[i >>> 6] >>> (i & 63) & 1) == 0) {
        continue;
      }
      double d = distance(element, metric, rows, bf16Rows, i, dims, queries, q);
      if (element != Element.BFLOAT16) {
        d = (float) d; // as the device reports and Lucene scores it: integers past 2^24 round, and then tie
      }
      if (!Double.isNaN(d)) {
        all.add(new Hit(i, d));
      }
    }
    Comparator<Hit> byDistance = Comparator.comparingDouble(Hit::distance);
    all.sort((metric == Metric.L2 ? byDistance : byDistance.reversed()).thenComparingInt(Hit::id));
    return all;
  }
}
