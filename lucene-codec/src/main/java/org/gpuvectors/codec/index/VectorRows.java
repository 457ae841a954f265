package org.gpuvectors.codec.index;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.function.IntUnaryOperator;
import java.util.stream.IntStream;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;

/**
 * Copies of a segment's vectors for a build that needs them as arrays (an IVF build's training sample and blocks, a
 * graph build's k-NN step and entry points), read side by side. Lucene's own {@link FloatVectorValues} reads one vector
 * at a time through one reused array; nothing there copies many rows on several threads.
 */
public final class VectorRows {

  /** Reads one row from the vectors (a copy of its own: a {@link FloatVectorValues} reuses its arrays). */
  @FunctionalInterface
  public interface RowReader {
    float[] read(FloatVectorValues values, int ord) throws IOException;
  }

  /** Rows per task of {@link #fill}. */
  public static final int FILL_CHUNK = 2048;

  private VectorRows() {}

  /**
   * {@code out[i] = reader.read(values, ordinal(i))} for {@code i < count}: chunks of {@link #FILL_CHUNK} rows side by
   * side on the common pool, each reading through its own {@link FloatVectorValues#copy} (made here, one thread, before
   * the chunks start). Copying rows out of the vectors was a third to a half of a GPU build's list assignment and
   * encoding (Fashion-MNIST: 60k rows of 784 floats a pass). Vectors that cannot be copied are read on this thread.
   */
  public static void fill(FloatVectorValues vectors, int count, IntUnaryOperator ordinal, float[][] out,
                          RowReader reader) throws IOException {
    int chunks = (count + FILL_CHUNK - 1) / FILL_CHUNK;
    FloatVectorValues[] copies = new FloatVectorValues[chunks];
    try {
      for (int c = 0; c < chunks && chunks > 1; c++) {
        copies[c] = vectors.copy();
      }
    } catch (UnsupportedOperationException e) {
      chunks = 1; // a view without copies: one reader
    }
    if (chunks <= 1) {
      for (int i = 0; i < count; i++) {
        out[i] = reader.read(vectors, ordinal.applyAsInt(i));
      }
      return;
    }
    try {
      IntStream.range(0, chunks).parallel().forEach(c -> {
        try {
          for (int i = c * FILL_CHUNK, end = Math.min(count, i + FILL_CHUNK); i < end; i++) {
            out[i] = reader.read(copies[c], ordinal.applyAsInt(i));
          }
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  /**
   * Vectors {@code ordinal(i)} as rows, normalised for cosine, to read and not to modify: {@link #fill} with {@link
   * #copy}, except that {@link #buffered} vectors hand out their own arrays (no copy) where nothing needs normalising.
   * Fashion-MNIST's 60k rows of 784 floats took 5-23 ms to copy, a tenth of its whole graph build on the GPU.
   */
  public static float[][] copies(FloatVectorValues vectors, int count, IntUnaryOperator ordinal, Metric metric)
      throws IOException {
    float[][] out = new float[count][];
    if (vectors instanceof Buffered buffered && metric != Metric.COSINE) {
      for (int i = 0; i < count; i++) {
        out[i] = buffered.rows.get(ordinal.applyAsInt(i));
      }
      return out;
    }
    fill(vectors, count, ordinal, out, (values, ord) -> copy(values, ord, metric));
    return out;
  }

  /**
   * A flush's buffered vectors (each an array of its own, never reused) as {@link FloatVectorValues}, as Lucene's
   * {@link FloatVectorValues#fromFloats} has them, which {@link #copies} can hand out without copying.
   */
  public static FloatVectorValues buffered(List<float[]> rows, int dims) {
    return new Buffered(rows, dims);
  }

  private static final class Buffered extends FloatVectorValues {
    private final List<float[]> rows;
    private final int dims;

    Buffered(List<float[]> rows, int dims) {
      this.rows = rows;
      this.dims = dims;
    }

    @Override
    public int dimension() {
      return dims;
    }

    @Override
    public int size() {
      return rows.size();
    }

    @Override
    public float[] vectorValue(int ord) {
      return rows.get(ord);
    }

    @Override
    public FloatVectorValues copy() {
      return this; // nothing of its own to reuse: every copy reads the same arrays
    }

    @Override
    public DocIndexIterator iterator() {
      return createDenseIterator();
    }
  }

  /** A copy of vector {@code ord} (normalised for cosine). */
  public static float[] copy(FloatVectorValues vectors, int ord, Metric metric) throws IOException {
    float[] v = vectors.vectorValue(ord).clone();
    if (metric == Metric.COSINE) {
      normalize(v);
    }
    return v;
  }

  /** Scales a vector to unit length in place (a zero vector stays zero). */
  public static void normalize(float[] v) {
    normalize(v, 0, v.length);
  }

  /** Scales {@code v[from, from + length)} to unit length in place (a zero vector stays zero). */
  public static void normalize(float[] v, int from, int length) {
    double s = 0;
    for (int d = from; d < from + length; d++) {
      s += (double) v[d] * v[d];
    }
    if (s > 0) {
      float inv = (float) (1 / Math.sqrt(s));
      for (int d = from; d < from + length; d++) {
        v[d] *= inv;
      }
    }
  }
}
