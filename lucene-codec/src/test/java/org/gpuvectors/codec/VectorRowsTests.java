package org.gpuvectors.codec;

import org.gpuvectors.codec.index.VectorRows;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;
import org.junit.jupiter.api.Test;

/**
 * {@link VectorRows#fill} reads rows side by side, each chunk through its own copy of the vectors: here vectors that
 * reuse one array for every value (as Lucene's off-heap vectors do), so a chunk reading through another's copy, or
 * through the original, would return rows of other ordinals; and vectors without copies (read on one thread). A flush's
 * buffered vectors are handed out without copies where nothing needs normalising.
 */
class VectorRowsTests {

  /** Row {@code ord} holds {@code ord * 10 + d}; every instance returns the same array of its own, overwritten. */
  private static final class ReusingValues extends FloatVectorValues {
    private final int size;
    private final int dims;
    private final boolean copies;
    private final AtomicInteger copiesMade;
    private final float[] buffer;

    ReusingValues(int size, int dims, boolean copies, AtomicInteger copiesMade) {
      this.size = size;
      this.dims = dims;
      this.copies = copies;
      this.copiesMade = copiesMade;
      this.buffer = new float[dims];
    }

    @Override
    public float[] vectorValue(int ord) {
      for (int d = 0; d < dims; d++) {
        buffer[d] = ord * 10f + d;
      }
      Thread.onSpinWait(); // widen the window in which another thread could overwrite a shared buffer
      return buffer;
    }

    @Override
    public FloatVectorValues copy() {
      if (!copies) {
        throw new UnsupportedOperationException("no copies");
      }
      copiesMade.incrementAndGet();
      return new ReusingValues(size, dims, true, copiesMade);
    }

    @Override
    public int dimension() {
      return dims;
    }

    @Override
    public int size() {
      return size;
    }
  }

  @Test
  void everyRowIsItsOrdinalsWhateverTheThreads() throws IOException {
    for (boolean copies : new boolean[] {true, false}) {
      AtomicInteger made = new AtomicInteger();
      int count = 5 * VectorRows.FILL_CHUNK + 77;
      FloatVectorValues values = new ReusingValues(2 * count, 6, copies, made);
      float[][] out = new float[count][];
      VectorRows.fill(values, count, i -> 2 * i + 1, out, (v, ord) -> v.vectorValue(ord).clone());
      for (int i = 0; i < count; i++) {
        int ord = 2 * i + 1;
        assertArrayEquals(new float[] {ord * 10f, ord * 10f + 1, ord * 10f + 2, ord * 10f + 3, ord * 10f + 4,
            ord * 10f + 5}, out[i], "row " + i + (copies ? "" : " (no copies)"));
      }
      assertTrue(copies ? made.get() == 6 : made.get() == 0, "a copy per chunk: " + made.get());
    }
  }

  /**
   * A flush's buffered vectors hand out their own arrays for L2 and the inner product (no copy), and normalised copies
   * for cosine, leaving the buffered arrays as they were; other vectors always give copies.
   */
  @Test
  void bufferedRowsAreHandedOutAsTheyAreUnlessNormalised() throws IOException {
    List<float[]> rows = List.of(new float[] {3, 4}, new float[] {0, 2}, new float[] {6, 8});
    FloatVectorValues buffered = VectorRows.buffered(rows, 2);
    assertEquals(3, buffered.size());
    assertEquals(2, buffered.dimension());
    for (Metric metric : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
      float[][] out = VectorRows.copies(buffered, 2, i -> 2 - i, metric);
      assertSame(rows.get(2), out[0], metric.name());
      assertSame(rows.get(1), out[1], metric.name());
    }
    float[][] cosine = VectorRows.copies(buffered, 3, i -> i, Metric.COSINE);
    assertArrayEquals(new float[] {0.6f, 0.8f}, cosine[0], 1e-6f);
    assertNotSame(rows.get(0), cosine[0]);
    assertArrayEquals(new float[] {3, 4}, rows.get(0), "the buffered row as it was");
    float[][] copied = VectorRows.copies(FloatVectorValues.fromFloats(rows, 2), 1, i -> i, Metric.L2);
    assertNotSame(rows.get(0), copied[0]);
    assertArrayEquals(rows.get(0), copied[0]);
  }
}
