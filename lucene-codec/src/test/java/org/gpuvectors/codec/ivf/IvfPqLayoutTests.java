package org.gpuvectors.codec.ivf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.IOContext;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.store.IndexOutput;
import org.gpuvectors.codec.gpu.DeviceInputs;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.cuda.ivf.IvfLists;
import org.junit.jupiter.api.Test;

/** The ivf_pq structure as built, written and read back, without Lucene's index around it. */
class IvfPqLayoutTests {

  private static final int DIMS = 8;
  private static final int N = 700;

  private static FloatVectorValues vectors(long seed) {
    Random random = new Random(seed);
    List<float[]> rows = new ArrayList<>();
    for (int i = 0; i < N; i++) {
      float[] v = new float[DIMS];
      for (int d = 0; d < DIMS; d++) {
        v[d] = (i % 5) + (float) random.nextGaussian() * 0.3f;
      }
      rows.add(v);
    }
    return FloatVectorValues.fromFloats(rows, DIMS);
  }

  private static IvfPqLayout build(Metric metric) throws IOException {
    return IvfPqBuilder.build(vectors(3), 6, 4, 6, metric, 8, 42, Assigner.CPU);
  }

  /** Writes the layout and returns the file's length (the field's data is all of it). */
  private static long write(Directory dir, BuiltIvf layout, int probes) throws IOException {
    try (IndexOutput out = dir.createOutput("f", IOContext.DEFAULT)) {
      layout.writeTo(out, probes);
      return out.getFilePointer();
    }
  }

  @Test
  void codesFollowTheirVectorsThroughTheFile() throws IOException {
    IvfPqLayout layout = build(Metric.L2);
    assertEquals(N * 4, layout.codes().length);
    try (Directory dir = new ByteBuffersDirectory()) {
      long length = write(dir, layout, 2);
      try (IndexInput in = dir.openInput("f", IOContext.DEFAULT)) {
        IvfPqField field = IvfPqField.read(in, 0, length, DIMS, N, Metric.L2);
        assertEquals(6, field.nlist());
        assertEquals(2, field.lists().defaultProbes());
        IvfLists lists = DeviceInputs.lists(field.lists());
        assertArrayEquals(layout.lists().offsets(), lists.offsets());
        assertArrayEquals(layout.lists().ords(), lists.ords());
        assertEquals(4, field.pq().m());
        assertEquals(6, field.pq().bits());
        for (int p = 0; p < N; p++) {
          int ord = lists.ords()[p];
          assertArrayEquals(Arrays.copyOfRange(layout.codes(), ord * 4, ord * 4 + 4), field.code(p), "position " + p);
        }
      }
    }
  }

  @Test
  void remappingMovesEachCodeWithItsOrdinal() throws IOException {
    IvfPqLayout layout = build(Metric.INNER_PRODUCT);
    int[] oldToNew = new int[N];
    for (int ord = 0; ord < N; ord++) {
      oldToNew[ord] = N - 1 - ord;
    }
    IvfPqLayout remapped = layout.remap(oldToNew);
    for (int ord = 0; ord < N; ord++) {
      assertArrayEquals(
          Arrays.copyOfRange(layout.codes(), ord * 4, ord * 4 + 4),
          Arrays.copyOfRange(remapped.codes(), oldToNew[ord] * 4, oldToNew[ord] * 4 + 4));
    }
    int[] offsets = remapped.lists().offsets();
    int[] ords = remapped.lists().ords();
    for (int l = 0; l < remapped.nlist(); l++) {
      for (int p = offsets[l] + 1; p < offsets[l + 1]; p++) {
        assertTrue(ords[p - 1] < ords[p], "ascending within a list again");
      }
    }
  }

