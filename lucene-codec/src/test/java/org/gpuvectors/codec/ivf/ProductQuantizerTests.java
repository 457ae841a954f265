package org.gpuvectors.codec.ivf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.OptionalInt;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.IOContext;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.store.IndexOutput;
import org.gpuvectors.codec.index.Metric;
import org.junit.jupiter.api.Test;

class ProductQuantizerTests {

  private final Random random = new Random(11);

  private float[][] gaussian(int n, int dims) {
    float[][] rows = new float[n][dims];
    for (float[] r : rows) {
      for (int d = 0; d < dims; d++) {
        r[d] = (float) random.nextGaussian();
      }
    }
    return rows;
  }

  private static float squareDistance(float[] a, int from, float[] b) {
    float s = 0;
    for (int d = 0; d < b.length; d++) {
      float diff = a[from + d] - b[d];
      s += diff * diff;
    }
    return s;
  }

  private static int rerankFactor(int dims, int m, int bits) {
    return new ProductQuantizer(dims, m, bits, new float[(1 << bits) * dims], null).rerankFactor();
  }

  @Test
  void rerankFactorGrowsAsTheCodesCoarsen() {
    assertEquals(4, rerankFactor(128, ProductQuantizer.defaultM(128), 8), "2 bits a dimension: 4");
    assertEquals(8, rerankFactor(768, ProductQuantizer.defaultM(768), 8), "1 bit a dimension: 8");
    assertEquals(8, rerankFactor(784, ProductQuantizer.defaultM(784), 8));
    assertEquals(16, rerankFactor(64, 8, 4), "half a bit a dimension: 16");
    assertEquals(16, rerankFactor(64, 1, 8), "an eighth of a bit: at most 16");
    assertEquals(4, rerankFactor(16, 8, 8), "4 bits a dimension: at least 4");
  }

  @Test
  void defaultSubQuantizers() {
    assertEquals(96, ProductQuantizer.defaultM(768), "8 divides dims: dims / 8");
    assertEquals(98, ProductQuantizer.defaultM(784), "above 256 dims, 8 divides dims: dims / 8");
    assertEquals(32, ProductQuantizer.defaultM(128), "up to 256 dims, 4 divides dims: dims / 4");
    assertEquals(64, ProductQuantizer.defaultM(256));
    assertEquals(4, ProductQuantizer.defaultM(16));
    assertEquals(2, ProductQuantizer.defaultM(8));
    assertEquals(25, ProductQuantizer.defaultM(100), "4 divides dims: dims / 4");
    assertEquals(54, ProductQuantizer.defaultM(270), "above 256 dims, 8 does not divide: the largest divisor <= dims / 4");
    assertEquals(5, ProductQuantizer.defaultM(20));
    assertEquals(3, ProductQuantizer.defaultM(12));
    assertEquals(1, ProductQuantizer.defaultM(6));
    assertEquals(1, ProductQuantizer.defaultM(7), "a prime: one sub-quantizer");
    assertEquals(1, ProductQuantizer.defaultM(2));
    assertEquals(1, ProductQuantizer.defaultM(1));
    for (int dims = 1; dims <= 4096; dims++) {
      int m = ProductQuantizer.defaultM(dims);
      assertTrue(m >= 1 && dims % m == 0 && (m == 1 || dims / m >= 4), "dims " + dims + ": " + m);
    }
    assertEquals(4, ProductQuantizer.m(OptionalInt.of(4), 16), "the mapping's pq_m");
    assertEquals(4, ProductQuantizer.m(OptionalInt.empty(), 16), "no pq_m: the default");
    assertEquals(8, ProductQuantizer.bits(OptionalInt.empty()));
    assertEquals(4, ProductQuantizer.bits(OptionalInt.of(4)));
  }

  /** The writer keeps a segment flat when its codes would not fit one array (instead of failing the merge). */
  @Test
  void codesOfOneSegmentFitOneArrayOrTheSegmentStaysFlat() {
    int max = org.apache.lucene.util.ArrayUtil.MAX_ARRAY_LENGTH;
    assertTrue(IvfPqBuilder.fits(max / 32, 32), "67 million vectors of 32-byte codes");
    assertFalse(IvfPqBuilder.fits(max / 32 + 1, 32));
    assertTrue(IvfPqBuilder.fits(10_000_000, 96), "10M x 768-d at the default pq_m");
    assertFalse(IvfPqBuilder.fits(Integer.MAX_VALUE, 2), "no overflow");
    assertTrue(IvfPqBuilder.fits(0, 4096));
  }

