package org.gpuvectors.codec;

import org.apache.lucene.codecs.Codec;
import org.apache.lucene.codecs.hnsw.FlatVectorScorerUtil;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.tests.index.BaseKnnVectorsFormatTestCase;
import org.apache.lucene.tests.util.TestUtil;
import org.gpuvectors.codec.gpu.FallbackReason;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.gpu.GpuSearchStats;
import org.junit.AfterClass;
import org.junit.BeforeClass;

/** Lucene's own conformance suite for vector formats, run against {@link GpuVectorsFormat}. */
public class TestGpuVectorsFormat extends BaseKnnVectorsFormatTestCase {

  /** The process-wide service's counters when the suite started (earlier suites share the service). */
  private static long gpuSearchesAtStart;

  @BeforeClass
  public static void countersAtStart() {
    GpuSearchStats stats = GpuSearchServices.current().stats();
    gpuSearchesAtStart = stats.gpuSearches();
  }

  /**
   * On the GPU machine (gv.requireGpu / GV_REQUIRE_GPU) the suite's float searches must have run on
   * the GPU: some did, and none fell back for a GPU failure (visit limits and k above the GPU's are
   * Lucene's own semantics and stay on the CPU).
   */
  @AfterClass
  public static void searchesRanOnTheGpuWhenOneIsRequired() {
    if (GpuTestSupport.gpuRequired() == false) {
      return;
    }
    GpuSearchService service = GpuSearchServices.current();
    GpuSearchStats stats = service.stats();
    System.out.println("[gpu-vectors] BaseKnnVectorsFormatTestCase on the GPU: " + stats);
    assertTrue("GPU searches ran: " + stats, stats.gpuSearches() > gpuSearchesAtStart);
    for (FallbackReason reason : new FallbackReason[] {FallbackReason.NO_GPU, FallbackReason.GPU_FAILED,
        FallbackReason.CUDA_ERROR, FallbackReason.DEVICE_OUT_OF_MEMORY, FallbackReason.BUDGET_IN_USE,
        FallbackReason.NOT_ADMITTED}) {
      assertEquals("fallbacks for " + reason + ": " + stats, 0, stats.cpuFallbacks(reason));
    }
  }

  @Override
  protected Codec getCodec() {
    return TestUtil.alwaysKnnVectorsFormat(new GpuVectorsFormat());
  }

  @Override
  protected boolean supportsFloatVectorFallback() {
    // raw float vectors are always stored; there is no quantized-only mode to fall back from
    return false;
  }

  /**
   * Lucene skips these two for formats that are not scalar-quantized (an assumption, which the GPU
   * bundle would count as an aborted test). Ours keeps raw float vectors always: what they check
   * cannot arise, and the override says so instead of aborting.
   */
  @Override
  public void testReadQuantizedVectorWithEmptyRawVectors() {
    assertFalse("raw vectors are never dropped", supportsFloatVectorFallback());
  }

  @Override
  public void testScoresUnchangedWithEmptyRawVectors() {
    assertFalse("raw vectors are never dropped", supportsFloatVectorFallback());
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
    expectThrows(NullPointerException.class, () -> GpuVectorsFormat.markField(vectorType, (IndexType) null));
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
            + "), ivfMinVectors=10000)",
        new GpuVectorsFormat().toString());
  }
}