  @Test
  void codesAreTheNearestCodewordsOfTheResiduals() throws IOException {
    FloatVectorValues vectors = vectors(3);
    IvfPqLayout layout = build(Metric.L2);
    int[] listOf = layout.lists().listOfOrdinals();
    ProductQuantizer pq = layout.pq();
    for (int ord = 0; ord < N; ord++) {
      float[] r = vectors.vectorValue(ord).clone();
      float[] c = layout.lists().centroids()[listOf[ord]];
      for (int d = 0; d < DIMS; d++) {
        r[d] -= c[d];
      }
      for (int j = 0; j < 4; j++) {
        int code = layout.codes()[ord * 4 + j] & 0xFF;
        float own = subDistance(r, j, pq.codeword(j, code));
        for (int w = 0; w < pq.ksub(); w++) {
          assertTrue(own <= subDistance(r, j, pq.codeword(j, w)) + 1e-6f, "ordinal " + ord + " sub " + j);
        }
      }
    }
  }

  private static float subDistance(float[] r, int j, float[] codeword) {
    float s = 0;
    for (int d = 0; d < codeword.length; d++) {
      float diff = r[j * codeword.length + d] - codeword[d];
      s += diff * diff;
    }
    return s;
  }

  @Test
  void buildsAreDeterministic() throws IOException {
    IvfPqLayout a = build(Metric.COSINE);
    IvfPqLayout b = build(Metric.COSINE);
    assertArrayEquals(a.lists().ords(), b.lists().ords());
    assertArrayEquals(a.codes(), b.codes());
    for (int c = 0; c < a.pq().ksub(); c++) {
      assertArrayEquals(a.pq().codeword(3, c), b.pq().codeword(3, c));
    }
  }

  @Test
  void structuralDamageIsACorruptIndex() throws IOException {
    IvfPqLayout layout = build(Metric.L2);
    try (Directory dir = new ByteBuffersDirectory()) {
      long length = write(dir, layout, 2);
      try (IndexInput in = dir.openInput("f", IOContext.DEFAULT)) {
        assertCorrupt("ivf_pq data length " + (length - 1), () -> IvfPqField.read(in, 0, length - 1, DIMS, N, Metric.L2));
        assertCorrupt("invalid IVF list offsets", () -> IvfPqField.read(in, 0, length, DIMS, N - 1, Metric.L2));
        // another dimension misreads everything after the training record (pq_m against dims: ProductQuantizerTests)
        assertCorrupt("", () -> IvfPqField.read(in, 0, length, 6, N, Metric.L2));
        // an ivf_pq field's data is not an ivf_flat field's: the lists alone are shorter
        assertCorrupt("IVF data length", () -> IvfField.read(in, 0, length, DIMS, N, Metric.L2));
      }
      // a layout version this reader does not know
      try (IndexOutput out = dir.createOutput("v", IOContext.DEFAULT)) {
        layout.lists().writeTo(out, 2);
        out.writeVInt(IvfPqLayout.VERSION + 1);
        layout.pq().writeTo(out);
      }
      try (IndexInput in = dir.openInput("v", IOContext.DEFAULT)) {
        assertCorrupt("unsupported ivf_pq layout version 1", () -> IvfPqField.read(in, 0, in.length(), DIMS, N, Metric.L2));
      }
    }
  }

  private static void assertCorrupt(String expected, org.junit.jupiter.api.function.Executable read) {
    CorruptIndexException e = assertThrows(CorruptIndexException.class, read);
    assertTrue(e.getMessage().contains(expected), () -> "expected [" + expected + "] in: " + e.getMessage());
  }

  @Test
  void rerankDepth() {
    assertEquals(40, IvfPqField.rerankDepth(4, 10, 1000), "4 x k");
    assertEquals(80, IvfPqField.rerankDepth(8, 10, 1000), "8 x k");
    assertEquals(25, IvfPqField.rerankDepth(4, 10, 25), "at most the accepted vectors");
    assertEquals(1, IvfPqField.rerankDepth(4, 10, 0), "at least one");
    assertEquals(1000, IvfPqField.rerankDepth(16, Integer.MAX_VALUE, 1000), "no overflow");
    assertEquals(2048, IvfPqField.rerankDepth(4, 1000, 1_000_000), "at most the device's k");
    assertEquals(3000, IvfPqField.rerankDepth(8, 3000, 1_000_000), "but at least k (a CPU search past the GPU's k)");
  }
}
