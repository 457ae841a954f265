package org.gpuvectors.codec.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.cuda.flat.GpuElementFlatIndex;
import org.gpuvectors.cuda.flat.GpuElementFlatIndex;
import org.junit.jupiter.api.Test;

/**
 * What the service uploads for a byte, bit or bfloat16 field ({@link ElementVectors}): the values Lucene holds for
 * each type and nothing else, the distance the device ranks by, the device bytes the residency gate reserves; and the
 * requests that carry them. No GPU needed.
 */
class ElementVectorsTests {

  private static ByteVectorValues bytes(int n, int dims) {
    List<byte[]> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      rows.add(new byte[dims]);
    }
    return ByteVectorValues.fromBytes(rows, dims);
  }

  private static FloatVectorValues floats(int n, int dims) {
    List<float[]> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      rows.add(new float[dims]);
    }
    return FloatVectorValues.fromFloats(rows, dims);
  }

  @Test
  void eachTypeTakesItsOwnValues() {
    new ElementVectors(ElementType.BYTE, bytes(2, 4));
    new ElementVectors(ElementType.BIT, bytes(2, 4));
    new ElementVectors(ElementType.BFLOAT16, floats(2, 4));
    // a float field's compact copy: its floats, uploaded as bfloat16 at two bytes a dimension
    ElementVectors compact = new ElementVectors(ElementType.FLOAT, floats(2, 4));
    assertEquals(GpuElementFlatIndex.Element.BFLOAT16, compact.element());
    assertEquals(GpuElementFlatIndex.deviceBytes(GpuElementFlatIndex.Element.BFLOAT16, 2, 4), compact.deviceBytes());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new ElementVectors(ElementType.FLOAT, bytes(2, 4)));
    assertTrue(e.getMessage().contains("cannot be searched from"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new ElementVectors(ElementType.BYTE, floats(2, 4)));
    assertThrows(IllegalArgumentException.class, () -> new ElementVectors(ElementType.BFLOAT16, bytes(2, 4)));
  }

  @Test
  void bitVectorsRankByHammingWhateverTheSimilarity() {
    ElementVectors bits = new ElementVectors(ElementType.BIT, bytes(2, 4));
    ElementVectors bytes = new ElementVectors(ElementType.BYTE, bytes(2, 4));
    for (VectorSimilarityFunction sim : VectorSimilarityFunction.values()) {
      assertEquals(Metric.L2, bits.metric(sim));
      assertEquals(Metric.of(sim), bytes.metric(sim));
    }
  }

  @Test
  void deviceBytesAreTheRowsAtTheirOwnSize() {
    int n = 1000;
    long floatRows = 4L * n * 768; // what a float field's vectors alone take (CudaBackend adds norms and an FP16 copy)
    assertTrue(new ElementVectors(ElementType.BYTE, bytes(n, 768)).deviceBytes() <= floatRows / 4);
    assertEquals(floatRows / 32, new ElementVectors(ElementType.BIT, bytes(n, 96)).deviceBytes());
    assertEquals(floatRows / 2, new ElementVectors(ElementType.BFLOAT16, floats(n, 768)).deviceBytes());
    assertEquals(GpuElementFlatIndex.Element.BIT, new ElementVectors(ElementType.BIT, bytes(1, 8)).element());
  }

  @Test
  void aRequestCarriesFloatVectorsOrElementsNotBoth() {
    ElementVectors elements = new ElementVectors(ElementType.BYTE, bytes(2, 4));
    float[][] q = {new float[4]};
    GpuSearchService.Request r = GpuSearchService.Request.ofElements(new Object(), "f", elements,
        VectorSimilarityFunction.EUCLIDEAN, q, 1, 1, null);
    assertEquals(elements, r.elements());
    assertThrows(IllegalArgumentException.class, () -> new GpuSearchService.Request(new Object(), "f", floats(2, 4),
        VectorSimilarityFunction.EUCLIDEAN, null, org.gpuvectors.cuda.SearchParams.FLAT, q, 1, 1, null, elements));
    assertThrows(IllegalArgumentException.class, () -> new GpuSearchService.Request(new Object(), "f", null,
        VectorSimilarityFunction.EUCLIDEAN, null, org.gpuvectors.cuda.SearchParams.FLAT, q, 1, 1, null, null));
  }
}