  @Test
  void everyCodeIsTheNearestCodewordOfItsSubVector() throws IOException {
    float[][] residuals = gaussian(600, 12);
    ProductQuantizer pq = ProductQuantizer.train(residuals, 3, 4, 10, 5, Assigner.CPU);
    assertEquals(16, pq.ksub());
    assertEquals(4, pq.subDims());
    byte[] codes = new byte[residuals.length * 3];
    pq.encode(residuals, residuals.length, codes, 0, Assigner.CPU);
    for (int i = 0; i < residuals.length; i++) {
      for (int j = 0; j < 3; j++) {
        int code = codes[i * 3 + j] & 0xFF;
        assertTrue(code < 16);
        float own = squareDistance(residuals[i], j * 4, pq.codeword(j, code));
        for (int c = 0; c < 16; c++) {
          assertTrue(own <= squareDistance(residuals[i], j * 4, pq.codeword(j, c)), "row " + i + " sub " + j);
        }
      }
    }
  }

  @Test
  void quantizationErrorIsFarBelowTheSpread() throws IOException {
    // 8 bits over 2-dimensional sub-spaces: the reconstruction keeps most of a residual
    float[][] residuals = gaussian(4000, 8);
    ProductQuantizer pq = ProductQuantizer.train(residuals, 4, 8, 10, 5, Assigner.CPU);
    byte[] codes = new byte[residuals.length * 4];
    pq.encode(residuals, residuals.length, codes, 0, Assigner.CPU);
    double error = 0;
    double spread = 0;
    for (int i = 0; i < residuals.length; i++) {
      float[] back = pq.decode(codes, i * 4);
      error += squareDistance(residuals[i], 0, back);
      spread += squareDistance(residuals[i], 0, new float[8]);
    }
    assertTrue(error < 0.05 * spread, "relative squared error " + error / spread);
  }

  @Test
  void fewerTrainingRowsThanCodewordsEncodeExactly() throws IOException {
    float[][] residuals = gaussian(10, 8);
    ProductQuantizer pq = ProductQuantizer.train(residuals, 2, 8, 5, 1, Assigner.CPU);
    byte[] codes = new byte[10 * 2];
    pq.encode(residuals, 10, codes, 0, Assigner.CPU);
    for (int i = 0; i < 10; i++) {
      assertArrayEquals(residuals[i], pq.decode(codes, i * 2));
    }
    // the unused entries repeat codeword 0 and are never chosen (ties go to the lower index)
    assertArrayEquals(pq.codeword(1, 0), pq.codeword(1, 255));
    for (byte b : codes) {
      assertTrue((b & 0xFF) < 10);
    }
  }

  @Test
  void lookupTablesGiveTheDistancesToTheDecodedVector() throws IOException {
    float[][] residuals = gaussian(300, 16);
    ProductQuantizer pq = ProductQuantizer.train(residuals, 4, 5, 8, 2, Assigner.CPU);
    byte[] codes = new byte[300 * 4];
    pq.encode(residuals, 300, codes, 0, Assigner.CPU);
    float[] query = gaussian(1, 16)[0];
    float[] l2 = new float[4 * pq.ksub()];
    float[] ip = new float[4 * pq.ksub()];
    pq.l2Table(query, l2);
    pq.innerProductTable(query, ip);
    for (int i = 0; i < 300; i++) {
      float[] decoded = pq.decode(codes, i * 4);
      float dot = 0;
      for (int d = 0; d < 16; d++) {
        dot += query[d] * decoded[d];
      }
      float d2 = squareDistance(query, 0, decoded);
      assertEquals(d2, pq.distance(l2, codes, i * 4), 1e-4f * Math.max(1, d2));
      assertEquals(dot, pq.distance(ip, codes, i * 4), 1e-4f * Math.max(1, Math.abs(dot)));
    }
  }

