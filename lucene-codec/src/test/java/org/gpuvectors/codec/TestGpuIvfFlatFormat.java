package org.gpuvectors.codec;

import java.util.Map;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.tests.util.TestUtil;

/**
 * Lucene's conformance suite for vector formats, run with every vector field an {@code ivf_flat}
 * field and no size threshold: every segment with float or byte vectors gets inverted lists (k-means at
 * flush and merge, lists remapped under index sorting, rebuilt from the merged vectors), and every
 * float and byte search probes them. The lists probed are all of them here ({@code nprobe} = the largest
 * {@code nlist}): the suite checks exact top-k hits in places, and recall below that is measured by
 * {@link IvfFlatTests}, not here.
 */
public class TestGpuIvfFlatFormat extends TestGpuVectorsFormat {

  @Override
  protected Codec getCodec() {
    IndexParams ivf = new IndexParams(IndexType.IVF_FLAT, Map.of(IndexParams.NPROBE, 1 << 16));
    return TestUtil.alwaysKnnVectorsFormat(new GpuVectorsFormat(ivf, 0));
  }

  @Override
  public void testToString() {
    assertTrue(new GpuVectorsFormat(new IndexParams(IndexType.IVF_FLAT, Map.of()), 0).toString()
        .contains("unmarkedFields=ivf_flat{}, ivfMinVectors=0"));
  }
}
