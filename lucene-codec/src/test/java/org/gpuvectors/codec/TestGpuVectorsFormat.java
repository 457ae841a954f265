package org.gpuvectors.codec;

import org.apache.lucene.codecs.Codec;
import org.apache.lucene.codecs.hnsw.FlatVectorScorerUtil;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.tests.index.BaseKnnVectorsFormatTestCase;
import org.apache.lucene.tests.util.TestUtil;

/** Lucene's own conformance suite for vector formats, run against {@link GpuVectorsFormat}. */
public class TestGpuVectorsFormat extends BaseKnnVectorsFormatTestCase {

  @Override
  protected Codec getCodec() {
    return TestUtil.alwaysKnnVectorsFormat(new GpuVectorsFormat());
  }

  @Override
  protected boolean supportsFloatVectorFallback() {
    // raw float vectors are always stored; there is no quantized-only mode to fall back from
    return false;
  }

  @Override
  protected boolean mergeIsStable() {
    // the base class turns this off for HNSW's randomized graphs; our flat files are deterministic
    return true;
  }

  public void testLimits() {
    FieldType vectorType =
        KnnFloatVectorField.createFieldType(4, VectorSimilarityFunction.EUCLIDEAN);
    expectThrows(NullPointerException.class, () -> GpuVectorsFormat.markField(null, IndexType.FLAT));
    expectThrows(NullPointerException.class, () -> GpuVectorsFormat.markField(vectorType, null));
    expectThrows(
        IllegalArgumentException.class,
        () -> GpuVectorsFormat.markField(StringField.TYPE_STORED, IndexType.FLAT));
    expectThrows(IllegalArgumentException.class, () -> IndexType.fromName("hnsw"));
    expectThrows(IllegalArgumentException.class, () -> IndexType.fromName("FLAT"));
    expectThrows(IllegalArgumentException.class, () -> IndexType.fromName(null));
    expectThrows(IllegalArgumentException.class, () -> IndexType.fromCode(-1));
    expectThrows(IllegalArgumentException.class, () -> IndexType.fromCode(5));
    expectThrows(NullPointerException.class, () -> GpuVectorsRoutingFormat.routing(null));
    expectThrows(NullPointerException.class, () -> GpuVectorsCodec.wrap(null));
    assertEquals(4096, new GpuVectorsFormat().getMaxDimensions("f"));
  }

  public void testToString() {
    // the flat scorer depends on whether Lucene's Panama vectorization is enabled
    String scorer = FlatVectorScorerUtil.getLucene99FlatVectorsScorer().toString();
    assertEquals(
        "GpuVectorsFormat(name=GpuVectorsFormat, flatVectorsFormat="
            + "Lucene99FlatVectorsFormat(vectorsScorer="
            + scorer
            + "))",
        new GpuVectorsFormat().toString());
  }
}