  @Test
  void trainingIsDeterministicAndGoesThroughTheAssigner() throws IOException {
    float[][] residuals = gaussian(500, 8);
    AtomicInteger holds = new AtomicInteger();
    AtomicInteger steps = new AtomicInteger();
    Assigner counting =
        (points, count, groups, metric) -> {
          holds.incrementAndGet();
          assertEquals(2, groups, "both sub-quantizers in one hold");
          Assigner.Held cpu = Assigner.CPU.hold(points, count, groups, metric);
          return new Assigner.Held() {
            @Override
            public int[] nearest(float[] centroids, int k) throws IOException {
              throw new AssertionError("training takes update steps");
            }

            @Override
            public int[] update(float[] centroids, int k) throws IOException {
              steps.incrementAndGet();
              return cpu.update(centroids, k);
            }

            @Override
            public void close() {
              cpu.close();
            }
          };
        };
    ProductQuantizer a = ProductQuantizer.train(residuals, 2, 6, 7, 3, counting);
    assertEquals(1, holds.get(), "the residuals held once for the whole training");
    assertEquals(7, steps.get(), "one assignment step per iteration, all sub-quantizers in it");
    ProductQuantizer b = ProductQuantizer.train(residuals, 2, 6, 7, 3, Assigner.CPU);
    for (int j = 0; j < 2; j++) {
      for (int c = 0; c < 64; c++) {
        assertArrayEquals(a.codeword(j, c), b.codeword(j, c));
      }
    }
    assertEquals(new IvfBuilder.Training(500, 7, 3), a.training());
  }

  /**
   * The sub-quantizers train side by side (a group each in one k-means): each codebook must be what k-means alone
   * gives on its sub-space with its seed (seed + j), whatever the threads did.
   */
  @Test
  void eachCodebookIsItsSubSpacesOwnKMeans() throws IOException {
    int m = 12;
    int sub = 2;
    float[][] residuals = gaussian(3000, m * sub);
    ProductQuantizer pq = ProductQuantizer.train(residuals, m, 5, 6, 41, Assigner.CPU);
    for (int j = 0; j < m; j++) {
      float[][] points = new float[residuals.length][sub];
      for (int i = 0; i < residuals.length; i++) {
        System.arraycopy(residuals[i], j * sub, points[i], 0, sub);
      }
      float[][] alone = KMeans.train(points, 32, Metric.L2, 6, 41 + j, Assigner.CPU);
      for (int c = 0; c < 32; c++) {
        assertArrayEquals(alone[c], pq.codeword(j, c), "sub-quantizer " + j + ", codeword " + c);
      }
    }
  }

  @Test
  void writtenAndReadBack() throws IOException {
    ProductQuantizer pq = ProductQuantizer.train(gaussian(200, 6), 3, 4, 5, 9, Assigner.CPU);
    try (Directory dir = new ByteBuffersDirectory()) {
      try (IndexOutput out = dir.createOutput("pq", IOContext.DEFAULT)) {
        pq.writeTo(out);
      }
      try (IndexInput in = dir.openInput("pq", IOContext.DEFAULT)) {
        ProductQuantizer back = ProductQuantizer.read(in, 6);
        assertEquals(in.length(), in.getFilePointer(), "read to the end");
        assertEquals(3, back.m());
        assertEquals(4, back.bits());
        assertEquals(pq.training(), back.training());
        for (int j = 0; j < 3; j++) {
          for (int c = 0; c < 16; c++) {
            assertArrayEquals(pq.codeword(j, c), back.codeword(j, c));
          }
        }
      }
      try (IndexInput in = dir.openInput("pq", IOContext.DEFAULT)) {
        CorruptIndexException e = assertThrows(CorruptIndexException.class, () -> ProductQuantizer.read(in, 8));
        assertTrue(e.getMessage().contains("invalid ivf_pq pq_m 3 for dimension 8"), e.getMessage());
      }
      try (IndexInput in = dir.openInput("pq", IOContext.DEFAULT)) {
        CorruptIndexException e = assertThrows(CorruptIndexException.class, () -> ProductQuantizer.read(in, 12));
        assertTrue(e.getMessage().contains("too short for the codebooks"), e.getMessage());
      }
    }
  }

  @Test
  void rejectsInvalidShapes() {
    assertThrows(IllegalArgumentException.class, () -> new ProductQuantizer(8, 3, 8, new float[256 * 8], null));
    assertThrows(IllegalArgumentException.class, () -> new ProductQuantizer(8, 2, 9, new float[512 * 8], null));
    assertThrows(IllegalArgumentException.class, () -> new ProductQuantizer(8, 2, 8, new float[8], null));
    assertThrows(IllegalArgumentException.class, () -> ProductQuantizer.train(new float[0][], 1, 8, 1, 1, Assigner.CPU));
  }
}
